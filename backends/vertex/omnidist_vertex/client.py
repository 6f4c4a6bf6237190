"""Talking to Vertex AI through ``google.cloud.aiplatform_v1`` (imported lazily, here only).

Every call goes through :func:`_run`: SDK and transport exceptions become omnidist's error
tree at this boundary (with the server's own message), the SDK's retries are off
(``retry=None``), and :mod:`omnidist.retry` retries transient failures only, bounded.
A create labels the job with a request id; every retry first lists jobs by that label, so a
create whose response was lost is found instead of made twice, and a create that timed out
while the server kept working on it is waited for, and its duplicate cancelled (:func:`submit`).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional, TypeVar

import attrs

from omnidist import retry
from omnidist.backend import JobState, JobStatus
from omnidist.errors import (
    AuthenticationError,
    BackendError,
    ConfigError,
    InvalidRequestError,
    TransientBackendError,
    ValidationError,
    error_for_status,
)
from omnidist_vertex.backend import JOB_STATES, REQUEST_ID_LABEL, VertexSettings, resource_name

BACKEND = "vertex"
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
T = TypeVar("T")
Sleep = Optional[Callable[[float], None]]
log = logging.getLogger("omnidist.vertex")


# --- the SDK client --------------------------------------------------------------------------------


def _credentials(mode: str) -> Any:
    import google.auth
    from google.auth import exceptions as auth_exceptions
    from google.auth.credentials import AnonymousCredentials

    if mode == "anonymous":
        return AnonymousCredentials()
    try:
        if mode == "default":
            credentials, _ = google.auth.default(scopes=list(SCOPES))
            return credentials
        from google.oauth2 import service_account

        return service_account.Credentials.from_service_account_file(mode, scopes=list(SCOPES))
    except auth_exceptions.DefaultCredentialsError as exc:
        raise AuthenticationError(
            f"no Google credentials found ({exc}); run `gcloud auth application-default login`, set "
            'credentials to a service-account key file, or credentials = "anonymous" for a local endpoint',
            backend=BACKEND,
        ) from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"vertex: credentials {mode!r} is not a readable service-account key file ({exc})"
        ) from exc


@functools.lru_cache(maxsize=16)
def _client(endpoint: str, credentials: str) -> Any:
    from google.api_core.client_options import ClientOptions
    from omnidist_vertex.sdk import aiplatform_v1

    return aiplatform_v1.JobServiceClient(
        credentials=_credentials(credentials),
        transport="rest",
        client_options=ClientOptions(api_endpoint=endpoint),
    )


def client_for(settings: VertexSettings, region: str) -> Any:
    """A REST ``JobServiceClient`` for the region's endpoint (or ``api_endpoint``)."""
    return _client(settings.api_endpoint or f"{region}-aiplatform.googleapis.com", settings.credentials)


# --- the boundary -----------------------------------------------------------------------------------


def _server_message(exc: Any) -> str:
    response = getattr(exc, "response", None)
    try:
        return response.json()["error"]["message"]
    except Exception:  # not JSON, or no error envelope: fall back to the SDK's text
        return getattr(exc, "message", None) or str(exc)


def translate(exc: BaseException) -> Optional[BackendError]:
    """omnidist's error for an SDK/transport exception (``None`` when it is not one)."""
    import requests
    from google.api_core import exceptions as api_exceptions
    from google.auth import exceptions as auth_exceptions

    if isinstance(exc, api_exceptions.GoogleAPICallError):
        status = exc.code if isinstance(exc.code, int) else None
        response = getattr(exc, "response", None)
        after = retry.parse_retry_after(response.headers.get("Retry-After")) if response is not None else None
        return error_for_status(status)(
            _server_message(exc), backend=BACKEND, status=status, retry_after=after
        )
    if isinstance(
        exc,
        (
            requests.exceptions.ConnectionError,
            requests.exceptions.Timeout,
            requests.exceptions.ChunkedEncodingError,
            auth_exceptions.TransportError,
        ),
    ):
        return TransientBackendError(f"connection failed: {exc}", backend=BACKEND)
    if isinstance(exc, auth_exceptions.GoogleAuthError):
        return AuthenticationError(str(exc), backend=BACKEND)
    return None


def _run(fn: Callable[[], T], settings: VertexSettings, sleep: Sleep) -> T:
    def attempt() -> T:
        try:
            return fn()
        except BackendError:
            raise
        except Exception as exc:
            error = translate(exc)
            if error is None:
                raise
            raise error from exc

    return retry.call(attempt, settings.retry_policy(), sleep)


# --- calls ---------------------------------------------------------------------------------------


