"""Azure ML: the variables of the job's distribution (PyTorch, MPI or TensorFlow), and ``AZUREML_*``.

Every Azure ML process has ``AZUREML_RUN_ID`` (it is what tells Azure's PyTorch variables from a
bare torchrun); the SDK's client-side ``AZUREML_CURRENT_CLOUD`` does not mean "inside a job".
The rest depends on the command job's ``distribution.type``, chosen by framework
(:data:`DISTRIBUTIONS`, which the Azure ML compiler takes from here):

- ``pytorch``: ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``NODE_RANK`` per node; ``RANK``,
  ``LOCAL_RANK`` per process (Azure starts ``process_count_per_instance`` per node); none of them
  at all means a single-node job.
- ``mpi``: mpirun's ``OMPI_COMM_WORLD_*`` (node rank = ``OMPI_COMM_WORLD_RANK //
  OMPI_COMM_WORLD_LOCAL_SIZE``), rank 0's address in ``AZ_BATCH_MASTER_NODE`` (``addr:port``)
  or ``AZ_BATCHAI_MPI_MASTER_NODE`` (address only: port :data:`MPI_DEFAULT_PORT`).
- ``tensorflow``: ``TF_CONFIG`` with ``worker`` (0 is the primary) and a possibly empty ``ps``.

``AZUREML_NODE_COUNT``, ``AZUREML_CR_NODE_RANK`` and ``AZ_BATCH_HOST_LIST`` (comma-separated
hosts) help where the distribution's own variables are silent. All nodes share one environment,
so there is no per-role hint. A job's files in ``./outputs`` are uploaded with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.runtime import hints
from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, host_port, integer, json_object, node_cluster
from omnidist.runtime.platforms import Bound, Decided, JobFacts, Slot, hosts, tf_config, torchrun
from omnidist.runtime.trials import MLFLOW
from omnidist.runtime.view import RuntimeContext

NAME = "azure_ml"
ORDER = 30

PREFIX = "AZUREML_"
RUN_ID = "AZUREML_RUN_ID"
NODE_COUNT = "AZUREML_NODE_COUNT"
CR_NODE_RANK = "AZUREML_CR_NODE_RANK"
HOST_LIST = "AZ_BATCH_HOST_LIST"
MASTER_NODE = "AZ_BATCH_MASTER_NODE"
MPI_MASTER_NODE = "AZ_BATCHAI_MPI_MASTER_NODE"
MPI_PREFIX = "OMPI_COMM_WORLD_"

VARIABLES = frozenset({"LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "RANK",
                       tf_config.VARIABLE, "WORLD_SIZE"})
PREFIXES = (PREFIX, "AZ_BATCH", MPI_PREFIX)

BOUND = Bound(mounts={"/mnt/azureml/": ""}, variables=("AZUREML_*", "AZ_BATCH*"))
"""Only inside Azure ML's containers: its data mounts under ``/mnt/azureml/`` (a job's inputs
there have no URI of their own: ``${{inputs.NAME}}`` is the portable way), and the
``AZUREML_*`` / ``AZ_BATCH*`` variables."""

CLIENT_VARIABLES = frozenset({"AZUREML_CURRENT_CLOUD"})
"""``AZUREML_*`` variables of the client side (the azure-ai-ml SDK sets ``AZUREML_CURRENT_CLOUD``
when it talks to a sovereign cloud or custom endpoint): they do not mean "inside a job"."""

MPI_DEFAULT_PORT = 6105
"""Port Azure ML's documentation uses for rank 0 when only ``AZ_BATCHAI_MPI_MASTER_NODE`` (no port) is set."""

OUTPUTS_DIR = "outputs"
"""Azure ML uploads what a job writes to ``./outputs`` with the job: its model folder by default."""

DISTRIBUTIONS: Mapping[str, str] = {
    "custom": "pytorch",
    "deepspeed": "pytorch",
    "horovod": "mpi",
    "jax": "pytorch",
    "pytorch": "pytorch",
    "tensorflow": "tensorflow",
}
"""Portable framework -> the command job's ``distribution.type``, whose variables the nodes get."""

DISTRIBUTION_ROLES: Mapping[str, frozenset[str]] = {
    "mpi": frozenset({"primary", "worker"}),
    "pytorch": frozenset({"primary", "worker"}),
    "tensorflow": frozenset({"primary", "worker", "parameter_server"}),
}
"""``distribution.type`` -> the runtime roles its variables can describe (no evaluators, no reducers)."""

