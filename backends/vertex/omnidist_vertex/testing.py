"""Test helpers: a working fake of the Vertex AI job REST API, a
:class:`omnidist.testing.FakeService`, for the backend's tests, the reliability suite and the
benchmarks (and for plugin authors who drive the real ``JobServiceClient`` offline).

:class:`FakeVertex` serves ``customJobs`` and ``hyperparameterTuningJobs`` create / get / list
(with a ``labels.K="V"`` filter) / cancel: it rejects what the SDK's own ``CustomJob`` or
``HyperparameterTuningJob`` type does not parse, and a job advances one state per ``get`` so
``wait`` ends. A tuning job's trials run ``parallelTrialCount`` at a time while it is running
(:class:`omnidist.testing.FakeStudy`), each taking its values from the study's parameters and
reporting :attr:`~omnidist.testing.FakeService.trial_values` as its final measurement. Imports
the SDK's types when built.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omnidist.testing import FakeServer, FakeService, Harness
from omnidist.testing.fakeserver import Recorded, Response, error_body
from omnidist.testing.harness import hand_written
from omnidist.testing.study import FAILED, QUEUED, RUNNING, STOPPED, SUCCEEDED

PARENT = r"(?P<parent>projects/[^/]+/locations/[^/]+)"
NAME = PARENT + r"/customJobs/(?P<id>[^/:]+)"
TUNING_NAME = PARENT + r"/hyperparameterTuningJobs/(?P<id>[^/:]+)"
_LABEL_FILTER = re.compile(r'^labels\.(?P<key>[\w-]+)="(?P<value>[^"]*)"$')

TRIAL_STATES = {
    QUEUED: "REQUESTED",
    RUNNING: "ACTIVE",
    SUCCEEDED: "SUCCEEDED",
    FAILED: "INFEASIBLE",
    STOPPED: "SUCCEEDED",
}
"""A fake trial's state -> ``Trial.State`` (a stopped trial ends SUCCEEDED, as Vertex's do)."""

COLLECTIONS = {"customJobs": "CustomJob", "hyperparameterTuningJobs": "HyperparameterTuningJob"}
"""Collection -> the message its jobs are."""


def _choices(spec: dict[str, Any]) -> list[Any]:
    """The values a fake trial draws from for one ``ParameterSpec``."""
    if "doubleValueSpec" in spec:
        low, high = (float(spec["doubleValueSpec"].get(k, 0.0)) for k in ("minValue", "maxValue"))
        return [low, (low + high) / 2, high]
    if "integerValueSpec" in spec:
        return [int(spec["integerValueSpec"].get(k, 0)) for k in ("minValue", "maxValue")]
    for key in ("discreteValueSpec", "categoricalValueSpec"):
        if key in spec:
            return list(spec[key].get("values") or [])
    return [0.0]


class FakeVertex(FakeService):
    """customJobs and hyperparameterTuningJobs create / get / list (with a labels filter) / cancel.

    Responses use ``enum-encoding=int`` like the real service answers the REST client. A ``get``
    answers the job as it is, then moves it one state along.
    """

    ROUTES = {
        "create": ("POST", rf"^/v1/{PARENT}/customJobs$"),
        "list": ("GET", rf"^/v1/{PARENT}/customJobs$"),
        "get": ("GET", rf"^/v1/{NAME}$"),
        "cancel": ("POST", rf"^/v1/{NAME}:cancel$"),
        "tuning_create": ("POST", rf"^/v1/{PARENT}/hyperparameterTuningJobs$"),
        "tuning_list": ("GET", rf"^/v1/{PARENT}/hyperparameterTuningJobs$"),
        "tuning_get": ("GET", rf"^/v1/{TUNING_NAME}$"),
        "tuning_cancel": ("POST", rf"^/v1/{TUNING_NAME}:cancel$"),
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
        self.error_code = 13
        """The ``google.rpc.Code`` of a failed job's error (8: RESOURCE_EXHAUSTED, no capacity)."""

    def _render(self, job: dict[str, Any]) -> dict[str, Any]:
        body = dict(job)
        body["state"] = self._types.JobState[job["state"]].value  # type: ignore[misc]  # a proto enum, read by name
        if job["state"] == self.FAILED and self.error_message:
            body["error"] = {"code": self.error_code, "message": self.error_message}
        study = self.studies.get(job["name"])
        if study is not None and study.trials:
            body["trials"] = [self._trial(trial, job) for trial in study.trials]
        return body

    def _trial(self, trial: Any, job: dict[str, Any]) -> dict[str, Any]:
        """One ``Trial`` in REST form (enum numbers), its final measurement once it has ended."""
        rendered: dict[str, Any] = {
            "id": str(trial.number), "state": self._types.Trial.State[TRIAL_STATES[trial.state]].value,  # type: ignore[misc]
            "parameters": [{"parameterId": name, "value": value} for name, value in trial.params.items()]}
        if trial.value is not None:
            metric = job["studySpec"]["metrics"][0]["metricId"]
            rendered["finalMeasurement"] = {"stepCount": str(trial.step),
                                            "metrics": [{"metricId": metric, "value": trial.value}]}
        if trial.state == FAILED:
            rendered["infeasibleReason"] = f"The trial's CustomJob failed: {self.error_message or 'exit 1'}"
        return rendered

    # --- customJobs ----------------------------------------------------------------------------

    def on_create(self, record: Recorded, match: re.Match[str]) -> Response:
        return self._create(record, match, "customJobs")

    def on_get(self, record: Recorded, match: re.Match[str]) -> Response:
        return self._get(match, "customJobs")

    def on_list(self, record: Recorded, match: re.Match[str]) -> Response:
        return self._list(record, match, "customJobs")

    def on_cancel(self, record: Recorded, match: re.Match[str]) -> Response:
        return self._cancel(match, "customJobs")

    # --- hyperparameterTuningJobs ----------------------------------------------------------------

    def on_tuning_create(self, record: Recorded, match: re.Match[str]) -> Response:
        return self._create(record, match, "hyperparameterTuningJobs")

    def on_tuning_get(self, record: Recorded, match: re.Match[str]) -> Response:
        return self._get(match, "hyperparameterTuningJobs")

    def on_tuning_list(self, record: Recorded, match: re.Match[str]) -> Response:
        return self._list(record, match, "hyperparameterTuningJobs")

    def on_tuning_cancel(self, record: Recorded, match: re.Match[str]) -> Response:
        return self._cancel(match, "hyperparameterTuningJobs")

    # --- shared by both collections --------------------------------------------------------------

    def _create(self, record: Recorded, match: re.Match[str], collection: str) -> Response:
        message = COLLECTIONS[collection]
        try:  # the real service rejects what is not of the collection's type; so does the fake
            getattr(self._types, message).from_json(json.dumps(record.body))
        except Exception as exc:
            return Response(400, error_body(400, f"Invalid JSON payload: {exc}"))
        if not record.body.get("displayName"):
            return Response(400, error_body(400, "displayName is required"))
        study = None
        if collection == "hyperparameterTuningJobs":
            spec = record.body.get("studySpec") or {}
            if not spec.get("metrics") or not spec.get("parameters") or not record.body.get("trialJobSpec"):
                return Response(400, error_body(400, "studySpec.metrics, studySpec.parameters and trialJobSpec "
                                                     "are required"))
            study = self.study({p["parameterId"]: _choices(p) for p in spec["parameters"]},
                               int(record.body.get("maxTrialCount") or 1),
                               int(record.body.get("parallelTrialCount") or 1))
        with self.lock:
            name = f"{match['parent']}/{collection}/{next(self._ids)}"
            # When it was made, to the microsecond: duplicates are told apart by it.
            made = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            job = self.add(name, {**record.body, "name": name, "createTime": made}, study=study)
            return Response(200, self._render(job))

    def _get(self, match: re.Match[str], collection: str) -> Response:
        name = f"{match['parent']}/{collection}/{match['id']}"
        with self.lock:
            job = self.jobs.get(name)
            if job is None:
                return Response(404, error_body(404, f"{COLLECTIONS[collection]} {name} not found"))
            rendered = self._render(job)
            self.advance(name)
        return Response(200, rendered)

    def _list(self, record: Recorded, match: re.Match[str], collection: str) -> Response:
        wanted = (record.query.get("filter") or [""])[0]
        rule = _LABEL_FILTER.match(wanted) if wanted else None
        if wanted and rule is None:
            return Response(400, error_body(400, f"unsupported filter {wanted!r}"))
        with self.lock:
            found = [
                self._render(j)
                for n, j in self.jobs.items()
                if str(n).startswith(f"{match['parent']}/{collection}/")
                and (rule is None or j.get("labels", {}).get(rule["key"]) == rule["value"])
            ]
        return Response(200, {collection: found} if found else {})

    def _cancel(self, match: re.Match[str], collection: str) -> Response:
        name = f"{match['parent']}/{collection}/{match['id']}"
        with self.lock:
            if name not in self.jobs:
                return Response(404, error_body(404, f"{COLLECTIONS[collection]} {name} not found"))
            if not self.cancelled(name):
                return Response(400, error_body(400, f"{COLLECTIONS[collection]} {name} is already in terminal state"))
        return Response(200, {})


