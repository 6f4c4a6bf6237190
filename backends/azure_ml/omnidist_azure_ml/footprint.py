"""What a compiled Azure ML job runs on, read from its own request (for ``omnidist plan`` and the
job ledger): ``instance_count`` nodes of ``instance_type`` (a sweep's trial, times its concurrent
trials), in the workspace's ``region`` setting, on the spot tier or not. A job on a compute cluster
carries no VM size: it is priced as the SKU omnidist assumed for it, and says so. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.kit import Footprint, Note, NoteCode, Pool
from omnidist_azure_ml import catalog
from omnidist_azure_ml.settings import AzureMLSettings
from omnidist_azure_ml.tables import SERVICE


def _assumed(notes: Sequence[Note]) -> Optional[str]:
    return next((n.data.get("machine") for n in notes if n.code is NoteCode.MACHINE_CHOSEN), None)


def footprint(request: Mapping[str, Any], settings: AzureMLSettings, notes: Sequence[Note] = ()) -> Footprint:
    """One pool: every node of the job is the same VM size."""
    sweep = request.get("type") == "sweep"
    body = (request.get("trial") or {}) if sweep else request
    resources = body.get("resources") or {}
    machine, assumed = resources.get("instance_type"), ""
    if not machine:
        machine = _assumed(notes)
        assumed = (f"the compute cluster's VM size is not in the request; priced as {machine}, the SKU omnidist "
                   "assumed (set instance_type to the cluster's)") if machine else ""
    pools = []
    if machine:
        sku = catalog.lookup(machine)
        name = sku.name if sku else machine
        pools.append(Pool(role="primary", replicas=1, machine=name, accelerator=sku.accelerator if sku else None,
                          count=sku.gpus if sku else 0, assumed=assumed))
        workers = int(resources.get("instance_count") or 1) - 1
        if workers > 0:
            pools.append(Pool(role="workers", replicas=workers, machine=name,
                              accelerator=sku.accelerator if sku else None, count=sku.gpus if sku else 0,
                              assumed=assumed))
    tier = ((request.get("queue_settings") or {}).get("job_tier") or "").lower()
    parallel = int((request.get("limits") or {}).get("max_concurrent_trials") or 1) if sweep else 1
    return Footprint(service=SERVICE, region=settings.region, pools=pools, spot=tier == "spot", parallel=parallel)
