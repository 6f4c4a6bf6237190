"""Step 1 of a migration: import the native spec with the source backend's importer, then settle
the framework (the flag's, or one inferred when the spec names none) and the processes per node
(a launcher line in the command read back into the program and its count, SPEC §10)."""

from __future__ import annotations

from typing import Optional, Union

import attrs

from omnidist.backend import registry
from omnidist.backend.contract import Backend
from omnidist.compiler.delowering import shorten
from omnidist.compiler.launchers import read_launcher
from omnidist.errors import Problem, ValidationError
from omnidist.migration.native import Native, detect_backend, read_native
from omnidist.migration.report import Fidelity, ReportEntry, entry_for
from omnidist.model.job import DistributedJob, Framework
from omnidist.model.roles import AUTO, RoleName, auto_processes, processes_per_node

_IMAGE_HINTS = (
    ("deepspeed", Framework.DEEPSPEED),
    ("horovod", Framework.HOROVOD),
    ("jax", Framework.JAX),
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


LAUNCHED_BY = {"torchrun": Framework.PYTORCH, "deepspeed": Framework.DEEPSPEED}
"""A launcher kind (:func:`omnidist.compiler.launchers.read_launcher`) -> the framework it starts."""


def launcher_framework(job: DistributedJob) -> Optional[tuple[Framework, str]]:
    """The framework the primary's launcher line says (``torchrun`` starts PyTorch), and why;
    ``None`` without one."""
    primary = job.primary
    argv = (*(primary.command or job.command), *(primary.args or job.args or ()))
    launcher = read_launcher(argv)
    framework = LAUNCHED_BY.get(launcher.kind) if launcher is not None else None
    if framework is None:
        return None
    return framework, f"the command starts it with {launcher.kind}"


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
    source: Optional[Backend] = None,
    framework: Optional[Union[Framework, str]] = None,
) -> tuple[DistributedJob, Backend, list[ReportEntry]]:
    """Import a native spec: the job, the source backend, and what was inferred.

    The framework is ``framework`` when given; a spec that names none (the importer gave
    ``custom``) gets one from :func:`infer_framework`, replacing the importer's own remark. A
    file holding several training jobs gives its first (the others are noted as dropped;
    :func:`import_jobs` reads each).
    """
    data, filename = read_native(native)
    explicit = source is not None
    source = _source(data, source, filename)
    job, entries = _import_one(data, filename, source, framework, explicit)
    return job, source, entries


def import_jobs(
    native: Native,
    source: Optional[Backend] = None,
    framework: Optional[Union[Framework, str]] = None,
) -> tuple[list[tuple[DistributedJob, list[ReportEntry]]], Backend]:
    """Every training job of a native spec (SPEC §10: a YAML stream of several jobs gives one
    portable job per job), each with what was inferred, and the source backend."""
    data, filename = read_native(native)
    explicit = source is not None
    source = _source(data, source, filename)
    parts = registry.importer(source).split_jobs(data)
    return [_import_one(part, filename, source, framework, explicit) for part in parts], source


def _looks_like(data: object, source: str) -> Optional[str]:
    """The one other backend that recognizes ``data``, if detection disagrees with ``source``."""
    try:
        detected = detect_backend(data)
    except ValidationError:
        return None
    return detected if detected != source else None


def _source(data: object, source: Optional[Backend], filename: Optional[str]) -> Backend:
    """``source``, or the backend the spec's content names (the one place a detected name is looked up)."""
    try:
        source = source or registry.get(detect_backend(data))
        if registry.importer(source).strict_json and filename and filename.endswith(".json"):
            check_json(filename)
        return source
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(filename)) from None


