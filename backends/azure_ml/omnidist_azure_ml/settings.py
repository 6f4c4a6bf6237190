"""The settings of the ``azure_ml`` backend: profile keys and the job's ``backends.azure_ml`` block."""

from __future__ import annotations

from typing import Any, Optional

import attrs

from omnidist.kit import ClientSettings, ValidationError, check_data_map, lazy_pattern, one_of
from omnidist_azure_ml.tables import CREDENTIALS, JOB_TIERS, PRIORITIES

_SHM = lazy_pattern(r"^\d+[bkmgBKMG]?$")


def _shm(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    if value is not None and not _SHM.match(value):
        raise ValidationError(f"{value!r} is not a size; write a number with b, k, m or g, e.g. 16g",
                              path=attribute.name)


@attrs.frozen(kw_only=True)
class AzureMLSettings(ClientSettings):
    """Profile keys and ``backends.azure_ml`` keys (every one documented in docs/backends/azure_ml.md);
    the retry/timeout keys come from :class:`~omnidist.backend.settings.ClientSettings`."""

    subscription_id: Optional[str] = None
    resource_group: Optional[str] = None
    workspace: Optional[str] = None
    region: Optional[str] = None
    """The workspace's location (``eastus``): not sent (the workspace decides), read by ``omnidist plan``
    to price the job offline and recorded in the job ledger."""
    compute: Optional[str] = None
    """Compute cluster name; omitted -> serverless compute sized by ``resources.instance_type``."""
    instance_type: Optional[str] = None
    """VM SKU; omitted -> picked from the catalog by accelerator, cpus, memory and interconnect."""
    environment: Optional[str] = None
    """A registered/curated environment (``azureml:name:version``), used instead of the job's image."""
    shm_size: Optional[str] = attrs.field(default=None, validator=_shm)
    docker_args: Optional[str] = None
    experiment_name: Optional[str] = None
    job_tier: Optional[str] = attrs.field(default=None, validator=one_of(*JOB_TIERS, ignore_case=True))
    priority: Optional[str] = attrs.field(default=None, validator=one_of(*PRIORITIES, ignore_case=True))
    code: Optional[str] = None
    """Local folder (or URI) Azure uploads as the working directory of the command."""
    inputs: dict[str, Any] = attrs.field(factory=dict)
    """Job inputs, passed through as written (referenced as ``${{inputs.NAME}}`` in the command)."""
    credential: str = attrs.field(default="default", validator=one_of(*CREDENTIALS, ignore_case=True))
    endpoint: Optional[str] = None
    """Resource-manager base URL override (tests, local endpoints, sovereign clouds)."""
    data_map: dict[str, str] = attrs.field(factory=dict, validator=check_data_map)
    """Prefix rewrites for input, output and code URIs (``{"gs://bkt/" = "azureml://datastores/ds/paths/"}``)."""
