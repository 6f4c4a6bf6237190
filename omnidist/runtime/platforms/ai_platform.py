"""Legacy AI Platform Training: ``CLUSTER_SPEC`` and ``TF_CONFIG`` named by task type.

Each ``trainingInput`` slot (``masterConfig``, ``workerConfig``, ``parameterServerConfig``,
``evaluatorConfig``) becomes a task type in ``CLUSTER_SPEC`` and ``TF_CONFIG`` (both the same
object): ``master`` — ``chief`` when the request sets ``useChiefInTfConfig`` —, ``worker``,
``ps``, ``evaluator``. Reduction servers take the parameter-server slot, so they are ``ps``
(``OMNIDIST_POOL2_ROLE`` cannot say so here: the platform has no environment field). The
service passes ``jobDir`` to the program as ``--job-dir``. The AI Platform compiler takes
:data:`FIELD_PREFIXES` from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, cluster_keys, json_object
from omnidist.runtime.platforms import Bound, Decided, JobFacts, Slot, hosts, tf_config
from omnidist.runtime.trials import HYPERTUNE, hypertune_trial_env
from omnidist.runtime.view import RuntimeContext

NAME = "ai_platform"
ORDER = 20

VARIABLE = "CLUSTER_SPEC"
JOB_ID = "CLOUD_ML_JOB_ID"
"""The job's id, which the service gives every replica (the SDK's ``training_utils.environment_variables``)."""

VARIABLES = frozenset({VARIABLE, tf_config.VARIABLE, JOB_ID})
PREFIXES = ()

BOUND = Bound(variables=("CLUSTER_SPEC", "CLOUD_ML_*"))
"""Only inside legacy AI Platform's containers: ``CLUSTER_SPEC`` (named by task type) and the
``CLOUD_ML_*`` variables (the job's id, the tuning service's metric file and trial)."""

JOB_DIR_FLAGS = ("--job-dir", "--job_dir")
"""The argument that carries ``jobDir`` (the service writes ``--job-dir``; ``--job_dir`` is also read)."""

ENVIRONMENT = "cloud"
"""The ``environment`` AI Platform writes into ``CLUSTER_SPEC`` and ``TF_CONFIG``."""

FIELD_PREFIXES: Mapping[str, str] = {
    "evaluator": "evaluator",
    "parameter_server": "parameterServer",
    "primary": "master",
    "reduction_server": "parameterServer",
    "worker": "worker",
}
"""Runtime role -> the prefix of its ``trainingInput`` fields (``<prefix>Type/Count/Config``);
reducers take the parameter-server slot."""

TASK_TYPES: Mapping[str, str] = {**tf_config.TASK_TYPES, "primary": tf_config.LEGACY_CHIEF,
                                 "reduction_server": tf_config.TASK_TYPES["parameter_server"]}
"""Runtime role -> the task type of its ``trainingInput`` slot in ``CLUSTER_SPEC`` (``master``, ``worker``,
``ps``, ``evaluator``)."""

CHIEF = tf_config.TASK_TYPES["primary"]
"""The primary's task type when the request sets ``useChiefInTfConfig``."""

USE_CHIEF_SETTING = "use_chief_in_tf_config"
"""The backend setting (and the local backend's) that asks for :data:`CHIEF`."""

METRICS = HYPERTUNE
"""AI Platform's tuning service reads trials' metrics from cloudml-hypertune's file."""

HINTS_PER_ROLE: Optional[bool] = None
"""No hints: the request has no environment field."""

ENV_FIELD = False


# --- reading -----------------------------------------------------------------------------------

def detect(env: Env) -> bool:
    """``CLUSTER_SPEC`` (not Vertex's: it is tried first) whose cluster has ``master`` or ``chief``.

    Raises:
        RuntimeEnvError: the ``CLUSTER_SPEC`` is neither Vertex's nor AI Platform's.
    """
    if VARIABLE not in env:
        return False
    if {tf_config.LEGACY_CHIEF, CHIEF} & cluster_keys(env, VARIABLE):
        return True
    raise RuntimeEnvError(VARIABLE, "its cluster has neither workerpool0 (Vertex AI) nor master/chief "
                          "(AI Platform Training)")