def _import_one(data: object, filename: Optional[str], source: Backend, framework: Optional[Union[Framework, str]],
                explicit: bool = False) -> tuple[DistributedJob, list[ReportEntry]]:
    try:
        job, notes = registry.importer(source).import_with_notes(data)
    except ValidationError as exc:
        problems = exc.problems
        other = _looks_like(data, source.name) if explicit else None
        if other is not None:  # a wrong --from: say whose spec it is before that backend's schema errors
            problems = (Problem("--from", f"this looks like a {other} spec, not {source.name}: pass --from {other} "
                                          "(or leave --from out to detect it)"), *problems)
        raise ValidationError(problems, source=exc.source or filename) from None
    entries = [entry_for(n, f"{source.name} importer") for n in notes]
    launched = launcher_framework(job)  # read before the launcher line is unwrapped
    job, unwrapped = unwrap_launchers(job)
    entries += unwrapped
    if filename and job.source is None:  # a local code folder or input is relative to the native file
        job = attrs.evolve(job, source=filename)
    if framework is not None:
        job = with_framework(job, Framework(framework))
        entries = [e for e in entries if e.field != "framework"]
        entries.append(
            ReportEntry(fidelity=Fidelity.EXACT, field="framework", message=f"{job.framework.value} (from --framework)")
        )
    elif job.framework is Framework.CUSTOM:
        guessed, why = launched or infer_framework(job)
        job = with_framework(job, guessed)
        entries = [e for e in entries if e.field != "framework"]
        entries.append(ReportEntry(fidelity=Fidelity.INFERRED, field="framework", message=f"{guessed.value}: {why}"))
    return job, [e if e.origin else attrs.evolve(e, origin="migration import") for e in entries]


def with_framework(job: DistributedJob, framework: Framework) -> DistributedJob:
    """The job with another framework, running the processes per node it ran: ``auto`` means one
    per accelerator for some frameworks and one per node for others (:func:`auto_processes`), so a
    count the native job left implicit is written down when the new framework's ``auto`` differs."""
    ran = processes_per_node(job)
    job = attrs.evolve(job, framework=framework)
    if job.processes_per_node == AUTO and auto_processes(framework.value, job.primary.accelerator) != ran:
        job = attrs.evolve(job, processes_per_node=ran)
    return job


def _split(program: tuple[str, ...], args: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The program as ``(command, args)``, keeping ``args`` as the native job split it when they end it."""
    if args and len(program) > len(args) and program[-len(args):] == args:
        return program[: len(program) - len(args)], args
    return program, ()


def unwrap_launchers(job: DistributedJob) -> tuple[DistributedJob, list[ReportEntry]]:
    """A launcher line in the command (``torchrun …``, ``python -m torch.distributed.run …``,
    ``deepspeed …``, ``omnidist launch …``) read back into the program each process runs and the
    processes per node it started: each target starts the node's processes its own way, so no
    platform's launcher (a bare torchrun relies on a training operator's ``PET_*`` variables)
    travels with the job (SPEC §10). Options with no portable meaning are reported left behind."""
    entries: list[ReportEntry] = []
    changes: dict[str, object] = {}
    processes = None
    holders = [("", job.command, job.args)] + [
        (f"{name.value}.", role.command, role.args or ())
        for name in RoleName if (role := job.role(name)) is not None and role.command]
    for prefix, command, args in holders:
        launcher = read_launcher((*command, *args))
        if launcher is None:
            continue
        new_command, new_args = _split(launcher.program, tuple(args))
        if prefix:
            role = job.role(prefix[:-1])
            changes[prefix[:-1]] = attrs.evolve(role, command=new_command, args=new_args or None)
        else:
            changes.update(command=new_command, args=new_args)
        if prefix in ("", "primary.") and launcher.processes is not None:
            processes = launcher.processes
        if launcher.kind != "omnidist" or launcher.wiring or launcher.other:
            count = f"{launcher.processes} processes per node" if launcher.processes else "the processes per node"
            wiring = (f"; its rendezvous ({', '.join(launcher.wiring)}) is each target launcher's own"
                      if launcher.wiring else "")
            entries.append(ReportEntry(
                fidelity=Fidelity.APPROXIMATED, field=f"{prefix}command",
                message=f"`{shorten(' '.join((*command, *args)), 60)}` read as the program "
                        f"(`{shorten(' '.join(launcher.program), 40)}`) and {count}: every target starts a "
                        f"node's processes its own way{wiring}"))
        entries += [ReportEntry(fidelity=Fidelity.DROPPED, field=f"{prefix}command",
                                message=f"{launcher.kind} option {option}: no portable equivalent")
                    for option in launcher.other]
    if not changes:
        return job, []
    job = attrs.evolve(job, **changes)
    if processes is not None and processes != processes_per_node(job):
        job = attrs.evolve(job, processes_per_node=processes)
    return job, entries
