"""Portable job -> Skeleton Cloud's job request. Pure: no network, no SDK.

The request is one JSON object: the job's name, labels and timeout, and one pool per role, each
with its replica count, accelerator and program (image, command, args, env with omnidist's runtime
hints). What the cloud cannot run is refused with its words (:data:`~omnidist_skeleton.tables.REFUSALS`).
"""

from __future__ import annotations

from typing import Any

from omnidist.kit import (
    AUTO,
    CompiledJob,
    DistributedJob,
    EffectiveRole,
    Feature,
    Interconnect,
    Note,
    NoteKind,
    RoleName,
    UnsupportedFeatureError,
    effective_roles,
    env_with_hints,
    refuse_tpus,
)
from omnidist_skeleton.tables import ACCELERATORS, DEFAULT_TIMEOUT, DISPLAY, NAME, REFUSALS, ROLES


def refused(feature: Feature, **context: Any) -> UnsupportedFeatureError:
    """The refusal for ``feature`` in the backend's own words."""
    return REFUSALS[feature].error(feature, NAME, **context)


def check_expressible(job: DistributedJob) -> None:
    """Refuse what the cloud cannot run (exit 3, naming it), before anything is built."""
    refuse_tpus(job, NAME, f"{DISPLAY} offers NVIDIA GPUs")
    lacking = ((Feature.SPOT, job.spot), (Feature.INFINIBAND, job.interconnect is Interconnect.INFINIBAND),
               (Feature.TUNING, job.tuning is not None), (Feature.CODE, job.code is not None),
               (Feature.INPUTS, bool(job.inputs)), (Feature.OUTPUTS, bool(job.outputs)),
               (Feature.FRAMEWORK_VERSION, job.framework_version is not None))
    for feature, present in lacking:
        if present:
            raise refused(feature)
    for role in effective_roles(job):
        if role.name not in ROLES:
            raise refused(Feature(role.name.value), role=role.name.value)
        if role.image is None:
            raise refused(Feature.IMAGE)
        if role.accelerator is not None and role.accelerator.type not in ACCELERATORS:
            raise UnsupportedFeatureError(Feature.ACCELERATOR, NAME, f"{DISPLAY} offers {', '.join(ACCELERATORS)}",
                                          "Pick one of those GPUs.", subject=f"{role.name.value}.accelerator")


def pool(role: EffectiveRole, job: DistributedJob) -> dict[str, Any]:
    """One role's pool."""
    found: dict[str, Any] = {"role": ROLES[role.name], "replicas": role.replicas, "image": role.image,
                             "command": list(role.command), "args": list(role.args),
                             "env": env_with_hints(role, job)}
    if role.accelerator is not None:
        found["accelerator"] = {"type": ACCELERATORS[role.accelerator.type], "count": role.accelerator.count}
    for key, value in (("cpus", role.cpus), ("memoryGb", role.memory_gb), ("diskGb", role.disk_gb)):
        if value is not None:
            found[key] = value
    return found


def compile_job(job: DistributedJob) -> CompiledJob:
    """The job request for ``job``.

    Raises:
        UnsupportedFeatureError: the job uses what the cloud lacks (exit 3).
    """
    check_expressible(job)
    roles = [role for role in effective_roles(job) if role.replicas == AUTO or role.replicas]
    request: dict[str, Any] = {"displayName": job.name, "pools": [pool(role, job) for role in roles]}
    if job.labels:
        request["labels"] = dict(job.labels)
    notes: list[Note] = []
    if job.timeout is not None:
        request["timeoutSeconds"] = job.timeout
    else:  # what the job leaves open and the cloud decides is said, not silently taken
        notes.append(Note(kind=NoteKind.DEFAULTED, field="timeout",
                          message=f"no timeout: {DISPLAY} stops the job after {DEFAULT_TIMEOUT}"))
    if any(role.name is RoleName.PRIMARY for role in roles):
        return CompiledJob(backend=NAME, request=request, diagnostics=notes, job=job)
    raise refused(Feature.IMAGE)  # pragma: no cover - every job has a primary
