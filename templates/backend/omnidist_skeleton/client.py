"""Skeleton Cloud's client: one HTTP call per method of the client protocol; the core's template
(:class:`~omnidist.kit.Client`) adds retries, exactly-once creates and masking.

The cloud's API is JSON over HTTPS (``POST /v1/projects/P/jobs``, ``GET …/jobs/ID``,
``POST …/jobs/ID:cancel``, ``GET …/jobs/ID/logs``), spoken here with the standard library; a
backend for a cloud with an SDK imports the SDK inside these methods instead. Opts into
:class:`~omnidist.kit.ReadsLogs` (the job's own log lines).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Optional

from omnidist.kit import (
    REQUEST_ID_LABEL,
    AuthenticationError,
    BackendError,
    CompiledJob,
    Idempotency,
    JobState,
    JobStatus,
    Keyed,
    LogPage,
    ReadsLogs,
    TransientBackendError,
    error_for_status,
    labelled,
    parse_retry_after,
)
from omnidist_skeleton.tables import NAME, STATES


class SkeletonClient(ReadsLogs[dict]):
    """Jobs as the API's JSON objects (dicts)."""

    idempotency = Idempotency.CHOSEN_ID

    def _http(self, method: str, path: str, body: Any = None) -> Any:
        """One request to the API; its JSON answer."""
        url = f"{self.settings.endpoint.rstrip('/')}/v1/projects/{urllib.parse.quote(self.settings.project)}{path}"
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        token = self.settings.token or os.environ.get("SKELETON_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=self.settings.request_timeout_s) as answer:
            text = answer.read()
        return json.loads(text) if text else {}

    def translate(self, exc: BaseException) -> Optional[BackendError]:
        """HTTP errors by status, with the server's message and ``Retry-After``; dropped
        connections and timeouts as transient (no answer came back)."""
        if isinstance(exc, urllib.error.HTTPError):
            try:
                message = json.loads(exc.read() or b"{}").get("error", {}).get("message") or exc.reason
            except ValueError:
                message = str(exc.reason)
            if exc.code == 401:
                return AuthenticationError(f"the token was refused ({message})", backend=NAME, status=401)
            return error_for_status(exc.code)(str(message), backend=NAME, status=exc.code,
                                              retry_after=parse_retry_after(exc.headers.get("Retry-After")))
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, (ConnectionError, TimeoutError, socket.timeout, http.client.HTTPException)):
            return TransientBackendError(f"connection failed ({type(reason).__name__}: {reason})", backend=NAME)
        if isinstance(exc, (urllib.error.URLError, OSError)):
            return BackendError(f"cannot reach {self.settings.endpoint} ({exc})", backend=NAME)
        return None

    def keyed(self, compiled: CompiledJob) -> Keyed:
        """The create body: the job's id (its name and a fresh suffix) and the submit's marker label."""
        key = self.request_id()
        body = {**compiled.request, "id": f"{compiled.request['displayName'][:50]}-{self.suffix()}"}
        return Keyed(request=labelled(body, key), key=key)

    def create_job(self, keyed: Keyed) -> dict[str, Any]:
        return self._http("POST", "/jobs", keyed.request)

    def find_jobs(self, keyed: Keyed) -> list[dict[str, Any]]:
        """The job holding the chosen id, when it carries this submit's marker."""
        found = self.get_job(keyed.request["id"])
        return [found] if (found.get("labels") or {}).get(REQUEST_ID_LABEL) == keyed.key else []

    def get_job(self, job_id: str) -> dict[str, Any]:
        return self._http("GET", f"/jobs/{urllib.parse.quote(job_id)}")

    def cancel_job(self, job_id: str) -> None:
        self._http("POST", f"/jobs/{urllib.parse.quote(job_id)}:cancel", {})

    def status_of(self, job: dict[str, Any]) -> JobStatus:
        """The state through :data:`~omnidist_skeleton.tables.STATES`, with the job's error."""
        native = str(job.get("state") or "")
        return JobStatus(state=STATES.get(native, JobState.UNKNOWN), native_state=native,
                         message=str(job.get("error") or ""))

    def id_of(self, keyed: Keyed, job: dict[str, Any]) -> str:
        return str(job.get("id") or keyed.request["id"])

    def read_logs(self, job_id: str, cursor: Any, *, follow: bool) -> LogPage:
        """The lines after ``cursor`` (a line offset), with the job's state."""
        offset = int(cursor or 0)
        page = self.call(lambda: self._http("GET", f"/jobs/{urllib.parse.quote(job_id)}/logs?offset={offset}"))
        job = self.call(lambda: self.get_job(job_id))
        lines = [str(line) for line in page.get("lines") or []]
        return LogPage(status=self.status_of(job), lines=lines, secrets=self.secrets_of(job),
                       cursor=offset + len(lines))
