"""The settings of the ``vertex`` backend: profile keys and the job's ``backends.vertex`` block."""

from __future__ import annotations

from typing import Optional

import attrs

from omnidist.kit import ClientSettings, at_least, check_data_map, one_of, role_keys
from omnidist_google.google_cloud import check_gs_prefix
from omnidist_vertex.tables import BOOT_DISK_TYPES, DEFAULT_REGION


@attrs.frozen(kw_only=True)
class VertexSettings(ClientSettings):
    """Settings of the ``vertex`` backend: profile keys and the job's ``backends.vertex`` block,
    plus the retry/timeout keys of :class:`~omnidist.backend.settings.ClientSettings`.

    Every key is documented in ``docs/backends/vertex.md``.
    """

    project: Optional[str] = None
    region: str = DEFAULT_REGION
    api_endpoint: Optional[str] = None
    credentials: str = "default"
    """``default`` (Application Default Credentials), ``anonymous`` (local endpoints), or
    the path of a service-account key file."""
    machine_types: dict[str, str] = attrs.field(factory=dict, validator=role_keys)
    service_account: Optional[str] = None
    network: Optional[str] = None
    base_output_dir: Optional[str] = None
    enable_web_access: bool = False
    tensorboard: Optional[str] = None
    boot_disk_type: Optional[str] = attrs.field(default=None, validator=one_of(*BOOT_DISK_TYPES))
    restart_job_on_worker_restart: bool = False
    persistent_resource_id: Optional[str] = None
    kms_key_name: Optional[str] = None
    reduction_server_image: Optional[str] = None
    create_settle_s: float = attrs.field(default=30.0, validator=at_least(0))
    """After a create timed out and a retry made the job, how long to keep looking for a late
    copy made by the timed-out create (which is then cancelled)."""
    # Code and data (SPEC §7; omnidist_vertex.code_data).
    staging_bucket: Optional[str] = attrs.field(default=None, validator=check_gs_prefix)
    """gs://BUCKET[/PATH] where a local code folder is uploaded at submit (once per content)."""
    storage_endpoint: Optional[str] = None
    """Cloud Storage API endpoint for the code upload (private endpoints, local test servers)."""
    data_map: dict[str, str] = attrs.field(factory=dict, validator=check_data_map)
    """Prefix rewrites for input, output and code URIs (``{"azureml://…/" = "gs://bkt/…/"}``)."""
