"""Talking to Vertex AI through ``google.cloud.aiplatform_v1`` (imported lazily, here only).

:class:`VertexClient` is the protocol of :class:`omnidist.submission.clients.Client`; the template retries,
creates exactly once, cancels unless finished and masks. Every SDK call runs with the SDK's own
retries off (``retry=None``) and the request timeout. Vertex lets the client choose no job id, so
a create carries a request-id label (:attr:`~omnidist.submission.clients.Idempotency.LABEL`): a create whose
answer was lost or was a 5xx is found by it before any retry, and one that timed out while the
server kept working is waited for and its duplicate cancelled. The values of secret-looking variables in a job's
``containerSpec.env`` are masked wherever Vertex repeats them.

A job with a ``tuning`` block is a ``HyperparameterTuningJob``: the same protocol runs over the
tuning-job calls of the ``JobServiceClient`` (:data:`KINDS`: which calls, by the request's or the
job name's collection), and its status carries the trials (:func:`omnidist_vertex.tuning.trials_of`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional

import attrs

from omnidist.kit import (
    REQUEST_ID_LABEL,
    AuthenticationError,
    BackendError,
    ConfigError,
    Ending,
    Idempotency,
    InvalidRequestError,
    JobState,
    JobStatus,
    Keyed,
    LogPage,
    LogStart,
    ReadsLogs,
    ReportsShortage,
    Shortage,
    ShortageError,
    StagesCode,
    TransientBackendError,
    ValidationError,
    classify_ending,
    error_for_status,
    labelled,
    parse_retry_after,
    secret_values,
)
from omnidist_google.endings import FAILURE_ENDINGS
from omnidist_google.google_cloud import google_credentials, stage_code, storage_media_error
from omnidist_vertex.settings import VertexSettings
from omnidist_vertex.tables import CAPACITY_CODE, JOB_STATES, resource_name, shortage_named

if TYPE_CHECKING:
    from omnidist.kit import CompiledJob

BACKEND = "vertex"


# --- the SDK client --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _client(endpoint: str, credentials: str) -> Any:
    from google.api_core.client_options import ClientOptions

    from omnidist_vertex.sdk import aiplatform_v1

    return aiplatform_v1.JobServiceClient(
        credentials=google_credentials(credentials, BACKEND),
        transport="rest",
        client_options=ClientOptions(api_endpoint=endpoint),
    )


def client_for(settings: VertexSettings, region: str) -> Any:
    """A REST ``JobServiceClient`` for the region's endpoint (or ``api_endpoint``)."""
    return _client(settings.api_endpoint or f"{region}-aiplatform.googleapis.com", settings.credentials)


def _server_message(exc: Any) -> str:
    response = getattr(exc, "response", None)
    try:
        return response.json()["error"]["message"]
    except Exception:  # not JSON, or no error envelope: fall back to the SDK's text
        return getattr(exc, "message", None) or str(exc)


@attrs.frozen
class Kind:
    """One collection of Vertex jobs: its REST name, its message, and the ``JobServiceClient``
    calls (``create_<verb>``, ``get_<verb>``, ``list_<verb>s``, ``cancel_<verb>``)."""

    collection: str
    message: str
    verb: str


KINDS: dict[str, Kind] = {
    "customJobs": Kind("customJobs", "CustomJob", "custom_job"),
    "hyperparameterTuningJobs": Kind("hyperparameterTuningJobs", "HyperparameterTuningJob",
                                     "hyperparameter_tuning_job"),
}
"""Collection -> the calls that create and follow its jobs (a bare job number is a CustomJob's)."""

KIND_OF_MESSAGE: dict[str, Kind] = {kind.message: kind for kind in KINDS.values()}
"""Message name -> its collection (derived)."""

CUSTOM_JOBS, TUNING_JOBS = KINDS["customJobs"], KINDS["hyperparameterTuningJobs"]


