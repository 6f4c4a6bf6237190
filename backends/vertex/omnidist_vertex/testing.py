"""Test helpers: a working fake of the Vertex AI CustomJob REST API on top of
:class:`omnidist.testing.FakeServer`, for the backend's tests, the reliability suite and the
benchmarks (and for plugin authors who drive the real ``JobServiceClient`` offline).

:class:`FakeVertex` serves ``customJobs`` create / get / list (with a ``labels.K="V"`` filter) /
cancel from a dict: it rejects what the SDK's own ``CustomJob`` type does not parse, and
states advance one step per ``get`` so ``wait`` ends. Imports the SDK's types when built.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from datetime import datetime, timezone
from typing import Any

from omnidist.testing import FakeServer
from omnidist.testing.fakeserver import Recorded, Response, error_body

PARENT = r"(?P<parent>projects/[^/]+/locations/[^/]+)"
NAME = PARENT + r"/customJobs/(?P<id>[^/:]+)"
_LABEL_FILTER = re.compile(r'^labels\.(?P<key>[\w-]+)="(?P<value>[^"]*)"$')
# Where each state goes on the next get (the fake advances one step per poll).
_NEXT = {
    "JOB_STATE_QUEUED": "JOB_STATE_PENDING",
    "JOB_STATE_PENDING": "JOB_STATE_RUNNING",
    "JOB_STATE_CANCELLING": "JOB_STATE_CANCELLED",
}
_TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}


class FakeVertex:
    """customJobs create / get / list (with a labels filter) / cancel, jobs kept in a dict.

    Responses use ``enum-encoding=int`` like the real service answers the REST client.
    ``hold`` keeps running jobs running; ``final`` is where they go otherwise.
    """

    def __init__(self, server: FakeServer) -> None:
        from google.cloud import aiplatform_v1

        self._types = aiplatform_v1
        self.server = server
        self.jobs: dict[str, dict[str, Any]] = {}
        self.hold = False
        self.final = "JOB_STATE_SUCCEEDED"
        self.error_message = ""
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()
        server.route("POST", rf"^/v1/{PARENT}/customJobs$", self._create)
        server.route("GET", rf"^/v1/{PARENT}/customJobs$", self._list)
        server.route("GET", rf"^/v1/{NAME}$", self._get)
        server.route("POST", rf"^/v1/{NAME}:cancel$", self._cancel)

    @property
    def url(self) -> str:
        """The fake's base URL, for ``api_endpoint``."""
        return self.server.url

    def _render(self, job: dict[str, Any]) -> dict[str, Any]:
        body = dict(job)
        body["state"] = self._types.JobState[job["state"]].value
        if job["state"] == "JOB_STATE_FAILED" and self.error_message:
            body["error"] = {"code": 13, "message": self.error_message}
        return body

    def _create(self, record: Recorded, match: re.Match[str]) -> Response:
        try:  # the real service rejects what is not a CustomJob; so does the fake
            self._types.CustomJob.from_json(json.dumps(record.body))
        except Exception as exc:
            return Response(400, error_body(400, f"Invalid JSON payload: {exc}"))
        if not record.body.get("displayName"):
            return Response(400, error_body(400, "displayName is required"))
        with self._lock:
            name = f"{match['parent']}/customJobs/{next(self._ids)}"
            job = {
                **record.body,
                "name": name,
                "state": "JOB_STATE_QUEUED",
                # When it was made, to the microsecond: duplicates are told apart by it.
                "createTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            }
            self.jobs[name] = job
        return Response(200, self._render(job))

    def _get(self, record: Recorded, match: re.Match[str]) -> Response:
        name = f"{match['parent']}/customJobs/{match['id']}"
        with self._lock:
            job = self.jobs.get(name)
            if job is None:
                return Response(404, error_body(404, f"CustomJob {name} not found"))
            rendered = self._render(job)
            state = job["state"]
            if state == "JOB_STATE_RUNNING" and not self.hold:
                job["state"] = self.final
            elif state in _NEXT:
                job["state"] = _NEXT[state]
        return Response(200, rendered)

    def _list(self, record: Recorded, match: re.Match[str]) -> Response:
        wanted = (record.query.get("filter") or [""])[0]
        rule = _LABEL_FILTER.match(wanted) if wanted else None
        if wanted and rule is None:
            return Response(400, error_body(400, f"unsupported filter {wanted!r}"))
        with self._lock:
            found = [
                self._render(j)
                for n, j in self.jobs.items()
                if n.startswith(match["parent"] + "/")
                and (rule is None or j.get("labels", {}).get(rule["key"]) == rule["value"])
            ]
        return Response(200, {"customJobs": found} if found else {})

    def _cancel(self, record: Recorded, match: re.Match[str]) -> Response:
        name = f"{match['parent']}/customJobs/{match['id']}"
        with self._lock:
            job = self.jobs.get(name)
            if job is None:
                return Response(404, error_body(404, f"CustomJob {name} not found"))
            if job["state"] in _TERMINAL:
                return Response(400, error_body(400, f"CustomJob {name} is already in terminal state"))
            job["state"] = "JOB_STATE_CANCELLING"
        return Response(200, {})
