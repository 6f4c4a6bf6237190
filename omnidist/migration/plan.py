"""Step 3 of a migration: give up what the target lacks (from its declared capabilities, and
from what its compiler refuses), then compile once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist import api
from omnidist.backend.contract import Backend
from omnidist.backend.values import CompiledJob
from omnidist.errors import (
    OmnidistError,
    Problem,
    Refusal,
    UnreadableLocationError,
    UnsupportedFeatureError,
    ValidationError,
)
from omnidist.migration.needs import cannot_express, with_flag_hint
from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.model import data as jobdata
from omnidist.model.features import HARDWARE, PROGRAM, ROLE_FEATURES, Feature
from omnidist.model.job import AUTO, DistributedJob, Interconnect, JobOutput
from omnidist.model.roles import RoleName, effective_role, effective_roles


def used(job: DistributedJob) -> frozenset[Feature]:
    """The features ``job`` uses that a backend may lack. A role uses machines (or a program) of
    its own when it sets a hardware (program) field to something else than the primary's."""
    found = {feature for role, feature in ROLE_FEATURES.items() if _has(job, RoleName(role))}
    primary = effective_role(job, RoleName.PRIMARY)
    for role in effective_roles(job):
        written = job.role(role.name)
        found.update(feature for feature, fields in ((Feature.PER_ROLE_MACHINES, HARDWARE),
                                                     (Feature.PER_ROLE_PROGRAMS, PROGRAM))
                     if any(getattr(written, f) not in (None, {}) and getattr(role, f) != getattr(primary, f)
                            for f in fields))
        if role.accelerator is not None:
            found.add(Feature.ACCELERATOR)
    flags = {Feature.SPOT: job.spot, Feature.INFINIBAND: job.interconnect is Interconnect.INFINIBAND,
             Feature.ENV: any(r.env for r in effective_roles(job)), Feature.TUNING: job.tuning is not None,
             Feature.COMMAND: not primary.command and job.module is None, Feature.CODE: job.code is not None,
             Feature.INPUTS: bool(job.inputs), Feature.OUTPUTS: bool(job.outputs),
             Feature.PROCESSES_PER_NODE: job.processes_per_node != AUTO,
             Feature.FRAMEWORK_VERSION: job.framework_version is not None}
    return frozenset(found | {feature for feature, on in flags.items() if on})


def _has(job: DistributedJob, role: Any) -> bool:
    written = job.role(role)
    return written is not None and written.replicas != 0


ROLE_GIVEN_UP = (Fidelity.DROPPED, "the role is left out")


HARDWARE_GIVEN_UP = (Fidelity.CHANGED, "the role runs on the primary's hardware instead")


INFINIBAND_GIVEN_UP = (Fidelity.CHANGED, "interconnect: any (the nodes talk over the target's ordinary network)")


SPOT_GIVEN_UP = (Fidelity.CHANGED, "runs on on-demand capacity instead")
"""What each give-up does to the job, as the report says it (with the target's own refusal)."""


def _given_up(outcome: tuple[Fidelity, str], refusal: UnsupportedFeatureError) -> ReportEntry:
    fidelity, what = outcome
    return ReportEntry(fidelity=fidelity, field=refusal.subject, message=f"{what}: {refusal.message}")


def plan(job: DistributedJob, target: Backend) -> tuple[DistributedJob, list[ReportEntry]]:
    """Give up, before compiling, what the job uses and the target's declared capabilities lack:
    a role it does not have (or not with the job's framework), spot capacity, InfiniBand, a role
    on other hardware than the primary's. Each is reported in the target's own words (its
    :attr:`~omnidist.backend.contract.Capabilities.refusals`); a feature the target lacks without saying
    how it refuses it is left to its compiler, whose refusal :func:`compile_dropping` gives up.
    Anything else the target lacks (an accelerator, a program per role) is not given up."""
    capabilities = target.capabilities
    worded = capabilities.refusals
    entries: list[ReportEntry] = []
    for role, feature in ROLE_FEATURES.items():
        if feature in worded and feature in used(job) and not capabilities.has_role(RoleName(role), job.framework):
            entries.append(_given_up(ROLE_GIVEN_UP, worded[feature].error(feature, target.name,
                                                                          framework=job.framework.value)))
            job = attrs.evolve(job, **{role: None})
    if Feature.SPOT in worded and job.spot and not capabilities.spot:
        entries.append(_given_up(SPOT_GIVEN_UP, worded[Feature.SPOT].error(Feature.SPOT, target.name)))
        job = attrs.evolve(job, spot=False)
    if Feature.INFINIBAND in worded and job.interconnect is Interconnect.INFINIBAND and not capabilities.infiniband:
        refusal = worded[Feature.INFINIBAND].error(Feature.INFINIBAND, target.name)
        entries.append(_given_up(INFINIBAND_GIVEN_UP, refusal))
        job = attrs.evolve(job, interconnect=Interconnect.ANY)
    if Feature.PER_ROLE_MACHINES in worded and not capabilities.per_role_machines:
        job, inherited = _primary_hardware(job, target, worded[Feature.PER_ROLE_MACHINES])
        entries += inherited
    return job, entries


