"""IR -> IR steps every backend shares: inheritance, env merging, process counts.

Backends compile from :class:`EffectiveRole` values, never from the raw :class:`Role`, so
the inheritance rules below hold identically on every cloud:

- every role's ``image``, ``command`` and ``args`` default to the job's;
- workers and evaluators run the primary's program on the primary's hardware, so their
  ``accelerator``, ``cpus``, ``memory_gb``, ``disk_gb`` (and image/command/args/env) default
  to the primary's;
- parameter servers and reduction servers inherit no hardware (they are CPU roles);
- ``accelerator: none`` on a role means no accelerator, even where it would inherit one;
- a role's ``env`` is merged over the job's (and, for workers/evaluators, the primary's).

:func:`check_portable_rules` holds the rules that do not depend on the cloud. It runs once,
before any backend compiles (:func:`omnidist.api.prepare`), so a job that no cloud could run
gets one answer everywhere: exit 2 with the same message on every backend. Backends keep
only what their own cloud cannot express (exit 3).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Optional

import attrs

from omnidist.errors import Problem, ValidationError
from omnidist.job import AUTO, Accelerator, DistributedJob, Role, RoleName
from omnidist.jobdata import NO_ACCELERATOR

_INHERITS_FROM_PRIMARY = frozenset({RoleName.WORKERS, RoleName.EVALUATORS})


@attrs.frozen(kw_only=True)
class EffectiveRole:
    """A role with inheritance applied: what each of its replicas really gets.

    ``replicas`` may still be ``"auto"`` for reduction servers; the backend sizes them.
    """

    name: RoleName
    replicas: int | str
    accelerator: Optional[Accelerator]
    cpus: Optional[float]
    memory_gb: Optional[float]
    disk_gb: Optional[int]
    image: Optional[str]
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: dict[str, str]

    @property
    def gpus(self) -> int:
        """Accelerators per replica (0 for CPU-only)."""
        return self.accelerator.count if self.accelerator else 0

    @property
    def hardware(self) -> tuple:
        """What decides the machine: two roles with equal hardware can share one machine type."""
        return (self.accelerator, self.cpus, self.memory_gb, self.disk_gb)


def _pick(value, fallback, last=None):
    """The first of the values that is set (written out: this runs for every field of every role)."""
    return value if value is not None else fallback if fallback is not None else last


_NO_ROLE = Role()
"""What a role that inherits nothing from the primary falls back to (only the job's fields)."""


_ROLE_FIELDS = tuple((name, name.value) for name in RoleName)
"""Each role with the job field that holds it, in pool order."""


def _accelerator(role: Role, base: Role) -> Optional[Accelerator]:
    # `accelerator: none` stops the inheritance instead of leaving it open.
    picked = _pick(role.accelerator, base.accelerator)
    return None if picked == NO_ACCELERATOR else picked


def effective_role(job: DistributedJob, name: RoleName | str) -> Optional[EffectiveRole]:
    """The role with inheritance applied, or ``None`` when the job does not have it."""
    if not isinstance(name, RoleName):
        name = RoleName(name)
    role: Optional[Role] = getattr(job, name.value)
    return None if role is None else _effective(job, name, role)


def _effective(job: DistributedJob, name: RoleName, role: Role) -> EffectiveRole:
    base = job.primary if name in _INHERITS_FROM_PRIMARY else _NO_ROLE
    return EffectiveRole(
        name=name,
        replicas=role.replicas,
        accelerator=_accelerator(role, base),
        cpus=_pick(role.cpus, base.cpus),
        memory_gb=_pick(role.memory_gb, base.memory_gb),
        disk_gb=_pick(role.disk_gb, base.disk_gb),
        image=_pick(role.image, base.image, job.image),
        command=_pick(role.command, base.command, job.command or None) or (),
        args=_pick(role.args, base.args, job.args or None) or (),
        env={**job.env, **base.env, **role.env},
    )


def effective_roles(job: DistributedJob) -> Iterator[EffectiveRole]:
    """Every role the job has with at least one replica (or ``auto``), in pool order."""
    for name, field in _ROLE_FIELDS:
        role = getattr(job, field)
        if role is not None and (role.replicas == AUTO or role.replicas > 0):
            yield _effective(job, name, role)


def replicas(job: DistributedJob, name: RoleName | str) -> int:
    """How many replicas a role has (0 when absent; ``auto`` counts as 0 here)."""
    role = job.role(name)
    if role is None or role.replicas == AUTO:
        return 0
    return role.replicas


def num_nodes(job: DistributedJob) -> int:
    """The nodes that train together: the primary plus the workers."""
    return 1 + replicas(job, RoleName.WORKERS)


def processes_per_node(job: DistributedJob) -> int:
    """``processes_per_node``, with ``auto`` = the primary's accelerator count, else 1."""
    if job.processes_per_node != AUTO:
        return job.processes_per_node
    primary = job.primary.accelerator
    return primary.count if primary else 1


def has_gpus(role: Optional[EffectiveRole]) -> bool:
    """True when the role exists and each replica has at least one accelerator."""
    return role is not None and role.gpus > 0


# --- Reduction Server sizing ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ReducerSizing:
    """``reduction_servers.replicas: auto`` worked out: how many reducers, and from what."""

    count: int
    trainers: tuple[tuple[int, float], ...]
    """(nodes, egress Gbps of each) for the primary and the workers."""
    reducer_gbps: float

    def explain(self, machine: str) -> str:
        """The sum, for a note: ``auto = ceil((1×100 + 4×100 Gbps) / 32 Gbps per n1-highcpu-16) = 16``."""
        terms = " + ".join(f"{nodes}×{gbps:g}" for nodes, gbps in self.trainers)
        return f"auto = ceil(({terms} Gbps) / {self.reducer_gbps:g} Gbps per {machine}) = {self.count}"


def size_reducers(roles: Mapping[RoleName, EffectiveRole], egress_gbps: Mapping[RoleName, float],
                  reducer_gbps: float) -> ReducerSizing:
    """How many reducers ``auto`` means: together they must send as fast as the training nodes,
    so ``ceil(Σ egress of the primary and the workers / egress of one reducer)``.

    Args:
        roles: the job's effective roles (the primary and, when present, the workers are read).
        egress_gbps: role -> the maximum egress of one of its machines (from the backend's catalog).
        reducer_gbps: the maximum egress of one reducer's machine.
    """
    trainers = tuple((1 if name is RoleName.PRIMARY else int(roles[name].replicas), egress_gbps[name])
                     for name in (RoleName.PRIMARY, RoleName.WORKERS) if name in roles)
    total = sum(nodes * gbps for nodes, gbps in trainers)
    count = max(1, math.ceil(total / reducer_gbps))
    return ReducerSizing(count=count, trainers=trainers, reducer_gbps=reducer_gbps)


def runtime_hints(job: DistributedJob, role: Optional[RoleName] = None, per_role: bool = True) -> dict[str, str]:
    """The ``OMNIDIST_*`` variables (see :mod:`omnidist.runtime.hints`) for one role.

    Args:
        job: the job being compiled.
        role: the role whose replicas get these variables.
        per_role: False on platforms where every node shares one environment (Azure ML);
            then no ``OMNIDIST_ROLE`` is set.
    """
    from omnidist.runtime import hints

    env = {
        hints.JOB_NAME: job.name,
        hints.FRAMEWORK: job.framework.value,
        hints.PROCESSES_PER_NODE: str(processes_per_node(job)),
    }
    if per_role and role is not None:
        env[hints.ROLE] = role.singular
    if replicas(job, RoleName.PARAMETER_SERVERS):
        env[hints.POOL2_ROLE] = RoleName.PARAMETER_SERVERS.singular
    elif job.reduction_servers is not None and job.reduction_servers.replicas != 0:
        env[hints.POOL2_ROLE] = RoleName.REDUCTION_SERVERS.singular
    return env


def env_with_hints(role: EffectiveRole, job: DistributedJob, per_role: bool = True) -> dict[str, str]:
    """The role's environment with the runtime hints added underneath (user values win)."""
    return {**runtime_hints(job, role.name, per_role), **role.env}


# --- portable rules ----------------------------------------------------------------------------


def _reducers(job: DistributedJob) -> Optional[EffectiveRole]:
    """The reduction servers when the job has any (``replicas`` > 0 or ``auto``)."""
    reducers = job.reduction_servers
    if reducers is None or reducers.replicas == 0:
        return None
    return effective_role(job, RoleName.REDUCTION_SERVERS)


def _reducers_run_without_accelerators(job: DistributedJob) -> Optional[Problem]:
    reducers = _reducers(job)
    if reducers is None or reducers.accelerator is None:
        return None
    return Problem("reduction_servers.accelerator",
                   "reduction servers are CPU machines that sum gradients over the network; "
                   "remove the accelerator")


def _reducers_or_parameter_servers(job: DistributedJob) -> Optional[Problem]:
    if _reducers(job) is None or not replicas(job, RoleName.PARAMETER_SERVERS):
        return None
    return Problem("reduction_servers",
                   "a job trains either with parameter servers or with all-reduce sped up by reduction "
                   "servers, not both; drop parameter_servers (all-reduce) or reduction_servers "
                   "(parameter-server training)")


def _reducers_need_gpu_trainers(job: DistributedJob) -> Optional[Problem]:
    if _reducers(job) is None:
        return None
    trainers = [effective_role(job, RoleName.PRIMARY)]
    if replicas(job, RoleName.WORKERS):
        trainers.append(effective_role(job, RoleName.WORKERS))
    without = [role.name.value for role in trainers if not has_gpus(role)]
    if not without:
        return None
    return Problem("reduction_servers",
                   "reduction servers speed up NCCL all-reduce between GPU nodes, and these training roles "
                   f"have no accelerator: {', '.join(without)}; give them one or remove reduction_servers")


PORTABLE_RULES = (
    _reducers_run_without_accelerators,
    _reducers_or_parameter_servers,
    _reducers_need_gpu_trainers,
)
"""Rules a job breaks on every backend alike, each a function of the job returning the
problem (or ``None``); each looks only at the roles it is about, so a job without them costs
nothing."""


def check_portable_rules(job: DistributedJob) -> None:
    """Refuse what no backend could run, with one message and exit 2 wherever the job goes.

    Raises:
        ValidationError: every portable rule the job breaks, each with its field path.
    """
    problems = [p for rule in PORTABLE_RULES if (p := rule(job)) is not None]
    if problems:
        raise ValidationError(problems, source=job.source)