# --- the harness the shared suites and benchmarks drive (omnidist.testing.Harness) ---------------

HAND_PICKED = {"T4:1": "n1-standard-4", "V100:2": "n1-standard-8", "V100:8": "n1-standard-32"}
"""Accelerator -> the machine a user writing the request by hand names (omnidist's own picks)."""


def _hand_built() -> Any:
    """A job document's CustomJob built from the SDK's messages, as a user without omnidist writes it."""
    from google.cloud import aiplatform_v1 as v1

    from omnidist.kit import parse_duration
    from omnidist_vertex.tables import ACCELERATOR_TYPES

    def build(doc: Any) -> Any:
        kind, count, env = hand_written(doc)
        machine = v1.MachineSpec(machine_type=HAND_PICKED[doc["primary"]["accelerator"]],
                                 accelerator_type=ACCELERATOR_TYPES[kind], accelerator_count=count)
        pools = [v1.WorkerPoolSpec(machine_spec=machine, replica_count=replicas, container_spec=v1.ContainerSpec(
            image_uri=doc["image"], command=doc["command"], args=doc["args"],
            env=[v1.EnvVar(name=k, value=v) for k, v in env.items()]))
            for replicas in (1, doc["workers"]["replicas"])]
        return v1.CustomJob(display_name=doc["name"], labels=doc["labels"], job_spec=v1.CustomJobSpec(
            worker_pool_specs=pools, scheduling=v1.Scheduling(timeout={"seconds": parse_duration(doc["timeout"])})))

    return build


