"""Azure ML through ``azure.ai.ml.MLClient``: submit, status, logs, cancel.

The SDK is imported inside these functions only (it costs 1-2 s). Its own retries are
turned off (``retry_total=0``) so every attempt is omnidist's: SDK exceptions are translated
here into omnidist's tree and only :class:`~omnidist.errors.TransientBackendError` is retried,
under :mod:`omnidist.retry`. A create is a PUT by job name, and the name is fixed once per
submit, so a retried create cannot make a second job; a retry first looks the name up.

``settings.endpoint`` points every management call at another resource manager (a sovereign
cloud, or the local fake server in tests) through the SDK's ``cloud``/``cloud_metadata``
(verified with azure-ai-ml 1.35.2; the SDK registers the cloud in a process-wide table and
sets ``AZUREML_CURRENT_CLOUD`` for the process).

``logs`` reads the job's log files where ``jobs.stream`` reads them, from the workspace's
run-history service (found through its discovery document) and the blob SAS URLs it lists,
with the same one-attempt-per-request rule. A failed job's message is its run's error there too.
The values of secret-looking ``environment_variables`` of the job are masked in both.
"""

from __future__ import annotations

import io
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Optional, TypeVar

from omnidist import display, retry, serde
from omnidist.backend import JobState, JobStatus
from omnidist.errors import (
    BackendError, ConfigError, InvalidRequestError, NotFoundError, OmnidistError, TransientBackendError,
    error_for_status,
)

from omnidist_azure_ml.backend import NAME, AzureMLSettings, native_state

T = TypeVar("T")
Sleep = Optional[Callable[[float], None]]

PUBLIC_CLOUD: dict[str, str] = {
    "active_directory": "https://login.microsoftonline.com/",
    "aml_resource_id": "https://ml.azure.com/",
    "azure_portal": "https://portal.azure.com/",
    "registry_discovery_endpoint": "https://eastus.api.azureml.ms/",
    "resource_manager": "https://management.azure.com/",
    "storage_endpoint": "core.windows.net",
}
"""Azure public cloud endpoints; ``settings.endpoint`` replaces ``resource_manager``."""


class StaticTokenCredential:
    """A credential that hands out one fake bearer token (``credential = "anonymous"``), for
    local endpoints that check no token."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        """A token valid for an hour."""
        from azure.core.credentials import AccessToken

        return AccessToken("omnidist-anonymous", int(time.time()) + 3600)


def credential(settings: AzureMLSettings) -> Any:
    """azure-identity's default chain, or the static fake token."""
    if settings.credential == "anonymous":
        return StaticTokenCredential()
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()


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

    # The SDK logs an "experimental field" warning for queue_settings on every load; it is
    # not the user's concern and would clutter `omnidist submit`.
    logging.getLogger("azure.ai.ml._utils._experimental").setLevel(logging.ERROR)
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
            kwargs["per_call_policies"] = [_plain_http_policy()]
    return MLClient(credential(settings), settings.subscription_id, settings.resource_group,
                    settings.workspace, **kwargs)


def _plain_http_policy() -> Any:
    """A pipeline policy that lets bearer tokens go to a plain-http endpoint (local test servers):
    some SDK calls (the code upload's asset lookup) do not pass ``enforce_https`` themselves."""
    from azure.core.pipeline.policies import SansIOHTTPPolicy

    class AllowPlainHttp(SansIOHTTPPolicy):
        def on_request(self, request: Any) -> None:
            request.context.options.setdefault("enforce_https", False)

    return AllowPlainHttp()


def translate(exc: BaseException) -> OmnidistError:
    """The omnidist error for an SDK/transport exception, with the service's message."""
    from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError

    if isinstance(exc, OmnidistError):
        return exc
    if isinstance(exc, (ServiceRequestError, ServiceResponseError)):
        return TransientBackendError(f"connection failed: {exc}", backend=NAME)
    if isinstance(exc, HttpResponseError):
        status = exc.status_code
        error = getattr(exc, "error", None)
        message = getattr(error, "message", None) or exc.message or str(exc)
        headers = exc.response.headers if exc.response is not None else {}
        return error_for_status(status)(message, backend=NAME, status=status,
                                        retry_after=retry.parse_retry_after(headers.get("Retry-After")))
    if _is_validation(exc):
        return InvalidRequestError(f"the Azure ML SDK rejected the job: {exc}", backend=NAME)
    return BackendError(f"{type(exc).__name__}: {exc}", backend=NAME)


def _is_validation(exc: BaseException) -> bool:
    from azure.ai.ml.exceptions import ValidationException
    from marshmallow import ValidationError as SchemaError

    return isinstance(exc, (ValidationException, SchemaError))


def _call(fn: Callable[[], T], settings: AzureMLSettings, sleep: Sleep) -> T:
    """``fn`` with SDK errors translated, retried on transient ones under the settings' policy."""
    def guarded() -> T:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - translated at the boundary, never swallowed
            raise translate(exc) from exc

    return retry.call(guarded, settings.retry_policy(), sleep)