def _job_name(job_id: str, settings: VertexSettings) -> tuple[str, str]:
    parts = resource_name(job_id, settings)
    if parts is None:
        raise ValidationError(
            f"{job_id!r} is not a Vertex job: give projects/P/locations/R/customJobs/N, or the "
            "number N with a project in the profile",
            path="job_id",
        )
    project, region, number = parts
    return f"projects/{project}/locations/{region}/customJobs/{number}", region


def _labelled(client: Any, parent: str, request_id: str, settings: VertexSettings) -> list[Any]:
    """Every job carrying this request id, earliest created first (ties broken by name)."""
    pager = client.list_custom_jobs(
        request={"parent": parent, "filter": f'labels.{REQUEST_ID_LABEL}="{request_id}"'},
        retry=None,
        timeout=settings.request_timeout_s,
    )
    # The label is checked again: a filter the server ignored must not fool us.
    jobs = [job for job in pager if job.labels.get(REQUEST_ID_LABEL) == request_id]
    return sorted(jobs, key=lambda job: (job.create_time.timestamp() if job.create_time else 0.0, job.name))


def _unanswered(exc: BaseException) -> bool:
    """Whether a failed create got no answer, so it may have made the job (reset, lost response)."""
    import requests

    return isinstance(exc, requests.exceptions.RequestException)


def _still_working(exc: BaseException) -> bool:
    """Whether a failed create may still be running on the server: the client stopped waiting
    for the answer (a read timeout), so the job can appear later, after a retry has made another."""
    import requests

    return isinstance(exc, requests.exceptions.ReadTimeout)


@attrs.define
class _Creates:
    """What a submit's create attempts did, for deciding whether duplicates must be looked for."""

    attempts: int = 0
    made: int = 0
    """Creates that answered with a job."""
    unanswered: int = 0
    """Creates that got no answer (reset, lost response, timeout)."""
    pending: int = 0
    """Creates abandoned while the server may still be working on them (timeouts)."""
    settle_until: float = 0.0
    """Until when (monotonic clock) an abandoned create may still make its job."""