SWEEP_PREFIX = "AZUREML_SWEEP_"
"""Azure ML gives a sweep trial its values as ``AZUREML_SWEEP_<name>`` (the SDK's ``SweepJob`` docs)."""

METRICS = MLFLOW
"""An Azure ML sweep reads its ``primary_metric`` from the trials' MLflow metrics."""

MLFLOW_MISSING = "the Azure ML sweep cannot see {metrics}; add mlflow and azureml-mlflow to the job's environment"
"""What ``report()`` warns without mlflow: the sweep reads metrics through mlflow and its Azure ML plugin."""

HINTS_PER_ROLE: Optional[bool] = False
"""The hints, once: one environment for all nodes."""

ENV_FIELD = True


# --- reading -----------------------------------------------------------------------------------

def detect(env: Env) -> bool:
    """Any ``AZUREML_*`` variable but the client-side ones."""
    return any(k.startswith(PREFIX) and k not in CLIENT_VARIABLES for k in env)


def parse(env: Env) -> RuntimeContext:
    """MPI, TensorFlow or PyTorch distribution, in that order."""
    if any(k.startswith(MPI_PREFIX) for k in env):
        return _mpi(env)
    if tf_config.VARIABLE in env:
        return tf_config.parse_spec(json_object(env, tf_config.VARIABLE), tf_config.VARIABLE, NAME, env)
    return _pytorch(env)


def _hosts(env: Env, port: Optional[int]) -> list[str]:
    """``AZ_BATCH_HOST_LIST`` (comma-separated hosts, optionally ``host:port``) as ``host:port``."""
    raw = env.get(HOST_LIST, "").strip()
    found = []
    for i, item in enumerate(h.strip() for h in raw.split(",") if h.strip()):
        if ":" in item:
            host, number = host_port(item, HOST_LIST, f"entry {i}")
            found.append(f"{host}:{number}")
        elif port is not None:
            found.append(f"{item}:{port}")
    return found


def _mpi(env: Env) -> RuntimeContext:
    rank = integer(env, "OMPI_COMM_WORLD_RANK")
    size = integer(env, "OMPI_COMM_WORLD_SIZE", minimum=1)
    local_rank = integer(env, "OMPI_COMM_WORLD_LOCAL_RANK") or 0
    local_size = integer(env, "OMPI_COMM_WORLD_LOCAL_SIZE", minimum=1) or 1
    for name, value in (("OMPI_COMM_WORLD_RANK", rank), ("OMPI_COMM_WORLD_SIZE", size)):
        if value is None:
            raise RuntimeEnvError(name, "not set, though other OMPI_COMM_WORLD_* variables are (mpirun sets all)")
    if rank >= size:
        raise RuntimeEnvError("OMPI_COMM_WORLD_RANK", f"{rank} is not below OMPI_COMM_WORLD_SIZE={size}")
    node_rank, num_nodes = rank // local_size, -(-size // local_size)
    if env.get(MASTER_NODE):
        addr, port = host_port(env[MASTER_NODE], MASTER_NODE, "value")
    elif env.get(MPI_MASTER_NODE):
        addr = env[MPI_MASTER_NODE]
        port = integer(env, "MASTER_PORT", minimum=1) or MPI_DEFAULT_PORT
    elif num_nodes == 1:
        addr, port = "127.0.0.1", integer(env, "MASTER_PORT", minimum=1) or MPI_DEFAULT_PORT
    else:
        raise RuntimeEnvError(MASTER_NODE, f"not set (nor {MPI_MASTER_NODE}) in a {num_nodes}-node MPI job, so "
                              "rank 0's address is unknown")
    found = _hosts(env, port) or [f"{addr}:{port}"]
    return RuntimeContext(
        platform=NAME, role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=num_nodes, rank=rank, world_size=size, local_rank=local_rank,
        master_addr=addr, master_port=port, cluster=node_cluster(found), processes_per_node=local_size,
        source="OMPI_COMM_WORLD_RANK",
    )


