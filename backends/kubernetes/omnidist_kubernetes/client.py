"""Talking to a cluster through the official ``kubernetes`` client, imported lazily:
:class:`KubernetesClient` is the protocol of :class:`omnidist.submission.clients.Client`; the template
retries, creates exactly once, cancels unless finished and masks.

Every request runs once per attempt (the client's own urllib3 retries are off);
``ApiException`` and transport errors become omnidist errors in :meth:`KubernetesClient.translate`,
carrying the API server's message. A create is made safe to repeat by the name fixed once per
submit (``<name>-<suffix>``) and a request-id label (:attr:`~omnidist.submission.clients.Idempotency.CHOSEN_ID`):
a 409 means the name is taken, and when the job holding it carries this submit's request id, an
earlier attempt made it (its answer was lost). Cancel is a delete with foreground propagation:
the job's pods go first. Logs are the pods' (label ``training.kubeflow.org/job-name``); following
streams the primary pod's log as it is written.

Job ids are ``NAMESPACE/KIND/NAME`` (``default/pytorchjob/bert-x7k2p``); ``KIND/NAME`` and a
bare ``NAME`` take the namespace from the settings (a bare name is looked up in every kind).
"""

from __future__ import annotations

import copy
import functools
import http.client
import logging
import secrets
import socket
import string
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Optional

from omnidist.kit import (
    REQUEST_ID_LABEL,
    BackendError,
    ConflictError,
    Ending,
    Idempotency,
    JobState,
    JobStatus,
    Keyed,
    LogPage,
    NotFoundError,
    ReadsLogs,
    ReportsShortage,
    Shortage,
    ShortageError,
    TransientBackendError,
    ValidationError,
    classify_ending,
    error_for_status,
    mask_error,
    mask_text,
    parse_retry_after,
)
from omnidist_k8s import api
from omnidist_kubernetes.settings import KubernetesSettings
from omnidist_kubernetes.tables import (
    CONDITION_ENDINGS,
    CONDITION_ORDER,
    CONDITION_STATES,
    GROUP,
    JOB_NAME_LABEL,
    KINDS,
    LAUNCHER,
    MAX_NAME,
    NAME,
    POD_ENDINGS,
    QUEUE_LABEL,
    QUOTA_REFUSAL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    UNSCHEDULABLE,
    Kind,
)

if TYPE_CHECKING:
    from omnidist.kit import CompiledJob

ROLE_LABEL = "training.kubeflow.org/job-role"
"""mpi-operator's pod label for ``launcher`` / ``worker``."""

PRIMARY_ORDER = ("launcher", "master", "chief", "worker")
"""Which pod's log ``logs --follow`` streams: the first of these replica types (index 0)."""

SUFFIX_ALPHABET = string.ascii_lowercase + string.digits


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


# --- reading a job ----------------------------------------------------------------------------------

def status_of(job: Mapping[str, Any]) -> JobStatus:
    """A :class:`JobStatus` from a job's ``status.conditions`` (the first true one in
    :data:`CONDITION_ORDER`); a suspended job waiting in a Kueue queue is queued, one being
    deleted is cancelling."""
    conditions = (job.get("status") or {}).get("conditions") or []
    true = {c.get("type"): c for c in conditions if isinstance(c, Mapping) and c.get("status") == "True"}
    metadata = job.get("metadata") or {}
    deleting = bool(metadata.get("deletionTimestamp"))
    for kind in CONDITION_ORDER:
        if kind in true:
            condition = true[kind]
            state = CONDITION_STATES[kind]
            if kind == "Suspended" and QUEUE_LABEL in (metadata.get("labels") or {}):
                state = JobState.QUEUED
            if deleting and not state.terminal:
                state = JobState.CANCELLING
            message = str(condition.get("message") or condition.get("reason") or "")
            return JobStatus(state=state, native_state=kind, message=message)
    return JobStatus(state=JobState.CANCELLING if deleting else JobState.QUEUED, native_state="",
                     message="the operator has not reported on the job yet")


def pod_ending(pod: Any) -> Optional[Ending]:
    """How a pod's disruption ends its job (:data:`~omnidist_kubernetes.tables.POD_ENDINGS`), or ``None``."""
    status = pod.status
    if status is None:
        return None
    if status.reason in POD_ENDINGS:
        return POD_ENDINGS[status.reason]
    for condition in status.conditions or []:
        if condition.type == "DisruptionTarget" and condition.status == "True" and condition.reason in POD_ENDINGS:
            return POD_ENDINGS[condition.reason]
    return None


