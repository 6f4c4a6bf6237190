"""What a compiled legacy AI Platform job runs on, read from its own ``trainingInput`` (for
``omnidist plan`` and the job ledger): each slot's machine, GPUs and count, the region, a tuning
job's parallel trials. Legacy machine names count as the Compute Engine machines they stand for,
with their GPUs; a scale tier as the cluster it ran; a ``cloud_tpu`` worker as the TPU it is
(role ``tpu``, priced as Vertex's ``cloud-tpu``: one 8-core board per machine). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from omnidist.kit import Footprint, Pool, RoleName
from omnidist_ai_platform import catalog
from omnidist_ai_platform.settings import AIPlatformSettings
from omnidist_ai_platform.tables import ROLE_PREFIXES, SERVICE

_SLOTS = tuple((role, ROLE_PREFIXES[role]) for role in RoleName if role is not RoleName.REDUCTION_SERVERS)
"""Role -> its ``trainingInput`` prefix, in pool order (reducers sit in the parameter-server slot)."""


TPU_POOL = "tpu"
"""The role a TPU Node's pool is listed under (beside the master that runs the program)."""

TPU_PRICED_AS = "cloud-tpu"
"""The machine a TPU worker is priced as: Vertex's (legacy bills the Vertex AI prices)."""


def _tpu(config: Mapping[str, Any]) -> Pool:
    given = config.get("acceleratorConfig") or {}
    native, cores = (given.get("type"), int(given.get("count") or 0)) if given.get("type") else catalog.TPU_DEFAULT
    kind = catalog.PORTABLE_TPUS.get(native or "")
    boards = max(cores // 8, 1)
    return Pool(role=TPU_POOL, replicas=boards, machine=TPU_PRICED_AS, accelerator=kind, count=8 if kind else 0)


def _pool(role: RoleName, machine: str, replicas: int, config: Mapping[str, Any]) -> Pool:
    if machine == catalog.TPU_MACHINE:
        return _tpu(config)
    gpus = config.get("acceleratorConfig") or {}
    accelerator = catalog.PORTABLE_ACCELERATORS.get(gpus.get("type", ""))
    count = int(gpus.get("count") or 0) if accelerator else 0
    legacy = catalog.LEGACY_MACHINE_NAMES.get(machine)
    if legacy is not None:  # `standard_v100`: an N1 machine with its built-in GPUs
        machine, native_gpu, count = legacy
        native_gpu = native_gpu or ""
        accelerator = catalog.PORTABLE_ACCELERATORS.get(native_gpu) or catalog.NATIVE_ONLY_ACCELERATORS.get(native_gpu)
    if role is RoleName.PARAMETER_SERVERS and "reductionserver" in (config.get("imageUri") or ""):
        role = RoleName.REDUCTION_SERVERS
    return Pool(role=role.value, replicas=replicas, machine=machine, accelerator=accelerator,
                count=count if accelerator else 0)


def _slots(training: Mapping[str, Any]) -> list[Pool]:
    tier = training.get("scaleTier", "CUSTOM")
    if tier in catalog.SCALE_TIER_SHAPES:
        prefixes = {prefix: role for role, prefix in _SLOTS}
        return [_pool(prefixes[prefix], machine, replicas, {})
                for prefix, machine, replicas in catalog.SCALE_TIER_SHAPES[tier]]
    if tier == "BASIC":
        return [_pool(RoleName.PRIMARY, "standard", 1, {})]
    if tier == "BASIC_TPU":  # the master and its one TPU
        return [_pool(RoleName.PRIMARY, "standard", 1, {}), _tpu({})]
    pools = []
    for role, prefix in _SLOTS:
        machine: Optional[str] = training.get(f"{prefix}Type")
        replicas = 1 if role is RoleName.PRIMARY else int(training.get(f"{prefix}Count") or 0)
        if machine and replicas:
            pools.append(_pool(role, machine, replicas, training.get(f"{prefix}Config") or {}))
    return pools


def footprint(request: Mapping[str, Any], settings: AIPlatformSettings) -> Footprint:
    """The slots of ``trainingInput`` (times a tuning job's parallel trials)."""
    training = request.get("trainingInput") or {}
    parallel = int((training.get("hyperparameters") or {}).get("maxParallelTrials") or 1)
    return Footprint(service=SERVICE, region=training.get("region") or settings.region, pools=_slots(training),
                     parallel=parallel)
