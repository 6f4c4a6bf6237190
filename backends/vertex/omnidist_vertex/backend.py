"""The Vertex AI backend: its tables of differences, its settings, and the glue.

Compiling and importing live in :mod:`.compiler` and :mod:`.importer` (pure); the SDK is
touched only in :mod:`.client` (:class:`~omnidist_vertex.client.VertexClient`), whose methods
import it when a job is submitted or followed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any, Optional

import attrs

from omnidist import data
from omnidist.backend import Backend, Capabilities, CompiledJob, JobState, LazyClient, Note
from omnidist.errors import ValidationError
from omnidist.job import DistributedJob, Framework, RoleName
from omnidist.labels import REQUEST_ID_LABEL  # noqa: F401 - the importer reads it here
from omnidist.retry import ClientSettings
from omnidist.runtime.platforms import vertex as platform

# --- tables: portable <-> Vertex --------------------------------------------------------------

ACCELERATOR_TYPES: dict[str, str] = {
    "A100": "NVIDIA_TESLA_A100",
    "A100-80GB": "NVIDIA_A100_80GB",
    "B200": "NVIDIA_B200",
    "H100": "NVIDIA_H100_80GB",
    "H100-MEGA": "NVIDIA_H100_MEGA_80GB",
    "H200": "NVIDIA_H200_141GB",
    "L4": "NVIDIA_L4",
    "P100": "NVIDIA_TESLA_P100",
    "P4": "NVIDIA_TESLA_P4",
    "T4": "NVIDIA_TESLA_T4",
    "V100": "NVIDIA_TESLA_V100",
}
"""Portable accelerator -> Vertex ``acceleratorType`` name."""

PORTABLE_ACCELERATORS: dict[str, str] = {v: k for k, v in ACCELERATOR_TYPES.items()}
"""Vertex ``acceleratorType`` name -> portable accelerator (derived)."""

ACCELERATOR_ENUM: dict[str, int] = {
    "NVIDIA_A100_80GB": 9,
    "NVIDIA_B200": 16,
    "NVIDIA_H100_80GB": 13,
    "NVIDIA_H100_MEGA_80GB": 14,
    "NVIDIA_H200_141GB": 15,
    "NVIDIA_L4": 11,
    "NVIDIA_TESLA_A100": 8,
    "NVIDIA_TESLA_P100": 2,
    "NVIDIA_TESLA_P4": 4,
    "NVIDIA_TESLA_T4": 5,
    "NVIDIA_TESLA_V100": 3,
}
"""``AcceleratorType`` name -> its number (the REST API's ``enum-encoding=int`` form)."""

NATIVE_ONLY_ACCELERATOR_ENUM: dict[str, int] = {
    "NVIDIA_GB200": 17,
    "NVIDIA_RTX_PRO_6000": 18,
    "NVIDIA_TESLA_K80": 1,
    "TPU_V2": 6,
    "TPU_V3": 7,
    "TPU_V4_POD": 10,
    "TPU_V5_LITEPOD": 12,
}
"""``AcceleratorType`` values without a portable name -> number: read by import (to replace a
retired GPU, or to refuse a TPU by name), never written."""

RETIRED_ACCELERATORS: dict[str, str] = {"NVIDIA_TESLA_K80": "K80"}
"""``AcceleratorType`` of a GPU no cloud sells any more -> its model (see ``omnidist.importing.RETIRED_GPUS``)."""

ACCELERATOR_BY_NUMBER: dict[int, str] = {
    v: k for k, v in {**ACCELERATOR_ENUM, **NATIVE_ONLY_ACCELERATOR_ENUM}.items()}
"""``AcceleratorType`` number -> name (derived)."""

POOL_INDEX: dict[RoleName, int] = {role: platform.POOL_INDEX[role.singular] for role in sorted(RoleName)}
"""Role -> position in ``workerPoolSpecs`` (pool 2 holds parameter servers or reducers): the
platform's own table (:data:`omnidist.runtime.platforms.vertex.POOL_INDEX`), which the runtime reads
``CLUSTER_SPEC`` with."""

ROLES_AT: dict[int, tuple[RoleName, ...]] = {
    i: tuple(r for r in RoleName if POOL_INDEX[r] == i) for i in sorted(set(POOL_INDEX.values()))
}
"""Pool index -> the roles that can sit there (derived)."""

JOB_STATES: dict[str, JobState] = {
    "JOB_STATE_CANCELLED": JobState.CANCELLED,
    "JOB_STATE_CANCELLING": JobState.CANCELLING,
    "JOB_STATE_EXPIRED": JobState.FAILED,
    "JOB_STATE_FAILED": JobState.FAILED,
    "JOB_STATE_PARTIALLY_SUCCEEDED": JobState.FAILED,
    "JOB_STATE_PAUSED": JobState.PAUSED,
    "JOB_STATE_PENDING": JobState.PENDING,
    "JOB_STATE_QUEUED": JobState.QUEUED,
    "JOB_STATE_RUNNING": JobState.RUNNING,
    "JOB_STATE_SUCCEEDED": JobState.SUCCEEDED,
    "JOB_STATE_UNSPECIFIED": JobState.UNKNOWN,
    "JOB_STATE_UPDATING": JobState.RUNNING,
}
"""Vertex ``JobState`` -> portable state (EXPIRED and PARTIALLY_SUCCEEDED count as failures:
some replica did not finish its work)."""

STRATEGY_ENUM: dict[str, int] = {
    "FLEX_START": 6,
    "LOW_COST": 2,
    "ON_DEMAND": 1,
    "SPOT": 4,
    "STANDARD": 3,
    "STRATEGY_UNSPECIFIED": 0,
}
"""``Scheduling.Strategy`` name -> number."""

STRATEGY_BY_NUMBER: dict[int, str] = {v: k for k, v in STRATEGY_ENUM.items()}
"""``Scheduling.Strategy`` number -> name (derived)."""

REDUCTION_SERVER_IMAGES: dict[str, str] = {
    "asia": "asia-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest",
    "europe": "europe-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest",
    "us": "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest",
}
"""Artifact Registry multi-region -> the Reduction Server image published there."""

MULTI_REGION_BY_PREFIX: dict[str, str] = {
    "africa-": "europe",
    "asia-": "asia",
    "australia-": "asia",
    "europe-": "europe",
    "me-": "europe",
    "northamerica-": "us",
    "southamerica-": "us",
    "us-": "us",
}
"""Region prefix -> the nearest multi-region holding the Reduction Server image."""

REDUCTION_SERVER_IMAGE = re.compile(r"(^|/)reductionserver(:|@|$)")
"""How an importer recognises a Reduction Server pool: the image is named ``reductionserver``."""

BOOT_DISK_TYPES = ("hyperdisk-balanced", "pd-ssd", "pd-standard")
"""``diskSpec.bootDiskType`` values Vertex accepts."""

DEFAULT_REGION = "us-central1"
"""Where jobs go when neither the profile nor the job names a region."""

CONSOLE_URL = (
    "https://console.cloud.google.com/agent-platform/locations/{region}/training/{job}?project={project}"
)
"""The Cloud Console page of a custom job (the form the installed aiplatform SDK prints)."""


def reduction_server_image(region: str) -> str:
    """The Reduction Server image nearest ``region`` (``us`` when the prefix is unknown)."""
    for prefix, multi in MULTI_REGION_BY_PREFIX.items():
        if region.startswith(prefix):
            return REDUCTION_SERVER_IMAGES[multi]
    return REDUCTION_SERVER_IMAGES["us"]


# --- settings -------------------------------------------------------------------------------------


def _at_least_zero(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    if value < 0:
        raise ValidationError(f"must be >= 0, got {value}", path=attribute.name)


def _role_keys(instance: Any, attribute: attrs.Attribute, value: Mapping[str, str]) -> None:
    roles = [r.value for r in RoleName]
    for key in value:
        if key not in roles:
            close = difflib.get_close_matches(key, roles, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            raise ValidationError(
                f"not a role{hint} Roles: {', '.join(roles)}", path=f"{attribute.name}.{key}"
            )


def _one_of(*choices: str) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value is not None and value not in choices:
            raise ValidationError(f"{value!r} is not one of {', '.join(choices)}", path=attribute.name)

    return check


@attrs.frozen(kw_only=True)
class VertexSettings(ClientSettings):
    """Settings of the ``vertex`` backend: profile keys and the job's ``backends.vertex`` block,
    plus the retry/timeout keys of :class:`~omnidist.retry.ClientSettings`.

    Every key is documented in ``docs/backends/vertex.md``.
    """

    project: Optional[str] = None
    region: str = DEFAULT_REGION
    api_endpoint: Optional[str] = None
    credentials: str = "default"
    """``default`` (Application Default Credentials), ``anonymous`` (local endpoints), or
    the path of a service-account key file."""
    machine_types: dict[str, str] = attrs.field(factory=dict, validator=_role_keys)
    service_account: Optional[str] = None
    network: Optional[str] = None
    base_output_dir: Optional[str] = None
    enable_web_access: bool = False
    tensorboard: Optional[str] = None
    boot_disk_type: Optional[str] = attrs.field(default=None, validator=_one_of(*BOOT_DISK_TYPES))
    restart_job_on_worker_restart: bool = False
    persistent_resource_id: Optional[str] = None
    kms_key_name: Optional[str] = None
    reduction_server_image: Optional[str] = None
    create_settle_s: float = attrs.field(default=30.0, validator=_at_least_zero)
    """After a create timed out and a retry made the job, how long to keep looking for a late
    copy made by the timed-out create (which is then cancelled)."""
    # Code and data (SPEC §7; omnidist_vertex.code_data).
    staging_bucket: Optional[str] = attrs.field(default=None, validator=data.check_gs_prefix)
    """gs://BUCKET[/PATH] where a local code folder is uploaded at submit (once per content)."""
    storage_endpoint: Optional[str] = None
    """Cloud Storage API endpoint for the code upload (private endpoints, local test servers)."""
    data_map: dict[str, str] = attrs.field(factory=dict, validator=data.check_data_map)
    """Prefix rewrites for input, output and code URIs (``{"azureml://…/" = "gs://bkt/…/"}``)."""


# --- the backend ----------------------------------------------------------------------------------


class VertexBackend(Backend):
    """Vertex AI CustomJobs: positional worker pools, per-role machines, Reduction Server.

    Submitting and following go through :class:`~omnidist_vertex.client.VertexClient`; a test
    injects ``request_id`` (the create's label) and ``sleep`` (see :class:`omnidist.backend.Backend`).
    """

    name = "vertex"
    output_format = "json"
    settings_type = VertexSettings
    client = LazyClient("omnidist_vertex.client:VertexClient")
    capabilities = Capabilities(
        roles=frozenset(RoleName),
        frameworks=frozenset(Framework),
        accelerators=frozenset(ACCELERATOR_TYPES),
        spot=True,
        infiniband=True,
        per_role_machines=True,
        env=True,
        reduction_server=True,
    )

    def compile(self, job: DistributedJob, settings: VertexSettings) -> CompiledJob:
        """Build the CustomJob REST body (camelCase, enum names). Pure."""
        from omnidist_vertex import compiler

        compiled = compiler.compile_job(job, settings or VertexSettings())
        if job.tuning is not None:  # a HyperparameterTuningJob around the CustomJob's spec
            from omnidist_vertex import tuning

            compiled = tuning.tuning_job(compiled, job.tuning)
        return compiled

    def import_native(self, request: Any) -> DistributedJob:
        """Read a CustomJob, a ``gcloud --config`` CustomJobSpec or ``--worker-pool-spec`` strings. Pure."""
        return self.import_with_notes(request)[0]

    def import_with_notes(self, request: Any) -> tuple[DistributedJob, tuple[Note, ...]]:
        """:meth:`import_native`, plus what was defaulted (a missing name or framework)."""
        from omnidist_vertex import importer, tuning

        if tuning.recognizes(request):  # a HyperparameterTuningJob
            job, notes = tuning.import_tuning_job(request, importer.spec_to_job)
        else:
            job, notes = importer.import_native(request)
        return job, tuple(notes)

    def console_url(self, job_id: str, settings: VertexSettings) -> str:
        """The Cloud Console page for ``job_id`` (a full resource name or a bare number)."""
        settings = settings or VertexSettings()
        parts = resource_name(job_id, settings)
        if parts is None:
            return ""
        project, region, number = parts
        return CONSOLE_URL.format(region=region, job=number, project=project)


_RESOURCE = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/"
                       r"(?:customJobs|hyperparameterTuningJobs)/(?P<id>[^/]+)$")


def resource_name(job_id: str, settings: VertexSettings) -> Optional[tuple[str, str, str]]:
    """``(project, region, number)`` of a job (a CustomJob or a HyperparameterTuningJob) given as
    its full name, or as a bare number completed from the settings (``None`` when there is no project to complete it with)."""
    match = _RESOURCE.match(job_id)
    if match:
        return match["project"], match["region"], match["id"]
    if "/" in job_id or not settings.project:
        return None
    return settings.project, settings.region, job_id
