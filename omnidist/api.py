"""The Python API of SPEC §4: load, compile, submit, follow."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any, Optional, Union

import attrs

from omnidist import config, lowering, registry, serde
from omnidist.backend import Backend, CompiledJob, JobHandle
from omnidist.errors import Problem, ValidationError
from omnidist.job import DistributedJob

JobLike = Union[DistributedJob, str, "os.PathLike[str]", Mapping[str, Any]]


def load(path: Union[str, "os.PathLike[str]"]) -> DistributedJob:
    """Read and validate a job file (YAML or JSON).

    Raises:
        ValidationError: naming the file and the field path of every problem.
    """
    return serde.load(path)


def as_job(job: JobLike) -> DistributedJob:
    """Accept a job, a path to a job file, or a plain mapping."""
    if isinstance(job, DistributedJob):
        return job
    if isinstance(job, Mapping):
        return serde.job_from_dict(job)
    return serde.load(job)


def check_backend_blocks(job: DistributedJob) -> None:
    """Reject a ``backends.<name>`` block for a backend nobody knows (a likely typo that
    would otherwise be ignored silently)."""
    if not job.backends:
        return
    known = registry.known()
    problems = []
    for name in job.backends:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(Problem(f"backends.{name}", f"no backend is called {name!r}{hint} Known: {', '.join(known)}"))
    if problems:
        raise ValidationError(problems, source=job.source)


def prepare(
    job: JobLike,
    backend: Optional[str] = None,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> tuple[DistributedJob, Backend, Any]:
    """Resolve the job, the backend and its settings (SPEC §2 precedence).

    The portable rules (:func:`omnidist.lowering.check_portable_rules`) are checked here, once,
    before any backend sees the job.
    """
    job = as_job(job)
    check_backend_blocks(job)
    lowering.check_portable_rules(job)
    target = config.resolve(profile=profile, backend=backend)
    driver = registry.get(target.backend)
    resolved = config.settings_for(driver.settings_type, target.backend, target, job, settings)
    return job, driver, resolved


def compile(  # noqa: A001 - the SPEC names it so
    job: JobLike,
    backend: Optional[str] = None,
    *,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> CompiledJob:
    """Build the backend's native request for ``job``; no network, no cloud SDK.

    Args:
        job: a :class:`DistributedJob`, a job file path, or a mapping.
        backend: the target (else the profile's, else ``local``).
        profile: the profile supplying settings.
        settings: explicit settings that win over the job block and the profile.

    Raises:
        ValidationError: the job (or a settings block) is invalid for this backend.
        UnsupportedFeatureError: the backend cannot express the job.
    """
    job, driver, resolved = prepare(job, backend, profile, settings)
    try:
        return driver.compile(job, resolved)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(job.source)) from None


def submit(
    job: JobLike,
    backend: Optional[str] = None,
    *,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> JobHandle:
    """Compile ``job`` and create it on the backend; returns a :class:`JobHandle`."""
    job, driver, resolved = prepare(job, backend, profile, settings)
    try:
        compiled = driver.compile(job, resolved)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(job.source)) from None
    handle = driver.submit(compiled, resolved)
    return handle if handle.job is not None else attrs.evolve(handle, job=job)


def attach(
    job_id: str,
    backend: Optional[str] = None,
    *,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> JobHandle:
    """A handle for a job submitted earlier (by id), to follow or cancel it."""
    target = config.resolve(profile=profile, backend=backend)
    driver = registry.get(target.backend)
    resolved = config.settings_for(driver.settings_type, target.backend, target, None, settings)
    return JobHandle(backend=target.backend, id=job_id, url=driver.console_url(job_id, resolved),
                     settings=resolved, driver=driver)


def import_native(
    native: Union[Mapping[str, Any], str, "os.PathLike[str]", Any],
    backend: Optional[str] = None,
    *,
    framework: Optional[str] = None,
) -> DistributedJob:
    """Turn a backend's native request into a portable job.

    Args:
        native: the native spec: a mapping, the path of a YAML/JSON file (or of a file holding
            the ``gcloud`` command line that submitted the job), or an SDK job object such as
            ``azure.ai.ml.command(...)``, read through the SDK's own serialization.
        backend: the spec's backend; detected from the content when omitted.
        framework: set the framework instead of inferring it (a native spec rarely says).

    Raises:
        ValidationError: the native spec is not valid for its own cloud (naming the field path).
        NotPortableError: it uses something the portable job cannot hold (exit 3).
    """
    from omnidist import migration

    return migration.import_job(native, backend, framework)[0]
