"""Platform detection: the environment of a training process -> :class:`RuntimeContext`.

Standard library only. Detection order — the first source present wins:

1. **Vertex AI** — ``CLUSTER_SPEC`` whose ``cluster`` has ``workerpool*`` keys. Pools are
   positional: 0 primary, 1 workers, 2 parameter servers *or* reduction servers (the
   platform does not say which: ``OMNIDIST_POOL2_ROLE`` does, else parameter servers),
   3 evaluators.
2. **AI Platform Training** — ``CLUSTER_SPEC`` whose ``cluster`` has ``master`` or ``chief``
   (plus ``worker``, ``ps``, ``evaluator``).
3. **Azure ML** — any ``AZUREML_*`` variable but the SDK's client-side ``AZUREML_CURRENT_CLOUD``
   (every Azure ML process has ``AZUREML_RUN_ID``;
   it is what tells Azure's PyTorch variables from a bare torchrun). Then by distribution:
   MPI if any ``OMPI_COMM_WORLD_*`` is set (node rank = ``OMPI_COMM_WORLD_RANK //
   OMPI_COMM_WORLD_LOCAL_SIZE``, master from ``AZ_BATCH_MASTER_NODE`` ``addr:port`` or
   ``AZ_BATCHAI_MPI_MASTER_NODE``); TensorFlow if ``TF_CONFIG`` is set (``worker`` 0 is the
   primary; an empty ``ps`` is fine); else the PyTorch variables (``MASTER_ADDR``,
   ``MASTER_PORT``, ``WORLD_SIZE``, ``NODE_RANK``, ``RANK``, ``LOCAL_RANK``; none of them at
   all means a single-node job).
4. **A bare TF_CONFIG** — with ``master`` it is AI Platform's, with ``environment: cloud``
   Vertex's, otherwise written by hand or a local launcher (platform ``local``). Without a
   ``chief``/``master``, ``worker`` 0 is the primary.
5. **torchrun** — ``TORCHELASTIC_RUN_ID`` (node rank ``GROUP_RANK``, ``LOCAL_WORLD_SIZE``).
6. **none** — a single process.

Then, whatever the source, these refine the result:

- ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` (set by torchrun and so by
  ``omnidist launch``, or by Azure ML per process) make ``rank``/``world_size``/
  ``local_rank``/``processes_per_node`` process-level; without them they are node-level.
- The ``OMNIDIST_*`` hints compilers add (:mod:`omnidist.runtime.hints`):
  ``OMNIDIST_POOL2_ROLE`` names what Vertex's workerpool2 (AI Platform's ``ps``) holds;
  ``OMNIDIST_ROLE`` must agree with the platform, except that it settles a parameter
  server / reduction server ambiguity; ``OMNIDIST_PROCESSES_PER_NODE`` gives
  ``processes_per_node`` before any launcher ran; ``OMNIDIST_JOB_NAME`` and
  ``OMNIDIST_FRAMEWORK`` fill ``job_name`` and ``framework``.

A variable that is present but malformed raises :class:`RuntimeEnvError` naming it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from omnidist.runtime import hints
from omnidist.runtime.context import ROLES, RuntimeContext
from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.report import trial_id

Env = Mapping[str, str]

VERTEX_POOLS = {
    "workerpool0": "primary",
    "workerpool1": "worker",
    "workerpool2": "",  # parameter servers or reduction servers: see _pool2_role
    "workerpool3": "evaluator",
}
"""Vertex worker pool -> runtime role (pools are positional)."""

TF_TASK_ROLES = {
    "chief": "primary",
    "evaluator": "evaluator",
    "master": "primary",
    "ps": "",  # parameter servers, or legacy AI Platform reduction servers: see _pool2_role
    "worker": "worker",
}
"""TF_CONFIG / AI Platform CLUSTER_SPEC task type -> runtime role."""

AZURE_MPI_DEFAULT_PORT = 6105
"""Port Azure ML's documentation uses for rank 0 when only ``AZ_BATCHAI_MPI_MASTER_NODE`` (no port) is set."""

TORCH_DEFAULT_PORT = 29500
"""torch's default ``MASTER_PORT``, used when a single-node platform names none."""


