"""Vertex AI native specs -> portable job. Pure: no network, no SDK import.

Three inputs are understood:

- a ``CustomJob`` as the REST API returns it (int64 as strings or numbers, enums as names or
  numbers; output-only fields such as ``state`` and ``createTime`` are ignored);
- a ``CustomJobSpec`` as ``gcloud ai custom-jobs create --config`` takes it (top-level
  ``workerPoolSpecs``);
- ``--worker-pool-spec`` flag strings: ``{"worker_pool_specs": ["machine-type=…,…", …]}`` (or
  just the list), optionally with ``display_name``, ``command``, ``args``, ``labels``,
  ``region``, ``service_account``, ``network`` and ``enable_web_access``, the other flags.

The machine types go into ``backends.vertex.machine_types`` so a Vertex -> Vertex round trip
is exact; the ``OMNIDIST_*`` runtime hints are read (framework, processes per node) and dropped.
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import attrs

from omnidist import importing, serde
from omnidist.backend import Note, NoteKind
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.importing import parse_proto_duration
from omnidist.job import Accelerator, DistributedJob, RoleName
from omnidist.lowering import EffectiveRole
from omnidist.runtime import hints
from omnidist_vertex.tables import (
    ACCELERATOR_BY_NUMBER,
    DEFAULT_REGION,
    PORTABLE_ACCELERATORS,
    REDUCTION_SERVER_IMAGE,
    REQUEST_ID_LABEL,
    ROLES_AT,
    STRATEGY_BY_NUMBER,
    reduction_server_image,
)

PORTABLE = "the portable job"
DEFAULT_BOOT_DISK_GB = 100
"""Vertex's boot disk when a pool names none."""
_UNSUPPORTED_POOL_KEYS = {
    "nfsMounts": "NFS mounts are not part of the portable job; mount the share from the training code",
    "pythonPackageSpec": "the portable job runs container images; "
    "build one from the package and use containerSpec",
}


@attrs.frozen(kw_only=True)
class NativePool:
    """One non-empty ``WorkerPoolSpec``, with types normalized."""

    index: int
    machine_type: str
    accelerator: Optional[str]
    replicas: int
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: dict[str, str]
    disk_type: Optional[str]
    disk_gb: Optional[int]


# --- scalars ------------------------------------------------------------------------------------


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping, got {type(value).__name__}", path=path)
    return value


def _int(value: Any, path: str, default: Optional[int] = None) -> Optional[int]:
    """int64 arrives as a JSON string or a number."""
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, str))
        or (isinstance(value, str) and not value.isdigit())
    ):
        raise ValidationError(f"expected a whole number (or its string), got {value!r}", path=path)
    return int(value)


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"expected a non-empty string, got {value!r}", path=path)
    return value


