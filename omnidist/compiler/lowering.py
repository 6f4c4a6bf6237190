"""IR -> IR steps every backend shares after inheritance (:mod:`omnidist.model.roles`):
Reduction Server sizing, the runtime's hint variables, and the portable rules.

:func:`check_portable_rules` holds the rules that do not depend on the cloud. It runs once,
before any backend compiles (:func:`omnidist.api.prepare`), so a job that no cloud could run
gets one answer everywhere: exit 2 with the same message on every backend. Backends keep
only what their own cloud cannot express (exit 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Optional

import attrs

from omnidist.errors import Problem, UnsupportedFeatureError, ValidationError
from omnidist.model.features import ROLE_FEATURES, Feature
from omnidist.model.job import DistributedJob, Interconnect
from omnidist.model.roles import (
    AUTO,
    Accelerator,
    EffectiveRole,
    RoleName,
    effective_role,
    effective_roles,
    has_gpus,
    processes_per_node,
    replica_count,
)

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
    """The ``OMNIDIST_*`` variables (see :mod:`omnidist.runtime.hints`) a replica gets: those whose
    value the runtime (or an importer reading the request back) cannot find in the platform's own
    variables, the same for every role, so a platform that gives every node one environment
    carries them once.

    - ``OMNIDIST_JOB_NAME``, ``OMNIDIST_FRAMEWORK``, ``OMNIDIST_PROCESSES_PER_NODE``: no platform
      tells the container these (``launch`` runs a TensorFlow job's command directly and starts
      the node's processes; importers read all three back).
    - ``OMNIDIST_POOL2_ROLE``: only for reduction servers (without it the pool reads as parameter
      servers, as it should for those).
    - ``OMNIDIST_ROLE`` is not set: every platform's own variables say the role, and the pool-2
      ambiguity is the hint above's (the runtime still checks one a user sets).

    Args:
        job: the job being compiled.
        role: the role whose replicas get these variables (the set is the same for every role).
        per_role: whether the platform gives each role its own environment (the same set either way).
    """
    from omnidist.runtime import hints

    env = {hints.JOB_NAME: job.name, hints.FRAMEWORK: job.framework.value,
           hints.PROCESSES_PER_NODE: str(processes_per_node(job))}
    if job.reduction_servers is not None and job.reduction_servers.replicas != 0 \
            and not replica_count(job, RoleName.PARAMETER_SERVERS):
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
    if _reducers(job) is None or not replica_count(job, RoleName.PARAMETER_SERVERS):
        return None
    return Problem("reduction_servers",
                   "a job trains either with parameter servers or with all-reduce sped up by reduction "
                   "servers, not both; drop parameter_servers (all-reduce) or reduction_servers "
                   "(parameter-server training)")


def _reducers_need_gpu_trainers(job: DistributedJob) -> Optional[Problem]:
    if _reducers(job) is None:
        return None
    trainers = [effective_role(job, RoleName.PRIMARY)]
    if replica_count(job, RoleName.WORKERS):
        trainers.append(effective_role(job, RoleName.WORKERS))
    without = [role.name.value for role in trainers if not has_gpus(role)]
    if not without:
        return None
    return Problem("reduction_servers",
                   "reduction servers speed up NCCL all-reduce between GPU nodes, and these training roles "
                   f"have no accelerator: {', '.join(without)}; give them one or remove reduction_servers")


def _tensorflow_runs_one_process_per_node(job: DistributedJob) -> Optional[Problem]:
    if job.framework.value != "tensorflow" or job.processes_per_node in (AUTO, 1):
        return None
    return Problem("processes_per_node",
                   f"a TensorFlow job runs one process per node (tf.distribute drives the node's GPUs from it), "
                   f"got {job.processes_per_node}; remove processes_per_node")


def tpu_role(job: DistributedJob) -> Optional[EffectiveRole]:
    """The first role (in pool order) whose replicas have a TPU, or ``None`` for a job without TPUs."""
    return next((r for r in effective_roles(job) if r.accelerator is not None and r.accelerator.tpu), None)


def _tpu_hosts_run_one_process(job: DistributedJob) -> Optional[Problem]:
    if job.processes_per_node in (AUTO, 1) or tpu_role(job) is None:
        return None
    return Problem("processes_per_node",
                   f"a TPU host runs one process, which drives every chip of the host (JAX, PyTorch/XLA and "
                   f"TensorFlow alike), got {job.processes_per_node}; remove processes_per_node")


def _tpus_have_their_own_interconnect(job: DistributedJob) -> Optional[Problem]:
    if job.interconnect is not Interconnect.INFINIBAND or tpu_role(job) is None:
        return None
    return Problem("interconnect",
                   "a TPU slice's chips talk over their own inter-chip interconnect, and TPU platforms offer no "
                   "InfiniBand; set interconnect: any")


PORTABLE_RULES = (
    _reducers_run_without_accelerators,
    _reducers_or_parameter_servers,
    _reducers_need_gpu_trainers,
    _tensorflow_runs_one_process_per_node,
    _tpu_hosts_run_one_process,
    _tpus_have_their_own_interconnect,
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


# --- TPUs (SPEC §13) ---------------------------------------------------------------------------------

def tpu_backends(kind: str) -> str:
    """The installed backends whose capabilities offer the TPU ``kind``, for a refusal's hint
    (two backends, joined with "or"); the core names none itself."""
    from omnidist.backend import registry
    from omnidist.errors import OmnidistError

    found = []
    for name in registry.installed():
        try:
            offers = kind in registry.get(name).capabilities.accelerators
        except OmnidistError:  # a broken plugin is its own error, not this one's
            continue
        if offers:
            found.append(name)
    return " or ".join(found) or "a backend that runs TPUs (omnidist backends lists them)"


def refuse_tpus(job: DistributedJob, backend: str, why: str) -> None:
    """Exit 3 naming the TPU, on a backend without TPUs (such as this machine).

    Args:
        job: the job being compiled.
        backend: the backend's name.
        why: what the backend has instead, for the message (``it offers NVIDIA GPUs``).

    Raises:
        UnsupportedFeatureError: the job has a TPU on some role; the hint names the installed
            backends that run it.
    """
    role = tpu_role(job)
    if role is None:
        return
    raise UnsupportedFeatureError(
        Feature.ACCELERATOR, backend, f"{role.name.value} asks for {role.accelerator}, a TPU slice; {why}.",
        f"Compile it for {tpu_backends(role.accelerator.type)}, or give the job GPUs.",
        subject=f"accelerator {role.accelerator.type}")


def tpu_slice_of(job: DistributedJob, backend: str, layout: str) -> Optional[Accelerator]:
    """The job's TPU slice (the primary's accelerator), after refusing every role a TPU layout
    cannot hold (exit 3 naming the role): a TPU job is one slice, whose hosts are its nodes.

    Args:
        job: the job being compiled.
        backend: the backend's name.
        layout: how the platform runs a slice, for the message (``it runs a slice as one
            worker pool``).

    Returns:
        The slice, or ``None`` for a job without TPUs.

    Raises:
        UnsupportedFeatureError: a role besides the primary (workers, parameter servers,
            evaluators, reduction servers), or a TPU on another role than the primary.
    """
    first = tpu_role(job)
    if first is None:
        return None
    primary = effective_role(job, RoleName.PRIMARY)
    if first.name is not RoleName.PRIMARY:
        raise UnsupportedFeatureError(
            ROLE_FEATURES.get(first.name.value, Feature.OTHER), backend,
            f"{first.name.value} ask for {first.accelerator}, and a TPU slice is the primary's accelerator (its hosts "
            "are the job's nodes).", f"Put the whole slice in primary.accelerator (e.g. {first.accelerator}).",
            subject=first.name.value)
    slice_ = primary.accelerator
    for role in effective_roles(job):
        if role.name is RoleName.PRIMARY:
            continue
        hint = ("Put every chip in primary.accelerator (its hosts become the nodes)."
                if role.name is RoleName.WORKERS else f"Drop {role.name.value}: a TPU job is one slice.")
        raise UnsupportedFeatureError(
            ROLE_FEATURES.get(role.name.value, Feature.OTHER), backend,
            f"{layout}; the {slice_} slice's hosts are the job's nodes, and there is no place for {role.name.value}.",
            hint, subject=role.name.value)
    return slice_
