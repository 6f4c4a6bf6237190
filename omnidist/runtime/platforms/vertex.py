"""Vertex AI: ``CLUSTER_SPEC`` with positional worker pools, and ``TF_CONFIG`` beside it.

Vertex numbers a CustomJob's ``workerPoolSpecs`` and names each replica's pool in
``CLUSTER_SPEC``: ``workerpool0`` the primary, ``workerpool1`` the workers, ``workerpool2``
parameter servers *or* reduction servers (the platform does not say which:
``OMNIDIST_POOL2_ROLE`` does, else parameter servers), ``workerpool3`` evaluators. With more
than one replica it also sets ``TF_CONFIG`` (``chief``, ``worker``, ``ps``; evaluators and
reduction servers are not in its cluster). Both carry ``environment: cloud``, the compiled
job spec as ``job``, and in a tuning job the trial as ``task.trial``. The Vertex compiler
takes :data:`POOL_INDEX` from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, cluster, cluster_keys, from_cluster, json_object, pool2_role, task
from omnidist.runtime.platforms import Bound, Decided, JobFacts, Slot, hosts, tf_config
from omnidist.runtime.trials import HYPERTUNE, hypertune_trial_env
from omnidist.runtime.view import RuntimeContext

NAME = "vertex"
ORDER = 10

VARIABLE = "CLUSTER_SPEC"
JOB_ID = "CLOUD_ML_JOB_ID"
"""The job's id, which the service gives every replica (the SDK's ``training_utils.environment_variables``)."""

VARIABLES = frozenset({VARIABLE, tf_config.VARIABLE, JOB_ID})
PREFIXES = ()

BOUND = Bound(
    mounts={"/gcs/": "gs://"},
    variables=("CLUSTER_SPEC", "AIP_*", "CLOUD_ML_*"),
    equivalents={"AIP_MODEL_DIR": "${{outputs.model}}"},
)
"""Only inside Vertex's containers: Cloud Storage FUSE under ``/gcs/``, ``CLUSTER_SPEC``, the
``AIP_*`` folders of ``baseOutputDirectory`` (the model folder is the portable ``outputs.model``)
and the tuning service's ``CLOUD_ML_*``."""

MODEL_DIR = "AIP_MODEL_DIR"
"""Where Vertex tells the job to save its model (a ``gs://`` URI, when the job has a base output directory)."""

FUSE_ROOT = "/gcs/"
"""Where Cloud Storage FUSE mounts ``gs://`` buckets inside Vertex containers."""

ENVIRONMENT = "cloud"
"""The ``environment`` Vertex writes into ``CLUSTER_SPEC`` and ``TF_CONFIG``."""

POOL_PREFIX = "workerpool"

POOL_INDEX: Mapping[str, int] = {
    "evaluator": 3,
    "parameter_server": 2,
    "primary": 0,
    "reduction_server": 2,
    "worker": 1,
}
"""Runtime role -> position in ``workerPoolSpecs`` (pool 2 holds parameter servers or reducers, never both)."""

POOL_ROLES: Mapping[str, tuple[str, ...]] = {
    f"{POOL_PREFIX}{i}": tuple(sorted(r for r, p in POOL_INDEX.items() if p == i))
    for i in sorted(set(POOL_INDEX.values()))
}
"""``CLUSTER_SPEC`` pool name -> the roles it can hold (derived; several: the hint settles it)."""

METRICS = HYPERTUNE
"""Vertex's tuning service reads trials' metrics from cloudml-hypertune's file."""

HINTS_PER_ROLE: Optional[bool] = True
"""The compiler adds the hints to each pool's own ``env``."""

ENV_FIELD = True


# --- reading -----------------------------------------------------------------------------------

def detect(env: Env) -> bool:
    """``CLUSTER_SPEC`` whose cluster has ``workerpool*`` keys."""
    return VARIABLE in env and any(k.startswith(POOL_PREFIX) for k in cluster_keys(env, VARIABLE))