# --- small readers: each names the variable it reads in its errors -------------------------

def _json_object(env: Env, name: str) -> dict[str, Any]:
    try:
        value = json.loads(env[name])
    except ValueError as exc:
        raise RuntimeEnvError(name, f"not valid JSON ({exc})") from None
    except RecursionError:  # json gives up on very deep nesting this way, not with a ValueError
        raise RuntimeEnvError(name, "not valid JSON (nested too deeply)") from None
    if not isinstance(value, dict):
        raise RuntimeEnvError(name, f"expected a JSON object, got {type(value).__name__}")
    return value


def _int(env: Env, name: str, minimum: int = 0) -> Optional[int]:
    """``int(env[name])``, ``None`` when unset; malformed or below ``minimum`` -> error."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise RuntimeEnvError(name, f"expected a whole number, got {raw!r}") from None
    if value < minimum:
        raise RuntimeEnvError(name, f"must be >= {minimum}, got {value}")
    return value


def _port(text: str, name: str, where: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise RuntimeEnvError(name, f"{where}: {text!r} is not a port number")
    return port


def _host_port(text: Any, name: str, where: str) -> tuple[str, int]:
    if not isinstance(text, str) or ":" not in text:
        raise RuntimeEnvError(name, f"{where}: expected 'host:port', got {text!r}")
    host, _, port = text.rpartition(":")
    if not host:
        raise RuntimeEnvError(name, f"{where}: no host in {text!r}")
    return host, _port(port, name, where)


def _cluster(spec: dict[str, Any], name: str) -> dict[str, list[str]]:
    cluster = spec.get("cluster")
    if not isinstance(cluster, dict):
        raise RuntimeEnvError(name, "has no 'cluster' object")
    for key, hosts in cluster.items():
        if not isinstance(hosts, list):
            raise RuntimeEnvError(name, f"cluster.{key}: expected a list of 'host:port', got {hosts!r}")
        for i, host in enumerate(hosts):
            _host_port(host, name, f"cluster.{key}[{i}]")
    return cluster


def _task(spec: dict[str, Any], name: str, known: Mapping[str, str]) -> tuple[str, int, Optional[str]]:
    """(task type, index, trial) of a CLUSTER_SPEC / TF_CONFIG ``task``."""
    task = spec.get("task")
    if not isinstance(task, dict):
        raise RuntimeEnvError(name, "has no 'task' object")
    kind, index = task.get("type"), task.get("index", 0)
    # JSON can hold a list or an object anywhere; check the type before using the value as a key.
    if not isinstance(kind, str) or kind not in known:
        raise RuntimeEnvError(name, f"task.type: {kind!r} is not one of {', '.join(sorted(known))}")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise RuntimeEnvError(name, f"task.index: expected a whole number >= 0, got {index!r}")
    trial = task.get("trial")
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, (str, int))):
        raise RuntimeEnvError(name, f"task.trial: expected a trial id (a string), got {trial!r}")
    return kind, index, (str(trial) if trial not in (None, "") else None)


def _pool2_role(env: Env) -> str:
    role = env.get(hints.POOL2_ROLE, "parameter_server")
    if role not in ("parameter_server", "reduction_server"):
        raise RuntimeEnvError(hints.POOL2_ROLE, f"expected parameter_server or reduction_server, got {role!r}")
    return role


# --- the context from a cluster listing (Vertex, AI Platform, TF_CONFIG) --------------------

def _from_cluster(platform: str, source: str, cluster: dict[str, list[str]], role: str, index: int,
                  trial: Optional[str]) -> RuntimeContext:
    """Node-level context for a replica of ``role`` #``index`` in a role -> hosts listing."""
    cluster = {r: list(h) for r, h in cluster.items() if h}
    if not cluster.get("primary"):
        raise RuntimeEnvError(source, "the cluster lists no primary (workerpool0 / chief / master / worker 0)")
    # TensorFlow leaves evaluators out of the cluster; every other task must be listed.
    if (role in cluster or role != "evaluator") and index >= len(cluster.get(role, [])):
        raise RuntimeEnvError(source, f"task.index {index} is past the {len(cluster.get(role, []))} hosts "
                              f"the cluster lists for a {role}")
    node_rank = {"primary": 0, "worker": index + 1}.get(role)
    num_nodes = len(cluster["primary"]) + len(cluster.get("worker", []))
    addr, port = _host_port(cluster["primary"][0], source, "the primary's host")
    return RuntimeContext(
        platform=platform, role=role, index=index, node_rank=node_rank, num_nodes=num_nodes,
        rank=node_rank, world_size=num_nodes, local_rank=0 if node_rank is not None else None,
        master_addr=addr, master_port=port, trial=trial, cluster=cluster, source=source,
    )


