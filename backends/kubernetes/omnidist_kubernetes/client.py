"""Talking to a cluster through the official ``kubernetes`` client, imported lazily.

Every call runs once per attempt (the client's own urllib3 retries are off) under
:mod:`omnidist.retry`; ``ApiException`` and transport errors become omnidist errors here, at
the boundary, carrying the API server's message. A create is made safe to repeat by the name
fixed at submit (``<name>-<suffix>``) and a request-id label: a 409 means the name is taken,
and when the job holding it carries this submit's request id, an earlier attempt made it (its
answer was lost). Cancel is a delete with foreground propagation: the pods go first.

Job ids are ``NAMESPACE/KIND/NAME`` (``default/pytorchjob/bert-x7k2p``); ``KIND/NAME`` and a
bare ``NAME`` take the namespace from the settings (a bare name is looked up in every kind).
"""

from __future__ import annotations

import copy
import http.client
import json
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Optional

from omnidist import display, retry
from omnidist.backend import JobState, JobStatus
from omnidist.errors import (
    BackendError, ConfigError, ConflictError, NotFoundError, TransientBackendError, ValidationError,
    error_for_status,
)
from omnidist.labels import REQUEST_ID_LABEL

from omnidist_kubernetes.settings import KubernetesSettings
from omnidist_kubernetes.tables import (
    CONDITION_ORDER, CONDITION_STATES, GROUP, JOB_NAME_LABEL, KINDS, LAUNCHER, MAX_NAME, QUEUE_LABEL,
    REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL, Kind,
)

Sleep = Optional[Callable[[float], None]]

ROLE_LABEL = "training.kubeflow.org/job-role"
"""mpi-operator's pod label for ``launcher`` / ``worker``."""

PRIMARY_ORDER = ("launcher", "master", "chief", "worker")
"""Which pod's log ``logs --follow`` streams: the first of these replica types (index 0)."""


# --- names and ids -------------------------------------------------------------------------------

def _kind_of(request: Mapping[str, Any]) -> Kind:
    kind = KINDS.get(str(request.get("kind")))
    if kind is None:
        raise ValidationError(f"not a Kubeflow training job: kind {request.get('kind')!r}", path="kind")
    return kind


def longest_pod_suffix(request: Mapping[str, Any]) -> str:
    """The longest ``-<replica type>-<index>`` the operator will append to the job's name."""
    kind = _kind_of(request)
    specs = request.get("spec", {}).get(kind.replica_specs, {})
    suffixes = ["-launcher" if rtype == LAUNCHER else f"-{rtype.lower()}-{max(int(body.get('replicas', 1)), 1) - 1}"
                for rtype, body in specs.items()]
    return max(suffixes, key=len, default="")


def named(request: Mapping[str, Any], suffix: str, request_id: str) -> dict[str, Any]:
    """A copy of a compiled job named ``<name>-<suffix>`` (the name cut so every pod name still
    fits) and labelled with ``request_id``."""
    body = copy.deepcopy(dict(request))
    metadata = body.setdefault("metadata", {})
    room = MAX_NAME - len(longest_pod_suffix(body)) - len(suffix) - 1
    metadata["name"] = f"{str(metadata.get('name', 'omnidist'))[:room].rstrip('-')}-{suffix}"
    metadata["labels"] = {**(metadata.get("labels") or {}), REQUEST_ID_LABEL: request_id}
    return body


def job_id(namespace: str, kind: Kind, name: str) -> str:
    """``NAMESPACE/KIND/NAME`` with the kind in lowercase."""
    return f"{namespace}/{kind.kind.lower()}/{name}"


def _kind_named(text: str) -> Optional[Kind]:
    lowered = text.lower()
    return next((k for k in KINDS.values() if lowered in (k.kind.lower(), k.plural)), None)


def parse_job_id(text: str, settings: KubernetesSettings) -> tuple[str, Optional[Kind], str]:
    """(namespace, kind or ``None`` for a bare name, name) of a job id.

    Raises:
        ValidationError: an id of another shape, or an unknown kind.
    """
    parts = text.strip("/").split("/")
    if len(parts) == 1:
        return settings.namespace, None, parts[0]
    if len(parts) in (2, 3):
        kind = _kind_named(parts[-2])
        if kind is not None and all(parts):
            return (parts[0] if len(parts) == 3 else settings.namespace), kind, parts[-1]
    raise ValidationError(f"{text!r} is not a job id: write NAMESPACE/KIND/NAME (default/pytorchjob/bert-x7k2p), "
                          "KIND/NAME or NAME, with KIND pytorchjob, tfjob or mpijob", path="job_id")


