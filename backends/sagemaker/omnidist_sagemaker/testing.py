"""Test helpers: botocore's own check of a request, and a fake SageMaker (and CloudWatch Logs).

- :func:`request_problems` validates a compiled request with botocore's service model
  (``botocore.validate.validate_parameters`` against the operation's input shape: required
  members, unknown members, types, minimums) and adds what botocore leaves to the service: the
  job-name patterns, the enums and the list and map maxima of the model, and
  ``MaxWaitTimeInSeconds`` >= ``MaxRuntimeInSeconds``.
- :class:`FakeSageMaker` (a :class:`omnidist.testing.FakeService` on the kit's AWS JSON protocol)
  serves what moto does not: jobs whose ``TrainingJobStatus`` and ``SecondaryStatus`` move over
  time (``Starting``, ``Pending`` for capacity, ``Training``…), ``StopTrainingJob``,
  ``ResourceInUse`` for a taken name, refusals (``ResourceLimitExceeded``) and each job's log
  lines in CloudWatch Logs; a tuning job runs its trials as training jobs
  (:class:`omnidist.testing.FakeStudy`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omnidist.testing import AWS_JSON, FakeService, Harness
from omnidist.testing.fakeserver import Recorded, Response, aws_error
from omnidist.testing.harness import hand_written
from omnidist.testing.study import FAILED, QUEUED, RUNNING, STOPPED, SUCCEEDED

TRAINING = "SageMaker."
LOGS = "Logs_20140328."
ROLE = "arn:aws:iam::123456789012:role/omnidist-test"
ACCOUNT = "123456789012"


@functools.lru_cache(maxsize=1)
def service_model() -> Any:
    """botocore's ``sagemaker`` service model (no client, no credentials)."""
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker")


def _shape_problems(value: Any, shape: Any, path: str) -> list[str]:
    """What the model's ``max``, ``pattern`` and ``enum`` refuse (botocore checks none of them)."""
    found: list[str] = []
    kind = shape.type_name
    meta = shape.metadata
    if kind == "structure" and isinstance(value, Mapping):
        for key, item in value.items():
            if key in shape.members:
                found += _shape_problems(item, shape.members[key], f"{path}.{key}" if path else key)
    elif kind == "list" and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            found.append(f"{path}: {len(value)} items, at most {meta['max']}")
        for i, item in enumerate(value):
            found += _shape_problems(item, shape.member, f"{path}[{i}]")
    elif kind == "map" and isinstance(value, Mapping):
        if "max" in meta and len(value) > meta["max"]:
            found.append(f"{path}: {len(value)} entries, at most {meta['max']}")
        for key, item in value.items():
            found += _shape_problems(key, shape.key, f"{path} key {key!r}")
            found += _shape_problems(item, shape.value, f"{path}.{key}")
    elif kind == "string" and isinstance(value, str):
        if "max" in meta and len(value) > meta["max"]:
            found.append(f"{path}: {len(value)} characters, at most {meta['max']}")
        if getattr(shape, "enum", None) and value not in shape.enum:
            found.append(f"{path}: {value!r} is not one of the model's values")
        pattern = meta.get("pattern")
        if pattern and not _java_match(pattern, value):
            found.append(f"{path}: {value!r} does not match {pattern}")
    elif kind in ("integer", "long") and isinstance(value, int) and "max" in meta and value > meta["max"]:
        found.append(f"{path}: {value} is above {meta['max']}")
    return found


def _java_match(pattern: str, value: str) -> bool:
    """The model's patterns are Java regexes: ``\\p{L}``, ``\\p{Z}``, ``\\p{N}`` are read as Python's
    ``\\w``, ``\\s``, ``\\d`` (a pattern Python cannot read passes)."""
    translated = pattern.replace(r"\p{L}", r"\w").replace(r"\p{Z}", r"\s").replace(r"\p{N}", r"\d")
    try:
        return re.fullmatch(translated, value, flags=re.DOTALL) is not None
    except re.error:
        return True


