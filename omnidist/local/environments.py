"""The environment each emulated platform gives a replica, for the local backend.

Every replica listens on ``127.0.0.1`` with its own port (chosen by the OS at run time), so
the variables are the platform's real ones with local addresses. What the platform's compiler
decided (:mod:`omnidist.local.native`) comes in as a :class:`~omnidist.local.native.Native`:

- ``vertex``: ``CLUSTER_SPEC`` (``workerpool0``-``workerpool3``, ``environment: cloud``, and the
  compiled CustomJob spec as ``job``) on every replica and, when the job has more than one
  replica, ``TF_CONFIG`` with ``chief``, ``worker``, ``ps`` (evaluators and reduction servers
  are not in its cluster); plus the ``OMNIDIST_*`` hints. Reduction servers are listed in
  ``workerpool2`` (with addresses nothing listens on: Google's reducer image is not run here).
- ``ai_platform``: ``CLUSTER_SPEC`` and ``TF_CONFIG`` (``job``: the compiled ``trainingInput``)
  with ``master`` (``chief`` when compile sets ``useChiefInTfConfig``: for TensorFlow jobs, with
  a Reduction Server, or when asked), ``worker``, ``ps`` (reduction servers take the ``ps`` slot,
  as compile places them); no hints, because legacy AI Platform has no environment field.
- ``azure_ml``: by framework (:data:`AZURE_DISTRIBUTIONS`): the PyTorch variables, MPI's
  ``OMPI_COMM_WORLD_*`` + ``AZ_BATCH_MASTER_NODE``, or ``TF_CONFIG`` with ``worker`` and a
  (possibly empty: Azure writes ``"ps": []``) ``ps``; always ``AZUREML_RUN_ID``,
  ``AZUREML_NODE_COUNT``, ``AZUREML_CR_NODE_RANK`` and ``AZ_BATCH_HOST_LIST``; hints without
  ``OMNIDIST_ROLE`` (one environment for all nodes). Each node runs the processes Azure would
  start there (``process_count_per_instance``, one for ``omnidist launch`` commands), each with
  its own ``RANK``/``LOCAL_RANK`` (PyTorch) or ``OMPI_COMM_WORLD_RANK``/``LOCAL_RANK`` (MPI).
  Since all nodes share one host here, ``AZ_BATCH_HOST_LIST`` entries carry ports
  (``127.0.0.1:PORT``); Azure's carry host names only.
- ``none``: no platform variables; every replica sees a single-process world.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Optional

import attrs

from omnidist import lowering
from omnidist.job import DistributedJob, Framework, RoleName
from omnidist.local.native import Native

EMULATIONS = ("ai_platform", "azure_ml", "none", "vertex")
"""Platforms the local backend can emulate."""

VERTEX_POOLS = {
    RoleName.EVALUATORS: 3,
    RoleName.PARAMETER_SERVERS: 2,
    RoleName.PRIMARY: 0,
    RoleName.REDUCTION_SERVERS: 2,
    RoleName.WORKERS: 1,
}
"""Role -> Vertex worker pool index (pool 2 holds parameter servers or reduction servers, never both)."""

TF_TASK_TYPES = {
    RoleName.EVALUATORS: "evaluator",
    RoleName.PARAMETER_SERVERS: "ps",
    RoleName.PRIMARY: "chief",
    RoleName.WORKERS: "worker",
}
"""Role -> TF_CONFIG task type on Vertex (AI Platform says ``master`` for the primary)."""

AZURE_DISTRIBUTIONS = {
    Framework.CUSTOM: "pytorch",
    Framework.DEEPSPEED: "pytorch",
    Framework.HOROVOD: "mpi",
    Framework.PYTORCH: "pytorch",
    Framework.TENSORFLOW: "tensorflow",
}
"""Framework -> the Azure ML distribution whose variables the nodes get (mirrors the azure_ml compiler)."""

PLATFORM_VARIABLES = frozenset({
    "CLUSTER_SPEC", "GROUP_RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK",
    "RANK", "TF_CONFIG", "WORLD_SIZE",
})
"""Variables dropped from the environment ``omnidist run`` inherits, so a stray one in the user's
shell cannot change what a replica detects (with the prefixes in :data:`PLATFORM_PREFIXES`)."""

PLATFORM_PREFIXES = ("AZUREML_", "AZ_BATCH", "OMPI_COMM_WORLD_", "TORCHELASTIC_")
"""Prefixes of platform variables dropped from the inherited environment."""


@attrs.frozen(kw_only=True)
class Slot:
    """One replica of the emulated cluster: its role, index within the role, and ``host:port``.

    Attributes:
        runs: False for replicas the platform lists but the local backend does not start
            (reduction servers: they run Google's image on real machines).
        processes: processes the platform itself starts for this replica (Azure ML's
            ``process_count_per_instance``); 1 elsewhere.
    """

    role: RoleName
    index: int
    address: str
    runs: bool = True
    processes: int = 1


def inherited(environ: dict[str, str]) -> dict[str, str]:
    """The user's environment without platform variables and ``OMNIDIST_*`` hints."""
    from omnidist.runtime import hints

    return {k: v for k, v in environ.items()
            if k not in PLATFORM_VARIABLES and not hints.is_hint(k) and not k.startswith(PLATFORM_PREFIXES)}


def _hosts(slots: Sequence[Slot], *roles: RoleName) -> list[str]:
    return [s.address for s in slots if s.role in roles]


def vertex(job: DistributedJob, slots: Sequence[Slot], native: Native) -> list[dict[str, str]]:
    """Vertex AI's ``CLUSTER_SPEC`` (and ``TF_CONFIG``) for each running slot."""
    cluster = {f"workerpool{pool}": _hosts(slots, *(r for r, p in VERTEX_POOLS.items() if p == pool))
               for pool in range(4)}
    cluster = {k: v for k, v in cluster.items() if v}
    tf_cluster = {TF_TASK_TYPES[r]: _hosts(slots, r) for r in (RoleName.PRIMARY, RoleName.WORKERS,
                                                               RoleName.PARAMETER_SERVERS)}
    tf_cluster = {k: v for k, v in tf_cluster.items() if v}
    running = [s for s in slots if s.runs]
    result = []
    for slot in running:
        task = {"type": f"workerpool{VERTEX_POOLS[slot.role]}", "index": slot.index}
        env = {"CLUSTER_SPEC": json.dumps({"cluster": cluster, "environment": "cloud", "task": task,
                                           "job": native.job_spec})}
        if len(running) > 1:
            tf_task = {"type": TF_TASK_TYPES[slot.role], "index": slot.index}
            env["TF_CONFIG"] = json.dumps({"cluster": tf_cluster, "environment": "cloud", "task": tf_task,
                                           "job": native.job_spec})
        result.append(env)
    return result


def ai_platform(job: DistributedJob, slots: Sequence[Slot], native: Native) -> list[dict[str, str]]:
    """Legacy AI Platform's ``CLUSTER_SPEC`` and ``TF_CONFIG`` (``master`` or ``chief``) per running slot."""
    types = {**TF_TASK_TYPES, RoleName.PRIMARY: "chief" if native.use_chief else "master",
             RoleName.REDUCTION_SERVERS: "ps"}
    cluster: dict[str, list[str]] = {}
    for role in (RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS, RoleName.REDUCTION_SERVERS):
        if _hosts(slots, role):
            cluster.setdefault(types[role], []).extend(_hosts(slots, role))
    result = []
    for slot in slots:
        if not slot.runs:
            continue
        task = {"type": types[slot.role], "index": slot.index}
        spec = {"cluster": cluster, "environment": "cloud", "task": task, "job": native.job_spec}
        result.append({"CLUSTER_SPEC": json.dumps(spec), "TF_CONFIG": json.dumps(spec)})
    return result


def azure_ml(job: DistributedJob, slots: Sequence[Slot], native: Native) -> list[dict[str, str]]:
    """Azure ML's variables for the job's distribution: one dict per process Azure starts."""
    distribution = AZURE_DISTRIBUTIONS[job.framework]
    nodes = _hosts(slots, RoleName.PRIMARY, RoleName.WORKERS)
    per_node = {s.address: s.processes for s in slots if s.role in (RoleName.PRIMARY, RoleName.WORKERS)}
    world = sum(per_node.values())
    master = nodes[0]
    master_addr, _, master_port = master.rpartition(":")
    result = []
    node_rank = 0
    for slot in slots:
        common = {"AZUREML_RUN_ID": f"{job.name}_local", "AZUREML_NODE_COUNT": str(len(nodes)),
                  "AZ_BATCH_HOST_LIST": ",".join(nodes)}
        if slot.role is RoleName.PARAMETER_SERVERS:  # TensorFlow only (compile refuses others)
            cluster = {"worker": nodes, "ps": _hosts(slots, RoleName.PARAMETER_SERVERS)}
            task = {"type": "ps", "index": slot.index}
            result.append({**common, "TF_CONFIG": json.dumps({"cluster": cluster, "task": task,
                                                              "environment": "cloud"})})
            continue
        common["AZUREML_CR_NODE_RANK"] = str(node_rank)
        first_rank = sum(list(per_node.values())[:node_rank])
        for local_rank in range(slot.processes):
            rank = first_rank + local_rank
            env = dict(common)
            if distribution == "tensorflow":
                cluster = {"worker": nodes, "ps": _hosts(slots, RoleName.PARAMETER_SERVERS)}
                task = {"type": "worker", "index": node_rank}
                env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})
            elif distribution == "mpi":
                env.update({
                    "OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(world),
                    "OMPI_COMM_WORLD_LOCAL_RANK": str(local_rank),
                    "OMPI_COMM_WORLD_LOCAL_SIZE": str(slot.processes),
                    "OMPI_COMM_WORLD_NODE_RANK": str(node_rank),
                    "AZ_BATCH_MASTER_NODE": master, "AZ_BATCHAI_MPI_MASTER_NODE": master_addr,
                })
            else:
                env.update({
                    "MASTER_ADDR": master_addr, "MASTER_PORT": master_port, "WORLD_SIZE": str(world),
                    "NODE_RANK": str(node_rank), "RANK": str(rank), "LOCAL_RANK": str(local_rank),
                })
            result.append(env)
        node_rank += 1
    return result


