"""The environment each emulated platform gives a replica, for the local backend.

Every replica listens on ``127.0.0.1`` with its own port (chosen by the OS at run time), so
the variables are the platform's real ones with local addresses:

- ``vertex``: ``CLUSTER_SPEC`` (``workerpool0``-``workerpool3``, ``environment: cloud``) on
  every replica and, when the job has more than one replica, ``TF_CONFIG`` with ``chief``,
  ``worker``, ``ps`` (evaluators are not in its cluster); plus the ``OMNIDIST_*`` hints.
- ``ai_platform``: ``CLUSTER_SPEC`` and ``TF_CONFIG`` with ``master`` (``chief`` when
  ``backends.ai_platform.use_chief_in_tf_config``), ``worker``, ``ps``; no hints, because
  legacy AI Platform has no environment field to carry them.
- ``azure_ml``: by framework (:data:`AZURE_DISTRIBUTIONS`): the PyTorch variables, MPI's
  ``OMPI_COMM_WORLD_*`` + ``AZ_BATCH_MASTER_NODE``, or ``TF_CONFIG`` with ``worker`` and a
  (possibly empty) ``ps``; always ``AZUREML_RUN_ID``, ``AZUREML_CR_NODE_RANK`` and
  ``AZ_BATCH_HOST_LIST``; hints without ``OMNIDIST_ROLE`` (one environment for all nodes).
  Every node runs one process: ``processes_per_node`` > 1 is the job's business
  (``omnidist launch``). Since all nodes share one host here, ``AZ_BATCH_HOST_LIST`` entries
  carry ports (``127.0.0.1:PORT``); Azure's carry host names only.
- ``none``: no platform variables; every replica sees a single-process world.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from omnidist import lowering
from omnidist.job import DistributedJob, Framework, RoleName

EMULATIONS = ("ai_platform", "azure_ml", "none", "vertex")
"""Platforms the local backend can emulate."""

VERTEX_POOLS = {
    RoleName.EVALUATORS: 3,
    RoleName.PARAMETER_SERVERS: 2,
    RoleName.PRIMARY: 0,
    RoleName.WORKERS: 1,
}
"""Role -> Vertex worker pool index (reduction servers, pool 2, are not run locally)."""

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
    """One replica to emulate: its role, index within the role, and ``host:port``."""

    role: RoleName
    index: int
    address: str


def inherited(environ: dict[str, str]) -> dict[str, str]:
    """The user's environment without platform variables and ``OMNIDIST_*`` hints."""
    from omnidist.runtime import hints

    return {k: v for k, v in environ.items()
            if k not in PLATFORM_VARIABLES and not hints.is_hint(k) and not k.startswith(PLATFORM_PREFIXES)}


def _hosts(slots: Sequence[Slot], *roles: RoleName) -> list[str]:
    return [s.address for s in slots if s.role in roles]


def vertex(job: DistributedJob, slots: Sequence[Slot], **_: Any) -> list[dict[str, str]]:
    """Vertex AI's ``CLUSTER_SPEC`` (and ``TF_CONFIG``) for each slot."""
    cluster = {f"workerpool{pool}": _hosts(slots, role) for role, pool in sorted(VERTEX_POOLS.items(),
                                                                                 key=lambda kv: kv[1])}
    cluster = {k: v for k, v in cluster.items() if v}
    tf_cluster = {TF_TASK_TYPES[r]: _hosts(slots, r) for r in (RoleName.PRIMARY, RoleName.WORKERS,
                                                               RoleName.PARAMETER_SERVERS)}
    tf_cluster = {k: v for k, v in tf_cluster.items() if v}
    result = []
    for slot in slots:
        task = {"type": f"workerpool{VERTEX_POOLS[slot.role]}", "index": slot.index}
        env = {"CLUSTER_SPEC": json.dumps({"cluster": cluster, "environment": "cloud", "task": task, "job": {}})}
        if len(slots) > 1:
            tf_task = {"type": TF_TASK_TYPES[slot.role], "index": slot.index}
            env["TF_CONFIG"] = json.dumps({"cluster": tf_cluster, "environment": "cloud", "task": tf_task, "job": {}})
        result.append(env)
    return result