def operation_of(request: Mapping[str, Any]) -> str:
    """The operation a request is for."""
    return "CreateHyperParameterTuningJob" if "HyperParameterTuningJobConfig" in request else "CreateTrainingJob"


def request_problems(request: Mapping[str, Any]) -> list[str]:
    """Everything botocore and the model's limits refuse in ``request`` (empty when valid)."""
    from botocore.exceptions import ParamValidationError
    from botocore.validate import validate_parameters

    shape = service_model().operation_model(operation_of(request)).input_shape
    found: list[str] = []
    try:
        validate_parameters(dict(request), shape)
    except ParamValidationError as exc:
        found.append(str(exc))
    found += _shape_problems(request, shape, "")
    definition = request.get("TrainingJobDefinition", request)
    condition = definition.get("StoppingCondition") or {}
    if condition.get("MaxWaitTimeInSeconds", 10**9) < condition.get("MaxRuntimeInSeconds", 0):
        found.append("StoppingCondition: MaxWaitTimeInSeconds is below MaxRuntimeInSeconds")
    if condition.get("MaxWaitTimeInSeconds") and not definition.get("EnableManagedSpotTraining"):
        found.append("StoppingCondition: MaxWaitTimeInSeconds is only for managed spot training")
    return found


def check_request(request: Mapping[str, Any], scratch: Path) -> None:
    """botocore's own validation of ``request`` and the model's limits (:func:`request_problems`)."""
    problems = request_problems(request)
    assert problems == [], problems


# --- the fake service ------------------------------------------------------------------------------

TRIAL_STATES = {QUEUED: "InProgress", RUNNING: "InProgress", SUCCEEDED: "Completed", FAILED: "Failed",
                STOPPED: "Stopped"}
"""A fake trial's state -> its training job's ``TrainingJobStatus``."""

TIMELINE = ("InProgress/Starting", "InProgress/Downloading", "InProgress/Training", "Completed/Completed")
"""The states a fake job steps through: ``TrainingJobStatus/SecondaryStatus``."""