def none(job: DistributedJob, slots: Sequence[Slot], native: Native) -> list[dict[str, str]]:
    """No platform: only the job's own environment."""
    return [{} for s in slots if s.runs]


PLATFORM_ENV: dict[str, Callable[[DistributedJob, Sequence[Slot], Native], list[dict[str, str]]]] = {
    "ai_platform": ai_platform,
    "azure_ml": azure_ml,
    "none": none,
    "vertex": vertex,
}
"""Emulation name -> the function giving each process its platform variables."""


def platform_env(job: DistributedJob, emulate: str, slots: Sequence[Slot],
                 native: Optional[Native] = None) -> list[dict[str, str]]:
    """The emulated platform's variables for each process it starts, in slot order.

    A running slot gives ``slot.processes`` dicts in a row (one, except where Azure ML starts
    several processes per node); slots that do not run give none.
    """
    return PLATFORM_ENV[emulate](job, slots, native or Native())


HINTS = {
    "ai_platform": None,
    "azure_ml": False,
    "none": None,
    "vertex": True,
}
"""Emulation -> which ``OMNIDIST_*`` hints its compiler adds: None none (no env field, or no
platform), False all but ``OMNIDIST_ROLE`` (one environment for every node), True all."""


def hint_env(job: DistributedJob, emulate: str, role: RoleName) -> dict[str, str]:
    """The ``OMNIDIST_*`` hints a replica of ``role`` gets under ``emulate`` (user env goes over them)."""
    per_role = HINTS[emulate]
    return {} if per_role is None else lowering.runtime_hints(job, role, per_role=per_role)
