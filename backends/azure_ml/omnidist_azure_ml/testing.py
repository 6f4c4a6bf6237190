"""Test helpers: a local Azure ML service for the real ``MLClient``, a
:class:`omnidist.testing.FakeService` (for this backend's tests, the reliability suite and the
benchmarks).

:class:`FakeAzureML` implements exactly the routes omnidist's client makes the SDK call:

* management (``jobs.create_or_update`` / ``get`` / ``begin_cancel``): PUT an (anonymous)
  environment version, PUT / GET a job by name, POST cancel;
* log streaming (``workspaces.get``, the discovery document, run history, blob storage): GET
  the workspace (its ``discoveryUrl`` points here), GET ``/discovery`` (every service URL
  points here), GET ``/history/v1.0/…/runs/{name}/details`` (``logFiles``: file -> SAS URL
  here), GET a log blob (honouring ``Range: bytes=N-`` with 206 / 416 like Blob storage);
* sweeps: a PUT of a ``Sweep`` job runs its trials ``maxConcurrentTrials`` at a time while it
  is running (:class:`omnidist.testing.FakeStudy`) as child runs ``<name>_<index>`` (GET
  ``/history/v1.0/…/runs/{name}/children``), records each child's values in the sweep's tags
  (``<child>: <JSON>``) and serves the primary metric each child logged (POST
  ``/metric/v2.0/…/runs/{child}/full``).

Jobs keep real state: a PUT of an existing name returns the stored job (Azure's PUT is
idempotent); every GET of the job or of its run details walks it one step along the scripted
:attr:`FakeAzureML.timeline` and appends that status's :attr:`FakeAzureML.output` to its log
files; cancel moves it to CancelRequested/Canceled. Imports no SDK.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omnidist.testing import FakeServer, FakeService, Harness
from omnidist.testing.fakeserver import Recorded, Response
from omnidist.testing.harness import hand_written
from omnidist.testing.study import FAILED, QUEUED, RUNNING, STOPPED, SUCCEEDED

WORKSPACE = (r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
             r"Microsoft\.MachineLearningServices/workspaces/(?P<ws>[^/]+)")
BLOB = "/blob/azureml/ExperimentRun/dcid."
SAS = "sv=2019-07-07&sr=b&sp=r&sig=fake-signature"

FAILURE = "Execution failed. User process 'python' exited with status code 1."
"""The run error of a job the fake fails (``fail_jobs(message)`` replaces it)."""

DEFAULT_OUTPUT: dict[str, dict[str, str]] = {
    "Preparing": {"system_logs/lifecycler/execution-wrapper.log": "pulling the image\n"},
    "Running": {"user_logs/std_log.txt": "step {step}: training\n",
                "user_logs/std_log_process_1.txt": "rank 1 at step {step}\n"},
    "Finalizing": {"user_logs/std_log.txt": "saving the model\n"},
}
"""Status -> log file -> text appended each time a job steps into that status (``{step}`` is
the step's index on the timeline); only ``user_logs/std_log.txt`` is a file Azure streams."""


TRIAL_STATUSES = {
    QUEUED: "NotStarted",
    RUNNING: "Running",
    SUCCEEDED: "Completed",
    FAILED: "Failed",
    STOPPED: "Canceled",
}
"""A fake trial's state -> its child run's status."""


def _choices(expression: Any) -> list[Any]:
    """The values a fake trial draws from for one search-space expression, in the REST form the
    SDK sends (``["loguniform", [ln min, ln max]]``, ``["choice", [[values]]]``…)."""
    kind, args = expression[0], expression[1]
    if kind == "choice":
        return list(args[0])
    if kind == "randint":
        return [0, int(args[0]) - 1]
    if kind in ("loguniform", "qloguniform"):
        return [math.exp(args[0]), math.exp(args[1])]
    if kind in ("uniform", "quniform"):
        return [float(args[0]), (float(args[0]) + float(args[1])) / 2, float(args[1])]
    return [args[0]]


def _arm_error(status: int, code: str, message: str) -> Response:
    return Response(status, {"error": {"code": code, "message": message}})


def _blob_error(status: int, code: str, message: str) -> Response:
    # Blob storage answers errors in XML, not in ARM's JSON envelope.
    return Response(status, f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code>'
                            f"<Message>{message}</Message></Error>", {"x-ms-error-code": code})


class FakeAzureML(FakeService):
    """The fake service's routes, jobs keyed by name; a GET of the job or of its run details
    moves it one state along, then answers.

    Attributes:
        environments: ``name:version`` -> the registered environment.
        output: status -> log file -> text appended on each step into that status.
    """

    ROUTES = {
        "put_environment": ("PUT", "^" + WORKSPACE
                            + r"/environments/(?P<env>[^/]+)/versions/(?P<ver>[^/]+)$"),
        "create": ("PUT", "^" + WORKSPACE + r"/jobs/(?P<name>[^/]+)$"),
        "get": ("GET", "^" + WORKSPACE + r"/jobs/(?P<name>[^/]+)$"),
        "cancel": ("POST", "^" + WORKSPACE + r"/jobs/(?P<name>[^/]+)/cancel$"),
        "workspace": ("GET", "^" + WORKSPACE + "$"),
        "discovery": ("GET", r"^/discovery$"),
        "run_details": ("GET", r"^/history/v1\.0" + WORKSPACE + r"/runs/(?P<name>[^/]+)/details$"),
        "blob": ("GET", "^" + re.escape(BLOB) + r"(?P<name>[^/]+)/(?P<file>.+)$"),
        "children": ("GET", r"^/history/v1\.0" + WORKSPACE + r"/runs/(?P<name>[^/]+)/children$"),
        "metric": ("POST", r"^/metric/v2\.0" + WORKSPACE + r"/runs/(?P<name>[^/]+)/full$"),
    }
    TIMELINE = ("NotStarted", "Queued", "Running", "Completed")
    STATE = ("properties", "status")
    RUNNING, FAILED, CANCELLING, CANCELLED = "Running", "Failed", "CancelRequested", "Canceled"
    TERMINAL = frozenset({"Completed", "Failed", "Canceled"})
    FAILURE = FAILURE

    def __init__(self, server: FakeServer):
        self.environments: dict[str, dict[str, Any]] = {}
        self.output: dict[str, dict[str, str]] = {k: dict(v) for k, v in DEFAULT_OUTPUT.items()}
        self._logs: dict[str, dict[str, bytes]] = {}
        super().__init__(server)

    def on_put_environment(self, rec: Recorded, m: re.Match) -> Response:
        body = {"id": rec.path, "name": m["ver"], "properties": rec.body["properties"],
                "type": "Microsoft.MachineLearningServices/workspaces/environments/versions"}
        self.environments[f"{m['env']}:{m['ver']}"] = body
        return Response(200, body)

    def on_create(self, rec: Recorded, m: re.Match) -> Response:
        props = (rec.body or {}).get("properties", {})
        sweep = props.get("jobType") == "Sweep"
        if sweep and not all(props.get(k) for k in ("trial", "searchSpace", "objective", "samplingAlgorithm")):
            return _arm_error(400, "UserError", "a Sweep job needs trial, searchSpace, objective and samplingAlgorithm")
        if not sweep and (props.get("jobType") != "Command" or not props.get("command")):
            return _arm_error(400, "UserError", "properties.jobType must be Command with a command, or Sweep")
        if sweep and not props["trial"].get("command"):
            return _arm_error(400, "UserError", "properties.trial.command is required")
        with self.lock:
            if m["name"] in self.jobs:  # PUT by name: the same job, not a second one
                return Response(200, self._rendered(m["name"]))
            studio = f"https://ml.azure.com/runs/{m['name']}?wsid=fake"
            props = {**props, "services": {"Studio": {"jobServiceType": "Studio", "endpoint": studio}}}
            study = None
            if sweep:
                limits = props.get("limits") or {}
                study = self.study({k: _choices(v) for k, v in props["searchSpace"].items()},
                                   int(limits.get("maxTotalTrials") or 1), int(limits.get("maxConcurrentTrials") or 1))
            self._logs[m["name"]] = {}
            self.add(m["name"], {"id": rec.path, "name": m["name"], "properties": props,
                                 "type": "Microsoft.MachineLearningServices/workspaces/jobs"}, study=study)
            return Response(201, self._rendered(m["name"]))

    def on_get(self, rec: Recorded, m: re.Match) -> Response:
        with self.lock:
            if m["name"] not in self.jobs:
                return _arm_error(404, "UserError", f"Job {m['name']} not found")
            self.advance(m["name"])
            return Response(200, self._rendered(m["name"]))

    def _rendered(self, name: str) -> dict[str, Any]:
        """The job resource; a sweep's tags record each child's values (``<child>: <JSON>``)."""
        job = self.jobs[name]
        study = self.studies.get(name)
        if study is None or not study.trials:
            return job
        tags = {**(job["properties"].get("tags") or {}),
                **{f"{name}_{t.number - 1}": json.dumps(t.params) for t in study.trials}}
        return {**job, "properties": {**job["properties"], "tags": tags}}

    def on_children(self, rec: Recorded, m: re.Match) -> Response:
        """The sweep's child runs (run history ``Run`` objects)."""
        if not rec.headers.get("Authorization", "").startswith("Bearer "):
            return _arm_error(401, "AuthenticationFailed", "run history needs a bearer token")
        with self.lock:
            if m["name"] not in self.jobs:
                return _arm_error(404, "UserError", f"Run {m['name']} was not found")
            study = self.studies.get(m["name"])
            runs = []
            for trial in study.trials if study is not None else ():
                run: dict[str, Any] = {"runId": f"{m['name']}_{trial.number - 1}", "parentRunId": m["name"],
                                       "rootRunId": m["name"], "status": TRIAL_STATUSES[trial.state],
                                       "runType": "azureml.scriptrun", "tags": {}, "properties": {}}
                if trial.state == FAILED:
                    run["error"] = {"error": {"code": "UserError", "message": self.error_message}}
                runs.append(run)
        top = rec.query.get("$top")
        return Response(200, {"value": runs[: int(top[0])] if top else runs})

    def on_metric(self, rec: Recorded, m: re.Match) -> Response:
        """The values a child run logged for one metric (``MetricV2``): one value per step up to
        its final value, once the trial has ended."""
        if not rec.headers.get("Authorization", "").startswith("Bearer "):
            return _arm_error(401, "AuthenticationFailed", "metrics need a bearer token")
        parent, _, index = m["name"].rpartition("_")
        name = (rec.body or {}).get("metricName", "")
        with self.lock:
            study = self.studies.get(parent)
            trials = [t for t in study.trials if t.number - 1 == int(index)] if study and index.isdigit() else []
            if not trials:
                return _arm_error(404, "UserError", f"Run {m['name']} was not found")
            objective = self.jobs[parent]["properties"]["objective"].get("primaryMetric")
            trial = trials[0]
        if name != objective or trial.value is None:
            return _arm_error(404, "UserError", f"Metric {name} was not found for run {m['name']}")
        values = [{"metricId": f"{m['name']}-{step}", "createdUtc": "2025-01-01T00:00:00Z", "step": step,
                   "data": {name: round(trial.value * (step + 1) / (trial.step + 1), 6)}}
                  for step in range(trial.step + 1)]
        return Response(200, {"name": name, "dataContainerId": f"dcid.{m['name']}", "value": values})

    def on_cancel(self, rec: Recorded, m: re.Match) -> Response:
        with self.lock:
            job = self.jobs.get(m["name"])
            if job is None:
                return _arm_error(404, "UserError", f"Job {m['name']} not found")
            if not self.cancelled(m["name"]):
                return _arm_error(400, "UserError", f"Job {m['name']} is already {self.state(job)}")
        return Response(202, None, {"Location": f"{self.server.url}/operationResults/cancel-{m['name']}"})

    def on_workspace(self, rec: Recorded, m: re.Match) -> Response:
        """The workspace, whose ``discoveryUrl`` leads the SDK to the run-history service."""
        return Response(200, {
            "id": rec.path, "name": m["ws"], "location": "eastus",
            "type": "Microsoft.MachineLearningServices/workspaces",
            "properties": {"friendlyName": m["ws"], "discoveryUrl": f"{self.server.url}/discovery",
                           "mlFlowTrackingUri": f"azureml://eastus.api.azureml.ms/mlflow/v1.0{rec.path}"}})

    def on_discovery(self, rec: Recorded, m: re.Match) -> Response:
        """The region's service URLs (all of them this server)."""
        keys = ("api", "catalog", "experimentation", "gallery", "history", "hyperdrive", "labeling",
                "modelmanagement", "pipelines")
        return Response(200, {**{key: self.server.url for key in keys}, "studio": "https://ml.azure.com"})

    def on_run_details(self, rec: Recorded, m: re.Match) -> Response:
        """The run's details: its status and a SAS URL per log file written so far."""
        if not rec.headers.get("Authorization", "").startswith("Bearer "):
            return _arm_error(401, "AuthenticationFailed", "run history needs a bearer token")
        with self.lock:
            job = self.jobs.get(m["name"])
            if job is None:
                return _arm_error(404, "UserError", f"Run {m['name']} was not found")
            self.advance(m["name"])
            status = self.state(job)
            details = {
                "runId": m["name"], "runUuid": f"uuid-{m['name']}", "target": "serverless", "status": status,
                "logFiles": {path: f"{self.server.url}{BLOB}{m['name']}/{path}?{SAS}"
                             for path in sorted(self._logs[m["name"]])}}
            if status == self.FAILED and self.error_message:
                details["error"] = {"error": {"code": "UserError", "message": self.error_message}}
            return Response(200, details)

    def on_blob(self, rec: Recorded, m: re.Match) -> Response:
        """A log file's bytes, or the part of them a ``Range: bytes=N-`` asks for."""
        if rec.query.get("sig") != ["fake-signature"]:
            return _blob_error(403, "AuthenticationFailed", "Signature did not match")
        with self.lock:
            data = self._logs.get(m["name"], {}).get(m["file"])
        if data is None:
            return _blob_error(404, "BlobNotFound", "The specified blob does not exist.")
        wanted = re.fullmatch(r"bytes=(\d+)-", rec.headers.get("Range", ""))
        if wanted is None:
            return Response(200, data.decode())
        start = int(wanted[1])
        if start >= len(data):
            return _blob_error(416, "InvalidRange",
                               "The range specified is invalid for the current size of the resource.")
        # The client asks from just after a newline, so the slice starts on a character.
        return Response(206, data[start:].decode("utf-8", "replace"),
                        {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"})

    def write(self, name: str, path: str, text: str) -> None:
        """Append ``text`` to the job's log file ``path`` (created if new)."""
        with self.lock:
            logs = self._logs[name]
            logs[path] = logs.get(path, b"") + text.encode()

    def log_text(self, name: str, path: str) -> str:
        """What the job's log file holds now."""
        return self._logs[name].get(path, b"").decode()

    def stepped(self, key: Any, job: dict[str, Any]) -> None:
        """Append the output of the status the job stepped into to its log files."""
        writes: Mapping[str, str] = self.output.get(self.state(job), {})
        for path, text in writes.items():
            self.write(key, path, text.format(step=self.steps(key)))


# --- the harness the shared suites and benchmarks drive (omnidist.testing.Harness) ---------------

HAND_PICKED = {"T4:1": "Standard_NC4as_T4_v3", "V100:2": "Standard_ND40rs_v2", "V100:8": "Standard_ND40rs_v2"}
"""Accelerator -> the VM size a user writing the job by hand names (omnidist's own picks)."""


def _hand_built() -> Any:
    """A job document's command job built with ``azure.ai.ml.command`` and a ``PyTorchDistribution``,
    as a user without omnidist writes it."""
    import logging

    from azure.ai.ml import PyTorchDistribution, command
    from azure.ai.ml.entities import Environment

    from omnidist.kit import parse_duration

    logging.getLogger("azure.ai.ml").setLevel(logging.ERROR)

    def build(doc: Any) -> Any:
        _, gpus, env = hand_written(doc)
        sku = HAND_PICKED[doc["primary"]["accelerator"]]
        return command(command=" ".join((*doc["command"], *doc["args"])), environment=Environment(image=doc["image"]),
                       instance_count=1 + doc["workers"]["replicas"], instance_type=sku,
                       shm_size="16g" if sku.startswith("Standard_ND") else None,
                       distribution=PyTorchDistribution(process_count_per_instance=gpus), environment_variables=env,
                       display_name=doc["name"], experiment_name=doc["name"], timeout=parse_duration(doc["timeout"]),
                       tags=doc["labels"])

    return build


def _direct(service: FakeService) -> Any:
    """``MLClient.jobs.create_or_update`` of the hand-built command job."""
    import itertools

    from azure.ai.ml import MLClient

    from omnidist_azure.credentials import PUBLIC_CLOUD, StaticTokenCredential

    client = MLClient(StaticTokenCredential(), "sub", "rg", "ws", cloud="bench-direct", enable_telemetry=False,
                      cloud_metadata={**PUBLIC_CLOUD, "resource_manager": service.url + "/"}, show_progress=False)
    build, counter = _hand_built(), itertools.count()

    def submit(doc: Any) -> Any:
        job = build(doc)
        job.name = f"{doc['name']}-direct-{next(counter)}"
        return client.jobs.create_or_update(job)

    return submit


def check_request(request: Mapping[str, Any], scratch: Path) -> None:
    """``azure.ai.ml.load_job`` accepts the job file (the SDK's own marshmallow schemas) and turns
    it into a REST body with a command."""
    from azure.ai.ml import load_job

    from omnidist.kit import dump_yaml

    path = scratch / "job.yml"
    path.write_text(dump_yaml(request))
    loaded = load_job(path)
    if request.get("type") == "sweep":  # the trial is the command job
        # The SDK's own private serialisers: the shape its submit sends.
        assert loaded._to_rest_object().as_dict()["properties"]["trial"]["command"]  # type: ignore[attr-defined]
    else:
        assert loaded._to_job()._to_rest_object().as_dict()["properties"]["command"]  # type: ignore[attr-defined]


HARNESS = Harness(
    check_request=check_request,
    service=FakeAzureML, sdk_module="azure.ai.ml", direct_submit=_direct,
    native_builder=lambda: (lambda build: lambda doc: build(doc)._to_rest_object())(_hand_built()),
    settings=lambda url: {"subscription_id": "sub-1", "resource_group": "rg-1", "workspace": "ws-1",
                          "credential": "anonymous", "endpoint": url, "poll_interval_s": 0.0},
    sample_settings={"instance_type": "Standard_NC24s_v3", "shm_size": "8g", "job_tier": "standard"},
    trial_number=lambda trial: int(trial.rsplit("_", 1)[1]) + 1)  # child runs are named <sweep>_<index>
"""Azure ML for the reliability suite, the fuzzing and ``bench/``."""
