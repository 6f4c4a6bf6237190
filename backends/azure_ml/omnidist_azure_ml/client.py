"""Azure ML through ``azure.ai.ml.MLClient``: the protocol of :class:`omnidist.submission.clients.Client`.

The SDK is imported inside these functions only (it costs 1-2 s). Its own retries are
turned off (``retry_total=0``) so every attempt is the template's: SDK exceptions are translated
here into omnidist's tree and only :class:`~omnidist.errors.TransientBackendError` is retried.
A create is a PUT by job name, and the name is fixed once per submit
(:attr:`~omnidist.submission.clients.Idempotency.NAME`), so a retried create cannot make a second job; a
retry first looks the name up.

``settings.endpoint`` points every management call at another resource manager (a sovereign
cloud, or the local fake server in tests) through the SDK's ``cloud``/``cloud_metadata``
(verified with azure-ai-ml 1.35.2; the SDK registers the cloud in a process-wide table and
sets ``AZUREML_CURRENT_CLOUD`` for the process).

``logs`` reads the job's log files where ``jobs.stream`` reads them, from the workspace's
run-history service (found through its discovery document) and the blob SAS URLs it lists,
with the same one-attempt-per-request rule. A failed job's message is its run's error there too.
The values of secret-looking ``environment_variables`` of the job are masked in both.

A job with a ``tuning`` block is a sweep job, created and followed the same way (``load_job``
reads the compiled sweep YAML, the PUT is by name). Its trials are its child runs, read from the
same run history as ``jobs.list(parent_job_name=…)`` reads them (``runs/{name}/children``), each
with the last value it logged for the primary metric (the run history's metrics service,
``metric/v2.0/…/runs/{child}/full``) and the values the sweep recorded for it in its tags.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import attrs

from omnidist.kit import (
    PROGRESS_ABOVE_BYTES,
    BackendError,
    ConfigError,
    Ending,
    Idempotency,
    InvalidRequestError,
    JobState,
    JobStatus,
    Keyed,
    LogPage,
    LogStart,
    OmnidistError,
    ReadsLogs,
    ReadsTrials,
    ReportsShortage,
    Shortage,
    StagedCode,
    StagesCode,
    classify_ending,
    code_folder,
    dump_yaml,
    large_folder_warning,
    scan_folder,
    secret_values,
    stage,
)
from omnidist_azure import credentials, storage
from omnidist_azure.credentials import PUBLIC_CLOUD, credential, plain_http_policy
from omnidist_azure_ml.settings import AzureMLSettings
from omnidist_azure_ml.tables import FAILURE_ENDINGS, NAME, SHORTAGE_CODES, native_state

if TYPE_CHECKING:
    from omnidist.kit import CompiledJob

EXPERIMENTAL_LOGGERS = ("azure.ai.ml._utils._experimental", "azure.ai.ml._schema.core.fields")
"""Where the SDK says a field or class is experimental (``queue_settings``, ``QueueSettings``), once per
process on a handler of its own (the ``azure.ai.ml`` logger does not propagate)."""


def quiet_sdk() -> None:
    """Keep the SDK's "experimental field/class" warnings, logged whenever a job with such a field
    is loaded, out of omnidist's output: they are about the SDK's API, not the user's job. A caller
    that asked for debug records (``omnidist --debug`` sets the root logger to DEBUG) still sees them."""
    if logging.getLogger().getEffectiveLevel() <= logging.DEBUG:
        return
    for name in EXPERIMENTAL_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def ml_client(settings: AzureMLSettings, show_progress: bool = False) -> Any:
    """An ``MLClient`` for the configured workspace, with the SDK's retries off (and its upload
    progress bar shown when ``show_progress``).

    Raises:
        ConfigError: subscription_id, resource_group or workspace is missing.
    """
    missing = [k for k in ("subscription_id", "resource_group", "workspace") if not getattr(settings, k)]
    if missing:
        raise ConfigError(f"{NAME} needs {', '.join(missing)}: set them in the profile (omnidist.toml) or in "
                          f"the job's backends.{NAME} block")
    from azure.ai.ml import MLClient

    quiet_sdk()
    # connection_timeout/read_timeout reach every service client's RequestsTransport (azure-core's
    # ConnectionConfiguration), so each HTTP call is bounded by request_timeout_s, not 300 s.
    kwargs: dict[str, Any] = {"retry_total": 0, "enable_telemetry": False, "show_progress": show_progress,
                              "connection_timeout": settings.request_timeout_s,
                              "read_timeout": settings.request_timeout_s}
    if settings.endpoint:
        base = settings.endpoint.rstrip("/") + "/"
        # The SDK keeps clouds in a process-wide table keyed by name: one name per endpoint.
        kwargs["cloud"] = f"omnidist-{base}"
        kwargs["cloud_metadata"] = {**PUBLIC_CLOUD, "resource_manager": base}
        if not base.lower().startswith("https"):
            kwargs["per_call_policies"] = [plain_http_policy()]
    return MLClient(credential(settings.credential), settings.subscription_id, settings.resource_group,
                    settings.workspace, **kwargs)


def translate(exc: BaseException) -> OmnidistError:
    """The omnidist error for an SDK/transport exception, with the service's message."""
    if isinstance(exc, OmnidistError):
        return exc
    found = credentials.translate(exc, backend=NAME)
    if found is not None:
        return found
    if _is_validation(exc):
        return InvalidRequestError(f"the Azure ML SDK rejected the job: {exc}", backend=NAME)
    return BackendError(f"{type(exc).__name__}: {exc}", backend=NAME)


