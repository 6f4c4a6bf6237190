"""Moving a job between clouds: import a native spec, compile it for another backend, and
report what carried over exactly, what was approximated, inferred, changed or dropped.

The steps, one module each, each reporting what it did:

1. :mod:`~omnidist.migration.imports`: the source's importer, then the framework;
2. :mod:`~omnidist.migration.move`: the command and image the user gives
   (:mod:`~omnidist.migration.needs`), the source's settings block and inputs, machine sizes,
   labels: what each backend's :class:`~omnidist.backend.contract.MigrationPolicy` says;
3. :mod:`~omnidist.migration.plan`: what the target's capabilities say it lacks given up, then
   the target's compiler once;
4. :mod:`~omnidist.migration.entries`: which machine the target chose for each role (its request
   read back), the region, and what mapped exactly;
5. :mod:`~omnidist.migration.readback`: the target's request read back with its own importer and
   compared with the source job; a difference no other line covers becomes a ``changed`` line;
   then :mod:`~omnidist.migration.observed`: what the program sees (SPEC §14), the World of the
   source request against the World of the target request, each from its backend's ``world``;

and :mod:`~omnidist.migration.report` holds the report they write. ``--strict`` refuses any drop
or change in meaning. A machine picked for the same accelerator type and count is not a change
in meaning; another GPU model or count is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Optional, Union

import attrs

from omnidist.backend import registry
from omnidist.backend.contract import Backend
from omnidist.backend.values import CompiledJob
from omnidist.errors import ValidationError
from omnidist.migration.entries import exact_entries, machine_entries, region_entries
from omnidist.migration.imports import import_job, import_jobs
from omnidist.migration.keep import keep_cluster, refuse_lost_mpi
from omnidist.migration.move import give_accelerators, move_job
from omnidist.migration.native import Native, detect_backend, native_parts
from omnidist.migration.observed import unreported as observed
from omnidist.migration.observed import world_of
from omnidist.migration.plan import compile_dropping
from omnidist.migration.readback import read_back, unread, unreported
from omnidist.migration.report import (
    Fidelity,
    MigrationReport,
    ReportEntry,
    StrictMigrationError,
    entry_for,
    order,
)
from omnidist.model.job import DistributedJob, Framework, job_to_dict, job_to_yaml
from omnidist.model.serde import yaml_comment
from omnidist.secrets import mask_text, masking_errors, secret_values

__all__ = [
    "Fidelity", "MigrationReport", "ReportEntry", "StrictMigrationError", "detect_backend", "import_all",
    "import_native", "migrate", "migrate_all",
]


def import_native(
    native: Union[Mapping[str, Any], str, os.PathLike[str], Any],
    backend: Optional[Union[str, Backend]] = None,
    *,
    framework: Optional[str] = None,
) -> DistributedJob:
    """Turn a backend's native request into a portable job.

    Args:
        native: the native spec: a mapping, the path of a YAML/JSON file (or of a file holding
            the cloud CLI's command line that submitted the job), or an SDK job object, read
            through the SDK's own serialization (docs/migration.md says which each backend reads).
        backend: the spec's backend (its name, or the registry's object); detected from the
            content when omitted.
        framework: set the framework instead of inferring it (a native spec rarely says).

    Raises:
        ValidationError: the native spec is not valid for its own cloud (naming the field path).
        NotPortableError: it uses something the portable job cannot hold (exit 3).
    """
    return import_job(native, resolve(backend), framework)[0]


def migrate(
    native: Native,
    source: Optional[Union[str, Backend]] = None,
    target: Optional[Union[str, Backend]] = None,
    *,
    strict: bool = False,
    framework: Optional[Union[Framework, str]] = None,
    image: Optional[str] = None,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
    command: Optional[str] = None,
    accelerators: Optional[Mapping[str, str]] = None,
) -> tuple[CompiledJob, MigrationReport]:
    """Import ``native`` from ``source`` (detected when omitted) and compile it for ``target``.

    Args:
        native: the native spec (a mapping) or the path of a YAML/JSON file holding it.
        source: the spec's backend (its name, or the registry's object); detected from the
            content when omitted.
        target: the backend to compile for (required; a name, or the registry's object).
        strict: refuse the migration if anything is dropped or changes meaning.
        framework: the job's framework, instead of inferring it (legacy specs do not say).
        image: the container to run, for specs that ran something only their cloud has (a
            legacy Python-package job, a registered, built or conda environment).
        profile: the profile supplying the target's settings.
        settings: explicit target settings.
        command: the command to run, one string read like a shell reads it (for a spec that
            names none, or to run something else).
        accelerators: role -> ``TYPE:COUNT``, for a spec whose machines the import cannot read (a
            job on a named compute cluster runs on whatever the cluster has).

    Returns:
        The compiled request and a :class:`MigrationReport`.

    Raises:
        StrictMigrationError: with ``strict``, when anything would be dropped or changed.
        UnsupportedFeatureError: when the target cannot express something that cannot be given up
            (an image only the source has, without ``image``, among them).
        ValidationError: when the native spec is malformed, or no ``target`` is named.
    """
    to = _target(target)
    with masking_errors(_shown_secrets(native)):  # an error may quote a native value
        imported, found, entries = import_job(native, resolve(source), framework)
    return _move(imported, found, entries, to, strict=strict, image=image, profile=profile, settings=settings,
                 command=command, native=native, part=native_parts(native, found)[0], accelerators=accelerators)


def import_all(
    native: Union[Mapping[str, Any], str, os.PathLike[str], Any],
    backend: Optional[Union[str, Backend]] = None,
    *,
    framework: Optional[str] = None,
) -> list[DistributedJob]:
    """Every training job of a native spec as a portable job: one for most specs, one per job of
    a file holding several (a Kubernetes YAML stream with two PyTorchJobs gives two). Arguments
    and errors as :func:`import_native`."""
    return [job for job, _ in import_jobs(native, resolve(backend), framework)[0]]


def migrate_all(
    native: Native,
    source: Optional[Union[str, Backend]] = None,
    target: Optional[Union[str, Backend]] = None,
    *,
    strict: bool = False,
    framework: Optional[Union[Framework, str]] = None,
    image: Optional[str] = None,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
    command: Optional[str] = None,
    accelerators: Optional[Mapping[str, str]] = None,
) -> list[tuple[CompiledJob, MigrationReport]]:
    """:func:`migrate` for every training job of the spec (docs/migration.md): one compiled request and
    report per job, in the file's order. Arguments and errors as :func:`migrate`; with ``strict``,
    the first job that breaks it raises."""
    to = _target(target)
    with masking_errors(_shown_secrets(native)):  # an error may quote a native value
        parts, found = import_jobs(native, resolve(source), framework)
    natives = native_parts(native, found)
    natives = natives if len(natives) == len(parts) else [None] * len(parts)
    return [_move(job, found, entries, to, strict=strict, image=image, profile=profile, settings=settings,
                  command=command, native=native, part=part, accelerators=accelerators)
            for (job, entries), part in zip(parts, natives)]


def resolve(backend: Optional[Union[str, Backend]]) -> Optional[Backend]:
    """The registry's object for a backend named at the boundary (the API's arguments, the CLI's
    options): the migration's steps take the object, looked up once here.

    Raises:
        BackendNotFoundError: no installed backend has that name.
    """
    return registry.get(backend) if isinstance(backend, str) else backend


def _target(target: Optional[Union[str, Backend]]) -> Backend:
    if not target:
        raise ValidationError(f"name the backend to migrate to (target=…, or --to): {', '.join(registry.installed())}")
    return registry.get(target) if isinstance(target, str) else target


def _move(imported: DistributedJob, source: Backend, entries: list[ReportEntry], target: Backend, *, strict: bool,
          image: Optional[str], profile: Optional[str], settings: Optional[Mapping[str, Any]],
          command: Optional[str], native: Any = None, part: Any = None,
          accelerators: Optional[Mapping[str, str]] = None) -> tuple[CompiledJob, MigrationReport]:
    """Steps 2-5 for one imported job (see the module docstring); nothing the native spec or the
    job holds secretly is shown in an error or the report. ``part``: the native request of this
    job, whose World the target's is compared with (docs/migration.md)."""
    if accelerators:  # the user's answer for machines the import could not read: part of the source job
        imported, entries = give_accelerators(imported, accelerators, entries)
    secrets = _shown_secrets(native, imported)
    before = world_of(source, part) if part is not None else None
    with masking_errors(secrets):
        job, entries = move_job(imported, source, target, image, command, written_by("move", entries), before)
        entries = written_by("move", entries)
        compiled, final, given_up = compile_dropping(job, target, profile, settings)
        after = world_of(target, compiled.request) if source != target else None
        if before is not None and after is not None:
            refuse_lost_mpi(before, after)
            job, launched = keep_cluster(job, before, after)
            if launched:
                compiled, final, given_up = compile_dropping(job, target, profile, settings)
                after, entries = world_of(target, compiled.request), entries + launched
    readback = read_back(compiled, target)
    machines, consumed = machine_entries(imported, final, compiled, source, target, readback)
    entries += written_by("plan", given_up) + written_by("machines", machines)
    entries += [entry_for(n, f"{target.name} compiler") for n in compiled.diagnostics if n not in consumed]
    entries += written_by("region", region_entries(final, source, target, profile, settings))
    entries += written_by("read-back", unreported(imported, readback, target, entries, unread(compiled, target)))
    entries += written_by("world", observed(before, after, entries))
    entries += written_by("exact", exact_entries(final, entries, imported))
    changed = {e.field for e in entries if e.fidelity.breaks_strict}
    entries = [e for e in entries if not (e.fidelity is Fidelity.EXACT and e.field in changed)]  # never both
    entries = [attrs.evolve(e, message=mask_text(e.message, secrets)) for e in entries]  # the report quotes values
    report = MigrationReport(source=source.name, target=target.name, entries=sorted(entries, key=order))
    if strict and report.breaks_strict:
        raise StrictMigrationError(report)
    return compiled, report


