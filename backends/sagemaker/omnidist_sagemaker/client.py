"""The SageMaker client: boto3 (``sagemaker``, ``logs``, ``s3``), imported lazily.

:class:`SageMakerClient` is the protocol of :class:`omnidist.submission.clients.Client`; the template
retries, creates exactly once, cancels unless finished and masks. botocore's own retries are off
(``total_max_attempts: 1``): every retry is the template's. A create is made safe to repeat by a
unique job name chosen once per submit and a request-id tag
(:attr:`~omnidist.submission.clients.Idempotency.CHOSEN_ID`): ``ResourceInUse`` means the name is
taken, and the job holding it is adopted only when its ``omnidist-request-id`` tag is this
submit's. A job id is the job's name (or its ARN); a tuning job is found under the same name.
Logs are read from CloudWatch Logs (``/aws/sagemaker/TrainingJobs``, one stream per host).
A local code folder is uploaded to S3 once per content (:func:`omnidist.kit.stage_folder`). The
boto3 set-up, botocore's errors, S3 and CloudWatch are the AWS vendor kit's (:mod:`omnidist_aws`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Optional

import attrs

from omnidist.kit import (
    FLAT_ARCHIVE,
    REQUEST_ID_LABEL,
    BackendError,
    ConflictError,
    Ending,
    Idempotency,
    JobState,
    JobStatus,
    Keyed,
    LogPage,
    LogStart,
    NotFoundError,
    ReadsLogs,
    ReadsTrials,
    ReportsShortage,
    Shortage,
    StagesCode,
    classify_ending,
    stage_folder,
)
from omnidist_aws import cloudwatch, s3, session
from omnidist_sagemaker import tuning
from omnidist_sagemaker.code_data import CODE_OBJECT, default_bucket
from omnidist_sagemaker.settings import SageMakerSettings
from omnidist_sagemaker.tables import (
    FAILURE_ENDINGS,
    JOB_STATES,
    LOG_GROUP,
    NAME,
    SECONDARY_ENDINGS,
    SECONDARY_STATES,
    SHORTAGE_CODES,
    TUNING_JOB_NAME_MAX,
)

if TYPE_CHECKING:
    from omnidist.kit import CompiledJob

TRAINING_NAME_MAX = 63

NOT_FOUND_TEXT = ("Requested resource not found", "does not exist", "not found", "Could not find")
"""SageMaker answers a describe of a job that does not exist with a ValidationException saying so
(moto, the local stand-in for its API: "Could not find training job …")."""


def aws_client(settings: SageMakerSettings, service: str) -> Any:
    """A boto3 client of ``service`` with botocore's retries off and the settings' timeouts and endpoint
    (``s3_endpoint_url`` for S3 when set)."""
    endpoint = (service == "s3" and settings.s3_endpoint_url) or settings.endpoint_url
    return session.client(service, region=settings.region, profile=settings.aws_profile,
                          endpoint=endpoint, credentials=settings.credentials,
                          timeout=settings.request_timeout_s, profile_setting=f"backends.{NAME}.aws_profile")


def translate_error(exc: BaseException) -> Optional[BackendError]:
    """omnidist's error for a botocore exception (``None`` when it is not one)."""
    return session.translate_error(exc, backend=NAME, not_found_text=NOT_FOUND_TEXT)


def _tuning(request: Any) -> bool:
    return "HyperParameterTuningJobConfig" in request


def _name_of(job_id: str) -> tuple[Optional[str], str]:
    """``(kind, name)`` of a job id: an ARN says its kind (``training-job``, ``hyper-parameter-tuning-job``)."""
    if job_id.startswith("arn:") and "/" in job_id:
        kind = job_id.split(":")[5].split("/")[0]
        return kind, job_id.split("/", 1)[1]
    return None, job_id


def _instances(job: dict[str, Any]) -> int:
    """How many instances a described training job runs on (its instance groups' together)."""
    config = job.get("ResourceConfig") or {}
    groups = config.get("InstanceGroups") or []
    return sum(int(g.get("InstanceCount", 0)) for g in groups) if groups else int(config.get("InstanceCount") or 1)