def _from_tf_style(spec: dict[str, Any], name: str, platform: str, env: Env) -> RuntimeContext:
    """AI Platform CLUSTER_SPEC and every TF_CONFIG: chief/master, worker, ps, evaluator."""
    raw = _cluster(spec, name)
    unknown = sorted(set(raw) - set(TF_TASK_ROLES))
    if unknown:
        expected = ", ".join(sorted(TF_TASK_ROLES))
        raise RuntimeEnvError(name, f"cluster.{unknown[0]}: unknown task type; expected {expected}")
    kind, index, trial = _task(spec, name, TF_TASK_ROLES)
    roles = {k: (r or _pool2_role(env)) for k, r in TF_TASK_ROLES.items()}
    cluster: dict[str, list[str]] = {}
    for key, hosts in raw.items():
        cluster.setdefault(roles[key], []).extend(hosts)
    role = roles[kind]
    if "chief" not in raw and "master" not in raw:
        # Multi-worker TensorFlow (Azure ML, hand-written): worker 0 acts as the chief.
        workers = cluster.pop("worker", [])
        cluster["primary"], cluster["worker"] = workers[:1], workers[1:]
        if kind == "worker":
            role, index = ("primary", 0) if index == 0 else ("worker", index - 1)
    return _from_cluster(platform, name, cluster, role, index, trial)


# --- one parser per source -------------------------------------------------------------------

def parse_vertex(env: Env) -> RuntimeContext:
    """Vertex AI: ``CLUSTER_SPEC`` with ``workerpool0``-``workerpool3``."""
    spec = _json_object(env, "CLUSTER_SPEC")
    raw = _cluster(spec, "CLUSTER_SPEC")
    unknown = sorted(set(raw) - set(VERTEX_POOLS))
    if unknown:
        raise RuntimeEnvError("CLUSTER_SPEC", f"cluster.{unknown[0]}: Vertex has only workerpool0-workerpool3")
    roles = {pool: (role or _pool2_role(env)) for pool, role in VERTEX_POOLS.items()}
    pool, index, trial = _task(spec, "CLUSTER_SPEC", VERTEX_POOLS)
    cluster = {roles[p]: hosts for p, hosts in raw.items()}
    return _from_cluster("vertex", "CLUSTER_SPEC", cluster, roles[pool], index, trial)


def parse_ai_platform(env: Env) -> RuntimeContext:
    """Legacy AI Platform Training: ``CLUSTER_SPEC`` with ``master`` (or ``chief``), ``worker``, ``ps``."""
    return _from_tf_style(_json_object(env, "CLUSTER_SPEC"), "CLUSTER_SPEC", "ai_platform", env)


def parse_tf_config(env: Env) -> RuntimeContext:
    """A ``TF_CONFIG`` on its own."""
    spec = _json_object(env, "TF_CONFIG")
    cluster = spec.get("cluster")
    environment = spec.get("environment")
    if environment is not None and not isinstance(environment, str):
        raise RuntimeEnvError("TF_CONFIG", f"environment: expected a string such as 'cloud', got {environment!r}")
    if isinstance(cluster, dict) and "master" in cluster:
        platform = "ai_platform"
    elif environment == "cloud":
        platform = "vertex"
    else:
        platform = "local"
    return _from_tf_style(spec, "TF_CONFIG", platform, env)


def parse_azure_ml(env: Env) -> RuntimeContext:
    """Azure ML: MPI, TensorFlow or PyTorch distribution, in that order."""
    if any(k.startswith("OMPI_COMM_WORLD_") for k in env):
        return _azure_mpi(env)
    if "TF_CONFIG" in env:
        return _from_tf_style(_json_object(env, "TF_CONFIG"), "TF_CONFIG", "azure_ml", env)
    return _azure_pytorch(env)