def _primary_hardware(job: DistributedJob, target: Backend,
                      refusal: Refusal) -> tuple[DistributedJob, list[ReportEntry]]:
    """Every role's own hardware given up: it runs on the primary's."""
    primary, entries = effective_role(job, RoleName.PRIMARY), []
    for role in effective_roles(job):
        written = job.role(role.name)
        own = [f for f in HARDWARE if getattr(written, f) is not None and getattr(role, f) != getattr(primary, f)]
        if role.name is RoleName.PRIMARY or not own:
            continue
        for field in own:
            entries.append(_given_up(HARDWARE_GIVEN_UP, refusal.error(
                Feature.PER_ROLE_MACHINES, target.name, role=role.name.value, field=field,
                nodes=role.name.value.replace("_", " "))))
        job = attrs.evolve(job, **{role.name.value: attrs.evolve(written, **{f: None for f in own})})
    return job, entries


def _missing_settings(exc: ValidationError, target: Backend, given: Mapping[str, Any],
                      missing: list[Problem]) -> dict[str, Any]:
    """The target's example values for the settings ``exc`` says are missing, when it says nothing
    else and none of them was given an example already (``{}`` otherwise)."""
    examples = target.migration.example_settings
    prefix = f"backends.{target.name}."
    keys = [p.path[len(prefix):].split(".")[0] for p in exc.problems if p.path.startswith(prefix)]
    if (not keys or len(keys) != len(exc.problems) or any(k not in examples or k in given for k in keys)
            or any(p in missing for p in exc.problems)):
        return {}
    return {k: examples[k] for k in keys}


def _fallback(job: DistributedJob, refusal: UnsupportedFeatureError) -> Optional[tuple[DistributedJob, ReportEntry]]:
    """A give-up for a refusal the capabilities could not foresee; ``None`` when there is none."""
    role = next((r for r, f in ROLE_FEATURES.items() if f is refusal.feature), None)
    if role is not None and job.role(role) is not None:
        return attrs.evolve(job, **{role: None}), _given_up(ROLE_GIVEN_UP, refusal)
    if refusal.feature is Feature.INFINIBAND and job.interconnect is Interconnect.INFINIBAND:
        return attrs.evolve(job, interconnect=Interconnect.ANY), _given_up(INFINIBAND_GIVEN_UP, refusal)
    if refusal.feature is Feature.SPOT and job.spot:
        return attrs.evolve(job, spot=False), _given_up(SPOT_GIVEN_UP, refusal)
    if refusal.feature is Feature.CODE and job.module and job.image and job.code and jobdata.is_package(job.code):
        return attrs.evolve(job, code=None), ReportEntry(
            fidelity=Fidelity.DROPPED,
            field="code",
            message=f"{refusal.message} The job runs python -m "
            f"{job.module} on {job.image}, which must have the package installed",
        )
    role, _, field = refusal.subject.partition(".")  # a target without worded refusals names it role.field
    written = job.role(role) if refusal.feature is Feature.PER_ROLE_MACHINES else None
    if written is not None and field in HARDWARE and getattr(written, field) is not None:
        return attrs.evolve(job, **{role: attrs.evolve(written, **{field: None})}), _given_up(
            HARDWARE_GIVEN_UP, refusal
        )
    return None


def _without_machine(job: DistributedJob, target: Backend,
                     exc: ValidationError) -> Optional[tuple[DistributedJob, str, str]]:
    """When the target rejects a machine type carried from the source, drop it so the target
    picks one for the role's accelerator; returns the new job, the role and the machine."""
    setting = target.migration.machine_setting
    prefix = f"backends.{target.name}.{setting}."
    for problem in exc.problems:
        if setting and problem.path.startswith(prefix):
            role = problem.path[len(prefix):].split(".")[0]
            machines = dict(job.backends.get(target.name, {}).get(setting, {}))
            if role in machines:
                machine = machines.pop(role)
                block = {**job.backends[target.name], setting: machines}
                return attrs.evolve(job, backends={**job.backends, target.name: block}), role, machine
    return None