def _strings(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError("expected a list of strings", path=path)
    return tuple(value)


def _enum_name(value: Any, by_number: Mapping[int, str], path: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        if value not in by_number:
            raise UnsupportedFeatureError(
                f"{path} = {value}", "omnidist", f"enum number {value} is not one omnidist knows."
            )
        return by_number[value]
    return _str(value, path)


# --- pools --------------------------------------------------------------------------------------


def _accelerator(machine: Mapping[str, Any], path: str) -> Optional[str]:
    raw = machine.get("acceleratorType")
    if raw in (None, 0, "ACCELERATOR_TYPE_UNSPECIFIED"):
        return None
    name = _enum_name(raw, ACCELERATOR_BY_NUMBER, f"{path}.acceleratorType")
    if name not in PORTABLE_ACCELERATORS:
        raise UnsupportedFeatureError(
            f"accelerator {name}",
            PORTABLE,
            "it has no portable accelerator name.",
            f"Portable accelerators: {', '.join(sorted(PORTABLE_ACCELERATORS.values()))}.",
        )
    count = _int(machine.get("acceleratorCount"), f"{path}.acceleratorCount", default=1)
    if count < 1:
        raise ValidationError("must be >= 1 when acceleratorType is set", path=f"{path}.acceleratorCount")
    return f"{PORTABLE_ACCELERATORS[name]}:{count}"


def _env(value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise ValidationError("expected a list of {name, value}", path=path)
    env = {}
    for i, item in enumerate(value):
        item = _mapping(item, f"{path}[{i}]")
        env[_str(item.get("name"), f"{path}[{i}].name")] = str(item.get("value", ""))
    return env


def native_to_pool(data: Any, index: int, path: str) -> Optional[NativePool]:
    """One ``WorkerPoolSpec`` (``None`` for a skipped ``{}`` pool)."""
    data = _mapping(data, path)
    if not data:
        return None
    for key, why in _UNSUPPORTED_POOL_KEYS.items():
        if data.get(key):
            raise UnsupportedFeatureError(f"{path}.{key}", PORTABLE, why + ".")
    machine = _mapping(data.get("machineSpec"), f"{path}.machineSpec")
    container = _mapping(data.get("containerSpec"), f"{path}.containerSpec")
    disk = _mapping(data.get("diskSpec") or {}, f"{path}.diskSpec")
    return NativePool(
        index=index,
        machine_type=_str(machine.get("machineType"), f"{path}.machineSpec.machineType"),
        accelerator=_accelerator(machine, f"{path}.machineSpec"),
        replicas=_int(data.get("replicaCount"), f"{path}.replicaCount", default=1),
        image=_str(container.get("imageUri"), f"{path}.containerSpec.imageUri"),
        command=_strings(container.get("command"), f"{path}.containerSpec.command"),
        args=_strings(container.get("args"), f"{path}.containerSpec.args"),
        env=_env(container.get("env"), f"{path}.containerSpec.env"),
        disk_type=disk.get("bootDiskType") or None,
        disk_gb=_int(disk.get("bootDiskSizeGb"), f"{path}.diskSpec.bootDiskSizeGb"),
    )


def _role_of(pool: NativePool, primary_env: Mapping[str, str]) -> RoleName:
    roles = ROLES_AT[pool.index]
    if len(roles) == 1:
        return roles[0]
    told = pool.env.get(hints.POOL2_ROLE) or primary_env.get(hints.POOL2_ROLE)
    if REDUCTION_SERVER_IMAGE.search(pool.image) or told == RoleName.REDUCTION_SERVERS.singular:
        return RoleName.REDUCTION_SERVERS
    return RoleName.PARAMETER_SERVERS


# --- assembling the job -------------------------------------------------------------------------


def native_to_role(name: RoleName, pool: NativePool) -> EffectiveRole:
    """One pool as the role it runs, every value spelled out (:func:`~omnidist.importing.delower`
    then writes it as differences from what it inherits)."""
    accelerator = Accelerator.parse(pool.accelerator) if pool.accelerator else None
    return EffectiveRole(name=name, replicas=pool.replicas, accelerator=accelerator, cpus=None,
                         memory_gb=None, disk_gb=pool.disk_gb, image=pool.image, command=pool.command,
                         args=pool.args, env=hints.strip(pool.env))


def pools_to_roles(pools: dict[RoleName, NativePool], region: str = DEFAULT_REGION) -> dict[str, Any]:
    """The job's program, env and roles, each role written as differences from what it inherits."""
    found = importing.delower({name: native_to_role(name, pool) for name, pool in pools.items()},
                              unset={"disk_gb": DEFAULT_BOOT_DISK_GB})
    roles = dict(found.roles)
    reducers = pools.get(RoleName.REDUCTION_SERVERS)
    if reducers is not None:  # reducers run their own program, not the job's
        image = reducers.image if reducers.image != reduction_server_image(region) else None
        roles[RoleName.REDUCTION_SERVERS] = attrs.evolve(
            roles[RoleName.REDUCTION_SERVERS], image=image, command=reducers.command or None,
            args=reducers.args or None)
    return attrs.evolve(found, roles=roles).job_dict()


def _framework(primary: NativePool, notes: list[Note]) -> str:
    told = primary.env.get(hints.FRAMEWORK)
    if told:
        return told
    # Left to the caller (migrate infers it from the image, and reports that it did).
    notes.append(
        Note(
            kind=NoteKind.DEFAULTED,
            field="framework",
            message="the spec does not say; custom (set it in the job, or --framework)",
        )
    )
    return "custom"


def _scheduling(data: Any, job: dict[str, Any], vertex: dict[str, Any]) -> None:
    data = _mapping(data or {}, "jobSpec.scheduling")
    if data.get("timeout") is not None:
        job["timeout"] = parse_proto_duration(data["timeout"], "jobSpec.scheduling.timeout")
    strategy = _enum_name(
        data.get("strategy", "STRATEGY_UNSPECIFIED"), STRATEGY_BY_NUMBER, "jobSpec.scheduling.strategy"
    )
    if strategy in ("SPOT", "LOW_COST"):
        job["spot"] = True
    elif strategy not in ("STRATEGY_UNSPECIFIED", "STANDARD", "ON_DEMAND"):
        raise UnsupportedFeatureError(
            f"scheduling.strategy {strategy}", PORTABLE, "only on-demand and spot capacity are portable."
        )
    for key in ("disableRetries", "maxWaitDuration"):
        if data.get(key):
            raise UnsupportedFeatureError(
                f"scheduling.{key}", PORTABLE, "the portable job has no such setting."
            )
    if data.get("restartJobOnWorkerRestart"):
        vertex["restart_job_on_worker_restart"] = True


_SPEC_SETTINGS = {
    "enableWebAccess": "enable_web_access",
    "network": "network",
    "persistentResourceId": "persistent_resource_id",
    "serviceAccount": "service_account",
    "tensorboard": "tensorboard",
}
"""``CustomJobSpec`` field -> ``backends.vertex`` key (the ones copied as they are)."""


def spec_to_job(spec: Mapping[str, Any], outer: Mapping[str, Any], notes: list[Note]) -> DistributedJob:
    """A portable job from a ``CustomJobSpec`` plus the ``CustomJob`` fields around it."""
    raw = spec.get("workerPoolSpecs")
    if not isinstance(raw, list) or not raw:
        raise ValidationError("expected a non-empty list of worker pools", path="workerPoolSpecs")
    if len(raw) > 4:
        raise ValidationError(f"Vertex has 4 worker pools, got {len(raw)}", path="workerPoolSpecs")
    found = [native_to_pool(p, i, f"workerPoolSpecs[{i}]") for i, p in enumerate(raw)]
    if found[0] is None:
        raise ValidationError("pool 0 (the primary) cannot be empty", path="workerPoolSpecs[0]")
    primary = found[0]
    if primary.replicas != 1:
        raise ValidationError(
            f"pool 0 is the primary, so replicaCount must be 1, got {primary.replicas}",
            path="workerPoolSpecs[0].replicaCount",
        )
    pools = {_role_of(p, primary.env): p for p in found if p is not None}
    vertex: dict[str, Any] = {"machine_types": {r.value: p.machine_type for r, p in pools.items()}}
    disk_types = {p.disk_type for p in pools.values() if p.disk_type}
    if len(disk_types) > 1:
        raise UnsupportedFeatureError(
            "per-pool bootDiskType",
            PORTABLE,
            f"pools use {', '.join(sorted(disk_types))}; "
            "backends.vertex.boot_disk_type is one value for every pool.",
        )
    if disk_types:
        vertex["boot_disk_type"] = disk_types.pop()
    name = importing.pick_name((outer.get("displayName"), primary.env.get(hints.JOB_NAME)),
                               fallback="vertex-job", missing="no displayName; called the job 'vertex-job'",
                               notes=notes)
    job: dict[str, Any] = {"name": name, "framework": _framework(primary, notes)}
    match = re.match(r"^projects/[^/]+/locations/([^/]+)/", str(outer.get("name") or ""))
    if match:
        vertex["region"] = match[1]
    job.update(pools_to_roles(pools, vertex.get("region", DEFAULT_REGION)))
    told = primary.env.get(hints.PROCESSES_PER_NODE)
    auto = primary.accelerator and int(primary.accelerator.split(":")[1]) or 1
    if told and told.isdigit() and int(told) != auto:
        job["processes_per_node"] = int(told)
    _scheduling(spec.get("scheduling"), job, vertex)
    vertex.update({key: spec[field] for field, key in _SPEC_SETTINGS.items() if spec.get(field)})
    if spec.get("baseOutputDirectory"):
        vertex["base_output_dir"] = _mapping(spec["baseOutputDirectory"], "baseOutputDirectory").get(
            "outputUriPrefix"
        )
    kms = _mapping(outer.get("encryptionSpec") or {}, "encryptionSpec").get("kmsKeyName")
    if kms:
        vertex["kms_key_name"] = kms
    labels = {k: v for k, v in _mapping(outer.get("labels") or {}, "labels").items() if k != REQUEST_ID_LABEL}
    if labels:
        job["labels"] = labels
    job["backends"] = {"vertex": {k: v for k, v in vertex.items() if v not in (None, {})}}
    return serde.job_from_dict(job)


# --- gcloud --worker-pool-spec flags ------------------------------------------------------------

FLAG_KEYS: dict[str, Optional[str]] = {
    "accelerator-count": "machineSpec.acceleratorCount",
    "accelerator-type": "machineSpec.acceleratorType",
    "container-image-uri": "containerSpec.imageUri",
    "disk-size": "diskSpec.bootDiskSizeGb",
    "disk-type": "diskSpec.bootDiskType",
    "executor-image-uri": None,
    "local-package-path": None,
    "machine-type": "machineSpec.machineType",
    "python-module": None,
    "replica-count": "replicaCount",
    "script": None,
}
"""``--worker-pool-spec`` key -> ``WorkerPoolSpec`` field (``None``: Python packages and
autopackaging, which need a local build and have no portable form)."""

_FLAG_OPTIONS = (
    "args",
    "command",
    "display_name",
    "enable_web_access",
    "labels",
    "network",
    "region",
    "service_account",
    "worker_pool_specs",
)


def flag_to_pool(text: Any, path: str) -> dict[str, Any]:
    """One ``--worker-pool-spec`` value -> a ``WorkerPoolSpec`` mapping (``{}`` when empty)."""
    if not isinstance(text, str):
        raise ValidationError(
            f"expected a flag string such as 'machine-type=n1-standard-4,replica-count=1', got {text!r}",
            path=path,
        )
    text = text.strip().removeprefix("--worker-pool-spec=").strip("'\"")
    pool: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in FLAG_KEYS:
            close = difflib.get_close_matches(key, list(FLAG_KEYS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValidationError(
                f"unknown key {key!r}{hint} Keys: {', '.join(FLAG_KEYS)}", path=f"{path}.{key}"
            )
        target = FLAG_KEYS[key]
        if target is None:
            raise UnsupportedFeatureError(
                f"--worker-pool-spec {key}",
                PORTABLE,
                "Python packages and autopackaging need a local build.",
                "Build the image and pass container-image-uri.",
            )
        outer, _, inner = target.rpartition(".")
        (pool.setdefault(outer, {}) if outer else pool)[inner] = value.strip("'\"")
    return pool


def _argv(value: Any, path: str) -> tuple[str, ...]:
    """``--command``/``--args``: a list, or one string split like a shell would."""
    if isinstance(value, str):
        return tuple(shlex.split(value))
    return tuple(serde.structure(value, Optional[tuple[str, ...]], path=path) or ())


def flags_to_job(data: Mapping[str, Any], notes: list[Note]) -> DistributedJob:
    """``{"worker_pool_specs": [...], …}`` (the gcloud flags) -> portable job."""
    unknown = [k for k in data if k not in _FLAG_OPTIONS]
    if unknown:
        raise ValidationError(f"unknown key; allowed: {', '.join(_FLAG_OPTIONS)}", path=unknown[0])
    specs = data.get("worker_pool_specs")
    if not isinstance(specs, Sequence) or isinstance(specs, str):
        raise ValidationError("expected a list of --worker-pool-spec strings", path="worker_pool_specs")
    pools = [flag_to_pool(s, f"worker_pool_specs[{i}]") for i, s in enumerate(specs)]
    command, args = (_argv(data.get(key), key) for key in ("command", "args"))
    for pool in pools:
        container = pool.get("containerSpec")
        if container and not REDUCTION_SERVER_IMAGE.search(container.get("imageUri", "")):
            container.update({k: list(v) for k, v in (("command", command), ("args", args)) if v})
    spec = {
        "workerPoolSpecs": pools,
        **{
            camel: data[snake]
            for camel, snake in (
                ("network", "network"),
                ("serviceAccount", "service_account"),
                ("enableWebAccess", "enable_web_access"),
            )
            if data.get(snake)
        },
    }
    outer = {"displayName": data.get("display_name"), "labels": data.get("labels")}
    if data.get("region"):
        outer["name"] = f"projects/-/locations/{data['region']}/customJobs/-"
    return spec_to_job(spec, outer, notes)


def import_native(native: Any) -> tuple[DistributedJob, list[Note]]:
    """Turn any of the three Vertex forms into a portable job, with notes on what was defaulted.

    Raises:
        ValidationError: malformed input, naming the native field path.
        UnsupportedFeatureError: something the portable job cannot hold (Python packages,
            NFS mounts, accelerators without a portable name…).
    """
    notes: list[Note] = []
    if isinstance(native, Sequence) and not isinstance(native, (str, bytes)):
        return flags_to_job({"worker_pool_specs": list(native)}, notes), notes
    native = _mapping(native, "")
    if "worker_pool_specs" in native:
        return flags_to_job(native, notes), notes
    if "jobSpec" in native:
        return spec_to_job(_mapping(native["jobSpec"], "jobSpec"), native, notes), notes
    if "workerPoolSpecs" in native:
        return spec_to_job(native, {}, notes), notes
    raise ValidationError(
        "not a Vertex spec: expected a CustomJob (jobSpec), a CustomJobSpec (workerPoolSpecs) "
        "or {worker_pool_specs: [--worker-pool-spec strings]}"
    )
