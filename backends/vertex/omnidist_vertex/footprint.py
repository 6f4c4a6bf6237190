"""What a compiled Vertex AI job runs on, read from its own request (for ``omnidist plan`` and the
job ledger): each worker pool's machine, GPUs and replicas, the region, spot capacity and a tuning
job's parallel trials; a TPU slice as its hosts, each with its chips (cores on TPU v2/v3). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnidist.kit import Accelerator, Footprint, Pool, RoleName
from omnidist_google.tpu import HOSTS_BY_NAME as TPU_HOSTS_BY_NAME
from omnidist_google.tpu import slice_from_host, tpu_slice
from omnidist_vertex.settings import VertexSettings
from omnidist_vertex.tables import PORTABLE_ACCELERATORS, PORTABLE_CLOUD_TPUS, REDUCTION_SERVER_IMAGE, ROLES_AT, SERVICE


def _role_at(index: int, pool: Mapping[str, Any]) -> RoleName:
    roles = ROLES_AT[index]
    if len(roles) == 1:
        return roles[0]
    image = (pool.get("containerSpec") or {}).get("imageUri", "")
    return RoleName.REDUCTION_SERVERS if REDUCTION_SERVER_IMAGE.search(image) else RoleName.PARAMETER_SERVERS


def pool_of(index: int, pool: Mapping[str, Any]) -> Pool | None:
    """One ``workerPoolSpecs`` entry as a priced pool (``None``: an empty placeholder pool)."""
    replicas = int(pool.get("replicaCount") or 0)
    machine = pool.get("machineSpec") or {}
    if not replicas or not machine.get("machineType"):
        return None
    count = int(machine.get("acceleratorCount") or 0)
    role = _role_at(index, pool).value
    tpu = _tpu(machine, count)
    if tpu is not None:  # one replica holds the slice: one machine per host, each with its chips
        laid = tpu_slice(tpu, machine["machineType"] if machine["machineType"] in TPU_HOSTS_BY_NAME else None)
        return Pool(role=role, replicas=laid.hosts * replicas, machine=machine["machineType"], accelerator=tpu.type,
                    count=laid.per_host)
    accelerator = PORTABLE_ACCELERATORS.get(machine.get("acceleratorType", "")) if count else None
    return Pool(role=role, replicas=replicas, machine=machine["machineType"],
                accelerator=accelerator, count=count if accelerator else 0)


def _tpu(machine: Mapping[str, Any], count: int) -> Accelerator | None:
    """The TPU slice of a pool (SPEC §13), ``None`` for a GPU or CPU pool."""
    if machine["machineType"] in TPU_HOSTS_BY_NAME:
        return slice_from_host(machine["machineType"], machine.get("tpuTopology"))
    kind = PORTABLE_CLOUD_TPUS.get(machine.get("acceleratorType", ""))
    return Accelerator(type=kind, count=count) if kind and count else None


def footprint(request: Mapping[str, Any], settings: VertexSettings, service: str = SERVICE) -> Footprint:
    """The pools of a CustomJob (or of each trial of a HyperparameterTuningJob, times its parallel trials)."""
    tuning = "trialJobSpec" in request
    spec = request.get("trialJobSpec" if tuning else "jobSpec") or {}
    pools = [pool_of(i, p) for i, p in enumerate(spec.get("workerPoolSpecs") or [])]
    strategy = (spec.get("scheduling") or {}).get("strategy")
    return Footprint(service=service, region=settings.region, pools=[p for p in pools if p is not None],
                     spot=strategy == "SPOT", parallel=int(request.get("parallelTrialCount") or 1) if tuning else 1)