def job_name(job_id: str, settings: VertexSettings) -> tuple[str, str, Kind]:
    """``(projects/P/locations/R/COLLECTION/N, R, kind)`` for a full name of a CustomJob or a
    HyperparameterTuningJob, or a CustomJob's number completed from the settings.

    Raises:
        ValidationError: neither.
    """
    parts = resource_name(job_id, settings)
    if parts is None:
        raise ValidationError(
            f"{job_id!r} is not a Vertex job: give projects/P/locations/R/customJobs/N (or "
            "…/hyperparameterTuningJobs/N), or a CustomJob's number N with a project in the profile",
            path="job_id",
        )
    project, region, number = parts
    kind = KINDS[job_id.split("/")[-2]] if "/" in job_id else CUSTOM_JOBS
    return f"projects/{project}/locations/{region}/{kind.collection}/{number}", region, kind


# --- the protocol -----------------------------------------------------------------------------------


class VertexClient(StagesCode[Any], ReportsShortage[Any], ReadsLogs[Any]):
    """CustomJobs and HyperparameterTuningJobs through a REST ``JobServiceClient``; native jobs are
    ``aiplatform_v1.CustomJob`` or ``aiplatform_v1.HyperparameterTuningJob`` messages."""

    idempotency = Idempotency.LABEL
    _reading_entries = False
    """Whether this client's logs are Cloud Logging entries (then state changes are not shown)."""

    def translate(self, exc: BaseException) -> Optional[BackendError]:
        """API errors by status (with the server's message and ``Retry-After``), transport and
        auth transport failures as transient, other auth failures as authentication errors."""
        import requests
        from google.api_core import exceptions as api_exceptions
        from google.auth import exceptions as auth_exceptions

        if isinstance(exc, api_exceptions.GoogleAPICallError):
            status = exc.code if isinstance(exc.code, int) else None
            response = getattr(exc, "response", None)
            headers = response.headers if response is not None else {}
            return error_for_status(status)(_server_message(exc), backend=BACKEND, status=status,
                                            retry_after=parse_retry_after(headers.get("Retry-After")))
        if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout,
                            requests.exceptions.ChunkedEncodingError, auth_exceptions.TransportError)):
            return TransientBackendError(f"connection failed: {exc}", backend=BACKEND)
        if isinstance(exc, auth_exceptions.GoogleAuthError):
            return AuthenticationError(str(exc), backend=BACKEND)
        return None

    def shortage(self, exc: BaseException, error: BackendError) -> Optional[Shortage]:
        """A GPU quota refusal (a 429 ``RESOURCE_EXHAUSTED`` naming quota metrics, not a request rate)
        or a region's stock-out (:data:`~omnidist_vertex.tables.SHORTAGES`), else the template's reading."""
        found = shortage_named(error.detail) if error.retry_after is None else None
        return Shortage(found) if found else super().shortage(exc, error)

    def queued_shortage(self, job_id: str, status: JobStatus) -> Optional[ShortageError]:
        """A job that failed with a quota refusal (code 8) or "Resources are insufficient in region"."""
        if status.state is JobState.FAILED and (found := shortage_named(status.message)):
            return self.shortage_error(found, status.message)
        return super().queued_shortage(job_id, status)

    def timed_out(self, exc: BaseException) -> bool:
        """A read timeout: the client stopped waiting, the server may still make the job."""
        import requests

        return isinstance(exc, requests.exceptions.ReadTimeout)

    @property
    def settle_s(self) -> float:
        """The ``create_settle_s`` setting."""
        return self.settings.create_settle_s

    def prepare(self, compiled: CompiledJob) -> CompiledJob:
        """Upload a local code folder to the staging bucket (once per content).

        Raises:
            ConfigError: no project to create the job in.
        """
        if not self.settings.project:
            raise ConfigError('vertex: no project; set project = "…" in the profile or the job\'s '
                              "backends.vertex block")
        request = stage_code(compiled, self, google_credentials(self.settings.credentials, BACKEND),
                                     lambda exc: self.translate(exc) or storage_media_error(exc, BACKEND))
        return attrs.evolve(compiled, request=request)

    def keyed(self, compiled: CompiledJob) -> Keyed:
        """The ``CustomJob`` message (a ``HyperparameterTuningJob`` for a job with a ``tuning``
        block), labelled with a fresh request id."""
        from omnidist_vertex import tuning
        from omnidist_vertex.sdk import aiplatform_v1

        kind = TUNING_JOBS if tuning.recognizes(compiled.request) else CUSTOM_JOBS
        key = self.request_id()
        try:
            message = getattr(aiplatform_v1, kind.message).from_json(json.dumps(labelled(compiled.request, key)))
        except Exception as exc:  # json_format.ParseError and friends: the request is not of its kind
            raise InvalidRequestError(f"the request is not a valid {kind.message}: {exc}",
                                      backend=BACKEND) from exc
        return Keyed(request=message, key=key)

    @property
    def _parent(self) -> str:
        return f"projects/{self.settings.project}/locations/{self.settings.region}"

    def _call(self, verb: str, kind: Kind, region: str, **kwargs: Any) -> Any:
        """One ``JobServiceClient`` call (``create_custom_job`` …) with the SDK's retries off."""
        method = getattr(client_for(self.settings, region), verb.format(kind.verb))
        return method(**kwargs, retry=None, timeout=self.settings.request_timeout_s)

    def create_job(self, keyed: Keyed) -> Any:
        """``create_custom_job`` (``create_hyperparameter_tuning_job``) in the settings' region."""
        kind = KIND_OF_MESSAGE[type(keyed.request).__name__]
        return self._call("create_{}", kind, self.settings.region, parent=self._parent,
                          **{kind.verb: keyed.request})

    def find_jobs(self, keyed: Keyed) -> list[Any]:
        """Every job of the request's kind carrying the request id, earliest created first (ties
        broken by name)."""
        kind = KIND_OF_MESSAGE[type(keyed.request).__name__]
        pager = self._call("list_{}s", kind, self.settings.region, request={
            "parent": self._parent, "filter": f'labels.{REQUEST_ID_LABEL}="{keyed.key}"'})
        # The label is checked again: a filter the server ignored must not fool us.
        jobs = [job for job in pager if job.labels.get(REQUEST_ID_LABEL) == keyed.key]
        return sorted(jobs, key=lambda job: (job.create_time.timestamp() if job.create_time else 0.0,
                                             job.name))

    def get_job(self, job_id: str) -> Any:
        """``get_custom_job`` or ``get_hyperparameter_tuning_job``, by the name's collection (a
        number is a CustomJob's in the settings' project and region)."""
        name, region, kind = job_name(job_id, self.settings)
        return self._call("get_{}", kind, region, name=name)

    def cancel_job(self, job_id: str) -> None:
        """``cancel_custom_job`` or ``cancel_hyperparameter_tuning_job``."""
        name, region, kind = job_name(job_id, self.settings)
        self._call("cancel_{}", kind, region, name=name)

    def status_of(self, job: Any) -> JobStatus:
        """The state through :data:`~omnidist_vertex.tables.JOB_STATES`, with its error message;
        a tuning job's trials and best trial (:func:`omnidist_vertex.tuning.trials_of`)."""
        native = getattr(job.state, "name", str(job.state))
        message = job.error.message if job.error and job.error.message else ""
        status = JobStatus(state=JOB_STATES.get(native, JobState.UNKNOWN), native_state=native,
                           message=message)
        if KIND_OF_MESSAGE.get(type(job).__name__) is not TUNING_JOBS:
            return status
        from omnidist_vertex import tuning

        rest = type(job).to_dict(job, use_integers_for_enums=False, preserving_proto_field_name=False)
        metric, trials, best = tuning.trials_of(rest)
        return attrs.evolve(status, metric=metric, trials=trials, best=best)

    def ending_of(self, job: Any, status: JobStatus) -> Optional[Ending]:
        """A failed job's ``error``: code 8 (RESOURCE_EXHAUSTED) is capacity; its message says
        preempted, no capacity or an internal error (:data:`~omnidist_google.endings.FAILURE_ENDINGS`);
        else the portable state."""
        if status.state is JobState.FAILED and job.error and job.error.code == CAPACITY_CODE:
            return Ending.CAPACITY
        return classify_ending(status, FAILURE_ENDINGS)

    def secrets_of(self, job: Any) -> frozenset[str]:
        """The values of the secret-looking variables the job's pools get."""
        return secret_values(type(job).to_dict(job))

    def id_of(self, keyed: Keyed, job: Any) -> str:
        """The job's resource name."""
        return job.name

    # --- logs: Cloud Logging entries when google-cloud-logging is installed, else states ---------

    def open_logs(self, job_id: str) -> LogStart:
        """The console URL; then Cloud Logging (optional) or a hint to install it."""
        url = self.backend.console_url(job_id, self.settings)
        header = (f"console: {url}",) if url else ()
        try:
            from google.cloud import logging as cloud_logging  # type: ignore[attr-defined]  # optional dependency
        except ImportError:
            hint = "(install google-cloud-logging to stream this job's logs here)"
            return LogStart(header=(*header, hint))
        self._reading_entries = True
        secrets = self.secrets_of(self.call(lambda: self.get_job(job_id)))
        try:
            entries = _Entries.open(cloud_logging, job_id, self.settings)
        except Exception as exc:  # Cloud Logging is best effort: the job itself is unaffected
            return LogStart(header=(*header, f"(cannot read Cloud Logging: {exc})"), secrets=secrets,
                            cursor=_UNREADABLE)
        return LogStart(header=header, secrets=secrets, cursor=entries)

    def read_logs(self, job_id: str, cursor: Any, *, follow: bool) -> LogPage:
        """Without Cloud Logging: the job's state, and only with ``follow``. With it: the new
        entries (the state, read first with ``follow``, says when to stop; it is not shown)."""
        if cursor is None:
            return super().read_logs(job_id, cursor, follow=follow) if follow else LogPage(last=True)
        if cursor is _UNREADABLE:
            return LogPage(last=True)
        status = self.status(job_id) if follow else None
        try:
            lines = tuple(cursor.new())
        except BackendError:
            raise
        except Exception as exc:  # Cloud Logging is best effort: the job itself is unaffected
            return LogPage(lines=(f"(cannot read Cloud Logging: {exc})",), last=True)
        return LogPage(status=status, lines=lines, cursor=cursor, last=not follow)

    def state_line(self, job_id: str, status: JobStatus) -> str:
        """``state: running`` (with a failed job's message); none between Cloud Logging entries."""
        return "" if self._reading_entries else super().state_line(job_id, status)