def parse(env: Env) -> RuntimeContext:
    """``CLUSTER_SPEC`` with ``master`` (or ``chief``), ``worker``, ``ps``, ``evaluator``."""
    return tf_config.parse_spec(json_object(env, VARIABLE), VARIABLE, NAME, env)


def model_dir(env: Env, argv: Sequence[str]) -> Optional[str]:
    """``--job-dir VALUE`` / ``--job-dir=VALUE`` on the command line (the service passes ``jobDir``)."""
    for i, arg in enumerate(argv):
        flag, equals, value = arg.partition("=")
        if equals and flag in JOB_DIR_FLAGS:
            return value
        if arg in JOB_DIR_FLAGS and i + 1 < len(argv):
            return argv[i + 1]
    return None


# --- emulating ---------------------------------------------------------------------------------

def follow(request: Mapping[str, Any], job: JobFacts) -> Decided:
    """The reducers compile placed in the parameter-server slot, ``useChiefInTfConfig`` (or the
    local backend's setting), and ``trainingInput`` (written as ``job``)."""
    training = request.get("trainingInput", {})
    reducers = int(training.get("parameterServerCount", 0)) if "reduction_server" in job.replicas else 0
    use_chief = bool(training.get("useChiefInTfConfig", False)) or bool(job.settings.get(USE_CHIEF_SETTING, False))
    return Decided(reducers=reducers, details={"use_chief": use_chief, "job": training})


def assume(job: JobFacts) -> Decided:
    """Without the backend: the reducers the job names, ``chief`` when a setting asks."""
    return Decided(reducers=job.replicas.get("reduction_server", 0),
                   details={"use_chief": bool(job.settings.get(USE_CHIEF_SETTING, False))})


def emulate(job: JobFacts, slots: Sequence[Slot], decided: Decided) -> list[dict[str, str]]:
    """``CLUSTER_SPEC`` and ``TF_CONFIG`` (the same object) for each running slot."""
    types = {**TASK_TYPES, "primary": CHIEF if decided.details.get("use_chief") else TASK_TYPES["primary"]}
    listing: dict[str, list[str]] = {}
    for role in ("primary", "worker", "parameter_server", "reduction_server"):
        if hosts(slots, role):
            listing.setdefault(types[role], []).extend(hosts(slots, role))
    result = []
    for slot in slots:
        if not slot.runs:
            continue
        task = {"type": types[slot.role], "index": slot.index}
        spec = {"cluster": listing, "environment": ENVIRONMENT, "task": task, "job": decided.details.get("job", {})}
        result.append({VARIABLE: json.dumps(spec), tf_config.VARIABLE: json.dumps(spec), JOB_ID: job.name})
    return result


def emulate_trial(env: Mapping[str, str], trial: str, params: Mapping[str, Any]) -> dict[str, str]:
    """A trial's process: ``CLOUD_ML_TRIAL_ID`` and ``task.trial`` in ``CLUSTER_SPEC`` / ``TF_CONFIG``."""
    return hypertune_trial_env(env, trial)


def claims_tf_config(spec: Mapping[str, Any]) -> bool:
    """A bare ``TF_CONFIG`` whose chief is the legacy ``master`` is AI Platform's."""
    listing = spec.get("cluster")
    return isinstance(listing, dict) and tf_config.LEGACY_CHIEF in listing


PREEMPTION_GRACE_S = 30
"""Seconds between the SIGTERM a preempted replica gets and its machine's end:
Compute Engine preemptible VMs get about 30 s (ACPI soft off, SIGTERM to the container)
(``omnidist run --preempt`` sends the same)."""