# --- the SDK boundary ------------------------------------------------------------------------------

def api_client(settings: KubernetesSettings) -> Any:
    """A ``kubernetes.client.ApiClient``: for ``api_server`` (no credentials), else from the
    kubeconfig (its ``context``), else, inside a pod, from the pod's service account.

    Raises:
        ConfigError: no kubeconfig and not inside a cluster.
    """
    from kubernetes import client, config

    configuration = client.Configuration()
    if settings.api_server:
        configuration.host = settings.api_server.rstrip("/")
    else:
        try:
            config.load_kube_config(config_file=settings.kubeconfig, context=settings.context,
                                    client_configuration=configuration)
        except (config.ConfigException, OSError) as exc:
            if settings.kubeconfig or settings.context:
                raise ConfigError(f"kubernetes: cannot use the kubeconfig ({exc}); check backends.kubernetes."
                                  "kubeconfig and context") from exc
            try:
                config.load_incluster_config(client_configuration=configuration)
            except config.ConfigException:
                raise ConfigError(f"kubernetes: no kubeconfig found ({exc}) and not inside a cluster; set "
                                  "backends.kubernetes.kubeconfig, or api_server for kubectl proxy") from exc
    configuration.retries = False  # omnidist's retry policy is the only one
    return client.ApiClient(configuration)


def _message(exc: Any) -> str:
    """The API server's message (a ``Status`` object's ``message``), else the HTTP reason."""
    try:
        body = json.loads(exc.body) if exc.body else {}
    except (TypeError, ValueError):
        body = {}
    if isinstance(body, Mapping):
        nested = body.get("error")
        text = body.get("message") or (nested.get("message") if isinstance(nested, Mapping) else None)
        if text:
            return str(text)
    return str(exc.reason or exc)


def translate(exc: BaseException) -> BackendError:
    """An SDK or transport exception as omnidist's error (transient ones are retried)."""
    from kubernetes.client.exceptions import ApiException
    from urllib3 import exceptions as url_errors

    if isinstance(exc, ApiException):
        if not exc.status:
            return BackendError(f"the request failed ({exc.reason})", backend="kubernetes")
        headers = exc.headers or {}
        after = retry.parse_retry_after(headers.get("Retry-After") if hasattr(headers, "get") else None)
        return error_for_status(exc.status)(_message(exc), backend="kubernetes", status=exc.status, retry_after=after)
    if isinstance(exc, (url_errors.ProtocolError, url_errors.TimeoutError, url_errors.NewConnectionError,
                        url_errors.MaxRetryError, ConnectionError, TimeoutError, socket.timeout,
                        http.client.HTTPException)):
        return TransientBackendError(f"connection failed ({type(exc).__name__}: {exc})", backend="kubernetes")
    return BackendError(f"cannot reach the API server ({type(exc).__name__}: {exc})", backend="kubernetes")