_UNREADABLE = object()
"""The cursor of logs whose Cloud Logging client could not be made: nothing more is read."""


@attrs.define
class _Entries:
    """Where reading a job's Cloud Logging entries stands: the query, and the entries seen."""

    client: Any
    module: Any
    query: str
    seen: set[str] = attrs.field(factory=set)

    @classmethod
    def open(cls, cloud_logging: Any, job_id: str, settings: VertexSettings) -> _Entries:
        """A reader of the job's entries (``ml_job`` resources labelled with its number)."""
        name, _, _ = job_name(job_id, settings)
        project, number = name.split("/")[1], name.rsplit("/", 1)[1]
        client = cloud_logging.Client(project=project, credentials=google_credentials(settings.credentials, BACKEND))
        return cls(client, cloud_logging, f'resource.type="ml_job" AND resource.labels.job_id="{number}"')

    def new(self) -> Iterator[str]:
        """The entries not seen before, oldest first, as text."""
        for entry in self.client.list_entries(filter_=self.query, order_by=self.module.ASCENDING):
            key = entry.insert_id or str(entry.timestamp)
            if key not in self.seen:
                self.seen.add(key)
                payload = entry.payload
                yield (payload.get("message", json.dumps(payload)) if isinstance(payload, dict)
                       else str(payload))
