"""Test helpers: a local Azure ML management API for the real ``MLClient``, on
:class:`omnidist.testing.FakeServer` (for this backend's tests, the reliability suite and the
benchmarks).

:class:`FakeAzureML` implements exactly the routes ``jobs.create_or_update`` / ``get`` /
``begin_cancel`` call: PUT an (anonymous) environment version, PUT / GET a job by name, POST
cancel. Jobs keep real state: a PUT of an existing name returns the stored job (Azure's PUT is
idempotent), GETs walk the job through a scripted status timeline, cancel moves it to
CancelRequested/Canceled. Imports no SDK.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from omnidist.testing import FakeServer
from omnidist.testing.fakeserver import Recorded, Response

WORKSPACE = (r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
             r"Microsoft\.MachineLearningServices/workspaces/(?P<ws>[^/]+)")
TERMINAL = {"Completed", "Failed", "Canceled"}


def _arm_error(status: int, code: str, message: str) -> Response:
    return Response(status, {"error": {"code": code, "message": message}})


class FakeAzureML:
    """The fake service's state and routes."""

    def __init__(self, server: FakeServer):
        self.server = server
        self.jobs: dict[str, dict[str, Any]] = {}
        self.environments: dict[str, dict[str, Any]] = {}
        self.timeline = ["NotStarted", "Queued", "Running", "Completed"]
        self._lock = threading.Lock()
        server.route("PUT", WORKSPACE + r"/environments/(?P<env>[^/]+)/versions/(?P<ver>[^/]+)$", self.put_environment)
        server.route("PUT", WORKSPACE + r"/jobs/(?P<name>[^/]+)$", self.put_job)
        server.route("GET", WORKSPACE + r"/jobs/(?P<name>[^/]+)$", self.get_job)
        server.route("POST", WORKSPACE + r"/jobs/(?P<name>[^/]+)/cancel$", self.cancel_job)

    def put_environment(self, rec: Recorded, m: re.Match) -> Response:
        body = {"id": rec.path, "name": m["ver"], "properties": rec.body["properties"],
                "type": "Microsoft.MachineLearningServices/workspaces/environments/versions"}
        self.environments[f"{m['env']}:{m['ver']}"] = body
        return Response(200, body)

    def put_job(self, rec: Recorded, m: re.Match) -> Response:
        props = (rec.body or {}).get("properties", {})
        if props.get("jobType") != "Command" or not props.get("command"):
            return _arm_error(400, "UserError", "properties.jobType must be Command with a command")
        with self._lock:
            if m["name"] in self.jobs:  # PUT by name: the same job, not a second one
                return Response(200, self._public(m["name"]))
            props = {**props, "status": self.timeline[0], "services": {"Studio": {
                "jobServiceType": "Studio", "endpoint": f"https://ml.azure.com/runs/{m['name']}?wsid=fake"}}}
            self.jobs[m["name"]] = {"id": rec.path, "name": m["name"], "properties": props,
                                    "type": "Microsoft.MachineLearningServices/workspaces/jobs",
                                    "_timeline": list(self.timeline[1:])}
        return Response(201, self._public(m["name"]))

    def get_job(self, rec: Recorded, m: re.Match) -> Response:
        with self._lock:
            job = self.jobs.get(m["name"])
            if job is None:
                return _arm_error(404, "UserError", f"Job {m['name']} not found")
            if job["_timeline"]:
                job["properties"]["status"] = job["_timeline"].pop(0)
        return Response(200, self._public(m["name"]))

    def cancel_job(self, rec: Recorded, m: re.Match) -> Response:
        with self._lock:
            job = self.jobs.get(m["name"])
            if job is None:
                return _arm_error(404, "UserError", f"Job {m['name']} not found")
            if job["properties"]["status"] in TERMINAL:
                return _arm_error(400, "UserError", f"Job {m['name']} is already {job['properties']['status']}")
            job["properties"]["status"] = "CancelRequested"
            job["_timeline"] = ["Canceled"]
        return Response(202, None, {"Location": f"{self.server.url}/operationResults/cancel-{m['name']}"})

    def _public(self, name: str) -> dict[str, Any]:
        return {k: v for k, v in self.jobs[name].items() if not k.startswith("_")}