def _is_validation(exc: BaseException) -> bool:
    from azure.ai.ml.exceptions import ValidationException
    from marshmallow import ValidationError as SchemaError

    return isinstance(exc, (ValidationException, SchemaError))


@attrs.frozen
class _Command:
    """A command job to create: its YAML (named) and the file its relative paths are relative to."""

    text: str
    origin: str


class AzureMLClient(StagesCode[Any], ReportsShortage[Any], ReadsTrials[Any], ReadsLogs[Any]):
    """Command and sweep jobs through ``MLClient``; native jobs are the SDK's ``Job`` objects."""

    idempotency = Idempotency.NAME
    _show_progress = False
    """Whether the SDK shows its progress bar while it uploads the job's code (a large folder)."""

    @functools.cached_property
    def ml(self) -> Any:
        """The ``MLClient`` (made on first use)."""
        return ml_client(self.settings, show_progress=self._show_progress)

    _staged: Optional[StagedCode] = None
    """The copy of the local code folder the SDK uploads (removed once the submit ends)."""

    def prepare(self, compiled: CompiledJob) -> CompiledJob:
        """The SDK uploads a local code folder itself, during the create, by rules of its own (it
        follows links out of the folder, reads only the root's ignore file): it is given a copy
        holding exactly the files omnidist ships (:func:`omnidist.submission.packaging.stage`),
        with a warning for what was left out or is unusually large, and its progress bar."""
        folder = local_code(compiled)
        if folder is None:
            return compiled
        job = compiled.job
        self._staged = stage(folder, warn=self.log.warning, ship_secrets=job.ship_secrets if job is not None else ())
        self._show_progress = sum(f.size for f in self._staged.files) > PROGRESS_ABOVE_BYTES
        return attrs.evolve(compiled, request={**compiled.request, "code": str(self._staged.path)})

    def submit(self, compiled: CompiledJob) -> tuple[str, str]:
        """The template's submit; the staged copy of the code is removed however it ends."""
        try:
            return super().submit(compiled)
        finally:
            if self._staged is not None:
                self._staged.remove()
                self._staged = None

    def translate(self, exc: BaseException) -> BackendError:
        """:func:`translate`."""
        return translate(exc)  # type: ignore[return-value]  # an OmnidistError only for SDK errors it maps

    def keyed(self, compiled: CompiledJob) -> Keyed:
        """The job YAML named ``<display_name>-<suffix>``, one name per submit (the key)."""
        name = f"{compiled.request.get('display_name', 'omnidist')}-{self.suffix()}"
        source = compiled.job.source if compiled.job is not None else None
        # load_job resolves relative paths (code, local inputs) against the *parent* of this origin,
        # so it is the job file itself (or a file name in the current folder).
        origin = os.path.abspath(source) if source else os.path.join(os.getcwd(), "job.yml")
        return Keyed(request=_Command(dump_yaml({**compiled.request, "name": name}), origin), key=name)

    def create_job(self, keyed: Keyed) -> Any:
        """``load_job`` (the SDK's own schema checks), then ``jobs.create_or_update`` (which
        registers an inline image environment, then PUTs the job)."""
        from azure.ai.ml import load_job

        quiet_sdk()  # load_job warns before the MLClient is made
        job = load_job(io.StringIO(keyed.request.text), relative_origin=keyed.request.origin)
        return self.ml.jobs.create_or_update(job)

    def find_jobs(self, keyed: Keyed) -> list[Any]:
        """The job of that name."""
        return [self.ml.jobs.get(keyed.key)]

    def get_job(self, job_id: str) -> Any:
        """``jobs.get``."""
        return self.ml.jobs.get(job_id)

    def cancel_job(self, job_id: str) -> None:
        """``POST …/jobs/{name}/cancel``; accepted at once (``polling=False``), status() shows
        CancelRequested -> Canceled."""
        self.ml.jobs.begin_cancel(job_id, polling=False)

    def shortage(self, exc: BaseException, error: BackendError) -> Optional[Shortage]:
        """A quota or capacity refusal by its Azure error code (:data:`~omnidist_azure_ml.tables.SHORTAGE_CODES`),
        the nested ``innererror`` codes included, else by its text."""
        code = getattr(getattr(exc, "error", None), "code", None)
        inner = getattr(getattr(exc, "error", None), "innererror", None) or {}
        for found in (code, inner.get("code") if isinstance(inner, dict) else None):
            if found in SHORTAGE_CODES:
                return Shortage(SHORTAGE_CODES[found])
        return super().shortage(exc, error)

    def status_of(self, job: Any) -> JobStatus:
        """The status through :data:`~omnidist_azure_ml.tables.STATES`."""
        native = _state_name(job)
        return JobStatus(state=native_state(native), native_state=native)

    def failure_message(self, job_id: str, job: Any) -> str:
        """The error message of a failed job's run (what ``jobs.stream`` raises and the studio
        shows), or ``""`` when the run history cannot tell (the status stands without it)."""
        try:
            details = self.call(lambda: _run_details(self.ml, self.settings))
            run = self.call(lambda: details(job_id))
        except BackendError as exc:
            logging.getLogger("omnidist.azure_ml").debug("no error message for %s: %s", job_id, exc)
            return ""
        return _error_of(run)

    def ending_of(self, job: Any, status: JobStatus) -> Optional[Ending]:
        """A failed run's error (:meth:`failure_message`) through
        :data:`~omnidist_azure_ml.tables.FAILURE_ENDINGS`: ``PreemptionError`` is a preemption."""
        return classify_ending(status, FAILURE_ENDINGS)

    def with_trials(self, job_id: str, job: Any, status: JobStatus) -> JobStatus:
        """A sweep's status with its child runs as trials, and the best so far (a plain job's as it
        is). The run history is best effort: when it cannot be read, the sweep's own state stands
        (logged)."""
        from omnidist_azure_ml import tuning

        if (getattr(job, "type", "") or "") != "sweep":
            return status
        objective = job.objective
        metric = objective.primary_metric or ""
        try:
            children = _sweep_children(self, job_id, metric, getattr(job.limits, "max_total_trials", None))
        except BackendError as exc:
            self.log.warning("%s: cannot read the trials of sweep %s (%s)", NAME, job_id, exc)
            return attrs.evolve(status, metric=metric)
        trials, best = tuning.trials_of(job_id, dict(job.tags or {}), job.trial.command or "",
                                        list(job.search_space or {}), objective.goal or "", children)
        return attrs.evolve(status, metric=metric, trials=trials, best=best)

    def secrets_of(self, job: Any) -> frozenset[str]:
        """The values of the secret-looking ``environment_variables`` of a fetched job (a sweep's
        are its trial's)."""
        env = getattr(job, "environment_variables", None) or getattr(getattr(job, "trial", None),
                                                                     "environment_variables", None)
        return secret_values(dict(env or {}))

    def id_of(self, keyed: Keyed, job: Any) -> str:
        """The job's name."""
        return keyed.key

    def url_of(self, job: Any) -> str:
        """The studio URL the service gave the job."""
        return job.studio_url or ""

    # --- logs ---------------------------------------------------------------------------------------

    def open_logs(self, job_id: str) -> LogStart:
        """The job's studio URL; the secrets of the job."""
        job = self.call(lambda: self.get_job(job_id))
        return LogStart(header=(f"{job_id}: logs at {job.studio_url or 'the Azure ML studio'}",),
                        secrets=self.secrets_of(job), cursor=_Cursor(job_type=job.type or "command"))

    def read_logs(self, job_id: str, cursor: _Cursor, *, follow: bool) -> LogPage:
        """The lines of the log files ``az ml job stream`` shows, and the run's state.

        The files are found as ``jobs.stream`` finds them: the workspace's ``discoveryUrl`` names
        the run-history service, whose run details list every log file with a SAS URL into blob
        storage, filtered by the SDK's own streamable-file rule (``user_logs/std_log*.txt`` of the
        primary process, else the legacy ``azureml-logs/NN_*.txt``). Each read asks each file
        only for the bytes after its last complete line (``Range: bytes=N-``), so every line
        comes out once and in order; a line still being written waits for its newline until the
        job ends. A failed job's state carries its run's error.
        """
        if cursor.details is None:
            cursor.details = self.call(lambda: _run_details(self.ml, self.settings))
            cursor.tail = _LogTail(self)
        run = self.call(lambda: cursor.details(job_id))
        native = str(run.status or "Unknown")
        status = JobStatus(state=native_state(native), native_state=native, message=_error_of(run))
        files = _streamed_files(run.log_files or {}, cursor.job_type)
        lines = tuple(cursor.tail.read(files, final=not follow or status.state.terminal))
        return LogPage(status=status, lines=lines, cursor=cursor)

    def state_line(self, job_id: str, status: JobStatus) -> str:
        """``NAME: Running (running)`` (with a failed run's error)."""
        return f"{job_id}: {status.native_state} ({status.state.value})" + (
            f" — {status.message}" if status.message else "")


