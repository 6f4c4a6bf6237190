"""Platform detection: the environment of a training process -> :class:`RuntimeContext`.

Standard library only. This module is the generic driver: each platform's own variables —
its tables, how to recognise it and how to read it — live in its module under
:mod:`omnidist.runtime.platforms`, which this module asks in their detection order (each
module's ``ORDER``); the first platform present wins. The order, with the modules' orders:

1. **Vertex AI** (``vertex``, 10) — ``CLUSTER_SPEC`` whose ``cluster`` has ``workerpool*`` keys.
   Pools are positional: 0 primary, 1 workers, 2 parameter servers *or* reduction servers (the
   platform does not say which: ``OMNIDIST_POOL2_ROLE`` does, else parameter servers),
   3 evaluators.
2. **AI Platform Training** (``ai_platform``, 20) — ``CLUSTER_SPEC`` whose ``cluster`` has
   ``master`` or ``chief`` (plus ``worker``, ``ps``, ``evaluator``).
3. **Azure ML** (``azure_ml``, 30) — any ``AZUREML_*`` variable but the SDK's client-side
   ``AZUREML_CURRENT_CLOUD`` (every Azure ML process has ``AZUREML_RUN_ID``;
   it is what tells Azure's PyTorch variables from a bare torchrun). Then by distribution:
   MPI if any ``OMPI_COMM_WORLD_*`` is set (node rank = ``OMPI_COMM_WORLD_RANK //
   OMPI_COMM_WORLD_LOCAL_SIZE``, master from ``AZ_BATCH_MASTER_NODE`` ``addr:port`` or
   ``AZ_BATCHAI_MPI_MASTER_NODE``); TensorFlow if ``TF_CONFIG`` is set (``worker`` 0 is the
   primary; an empty ``ps`` is fine); else the PyTorch variables (``MASTER_ADDR``,
   ``MASTER_PORT``, ``WORLD_SIZE``, ``NODE_RANK``, ``RANK``, ``LOCAL_RANK``; none of them at
   all means a single-node job).
4. **Kubernetes** (``kubernetes``, 35) — a pod (``KUBERNETES_SERVICE_HOST``) with a training
   operator's variables (``PET_NNODES``, ``TF_CONFIG``, or torch's without torchrun's).
5. **A bare TF_CONFIG** (``tf_config``, 40) — with ``master`` it is AI Platform's, with
   ``environment: cloud`` Vertex's, otherwise written by hand or a local launcher (platform
   ``local``). Without a ``chief``/``master``, ``worker`` 0 is the primary.
6. **An MPI launcher** (``mpi``, 45) — ``OMPI_COMM_WORLD_*`` or ``PMI_RANK``/``PMI_SIZE`` (node
   rank = rank // local size; a Kubeflow MPIJob's ranks).
7. **torchrun** (``torchrun``, 50) — ``TORCHELASTIC_RUN_ID`` (node rank ``GROUP_RANK``,
   ``LOCAL_WORLD_SIZE``).
8. **none** (``none``, last) — a single process.

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

A variable that is present but malformed raises :class:`RuntimeEnvError` naming it. The
readers below are shared by the platform modules: each names the variable it reads in its errors.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.runtime import hints
from omnidist.runtime.context import ROLES, RuntimeContext
from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.report import trial_id

Env = Mapping[str, str]

AMBIGUOUS_POOL_ROLES = ("parameter_server", "reduction_server")
"""Roles that share one slot on the Google platforms (Vertex's workerpool2, AI Platform's ``ps``):
the platform does not say which it holds; ``OMNIDIST_POOL2_ROLE`` does."""


# --- small readers: each names the variable it reads in its errors -------------------------

def json_object(env: Env, name: str) -> dict[str, Any]:
    """``env[name]`` read as a JSON object."""
    try:
        value = json.loads(env[name])
    except ValueError as exc:
        raise RuntimeEnvError(name, f"not valid JSON ({exc})") from None
    except RecursionError:  # json gives up on very deep nesting this way, not with a ValueError
        raise RuntimeEnvError(name, "not valid JSON (nested too deeply)") from None
    if not isinstance(value, dict):
        raise RuntimeEnvError(name, f"expected a JSON object, got {type(value).__name__}")
    return value


def integer(env: Env, name: str, minimum: int = 0) -> Optional[int]:
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


def port(text: str, name: str, where: str) -> int:
    """``text`` as a TCP port number (1-65535)."""
    try:
        number = int(text)
    except ValueError:
        number = -1
    if not 0 < number < 65536:
        raise RuntimeEnvError(name, f"{where}: {text!r} is not a port number")
    return number


def host_port(text: Any, name: str, where: str) -> tuple[str, int]:
    """``host:port`` -> ``(host, port)``."""
    if not isinstance(text, str) or ":" not in text:
        raise RuntimeEnvError(name, f"{where}: expected 'host:port', got {text!r}")
    host, _, number = text.rpartition(":")
    if not host:
        raise RuntimeEnvError(name, f"{where}: no host in {text!r}")
    return host, port(number, name, where)


def cluster(spec: dict[str, Any], name: str) -> dict[str, list[str]]:
    """The ``cluster`` object of a ``CLUSTER_SPEC`` / ``TF_CONFIG``: key -> list of ``host:port``."""
    listing = spec.get("cluster")
    if not isinstance(listing, dict):
        raise RuntimeEnvError(name, "has no 'cluster' object")
    for key, hosts in listing.items():
        if not isinstance(hosts, list):
            raise RuntimeEnvError(name, f"cluster.{key}: expected a list of 'host:port', got {hosts!r}")
        for i, host in enumerate(hosts):
            host_port(host, name, f"cluster.{key}[{i}]")
    return listing


def cluster_keys(env: Env, name: str) -> set[str]:
    """The keys of the ``cluster`` in ``env[name]``."""
    return set(cluster(json_object(env, name), name))


def task(spec: dict[str, Any], name: str, known: Mapping[str, Any]) -> tuple[str, int, Optional[str]]:
    """(task type, index, trial) of a CLUSTER_SPEC / TF_CONFIG ``task``; the type one of ``known``."""
    listing = spec.get("task")
    if not isinstance(listing, dict):
        raise RuntimeEnvError(name, "has no 'task' object")
    kind, index = listing.get("type"), listing.get("index", 0)
    # JSON can hold a list or an object anywhere; check the type before using the value as a key.
    if not isinstance(kind, str) or kind not in known:
        raise RuntimeEnvError(name, f"task.type: {kind!r} is not one of {', '.join(sorted(known))}")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise RuntimeEnvError(name, f"task.index: expected a whole number >= 0, got {index!r}")
    trial = listing.get("trial")
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, (str, int))):
        raise RuntimeEnvError(name, f"task.trial: expected a trial id (a string), got {trial!r}")
    return kind, index, (str(trial) if trial not in (None, "") else None)


def pool2_role(env: Env) -> str:
    """What the Google platforms' shared slot holds (:data:`AMBIGUOUS_POOL_ROLES`), from the hint."""
    role = env.get(hints.POOL2_ROLE, AMBIGUOUS_POOL_ROLES[0])
    if role not in AMBIGUOUS_POOL_ROLES:
        raise RuntimeEnvError(hints.POOL2_ROLE, f"expected {' or '.join(AMBIGUOUS_POOL_ROLES)}, got {role!r}")
    return role