def _attempt(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with every SDK or transport failure translated."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    def run() -> Any:
        try:
            return fn()
        except (ApiException, HTTPError, OSError, http.client.HTTPException) as exc:
            raise translate(exc) from exc

    return run


def call(fn: Callable[[], Any], settings: KubernetesSettings, sleep: Sleep = None) -> Any:
    """``fn`` under the retry policy, failures translated."""
    return retry.call(_attempt(fn), settings.retry_policy(), sleep)


def custom_objects(settings: KubernetesSettings) -> Any:
    """The ``CustomObjectsApi`` the jobs are created, read and deleted through."""
    from kubernetes import client

    return client.CustomObjectsApi(api_client(settings))


# --- create, get, delete -----------------------------------------------------------------------------

def create(body: Mapping[str, Any], settings: KubernetesSettings, *, sleep: Sleep = None) -> str:
    """Create the job (labelled with its request id by :func:`named`); retried without ever making
    two. Returns its id.

    Raises:
        ConflictError: the name belongs to a job this submit did not make.
    """
    kind = _kind_of(body)
    metadata = body["metadata"]
    namespace, name = metadata.get("namespace") or settings.namespace, metadata["name"]
    request_id = metadata["labels"][REQUEST_ID_LABEL]
    api = custom_objects(settings)
    timeout = settings.request_timeout_s

    def attempt() -> Any:
        try:
            return _attempt(lambda: api.create_namespaced_custom_object(
                GROUP, kind.version, namespace, kind.plural, dict(body), _request_timeout=timeout))()
        except ConflictError as exc:
            existing = _attempt(lambda: api.get_namespaced_custom_object(
                GROUP, kind.version, namespace, kind.plural, name, _request_timeout=timeout))()
            if (existing.get("metadata", {}).get("labels") or {}).get(REQUEST_ID_LABEL) == request_id:
                return existing  # an earlier attempt of this submit made it; its answer was lost
            raise ConflictError(f"a {kind.kind} named {name!r} already exists in namespace {namespace} and this "
                                f"submit did not make it (it is not labelled {REQUEST_ID_LABEL}={request_id}; "
                                f"{exc}); submit again for a new name suffix", backend="kubernetes",
                                status=409) from exc

    retry.call(attempt, settings.retry_policy(), sleep)
    return job_id(namespace, kind, name)


def get(job: str, settings: KubernetesSettings, *, sleep: Sleep = None) -> dict[str, Any]:
    """The job object (a bare name is looked up in every kind).

    Raises:
        NotFoundError: no job of that name.
    """
    namespace, kind, name = parse_job_id(job, settings)
    api = custom_objects(settings)
    kinds = [kind] if kind is not None else list(KINDS.values())
    for candidate in kinds:
        try:
            return call(lambda: api.get_namespaced_custom_object(
                GROUP, candidate.version, namespace, candidate.plural, name,
                _request_timeout=settings.request_timeout_s), settings, sleep)
        except NotFoundError:
            if candidate is kinds[-1]:
                raise NotFoundError(f"no {' or '.join(k.kind for k in kinds)} named {name!r} in namespace "
                                    f"{namespace}", backend="kubernetes", status=404) from None
    raise AssertionError("unreachable")  # pragma: no cover


def status_of(job: Mapping[str, Any]) -> JobStatus:
    """A :class:`JobStatus` from a job's ``status.conditions`` (the first true one in
    :data:`CONDITION_ORDER`); a suspended job waiting in a Kueue queue is queued."""
    conditions = (job.get("status") or {}).get("conditions") or []
    true = {c.get("type"): c for c in conditions if isinstance(c, Mapping) and c.get("status") == "True"}
    deleting = bool((job.get("metadata") or {}).get("deletionTimestamp"))
    for kind in CONDITION_ORDER:
        if kind in true:
            condition = true[kind]
            state = CONDITION_STATES[kind]
            if kind == "Suspended" and QUEUE_LABEL in ((job.get("metadata") or {}).get("labels") or {}):
                state = JobState.QUEUED
            if deleting and not state.terminal:
                state = JobState.CANCELLING
            message = str(condition.get("message") or condition.get("reason") or "")
            return JobStatus(state=state, native_state=kind, message=message)
    return JobStatus(state=JobState.CANCELLING if deleting else JobState.QUEUED, native_state="",
                     message="the operator has not reported on the job yet")


def cancel(job: str, settings: KubernetesSettings, *, sleep: Sleep = None) -> None:
    """Delete the job with foreground propagation (its pods first); nothing happens once it has
    ended or is gone."""
    try:
        found = get(job, settings, sleep=sleep)
    except NotFoundError:
        return
    if status_of(found).state.terminal:
        return
    kind = _kind_of(found)
    metadata = found["metadata"]
    api = custom_objects(settings)
    try:
        call(lambda: api.delete_namespaced_custom_object(
            GROUP, kind.version, metadata.get("namespace") or settings.namespace, kind.plural, metadata["name"],
            propagation_policy="Foreground", _request_timeout=settings.request_timeout_s), settings, sleep)
    except NotFoundError:
        return


# --- logs ----------------------------------------------------------------------------------------------

def _pod_tag(pod: Any) -> tuple[str, int, str]:
    """(replica type, index, ``[type-index]``) of a job's pod, from the operators' labels."""
    labels = pod.metadata.labels or {}
    rtype = (labels.get(REPLICA_TYPE_LABEL) or labels.get(ROLE_LABEL) or "pod").lower()
    index = labels.get(REPLICA_INDEX_LABEL)
    index_number = int(index) if index and index.isdigit() else 0
    tag = rtype if index is None else f"{rtype}-{index}"
    return rtype, index_number, tag


def _order(pod: Any) -> tuple[int, int, str]:
    rtype, index, _ = _pod_tag(pod)
    rank = PRIMARY_ORDER.index(rtype) if rtype in PRIMARY_ORDER else len(PRIMARY_ORDER)
    return rank, index, pod.metadata.name


def job_pods(job: Mapping[str, Any], settings: KubernetesSettings, sleep: Sleep = None) -> list[Any]:
    """The job's pods (label ``training.kubeflow.org/job-name``), primary first."""
    from kubernetes import client

    core = client.CoreV1Api(api_client(settings))
    metadata = job["metadata"]
    namespace = metadata.get("namespace") or settings.namespace
    found = call(lambda: core.list_namespaced_pod(namespace, label_selector=f"{JOB_NAME_LABEL}={metadata['name']}",
                                                  _request_timeout=settings.request_timeout_s), settings, sleep)
    return sorted(found.items or [], key=_order)


def _container(job: Mapping[str, Any], pod: Any) -> Optional[str]:
    kind = _kind_of(job)
    if kind.container is not None:
        return kind.container
    containers = pod.spec.containers if pod.spec is not None else []
    return containers[0].name if containers else None


def _stream_lines(response: Any) -> Iterator[str]:
    """Lines of a streamed (``follow``) log response, as they arrive."""
    pending = b""
    try:
        for chunk in response.stream(4096, decode_content=True):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.decode("utf-8", "replace")
        if pending:
            yield pending.decode("utf-8", "replace")
    finally:
        response.release_conn()


def _started(pod: Any) -> bool:
    return bool(pod.status and pod.status.phase in ("Running", "Succeeded", "Failed"))


def logs(job: str, settings: KubernetesSettings, *, follow: bool = False, sleep: Sleep = None) -> Iterator[str]:
    """The job's log lines: every pod's, prefixed ``[master-0]``…; with ``follow``, the primary
    pod's as they come (state changes meanwhile), until the job ends. Values of secret-looking
    variables of the job are masked."""
    found = get(job, settings, sleep=sleep)
    secrets = display.secret_values(found)
    lines = _follow(found, settings, sleep) if follow else _all_logs(found, settings, sleep)
    return display.mask_lines(lines, secrets)


def _read_log(found: Mapping[str, Any], pod: Any, settings: KubernetesSettings, sleep: Sleep, *,
              stream: bool) -> Any:
    from kubernetes import client

    core = client.CoreV1Api(api_client(settings))
    namespace = found["metadata"].get("namespace") or settings.namespace
    if stream:
        return call(lambda: core.read_namespaced_pod_log(pod.metadata.name, namespace, container=_container(found, pod),
                                                         follow=True, _preload_content=False), settings, sleep)
    return call(lambda: core.read_namespaced_pod_log(pod.metadata.name, namespace, container=_container(found, pod),
                                                     _request_timeout=settings.request_timeout_s), settings, sleep)


def _all_logs(found: Mapping[str, Any], settings: KubernetesSettings, sleep: Sleep) -> Iterator[str]:
    pods = job_pods(found, settings, sleep)
    if not pods:
        yield f"no pods yet; job state: {status_of(found).state.value}"
    for pod in pods:
        if not _started(pod):
            yield f"[{_pod_tag(pod)[2]}] (not started: {pod.status.phase if pod.status else 'unknown'})"
            continue
        text = _read_log(found, pod, settings, sleep, stream=False) or ""
        for line in text.splitlines():
            yield f"[{_pod_tag(pod)[2]}] {line}"


def _follow(found: Mapping[str, Any], settings: KubernetesSettings, sleep: Sleep) -> Iterator[str]:
    wait = sleep or time.sleep
    name = job_id(found["metadata"].get("namespace") or settings.namespace, _kind_of(found),
                  found["metadata"]["name"])
    streamed: set[tuple[str, int]] = set()
    last = None
    while True:
        status = status_of(found)
        if status.native_state != last:
            last = status.native_state
            yield f"job state: {status.state.value}" + (f" — {status.message}" if status.message else "")
        pods = [p for p in job_pods(found, settings, sleep) if _started(p)]
        primary = pods[0] if pods else None
        restarts = sum(c.restart_count or 0 for c in (primary.status.container_statuses or [])) if primary else 0
        if primary is not None and (primary.metadata.name, restarts) not in streamed:
            streamed.add((primary.metadata.name, restarts))
            tag = _pod_tag(primary)[2]
            for line in _stream_lines(_read_log(found, primary, settings, sleep, stream=True)):
                yield f"[{tag}] {line}"
            found = get(name, settings, sleep=sleep)
            continue
        if status.state.terminal:
            return
        wait(settings.poll_interval_s)
        found = get(name, settings, sleep=sleep)
