"""Where Vertex AI differs: accelerator and enum names, worker-pool positions, states, images;
sorted tables, inverses derived (so compiler and importer cannot drift), imported by the rest."""

from __future__ import annotations

import re
from typing import Any, Optional

from omnidist.kit import Billing, Feature, JobState, Refusal, RoleName, lazy_pattern
from omnidist.runtime.platforms import vertex as platform
from omnidist_google.compute_engine import COMPUTE_ENGINE_ACCELERATORS

NAME = platform.NAME
"""The backend's name (entry point, ``backends.vertex`` block, runtime platform)."""

ACCELERATOR_TYPES: dict[str, str] = dict(COMPUTE_ENGINE_ACCELERATORS)
"""Portable accelerator -> Vertex ``acceleratorType`` name: Compute Engine's, every one of them."""

PORTABLE_ACCELERATORS: dict[str, str] = {v: k for k, v in ACCELERATOR_TYPES.items()}
"""Vertex ``acceleratorType`` name -> portable accelerator (derived)."""

TPU_MACHINE = "cloud-tpu"
"""The ``machineType`` of a TPU v2 or v3 pool (its ``acceleratorType`` and count say which and how
many cores: "cloud-tpu + TPU_V2 + 8", Vertex's TPU table)."""

CLOUD_TPU_ACCELERATORS: dict[str, str] = {"TPU-V2": "TPU_V2", "TPU-V3": "TPU_V3"}
"""Portable TPU on the ``cloud-tpu`` machine -> its ``acceleratorType`` (TPU v5e and v6e are named
by their TPU VM machine type instead, :data:`omnidist_google.tpu.TPU_HOSTS`, with ``tpuTopology``)."""

PORTABLE_CLOUD_TPUS: dict[str, str] = {v: k for k, v in CLOUD_TPU_ACCELERATORS.items()}
"""``acceleratorType`` of a ``cloud-tpu`` pool -> portable TPU (derived)."""

TPU_VM_ACCELERATORS: frozenset[str] = frozenset({"TPU-V5E", "TPU-V6E"})
"""The portable TPUs Vertex custom training runs on TPU VMs (its TPU table lists v5e, v6e and
TPU7x machine types; TPU v4 and v5p hosts, which GKE runs, are not in it)."""

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
"""``AcceleratorType`` values without a portable GPU name -> number: read by import (a retired GPU
is replaced, ``TPU_V2``/``TPU_V3`` on ``cloud-tpu`` are TPU v2/v3 slices, ``TPU_V5_LITEPOD`` beside a
v5e machine says what the machine says; ``TPU_V4_POD`` has no portable name), written only for
TPU v2/v3 pools."""

RETIRED_ACCELERATORS: dict[str, str] = {"NVIDIA_TESLA_K80": "K80"}
"""``AcceleratorType`` of a GPU no cloud sells any more -> its model (see
``omnidist.compiler.delowering.RETIRED_GPUS``)."""

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

REDUCTION_SERVER_IMAGE = lazy_pattern(r"(^|/)reductionserver(:|@|$)")
"""How an importer recognises a Reduction Server pool: the image is named ``reductionserver``."""

BOOT_DISK_TYPES = ("hyperdisk-balanced", "pd-ssd", "pd-standard")
"""``diskSpec.bootDiskType`` values Vertex accepts."""

DEFAULT_REGION = "us-central1"
"""Where jobs go when neither the profile nor the job names a region."""

CONSOLE_URL = (
    "https://console.cloud.google.com/agent-platform/locations/{region}/training/{job}?project={project}"
)
"""The Cloud Console page of a custom job (the form the installed aiplatform SDK prints)."""


def multi_region(region: str) -> str:
    """The Artifact Registry multi-region nearest ``region`` (``us`` when the prefix is unknown)."""
    return next((multi for prefix, multi in MULTI_REGION_BY_PREFIX.items() if region.startswith(prefix)), "us")