class SageMakerClient(StagesCode[dict], ReportsShortage[dict], ReadsTrials[dict], ReadsLogs[dict]):
    """``create``/``describe``/``stop`` training and tuning jobs; native jobs are boto3's answers as dicts."""

    idempotency = Idempotency.CHOSEN_ID

    @functools.cached_property
    def _sagemaker(self) -> Any:
        return aws_client(self.settings, "sagemaker")

    @functools.cached_property
    def _logs(self) -> Any:
        return aws_client(self.settings, "logs")

    @functools.cached_property
    def _s3(self) -> Any:
        return aws_client(self.settings, "s3")

    def translate(self, exc: BaseException) -> Optional[BackendError]:
        """botocore's errors by code and status (throttling and 5xx transient)."""
        return translate_error(exc)

    def shortage(self, exc: BaseException, error: BackendError) -> Optional[Shortage]:
        """A quota or capacity refusal by its AWS error code (:data:`~omnidist_sagemaker.tables.SHORTAGE_CODES`:
        ``ResourceLimitExceeded`` is the account's instance quota), else the template's reading."""
        found = SHORTAGE_CODES.get(session.error_code(exc))
        return Shortage(found) if found is not None else super().shortage(exc, error)

    # --- create ------------------------------------------------------------------------------

    def prepare(self, compiled: CompiledJob) -> CompiledJob:
        """Upload a local code folder to the staging bucket (once per content; the files at the
        archive's root, as script mode unpacks them)."""
        if compiled.job is None or compiled.job.code is None:
            return compiled
        bucket = self.settings.staging_bucket or default_bucket(self.settings)
        store = s3.object_store(lambda: self._s3, translate_error)
        request = stage_folder(compiled, self, store, f"{bucket.rstrip('/')}/{CODE_OBJECT}", layout=FLAT_ARCHIVE)
        return attrs.evolve(compiled, request=request)

    def keyed(self, compiled: CompiledJob) -> Keyed:
        """The create request: the job's name with a unique suffix, and the request-id tag."""
        request = dict(compiled.request)
        key_name, limit = (("HyperParameterTuningJobName", TUNING_JOB_NAME_MAX) if _tuning(request)
                           else ("TrainingJobName", TRAINING_NAME_MAX))
        suffix = self.suffix()
        stem = request[key_name][:limit - len(suffix) - 1].rstrip("-")
        request[key_name] = f"{stem}-{suffix}"
        key = self.request_id()
        request["Tags"] = [*(t for t in request.get("Tags") or [] if t.get("Key") != REQUEST_ID_LABEL),
                           {"Key": REQUEST_ID_LABEL, "Value": key}]
        return Keyed(request=request, key=key)

    def create_job(self, keyed: Keyed) -> dict[str, Any]:
        """``CreateTrainingJob`` (``CreateHyperParameterTuningJob``); the answer with the job's name."""
        if _tuning(keyed.request):
            answer = self._sagemaker.create_hyper_parameter_tuning_job(**keyed.request)
            return {"HyperParameterTuningJobName": keyed.request["HyperParameterTuningJobName"], **answer}
        answer = self._sagemaker.create_training_job(**keyed.request)
        return {"TrainingJobName": keyed.request["TrainingJobName"], **answer}

    def find_jobs(self, keyed: Keyed) -> list[dict[str, Any]]:
        """The job holding the chosen name, when it carries this submit's request-id tag."""
        name = keyed.request.get("HyperParameterTuningJobName") or keyed.request["TrainingJobName"]
        job = self.get_job(name)
        arn = job.get("HyperParameterTuningJobArn") or job.get("TrainingJobArn")
        tags = self._sagemaker.list_tags(ResourceArn=arn).get("Tags") or []
        ours = any(t.get("Key") == REQUEST_ID_LABEL and t.get("Value") == keyed.key for t in tags)
        return [job] if ours else []

    def conflict(self, keyed: Keyed, exc: ConflictError) -> BackendError:
        """The name belongs to a job this submit did not make."""
        name = keyed.request.get("HyperParameterTuningJobName") or keyed.request["TrainingJobName"]
        return ConflictError(f"a SageMaker job named {name!r} already exists and this submit did not make it (it is "
                             f"not tagged {REQUEST_ID_LABEL}={keyed.key}; {exc}); submit again for a new suffix",
                             backend=NAME, status=409)

    def id_of(self, keyed: Keyed, job: dict[str, Any]) -> str:
        """The job's name."""
        return job.get("HyperParameterTuningJobName") or job.get("TrainingJobName") or keyed.request.get(
            "TrainingJobName", "")

    # --- follow ------------------------------------------------------------------------------

    def get_job(self, job_id: str) -> dict[str, Any]:
        """``DescribeTrainingJob``, else (not found, or an ARN saying so) ``DescribeHyperParameterTuningJob``."""
        kind, name = _name_of(job_id)
        if kind != "hyper-parameter-tuning-job":
            try:
                return self._described(self.translated(
                    lambda: self._sagemaker.describe_training_job(TrainingJobName=name)), "DescribeTrainingJob")
            except NotFoundError:
                if kind == "training-job" or len(name) > TUNING_JOB_NAME_MAX:
                    raise
        return self._described(self._sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name),
                               "DescribeHyperParameterTuningJob")

    def _described(self, answer: dict[str, Any], operation: str) -> dict[str, Any]:
        """``answer`` when it is a job. An endpoint that answers 200 with no job in it (a local
        stand-in that cannot place the request: moto with unsigned requests) is a clear error, not a
        job of unknown state."""
        if "TrainingJobName" in answer or "HyperParameterTuningJobName" in answer:
            return answer
        where = self.settings.endpoint_url or "SageMaker"
        raise BackendError(f"{where} answered {operation} with no job in it (HTTP "
                           f"{(answer.get('ResponseMetadata') or {}).get('HTTPStatusCode', '?')}): check "
                           f"backends.{NAME}.endpoint_url, and that requests are signed (credentials: a local "
                           "AWS stand-in such as moto places each request by its signature)", backend=NAME)

    def cancel_job(self, job_id: str) -> None:
        """``StopTrainingJob`` (``StopHyperParameterTuningJob``)."""
        job = self.get_job(job_id)
        if "HyperParameterTuningJobName" in job:
            self._sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=job["HyperParameterTuningJobName"])
        else:
            self._sagemaker.stop_training_job(TrainingJobName=job["TrainingJobName"])

    def status_of(self, job: dict[str, Any]) -> JobStatus:
        """The status through :data:`~omnidist_sagemaker.tables.JOB_STATES`; an ``InProgress`` job's
        ``SecondaryStatus`` (queued for capacity, starting, training) through ``SECONDARY_STATES``."""
        native = str(job.get("TrainingJobStatus") or job.get("HyperParameterTuningJobStatus") or "")
        state = JOB_STATES.get(native, JobState.UNKNOWN)
        secondary = str(job.get("SecondaryStatus") or "")
        if state is JobState.RUNNING and secondary in SECONDARY_STATES:
            state = SECONDARY_STATES[secondary]
        shown = f"{native}/{secondary}" if secondary and secondary != native else native
        return JobStatus(state=state, native_state=shown, message=str(job.get("FailureReason") or ""))

    def ending_of(self, job: dict[str, Any], status: JobStatus) -> Optional[Ending]:
        """``SecondaryStatus`` ``MaxWaitTimeExceeded`` is a preemption (spot interruptions outlasted
        the wait); a ``FailureReason`` of ``CapacityError`` capacity, ``InternalServerError`` a lost
        instance (:data:`~omnidist_sagemaker.tables.FAILURE_ENDINGS`); else the portable state."""
        if not status.state.terminal:
            return None
        secondary = str(job.get("SecondaryStatus") or "")
        if secondary in SECONDARY_ENDINGS:
            return SECONDARY_ENDINGS[secondary]
        return classify_ending(status, FAILURE_ENDINGS)

    def with_trials(self, job_id: str, job: dict[str, Any], status: JobStatus) -> JobStatus:
        """A tuning job's trials (its training jobs) and best trial."""
        name = job.get("HyperParameterTuningJobName")
        if not name:
            return status
        summaries: list[dict[str, Any]] = []
        token: Optional[str] = None
        while True:
            extra = {"NextToken": token} if token else {}
            page = self.call(lambda: self._sagemaker.list_training_jobs_for_hyper_parameter_tuning_job(  # noqa: B023
                HyperParameterTuningJobName=name, MaxResults=100, **extra))  # noqa: B023
            summaries += page.get("TrainingJobSummaries") or []
            token = page.get("NextToken")
            if not token:
                break
        metric, trials, best = tuning.trials_of(job, summaries)
        return attrs.evolve(status, metric=metric, trials=trials, best=best)

    def state_line(self, job_id: str, status: JobStatus) -> str:
        """``state: running (InProgress/Training)`` with a failed job's reason."""
        native = f" ({status.native_state})" if status.native_state else ""
        return f"state: {status.state.value}{native}" + (f" — {status.message}" if status.message else "")

    # --- logs --------------------------------------------------------------------------------

    def open_logs(self, job_id: str) -> LogStart:
        """Where the lines come from: CloudWatch Logs, one stream per host."""
        _, name = _name_of(job_id)
        return LogStart(header=(f"logs: CloudWatch Logs {LOG_GROUP}, streams {name}/…",), cursor={})

    def read_logs(self, job_id: str, cursor: Any, *, follow: bool) -> LogPage:
        """The job's state, then the new events of each of its streams (``[algo-2] `` before each line
        when the job runs on several instances)."""
        job = self.call(lambda: self.get_job(job_id))
        status = self._status(job_id, job)
        name = job.get("TrainingJobName")
        if not name:  # a tuning job: its trials log under their own names
            return LogPage(status=status, secrets=self.secrets_of(job))
        tokens = dict(cursor or {})
        lines: list[str] = []
        several = _instances(job) > 1
        for stream in cloudwatch.streams(self.call, self._logs, LOG_GROUP, f"{name}/"):
            host = stream[len(name) + 1:].rsplit("-", 1)[0] if stream.startswith(name + "/") else stream
            for message in cloudwatch.events(self.call, self._logs, LOG_GROUP, stream, tokens):
                lines.append(f"[{host}] {message}" if several else message)
        return LogPage(status=status, lines=lines, secrets=self.secrets_of(job), cursor=tokens)