def _find(client: Any, name: str) -> Any:
    try:
        return client.jobs.get(name)
    except Exception as exc:  # noqa: BLE001
        error = translate(exc)
        if isinstance(error, NotFoundError):
            return None
        raise error from exc


def submit(request: Mapping[str, Any], settings: AzureMLSettings, *, name: str, source: Optional[str] = None,
           sleep: Sleep = None, show_progress: bool = False) -> str:
    """Create the command job ``request`` as ``name``; returns its studio URL.

    The YAML goes through ``azure.ai.ml.load_job`` (the SDK's own schema checks) and
    ``jobs.create_or_update`` (which registers an inline image environment, then PUTs the job).
    """
    from azure.ai.ml import load_job

    client = ml_client(settings, show_progress=show_progress)  # the SDK uploads a local code folder itself
    text = serde.dump_yaml({**request, "name": name})
    # load_job resolves relative paths (code, local inputs) against the *parent* of this origin,
    # so it is the job file itself (or a file name in the current folder).
    origin = os.path.abspath(source) if source else os.path.join(os.getcwd(), "job.yml")
    attempts = {"count": 0}

    def create() -> Any:
        attempts["count"] += 1
        if attempts["count"] > 1:  # the last PUT may have landed before its answer was lost
            existing = _find(client, name)
            if existing is not None:
                return existing
        job = load_job(io.StringIO(text), relative_origin=origin)
        return client.jobs.create_or_update(job)

    created = _call(create, settings, sleep)
    return created.studio_url or ""


def _state_name(job: Any) -> str:
    state = job.status
    return str(getattr(state, "value", state) or "Unknown")


def status(name: str, settings: AzureMLSettings, *, sleep: Sleep = None) -> JobStatus:
    """The job's status through ``jobs.get``; a failed job's carries its run's error message
    (what ``jobs.stream`` raises and the studio shows), secret values masked."""
    client = ml_client(settings)
    job = _call(lambda: client.jobs.get(name), settings, sleep)
    found = _status_of(job)
    if found.state is not JobState.FAILED:
        return found
    message = _failure(client, name, settings, sleep)
    return JobStatus(state=found.state, native_state=found.native_state,
                     message=display.mask_text(message, secrets_of(job)))


def secrets_of(job: Any) -> frozenset[str]:
    """The values of the secret-looking ``environment_variables`` of a fetched job."""
    return display.secret_values(dict(getattr(job, "environment_variables", None) or {}))


def _failure(client: Any, name: str, settings: AzureMLSettings, sleep: Sleep) -> str:
    """The error message of a failed job's run, or ``""`` when the run history cannot tell
    (the status stands without it)."""
    try:
        details = _call(lambda: _run_details(client, settings), settings, sleep)
        run = _call(lambda: details(name), settings, sleep)
    except BackendError as exc:
        logging.getLogger("omnidist.azure_ml").debug("no error message for %s: %s", name, exc)
        return ""
    return _error_of(run).removeprefix(" — ")


def _error_of(run: Any) -> str:
    """`` — message`` of a run's error (run history's ``error.error.message``), else ``""``."""
    message = getattr(getattr(getattr(run, "error", None), "error", None), "message", None)
    return f" — {message}" if message else ""


def _status_of(job: Any) -> JobStatus:
    native = _state_name(job)
    return JobStatus(state=native_state(native), native_state=native)


def logs(name: str, settings: AzureMLSettings, *, follow: bool = False, sleep: Sleep = None) -> Iterator[str]:
    """The job's studio URL, then the lines of the log files ``az ml job stream`` shows and its
    state changes; with ``follow``, polled every ``poll_interval_s`` until the job ends.

    The files are found as ``jobs.stream`` finds them: the workspace's ``discoveryUrl`` names
    the run-history service, whose run details list every log file with a SAS URL into blob
    storage, filtered by the SDK's own streamable-file rule (``user_logs/std_log*.txt`` of the
    primary process, else the legacy ``azureml-logs/NN_*.txt``). Each poll asks each file only
    for the bytes after its last complete line (``Range: bytes=N-``), so every line comes out
    once and in order; a line still being written waits for its newline until the job ends.
    A failed job's last line carries its run's error. The values of the job's secret-looking
    ``environment_variables`` are masked in every line.
    """
    client = ml_client(settings)
    job = _call(lambda: client.jobs.get(name), settings, sleep)
    yield from display.mask_lines(_lines(client, job, name, settings, follow, sleep), secrets_of(job))