def _choices(ranges: Mapping[str, Any]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for item in ranges.get("ContinuousParameterRanges") or []:
        low, high = float(item["MinValue"]), float(item["MaxValue"])
        found[item["Name"]] = [low, (low + high) / 2, high]
    for item in ranges.get("IntegerParameterRanges") or []:
        found[item["Name"]] = [int(item["MinValue"]), int(item["MaxValue"])]
    for item in ranges.get("CategoricalParameterRanges") or []:
        found[item["Name"]] = list(item["Values"])
    return found


class FakeSageMaker(FakeService):
    """SageMaker's training and tuning jobs, and CloudWatch Logs' reading calls, on one endpoint.

    Jobs are keyed by name. A describe answers the job as it is, then moves it one state along
    (:data:`TIMELINE`); each step into ``Training`` writes a log line to the job's stream.
    ``capacity(False)`` makes new jobs wait in ``Pending`` (for capacity) until it is given back;
    ``refuse(code, message)`` answers the next create with that error (``ResourceLimitExceeded``).
    """

    PROTOCOL = AWS_JSON
    ROUTES = {
        "create": ("POST", r"^SageMaker\.CreateTrainingJob$"),
        "get": ("POST", r"^SageMaker\.DescribeTrainingJob$"),
        "cancel": ("POST", r"^SageMaker\.StopTrainingJob$"),
        "tags": ("POST", r"^SageMaker\.ListTags$"),
        "tuning_create": ("POST", r"^SageMaker\.CreateHyperParameterTuningJob$"),
        "tuning_get": ("POST", r"^SageMaker\.DescribeHyperParameterTuningJob$"),
        "tuning_cancel": ("POST", r"^SageMaker\.StopHyperParameterTuningJob$"),
        "trials": ("POST", r"^SageMaker\.ListTrainingJobsForHyperParameterTuningJob$"),
        "streams": ("POST", r"^Logs_20140328\.DescribeLogStreams$"),
        "events": ("POST", r"^Logs_20140328\.GetLogEvents$"),
    }
    TIMELINE = TIMELINE
    STATE = ("_state",)
    RUNNING, FAILED, CANCELLING, CANCELLED = "InProgress/Training", "Failed/Failed", "Stopping/Stopping", \
        "Stopped/Stopped"
    TERMINAL = frozenset({"Completed/Completed", "Failed/Failed", "Stopped/Stopped"})
    FAILURE = "AlgorithmError: ExecuteUserScriptError: the training script exited with 1"

    def __init__(self, server: Any) -> None:
        super().__init__(server)
        self.logs: dict[str, list[dict[str, Any]]] = {}
        """Stream name -> its events."""
        self.refusals: list[tuple[str, str]] = []

    # --- what tests do ---------------------------------------------------------------------------

    def capacity(self, available: bool) -> None:
        """New jobs wait for capacity (two reads in ``Pending``) after starting, or not (their
        timeline otherwise as it is: a failing one still fails)."""
        rest = [s for s in self.timeline[1:] if s != "InProgress/Pending"]
        self.timeline = [self.timeline[0], *(["InProgress/Pending"] * 2 if not available else []), *rest]

    def refuse(self, code: str, message: str) -> None:
        """Answer the next create with ``code`` (400), as SageMaker refuses a quota it lacks."""
        self.refusals.append((code, message))

    def print_line(self, name: str, line: str, host: str = "algo-1") -> None:
        """Put a line in the job's stream (what the program printed)."""
        self._log(name, host, line)

    # --- routes ----------------------------------------------------------------------------------

    def _render(self, job: dict[str, Any]) -> dict[str, Any]:
        status, secondary = job["_state"].split("/")
        shown = {k: v for k, v in job.items() if not k.startswith("_")}
        key = "HyperParameterTuningJobStatus" if "HyperParameterTuningJobName" in job else "TrainingJobStatus"
        shown[key] = status
        if key == "TrainingJobStatus":
            shown["SecondaryStatus"] = secondary
        if status == "Failed":
            shown["FailureReason"] = self.error_message
        return shown

    def _create(self, body: Mapping[str, Any], name_key: str, kind: str, study: Any = None) -> Response:
        if self.refusals:
            code, message = self.refusals.pop(0)
            return aws_error(400, message, code)
        name = body.get(name_key, "")
        with self.lock:
            if name in self.jobs:
                return aws_error(400, f"Job name {name!r} is already in use.", "ResourceInUse")
            arn = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:{kind}/{name.lower()}"
            job = {**body, f"{name_key[:-4]}Arn": arn, "CreationTime": 1700000000.0 + len(self.jobs)}
            self.add(name, job, study=study)
        return Response(200, {f"{name_key[:-4]}Arn": arn})

    def on_create(self, request: Recorded, match: re.Match[str]) -> Response:
        return self._create(request.body or {}, "TrainingJobName", "training-job")

    def on_tuning_create(self, request: Recorded, match: re.Match[str]) -> Response:
        body = request.body or {}
        config = body.get("HyperParameterTuningJobConfig") or {}
        limits = config.get("ResourceLimits") or {}
        study = self.study(_choices(config.get("ParameterRanges") or {}), int(limits.get("MaxNumberOfTrainingJobs", 1)),
                           int(limits.get("MaxParallelTrainingJobs", 1)))
        return self._create(body, "HyperParameterTuningJobName", "hyper-parameter-tuning-job", study)

    def _describe(self, name: str, tuning: bool) -> Response:
        with self.lock:
            job = self.jobs.get(name)
            if job is None or ("HyperParameterTuningJobName" in job) != tuning:
                return aws_error(400, "Requested resource not found.", "ValidationException" if not tuning
                                 else "ResourceNotFound")
            shown = self._render(job)
            self.advance(name)
            return Response(200, shown)

    def on_get(self, request: Recorded, match: re.Match[str]) -> Response:
        return self._describe((request.body or {}).get("TrainingJobName", ""), tuning=False)

    def on_tuning_get(self, request: Recorded, match: re.Match[str]) -> Response:
        return self._describe((request.body or {}).get("HyperParameterTuningJobName", ""), tuning=True)

    def _stop(self, name: str) -> Response:
        with self.lock:
            job = self.jobs.get(name)
            if job is None:
                return aws_error(400, "Requested resource not found.", "ResourceNotFound")
            if not self.cancelled(name):
                status = job["_state"].split("/")[0]
                return aws_error(400, f"The request was rejected because the job is in status {status}.",
                                 "ValidationException")
            return Response(200, {})

    def on_cancel(self, request: Recorded, match: re.Match[str]) -> Response:
        return self._stop((request.body or {}).get("TrainingJobName", ""))

    def on_tuning_cancel(self, request: Recorded, match: re.Match[str]) -> Response:
        return self._stop((request.body or {}).get("HyperParameterTuningJobName", ""))

    def on_tags(self, request: Recorded, match: re.Match[str]) -> Response:
        arn = (request.body or {}).get("ResourceArn", "")
        with self.lock:
            job = next((j for j in self.jobs.values() if arn in (j.get("TrainingJobArn"),
                                                                  j.get("HyperParameterTuningJobArn"))), None)
        if job is None:
            return aws_error(400, f"{arn} not found", "ResourceNotFound")
        return Response(200, {"Tags": job.get("Tags") or []})

    def on_trials(self, request: Recorded, match: re.Match[str]) -> Response:
        name = (request.body or {}).get("HyperParameterTuningJobName", "")
        with self.lock:
            study = self.studies.get(name)
            job = self.jobs.get(name)
            if study is None or job is None:
                return aws_error(400, "Requested resource not found.", "ResourceNotFound")
            metric = job["HyperParameterTuningJobConfig"].get("HyperParameterTuningJobObjective", {})
            summaries = [self._summary(name, trial, metric) for trial in study.trials]
        return Response(200, {"TrainingJobSummaries": list(reversed(summaries))})

    def _summary(self, name: str, trial: Any, metric: Mapping[str, Any]) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "TrainingJobName": f"{name}-{trial.number:03d}-{trial.number:08x}",
            "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/{name}-{trial.number:03d}",
            "CreationTime": 1700000000.0 + trial.number, "TrainingJobStatus": TRIAL_STATES[trial.state],
            "TunedHyperParameters": {k: json.dumps(v) if isinstance(v, str) else str(v)
                                     for k, v in trial.params.items()},
        }
        if trial.value is not None:
            summary["FinalHyperParameterTuningJobObjectiveMetric"] = {"MetricName": metric.get("MetricName", ""),
                                                                      "Value": trial.value}
        if trial.state == FAILED:
            summary["FailureReason"] = self.error_message
        return summary

    def stepped(self, key: Any, job: dict[str, Any]) -> None:
        """A training job that steps into ``Training`` prints a line on each host."""
        if "TrainingJobName" not in job or job["_state"] != self.RUNNING:
            return
        count = int((job.get("ResourceConfig") or {}).get("InstanceCount") or 1)
        for i in range(count):
            self._log(key, f"algo-{i + 1}", f"epoch {self.steps(key)} on algo-{i + 1}")
        if self.error_message != self.FAILURE:
            self._log(key, "algo-1", self.error_message)

    def _log(self, name: str, host: str, line: str) -> None:
        stream = f"{name}/{host}-1700000000"
        with self.lock:
            self.logs.setdefault(stream, []).append({"timestamp": 1700000000000 + len(self.logs.get(stream, [])),
                                                     "message": line, "ingestionTime": 1700000000000})

    def on_streams(self, request: Recorded, match: re.Match[str]) -> Response:
        body = request.body or {}
        prefix = body.get("logStreamNamePrefix", "")
        with self.lock:
            names = sorted(s for s in self.logs if s.startswith(prefix))
        if not self.logs:
            return aws_error(400, "The specified log group does not exist.", "ResourceNotFoundException")
        return Response(200, {"logStreams": [{"logStreamName": n} for n in names]})

    def on_events(self, request: Recorded, match: re.Match[str]) -> Response:
        body = request.body or {}
        stream = body.get("logStreamName", "")
        start = int(str(body.get("nextToken") or "f/0").split("/")[1])
        with self.lock:
            events = list(self.logs.get(stream, []))
        page = events[start:start + 2]  # small pages: a reader must follow nextForwardToken
        end = start + len(page)
        return Response(200, {"events": page, "nextForwardToken": f"f/{end}", "nextBackwardToken": f"b/{start}"})