def parse(env: Env) -> RuntimeContext:
    """Vertex AI: ``CLUSTER_SPEC`` with ``workerpool0``-``workerpool3``."""
    spec = json_object(env, VARIABLE)
    raw = cluster(spec, VARIABLE)
    unknown = sorted(set(raw) - set(POOL_ROLES))
    if unknown:
        raise RuntimeEnvError(VARIABLE, f"cluster.{unknown[0]}: Vertex has only "
                              f"{min(POOL_ROLES)}-{max(POOL_ROLES)}")
    roles = {pool: (held[0] if len(held) == 1 else pool2_role(env)) for pool, held in POOL_ROLES.items()}
    pool, index, trial = task(spec, VARIABLE, POOL_ROLES)
    return from_cluster(NAME, VARIABLE, {roles[p]: h for p, h in raw.items()}, roles[pool], index, trial)


def model_dir(env: Env, argv: Sequence[str]) -> Optional[str]:
    """``AIP_MODEL_DIR`` as its Cloud Storage FUSE path."""
    uri = env.get(MODEL_DIR)
    if not uri:
        return None
    return FUSE_ROOT + uri[len("gs://"):] if uri.startswith("gs://") else uri


# --- emulating ---------------------------------------------------------------------------------

def follow(request: Mapping[str, Any], job: JobFacts) -> Decided:
    """The reducers compile put in pool 2, and the CustomJob spec (written as ``job``)."""
    spec = request.get("jobSpec", {})
    pools = spec.get("workerPoolSpecs", [])
    shared = POOL_INDEX["reduction_server"]
    reducers = 0
    if "reduction_server" in job.replicas and len(pools) > shared and pools[shared]:
        reducers = int(pools[shared].get("replicaCount", 0))
    return Decided(reducers=reducers, details={"job": spec})


def assume(job: JobFacts) -> Decided:
    """Without the backend: the reducers the job names."""
    return Decided(reducers=job.replicas.get("reduction_server", 0))


def emulate(job: JobFacts, slots: Sequence[Slot], decided: Decided) -> list[dict[str, str]]:
    """``CLUSTER_SPEC`` (and, with more than one replica running, ``TF_CONFIG``) for each running slot."""
    pools = {pool: hosts(slots, *roles) for pool, roles in POOL_ROLES.items()}
    pools = {k: v for k, v in pools.items() if v}
    tf_cluster = {tf_config.TASK_TYPES[r]: hosts(slots, r) for r in ("primary", "worker", "parameter_server")}
    tf_cluster = {k: v for k, v in tf_cluster.items() if v}
    spec = decided.details.get("job", {})
    running = [s for s in slots if s.runs]
    result = []
    for slot in running:
        pool = {"type": f"{POOL_PREFIX}{POOL_INDEX[slot.role]}", "index": slot.index}
        env = {VARIABLE: json.dumps({"cluster": pools, "environment": ENVIRONMENT, "task": pool, "job": spec}),
               JOB_ID: job.name}
        if len(running) > 1:
            tf_task = {"type": tf_config.TASK_TYPES[slot.role], "index": slot.index}
            env[tf_config.VARIABLE] = json.dumps({"cluster": tf_cluster, "environment": ENVIRONMENT,
                                                  "task": tf_task, "job": spec})
        result.append(env)
    return result


def emulate_trial(env: Mapping[str, str], trial: str, params: Mapping[str, Any]) -> dict[str, str]:
    """A trial's process: ``CLOUD_ML_TRIAL_ID`` and ``task.trial`` in ``CLUSTER_SPEC`` / ``TF_CONFIG``."""
    return hypertune_trial_env(env, trial)


def claims_tf_config(spec: Mapping[str, Any]) -> bool:
    """A bare ``TF_CONFIG`` is Vertex's when it says ``environment: cloud`` and names its chief
    ``chief`` (Vertex never writes the legacy ``master``)."""
    listing = spec.get("cluster")
    return spec.get("environment") == ENVIRONMENT and not (
        isinstance(listing, dict) and tf_config.LEGACY_CHIEF in listing
    )


PREEMPTION_GRACE_S = 30
"""Seconds between the SIGTERM a preempted replica gets and its machine's end:
Compute Engine Spot VMs get about 30 s (ACPI soft off, SIGTERM to the container)
(``omnidist run --preempt`` sends the same)."""