def _printed(build: Any) -> Any:
    """The hand-built CustomJob printed as REST JSON with ``CustomJob.to_json``."""
    from google.cloud import aiplatform_v1 as v1

    return lambda doc: v1.CustomJob.to_json(build(doc))


def _direct(service: FakeService) -> Any:
    """``JobServiceClient.create_custom_job`` (REST) of the hand-built CustomJob."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform_v1

    client = aiplatform_v1.JobServiceClient(credentials=AnonymousCredentials(), transport="rest",
                                            client_options=ClientOptions(api_endpoint=service.url))
    build = _hand_built()
    return lambda doc: client.create_custom_job(parent="projects/p/locations/us-central1", custom_job=build(doc),
                                                timeout=60)


def check_request(request: Mapping[str, Any], scratch: Path) -> None:
    """The SDK's ``CustomJob`` (or ``HyperparameterTuningJob``) parses the request and prints it
    back unchanged: no field it does not know, no value of the wrong type."""
    import json

    from google.cloud import aiplatform_v1

    kind = aiplatform_v1.HyperparameterTuningJob if "studySpec" in request else aiplatform_v1.CustomJob
    back = kind.to_json(kind.from_json(json.dumps(request)), use_integers_for_enums=False,
                        including_default_value_fields=False, always_print_fields_with_no_presence=False)
    assert json.loads(back) == request, "the SDK's message does not print the request back"


HARNESS = Harness(
    check_request=check_request,
    service=FakeVertex, key_file_setting="credentials", sdk_module="google.cloud.aiplatform",
    settings=lambda url: {"project": "p", "region": "us-central1", "api_endpoint": url, "credentials": "anonymous",
                          "create_settle_s": 3.0},
    sample_settings={"machine_types": {"primary": "n1-standard-8"}, "boot_disk_type": "pd-ssd"},
    native_builder=lambda: _printed(_hand_built()),
    direct_submit=_direct)
"""Vertex for the reliability suite, the fuzzing and ``bench/``."""
