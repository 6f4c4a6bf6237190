"""Test helpers: the ``ml v1`` schema check and a fake ``projects.jobs`` service.

- :func:`schema_problems` walks a value against the discovery document that
  google-api-python-client bundles (``$ref``, ``properties``, ``additionalProperties``, ``items``,
  scalar types, ``int64`` and enums), so a compiled body can hold only what the API defines.
- :class:`FakeMLService` (a :class:`omnidist.testing.FakeService`) serves ``create``/``get``/
  ``cancel``: 409 for a taken ``jobId``, 400 with the API's wording for fields the schema does
  not define and for labels Google Cloud refuses, and states that advance on every ``get`` so
  ``wait`` ends. A job with ``trainingInput.hyperparameters`` runs its trials ``maxParallelTrials``
  at a time while it is running (:class:`omnidist.testing.FakeStudy`) and reports them in
  ``trainingOutput.trials`` as the API does (values as strings, ``finalMetric.objectiveValue``).

Reads the discovery JSON file without importing the SDK.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from omnidist.testing import FakeService, Harness
from omnidist.testing.fakeserver import Recorded, Response, error_body
from omnidist.testing.harness import hand_written
from omnidist.testing.study import FAILED, QUEUED, RUNNING, STOPPED, SUCCEEDED

JOB_SCHEMA = "GoogleCloudMlV1__Job"


@functools.lru_cache(maxsize=1)
def discovery_document() -> dict[str, Any]:
    """The ``ml v1`` discovery document shipped inside googleapiclient."""
    spec = importlib.util.find_spec("googleapiclient")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("google-api-python-client is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "discovery_cache" / "documents" / "ml.v1.json"
    return json.loads(path.read_text(encoding="utf-8"))


def schema(name: str) -> dict[str, Any]:
    """One schema of the document by name (``GoogleCloudMlV1__TrainingInput``)."""
    return discovery_document()["schemas"][name]


def _scalar_problem(value: Any, spec: dict[str, Any]) -> Optional[str]:
    kind, fmt = spec.get("type"), spec.get("format")
    if kind == "string" and fmt in ("int64", "uint64"):
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and re.fullmatch(r"-?\d+", value) is not None)
        return None if ok else f"expected an int64 (number or string of digits), got {value!r}"
    checks = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "any": lambda v: True}
    if kind in checks and not checks[kind](value):
        return f"expected {kind}, got {value!r}"
    if "enum" in spec and value not in spec["enum"]:
        return f"{value!r} is not one of {', '.join(spec['enum'])}"
    return None


def schema_problems(value: Any, spec: Any = JOB_SCHEMA, path: str = "") -> list[str]:
    """Every place where ``value`` is not what the discovery document allows (empty when valid)."""
    doc = discovery_document()
    if isinstance(spec, str):
        spec = {"$ref": spec}
    name = spec.get("$ref", "")
    if name:
        spec = doc["schemas"][name]
    if spec.get("type") == "object" or "properties" in spec:
        if not isinstance(value, dict):
            return [f"{path or '<root>'}: expected an object, got {value!r}"]
        props, extra = spec.get("properties"), spec.get("additionalProperties")
        problems: list[str] = []
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if props is not None and key in props:
                problems += schema_problems(item, props[key], where)
            elif extra is not None:
                problems += schema_problems(item, extra, where)
            else:
                problems.append(f"{where}: not a field of {name or spec.get('id', 'this object')}")
        return problems
    if spec.get("type") == "array":
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {value!r}"]
        items = spec.get("items", {})
        return [p for i, item in enumerate(value) for p in schema_problems(item, items, f"{path}[{i}]")]
    problem = _scalar_problem(value, spec)
    return [f"{path}: {problem}"] if problem else []


_JOB_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
# Google Cloud label rules, written out independently of omnidist_google.google_labels (the fake checks the client).
_LABEL_KEY = re.compile(r"^[^\W\d_][\w-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[\w-]{0,63}$")
FAILURE = "The replica master 0 exited with a non-zero status of 1."
"""The ``errorMessage`` of a job the fake fails (``fail_jobs(message)`` replaces it)."""

TRIAL_STATES = {QUEUED: "QUEUED", RUNNING: "RUNNING", SUCCEEDED: "SUCCEEDED", FAILED: "FAILED", STOPPED: "CANCELLED"}
"""A fake trial's state -> ``HyperparameterOutput.state``."""


