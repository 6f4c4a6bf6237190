"""What a compiled Vertex AI job runs on, read from its own request (for ``omnidist plan`` and the
job ledger): each worker pool's machine, GPUs and replicas, the region, spot capacity and a tuning
job's parallel trials. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnidist.kit import Footprint, Pool, RoleName
from omnidist_vertex.settings import VertexSettings
from omnidist_vertex.tables import PORTABLE_ACCELERATORS, REDUCTION_SERVER_IMAGE, ROLES_AT

SERVICE = "vertex_ai"
"""The price list Vertex AI custom training bills from."""


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
    accelerator = PORTABLE_ACCELERATORS.get(machine.get("acceleratorType", "")) if count else None
    return Pool(role=_role_at(index, pool).value, replicas=replicas, machine=machine["machineType"],
                accelerator=accelerator, count=count if accelerator else 0)


def footprint(request: Mapping[str, Any], settings: VertexSettings, service: str = SERVICE) -> Footprint:
    """The pools of a CustomJob (or of each trial of a HyperparameterTuningJob, times its parallel trials)."""
    tuning = "trialJobSpec" in request
    spec = request.get("trialJobSpec" if tuning else "jobSpec") or {}
    pools = [pool_of(i, p) for i, p in enumerate(spec.get("workerPoolSpecs") or [])]
    strategy = (spec.get("scheduling") or {}).get("strategy")
    return Footprint(service=service, region=settings.region, pools=[p for p in pools if p is not None],
                     spot=strategy == "SPOT", parallel=int(request.get("parallelTrialCount") or 1) if tuning else 1)
