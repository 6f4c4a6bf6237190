"""Kubernetes with the Kubeflow Training Operator: PyTorchJob and TFJob pods.

Every pod has ``KUBERNETES_SERVICE_HOST``. The job kind, chosen by framework (:data:`KINDS`,
which the Kubernetes compiler takes from here), decides the rest:

- **PyTorchJob** (``Master`` + ``Worker``): the operator sets ``MASTER_ADDR`` (the master pod's
  service, ``<job>-master-0``), ``MASTER_PORT`` (:data:`DEFAULT_PORT` unless the container names
  another), ``WORLD_SIZE`` (pods x ``nprocPerNode``), ``RANK`` (the pod's: master 0, worker i ->
  i + 1) and torchrun's defaults ``PET_NNODES``, ``PET_NODE_RANK``, ``PET_NPROC_PER_NODE`` (with
  ``nprocPerNode``), ``PET_MASTER_ADDR``, ``PET_MASTER_PORT``: a plain ``torchrun train.py`` in
  every pod is wired. One process per pod is started; ``omnidist launch`` starts
  ``PET_NPROC_PER_NODE`` with torchrun.
- **TFJob** (``Chief``, ``Worker``, ``PS``, ``Evaluator``): ``TF_CONFIG`` with lowercase task
  types (``chief``, ``worker``, ``ps``, ``evaluator``) and ``environment: cloud``.

MPIJob ranks are started by ``mpirun`` over ssh, outside the pods' environment; they see mpirun's
``OMPI_COMM_WORLD_*`` and what the launcher forwards, and are read as :mod:`.mpi`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, host_port, integer, json_object
from omnidist.runtime.platforms import Bound, Decided, JobFacts, Slot, hosts, tf_config
from omnidist.runtime.view import RuntimeContext

NAME = "kubernetes"
ORDER = 35

SERVICE_HOST = "KUBERNETES_SERVICE_HOST"
"""Set in every pod (the API server's service address): what tells a pod from a bare torchrun."""
SERVICE_PORT = "KUBERNETES_SERVICE_PORT"

NNODES, NODE_RANK, NPROC_PER_NODE = "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE"
PET_MASTER_ADDR, PET_MASTER_PORT = "PET_MASTER_ADDR", "PET_MASTER_PORT"

VARIABLES = frozenset({"MASTER_ADDR", "MASTER_PORT", "RANK", tf_config.VARIABLE, "WORLD_SIZE"})
PREFIXES = ("PET_",)

BOUND = Bound(variables=("PET_*",))
"""Only inside a Kubeflow training operator's pods: torchrun's defaults ``PET_*`` (``PET_NNODES``,
``PET_NPROC_PER_NODE``…), which a bare ``torchrun`` reads (import turns that into
``processes_per_node``; a command that names them itself is platform-bound)."""

DEFAULT_PORT = 23456
"""The PyTorchJob master's port when its container names none (``pytorchjob-port``)."""

KINDS: Mapping[str, str] = {
    "custom": "PyTorchJob",
    "deepspeed": "PyTorchJob",
    "horovod": "MPIJob",
    "jax": "PyTorchJob",
    "pytorch": "PyTorchJob",
    "tensorflow": "TFJob",
}
"""Portable framework -> the Kubeflow kind a job compiles to (custom and jax: a PyTorchJob, whose
torch variables any launcher can read; ``jax.distributed`` takes its coordinator from them through
:func:`omnidist.runtime.context`)."""

REPLICA_TYPES: Mapping[str, Mapping[str, str]] = {
    "MPIJob": {"primary": "Worker", "worker": "Worker"},
    "PyTorchJob": {"primary": "Master", "worker": "Worker"},
    "TFJob": {"evaluator": "Evaluator", "parameter_server": "PS", "primary": "Chief", "worker": "Worker"},
}
"""Kind -> runtime role -> replica type. An MPIJob's primary and workers are all ``Worker`` pods;
its ``Launcher`` runs ``mpirun`` and is no node of the job."""

HINTS_PER_ROLE: Optional[bool] = True
"""The hints, in each replica type's own pod template."""

ENV_FIELD = True


# --- reading -----------------------------------------------------------------------------------

def detect(env: Env) -> bool:
    """A pod (``KUBERNETES_SERVICE_HOST``) with a training operator's variables: ``PET_NNODES``,
    ``TF_CONFIG``, or the torch variables without torchrun's own."""
    if SERVICE_HOST not in env:
        return False
    torch = all(env.get(k) for k in ("MASTER_ADDR", "WORLD_SIZE", "RANK")) and "TORCHELASTIC_RUN_ID" not in env
    return NNODES in env or tf_config.VARIABLE in env or torch


def parse(env: Env) -> RuntimeContext:
    """A TFJob pod's ``TF_CONFIG``, else a PyTorchJob pod's variables."""
    if tf_config.VARIABLE in env:
        return tf_config.parse_spec(json_object(env, tf_config.VARIABLE), tf_config.VARIABLE, NAME, env)
    return _pytorch(env)


def _nodes(env: Env) -> Optional[int]:
    """``PET_NNODES``: a count, or an elastic ``MIN:MAX`` range (its maximum)."""
    raw = env.get(NNODES, "").strip()
    if ":" in raw:
        low, _, high = raw.partition(":")
        if not (low.isdigit() and high.isdigit()) or int(high) < max(int(low), 1):
            raise RuntimeEnvError(NNODES, f"expected a number of nodes or MIN:MAX, got {raw!r}")
        return int(high)
    return integer(env, NNODES, minimum=1)


def _processes(env: Env) -> int:
    """``PET_NPROC_PER_NODE`` as a count (``auto``, ``gpu`` and ``cpu`` leave it to torchrun: 1 here)."""
    raw = env.get(NPROC_PER_NODE, "").strip()
    if raw in ("", "auto", "gpu", "cpu"):
        return 1
    return integer(env, NPROC_PER_NODE, minimum=1) or 1


def _pytorch(env: Env) -> RuntimeContext:
    """A PyTorchJob pod. Its node rank is ``PET_NODE_RANK`` (torchrun leaves it as it is, where it
    rewrites ``RANK`` per process), else ``GROUP_RANK``, else ``RANK`` before any launcher ran."""
    per_node = _processes(env)
    world = integer(env, "WORLD_SIZE", minimum=1)
    num_nodes = _nodes(env) or (max(world // per_node, 1) if world else 1)
    ranks = (integer(env, name) for name in (NODE_RANK, "GROUP_RANK", "RANK"))
    node_rank = next((rank for rank in ranks if rank is not None), None)
    addr = env.get("MASTER_ADDR") or env.get(PET_MASTER_ADDR) or None
    if node_rank is None or (addr is None and num_nodes > 1):
        missing = NODE_RANK if node_rank is None else "MASTER_ADDR"
        raise RuntimeEnvError(missing, f"not set in a {num_nodes}-node PyTorchJob: the operator sets it only "
                              "when the job has a Master; an elastic job (Workers only) leaves the ranks to "
                              "torchrun's rendezvous (run torchrun with --rdzv-endpoint yourself)")
    if node_rank >= num_nodes:
        raise RuntimeEnvError(NODE_RANK, f"{node_rank} is not below {NNODES}={num_nodes}")
    port = integer(env, "MASTER_PORT", minimum=1) or integer(env, PET_MASTER_PORT, minimum=1) or DEFAULT_PORT
    addr = addr or "127.0.0.1"
    host_port(f"{addr}:{port}", "MASTER_PORT", "the master's address")
    return RuntimeContext(
        platform=NAME, role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=num_nodes, rank=node_rank, world_size=num_nodes, local_rank=0,
        master_addr=addr, master_port=port, cluster=_listing(addr, port, num_nodes), processes_per_node=per_node,
        source=NNODES if NNODES in env else "MASTER_ADDR",
    )


def _listing(addr: str, port: int, num_nodes: int) -> dict[str, list[str]]:
    """The master, and the workers' services when the master's name shows the job's
    (``<job>-master-0`` -> ``<job>-worker-<i>``)."""
    listing = {"primary": [f"{addr}:{port}"]}
    stem, dot, domain = addr.partition(".")
    if stem.endswith("-master-0") and num_nodes > 1:
        job = stem[: -len("-master-0")]
        listing["worker"] = [f"{job}-worker-{i}{dot}{domain}:{port}" for i in range(num_nodes - 1)]
    return listing


# --- emulating ---------------------------------------------------------------------------------

def follow(request: Mapping[str, Any], job: JobFacts) -> Decided:
    """The kind compile chose and its ``nprocPerNode``: the operator starts one process per pod."""
    spec = request.get("spec", {})
    kind = request.get("kind") or KINDS[job.framework]
    return Decided(details={"kind": kind, "nproc": spec.get("nprocPerNode")})


def assume(job: JobFacts) -> Decided:
    """Without the backend: the framework's kind."""
    return Decided(details={"kind": KINDS[job.framework], "nproc": None})


def roles(decided: Decided) -> frozenset[str]:
    """The roles the kind's pods can hold. MPIJob ranks run under mpirun over ssh, which
    ``omnidist run`` does not start: none."""
    kind = decided.details["kind"]
    return frozenset() if kind == "MPIJob" else frozenset(REPLICA_TYPES[kind])


def emulate(job: JobFacts, slots: Sequence[Slot], decided: Decided) -> list[dict[str, str]]:
    """The operator's variables for each running slot (one process per pod), with a
    ``KUBERNETES_SERVICE_HOST`` standing for the cluster's."""
    pod = {SERVICE_HOST: "127.0.0.1", SERVICE_PORT: "443"}
    if decided.details["kind"] == "TFJob":
        listing = {tf_config.TASK_TYPES[r]: hosts(slots, r) for r in REPLICA_TYPES["TFJob"]}
        listing = {k: v for k, v in listing.items() if v}
        return [{**pod, tf_config.VARIABLE: json.dumps({
            "cluster": listing, "task": {"type": tf_config.TASK_TYPES[s.role], "index": s.index},
            "environment": "cloud"})} for s in slots if s.runs]
    nodes = hosts(slots, "primary", "worker")
    addr, _, port = nodes[0].rpartition(":")
    nproc = str(decided.details.get("nproc") or "")
    world = len(nodes) * (int(nproc) if nproc.isdigit() else 1)
    result = []
    for rank, _slot in enumerate(s for s in slots if s.runs and s.role in ("primary", "worker")):
        env = {**pod, "MASTER_ADDR": addr, "MASTER_PORT": port, PET_MASTER_ADDR: addr, PET_MASTER_PORT: port,
               "WORLD_SIZE": str(world), "RANK": str(rank), NODE_RANK: str(rank), NNODES: str(len(nodes)),
               "PYTHONUNBUFFERED": "1"}
        if nproc:
            env[NPROC_PER_NODE] = nproc
        result.append(env)
    return result


PREEMPTION_GRACE_S = 30
"""Seconds between the SIGTERM a preempted replica gets and its machine's end:
a pod deleted or evicted gets SIGTERM, then SIGKILL after terminationGracePeriodSeconds (30 s)
(``omnidist run --preempt`` sends the same)."""
