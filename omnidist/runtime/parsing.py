"""Readers of platform variables, shared by the platform modules (standard library only).

Each reader names the variable it reads in its errors (:class:`RuntimeEnvError`), so a malformed
``CLUSTER_SPEC`` or ``WORLD_SIZE`` says which variable and which part of it is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from omnidist.runtime import hints
from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.view import RuntimeContext

Env = Mapping[str, str]


AMBIGUOUS_POOL_ROLES = ("parameter_server", "reduction_server")
"""Roles that share one slot on the platforms with a positional cluster spec (its third pool, or ``ps``):
the platform does not say which it holds; ``OMNIDIST_POOL2_ROLE`` does."""


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
    """What that shared slot holds (:data:`AMBIGUOUS_POOL_ROLES`), from the hint."""
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
