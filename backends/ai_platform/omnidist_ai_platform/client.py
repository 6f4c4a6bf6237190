"""The ``ml v1`` client: googleapiclient with its bundled discovery document, imported lazily.

:class:`AIPlatformClient` is the protocol of :class:`omnidist.submission.clients.Client`; the template
retries, creates exactly once, cancels unless finished and masks. Every request runs once per
attempt (``execute(num_retries=0)``: the SDK's own retries are off). A create is made safe to
repeat by its client-chosen ``jobId`` and a request marker in its labels
(:attr:`~omnidist.submission.clients.Idempotency.CHOSEN_ID`): a 409 means the ``jobId`` is taken, and when
the job holding it carries this submit's marker, an earlier attempt made it. A tuning job is an
ordinary job with ``trainingInput.hyperparameters``; its status carries ``trainingOutput.trials``. That earlier attempt
may be one omnidist never saw fail: httplib2 itself re-sends a request once, without telling its
caller, when the server closes the connection without answering (a stale keep-alive connection to
httplib2, but also a create that was done when the connection dropped).
"""

from __future__ import annotations

import functools
import http.client
import json
import secrets
import socket
import time
from typing import TYPE_CHECKING, Any, Optional

import attrs

from omnidist.kit import (
    REQUEST_ID_LABEL,
    AuthenticationError,
    BackendError,
    ConfigError,
    ConflictError,
    Ending,
    Idempotency,
    JobState,
    JobStatus,
    Keyed,
    LogStart,
    ReadsLogs,
    ReportsShortage,
    Shortage,
    StagesCode,
    TransientBackendError,
    classify_ending,
    error_for_status,
    labelled,
    parse_retry_after,
)
from omnidist_ai_platform.settings import AIPlatformSettings
from omnidist_ai_platform.tables import JOB_STATES, NAME, shortage_named
from omnidist_google.endings import FAILURE_ENDINGS
from omnidist_google.google_cloud import google_credentials, stage_code, translate_storage_error

if TYPE_CHECKING:
    from omnidist.kit import CompiledJob

def default_suffix() -> str:
    """A unique ``jobId`` suffix: UTC time plus 6 random hex digits (``20250131_120000_a1b2c3``)."""
    return f"{time.strftime('%Y%m%d_%H%M%S', time.gmtime())}_{secrets.token_hex(3)}"


def credentials(settings: AIPlatformSettings) -> Any:
    """google.auth credentials: the default chain, or anonymous (local and compatible endpoints)."""
    return google_credentials(settings.credentials, NAME)


def jobs(settings: AIPlatformSettings) -> Any:
    """The ``projects.jobs`` collection of a discovery client built offline from the bundled document."""
    import httplib2
    from google_auth_httplib2 import AuthorizedHttp
    from googleapiclient.discovery import build

    options = {"api_endpoint": settings.api_endpoint} if settings.api_endpoint else None
    # build() would make an Http with a 60 s timeout; ours honours request_timeout_s.
    authorized = AuthorizedHttp(credentials(settings), http=httplib2.Http(timeout=settings.request_timeout_s))
    service = build("ml", "v1", static_discovery=True, http=authorized, client_options=options,
                    cache_discovery=False)
    return service.projects().jobs()