def from_cluster(platform: str, source: str, listing: dict[str, list[str]], role: str, index: int,
                 trial: Optional[str]) -> RuntimeContext:
    """Node-level context for a replica of ``role`` #``index`` in a role -> hosts listing."""
    listing = {r: list(h) for r, h in listing.items() if h}
    if not listing.get("primary"):
        raise RuntimeEnvError(source, "the cluster lists no primary (workerpool0 / chief / master / worker 0)")
    # TensorFlow leaves evaluators out of the cluster; every other task must be listed.
    if (role in listing or role != "evaluator") and index >= len(listing.get(role, [])):
        raise RuntimeEnvError(source, f"task.index {index} is past the {len(listing.get(role, []))} hosts "
                              f"the cluster lists for a {role}")
    node_rank = {"primary": 0, "worker": index + 1}.get(role)
    num_nodes = len(listing["primary"]) + len(listing.get("worker", []))
    addr, number = host_port(listing["primary"][0], source, "the primary's host")
    return RuntimeContext(
        platform=platform, role=role, index=index, node_rank=node_rank, num_nodes=num_nodes,
        rank=node_rank, world_size=num_nodes, local_rank=0 if node_rank is not None else None,
        master_addr=addr, master_port=number, trial=trial, cluster=listing, source=source,
    )


