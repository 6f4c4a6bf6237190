"""The legacy AI Platform Training backend: its tables, its settings, and the glue that
joins the pure compiler/importer to the SDK client.

AI Platform Training (``ml.googleapis.com/v1``) stopped taking jobs on 2025-01-31; omnidist
reads and writes its job files for migration and submits to API-compatible endpoints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Optional

import attrs

from omnidist import data
from omnidist.backend import Backend, Capabilities, CompiledJob, JobState, LazyClient, Note
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.job import DistributedJob, RoleName
from omnidist.retry import ClientSettings
from omnidist.runtime.platforms import ai_platform as platform

from omnidist_ai_platform import catalog

NAME = "ai_platform"

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

JOB_ID_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")


def _job_id(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    if value is not None and not JOB_ID_PATTERN.match(value):
        raise ValidationError(
            f"{value!r} is not a legacy job id: start with a letter, then letters, digits or '_' (max 128)",
            path=attribute.name)


def _one_of(choices: tuple[str, ...]) -> Callable[[Any, attrs.Attribute, str], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: str) -> None:
        if value not in choices:
            raise ValidationError(f"{value!r} is not one of {', '.join(choices)}", path=attribute.name)
    return check


def _machine_types(instance: Any, attribute: attrs.Attribute, value: Mapping[str, str]) -> None:
    roles = [r.value for r in RoleName]
    for role, name in value.items():
        path = f"{attribute.name}.{role}"
        if role not in roles:
            raise ValidationError(f"not a role; use one of {', '.join(roles)}", path=path)
        if catalog.MACHINES.get(name) is None:
            raise ValidationError(
                f"{name!r} is not a machine type legacy AI Platform accepted{catalog.MACHINES.suggest(name)} "
                "Known: n1-standard-4…96, n1-highmem-2…96, n1-highcpu-16…96, a2-highgpu-1g…8g, "
                "a2-megagpu-16g and the deprecated names (complex_model_m, …)", path=path)


def _uris(value: Any) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen(kw_only=True)
class AIPlatformSettings(ClientSettings):
    """Settings of the ``ai_platform`` backend (profile keys and the job's ``backends.ai_platform``).

    The retry, timeout and polling keys come from :class:`~omnidist.retry.ClientSettings`.

    Attributes:
        project: Google Cloud project id (needed to submit, not to compile).
        region: ``trainingInput.region``.
        api_endpoint: base URL of an API-compatible endpoint (or a local test server).
        credentials: ``default`` (google.auth's default chain) or ``anonymous``.
        job_id: pin the ``jobId``; else it is derived from the job name, plus a unique suffix at submit.
        machine_types: role name -> machine type, overriding the catalog's smallest fit.
        runtime_version, python_version, python_module, package_uris: a Python-package job on
            Google's runtime image instead of a custom container (``runtimeVersion`` XOR ``imageUri``).
        job_dir, service_account, network: copied to ``trainingInput``.
        use_chief_in_tf_config: write ``chief`` instead of ``master`` into TF_CONFIG; unset, it is
            on for TensorFlow jobs (TensorFlow 2 rejects ``master``) and with a Reduction Server.
        scale_tier: ``CUSTOM`` (default); other tiers only for a single CPU replica without machine types.
        enable_web_access: interactive shell access to the replicas.
        staging_bucket: gs://BUCKET[/PATH] where a local code folder is uploaded at submit.
        storage_endpoint: Cloud Storage API endpoint for that upload (local test servers).
        data_map: prefix rewrites for input, output and code URIs.
    """

    project: Optional[str] = None
    region: str = "us-central1"
    api_endpoint: Optional[str] = None
    credentials: str = attrs.field(default="default", validator=_one_of(CREDENTIALS))
    job_id: Optional[str] = attrs.field(default=None, validator=_job_id)
    machine_types: dict[str, str] = attrs.field(factory=dict, validator=_machine_types)
    runtime_version: Optional[str] = None
    python_version: Optional[str] = None
    python_module: Optional[str] = None
    package_uris: tuple[str, ...] = attrs.field(default=(), converter=_uris)
    job_dir: Optional[str] = None
    service_account: Optional[str] = None
    network: Optional[str] = None
    use_chief_in_tf_config: Optional[bool] = None
    scale_tier: str = attrs.field(default="CUSTOM", validator=_one_of(SCALE_TIERS))
    enable_web_access: bool = False
    # Code and data (SPEC §7; omnidist_ai_platform.code_data).
    staging_bucket: Optional[str] = attrs.field(default=None, validator=data.check_gs_prefix)
    storage_endpoint: Optional[str] = None
    data_map: dict[str, str] = attrs.field(factory=dict, validator=data.check_data_map)

    @property
    def package_mode(self) -> bool:
        """True for a Python-package job on a runtime version (no custom container)."""
        return bool(self.runtime_version or self.python_module or self.package_uris)


class AIPlatformBackend(Backend):
    """Legacy AI Platform Training (``ml v1``): compile, import, and submit to compatible endpoints.

    Submitting and following go through :class:`~omnidist_ai_platform.client.AIPlatformClient`; a
    test injects ``suffix`` (makes each ``jobId`` unique), ``request_id`` (the marker a submit labels
    its job with) and ``sleep`` (see :class:`omnidist.backend.Backend`).
    """

    name: ClassVar[str] = NAME
    capabilities: ClassVar[Capabilities] = Capabilities(
        roles=frozenset(RoleName),
        accelerators=frozenset(catalog.ACCELERATOR_TYPES),
        spot=False,
        infiniband=False,
        per_role_machines=True,
        env=True,  # only through the `env K=V cmd` wrapper: needs a command
        reduction_server=True,
    )
    settings_type: ClassVar[type] = AIPlatformSettings
    output_format: ClassVar[str] = "json"
    client = LazyClient("omnidist_ai_platform.client:AIPlatformClient")

    def compile(self, job: DistributedJob, settings: AIPlatformSettings) -> CompiledJob:
        """The body of ``projects.jobs.create``; pure and deterministic."""
        from omnidist_ai_platform import compiler

        compiled = compiler.compile_job(job, settings)
        if job.tuning is not None:  # the same body, with trainingInput.hyperparameters
            from omnidist_ai_platform import tuning

            compiled = tuning.with_hyperparameters(compiled, job.tuning)
        return compiled

    def import_native(self, request: Mapping[str, Any]) -> DistributedJob:
        """A portable job from a create body or a ``trainingInput`` config.

        The notes on what did not carry over exactly come from :meth:`import_with_notes`.
        """
        from omnidist_ai_platform import importer

        return importer.import_with_notes(request)[0]

    def import_with_notes(self, request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
        """The imported job and the notes on what did not carry over exactly (``migrate`` reads them)."""
        from omnidist_ai_platform import importer

        return importer.import_with_notes(request)

    def console_url(self, job_id: str, settings: AIPlatformSettings) -> str:
        """The legacy console page of the job."""
        return CONSOLE_URL.format(job_id=job_id, project=settings.project or "")

    def machine_alias(self, name: str) -> Optional[str]:
        """The Compute Engine machine a deprecated legacy name (``large_model``) stands for."""
        return catalog.compute_engine_name(name)


def refuse_tuning_submit(compiled: CompiledJob) -> None:
    """Tuning jobs compile and run locally; creating them on AI Platform is not wired up yet."""
    if "hyperparameters" in compiled.request.get("trainingInput", {}):
        raise UnsupportedFeatureError(
            "tuning", NAME, "submitting tuning jobs is not supported yet: a job with a tuning block compiles to "
            "trainingInput.hyperparameters (omnidist compile) and runs its trials locally (omnidist run), but "
            "omnidist does not create it on AI Platform.",
            "Run the trials locally with omnidist run, or create the compiled job yourself "
            "(omnidist compile JOB --backend ai_platform > job.json).")