@attrs.define
class _Cursor:
    """Where reading a job's logs stands: the run-history reader (found on the first read) and
    each log file's offset."""

    job_type: str
    details: Optional[Callable[[str], Any]] = None
    tail: Any = None


def _state_name(job: Any) -> str:
    state = job.status
    return str(getattr(state, "value", state) or "Unknown")


def _error_of(run: Any) -> str:
    """A run's error message (run history's ``error.error.message``), else ``""``."""
    return getattr(getattr(getattr(run, "error", None), "error", None), "message", None) or ""


def _https_option(url: str) -> dict[str, bool]:
    # azure-core refuses bearer tokens over plain http unless told otherwise; MLClient decides
    # by the URL's scheme for its own operations, but its workspace and run wrappers do not pass
    # the option on, so the calls below do (only http test endpoints need it).
    return {} if url.lower().startswith("https") else {"enforce_https": False}


def _run_details(client: Any, settings: AzureMLSettings) -> Callable[[str], Any]:
    """A function giving a run's details (status, ``logFiles``) from the workspace's run history."""
    api = _history_api(client, settings)
    runs = client.jobs._runs_operations._operation
    scope = (settings.subscription_id, settings.resource_group, settings.workspace)
    return lambda run_id: runs.get_details(*scope, run_id, **_https_option(api))