# --- the harness the shared suites and benchmarks drive ---------------------------------------------

HAND_PICKED = {"T4:1": "ml.g4dn.xlarge", "V100:2": "ml.p3.8xlarge", "V100:8": "ml.p3.16xlarge"}
"""Accelerator -> the instance type a user writing the request by hand names."""


def _hand_built(suffix: str = "") -> Any:
    """A job document's ``CreateTrainingJob`` keyword arguments written by hand, checked by botocore's
    own validation (what boto3 does before sending), as a user without omnidist writes them."""
    from botocore.validate import validate_parameters

    from omnidist.kit import parse_duration

    shape = service_model().operation_model("CreateTrainingJob").input_shape

    def build(doc: Any) -> dict[str, Any]:
        kind, count, env = hand_written(doc)
        nodes = 1 + int((doc.get("workers") or {}).get("replicas", 0))
        request = {
            "TrainingJobName": doc["name"] + suffix, "RoleArn": ROLE,
            "AlgorithmSpecification": {"TrainingImage": doc["image"], "TrainingInputMode": "File",
                                       "ContainerEntrypoint": list(doc["command"]),
                                       "ContainerArguments": list(doc["args"])},
            "ResourceConfig": {"InstanceType": HAND_PICKED[doc["primary"]["accelerator"]], "InstanceCount": nodes,
                               "VolumeSizeInGB": 30},
            "OutputDataConfig": {"S3OutputPath": "s3://omnidist-test/out"},
            "StoppingCondition": {"MaxRuntimeInSeconds": parse_duration(doc["timeout"])},
            "Environment": env, "Tags": [{"Key": k, "Value": v} for k, v in doc["labels"].items()],
        }
        validate_parameters(request, shape)
        return request

    return build


