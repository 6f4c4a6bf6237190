"""Skeleton Cloud's job request -> portable job, with notes on what was inferred. Pure.

The inverse of :mod:`omnidist_skeleton.compiler`: pools become roles (:func:`~omnidist.kit.delower`
moves what every role shares up to the job), omnidist's runtime hints become the framework and the
processes per node, and keys the portable job has no place for are refused or noted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import (
    Accelerator,
    DistributedJob,
    EffectiveRole,
    Note,
    RoleName,
    ValidationError,
    cannot_hold,
    delower,
    job_from_dict,
    pick_name,
    portable_env,
)
from omnidist.runtime import hints
from omnidist_skeleton.tables import ACCELERATORS, NATIVE_KEYS, ROLES

PORTABLE_ACCELERATORS = {native: portable for portable, native in ACCELERATORS.items()}
PORTABLE_ROLES = {native: portable for portable, native in ROLES.items()}


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected an object, got {type(value).__name__}", path=path)
    return value


def _words(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        raise ValidationError("expected a list of strings", path=path)
    return tuple(value)


def _number(value: Any, path: str, kind: type = int) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
        raise ValidationError(f"expected a {'whole ' if kind is int else ''}number, got {value!r}", path=path)
    return kind(value)


def _accelerator(value: Any, path: str) -> Optional[Accelerator]:
    if value is None:
        return None
    found = _mapping(value, path)
    kind = found.get("type")
    if not isinstance(kind, str) or kind not in PORTABLE_ACCELERATORS:
        raise cannot_hold(f"{path}.type", f"{kind!r} is not an accelerator omnidist knows on this cloud")
    count = _number(found.get("count", 1), f"{path}.count")
    if count is None or count < 1:
        raise ValidationError("expected a positive count", path=f"{path}.count")
    return Accelerator(type=PORTABLE_ACCELERATORS[kind], count=count)


def _role(value: Any, path: str, notes: list[Note]) -> EffectiveRole:
    found = _mapping(value, path)
    name = found.get("role")
    if not isinstance(name, str) or name not in PORTABLE_ROLES:
        raise cannot_hold(f"{path}.role", f"pool role {name!r} has no portable role")
    replicas = _number(found.get("replicas", 1), f"{path}.replicas")
    if replicas is None or replicas < 0:
        raise ValidationError("expected a replica count of 0 or more", path=f"{path}.replicas")
    env = found.get("env") or {}
    if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
        raise ValidationError("expected an object of strings", path=f"{path}.env")
    image = found.get("image")
    if not isinstance(image, str):
        raise ValidationError("expected the container image", path=f"{path}.image")
    return EffectiveRole(name=PORTABLE_ROLES[name], replicas=replicas,
                         accelerator=_accelerator(found.get("accelerator"), f"{path}.accelerator"),
                         cpus=_number(found.get("cpus"), f"{path}.cpus", float),
                         memory_gb=_number(found.get("memoryGb"), f"{path}.memoryGb", float),
                         disk_gb=_number(found.get("diskGb"), f"{path}.diskGb"),
                         image=image, command=_words(found.get("command"), f"{path}.command"),
                         args=_words(found.get("args"), f"{path}.args"),
                         env=portable_env(env, f"{path}.env", notes))


def import_request(request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
    """The portable job a job request describes, and notes on what was inferred.

    Raises:
        ValidationError: the request is malformed (each problem with its path).
        NotPortableError: it holds what the portable job cannot (exit 3).
    """
    request = _mapping(request, "<request>")
    for key in request:
        if key not in NATIVE_KEYS:
            raise cannot_hold(str(key), f"{key!r} is not a field omnidist reads from this cloud's requests")
    pools = request.get("pools")
    if not isinstance(pools, list) or not pools:
        raise ValidationError("expected a list of pools", path="pools")
    notes: list[Note] = []
    roles = [_role(value, f"pools[{i}]", notes) for i, value in enumerate(pools)]
    by_name = {role.name: role for role in roles}
    if len(by_name) != len(roles) or RoleName.PRIMARY not in by_name:
        raise ValidationError("expected one primary pool and at most one pool per role", path="pools")
    primary_env = by_name[RoleName.PRIMARY].env
    framework = primary_env.get(hints.FRAMEWORK, "pytorch")
    processes = primary_env.get(hints.PROCESSES_PER_NODE)
    bare = {name: _without_hints(role) for name, role in by_name.items()}
    found = delower(bare)
    name = pick_name((request.get("displayName"), primary_env.get(hints.JOB_NAME)), fallback="imported-job",
                     missing="the request names no job", notes=notes)
    labels = request.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise ValidationError("expected an object of strings", path="labels")
    doc = {"name": name, "framework": framework, **found.job_dict(), "labels": dict(labels),
           "timeout": _number(request.get("timeoutSeconds"), "timeoutSeconds")}
    if processes is not None and processes.isdigit():
        doc["processes_per_node"] = int(processes)
    return job_from_dict({k: v for k, v in doc.items() if v is not None}), tuple(notes)


def _without_hints(role: EffectiveRole) -> EffectiveRole:
    return attrs.evolve(role, env=hints.strip(role.env))
