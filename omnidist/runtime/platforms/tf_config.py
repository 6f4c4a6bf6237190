"""A bare ``TF_CONFIG``, and TensorFlow's task types every platform that writes one shares.

TensorFlow's ``TF_CONFIG`` lists the cluster by task type — ``chief`` (``master`` in the
legacy spelling AI Platform keeps), ``worker``, ``ps``, ``evaluator`` — and names this
process's ``task``. AI Platform's ``CLUSTER_SPEC`` has the same shape, and Azure ML's
TensorFlow distribution writes one too, so :func:`parse_spec` reads all of them.

A ``TF_CONFIG`` with no other platform variable is AI Platform's when it lists a ``master``,
Vertex's when it says ``environment: cloud``, and otherwise written by hand or a local
launcher (platform ``local``). Without a ``chief``/``master``, ``worker`` 0 is the primary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnidist.runtime import platforms
from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, cluster, from_cluster, json_object, pool2_role, task
from omnidist.runtime.view import TASK_TYPES, RuntimeContext

NAME = "tf_config"
ORDER = 40

VARIABLE = "TF_CONFIG"
VARIABLES = frozenset({VARIABLE})
PREFIXES = ()

LOCAL = "local"
"""The platform of a ``TF_CONFIG`` no platform claims."""


LEGACY_CHIEF = "master"
"""The chief's legacy task type, which AI Platform writes unless ``useChiefInTfConfig`` is set."""

TASK_ROLES: Mapping[str, str] = {**{kind: role for role, kind in TASK_TYPES.items()}, LEGACY_CHIEF: "primary"}
"""TensorFlow task type -> runtime role (derived). ``ps`` may hold reduction servers on legacy AI
Platform: :func:`omnidist.runtime.parsing.pool2_role` settles it."""


def parse_spec(spec: dict[str, Any], name: str, platform: str, env: Env) -> RuntimeContext:
    """AI Platform ``CLUSTER_SPEC`` and every ``TF_CONFIG``: chief/master, worker, ps, evaluator."""
    raw = cluster(spec, name)
    unknown = sorted(set(raw) - set(TASK_ROLES))
    if unknown:
        expected = ", ".join(sorted(TASK_ROLES))
        raise RuntimeEnvError(name, f"cluster.{unknown[0]}: unknown task type; expected {expected}")
    kind, index, trial = task(spec, name, TASK_ROLES)
    roles = {k: (pool2_role(env) if r == "parameter_server" else r) for k, r in TASK_ROLES.items()}
    listing: dict[str, list[str]] = {}
    for key, hosts in raw.items():
        listing.setdefault(roles[key], []).extend(hosts)
    role = roles[kind]
    if TASK_TYPES["primary"] not in raw and LEGACY_CHIEF not in raw:
        # Multi-worker TensorFlow (Azure ML, hand-written): worker 0 acts as the chief.
        workers = listing.pop("worker", [])
        listing["primary"], listing["worker"] = workers[:1], workers[1:]
        if kind == TASK_TYPES["worker"]:
            role, index = ("primary", 0) if index == 0 else ("worker", index - 1)
    return from_cluster(platform, name, listing, role, index, trial)


def detect(env: Env) -> bool:
    """A ``TF_CONFIG`` is set."""
    return VARIABLE in env


def parse(env: Env) -> RuntimeContext:
    """A ``TF_CONFIG`` on its own: the platform whose module claims it (its ``claims_tf_config(spec)``
    hook), else ``local``."""
    spec = json_object(env, VARIABLE)
    environment = spec.get("environment")
    if environment is not None and not isinstance(environment, str):
        raise RuntimeEnvError(VARIABLE, f"environment: expected a string such as 'cloud', got {environment!r}")
    owner = platforms.first(lambda module: getattr(module, "claims_tf_config", lambda _: False)(spec))
    platform = owner.NAME if owner is not None else LOCAL
    return parse_spec(spec, VARIABLE, platform, env)
