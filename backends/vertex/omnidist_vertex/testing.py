"""Test helpers: a working fake of the Vertex AI CustomJob REST API, a
:class:`omnidist.testing.FakeService`, for the backend's tests, the reliability suite and the
benchmarks (and for plugin authors who drive the real ``JobServiceClient`` offline).

:class:`FakeVertex` serves ``customJobs`` create / get / list (with a ``labels.K="V"`` filter) /
cancel: it rejects what the SDK's own ``CustomJob`` type does not parse, and a job advances one
state per ``get`` so ``wait`` ends. Imports the SDK's types when built.
"""

from __future__ import annotations

import itertools
import json
import re
from datetime import datetime, timezone
from typing import Any

from omnidist.testing import FakeServer, FakeService
from omnidist.testing.fakeserver import Recorded, Response, error_body

PARENT = r"(?P<parent>projects/[^/]+/locations/[^/]+)"
NAME = PARENT + r"/customJobs/(?P<id>[^/:]+)"
_LABEL_FILTER = re.compile(r'^labels\.(?P<key>[\w-]+)="(?P<value>[^"]*)"$')


class FakeVertex(FakeService):
    """customJobs create / get / list (with a labels filter) / cancel.

    Responses use ``enum-encoding=int`` like the real service answers the REST client. A ``get``
    answers the job as it is, then moves it one state along.
    """

    ROUTES = {
        "create": ("POST", rf"^/v1/{PARENT}/customJobs$"),
        "list": ("GET", rf"^/v1/{PARENT}/customJobs$"),
        "get": ("GET", rf"^/v1/{NAME}$"),
        "cancel": ("POST", rf"^/v1/{NAME}:cancel$"),
    }
    TIMELINE = ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED")
    RUNNING, FAILED = "JOB_STATE_RUNNING", "JOB_STATE_FAILED"
    CANCELLING, CANCELLED = "JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"
    TERMINAL = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"})
    FAILURE = ""

    def __init__(self, server: FakeServer) -> None:
        from google.cloud import aiplatform_v1

        self._types = aiplatform_v1
        self._ids = itertools.count(1000)
        super().__init__(server)

    def _render(self, job: dict[str, Any]) -> dict[str, Any]:
        body = dict(job)
        body["state"] = self._types.JobState[job["state"]].value
        if job["state"] == self.FAILED and self.error_message:
            body["error"] = {"code": 13, "message": self.error_message}
        return body

    def on_create(self, record: Recorded, match: re.Match[str]) -> Response:
        try:  # the real service rejects what is not a CustomJob; so does the fake
            self._types.CustomJob.from_json(json.dumps(record.body))
        except Exception as exc:
            return Response(400, error_body(400, f"Invalid JSON payload: {exc}"))
        if not record.body.get("displayName"):
            return Response(400, error_body(400, "displayName is required"))
        with self.lock:
            name = f"{match['parent']}/customJobs/{next(self._ids)}"
            # When it was made, to the microsecond: duplicates are told apart by it.
            made = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            job = self.add(name, {**record.body, "name": name, "createTime": made})
            return Response(200, self._render(job))

    def on_get(self, record: Recorded, match: re.Match[str]) -> Response:
        name = f"{match['parent']}/customJobs/{match['id']}"
        with self.lock:
            job = self.jobs.get(name)
            if job is None:
                return Response(404, error_body(404, f"CustomJob {name} not found"))
            rendered = self._render(job)
            self.advance(name)
        return Response(200, rendered)

    def on_list(self, record: Recorded, match: re.Match[str]) -> Response:
        wanted = (record.query.get("filter") or [""])[0]
        rule = _LABEL_FILTER.match(wanted) if wanted else None
        if wanted and rule is None:
            return Response(400, error_body(400, f"unsupported filter {wanted!r}"))
        with self.lock:
            found = [
                self._render(j)
                for n, j in self.jobs.items()
                if n.startswith(match["parent"] + "/")
                and (rule is None or j.get("labels", {}).get(rule["key"]) == rule["value"])
            ]
        return Response(200, {"customJobs": found} if found else {})

    def on_cancel(self, record: Recorded, match: re.Match[str]) -> Response:
        name = f"{match['parent']}/customJobs/{match['id']}"
        with self.lock:
            if name not in self.jobs:
                return Response(404, error_body(404, f"CustomJob {name} not found"))
            if not self.cancelled(name):
                return Response(400, error_body(400, f"CustomJob {name} is already in terminal state"))
        return Response(200, {})