def _lines(client: Any, job: Any, name: str, settings: AzureMLSettings, follow: bool, sleep: Sleep) -> Iterator[str]:
    yield f"{name}: logs at {job.studio_url or 'the Azure ML studio'}"
    details = _call(lambda: _run_details(client, settings), settings, sleep)
    tail = _LogTail(client, settings, sleep)
    last, wait = None, sleep if sleep is not None else time.sleep
    while True:
        run = _call(lambda: details(name), settings, sleep)
        native = str(run.status or "Unknown")
        state = native_state(native)
        ended = not follow or state.terminal
        change = f"{name}: {native} ({state.value}){_error_of(run)}" if native != last else None
        last = native
        if change and not state.terminal:  # a start reads before its lines, an end after them
            yield change
        yield from tail.read(_streamed_files(run.log_files or {}, job.type or "command"), final=ended)
        if change and state.terminal:
            yield change
        if ended:
            return
        wait(settings.poll_interval_s)


def _https_option(url: str) -> dict[str, bool]:
    # azure-core refuses bearer tokens over plain http unless told otherwise; MLClient decides
    # by the URL's scheme for its own operations, but its workspace and run wrappers do not pass
    # the option on, so the calls below do (only http test endpoints need it).
    return {} if url.lower().startswith("https") else {"enforce_https": False}


def _run_details(client: Any, settings: AzureMLSettings) -> Callable[[str], Any]:
    """A function giving a run's details (status, ``logFiles``) from the workspace's run history.

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
        raise _http_error(response, "the workspace's discovery document")
    api = (response.json() or {}).get("api")
    if not api:
        raise BackendError(f"{workspace.discovery_url} names no api URL: cannot find the run history",
                           backend=NAME)
    # What JobOperations caches after its own discovery; its RunOperations then use MLClient's
    # client settings (no SDK retries, the request timeout).
    client.jobs._api_base_url = api.rstrip("/")
    runs = client.jobs._runs_operations._operation
    scope = (settings.subscription_id, settings.resource_group, settings.workspace)
    return lambda run_id: runs.get_details(*scope, run_id, **_https_option(api))


def _streamed_files(log_files: Mapping[str, str], job_type: str) -> dict[str, str]:
    """The log files ``jobs.stream`` prints (the SDK's own filter), sorted, with their URLs."""
    from azure.ai.ml.operations._job_ops_helper import _get_sorted_filtered_logs

    return {path: log_files[path] for path in _get_sorted_filtered_logs(log_files, job_type)}


def _timeouts(settings: AzureMLSettings) -> dict[str, float]:
    return {"connection_timeout": settings.request_timeout_s, "read_timeout": settings.request_timeout_s}


_BLOB_MESSAGE = re.compile(r"<Message>(.*?)</Message>", re.S)


def _http_error(response: Any, what: str) -> OmnidistError:
    """The omnidist error for a failed plain GET (blob storage answers in XML, others in JSON).

    The URL is left out on purpose: a log file's URL carries its SAS signature.
    """
    text = response.text() or ""
    found = _BLOB_MESSAGE.search(text)
    message = found.group(1).strip() if found else text.strip()[:300]
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        pass
    return error_for_status(response.status_code)(
        f"reading {what}: {message or response.reason}", backend=NAME, status=response.status_code,
        retry_after=retry.parse_retry_after(response.headers.get("Retry-After")))


class _LogTail:
    """Where each log file's next unread line starts (a byte offset), and the file last shown."""

    def __init__(self, client: Any, settings: AzureMLSettings, sleep: Sleep):
        # MLClient's plain pipeline: no credential (the SAS URL is the credential), SDK retries off.
        self._pipeline = client._requests_pipeline
        self._settings, self._sleep = settings, sleep
        self._offsets: dict[str, int] = {}
        self._shown: Optional[str] = None

    def read(self, files: Mapping[str, str], *, final: bool) -> Iterator[str]:
        """The new complete lines of ``files`` (and, when ``final``, an unfinished last line),
        each file's under a ``==> path <==`` header whenever the output switches files."""
        for path, url in files.items():
            offset = self._offsets.get(path, 0)
            data = _call(lambda: self._fetch(path, url, offset), self._settings, self._sleep)
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
        response = self._pipeline.get(url, headers={"Range": f"bytes={offset}-"}, **_timeouts(self._settings))
        if response.status_code in (404, 416):  # not uploaded yet / nothing after the offset
            return b""
        if response.status_code == 206:
            return response.body()
        if response.status_code == 200:  # a server that ignores Range sends the whole file
            return response.body()[offset:]
        raise _http_error(response, f"log file {path}")


def cancel(name: str, settings: AzureMLSettings, *, sleep: Sleep = None) -> None:
    """Request cancellation (``POST …/jobs/{name}/cancel``); a no-op on an ended job."""
    client = ml_client(settings)
    job = _call(lambda: client.jobs.get(name), settings, sleep)
    if _status_of(job).state.terminal:
        return
    # polling=False: the request is accepted at once; status() shows CancelRequested -> Canceled.
    _call(lambda: client.jobs.begin_cancel(name, polling=False), settings, sleep)
