"""Test helpers: a fake Skeleton Cloud API and the harness the shared suites drive.

:class:`FakeSkeletonService` (a :class:`omnidist.testing.FakeService`) serves create, get, cancel
and logs: 409 for a taken id, 400 for a request without pools, and states that advance on every
get so ``wait`` ends. A job's log is what :attr:`FakeSkeletonService.output` holds for the states
it has been in.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

from omnidist.testing import FakeService, Harness
from omnidist.testing.fakeserver import Recorded, Response, error_body

FAILURE = "the primary exited with status 1"


class FakeSkeletonService(FakeService):
    """``/v1/projects/P/jobs``: jobs keyed by ``(project, id)``; a get answers the job as it is,
    then moves it one state along."""

    ROUTES = {
        "create": ("POST", r"^/v1/projects/([^/]+)/jobs$"),
        "get": ("GET", r"^/v1/projects/([^/]+)/jobs/([^/:]+)$"),
        "cancel": ("POST", r"^/v1/projects/([^/]+)/jobs/([^/:]+):cancel$"),
        "logs": ("GET", r"^/v1/projects/([^/]+)/jobs/([^/:]+)/logs$"),
    }
    TIMELINE = ("QUEUED", "RUNNING", "SUCCEEDED")
    TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
    FAILURE = FAILURE

    def __init__(self, server: Any) -> None:
        super().__init__(server)
        self.output: dict[str, dict[str, str]] = {}
        """Native state (any case) -> file -> text the job logs once it has been in that state."""
        self.seen: dict[Hashable, list[str]] = {}

    def stepped(self, key: Hashable, job: dict[str, Any]) -> None:
        self.seen.setdefault(key, []).append(job["state"])

    def on_create(self, request: Recorded, match: re.Match[str]) -> Response:
        body = request.body if isinstance(request.body, dict) else {}
        if not isinstance(body.get("pools"), list) or not body["pools"] or not body.get("id"):
            return Response(400, error_body(400, "a job needs an id and at least one pool"))
        with self.lock:
            key = (match[1], body["id"])
            if key in self.jobs:
                return Response(409, error_body(409, f"job {body['id']} already exists"))
            return Response(200, self._render(self.add(key, dict(body))))

    def on_get(self, request: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            key = (match[1], match[2])
            job = self.jobs.get(key)
            if job is None:
                return Response(404, error_body(404, f"job {match[2]} not found"))
            rendered = self._render(job)
            self.advance(key)
            return Response(200, rendered)

    def on_cancel(self, request: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            key = (match[1], match[2])
            if key not in self.jobs:
                return Response(404, error_body(404, f"job {match[2]} not found"))
            if not self.cancelled(key):
                return Response(400, error_body(400, f"job {match[2]} has ended"))
            return Response(200, {})

    def on_logs(self, request: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            key = (match[1], match[2])
            if key not in self.jobs:
                return Response(404, error_body(404, f"job {match[2]} not found"))
            offset = int((request.query.get("offset") or ["0"])[0])
            states = {state.upper() for state in self.seen.get(key, [])}
            lines = [line for state, files in self.output.items() if state.upper() in states
                     for text in files.values() for line in text.splitlines()]
            return Response(200, {"lines": lines[offset:]})

    def _render(self, job: dict[str, Any]) -> dict[str, Any]:
        failed = job["state"] == self.FAILED and self.error_message
        return {**job, "error": self.error_message} if failed else dict(job)


def check_request(request: Mapping[str, Any], scratch: Path) -> None:
    """What the API takes: the request's own keys, and pools with a role, an image and a count."""
    from omnidist_skeleton.tables import NATIVE_KEYS, ROLES

    assert set(request) <= NATIVE_KEYS, sorted(set(request) - NATIVE_KEYS)
    for pool in request["pools"]:
        assert pool["role"] in ROLES.values() and isinstance(pool["image"], str) and pool["replicas"] >= 0, pool


HARNESS = Harness(
    service=FakeSkeletonService, check_request=check_request,
    settings=lambda url: {"project": "proj", "endpoint": url, "token": "fake-token", "retry_initial_wait_s": 0.01},
    sample_settings={"project": "other"})
"""Skeleton Cloud for the shared suites (reliability, secrets, fuzz)."""