def node_cluster(hosts: list[str]) -> dict[str, list[str]]:
    """A listing of training nodes only: the first is the primary, the rest workers."""
    return {role: h for role, h in (("primary", hosts[:1]), ("worker", hosts[1:])) if h}


# --- the job's data (SPEC §7) -------------------------------------------------------------------

def _with_data(ctx: RuntimeContext, env: Env, argv: Sequence[str]) -> RuntimeContext:
    """``inputs``, ``outputs`` and ``model_dir`` from the hints and each platform's own sources.

    ``model_dir``: the first folder a platform's own variable or argument names (its module's
    ``model_dir(env, argv)``, in detection order: a platform sets it only on its own machines),
    else ``OMNIDIST_MODEL_DIR``, else the output named ``model``, else the detected platform's
    ``default_model_dir()``.
    """
    from omnidist.runtime import platforms

    inputs = {k[len(hints.INPUT_PREFIX):]: v for k, v in env.items() if k.startswith(hints.INPUT_PREFIX)}
    outputs = {k[len(hints.OUTPUT_PREFIX):]: v for k, v in env.items() if k.startswith(hints.OUTPUT_PREFIX)}
    own = (m.model_dir(env, argv) for m in platforms.modules() if hasattr(m, "model_dir"))
    model_dir = next((d for d in own if d), None) or env.get(hints.MODEL_DIR) or outputs.get("model")
    detected = platforms.named(ctx.platform)
    if model_dir is None and hasattr(detected, "default_model_dir"):
        model_dir = detected.default_model_dir()
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
        ambiguous = set(AMBIGUOUS_POOL_ROLES)
        if role != ctx.role and not (role in ambiguous and ctx.role in ambiguous):
            raise RuntimeEnvError(hints.ROLE, f"says {role}, but {ctx.source} says this replica is a {ctx.role}")
        changes["role"] = role
    hinted_ppn = integer(env, hints.PROCESSES_PER_NODE, minimum=1)
    launched_ppn = integer(env, "LOCAL_WORLD_SIZE", minimum=1)
    if launched_ppn:  # a launcher is running: what it started is the truth
        changes["processes_per_node"] = launched_ppn
    elif hinted_ppn and ctx.processes_per_node == 1:  # before launch: what the job asked for
        changes["processes_per_node"] = hinted_ppn
    if ctx.trains:
        for field, name in (("rank", "RANK"), ("world_size", "WORLD_SIZE"), ("local_rank", "LOCAL_RANK")):
            value = integer(env, name, minimum=1 if name == "WORLD_SIZE" else 0)
            if value is not None:
                changes[field] = value
    # Tuning: the trial id from wherever this platform puts it (see omnidist.runtime.report).
    changes["trial"] = trial_id(env, ctx.platform, ctx.trial)
    return dataclasses.replace(ctx, **changes)


def parse(env: Env) -> RuntimeContext:
    """The node-level context of the first platform present (no refinement, no data)."""
    from omnidist.runtime import platforms

    for module in platforms.modules():
        if module.detect(env):
            return module.parse(env)
    raise AssertionError("unreachable: the last platform (none) is always present")  # pragma: no cover


def context(environ: Optional[Env] = None, argv: Optional[Sequence[str]] = None) -> RuntimeContext:
    """The normalized runtime context of this process (SPEC §5, with §7's data).

    Args:
        environ: the variables to read (default: ``os.environ``).
        argv: the command line, for AI Platform's ``--job-dir`` (default: ``sys.argv``).

    Raises:
        RuntimeEnvError: a platform variable is present but malformed; it is named.
    """
    env = os.environ if environ is None else environ
    return _with_data(_refine(parse(env), env), env, sys.argv if argv is None else argv)