def ai_platform(job: DistributedJob, slots: Sequence[Slot], use_chief: bool = False,
                **_: Any) -> list[dict[str, str]]:
    """Legacy AI Platform's ``CLUSTER_SPEC`` and ``TF_CONFIG`` (``master`` or ``chief``)."""
    types = {**TF_TASK_TYPES, RoleName.PRIMARY: "chief" if use_chief else "master"}
    tf_roles = (RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS)
    cluster = {types[r]: _hosts(slots, r) for r in tf_roles}
    cluster = {k: v for k, v in cluster.items() if v}
    result = []
    for slot in slots:
        task = {"type": types[slot.role], "index": slot.index}
        spec = {"cluster": cluster, "environment": "cloud", "task": task, "job": {}}
        result.append({"CLUSTER_SPEC": json.dumps(spec), "TF_CONFIG": json.dumps(spec)})
    return result


def azure_ml(job: DistributedJob, slots: Sequence[Slot], **_: Any) -> list[dict[str, str]]:
    """Azure ML's variables for the job's distribution, one node per slot."""
    distribution = AZURE_DISTRIBUTIONS[job.framework]
    nodes = _hosts(slots, RoleName.PRIMARY, RoleName.WORKERS)
    master = nodes[0]
    master_addr, _, master_port = master.rpartition(":")
    result = []
    node_rank = 0
    for slot in slots:
        env = {"AZUREML_RUN_ID": f"{job.name}_local", "AZ_BATCH_HOST_LIST": ",".join(nodes)}
        if slot.role is RoleName.PARAMETER_SERVERS:  # TensorFlow only (the compiler rejects others)
            rank_in_world = None
            task = {"type": "ps", "index": slot.index}
        else:
            rank_in_world, node_rank = node_rank, node_rank + 1
            task = {"type": "worker", "index": rank_in_world}
            env["AZUREML_CR_NODE_RANK"] = str(rank_in_world)
        if distribution == "tensorflow":
            cluster = {"worker": nodes, "ps": _hosts(slots, RoleName.PARAMETER_SERVERS)}
            env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})
        elif distribution == "mpi":
            env.update({
                "OMPI_COMM_WORLD_RANK": str(rank_in_world), "OMPI_COMM_WORLD_SIZE": str(len(nodes)),
                "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "1",
                "OMPI_COMM_WORLD_NODE_RANK": str(rank_in_world),
                "AZ_BATCH_MASTER_NODE": master, "AZ_BATCHAI_MPI_MASTER_NODE": master_addr,
            })
        else:
            env.update({
                "MASTER_ADDR": master_addr, "MASTER_PORT": master_port, "WORLD_SIZE": str(len(nodes)),
                "NODE_RANK": str(rank_in_world), "RANK": str(rank_in_world), "LOCAL_RANK": "0",
            })
        result.append(env)
    return result


def none(job: DistributedJob, slots: Sequence[Slot], **_: Any) -> list[dict[str, str]]:
    """No platform: only the job's own environment."""
    return [{} for _ in slots]


PLATFORM_ENV: dict[str, Callable[..., list[dict[str, str]]]] = {
    "ai_platform": ai_platform,
    "azure_ml": azure_ml,
    "none": none,
    "vertex": vertex,
}
"""Emulation name -> the function giving each slot its platform variables."""


def platform_env(job: DistributedJob, emulate: str, slots: Sequence[Slot],
                 use_chief: bool = False) -> list[dict[str, str]]:
    """The emulated platform's variables for each slot, in slot order."""
    return PLATFORM_ENV[emulate](job, slots, use_chief=use_chief)


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