def written_by(step: str, entries: list[ReportEntry]) -> list[ReportEntry]:
    """``entries`` with the migration's own lines (those no note wrote) traced to ``step``."""
    return [e if e.origin else attrs.evolve(e, origin=f"migration {step}") for e in entries]


def _shown_secrets(native: Any, job: Optional[DistributedJob] = None) -> frozenset[str]:
    """The secret values a report or an error about ``native`` (and the job imported from it) must
    not show: those of secret-looking variables, and those of any value by its shape."""
    found = secret_values(native) if isinstance(native, (Mapping, list, tuple)) else frozenset()
    return found | (secret_values(job_to_dict(job)) if job is not None else frozenset())


def job_yaml_with_comments(job: DistributedJob, entries: list[ReportEntry], source: str,
                           filename: Optional[str]) -> str:
    """The imported job as YAML, with a header saying where it came from and a comment on each
    top-level key whose value was inferred or approximated.

    The job is written by the YAML emitter and every comment through
    :func:`~omnidist.model.serde.yaml_comment` (line breaks and control characters escaped), so the
    text loads back to exactly ``job`` whatever the native file held. A remark goes at the end of
    its key's line when the value starts or ends there (a block, or a one-line value), else on a
    line of its own above the key: a comment inside a value that runs over several lines would
    change it."""
    data = job_to_dict(job)
    secrets = secret_values(data)  # the job holds its values; a remark quoting one does not show it
    remarks = {e.field.split(".")[0]: e for e in entries if e.fidelity in (Fidelity.INFERRED, Fidelity.APPROXIMATED)}
    text = job_to_yaml(job).splitlines()
    lines = []
    for i, line in enumerate(text):
        key = line.split(":", 1)[0] if line and not line[0].isspace() and ":" in line else None
        entry = remarks.get(key) if key in data else None
        if entry is None:
            lines.append(line)
            continue
        remark = f"# {entry.fidelity.value}: {yaml_comment(mask_text(entry.message, secrets))}"
        one_line = i + 1 == len(text) or not text[i + 1][:1].isspace()
        if isinstance(data[key], (Mapping, list)) or one_line:
            lines.append(f"{line}  {remark}")
        else:
            lines += [remark, line]
    header = [f"# imported from {yaml_comment(filename or 'a')} {source} spec by omnidist"]
    header += [f"# {yaml_comment(mask_text(str(e), secrets))}" for e in entries if e.fidelity is not Fidelity.EXACT]
    return "\n".join(header + lines) + "\n"
