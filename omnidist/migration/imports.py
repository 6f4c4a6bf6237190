"""Step 1 of a migration: import the native spec with the source backend's importer, then settle
the framework (the flag's, or one inferred when the spec names none)."""

from __future__ import annotations

from typing import Optional, Union

import attrs

from omnidist.backend import registry
from omnidist.errors import ValidationError
from omnidist.migration.native import Native, detect_backend, read_native
from omnidist.migration.report import ReportEntry, entry_for
from omnidist.model.job import DistributedJob, Framework

_IMAGE_HINTS = (
    ("deepspeed", Framework.DEEPSPEED),
    ("horovod", Framework.HOROVOD),
    ("pytorch", Framework.PYTORCH),
    ("torch", Framework.PYTORCH),
    ("tensorflow", Framework.TENSORFLOW),
    ("tf-", Framework.TENSORFLOW),
    ("tf2-", Framework.TENSORFLOW),
)
"""Substrings of prebuilt training-container names -> framework, checked in order."""


def infer_framework(job: DistributedJob) -> tuple[Framework, str]:
    """A framework for a job whose native spec did not say, and why."""
    if job.parameter_servers is not None and job.parameter_servers.replicas:
        return Framework.TENSORFLOW, "the job has parameter servers (a TF_CONFIG-style cluster)"
    image = (job.image or job.primary.image or "").lower()
    name = image.rsplit("/", 1)[-1]
    for needle, framework in _IMAGE_HINTS:
        if needle in name:
            return framework, f"the image {image!r} is a {framework.value} container"
    return Framework.CUSTOM, "nothing in the spec says; set it with --framework (pytorch, tensorflow, …)"


def check_json(filename: str) -> None:
    """A ``.json`` file for a backend whose tools read JSON strictly must be JSON.

    Raises:
        ValidationError: naming the file and where its JSON breaks.
    """
    import json
    from pathlib import Path

    try:
        json.loads(Path(filename).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValidationError(f"not JSON ({exc}); its cloud's own tools read .json files as strict JSON",
                              source=filename) from None


def import_job(
    native: Native,
    source: Optional[str] = None,
    framework: Optional[Union[Framework, str]] = None,
) -> tuple[DistributedJob, str, list[ReportEntry]]:
    """Import a native spec: the job, the source backend's name, and what was inferred.

    The framework is ``framework`` when given; a spec that names none (the importer gave
    ``custom``) gets one from :func:`infer_framework`, replacing the importer's own remark.
    """
    data, filename = read_native(native)
    try:
        source = source or detect_backend(data)
        driver = registry.get(source)
        if driver.strict_json and filename and filename.endswith(".json"):
            check_json(filename)
        job, notes = driver.import_with_notes(data)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(filename)) from None
    entries = [entry_for(n) for n in notes]
    if filename and job.source is None:  # a local code folder or input is relative to the native file
        job = attrs.evolve(job, source=filename)
    if framework is not None:
        job = attrs.evolve(job, framework=framework)
        entries = [e for e in entries if e.field != "framework"]
        entries.append(
            ReportEntry(fidelity="exact", field="framework", message=f"{job.framework.value} (from --framework)")
        )
    elif job.framework is Framework.CUSTOM:
        guessed, why = infer_framework(job)
        job = attrs.evolve(job, framework=guessed)
        entries = [e for e in entries if e.field != "framework"]
        entries.append(ReportEntry(fidelity="inferred", field="framework", message=f"{guessed.value}: {why}"))
    return job, source, entries
