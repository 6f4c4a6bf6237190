"""What a compiled SageMaker job runs on, read from its own request (for ``omnidist plan`` and the
job ledger): ``ResourceConfig``'s one instance type (its first instance the primary, the rest
workers) or its instance groups (one per role), in the ``region`` setting, on managed spot or
not; a tuning job's definition times its ``MaxParallelTrainingJobs``. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnidist.kit import Footprint, Pool
from omnidist.runtime.platforms import sagemaker as platform
from omnidist_sagemaker import catalog
from omnidist_sagemaker.settings import SageMakerSettings
from omnidist_sagemaker.tables import SERVICE


def _pool(role: str, replicas: int, instance_type: str) -> Pool:
    known = catalog.machine(instance_type)
    return Pool(role=role, replicas=replicas, machine=instance_type,
                accelerator=known.accelerator if known else None, count=known.gpus if known else 0)


def _role(group: str) -> str:
    """The role an instance group runs (groups are named by role; the primary's has its own name)."""
    return "primary" if group == platform.PRIMARY_GROUP else group


def _pools(config: Mapping[str, Any]) -> list[Pool]:
    groups = config.get("InstanceGroups")
    if groups:
        return [_pool(_role(str(g["InstanceGroupName"])), int(g.get("InstanceCount") or 1), str(g["InstanceType"]))
                for g in groups]
    instance_type = config.get("InstanceType")
    if not instance_type:
        return []
    pools = [_pool("primary", 1, str(instance_type))]
    if (workers := int(config.get("InstanceCount") or 1) - 1) > 0:
        pools.append(_pool("workers", workers, str(instance_type)))
    return pools


def footprint(request: Mapping[str, Any], settings: SageMakerSettings) -> Footprint:
    """The training job's machines, or a tuning job's trial definition times its trials at once."""
    tuning = request.get("HyperParameterTuningJobConfig")
    body = (request.get("TrainingJobDefinition") or {}) if tuning else request
    parallel = int(((tuning or {}).get("ResourceLimits") or {}).get("MaxParallelTrainingJobs") or 1)
    return Footprint(service=SERVICE, region=settings.region, pools=_pools(body.get("ResourceConfig") or {}),
                     spot=bool(body.get("EnableManagedSpotTraining")), parallel=parallel)