def submit(
    request: dict[str, Any],
    settings: VertexSettings,
    request_id: str,
    sleep: Sleep = None,
    wait: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Create the CustomJob; returns its resource name. Never leaves two jobs running.

    Vertex lets the client choose no job id, so the job carries a request-id label: a retry
    first lists jobs by it (a create whose answer was lost is found, not made again). When a
    create timed out and a retry made the job, the timed-out one may still land: the label is
    listed until it does (or ``create_settle_s`` has passed), and every job but the earliest is
    cancelled; after a create that followed any unanswered one, the label is listed once more for
    the same check. ``wait``/``clock`` pace the settling (real time; injectable for tests).
    """
    from omnidist_vertex.sdk import aiplatform_v1

    if not settings.project:
        raise ConfigError(
            'vertex: no project; set project = "…" in the profile or the job\'s backends.vertex block'
        )
    body = {**request, "labels": {**request.get("labels", {}), REQUEST_ID_LABEL: request_id}}
    try:
        custom_job = aiplatform_v1.CustomJob.from_json(json.dumps(body))
    except Exception as exc:  # json_format.ParseError and friends: the request is not a CustomJob
        raise InvalidRequestError(f"the request is not a valid CustomJob: {exc}", backend=BACKEND) from exc
    client = client_for(settings, settings.region)
    parent = f"projects/{settings.project}/locations/{settings.region}"
    creates = _Creates()

    def attempt() -> str:
        if creates.unanswered:  # an unanswered attempt may have made the job (a 429/503 answer did not)
            found = _labelled(client, parent, request_id, settings)
            if found:
                return found[0].name
        creates.attempts += 1
        try:
            created = client.create_custom_job(
                parent=parent, custom_job=custom_job, retry=None, timeout=settings.request_timeout_s
            )
        except Exception as exc:
            creates.unanswered += _unanswered(exc)
            if _still_working(exc):
                creates.pending += 1
                creates.settle_until = clock() + settings.create_settle_s
            raise
        creates.made += 1
        return created.name

    name = _run(attempt, settings, sleep)
    if creates.pending or (creates.unanswered and creates.made):  # duplicates are possible
        name = _settle(client, parent, request_id, name, creates, settings, sleep, wait, clock)
    return name


def _settle(
    client: Any,
    parent: str,
    request_id: str,
    name: str,
    creates: _Creates,
    settings: VertexSettings,
    sleep: Sleep,
    wait: Callable[[float], None],
    clock: Callable[[], float],
) -> str:
    """After timed-out creates: wait for their jobs to appear, keep the earliest, cancel the rest."""
    expected = creates.made + creates.pending
    pause = 0.2
    while True:
        try:
            jobs = _run(lambda: _labelled(client, parent, request_id, settings), settings, sleep)
        except BackendError as exc:
            log.warning("vertex: could not check for a duplicate of %s after a timed-out create (%s); "
                        "look for jobs labelled %s=%s", name, exc, REQUEST_ID_LABEL, request_id)
            return name
        left = creates.settle_until - clock()
        if len(jobs) >= expected or left <= 0:
            break
        wait(min(pause, left))  # the timed-out create may still be running on the server
        pause = min(pause * 2, 5.0)
    if not jobs:
        return name
    kept, extras = jobs[0].name, [job.name for job in jobs[1:]]
    for extra in extras:
        _cancel_duplicate(client, extra, settings, sleep)
    if extras:
        log.warning("vertex: a timed-out create made a second job after all; kept %s (created first), "
                    "cancelled %s", kept, ", ".join(extras))
    elif len(jobs) < expected:
        log.warning("vertex: a timed-out create had not made its job %.0f s later; if it still does, "
                    "cancel the job labelled %s=%s that is not %s", settings.create_settle_s,
                    REQUEST_ID_LABEL, request_id, kept)
    return kept


def _cancel_duplicate(client: Any, name: str, settings: VertexSettings, sleep: Sleep) -> None:
    """Cancel a duplicate job; best effort (a failure is logged, the submit still succeeds)."""
    try:
        _run(lambda: client.cancel_custom_job(name=name, retry=None, timeout=settings.request_timeout_s),
             settings, sleep)
    except BackendError as exc:
        log.warning("vertex: could not cancel the duplicate job %s (%s); cancel it yourself", name, exc)


def status(job_id: str, settings: VertexSettings, sleep: Sleep = None) -> JobStatus:
    """The job's state, mapped through :data:`~omnidist_vertex.backend.JOB_STATES`."""
    name, region = _job_name(job_id, settings)
    client = client_for(settings, region)
    job = _run(
        lambda: client.get_custom_job(name=name, retry=None, timeout=settings.request_timeout_s),
        settings,
        sleep,
    )
    native = getattr(job.state, "name", str(job.state))
    message = job.error.message if job.error and job.error.message else ""
    return JobStatus(state=JOB_STATES.get(native, JobState.UNKNOWN), native_state=native, message=message)


def cancel(job_id: str, settings: VertexSettings, sleep: Sleep = None) -> None:
    """Ask Vertex to cancel the job; a no-op once it has ended."""
    if status(job_id, settings, sleep).state.terminal:
        return
    name, region = _job_name(job_id, settings)
    client = client_for(settings, region)
    try:
        _run(
            lambda: client.cancel_custom_job(name=name, retry=None, timeout=settings.request_timeout_s),
            settings,
            sleep,
        )
    except InvalidRequestError:  # FAILED_PRECONDITION: it ended between the two calls
        if not status(job_id, settings, sleep).state.terminal:
            raise


def logs(
    job_id: str, settings: VertexSettings, url: str, follow: bool = False, sleep: Sleep = None
) -> Iterator[str]:
    """The console URL, then the job's Cloud Logging entries when ``google-cloud-logging`` is
    installed; without it, with ``follow``, the state changes until the job ends."""
    if url:
        yield f"console: {url}"
    try:
        from google.cloud import logging as cloud_logging  # optional dependency
    except ImportError:
        yield "(install google-cloud-logging to stream this job's logs here)"
        if follow:
            yield from _states(job_id, settings, sleep)
        return
    yield from _cloud_logs(cloud_logging, job_id, settings, follow, sleep)


def _states(job_id: str, settings: VertexSettings, sleep: Sleep) -> Iterator[str]:
    last = None
    while True:
        current = status(job_id, settings, sleep)
        if current.state != last:
            last = current.state
            yield f"state: {current.state.value}"
        if current.state.terminal:
            return
        (sleep or time.sleep)(settings.poll_interval_s)


def _cloud_logs(
    cloud_logging: Any, job_id: str, settings: VertexSettings, follow: bool, sleep: Sleep
) -> Iterator[str]:
    name, _ = _job_name(job_id, settings)
    project, number = name.split("/")[1], name.rsplit("/", 1)[1]
    seen: set[str] = set()
    try:
        client = cloud_logging.Client(project=project, credentials=_credentials(settings.credentials))
        query = f'resource.type="ml_job" AND resource.labels.job_id="{number}"'
        while True:
            ended = not follow or status(job_id, settings, sleep).state.terminal
            for entry in client.list_entries(filter_=query, order_by=cloud_logging.ASCENDING):
                key = entry.insert_id or str(entry.timestamp)
                if key not in seen:
                    seen.add(key)
                    payload = entry.payload
                    yield (
                        payload.get("message", json.dumps(payload))
                        if isinstance(payload, dict)
                        else str(payload)
                    )
            if ended:
                return
            (sleep or time.sleep)(settings.poll_interval_s)
    except BackendError:
        raise
    except Exception as exc:  # Cloud Logging is best effort: the job itself is unaffected
        yield f"(cannot read Cloud Logging: {exc})"