def _history_api(client: Any, settings: AzureMLSettings) -> str:
    """The workspace's run-history URL, which ``JobOperations`` then uses too.

    ``jobs.stream`` discovers the service the same way (workspace GET -> ``discoveryUrl`` ->
    the discovery document's ``api`` URL), but through a pipeline with the SDK's own retries;
    here every request is one attempt, retried by omnidist.
    """
    endpoint = (settings.endpoint or PUBLIC_CLOUD["resource_manager"])
    workspace = client.workspaces._operation.get(settings.resource_group, settings.workspace,
                                                 **_https_option(endpoint))
    if not workspace.discovery_url:
        raise BackendError(f"workspace {settings.workspace} names no discoveryUrl: cannot find its run "
                           "history", backend=NAME)
    response = client._requests_pipeline.get(workspace.discovery_url, **_timeouts(settings))
    if response.status_code != 200:
        raise storage.http_error(response, "the workspace's discovery document", backend=NAME)
    api = (response.json() or {}).get("api")
    if not api:
        raise BackendError(f"{workspace.discovery_url} names no api URL: cannot find the run history",
                           backend=NAME)
    # What JobOperations caches after its own discovery; its RunOperations then use MLClient's
    # client settings (no SDK retries, the request timeout).
    client.jobs._api_base_url = api.rstrip("/")
    return str(client.jobs._api_base_url)


