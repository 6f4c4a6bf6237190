"""The legacy AI Platform Training backend: its tables, its settings, and the glue that
joins the pure compiler/importer to the SDK client.

AI Platform Training (``ml.googleapis.com/v1``) stopped taking jobs on 2025-01-31; omnidist
reads and writes its job files for migration and submits to API-compatible endpoints.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Optional

import attrs

from omnidist.backend import Backend, Capabilities, CompiledJob, JobHandle, JobState, JobStatus, Note
from omnidist.errors import ValidationError
from omnidist.job import DistributedJob, RoleName
from omnidist.retry import ClientSettings

from omnidist_ai_platform import catalog

NAME = "ai_platform"

ROLE_PREFIXES: dict[RoleName, str] = {
    RoleName.EVALUATORS: "evaluator",
    RoleName.PARAMETER_SERVERS: "parameterServer",
    RoleName.PRIMARY: "master",
    RoleName.REDUCTION_SERVERS: "parameterServer",
    RoleName.WORKERS: "worker",
}
"""Role -> the prefix of its ``trainingInput`` fields (``<prefix>Type/Count/Config``); reducers
take the parameter-server slot."""

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
        use_chief_in_tf_config: write ``chief`` instead of ``master`` into TF_CONFIG.
        scale_tier: ``CUSTOM`` (default); other tiers only for a single CPU replica without machine types.
        enable_web_access: interactive shell access to the replicas.
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
    use_chief_in_tf_config: bool = False
    scale_tier: str = attrs.field(default="CUSTOM", validator=_one_of(SCALE_TIERS))
    enable_web_access: bool = False

    @property
    def package_mode(self) -> bool:
        """True for a Python-package job on a runtime version (no custom container)."""
        return bool(self.runtime_version or self.python_module or self.package_uris)


def default_suffix() -> str:
    """A unique ``jobId`` suffix: UTC time plus 6 random hex digits (``20250131_120000_a1b2c3``)."""
    return f"{time.strftime('%Y%m%d_%H%M%S', time.gmtime())}_{secrets.token_hex(3)}"


class AIPlatformBackend(Backend):
    """Legacy AI Platform Training (``ml v1``): compile, import, and submit to compatible endpoints.

    Args:
        suffix: makes submitted ``jobId``s unique (injectable for tests).
        sleep: the retry policy's sleep (injectable for tests).
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

    def __init__(self, *, suffix: Callable[[], str] = default_suffix,
                 sleep: Optional[Callable[[float], None]] = None) -> None:
        self._suffix, self._sleep = suffix, sleep

    def compile(self, job: DistributedJob, settings: AIPlatformSettings) -> CompiledJob:
        """The body of ``projects.jobs.create``; pure and deterministic."""
        from omnidist_ai_platform import compiler

        return compiler.compile_job(job, settings)

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

    def submit(self, compiled: CompiledJob, settings: AIPlatformSettings) -> JobHandle:
        """Create the job (a unique ``jobId`` suffix unless pinned; retried creates never duplicate)."""
        from omnidist_ai_platform import client

        body = dict(compiled.request)
        if settings.job_id is None:
            body["jobId"] = f"{body['jobId']}_{self._suffix()}"
        job = client.create(body, settings, pinned=settings.job_id is not None, sleep=self._sleep)
        job_id = job.get("jobId", body["jobId"])
        return JobHandle(backend=NAME, id=job_id, url=self.console_url(job_id, settings),
                         settings=settings, driver=self)

    def status(self, job_id: str, settings: AIPlatformSettings) -> JobStatus:
        """The job's state, mapped through :data:`JOB_STATES`."""
        from omnidist_ai_platform import client

        return status_of(client.get(job_id, settings, sleep=self._sleep))

    def logs(self, job_id: str, settings: AIPlatformSettings, follow: bool = False) -> Iterator[str]:
        """The console URL and the job's state (changes, with ``follow``). Legacy jobs logged to
        Cloud Logging, which this backend does not read: open the console URL for the log lines."""
        yield f"logs: {self.console_url(job_id, settings)} (Cloud Logging is not read by this backend)"
        last = None
        while True:
            status = self.status(job_id, settings)
            if status.native_state != last:
                last = status.native_state
                message = f" — {status.message}" if status.message else ""
                yield f"job state: {status.native_state}{message}"
            if not follow or status.state.terminal:
                return
            (self._sleep or time.sleep)(settings.poll_interval_s)

    def cancel(self, job_id: str, settings: AIPlatformSettings) -> None:
        """Request cancellation; a no-op when the job already ended."""
        from omnidist_ai_platform import client

        client.cancel(job_id, settings, sleep=self._sleep)

    def console_url(self, job_id: str, settings: AIPlatformSettings) -> str:
        """The legacy console page of the job."""
        return CONSOLE_URL.format(job_id=job_id, project=settings.project or "")

    def machine_alias(self, name: str) -> Optional[str]:
        """The Compute Engine machine a deprecated legacy name (``large_model``) stands for."""
        return catalog.compute_engine_name(name)


def status_of(job: Mapping[str, Any]) -> JobStatus:
    """A :class:`JobStatus` from a native ``Job`` resource."""
    native = str(job.get("state") or "STATE_UNSPECIFIED")
    return JobStatus(state=JOB_STATES.get(native, JobState.UNKNOWN), native_state=native,
                     message=str(job.get("errorMessage") or ""))
