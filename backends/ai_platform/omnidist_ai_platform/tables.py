"""Where legacy AI Platform differs: ``trainingInput`` prefixes, states, scale tiers, refusals, its
files (machines and GPUs: :mod:`.catalog`); sorted tables, inverses derived, imported by the rest."""

from __future__ import annotations

import re

from omnidist.kit import Billing, Feature, JobState, Refusal, RoleName, lazy_pattern
from omnidist.runtime.platforms import ai_platform as platform

NAME = platform.NAME
"""The backend's name (entry point, ``backends.ai_platform`` block, runtime platform)."""

ROLE_PREFIXES: dict[RoleName, str] = {role: platform.FIELD_PREFIXES[role.singular] for role in sorted(RoleName)}
"""Role -> the prefix of its ``trainingInput`` fields (``<prefix>Type/Count/Config``); reducers
take the parameter-server slot: the platform's own table
(:data:`omnidist.runtime.platforms.ai_platform.FIELD_PREFIXES`), beside the task type each slot
gets in ``CLUSTER_SPEC``."""

ROLES_BY_PREFIX: dict[str, RoleName] = {
    prefix: role for role, prefix in ROLE_PREFIXES.items() if role is not RoleName.REDUCTION_SERVERS
}
"""``trainingInput`` prefix -> role (derived; a parameter-server slot holding reducers is told
apart by its image, see :data:`REDUCER_IMAGE`)."""

JOB_STATES: dict[str, JobState] = {
    "CANCELLED": JobState.CANCELLED,
    "CANCELLING": JobState.CANCELLING,
    "FAILED": JobState.FAILED,
    "PREPARING": JobState.PENDING,
    "QUEUED": JobState.QUEUED,
    "RUNNING": JobState.RUNNING,
    "STATE_UNSPECIFIED": JobState.UNKNOWN,
    "SUCCEEDED": JobState.SUCCEEDED,
}
"""Native ``Job.state`` -> portable state."""

REDUCER_IMAGE = "gcr.io/cloud-ml-service-private/reductionserver:latest"
"""The Reduction Server image on legacy AI Platform (from a public sample; *unconfirmed* beyond it)."""

SCALE_TIERS: tuple[str, ...] = ("BASIC", "BASIC_GPU", "BASIC_TPU", "CUSTOM", "PREMIUM_1", "STANDARD_1")
"""``trainingInput.scaleTier`` values (ml v1 discovery document)."""

CREDENTIALS: tuple[str, ...] = ("anonymous", "default")
"""``credentials`` setting values: the google.auth default chain, or none (local endpoints)."""

CONSOLE_URL = "https://console.cloud.google.com/ai-platform/jobs/{job_id}?project={project}"
"""Where the legacy console showed a job."""

JOB_ID_PATTERN = lazy_pattern(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
"""What a legacy ``jobId`` may be."""

NATIVE_KEYS = frozenset({"masterConfig", "masterType", "parameterServerType", "scaleTier", "trainingInput"})
"""Top-level keys of the files legacy AI Platform reads: a create body, a ``gcloud --config``
file, a bare ``trainingInput``."""

GCLOUD_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("ai-platform", "jobs", "submit", "training"),
    ("ml-engine", "jobs", "submit", "training"),
)
"""``gcloud`` commands (after the release track) that submit a legacy training job."""

NATIVE_FORMATS: tuple[str, ...] = (
    "a legacy create body or gcloud --config file ({trainingInput: …}), or a bare trainingInput",
    "a `gcloud ai-platform jobs submit training JOB …` command line",
)
"""The native forms the importer reads (listed when a file's format cannot be told)."""

REFUSALS: dict[Feature, Refusal] = {
    Feature.ACCELERATOR: Refusal(
        subject="accelerator {kind}",
        message="legacy AI Platform Training never offered {kind} (its GPUs: {offered}; A100 means 40 GB).",
        hint="Compile for Vertex AI instead: --backend vertex."),
    Feature.INFINIBAND: Refusal(subject="interconnect infiniband", message="Google Cloud machines have no InfiniBand.",
                                hint="Set interconnect: any, or use --backend azure_ml."),
    Feature.SPOT: Refusal(message="legacy AI Platform Training had no preemptible capacity for training.",
                          hint="Set spot: false, or use --backend vertex."),
}
"""Feature -> how legacy AI Platform refuses a job that uses it."""

LEFT_BEHIND: dict[str, str] = {
    "job_dir": "legacy passed it to the program as --job-dir; add that to args if the code reads it",
    "package_uris": "the Python package is not installed by the target: the image must contain it",
    "python_module": "the target runs the image's command, not a Python module",
    "python_version": "the image decides the Python version",
    "runtime_version": "Google's runtime image is not carried: the job runs its own image",
}
"""Setting -> why a job moved to another backend loses meaning without it."""


SHORTAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy_pattern(r"quota failure for project|exceeds the allowed maximum of", re.I), "quota"),
)
"""Legacy AI Platform's words for a shortage (a placement moves on): "Quota failure for project … The
request for 1 K80 accelerators exceeds the allowed maximum of 0 A100, 0 K80, …" at job creation. No
capacity refusal of its own is documented; the template's reading covers the common words.
Sources: docs/placement.md."""


def shortage_named(text: str) -> str | None:
    """``quota`` when ``text`` is one of :data:`SHORTAGES`, else ``None``."""
    return next((kind for pattern, kind in SHORTAGES if pattern.search(text or "")), None)


SERVICE = "ai_platform_training"
"""The price list legacy AI Platform Training bills from."""

BILLING = Billing(
    prices="vertex_ai", gpus_apart=True,
    rule="legacy AI Platform Training bills the Vertex AI custom-training prices (Vertex AI pricing page: "
         "the same except for prediction machine types)")
"""How it bills (its :attr:`Backend.billing <omnidist.kit.Backend.billing>`; the rows are its vendor kit's)."""