def pod_tag(pod: Any) -> tuple[str, int, str]:
    """(replica type, index, ``type-index``) of a job's pod, from the operators' labels."""
    labels = pod.metadata.labels or {}
    rtype = (labels.get(REPLICA_TYPE_LABEL) or labels.get(ROLE_LABEL) or "pod").lower()
    index = labels.get(REPLICA_INDEX_LABEL)
    number = int(index) if index and index.isdigit() else 0
    return rtype, number, rtype if index is None else f"{rtype}-{index}"


def _pod_order(pod: Any) -> tuple[int, int, str]:
    rtype, index, _ = pod_tag(pod)
    rank = PRIMARY_ORDER.index(rtype) if rtype in PRIMARY_ORDER else len(PRIMARY_ORDER)
    return rank, index, pod.metadata.name


def _started(pod: Any) -> bool:
    return bool(pod.status and pod.status.phase in ("Running", "Succeeded", "Failed"))


def _restarts(pod: Any) -> int:
    return sum(c.restart_count or 0 for c in ((pod.status and pod.status.container_statuses) or []))


def stream_lines(response: Any) -> Iterator[str]:
    """The lines of a streamed (``follow``) log response, as they arrive."""
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


# --- the client -------------------------------------------------------------------------------------

def random_suffix() -> str:
    """Five lowercase letters and digits, like the names Kubernetes generates."""
    return "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(5))