def _azure_hosts(env: Env, port: Optional[int]) -> list[str]:
    """``AZ_BATCH_HOST_LIST`` (comma-separated hosts, optionally ``host:port``) as ``host:port``."""
    raw = env.get("AZ_BATCH_HOST_LIST", "").strip()
    hosts = []
    for i, item in enumerate(h.strip() for h in raw.split(",") if h.strip()):
        if ":" in item:
            hosts.append("%s:%d" % _host_port(item, "AZ_BATCH_HOST_LIST", f"entry {i}"))
        elif port is not None:
            hosts.append(f"{item}:{port}")
    return hosts


def _node_cluster(hosts: list[str]) -> dict[str, list[str]]:
    return {role: h for role, h in (("primary", hosts[:1]), ("worker", hosts[1:])) if h}


def _azure_mpi(env: Env) -> RuntimeContext:
    rank = _int(env, "OMPI_COMM_WORLD_RANK")
    size = _int(env, "OMPI_COMM_WORLD_SIZE", minimum=1)
    local_rank = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK") or 0
    local_size = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", minimum=1) or 1
    for name, value in (("OMPI_COMM_WORLD_RANK", rank), ("OMPI_COMM_WORLD_SIZE", size)):
        if value is None:
            raise RuntimeEnvError(name, "not set, though other OMPI_COMM_WORLD_* variables are (mpirun sets all)")
    if rank >= size:
        raise RuntimeEnvError("OMPI_COMM_WORLD_RANK", f"{rank} is not below OMPI_COMM_WORLD_SIZE={size}")
    node_rank, num_nodes = rank // local_size, -(-size // local_size)
    if env.get("AZ_BATCH_MASTER_NODE"):
        addr, port = _host_port(env["AZ_BATCH_MASTER_NODE"], "AZ_BATCH_MASTER_NODE", "value")
    elif env.get("AZ_BATCHAI_MPI_MASTER_NODE"):
        addr = env["AZ_BATCHAI_MPI_MASTER_NODE"]
        port = _int(env, "MASTER_PORT", minimum=1) or AZURE_MPI_DEFAULT_PORT
    elif num_nodes == 1:
        addr, port = "127.0.0.1", _int(env, "MASTER_PORT", minimum=1) or AZURE_MPI_DEFAULT_PORT
    else:
        raise RuntimeEnvError("AZ_BATCH_MASTER_NODE", f"not set (nor AZ_BATCHAI_MPI_MASTER_NODE) in a "
                              f"{num_nodes}-node MPI job, so rank 0's address is unknown")
    hosts = _azure_hosts(env, port) or [f"{addr}:{port}"]
    return RuntimeContext(
        platform="azure_ml", role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=num_nodes, rank=rank, world_size=size, local_rank=local_rank,
        master_addr=addr, master_port=port, cluster=_node_cluster(hosts), processes_per_node=local_size,
        source="OMPI_COMM_WORLD_RANK",
    )