def _sweep_children(client: AzureMLClient, sweep: str, metric: str, limit: Optional[int]) -> list[Any]:
    """A sweep's child runs from the run history, as :class:`~omnidist_azure_ml.tuning.ChildRun`
    values with the last value each logged for ``metric``; every request one attempt, retried by
    the client (``call``)."""
    from azure.ai.ml._restclient.runhistory import RunHistoryClient

    from omnidist_azure_ml import tuning

    settings = client.settings
    scope = (settings.subscription_id, settings.resource_group, settings.workspace)
    api = client.call(lambda: _history_api(client.ml, settings))
    jobs = client.ml.jobs
    # Made as JobOperations makes its run-history client (MLClient's settings: no SDK retries).
    history = RunHistoryClient(jobs._credential, base_url=api, **jobs._service_client_kwargs)
    https = _https_option(api)
    # The call ``jobs.list(parent_job_name=…)`` makes; the SDK reads one page of it, and so does this.
    runs = client.call(lambda: list(history.runs.get_child(*scope, sweep, top=limit, **https)))  # type: ignore[arg-type]

    def child(run: Any) -> Any:
        status = str(run.status or "Unknown")
        # A trial that has not started has logged nothing: one request fewer per waiting trial.
        started = native_state(status) not in (JobState.QUEUED, JobState.PENDING)
        value, step = (client.call(lambda: _last_value(history, scope, https, run.run_id, metric))
                       if metric and started else (None, None))
        return tuning.ChildRun(run_id=run.run_id, status=status, message=_error_of(run), value=value, step=step)

    # One metrics request per trial: a few at a time, so a status of a wide sweep stays quick.
    with ThreadPoolExecutor(max_workers=METRIC_READERS) as pool:
        return list(pool.map(child, runs))


def _last_value(history: Any, scope: tuple[str, str, str], https: Mapping[str, bool], run_id: str,
                metric: str) -> tuple[Optional[float], Optional[int]]:
    """The last value a run logged for ``metric`` and its step (``None``s: none yet), from the run
    history's metrics service, page after page."""
    from azure.core.exceptions import ResourceNotFoundError

    last: Optional[Any] = None
    token: Optional[str] = None
    for _ in range(_METRIC_PAGES):
        body: dict[str, Any] = {"metricName": metric, **({"continuationToken": token} if token else {})}
        try:
            page = history.metrics.get_full_fidelity_metric(*scope, run_id, body=body, **https)
        except ResourceNotFoundError:  # nothing logged under that name yet
            return None, None
        values = list(page.get("value") or [])
        last = values[-1] if values else last
        token = page.get("continuationToken")
        if not token:
            break
    if last is None:
        return None, None
    found, step = (last.get("data") or {}).get(metric), last.get("step")
    return (None if found is None else float(found)), (None if step is None else int(step))