def _choices(param: dict[str, Any]) -> list[Any]:
    """The values a fake trial draws from for one ``ParameterSpec``."""
    kind = param.get("type")
    if kind in ("DOUBLE", "INTEGER"):
        low, high = param.get("minValue", 0), param.get("maxValue", 0)
        return [low, high] if kind == "INTEGER" else [float(low), (float(low) + float(high)) / 2, float(high)]
    return list(param.get("discreteValues" if kind == "DISCRETE" else "categoricalValues") or [0])


def _text(value: Any) -> str:
    """A value as the API writes trial hyperparameters: a string (``0.01``, ``4``, ``adam``)."""
    return repr(value) if isinstance(value, float) else str(value)


class FakeMLService(FakeService):
    """``projects.jobs`` create/get/cancel, jobs keyed by ``(project, jobId)``.

    A ``get`` answers the job as it is, then moves it one state along.
    """

    ROUTES = {
        "create": ("POST", r"^/v1/projects/([^/]+)/jobs$"),
        "get": ("GET", r"^/v1/projects/([^/]+)/jobs/([^/:]+)$"),
        "cancel": ("POST", r"^/v1/projects/([^/]+)/jobs/([^/:]+):cancel$"),
    }
    TIMELINE = ("QUEUED", "PREPARING", "RUNNING", "SUCCEEDED")
    TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
    FAILURE = FAILURE

    def on_create(self, request: Recorded, match: re.Match[str]) -> Response:
        body = request.body if isinstance(request.body, dict) else {}
        problems = schema_problems(body)
        if problems:
            return Response(400, error_body(400, "Invalid JSON payload received. " + "; ".join(problems)))
        job_id = body.get("jobId", "")
        if not _JOB_ID.match(job_id):
            return Response(400, error_body(400, f"Field: job.job_id Error: invalid job id {job_id!r}"))
        labels = body.get("labels") or {}
        if len(labels) > 64:
            return Response(400, error_body(400, f"Field: job.labels Error: {len(labels)} labels, at most 64"))
        for key, value in labels.items():
            if not (_LABEL_KEY.match(key) and _LABEL_VALUE.match(value) and (key + value) == (key + value).lower()):
                return Response(400, error_body(400, f"Field: job.labels Error: invalid label {key}={value}"))
        with self.lock:
            key = (match[1], job_id)
            if key in self.jobs:
                return Response(409, error_body(409, f"Field: job.job_id Error: A job with this id already "
                                                     f"exists: {job_id}"))
            spec = (body.get("trainingInput") or {}).get("hyperparameters")
            study = None if spec is None else self.study(
                {p["parameterName"]: _choices(p) for p in spec.get("params") or []},
                int(spec.get("maxTrials") or 1), int(spec.get("maxParallelTrials") or 1))
            job = self.add(key, {**body, "createTime": "2025-01-01T00:00:00Z", "etag": "e1"}, study=study)
            return Response(200, self._render(job, key))

    def on_get(self, request: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            job = self.jobs.get((match[1], match[2]))
            if job is None:
                return Response(404, error_body(404, f"Field: name Error: The job projects/{match[1]}/jobs/"
                                                     f"{match[2]} was not found."))
            rendered = self._render(job, (match[1], match[2]))
            self.advance((match[1], match[2]))
            return Response(200, rendered)

    def on_cancel(self, request: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            job = self.jobs.get((match[1], match[2]))
            if job is None:
                message = f"The job projects/{match[1]}/jobs/{match[2]} was not found."
                return Response(404, error_body(404, message))
            if not self.cancelled((match[1], match[2])):
                return Response(400, error_body(400, f"Cannot cancel a job in state {job['state']}."))
            return Response(200, {})

    def _render(self, job: dict[str, Any], key: Any = None) -> dict[str, Any]:
        failed = job["state"] == self.FAILED and self.error_message
        rendered = {**job, "errorMessage": self.error_message} if failed else dict(job)
        study = self.studies.get(key)
        if study is not None:
            spec = job["trainingInput"]["hyperparameters"]
            output: dict[str, Any] = {"isHyperparameterTuningJob": True,
                                      "completedTrialCount": str(sum(t.state == SUCCEEDED for t in study.trials))}
            if spec.get("hyperparameterMetricTag"):
                output["hyperparameterMetricTag"] = spec["hyperparameterMetricTag"]
            if study.trials:
                output["trials"] = [self._trial(trial) for trial in study.trials]
            rendered["trainingOutput"] = output
        return rendered

    @staticmethod
    def _trial(trial: Any) -> dict[str, Any]:
        """One ``HyperparameterOutput``."""
        rendered: dict[str, Any] = {"trialId": str(trial.number), "state": TRIAL_STATES[trial.state],
                                    "hyperparameters": {k: _text(v) for k, v in trial.params.items()}}
        if trial.value is not None:
            rendered["finalMetric"] = {"trainingStep": str(trial.step), "objectiveValue": trial.value}
        return rendered


# --- the harness the shared suites and benchmarks drive (omnidist.testing.Harness) ---------------

HAND_PICKED = {"T4:1": "n1-highmem-2", "V100:2": "n1-highmem-2", "V100:8": "n1-highmem-2"}
"""Accelerator -> the machine a user writing the request by hand names (omnidist's own picks)."""


def _hand_built(endpoint: Optional[str] = None, suffix: str = "") -> Any:
    """A job document's ``projects.jobs.create`` request built with the discovery client (not
    executed), as a user without omnidist writes it."""
    from google.auth.credentials import AnonymousCredentials
    from googleapiclient.discovery import build as discovery

    from omnidist.kit import parse_duration
    from omnidist_ai_platform.catalog import ACCELERATOR_TYPES

    jobs = discovery("ml", "v1", static_discovery=True, credentials=AnonymousCredentials(), cache_discovery=False,
                     client_options={"api_endpoint": endpoint} if endpoint else None).projects().jobs()

    def build(doc: Any) -> Any:
        kind, count, env = hand_written(doc)
        machine = HAND_PICKED[doc["primary"]["accelerator"]]
        config = {"acceleratorConfig": {"count": count, "type": ACCELERATOR_TYPES[kind]}, "containerArgs": doc["args"],
                  "containerCommand": ["env", *(f"{k}={v}" for k, v in doc["env"].items()), *doc["command"]]}
        body = {"jobId": doc["name"].replace("-", "_") + suffix, "labels": doc["labels"], "trainingInput": {
            "scaleTier": "CUSTOM", "region": "us-central1", "masterType": machine,
            "masterConfig": {**config, "imageUri": doc["image"]}, "workerType": machine,
            "workerCount": doc["workers"]["replicas"], "workerConfig": config,
            "scheduling": {"maxRunningTime": f"{parse_duration(doc['timeout'])}s"}}}
        return jobs.create(parent="projects/p", body=body)

    return build


def _direct(service: FakeService) -> Any:
    """The discovery client's ``projects().jobs().create(...).execute()`` of the hand-built body."""
    import random

    build = _hand_built(service.url, suffix=f"_{random.getrandbits(32):08x}")
    return lambda doc: build(doc).execute(num_retries=0)


def check_request(request: Mapping[str, Any], scratch: Path) -> None:
    """Only fields and values of the bundled ``ml v1`` discovery document (:func:`schema_problems`)."""
    assert schema_problems(request) == [], schema_problems(request)


HARNESS = Harness(
    check_request=check_request,
    service=FakeMLService, sdk_module="googleapiclient.discovery", native_builder=_hand_built, direct_submit=_direct,
    settings=lambda url: {"project": "proj", "api_endpoint": url, "credentials": "anonymous",
                          "retry_initial_wait_s": 0.01},
    sample_settings={"scale_tier": "CUSTOM", "machine_types": {"primary": "n1-standard-8"}})
"""Legacy AI Platform for the reliability suite, the fuzzing and ``bench/``."""