def _azure_pytorch(env: Env) -> RuntimeContext:
    world_size = _int(env, "WORLD_SIZE", minimum=1) or 1
    port = _int(env, "MASTER_PORT", minimum=1)
    addr = env.get("MASTER_ADDR") or None
    if addr is None and world_size > 1:
        raise RuntimeEnvError("MASTER_ADDR", f"not set, though WORLD_SIZE is {world_size}")
    if port is None and world_size > 1:
        raise RuntimeEnvError("MASTER_PORT", f"not set, though WORLD_SIZE is {world_size}")
    hosts = _azure_hosts(env, port)
    per_node = _int(env, "LOCAL_WORLD_SIZE", minimum=1) or _int(env, hints.PROCESSES_PER_NODE, minimum=1) or 1
    num_nodes = _int(env, "AZUREML_NODE_COUNT", minimum=1) or len(hosts) or max(world_size // per_node, 1)
    rank = _int(env, "RANK")
    node_rank = _int(env, "NODE_RANK")
    if node_rank is None:
        node_rank = _int(env, "AZUREML_CR_NODE_RANK")
    if node_rank is None:
        node_rank = (rank or 0) // per_node
    if node_rank >= num_nodes:
        raise RuntimeEnvError("NODE_RANK", f"{node_rank} is not below the job's {num_nodes} nodes")
    return RuntimeContext(
        platform="azure_ml", role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=num_nodes, rank=node_rank if rank is None else rank,
        world_size=world_size, local_rank=_int(env, "LOCAL_RANK") or 0,
        master_addr=addr or "127.0.0.1", master_port=port or TORCH_DEFAULT_PORT,
        cluster=_node_cluster(hosts) or ({"primary": [f"{addr}:{port}"]} if addr and port else {}),
        source="MASTER_ADDR" if addr else "AZUREML_RUN_ID",
    )


def parse_torchrun(env: Env) -> RuntimeContext:
    """torchrun / ``torch.distributed.run`` (``TORCHELASTIC_RUN_ID``) outside any cloud."""
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        if not env.get(name):
            raise RuntimeEnvError(name, "not set, though TORCHELASTIC_RUN_ID is (torchrun sets both)")
    world_size = _int(env, "WORLD_SIZE", minimum=1)
    per_node = _int(env, "LOCAL_WORLD_SIZE", minimum=1) or 1
    node_rank = _int(env, "GROUP_RANK")
    rank = _int(env, "RANK")
    if node_rank is None:
        node_rank = rank // per_node
    addr, port = env["MASTER_ADDR"], _int(env, "MASTER_PORT", minimum=1)
    return RuntimeContext(
        platform="torchrun", role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=max(world_size // per_node, 1), rank=rank, world_size=world_size,
        local_rank=_int(env, "LOCAL_RANK") or 0, master_addr=addr, master_port=port,
        cluster={"primary": [f"{addr}:{port}"]}, processes_per_node=per_node, source="TORCHELASTIC_RUN_ID",
    )


def parse_none(env: Env) -> RuntimeContext:
    """No platform: a single process (``MASTER_ADDR``/``MASTER_PORT`` honoured when set)."""
    return RuntimeContext(master_addr=env.get("MASTER_ADDR") or "127.0.0.1",
                          master_port=_int(env, "MASTER_PORT", minimum=1) or TORCH_DEFAULT_PORT)


def _is_vertex(env: Env) -> bool:
    return "CLUSTER_SPEC" in env and any(k.startswith("workerpool") for k in _cluster_keys(env))


def _is_ai_platform(env: Env) -> bool:
    if "CLUSTER_SPEC" not in env:
        return False
    if {"master", "chief"} & _cluster_keys(env):
        return True
    raise RuntimeEnvError("CLUSTER_SPEC", "its cluster has neither workerpool0 (Vertex AI) nor master/chief "
                          "(AI Platform Training)")


def _cluster_keys(env: Env) -> set[str]:
    return set(_cluster(_json_object(env, "CLUSTER_SPEC"), "CLUSTER_SPEC"))


AZURE_CLIENT_VARIABLES = frozenset({"AZUREML_CURRENT_CLOUD"})
"""``AZUREML_*`` variables of the client side (the azure-ai-ml SDK sets ``AZUREML_CURRENT_CLOUD``
when it talks to a sovereign cloud or custom endpoint): they do not mean "inside a job"."""


def _is_azure_ml(env: Env) -> bool:
    return any(k.startswith("AZUREML_") and k not in AZURE_CLIENT_VARIABLES for k in env)


SOURCES: tuple[tuple[str, Callable[[Env], bool], Callable[[Env], RuntimeContext]], ...] = (
    ("vertex", _is_vertex, parse_vertex),
    ("ai_platform", _is_ai_platform, parse_ai_platform),
    ("azure_ml", _is_azure_ml, parse_azure_ml),
    ("tf_config", lambda env: "TF_CONFIG" in env, parse_tf_config),
    ("torchrun", lambda env: "TORCHELASTIC_RUN_ID" in env, parse_torchrun),
    ("none", lambda env: True, parse_none),
)
"""The detection order: (name, is it present?, parser); the first present source wins."""


# --- the job's data (SPEC §7) -------------------------------------------------------------------

AZURE_OUTPUTS_DIR = "outputs"
"""Azure ML uploads what a job writes to ``./outputs`` with the job: its model folder by default."""


def _job_dir(argv: Sequence[str]) -> Optional[str]:
    """``--job-dir VALUE`` / ``--job-dir=VALUE`` on the command line (AI Platform passes ``jobDir``)."""
    for i, arg in enumerate(argv):
        if arg.startswith("--job-dir=") or arg.startswith("--job_dir="):
            return arg.split("=", 1)[1]
        if arg in ("--job-dir", "--job_dir") and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _fuse(uri: str) -> str:
    return "/gcs/" + uri[len("gs://"):] if uri.startswith("gs://") else uri


def _with_data(ctx: RuntimeContext, env: Env, argv: Sequence[str]) -> RuntimeContext:
    """``inputs``, ``outputs`` and ``model_dir`` from the hints and each platform's own sources."""
    inputs = {k[len(hints.INPUT_PREFIX):]: v for k, v in env.items() if k.startswith(hints.INPUT_PREFIX)}
    outputs = {k[len(hints.OUTPUT_PREFIX):]: v for k, v in env.items() if k.startswith(hints.OUTPUT_PREFIX)}
    model_dir = (_fuse(env["AIP_MODEL_DIR"]) if env.get("AIP_MODEL_DIR") else None) or _job_dir(argv) \
        or env.get(hints.MODEL_DIR) or outputs.get("model")
    if model_dir is None and ctx.platform == "azure_ml":
        model_dir = os.path.abspath(AZURE_OUTPUTS_DIR)
    return dataclasses.replace(ctx, inputs=dict(sorted(inputs.items())), outputs=dict(sorted(outputs.items())),
                               model_dir=model_dir)


# --- refinement ------------------------------------------------------------------------------

def _refine(ctx: RuntimeContext, env: Env) -> RuntimeContext:
    """Apply process-level launcher variables and the OMNIDIST_* hints (see the module doc)."""
    changes: dict[str, Any] = {
        "job_name": env.get(hints.JOB_NAME) or None,
        "framework": env.get(hints.FRAMEWORK) or None,
    }
    role = env.get(hints.ROLE)
    if role and ctx.platform != "none":
        if role not in ROLES:
            raise RuntimeEnvError(hints.ROLE, f"expected one of {', '.join(ROLES)}, got {role!r}")
        ambiguous = {"parameter_server", "reduction_server"}
        if role != ctx.role and not (role in ambiguous and ctx.role in ambiguous):
            raise RuntimeEnvError(hints.ROLE, f"says {role}, but {ctx.source} says this replica is a {ctx.role}")
        changes["role"] = role
    hinted_ppn = _int(env, hints.PROCESSES_PER_NODE, minimum=1)
    launched_ppn = _int(env, "LOCAL_WORLD_SIZE", minimum=1)
    if launched_ppn:  # a launcher is running: what it started is the truth
        changes["processes_per_node"] = launched_ppn
    elif hinted_ppn and ctx.processes_per_node == 1:  # before launch: what the job asked for
        changes["processes_per_node"] = hinted_ppn
    if ctx.trains:
        for field, name in (("rank", "RANK"), ("world_size", "WORLD_SIZE"), ("local_rank", "LOCAL_RANK")):
            value = _int(env, name, minimum=1 if name == "WORLD_SIZE" else 0)
            if value is not None:
                changes[field] = value
    # Tuning: the trial id from wherever this platform puts it (see omnidist.runtime.report).
    changes["trial"] = trial_id(env, ctx.platform, ctx.trial)
    return dataclasses.replace(ctx, **changes)


def context(environ: Optional[Env] = None, argv: Optional[Sequence[str]] = None) -> RuntimeContext:
    """The normalized runtime context of this process (SPEC §5, with §7's data).

    Args:
        environ: the variables to read (default: ``os.environ``).
        argv: the command line, for AI Platform's ``--job-dir`` (default: ``sys.argv``).

    Raises:
        RuntimeEnvError: a platform variable is present but malformed; it is named.
    """
    env = os.environ if environ is None else environ
    for _, present, parse in SOURCES:
        if present(env):
            return _with_data(_refine(parse(env), env), env, sys.argv if argv is None else argv)
    raise AssertionError("unreachable: the last source is always present")  # pragma: no cover