def compile_dropping(
    job: DistributedJob, target: Backend, profile: Optional[str] = None, settings: Optional[Mapping[str, Any]] = None
) -> tuple[CompiledJob, DistributedJob, list[ReportEntry]]:
    """Give up what the target's capabilities say it lacks (:func:`plan`), then compile once.

    Two things can still stop that compile, and are given up after it: support the capabilities
    declare but that depends on the job (InfiniBand-class networking only on some of the
    target's machines, a Reduction Server only with GPU workers and without parameter servers),
    which only the target's compiler can judge; and a machine type carried from the source that
    the target does not offer (the target picks one for the same accelerator). Each removes
    something from a finite job, so the compiles end. Returns the compiled job, the job it was
    compiled from, and the entries.

    A setting the target needs and neither the profile nor the job gives (an
    execution role, an output folder) does not stop at the first: the compile goes on with
    the target's example value for it (``MigrationPolicy.example_settings``) to find the others,
    and one error lists them all, each with its fix.
    """
    job, entries = plan(job, target)
    missing: list[Problem] = []
    unreadable: list[UnreadableLocationError] = []
    examples: dict[str, Any] = {}
    while True:
        try:
            compiled = api.compile(job, backend=target.name, profile=profile,
                                   settings={**(settings or {}), **examples})
        except UnsupportedFeatureError as exc:
            moved = _stand_in(job, exc)
            if moved is not None:  # said with the others at the end; the compile goes on to find them
                job = moved
                unreadable.append(exc)
                continue
            given = None if missing else _fallback(job, exc)
            if given is None:
                raise _blockers(job, target, missing, unreadable, exc) from None
            job, entry = given
            entries.append(entry)
        except ValidationError as exc:
            needed = _missing_settings(exc, target, examples, missing)
            if needed:
                missing += exc.problems
                examples.update(needed)
                continue
            fixed = None if missing else _without_machine(job, target, exc)
            if fixed is None:
                raise _blockers(job, target, missing, unreadable, exc) from None
            job, role, machine = fixed
            entries.append(
                ReportEntry(
                    fidelity=Fidelity.APPROXIMATED,
                    field=f"backends.{target.name}.{target.migration.machine_setting}.{role}",
                    message=f"{target.name} does not offer {machine}; it picks one for the same accelerator",
                )
            )
        else:
            if missing or unreadable:
                raise _blockers(job, target, missing, unreadable)
            return compiled, job, entries


def _stand_in(job: DistributedJob, exc: UnsupportedFeatureError) -> Optional[DistributedJob]:
    """The job with the data location ``exc`` refuses replaced by one of the kind the target
    reads, so one compile pass finds every blocker; ``None`` when ``exc`` is not such a refusal
    (or the target reads only local folders, which a stand-in cannot be)."""
    if not isinstance(exc, UnreadableLocationError) or exc.stand_in is None:
        return None
    kind, _, name = exc.subject.partition(".")
    if kind == "code" and job.code is not None:
        return attrs.evolve(job, code=exc.stand_in)
    if kind == "inputs" and name in job.inputs:
        return attrs.evolve(job, inputs={**job.inputs, name: attrs.evolve(job.inputs[name], uri=exc.stand_in)})
    if kind == "outputs" and name in job.outputs:
        return attrs.evolve(job, outputs={**job.outputs, name: JobOutput(uri=exc.stand_in)})
    return None


def _blockers(job: DistributedJob, target: Backend, missing: list[Problem],
              unreadable: list[UnreadableLocationError],
              last: Optional[UnsupportedFeatureError | ValidationError] = None) -> OmnidistError:
    """One error for everything that stops the migration: the settings the target needs, every
    data location it cannot read, and ``last`` (the refusal that ended the compiles), each with
    its fix. Missing settings are invalid input (exit 2); data locations alone stay exit 3."""
    if not missing and not unreadable and last is not None:
        return cannot_express(last, target.name) if isinstance(last, ValidationError) else with_flag_hint(last)
    refused: list[UnsupportedFeatureError] = [*unreadable]
    extra: list[Problem] = []
    if isinstance(last, ValidationError):
        extra = [p for p in last.problems if p not in missing]
    elif last is not None:
        refused.append(with_flag_hint(last))
    if missing or extra:
        return ValidationError([*missing, *(Problem("", str(e)) for e in refused), *extra],
                               source=getattr(last, "source", None) or job.source)
    if len(refused) == 1:
        return refused[0]
    first = refused[0]
    lines = "\n".join(f"  {e.subject}: {e.message} {e.hint}".rstrip() for e in refused)
    return UnsupportedFeatureError(first.feature, target.name, f"each needs a fix before the job can move:\n{lines}",
                                   subject=f"{len(refused)} parts of the job")