def _message(exc: Any) -> str:
    """The server's message from a googleapiclient ``HttpError`` (JSON ``error.message``), else its reason."""
    try:
        body = json.loads(exc.content.decode("utf-8") if isinstance(exc.content, bytes) else exc.content)
        return str(body["error"]["message"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return str(getattr(exc, "reason", "") or exc)


def _project(settings: AIPlatformSettings) -> str:
    if not settings.project:
        raise ConfigError("backends.ai_platform.project: required to submit or follow jobs; set project "
                          "in the profile (omnidist.toml) or the job's backends.ai_platform block")
    return settings.project


def job_name(job_id: str, settings: AIPlatformSettings) -> str:
    """``projects/{project}/jobs/{id}`` (a full name passes through)."""
    return job_id if job_id.startswith("projects/") else f"projects/{_project(settings)}/jobs/{job_id}"


class AIPlatformClient(ReportsShortage[dict], StagesCode[dict], ReadsLogs[dict]):
    """``projects.jobs`` create / get / cancel; native jobs are the ``Job`` resources as dicts."""

    idempotency = Idempotency.CHOSEN_ID
    new_suffix = staticmethod(default_suffix)

    @functools.cached_property
    def _jobs(self) -> Any:
        return jobs(self.settings)

    def translate(self, exc: BaseException) -> Optional[BackendError]:
        """``HttpError`` by status (with the server's message and ``Retry-After``); dropped
        connections and timeouts as transient; refused credentials; unreachable endpoints as final."""
        import httplib2
        from google.auth import exceptions as auth_errors
        from googleapiclient.errors import HttpError

        if isinstance(exc, HttpError):
            status = exc.resp.status
            after = parse_retry_after(exc.resp.get("retry-after"))
            return error_for_status(status)(_message(exc), backend=NAME, status=status, retry_after=after)
        if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout, http.client.HTTPException)):
            return TransientBackendError(f"connection failed ({type(exc).__name__}: {exc})", backend=NAME)
        if isinstance(exc, auth_errors.TransportError):
            return TransientBackendError(f"credentials transport failed ({exc})", backend=NAME)
        if isinstance(exc, auth_errors.GoogleAuthError):
            return AuthenticationError(f"credentials were refused ({exc})", backend=NAME)
        if isinstance(exc, (httplib2.HttpLib2Error, OSError)):  # DNS failures, bad URLs: not worth retrying
            return BackendError(f"cannot reach the endpoint ({type(exc).__name__}: {exc})", backend=NAME)
        return None

    def shortage(self, exc: BaseException, error: BackendError) -> Optional[Shortage]:
        """A quota refusal at creation ("Quota failure for project …", :data:`~omnidist_ai_platform.tables.SHORTAGES`),
        else the template's reading."""
        found = shortage_named(error.detail) if error.retry_after is None else None
        return Shortage(found) if found else super().shortage(exc, error)

    def prepare(self, compiled: CompiledJob) -> CompiledJob:
        """Upload a local code folder to the staging bucket (once per content)."""
        request = stage_code(compiled, self, credentials(self.settings),
                                     lambda exc: translate_storage_error(exc, NAME))
        return attrs.evolve(compiled, request=request)

    def keyed(self, compiled: CompiledJob) -> Keyed:
        """The create body: a unique ``jobId`` suffix unless the settings pin it, and the marker label."""
        body = dict(compiled.request)
        if self.settings.job_id is None:
            body["jobId"] = f"{body['jobId']}_{self.suffix()}"
        key = self.request_id()
        return Keyed(request=labelled(body, key), key=key)

    def create_job(self, keyed: Keyed) -> dict[str, Any]:
        """``projects.jobs.create``."""
        parent = f"projects/{_project(self.settings)}"
        return self._jobs.create(parent=parent, body=dict(keyed.request)).execute(num_retries=0) or {}

    def find_jobs(self, keyed: Keyed) -> list[dict[str, Any]]:
        """The job holding the chosen ``jobId``, when it carries this submit's marker."""
        existing = self.get_job(keyed.request["jobId"])
        return [existing] if (existing.get("labels") or {}).get(REQUEST_ID_LABEL) == keyed.key else []

    def conflict(self, keyed: Keyed, exc: ConflictError) -> BackendError:
        """The ``jobId`` belongs to a job this submit did not make: pick another one."""
        pinned = self.settings.job_id is not None
        hint = ("pick another backends.ai_platform.job_id, or drop it to get a unique suffix"
                if pinned else "submit again for a new suffix")
        return ConflictError(f"a job with id {keyed.request['jobId']!r} already exists in project "
                             f"{self.settings.project} and this submit did not make it (it is not labelled "
                             f"{REQUEST_ID_LABEL}={keyed.key}; {exc}); {hint}", backend=NAME, status=409)

    def get_job(self, job_id: str) -> dict[str, Any]:
        """``projects.jobs.get`` (a bare id or a full name)."""
        return self._jobs.get(name=job_name(job_id, self.settings)).execute(num_retries=0) or {}

    def cancel_job(self, job_id: str) -> None:
        """``projects.jobs.cancel``."""
        self._jobs.cancel(name=job_name(job_id, self.settings), body={}).execute(num_retries=0)

    def status_of(self, job: dict[str, Any]) -> JobStatus:
        """The state through :data:`~omnidist_ai_platform.tables.JOB_STATES`, with ``errorMessage``;
        a tuning job's ``trainingOutput.trials`` and best trial (:func:`omnidist_ai_platform.tuning.trials_of`)."""
        from omnidist_ai_platform import tuning

        native = str(job.get("state") or "STATE_UNSPECIFIED")
        metric, trials, best = tuning.trials_of(job)
        return JobStatus(state=JOB_STATES.get(native, JobState.UNKNOWN), native_state=native,
                         message=str(job.get("errorMessage") or ""), metric=metric, trials=trials, best=best)

    def ending_of(self, job: dict[str, Any], status: JobStatus) -> Optional[Ending]:
        """A failed job's ``errorMessage`` through :data:`~omnidist_google.endings.FAILURE_ENDINGS`."""
        return classify_ending(status, FAILURE_ENDINGS)

    def id_of(self, keyed: Keyed, job: dict[str, Any]) -> str:
        """The job's ``jobId``."""
        return job.get("jobId", keyed.request["jobId"])

    def open_logs(self, job_id: str) -> LogStart:
        """Where the lines are: legacy jobs logged to Cloud Logging, which this backend does not read."""
        url = self.backend.console_url(job_id, self.settings)
        return LogStart(header=(f"logs: {url} (Cloud Logging is not read by this backend)",))

    def state_line(self, job_id: str, status: JobStatus) -> str:
        """``job state: RUNNING`` (the native state, with a failed job's message)."""
        return f"job state: {status.native_state}" + (f" — {status.message}" if status.message else "")