def _pytorch(env: Env) -> RuntimeContext:
    world_size = integer(env, "WORLD_SIZE", minimum=1) or 1
    port = integer(env, "MASTER_PORT", minimum=1)
    addr = env.get("MASTER_ADDR") or None
    if addr is None and world_size > 1:
        raise RuntimeEnvError("MASTER_ADDR", f"not set, though WORLD_SIZE is {world_size}")
    if port is None and world_size > 1:
        raise RuntimeEnvError("MASTER_PORT", f"not set, though WORLD_SIZE is {world_size}")
    found = _hosts(env, port)
    per_node = (integer(env, "LOCAL_WORLD_SIZE", minimum=1) or integer(env, hints.PROCESSES_PER_NODE, minimum=1)
                or 1)
    num_nodes = integer(env, NODE_COUNT, minimum=1) or len(found) or max(world_size // per_node, 1)
    rank = integer(env, "RANK")
    node_rank = integer(env, "NODE_RANK")
    if node_rank is None:
        node_rank = integer(env, CR_NODE_RANK)
    if node_rank is None:
        node_rank = (rank or 0) // per_node
    if node_rank >= num_nodes:
        raise RuntimeEnvError("NODE_RANK", f"{node_rank} is not below the job's {num_nodes} nodes")
    return RuntimeContext(
        platform=NAME, role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=num_nodes, rank=node_rank if rank is None else rank,
        world_size=world_size, local_rank=integer(env, "LOCAL_RANK") or 0,
        master_addr=addr or "127.0.0.1", master_port=port or torchrun.DEFAULT_PORT,
        cluster=node_cluster(found) or ({"primary": [f"{addr}:{port}"]} if addr and port else {}),
        source="MASTER_ADDR" if addr else RUN_ID,
    )


def default_model_dir() -> str:
    """``./outputs``, which Azure uploads with the job."""
    return os.path.abspath(OUTPUTS_DIR)


def launched_by(ctx: RuntimeContext, env: Env) -> Optional[str]:
    """Azure's PyTorch distribution started this process as one of several on its node.

    Azure sets ``RANK``/``LOCAL_RANK`` per process, so a process with ``LOCAL_RANK`` > 0, a
    ``RANK`` other than its ``NODE_RANK``, ``LOCAL_WORLD_SIZE`` > 1, or more processes
    (``WORLD_SIZE``) than nodes (``AZUREML_NODE_COUNT``/``AZ_BATCH_HOST_LIST``) is one of several.
    With one process per node (``WORLD_SIZE`` = nodes, ``LOCAL_RANK`` 0), the launcher starts the rest.
    """
    nodes_known = bool(env.get(NODE_COUNT) or env.get(HOST_LIST))
    local_size = env.get("LOCAL_WORLD_SIZE", "1")
    several = ((ctx.local_rank or 0) > 0 or (local_size.isdigit() and int(local_size) > 1)
               or (env.get("RANK") is not None and ctx.rank != ctx.node_rank)
               or (nodes_known and ctx.world_size > ctx.num_nodes))
    if several:
        return (f"Azure ML's PyTorch distribution ({ctx.world_size} processes on {ctx.num_nodes} node(s); this is "
                f"rank {ctx.rank}, local rank {ctx.local_rank})")
    return None


# --- emulating ---------------------------------------------------------------------------------

def follow(request: Mapping[str, Any], job: JobFacts) -> Decided:
    """The distribution compile chose, and the processes it asks Azure to start per node."""
    distribution = request.get("distribution", {})
    return Decided(processes_per_node=int(distribution.get("process_count_per_instance", 1)),
                   details={"distribution": distribution.get("type") or DISTRIBUTIONS[job.framework]})


def assume(job: JobFacts) -> Decided:
    """Without the backend: the framework's distribution, one process per node."""
    return Decided(details={"distribution": DISTRIBUTIONS[job.framework]})


def roles(decided: Decided) -> frozenset[str]:
    """The roles the distribution's variables can describe."""
    return DISTRIBUTION_ROLES[decided.details["distribution"]]


def notes(job: JobFacts, decided: Decided) -> list[tuple[str, str]]:
    """The empty ``ps`` list Azure writes for TensorFlow, which TensorFlow >= 2.13 rejects."""
    if decided.details["distribution"] != "tensorflow" or job.replicas.get("parameter_server"):
        return []
    return [(tf_config.VARIABLE, "TF_CONFIG has \"ps\": [] as Azure ML writes it; TensorFlow >= 2.13 rejects it: "
             "call omnidist.runtime.init_tensorflow() before building a strategy, or start the command with "
             "omnidist launch")]


def emulate(job: JobFacts, slots: Sequence[Slot], decided: Decided) -> list[dict[str, str]]:
    """The distribution's variables for each process Azure starts: ``slot.processes`` per node.

    All nodes share one host here, so ``AZ_BATCH_HOST_LIST`` entries carry ports (``127.0.0.1:PORT``);
    Azure's carry host names only.
    """
    distribution = decided.details["distribution"]
    nodes = hosts(slots, "primary", "worker")
    per_node = [s.processes for s in slots if s.role in ("primary", "worker")]
    servers = hosts(slots, "parameter_server")
    result = []
    node_rank = 0
    for slot in slots:
        common = {RUN_ID: f"{job.name}_local", NODE_COUNT: str(len(nodes)), HOST_LIST: ",".join(nodes)}
        if slot.role == "parameter_server":  # TensorFlow only (see DISTRIBUTION_ROLES)
            spec = _tf_config(nodes, servers, "parameter_server", slot.index)
            result.append({**common, tf_config.VARIABLE: json.dumps(spec)})
            continue
        common[CR_NODE_RANK] = str(node_rank)
        first_rank = sum(per_node[:node_rank])
        for local_rank in range(slot.processes):
            result.append({**common, **_process_env(distribution, slot, nodes, servers, node_rank,
                                                    first_rank + local_rank, local_rank, sum(per_node))})
        node_rank += 1
    return result


def _tf_config(nodes: list[str], servers: list[str], role: str, index: int) -> dict[str, Any]:
    """The TensorFlow distribution's ``TF_CONFIG``: every node a ``worker`` (0 acts as the chief),
    and a ``ps`` list even when it is empty, as Azure writes it."""
    types = tf_config.TASK_TYPES
    return {"cluster": {types["worker"]: nodes, types["parameter_server"]: servers},
            "task": {"type": types[role], "index": index}, "environment": "cloud"}


def _process_env(distribution: str, slot: Slot, nodes: list[str], servers: list[str], node_rank: int, rank: int,
                 local_rank: int, world: int) -> dict[str, str]:
    """One process's distribution variables."""
    master = nodes[0]
    master_addr, _, master_port = master.rpartition(":")
    if distribution == "tensorflow":
        return {tf_config.VARIABLE: json.dumps(_tf_config(nodes, servers, "worker", node_rank))}
    if distribution == "mpi":
        return {
            "OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(world),
            "OMPI_COMM_WORLD_LOCAL_RANK": str(local_rank), "OMPI_COMM_WORLD_LOCAL_SIZE": str(slot.processes),
            "OMPI_COMM_WORLD_NODE_RANK": str(node_rank), MASTER_NODE: master, MPI_MASTER_NODE: master_addr,
        }
    return {
        "MASTER_ADDR": master_addr, "MASTER_PORT": master_port, "WORLD_SIZE": str(world),
        "NODE_RANK": str(node_rank), "RANK": str(rank), "LOCAL_RANK": str(local_rank),
    }


# --- tuning ------------------------------------------------------------------------------------

def trial_id(env: Env) -> Optional[str]:
    """The sweep trial this process belongs to: its run id, when ``AZUREML_SWEEP_*`` is set.

    Azure documents no trial-id variable; what it documents is that a sweep trial gets its values
    as ``AZUREML_SWEEP_<name>`` and that every trial is a child run of its own, so the run id every
    Azure ML process has is the trial's. Without ``AZUREML_SWEEP_*`` it is a plain job: ``None``.
    """
    if any(k.startswith(SWEEP_PREFIX) for k in env):
        return env.get(RUN_ID) or None
    return None


def emulate_trial(env: Mapping[str, str], trial: str, params: Mapping[str, Any]) -> dict[str, str]:
    """A trial's process: its values as ``AZUREML_SWEEP_<name>``, and a run id of its own (each
    trial is a child run)."""
    found = {**env, **{f"{SWEEP_PREFIX}{k}": str(v) for k, v in params.items()}}
    if RUN_ID in found:
        found[RUN_ID] = f"{found[RUN_ID]}_trial_{trial}"
    return found


PREEMPTION_GRACE_S = 30
"""Seconds between the SIGTERM a preempted replica gets and its machine's end:
Azure Spot and low-priority VMs get a 30 s eviction notice (Scheduled Events)
(``omnidist run --preempt`` sends the same)."""