def reduction_server_image(region: str) -> str:
    """The Reduction Server image nearest ``region``."""
    return REDUCTION_SERVER_IMAGES[multi_region(region)]


NATIVE_KEYS = frozenset({"jobSpec", "job_spec", "studySpec", "study_spec", "trialJobSpec", "trial_job_spec",
                         "workerPoolSpecs", "worker_pool_specs"})
"""Top-level keys of the files Vertex reads (JSON and protobuf names): a CustomJob, a CustomJobSpec
(``gcloud --config``), a HyperparameterTuningJob, ``--worker-pool-spec`` flags as a mapping."""

GCLOUD_COMMANDS: tuple[tuple[str, ...], ...] = (("ai", "custom-jobs", "create"), ("ai", "hp-tuning-jobs", "create"))
"""``gcloud`` commands (after the release track) that create a Vertex training job."""

NATIVE_FORMATS: tuple[str, ...] = (
    "a CustomJob (displayName + jobSpec), a CustomJobSpec (workerPoolSpecs) or a HyperparameterTuningJob "
    "(trialJobSpec), in JSON or protobuf field names (job_spec, worker_pool_specs…)",
    "{worker_pool_specs: [--worker-pool-spec strings]} or a `gcloud ai custom-jobs create …` command line",
)
"""The native forms the importer reads (listed when a file's format cannot be told)."""

REFUSALS: dict[Feature, Refusal] = {
    Feature.INFINIBAND: Refusal(
        subject="interconnect: infiniband",
        message="Google Cloud has no InfiniBand; the closest is GPUDirect RDMA, which only a3-ultragpu-8g (8×H200) "
                "and a4-highgpu-8g (8×B200) have, and {role} {why}.",
        hint="Use accelerator H200:8 or B200:8 for RDMA, or set interconnect: any."),
}
"""Feature -> how Vertex refuses it where it cannot express it (InfiniBand: on most machines)."""


_RESOURCE = lazy_pattern(r"^projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/"
                       r"(?:customJobs|hyperparameterTuningJobs)/(?P<id>[^/]+)$")


def resource_name(job_id: str, settings: Any) -> Optional[tuple[str, str, str]]:
    """``(project, region, number)`` of a job (a CustomJob or a HyperparameterTuningJob) given as
    its full name, or as a bare number completed from the settings' ``project`` and ``region``
    (``None`` when there is no project to complete it with)."""
    match = _RESOURCE.match(job_id)
    if match:
        return match["project"], match["region"], match["id"]
    if "/" in job_id or not settings.project:
        return None
    return settings.project, settings.region, job_id


SHORTAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy_pattern(r"quota metrics exceed quota limits", re.I), "quota"),
    (lazy_pattern(r"resources are insufficient in region", re.I), "capacity"),
)
"""Vertex AI's words for a shortage (a placement moves on): the GPU quota refusal, at create (HTTP 429
``RESOURCE_EXHAUSTED``) or as a failed job (code 8), "The following quota metrics exceed quota limits:
aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"; and the stock-out of a region,
"Resources are insufficient in region: us-central1". A 429 about requests per minute is a rate limit,
retried in place. Sources: docs/placement.md."""


def shortage_named(text: str) -> str | None:
    """``quota`` or ``capacity`` when ``text`` is one of :data:`SHORTAGES`, else ``None``."""
    return next((kind for pattern, kind in SHORTAGES if pattern.search(text or "")), None)


CAPACITY_CODE = 8
"""``google.rpc.Code`` RESOURCE_EXHAUSTED: a failed job's ``error.code`` when the region had no capacity."""

SERVICE = "vertex_ai"
"""The price list Vertex AI custom training bills from."""

BILLING = Billing(
    prices="vertex_ai", gpus_apart=True,
    rule="Vertex AI custom training bills its own machine and accelerator SKUs, above Compute Engine's "
         "(about 15 % on the one pair the sources compare); a management fee SKU is billed apart")
"""How it bills (its :attr:`Backend.billing <omnidist.kit.Backend.billing>`; the rows are its vendor kit's)."""
