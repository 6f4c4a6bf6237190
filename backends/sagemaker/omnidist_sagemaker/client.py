"""The SageMaker client: boto3 (``sagemaker``, ``logs``, ``s3``), imported lazily.

:class:`SageMakerClient` is the protocol of :class:`omnidist.submission.clients.Client`; the template
retries, creates exactly once, cancels unless finished and masks. botocore's own retries are off
(``total_max_attempts: 1``): every retry is the template's. A create is made safe to repeat by a
unique job name chosen once per submit and a request-id tag
(:attr:`~omnidist.submission.clients.Idempotency.CHOSEN_ID`): ``ResourceInUse`` means the name is
taken, and the job holding it is adopted only when its ``omnidist-request-id`` tag is this
submit's. A job id is the job's name (or its ARN); a tuning job is found under the same name.
Logs are read from CloudWatch Logs (``/aws/sagemaker/TrainingJobs``, one stream per host).
A local code folder is uploaded to S3 once per content (:func:`omnidist.kit.stage_folder`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import socket
from typing import TYPE_CHECKING, Any, BinaryIO, Optional

import attrs

from omnidist.kit import (
    FLAT_ARCHIVE,
    REQUEST_ID_LABEL,
    AuthenticationError,
    BackendError,
    Client,
    ConfigError,
    ConflictError,
    Idempotency,
    InvalidRequestError,
    JobState,
    JobStatus,
    Keyed,
    LogPage,
    LogStart,
    NotFoundError,
    ObjectStore,
    PermissionDeniedError,
    Shortage,
    TransientBackendError,
    error_for_status,
    parse_retry_after,
    stage_folder,
)
from omnidist_sagemaker import tuning
from omnidist_sagemaker.code_data import CODE_OBJECT, default_bucket
from omnidist_sagemaker.settings import SageMakerSettings
from omnidist_sagemaker.tables import (
    JOB_STATES,
    LOG_GROUP,
    NAME,
    SECONDARY_STATES,
    SHORTAGE_CODES,
    TUNING_JOB_NAME_MAX,
)

if TYPE_CHECKING:
    from omnidist.kit import CompiledJob

TRAINING_NAME_MAX = 63

MD5_ETAG = re.compile(r"[0-9a-f]{32}")
"""An S3 ETag that is the object's MD5 (not a multipart or KMS-encrypted object's)."""

THROTTLING = frozenset({"RequestLimitExceeded", "SlowDown", "Throttling", "ThrottlingException",
                        "TooManyRequestsException", "ThrottledException", "ProvisionedThroughputExceededException"})
"""Error codes AWS throttles with (retried, like a 429)."""

NOT_FOUND = frozenset({"NoSuchBucket", "NoSuchKey", "NotFound", "ResourceNotFound", "ResourceNotFoundException", "404"})

NOT_FOUND_TEXT = ("Requested resource not found", "does not exist", "not found", "Could not find")
"""SageMaker answers a describe of a job that does not exist with a ValidationException saying so
(moto, the local stand-in for its API: "Could not find training job …")."""

AUTH = frozenset({"ExpiredTokenException", "IncompleteSignature", "InvalidClientTokenId", "MissingAuthenticationToken",
                  "UnrecognizedClientException", "InvalidSignatureException"})


NO_CREDENTIALS = ("no AWS credentials: run `aws configure` (or `aws sso login`), or set AWS_ACCESS_KEY_ID and "
                  "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE to a profile of ~/.aws/config; credentials = \"anonymous\" "
                  "for a local endpoint")
"""The error for a machine where boto3's chain (environment, ``~/.aws``, the instance's role) found
no credentials: one line, exit 1, as on the other clouds."""


def aws_client(settings: SageMakerSettings, service: str) -> Any:
    """A boto3 client of ``service`` with botocore's retries off and the settings' timeouts and endpoint
    (one per process for the same settings: a client reads its service model once, and is thread-safe)."""
    return _client(service, settings.region, settings.aws_profile, settings.endpoint_url, settings.credentials,
                   settings.request_timeout_s)


@functools.lru_cache(maxsize=32)
def _client(service: str, region: str, profile: Optional[str], endpoint: Optional[str], credentials: str,
            timeout: float) -> Any:
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config
    from botocore.exceptions import ProfileNotFound

    config = Config(retries={"total_max_attempts": 1}, connect_timeout=timeout, read_timeout=timeout,
                    signature_version=UNSIGNED if credentials == "anonymous" else None)
    try:
        session = boto3.session.Session(profile_name=profile, region_name=region)
    except ProfileNotFound as exc:  # a setting that names nothing: the user's to fix, not the cloud's
        raise ConfigError(f"backends.{NAME}.aws_profile: {profile!r} is not a profile of ~/.aws/config or "
                          "~/.aws/credentials (AWS_CONFIG_FILE); name one of them, or leave aws_profile out "
                          "for boto3's default chain") from exc
    return session.client(service, endpoint_url=endpoint, config=config)


def _code(exc: Any) -> str:
    return str((getattr(exc, "response", None) or {}).get("Error", {}).get("Code", ""))


def _status(exc: Any) -> Optional[int]:
    status = ((getattr(exc, "response", None) or {}).get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def translate_error(exc: BaseException) -> Optional[BackendError]:
    """omnidist's error for a botocore exception (``None`` when it is not one)."""
    from botocore import exceptions as aws

    if isinstance(exc, aws.ClientError):
        code, status = _code(exc), _status(exc)
        message = str(exc.response.get("Error", {}).get("Message") or "")
        text = f"{code}: {message}" if code and message else (message or code or str(exc))
        headers = (exc.response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
        after = parse_retry_after(headers.get("retry-after"))
        if code in THROTTLING:
            return TransientBackendError(text, backend=NAME, status=status or 429, retry_after=after)
        if code in NOT_FOUND or (code == "ValidationException" and any(t in message for t in NOT_FOUND_TEXT)):
            return NotFoundError(text, backend=NAME, status=status or 404)
        if code == "ResourceInUse":
            return ConflictError(text, backend=NAME, status=409)
        if code in AUTH:
            return AuthenticationError(text, backend=NAME, status=status)
        if code in ("AccessDeniedException", "AccessDenied"):
            return PermissionDeniedError(text, backend=NAME, status=status or 403)
        return error_for_status(status)(text, backend=NAME, status=status, retry_after=after)
    if isinstance(exc, (aws.ConnectionClosedError, aws.ReadTimeoutError, aws.ConnectTimeoutError,
                        aws.EndpointConnectionError, ConnectionError, TimeoutError, socket.timeout)):
        return TransientBackendError(f"connection failed ({type(exc).__name__}: {exc})", backend=NAME)
    if isinstance(exc, aws.NoCredentialsError):
        return AuthenticationError(NO_CREDENTIALS, backend=NAME)
    if isinstance(exc, aws.ParamValidationError):
        return InvalidRequestError(f"boto3 refused the request: {exc}", backend=NAME)
    if isinstance(exc, aws.BotoCoreError):
        return BackendError(f"{type(exc).__name__}: {exc}", backend=NAME)
    return None


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


def split_s3(uri: str) -> tuple[str, str]:
    """``s3://BUCKET/KEY`` -> ``(BUCKET, KEY)``."""
    bucket, _, key = uri[len("s3://"):].partition("/")
    return bucket, key


class SageMakerClient(Client[dict]):
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
        found = SHORTAGE_CODES.get(_code(exc))
        return Shortage(found) if found is not None else super().shortage(exc, error)

    # --- create ------------------------------------------------------------------------------

    def prepare(self, compiled: CompiledJob) -> CompiledJob:
        """Upload a local code folder to the staging bucket (once per content; the files at the
        archive's root, as script mode unpacks them)."""
        if compiled.job is None or compiled.job.code is None:
            return compiled
        bucket = self.settings.staging_bucket or default_bucket(self.settings)
        store = ObjectStore(stored=self._stored, upload=self._upload, translate=translate_error)
        request = stage_folder(compiled, self, store, f"{bucket.rstrip('/')}/{CODE_OBJECT}", layout=FLAT_ARCHIVE)
        return attrs.evolve(compiled, request=request)

    def _stored(self, uri: str) -> Optional[str]:
        """The object's MD5 (base64): its ETag when that is one (a single-part upload without
        KMS), else read from its bytes; ``None`` when nothing is there."""
        from botocore import exceptions as aws

        bucket, key = split_s3(uri)
        try:
            head = self._s3.head_object(Bucket=bucket, Key=key)
        except aws.ClientError as exc:
            if _status(exc) == 404 or _code(exc) in NOT_FOUND:
                return None
            raise
        etag = str(head.get("ETag") or "").strip('"')
        if MD5_ETAG.fullmatch(etag):
            return base64.b64encode(bytes.fromhex(etag)).decode()
        digest = hashlib.md5(usedforsecurity=False)
        body = self._s3.get_object(Bucket=bucket, Key=key)["Body"]
        for chunk in iter(lambda: body.read(1 << 20), b""):
            digest.update(chunk)
        return base64.b64encode(digest.digest()).decode()

    def _upload(self, uri: str, stream: BinaryIO, size: int) -> None:
        bucket, key = split_s3(uri)
        self._s3.put_object(Bucket=bucket, Key=key, Body=stream, ContentLength=size,
                            ContentType="application/gzip")

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
        for stream in self._streams(name):
            host = stream[len(name) + 1:].rsplit("-", 1)[0] if stream.startswith(name + "/") else stream
            for message in self._events(stream, tokens):
                lines.append(f"[{host}] {message}" if several else message)
        return LogPage(status=status, lines=lines, secrets=self.secrets_of(job), cursor=tokens)

    def _streams(self, name: str) -> list[str]:
        found: list[str] = []
        token: Optional[str] = None
        while True:
            extra = {"nextToken": token} if token else {}
            try:
                page = self.call(lambda: self._logs.describe_log_streams(  # noqa: B023
                    logGroupName=LOG_GROUP, logStreamNamePrefix=f"{name}/", **extra))  # noqa: B023
            except NotFoundError:  # no log group until a container has logged
                return []
            found += [s["logStreamName"] for s in page.get("logStreams") or []]
            token = page.get("nextToken")
            if not token:
                return sorted(found)

    def _events(self, stream: str, tokens: dict[str, str]) -> list[str]:
        lines: list[str] = []
        while True:
            token = tokens.get(stream)
            extra = {"nextToken": token} if token else {}
            page = self.call(lambda: self._logs.get_log_events(  # noqa: B023
                logGroupName=LOG_GROUP, logStreamName=stream, startFromHead=True, **extra))  # noqa: B023
            events = page.get("events") or []
            lines += [str(e.get("message", "")).rstrip("\n") for e in events]
            following = page.get("nextForwardToken")
            if not events or not following or following == token:
                if following:
                    tokens[stream] = following
                return lines
            tokens[stream] = following