class KubernetesClient(ReportsShortage[dict], ReadsLogs[dict]):
    """Kubeflow jobs created, read and deleted as custom objects; logs from their pods."""

    idempotency = Idempotency.CHOSEN_ID
    new_suffix = staticmethod(random_suffix)

    @functools.cached_property
    def _api(self) -> Any:
        settings = self.settings
        return api.api_client(api_server=settings.api_server, kubeconfig=settings.kubeconfig, context=settings.context,
                              settings=f"backends.{NAME}", backend=NAME)

    @functools.cached_property
    def _objects(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self._api)

    @functools.cached_property
    def _core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self._api)

    @property
    def _timeout(self) -> float:
        return self.settings.request_timeout_s

    def translate(self, exc: BaseException) -> Optional[BackendError]:
        """``ApiException`` by status (the ``Status`` message, ``Retry-After``); dropped connections
        and timeouts as transient (``status=None``: no answer came); unreachable servers as final."""
        from kubernetes.client.exceptions import ApiException
        from urllib3 import exceptions as url_errors

        if isinstance(exc, ApiException):
            if not exc.status:
                return BackendError(f"the request failed ({exc.reason})", backend=NAME)
            after = parse_retry_after((exc.headers or {}).get("Retry-After"))
            return error_for_status(exc.status)(api.status_message(exc), backend=NAME, status=exc.status,
                                                retry_after=after)
        if isinstance(exc, url_errors.MaxRetryError) and exc.reason is not None:
            exc = exc.reason
        if isinstance(exc, url_errors.NewConnectionError):  # nothing listens there: retrying will not help
            return BackendError(f"cannot reach the API server ({exc})", backend=NAME)
        if isinstance(exc, (url_errors.ProtocolError, url_errors.TimeoutError, url_errors.HTTPError,
                            ConnectionError, TimeoutError, socket.timeout, http.client.HTTPException)):
            return TransientBackendError(f"connection failed ({type(exc).__name__}: {exc})", backend=NAME)
        if isinstance(exc, OSError):
            return BackendError(f"cannot reach the API server ({type(exc).__name__}: {exc})", backend=NAME)
        return None

    def keyed(self, compiled: CompiledJob) -> Keyed:
        """The job named ``<name>-<suffix>`` and labelled with a fresh request id."""
        key = self.request_id()
        return Keyed(request=named(compiled.request, self.suffix(), key), key=key)

    def _where(self, body: Mapping[str, Any]) -> tuple[str, Kind, str]:
        metadata = body["metadata"]
        return metadata.get("namespace") or self.settings.namespace, _kind_of(body), metadata["name"]

    def create_job(self, keyed: Keyed) -> dict[str, Any]:
        """``POST …/namespaces/NS/KIND-PLURAL``."""
        namespace, kind, _ = self._where(keyed.request)
        return self._objects.create_namespaced_custom_object(
            GROUP, kind.version, namespace, kind.plural, dict(keyed.request), _request_timeout=self._timeout)

    def find_jobs(self, keyed: Keyed) -> list[dict[str, Any]]:
        """The job holding the chosen name, when it carries this submit's request id."""
        namespace, kind, name = self._where(keyed.request)
        existing = self._objects.get_namespaced_custom_object(
            GROUP, kind.version, namespace, kind.plural, name, _request_timeout=self._timeout)
        labels = existing.get("metadata", {}).get("labels") or {}
        return [existing] if labels.get(REQUEST_ID_LABEL) == keyed.key else []

    def conflict(self, keyed: Keyed, exc: ConflictError) -> BackendError:
        """The name belongs to a job this submit did not make."""
        namespace, kind, name = self._where(keyed.request)
        return ConflictError(f"a {kind.kind} named {name!r} already exists in namespace {namespace} and this "
                             f"submit did not make it (it is not labelled {REQUEST_ID_LABEL}={keyed.key}; {exc}); "
                             "submit again for a new name suffix", backend=NAME, status=409)

    def get_job(self, job_id: str) -> dict[str, Any]:
        """The job object; a bare name is looked up in every kind."""
        from kubernetes.client.exceptions import ApiException

        namespace, kind, name = parse_job_id(job_id, self.settings)
        kinds = [kind] if kind is not None else list(KINDS.values())
        for candidate in kinds:
            try:
                return self._objects.get_namespaced_custom_object(
                    GROUP, candidate.version, namespace, candidate.plural, name, _request_timeout=self._timeout)
            except ApiException as exc:
                if exc.status != 404 or kind is not None:
                    raise
        raise NotFoundError(f"no PyTorchJob, TFJob or MPIJob named {name!r} in namespace {namespace}",
                            backend=NAME, status=404)

    def cancel_job(self, job_id: str) -> None:
        """Delete the job, its pods first (``propagationPolicy: Foreground``)."""
        namespace, kind, name = parse_job_id(job_id, self.settings)
        if kind is None:  # a bare name: which kind it is
            namespace, kind, name = self._where(self.get_job(job_id))
        self._objects.delete_namespaced_custom_object(
            GROUP, kind.version, namespace, kind.plural, name, propagation_policy="Foreground",
            _request_timeout=self._timeout)

    def status_of(self, job: dict[str, Any]) -> JobStatus:
        """The state from ``status.conditions`` (:func:`status_of`)."""
        return status_of(job)

    def ending_of(self, job: dict[str, Any], status: JobStatus) -> Optional[Ending]:
        """A failed job whose condition says evicted (``MPIJobEvicted``), or one of whose pods
        was disrupted (:data:`~omnidist_kubernetes.tables.POD_ENDINGS`: a pod's ``reason:
        Evicted`` or its ``DisruptionTarget`` condition), ended by preemption or node loss, not by
        the program; else the portable state. Reading the pods is best effort (logged)."""
        ended = classify_ending(status, CONDITION_ENDINGS, text=f"{status.native_state} {status.message}")
        if ended is not Ending.FAILURE:
            return ended
        try:
            pods = self.pods(job)
        except BackendError as exc:
            logging.getLogger("omnidist.kubernetes").debug("no pods to classify %s: %s", status, exc)
            return ended
        return next((found for found in map(pod_ending, pods) if found is not None), ended)

    def id_of(self, keyed: Keyed, job: dict[str, Any]) -> str:
        """``NAMESPACE/KIND/NAME``."""
        namespace, kind, name = self._where(job if job.get("metadata") else keyed.request)
        return job_id(namespace, kind, name)

    def shortage(self, exc: BaseException, error: BackendError) -> Optional[Shortage]:
        """A create over a namespace's ``ResourceQuota`` (403 "exceeded quota: …") is a quota refusal."""
        if error.status == 403 and QUOTA_REFUSAL.search(error.detail):
            return Shortage.QUOTA
        return super().shortage(exc, error)

    def queued_shortage(self, job_id: str, status: JobStatus) -> Optional[ShortageError]:
        """A job whose pods no node can take (``PodScheduled=False``, reason ``Unschedulable``: "0/6
        nodes are available: 6 Insufficient nvidia.com/gpu.") lacks capacity; a Kubernetes job is
        never refused otherwise, it waits."""
        if status.state not in (JobState.PENDING, JobState.QUEUED):
            return super().queued_shortage(job_id, status)
        job = self.call(lambda: self.get_job(job_id))
        for pod in self.pods(job):
            for condition in (pod.status.conditions or []) if pod.status is not None else []:
                if condition.type == "PodScheduled" and condition.status == "False" and \
                        condition.reason == UNSCHEDULABLE:
                    return self.shortage_error(Shortage.CAPACITY, f"pod {pod.metadata.name}: {condition.message}")
        return None

    def state_line(self, job_id: str, status: JobStatus) -> str:
        """``job state: running`` with the condition's message."""
        return f"job state: {status.state.value}" + (f" — {status.message}" if status.message else "")

    # --- logs ------------------------------------------------------------------------------------

    def pods(self, job: Mapping[str, Any]) -> list[Any]:
        """The job's pods (label ``training.kubeflow.org/job-name``), primary first."""
        namespace, _, name = self._where(job)
        found = self.call(lambda: self._core.list_namespaced_pod(
            namespace, label_selector=f"{JOB_NAME_LABEL}={name}", _request_timeout=self._timeout))
        return sorted(found.items or [], key=_pod_order)

    def _container(self, job: Mapping[str, Any], pod: Any) -> Optional[str]:
        kind = _kind_of(job)
        if kind.container is not None:
            return kind.container
        containers = pod.spec.containers if pod.spec is not None else []
        return containers[0].name if containers else None

    def _log(self, job: Mapping[str, Any], pod: Any, *, follow: bool) -> Any:
        """The pod's log as a raw response: the client decodes a ``str`` answer as ``str(bytes)``
        (and parses one that happens to be JSON), so the body is read here."""
        namespace = self._where(job)[0]
        container = self._container(job, pod)
        if follow:
            return self.call(lambda: self._core.read_namespaced_pod_log(
                pod.metadata.name, namespace, container=container, follow=True, _preload_content=False))
        response = self.call(lambda: self._core.read_namespaced_pod_log(
            pod.metadata.name, namespace, container=container, _preload_content=False,
            _request_timeout=self._timeout))
        try:
            return response.data.decode("utf-8", "replace")
        finally:
            response.release_conn()

    def read_logs(self, job_id: str, cursor: Any, *, follow: bool) -> LogPage:
        """Every started pod's log, each line prefixed ``[master-0]``… (one page)."""
        job = self.call(lambda: self.get_job(job_id))
        lines = []
        for pod in self.pods(job):
            tag = pod_tag(pod)[2]
            if not _started(pod):
                lines.append(f"[{tag}] (not started: {pod.status.phase if pod.status else 'unknown'})")
                continue
            lines += [f"[{tag}] {line}" for line in (self._log(job, pod, follow=False) or "").splitlines()]
        return LogPage(status=self._status(job_id, job), lines=lines, secrets=self.secrets_of(job), last=True)

    def logs(self, job_id: str, follow: bool = False) -> Iterator[str]:
        """Every pod's lines; with ``follow``, the primary pod's log streamed as it is written (the
        Master, Chief or Launcher: rank 0 and mpirun's output), its state changes around it, until
        the job ends. The job's secret values are masked in lines and errors."""
        if not follow:
            return super().logs(job_id, follow=False)
        return self._follow(job_id)

    def _follow(self, job_id: str) -> Iterator[str]:
        secrets: set[str] = set()
        shown, streamed = "", set()
        sleep = self.injected.sleep if self.injected.sleep is not None else time.sleep
        try:
            while True:
                job = self.call(lambda: self.get_job(job_id))
                secrets |= self.secrets_of(job)
                status = self._status(job_id, job)
                line, ended = self.state_line(job_id, status), status.state.terminal
                if line != shown and not ended:  # a new state reads before the lines it brings
                    shown = line
                    yield mask_text(line, secrets)
                started = [p for p in self.pods(job) if _started(p)]
                primary = started[0] if started else None
                if primary is not None and (primary.metadata.name, _restarts(primary)) not in streamed:
                    streamed.add((primary.metadata.name, _restarts(primary)))
                    tag = pod_tag(primary)[2]
                    for text in self._lines(self._log(job, primary, follow=True)):
                        yield mask_text(f"[{tag}] {text}", secrets)
                    continue  # read the state again before waiting
                if ended:  # how it ended, after its lines
                    if line != shown:
                        yield mask_text(line, secrets)
                    return
                sleep(self.settings.poll_interval_s)
        except Exception as exc:
            mask_error(exc, secrets)
            raise

    def _lines(self, response: Any) -> Iterator[str]:
        """The streamed lines, a connection dropped mid-stream translated."""
        lines = stream_lines(response)
        while True:
            try:
                line = self.translated(lambda: next(lines))
            except StopIteration:
                return
            yield line