_METRIC_PAGES = 100
"""At most this many pages of one metric's values are read (the last value is on the last page)."""

METRIC_READERS = 8
"""How many trials' metrics a sweep's status reads at a time."""


def _streamed_files(log_files: Mapping[str, str], job_type: str) -> dict[str, str]:
    """The log files ``jobs.stream`` prints (the SDK's own filter), sorted, with their URLs."""
    from azure.ai.ml.operations._job_ops_helper import _get_sorted_filtered_logs

    return {path: log_files[path] for path in _get_sorted_filtered_logs(log_files, job_type)}


def _timeouts(settings: AzureMLSettings) -> dict[str, float]:
    return {"connection_timeout": settings.request_timeout_s, "read_timeout": settings.request_timeout_s}


class _LogTail:
    """Where each log file's next unread line starts (a byte offset), and the file last shown."""

    def __init__(self, client: AzureMLClient):
        # MLClient's plain pipeline: no credential (the SAS URL is the credential), SDK retries off.
        self._client = client
        self._pipeline = client.ml._requests_pipeline
        self._offsets: dict[str, int] = {}
        self._shown: Optional[str] = None

    def read(self, files: Mapping[str, str], *, final: bool) -> Iterator[str]:
        """The new complete lines of ``files`` (and, when ``final``, an unfinished last line),
        each file's under a ``==> path <==`` header whenever the output switches files."""
        for path, url in files.items():
            offset = self._offsets.get(path, 0)
            data = self._client.call(lambda: self._fetch(path, url, offset))  # noqa: B023 - called at once
            complete = data if final else data[:data.rfind(b"\n") + 1]
            if not complete:
                continue
            self._offsets[path] = offset + len(complete)
            if path != self._shown:
                self._shown = path
                yield f"==> {path} <=="
            for line in complete.decode("utf-8", "replace").removesuffix("\n").split("\n"):
                yield line.removesuffix("\r")

    def _fetch(self, path: str, url: str, offset: int) -> bytes:
        return storage.read_from(self._pipeline, url, offset, what=f"log file {path}", backend=NAME,
                                 timeouts=_timeouts(self._client.settings))


def local_code(compiled: Any) -> Optional[Path]:
    """The local folder the request's ``code`` names (the job's ``code`` or the ``code`` setting),
    resolved as ``load_job`` resolves it (against the job file's folder); ``None`` for none or a
    remote one."""
    code = compiled.request.get("code")
    if not isinstance(code, str) or not code or re.match(r"^[a-z][a-z0-9+.-]*:", code, re.IGNORECASE):
        return None
    source = compiled.job.source if compiled.job is not None else None
    base = os.path.dirname(os.path.abspath(source)) if source else os.getcwd()
    folder = Path(base, code)
    return folder if folder.is_dir() else None


def announce_upload(compiled: Any, warn: Any = None, large_above: Optional[int] = None) -> bool:
    """Before submit: warn when the local code folder the SDK is about to upload is unusually
    large (naming its biggest files; ``large_above`` bytes, default the core's threshold); True
    when it is big enough for a progress bar."""
    job = compiled.job
    folder = code_folder(job) if job is not None else None
    if folder is None:
        return False
    files = scan_folder(folder)  # the same files the copy the SDK uploads holds
    warning = large_folder_warning(files, limit=large_above)
    if warning:
        (warn or logging.getLogger("omnidist.azure_ml").warning)(warning)
    return sum(f.size for f in files) > PROGRESS_ABOVE_BYTES