def _direct(service: FakeService) -> Any:
    """boto3's ``create_training_job(**request)`` of the hand-built request, on the fake."""
    import random

    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    client = boto3.session.Session(region_name="us-east-1").client(
        "sagemaker", endpoint_url=service.url,
        config=Config(signature_version=UNSIGNED, retries={"total_max_attempts": 1}))

    def submit(doc: Any) -> Any:
        request = _hand_built(f"-{random.getrandbits(32):08x}")(doc)
        return client.create_training_job(**request)

    return submit


def settings(url: str) -> dict[str, Any]:
    """Settings that point the real boto3 clients at a fake on ``url``, unsigned."""
    return {"region": "us-east-1", "endpoint_url": url, "credentials": "anonymous", "role_arn": ROLE,
            "base_output_dir": "s3://omnidist-test/out", "retry_initial_wait_s": 0.01}


HARNESS = Harness(
    service=FakeSageMaker, settings=settings, sdk_module="boto3", check_request=check_request,
    native_builder=_hand_built, direct_submit=_direct, required_settings={"role_arn": ROLE},
    migration_settings={"role_arn": ROLE, "staging_bucket": "s3://migrated-staging", "data_map": {
        "azureml://": "s3://migrated-data/azureml/", "gs://": "s3://migrated-data/gs/",
        "https://azuremlexamples.blob.core.windows.net/": "s3://migrated-data/azuremlexamples/",
        "wasbs://datasets@azuremlexamples.blob.core.windows.net/": "s3://migrated-data/azuremlexamples/"}},
    trial_number=lambda trial: int(trial.rsplit("-", 2)[-2]),
    sample_settings={"role_arn": ROLE, "instance_types": {"primary": "ml.p3.2xlarge"}, "volume_gb": 50,
                     "base_output_dir": "s3://omnidist-test/out"})
"""SageMaker for the reliability suite, the fuzzing and ``bench/``."""

