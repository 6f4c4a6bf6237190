"""The ``ml v1`` client: googleapiclient with its bundled discovery document, imported lazily.

Every call runs once per attempt (``execute(num_retries=0)``: the SDK's own retries are off) under
:mod:`omnidist.retry`; SDK and transport exceptions become omnidist errors here, at the boundary,
carrying the server's message. A create is made safe to repeat by its client-chosen ``jobId`` and
a request marker in its labels: a 409 means the ``jobId`` is taken, and when the job holding it
carries this submit's marker, an earlier attempt made it. That earlier attempt may be one
omnidist never saw fail: httplib2 itself re-sends a request once, without telling its caller,
when the server closes the connection without answering (a stale keep-alive connection to
httplib2, but also a create that was done when the connection dropped).
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Callable, Mapping
from typing import Any, Optional

from omnidist import retry
from omnidist.labels import REQUEST_ID_LABEL
from omnidist.errors import (
    AuthenticationError, BackendError, ConfigError, ConflictError, TransientBackendError, error_for_status,
)

from omnidist_ai_platform.backend import NAME, AIPlatformSettings, status_of

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


def credentials(settings: AIPlatformSettings) -> Any:
    """google.auth credentials: the default chain, or anonymous (local and compatible endpoints)."""
    if settings.credentials == "anonymous":
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials()
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        found, _ = google.auth.default(scopes=list(SCOPES))
    except DefaultCredentialsError as exc:
        raise AuthenticationError(f"no Google credentials found ({exc}); run `gcloud auth "
                                  "application-default login` or set credentials = \"anonymous\" for a "
                                  "local endpoint", backend=NAME) from exc
    return found


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


def execute(request: Any) -> dict[str, Any]:
    """Run one request once, translating every SDK/transport failure into omnidist's tree."""
    import httplib2
    from google.auth import exceptions as auth_errors
    from googleapiclient.errors import HttpError

    try:
        return request.execute(num_retries=0) or {}
    except HttpError as exc:
        status = exc.resp.status
        after = retry.parse_retry_after(exc.resp.get("retry-after"))
        raise error_for_status(status)(_message(exc), backend=NAME, status=status, retry_after=after) from exc
    except (ConnectionError, TimeoutError, socket.timeout, http.client.HTTPException) as exc:
        raise TransientBackendError(f"connection failed ({type(exc).__name__}: {exc})", backend=NAME) from exc
    except auth_errors.TransportError as exc:
        raise TransientBackendError(f"credentials transport failed ({exc})", backend=NAME) from exc
    except auth_errors.GoogleAuthError as exc:
        raise AuthenticationError(f"credentials were refused ({exc})", backend=NAME) from exc
    except (httplib2.HttpLib2Error, OSError) as exc:  # DNS failures, bad URLs: not worth retrying
        raise BackendError(f"cannot reach the endpoint ({type(exc).__name__}: {exc})", backend=NAME) from exc


def _project(settings: AIPlatformSettings) -> str:
    if not settings.project:
        raise ConfigError("backends.ai_platform.project: required to submit or follow jobs; set project "
                          "in the profile (omnidist.toml) or the job's backends.ai_platform block")
    return settings.project


def job_name(job_id: str, settings: AIPlatformSettings) -> str:
    """``projects/{project}/jobs/{id}`` (a full name passes through)."""
    return job_id if job_id.startswith("projects/") else f"projects/{_project(settings)}/jobs/{job_id}"


def create(body: Mapping[str, Any], settings: AIPlatformSettings, *, request_id: str, pinned: bool,
           sleep: Optional[Callable[[float], None]] = None) -> dict[str, Any]:
    """Create the job labelled with ``request_id``; retried on transient errors with the same
    ``jobId``, never making two.

    A 409 answer fetches the job holding the ``jobId``: when it carries ``request_id`` an earlier
    attempt of this very submit made it (its answer was lost, or httplib2 re-sent the create
    after the connection closed), and it is returned.

    Raises:
        ConflictError: the ``jobId`` belongs to a job this submit did not make.
    """
    parent = f"projects/{_project(settings)}"
    name = f"{parent}/jobs/{body['jobId']}"
    sent = {**body, "labels": {**(body.get("labels") or {}), REQUEST_ID_LABEL: request_id}}
    collection = jobs(settings)

    def attempt() -> dict[str, Any]:
        try:
            return execute(collection.create(parent=parent, body=dict(sent)))
        except ConflictError as exc:
            existing = execute(collection.get(name=name))
            if (existing.get("labels") or {}).get(REQUEST_ID_LABEL) == request_id:
                return existing  # made by an earlier attempt of this submit
            hint = ("pick another backends.ai_platform.job_id, or drop it to get a unique suffix"
                    if pinned else "submit again for a new suffix")
            raise ConflictError(f"a job with id {body['jobId']!r} already exists in project {settings.project} "
                                f"and this submit did not make it (it is not labelled {REQUEST_ID_LABEL}="
                                f"{request_id}; {exc}); {hint}", backend=NAME, status=409) from exc

    return retry.call(attempt, settings.retry_policy(), sleep)


Sleep = Optional[Callable[[float], None]]


def get(job_id: str, settings: AIPlatformSettings, *, sleep: Sleep = None) -> dict[str, Any]:
    """The native ``Job`` resource."""
    collection = jobs(settings)
    name = job_name(job_id, settings)
    return retry.call(lambda: execute(collection.get(name=name)), settings.retry_policy(), sleep)


def cancel(job_id: str, settings: AIPlatformSettings, *, sleep: Sleep = None) -> None:
    """Cancel the job unless it already ended (then nothing happens)."""
    collection = jobs(settings)
    name = job_name(job_id, settings)

    def attempt() -> None:
        if status_of(execute(collection.get(name=name))).state.terminal:
            return
        execute(collection.cancel(name=name, body={}))

    retry.call(attempt, settings.retry_policy(), sleep)
