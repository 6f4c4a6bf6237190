"""The client template: submit, status, cancel and logs, written once over a small per-cloud protocol.

A cloud backend declares its client class (``client = MyCloudClient``); the
``submit``/``status``/``logs``/``cancel`` of :class:`~omnidist.submission.cloud.CloudBackend` make one per call
and run the template methods of :class:`Client`. A plugin's client implements the protocol: each
method is one SDK call (no retries; SDK exceptions are left as they are, :meth:`Client.translate`
turns them into omnidist's tree), and the SDK is imported inside the methods.

The template owns what is the same on every cloud: every call translated and retried
(:mod:`omnidist.submission.retry`: transient errors only, bounded, jittered, ``Retry-After``); a create that
never makes a second job (:class:`Idempotency`); cancel only while the job is unfinished; the job's
secret values masked in whatever the cloud says back (errors, status messages, log lines); logs
followed by polling; and the ids and waits tests inject (:class:`Injected`), in one place.
"""

from __future__ import annotations

import enum
import logging
import re
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Optional, TypeVar

import attrs

from omnidist import secrets as masking
from omnidist.backend.values import REQUEST_ID_LABEL, CompiledJob, JobState, JobStatus
from omnidist.errors import (
    BackendError,
    ConflictError,
    InterruptedCreate,
    InvalidRequestError,
    NotFoundError,
    OmnidistError,
    ShortageError,
    TransientBackendError,
)
from omnidist.model.fields import as_tuple
from omnidist.model.recovery import Ending
from omnidist.recovery import endings
from omnidist.submission import retry

if TYPE_CHECKING:
    from omnidist.backend.contract import Backend

T = TypeVar("T")
N = TypeVar("N")
"""A cloud's native job, as its SDK returns it (a message, a resource object or a dict)."""
Sleep = Optional[Callable[[float], None]]
Translate = Callable[[BaseException], Optional[BackendError]]


def new_request_id() -> str:
    """A fresh idempotency key (32 hex digits)."""
    return uuid.uuid4().hex


def short_suffix() -> str:
    """A fresh name suffix (8 hex digits)."""
    return uuid.uuid4().hex[:8]


class Idempotency(enum.Enum):
    """How a cloud lets a repeated create find the job an earlier attempt made."""

    LABEL = "label"
    """The cloud names the job; the create carries the key as the ``omnidist-request-id`` label.
    After an attempt whose outcome is unknown (no answer, or a 5xx) the template looks for the
    label before creating again,
    and after one that timed out it waits for a late copy, keeps the earliest job and cancels the
    others."""
    CHOSEN_ID = "chosen_id"
    """The client chooses the job's id and marks the job with the key; a repeated create answers
    409, and the template asks :meth:`Client.find_jobs` whether the job holding the id carries
    this submit's key (adopted) or not (:meth:`Client.conflict` is raised)."""
    NAME = "name"
    """The create is a PUT by a name chosen once per submit (the key): before every repeat the
    template looks the name up, so a create whose answer was lost or was an error is not sent again."""


class Shortage(str, enum.Enum):
    """Why a cloud refused a job that a placement may take elsewhere (SPEC §12)."""

    QUOTA = "quota"
    """An account limit: the GPUs, cores or jobs the project or subscription may use."""
    CAPACITY = "capacity"
    """The cloud has no machines of that kind left there (a stock-out)."""


_RATE_LIMIT = re.compile(r"per (?:minute|second|hour)|rate exceeded|rate limit|too many requests|throttl", re.I)
"""Words of a request-rate limit: retried in place, never a reason to move."""
_QUOTA = re.compile(
    r"exceeds? (?:the )?quota|quota (?:metrics )?exceed|quota (?:failure|limit|exhausted)|exceeded quota|"
    r"insufficient quota|exceeds the allowed maximum|quota of \d+|quota exceeded|exceeding approved \S+ quota", re.I)
"""Words of a resource quota refusal (the clouds' own texts, see docs/placement.md)."""
_CAPACITY = re.compile(
    r"resources are insufficient|insufficient (?:\S+ )?capacity|out of capacity|no (?:more )?capacity|stock-?out|"
    r"resource.pool.exhausted|unable to provision|temporarily unavailable in|not enough capacity", re.I)
"""Words of a capacity refusal."""


def shortage_in(text: str) -> Optional[Shortage]:
    """The shortage a cloud's message speaks of: a quota, a capacity stock-out, or ``None`` (also
    for a request-rate limit, which says "per minute" or "rate")."""
    if not text or _RATE_LIMIT.search(text):
        return None
    if _QUOTA.search(text):
        return Shortage.QUOTA
    if _CAPACITY.search(text):
        return Shortage.CAPACITY
    return None


@attrs.frozen(kw_only=True)
class Injected:
    """What a client makes up or waits on, replaced by tests in one place.

    Attributes:
        request_id: makes a submit's idempotency key (``compile`` never calls it).
        suffix: makes a name suffix; ``None``: the client's own :attr:`Client.new_suffix`.
        sleep: how retries and log polls wait (``None``: real time, through tenacity).
        wait: how settling after a timed-out create waits (real time: the server is working).
        clock: the monotonic clock settling is measured with.
    """

    request_id: Callable[[], str] = new_request_id
    suffix: Optional[Callable[[], str]] = None
    sleep: Sleep = None
    wait: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


@attrs.frozen(kw_only=True)
class Keyed:
    """A create request carrying a submit's idempotency key.

    Attributes:
        request: what :meth:`Client.create_job` sends, in the client's own form (a dict, an SDK message).
        key: the idempotency key: a label value, or the job's chosen id or name.
    """

    request: Any
    key: str


@attrs.frozen(kw_only=True)
class LogStart:
    """Where reading a job's logs starts: the lines shown first (where the logs are), the secret
    values to mask, and the cursor of the first page."""

    header: tuple[str, ...] = attrs.field(default=(), converter=as_tuple)
    secrets: frozenset[str] = frozenset()
    cursor: Any = None


@attrs.frozen(kw_only=True)
class LogPage:
    """What one read of a job's logs found.

    Attributes:
        status: the job's state when read (``None``: not looked at; the template stops after the page).
        lines: the new log lines, in order, each once.
        secrets: more secret values to mask (those of a job fetched for this page).
        cursor: where the next page starts.
        last: nothing more can be read (the template stops after this page).
    """

    status: Optional[JobStatus] = None
    lines: tuple[str, ...] = attrs.field(default=(), converter=as_tuple)
    secrets: frozenset[str] = frozenset()
    cursor: Any = None
    last: bool = False


def labelled(request: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``request`` with ``key`` in its ``labels`` under ``omnidist-request-id``."""
    return {**request, "labels": {**(request.get("labels") or {}), REQUEST_ID_LABEL: key}}


def _why(refusal: BackendError) -> str:
    """A refusal's kind, as a log line says it: the shortage, else the error's class."""
    return getattr(refusal, "shortage", None) or type(refusal).__name__


def _server_error(exc: BackendError) -> bool:
    return exc.status is not None and exc.status >= 500


def outcome_unknown(exc: BackendError) -> bool:
    """Whether a failed create may have made its job: no answer came back (a reset, a lost
    response, a timeout) or the server answered 5xx (it may fail after making it). A 429 or 408
    says the request was not carried out."""
    return exc.status is None or exc.status >= 500


@attrs.define
class _Creates:
    """What a submit's create attempts did, for deciding whether duplicates must be looked for."""

    attempts: int = 0
    made: int = 0
    """Creates that answered with a job."""
    unanswered: int = 0
    """Creates whose outcome is unknown (:func:`outcome_unknown`: no answer, or a 5xx)."""
    pending: int = 0
    """Creates abandoned while the server may still be working on them (timeouts)."""
    settle_until: float = 0.0
    """Until when (the injected clock) an abandoned create may still make its job."""


class Client(ABC, Generic[N]):
    """A cloud's client: the protocol a plugin implements, and the template the core runs over it.

    One is made per call, by :class:`~omnidist.submission.cloud.CloudBackend`, for one settings value.

    Args:
        settings: the backend's settings, a :class:`omnidist.backend.settings.ClientSettings` (the retry,
            timeout and polling keys the template reads).
        backend: the backend this client serves (its name and console URLs).
        injected: ids and waits (tests replace them).
    """

    idempotency: ClassVar[Idempotency]
    """How a repeated create finds what an earlier attempt made."""
    new_suffix: ClassVar[Callable[[], str]] = staticmethod(short_suffix)
    """Makes a name suffix when none is injected."""

    def __init__(self, settings: Any, *, backend: Backend, injected: Optional[Injected] = None) -> None:
        self.settings = settings
        self.backend = backend
        self.name = backend.name
        self.injected = injected or Injected()
        self.log = logging.getLogger(f"omnidist.{self.name}")

    # --- the protocol: what a plugin implements (one SDK call each, no retries) -------------------

    @abstractmethod
    def translate(self, exc: BaseException) -> Optional[BackendError]:
        """omnidist's error for an SDK or transport exception (``None``: not one, raise it as it is).

        A :class:`~omnidist.errors.TransientBackendError` is retried; its ``status`` is ``None``
        when no answer came back (the request may have been carried out)."""

    @abstractmethod
    def keyed(self, compiled: CompiledJob) -> Keyed:
        """The create request for ``compiled``, carrying a fresh idempotency key (from
        ``self.injected``); called once per submit, before any network call."""

    @abstractmethod
    def create_job(self, keyed: Keyed) -> N:
        """Send one create; the native job the cloud answered with."""

    @abstractmethod
    def find_jobs(self, keyed: Keyed) -> Sequence[N]:
        """The jobs carrying ``keyed.key``, earliest created first (empty when none; a
        :class:`~omnidist.errors.NotFoundError` counts as none)."""

    @abstractmethod
    def get_job(self, job_id: str) -> N:
        """Read the native job."""

    @abstractmethod
    def cancel_job(self, job_id: str) -> None:
        """Send one cancel request."""

    @abstractmethod
    def status_of(self, job: N) -> JobStatus:
        """The job's state through the plugin's state table, with the message the job carries."""

    @abstractmethod
    def id_of(self, keyed: Keyed, job: N) -> str:
        """The id a handle follows the created job by."""

    # --- refinements: hooks every client has, with defaults ----------------------------------------
    # (the optional groups are the capability classes below: StagesCode, ReadsLogs, ReadsTrials,
    # ReportsShortage)

    def secrets_of(self, job: N) -> frozenset[str]:
        """The secret values a native job carries (masked wherever the cloud repeats them)."""
        return masking.secret_values(job)

    def url_of(self, job: N) -> str:
        """The job's page as the cloud answered it (``""``: the backend's ``console_url``)."""
        return ""

    def failure_message(self, job_id: str, job: N) -> str:
        """Why a failed job failed, when the job itself does not say (``""``: unknown)."""
        return ""

    def ending_of(self, job: N, status: JobStatus) -> Optional[Ending]:
        """How the job ended, from its native resource and its status (message filled in); ``None``
        while it runs. The default reads the portable state only
        (:func:`omnidist.recovery.endings.by_state`); a backend overrides it with its native facts."""
        return endings.by_state(status)

    def conflict(self, keyed: Keyed, exc: ConflictError) -> BackendError:
        """The error for a chosen id held by a job this submit did not make."""
        return ConflictError(f"a job with this id already exists and this submit did not make it ({exc})",
                             backend=self.name, status=409)

    def timed_out(self, exc: BaseException) -> bool:
        """Whether a failed create timed out waiting for its answer (the server may still make it)."""
        return False

    @property
    def settle_s(self) -> float:
        """After a create timed out (:attr:`Idempotency.LABEL`), how long its job may still appear."""
        return 30.0

    # --- the template: what the core does the same way for every cloud -----------------------------

    def suffix(self) -> str:
        """A fresh name suffix (injected, or :attr:`new_suffix`)."""
        return (self.new_suffix if self.injected.suffix is None else self.injected.suffix)()

    def request_id(self) -> str:
        """A fresh idempotency key (injected)."""
        return self.injected.request_id()

    def translated(self, fn: Callable[[], T], translate: Optional[Translate] = None) -> T:
        """``fn()`` once, its SDK exceptions raised as omnidist's (``raise … from exc``), by
        :meth:`translate` or the given translator (another SDK's, e.g. a code upload's)."""
        try:
            return fn()
        except OmnidistError:
            raise
        except Exception as exc:
            error = (translate or self.translate)(exc)
            if error is None:
                raise
            raise error from exc

    def call(self, fn: Callable[[], T], translate: Optional[Translate] = None) -> T:
        """``fn()`` translated (see :meth:`translated`) and retried under the settings' policy
        (transient errors only)."""
        policy = self.settings.retry_policy()
        return retry.call(lambda: self.translated(fn, translate), policy, self.injected.sleep)

    def submit(self, compiled: CompiledJob) -> tuple[str, str]:
        """Create the job exactly once; its id and the URL the cloud gave it (may be ``""``).

        A 400 may quote the request's env values: every error is raised with them masked."""
        with masking.masking_errors(masking.secret_values(compiled.request)):
            keyed = self.keyed(self.prepare(compiled) if isinstance(self, StagesCode) else compiled)
            try:
                job = self._create(keyed)
            except InterruptedCreate:
                raise
            except KeyboardInterrupt:
                raise self._interrupted(keyed) from None
            return self.id_of(keyed, job), self.url_of(job)

    def _interrupted(self, keyed: Keyed) -> InterruptedCreate:
        """What is known after Ctrl-C during a create: one look by the key (no retries; a second
        Ctrl-C or any failure ends it) says whether the job was made, else how to find it."""
        marker = (f"the label {REQUEST_ID_LABEL}={keyed.key}" if self.idempotency is Idempotency.LABEL
                  else f"the {'name' if self.idempotency is Idempotency.NAME else 'id'} {keyed.key}")
        try:
            found = self._found(keyed)
            job_id, url = (self.id_of(keyed, found[0]), self.url_of(found[0])) if found else (None, "")
        except BaseException:  # noqa: BLE001 - the user asked to stop: nothing more is tried
            job_id, url = None, ""
        if job_id is not None:
            message = (f"interrupted: the create had made the job {job_id}; it is running (omnidist cancel "
                       f"{job_id} --backend {self.name} stops it)")
        else:
            message = (f"interrupted during the create: the job may exist or appear shortly; it carries {marker} "
                       f"(look for it in the {self.name} console, or submit again: a new submit makes a new job)")
        return InterruptedCreate(message, backend=self.name, job_id=job_id, url=url, marker=marker)

    def status(self, job_id: str) -> JobStatus:
        """The job's state, its message masked."""
        job = self.call(lambda: self.get_job(job_id))
        return masking.mask_status(self._status(job_id, job), self.secrets_of(job))

    def cancel(self, job_id: str) -> None:
        """Ask the cloud to cancel the job; nothing happens once it has ended."""
        job = self.call(lambda: self.get_job(job_id))
        with masking.masking_errors(self.secrets_of(job)):
            if self.status_of(job).state.terminal:
                return
            try:
                self.call(lambda: self.cancel_job(job_id))
            except InvalidRequestError:  # a refusal because it ended between the two calls is no error
                if not self.status_of(self.call(lambda: self.get_job(job_id))).state.terminal:
                    raise

    def logs(self, job_id: str, follow: bool = False) -> Iterator[str]:
        """What :meth:`open_logs` shows first, then each page's lines, framed by the state changes
        (a new state before its page's lines, an end after them); with ``follow``, a page every
        ``poll_interval_s`` until the job ends. Lines and errors have the job's secrets masked."""
        secrets: set[str] = set()
        try:
            start = self.open_logs(job_id) if isinstance(self, ReadsLogs) else _console_start(self, job_id)
            secrets |= start.secrets
            for line in start.header:
                yield masking.mask_text(line, secrets)
            cursor, shown = start.cursor, ""
            while True:
                page = (self.read_logs(job_id, cursor, follow=follow) if isinstance(self, ReadsLogs)
                        else _states_only(self, job_id))
                secrets |= page.secrets
                ended = page.status is None or page.status.state.terminal
                line = ("" if page.status is None
                        else self.state_line(job_id, page.status) if isinstance(self, ReadsLogs)
                        else _state_line(page.status))
                change = [line] if line and line != shown else []
                shown = line or shown
                # A new state reads before its page's lines, how the job ended after them.
                for text in ([] if ended else change) + list(page.lines) + (change if ended else []):
                    yield masking.mask_text(text, secrets)
                if page.last or ended or not follow:
                    return
                sleep = self.injected.sleep if self.injected.sleep is not None else time.sleep
                sleep(self.settings.poll_interval_s)
                cursor = page.cursor
        except Exception as exc:
            masking.mask_error(exc, secrets)
            raise

    # --- the template's insides --------------------------------------------------------------------

    def _status(self, job_id: str, job: N) -> JobStatus:
        found = self.status_of(job)
        if found.state is JobState.FAILED and not found.message:
            found = attrs.evolve(found, message=self.failure_message(job_id, job))
        if found.ended is None:
            found = attrs.evolve(found, ended=self.ending_of(job, found))
        return self.with_trials(job_id, job, found) if isinstance(self, ReadsTrials) else found

    def _found(self, keyed: Keyed) -> list[N]:
        try:
            return list(self.translated(lambda: self.find_jobs(keyed)))
        except NotFoundError:
            return []

    def _sent(self, keyed: Keyed) -> N:
        """One create, translated; a refusal for quota or capacity (:meth:`shortage`) is raised as
        :class:`~omnidist.errors.ShortageError`, which is not retried."""
        return self.translated(lambda: self.create_job(keyed), self._create_error)

    def _create_error(self, exc: BaseException) -> Optional[BackendError]:
        error = self.translate(exc)
        if error is None:
            return None
        found = self.shortage(exc, error) if isinstance(self, ReportsShortage) else None
        if found is None:
            return error
        return ShortageError(error.detail, shortage=Shortage(found).value, backend=error.backend or self.name,
                             status=error.status)

    def _create_or_adopt(self, keyed: Keyed) -> N:
        try:
            return self._sent(keyed)
        except ConflictError as exc:
            found = self._found(keyed)
            if found:
                return found[0]  # made by an earlier attempt of this submit (or the transport's re-send)
            raise self.conflict(keyed, exc) from exc

    def _create(self, keyed: Keyed) -> N:
        creates = _Creates()
        chosen = self.idempotency is Idempotency.CHOSEN_ID

        def attempt() -> N:
            # A NAME create looks before every repeat; a LABEL one after an attempt whose outcome is
            # unknown (no answer, or a 5xx: the server may have made the job before failing). A
            # CHOSEN_ID repeat needs no look first: the cloud answers 409 for the id (adopted).
            if creates.attempts and not chosen and (self.idempotency is Idempotency.NAME or creates.unanswered):
                found = self._found(keyed)
                if found:
                    return found[0]
            creates.attempts += 1
            try:
                job = self._create_or_adopt(keyed) if chosen else self._sent(keyed)
            except TransientBackendError as exc:
                cause = exc.__cause__ or exc
                creates.unanswered += outcome_unknown(exc)
                if self.timed_out(cause):
                    creates.pending += 1
                    creates.settle_until = self.injected.clock() + self.settle_s
                raise
            except (ShortageError, InvalidRequestError) as exc:
                # A refusal for quota or capacity (or one a backend that classifies no shortages gives
                # as an invalid request) is trusted only once this submit is known to have made no job:
                # after an earlier create whose outcome is unknown, the quota it uses may be what is
                # refused now; a 5xx is itself such an outcome.
                creates.unanswered += outcome_unknown(exc) if isinstance(exc, ShortageError) else _server_error(exc)
                if not creates.unanswered:
                    raise
                found = self._settled(keyed, creates, exc)
                if not found:
                    raise
                return found[0]
            creates.made += 1
            return job

        job = self.call(attempt)
        duplicates_possible = creates.pending or (creates.unanswered and creates.made)
        if self.idempotency is Idempotency.LABEL and duplicates_possible:
            job = self._settle(keyed, job, creates)
        return job

    def _settled(self, keyed: Keyed, creates: _Creates, refusal: BackendError) -> list[N]:
        """The jobs this submit's earlier creates made, looked up by its key before a refusal is
        believed: at once, and again while a timed-out create may still land (``settle_s``).

        Raises:
            BackendError: the look-up itself failed: whether a job exists is unknown, so the refusal
                is not passed on as one (a placement would make a second job elsewhere).
        """
        pause = 0.2
        while True:
            try:
                found = self.call(lambda: self._found(keyed))
            except BackendError as exc:
                raise BackendError(
                    f"the create was refused ({_why(refusal)}: {refusal.detail}) after an earlier attempt whose "
                    f"outcome is unknown, and looking for the job that attempt may have made failed ({exc}); "
                    f"look for a job labelled {REQUEST_ID_LABEL}={keyed.key} before submitting again",
                    backend=self.name) from exc
            left = creates.settle_until - self.injected.clock()
            if found or left <= 0:
                if found:
                    self.log.warning("%s: the create was refused (%s) after an attempt whose outcome was unknown; "
                                     "that attempt had made the job, kept %s", self.name, _why(refusal),
                                     self.id_of(keyed, found[0]))
                return found
            self.injected.wait(min(pause, left))  # a timed-out create may still be running on the server
            pause = min(pause * 2, 5.0)

    def _settle(self, keyed: Keyed, job: N, creates: _Creates) -> N:
        """After creates whose outcome was unknown: wait for a late job to appear (while a timed-out one
        may still land), keep the earliest, cancel the rest (best effort, logged)."""
        label = f"{REQUEST_ID_LABEL}={keyed.key}"
        made = self.id_of(keyed, job)
        expected, pause = creates.made + creates.pending, 0.2
        while True:
            try:
                jobs = self.call(lambda: self._found(keyed))
            except BackendError as exc:
                self.log.warning("%s: could not check for a duplicate of %s after a timed-out create (%s); "
                                 "look for jobs labelled %s", self.name, made, exc, label)
                return job
            left = creates.settle_until - self.injected.clock()
            if len(jobs) >= expected or left <= 0:
                break
            self.injected.wait(min(pause, left))  # the timed-out create may still be running on the server
            pause = min(pause * 2, 5.0)
        if not jobs:
            return job
        kept, extras = jobs[0], [self.id_of(keyed, extra) for extra in jobs[1:]]
        for extra in extras:
            try:
                self.call(lambda: self.cancel_job(extra))  # noqa: B023 - called at once
            except BackendError as exc:
                self.log.warning("%s: could not cancel the duplicate job %s (%s); cancel it yourself",
                                 self.name, extra, exc)
        kept_id = self.id_of(keyed, kept)
        if extras:
            self.log.warning("%s: a timed-out create made a second job after all; kept %s (created first), "
                             "cancelled %s", self.name, kept_id, ", ".join(extras))
        elif len(jobs) < expected:
            self.log.warning("%s: a timed-out create had not made its job %.0f s later; if it still does, "
                             "cancel the job labelled %s that is not %s", self.name, self.settle_s, label,
                             kept_id)
        return kept


# --- capability classes: the optional hook groups a client opts into (the template finds them
# with isinstance; a client without one behaves as the group's defaults say) -----------------------

class StagesCode(Client[N]):
    """Capability (staging): work before the create, such as uploading the job's code to the cloud's
    storage (:meth:`prepare`). Without it the compiled job is created as it is."""

    def prepare(self, compiled: CompiledJob) -> CompiledJob:
        """Work that must happen before the create (uploading the job's code); returns the job to
        create. Runs once per submit, before :meth:`keyed`; the default has nothing to do."""
        return compiled


class ReadsLogs(Client[N]):
    """Capability (logs): the job's log lines from the cloud. Without it ``omnidist logs`` shows the
    console URL, then the job's state changes."""

    def open_logs(self, job_id: str) -> LogStart:
        """Start reading the job's logs. Default: the console URL, then states only."""
        return _console_start(self, job_id)

    def read_logs(self, job_id: str, cursor: Any, *, follow: bool) -> LogPage:
        """Read the next page of the job's logs from ``cursor``; requests go through :meth:`call`.
        Default: no lines, the job's state only."""
        return _states_only(self, job_id)

    def state_line(self, job_id: str, status: JobStatus) -> str:
        """The line that tells a state change in the logs (``""``: none)."""
        return _state_line(status)


class ReadsTrials(Client[N]):
    """Capability (tuning): a tuning job's trials, where reading them takes calls of their own
    (a cloud whose job carries its trials fills them in :meth:`Client.status_of` instead)."""

    def with_trials(self, job_id: str, job: N, status: JobStatus) -> JobStatus:
        """A tuning job's status with its trials and best trial, when reading them takes calls of
        their own (through :meth:`call`); a cloud whose job carries its trials fills them in
        :meth:`status_of` instead. The default adds nothing."""
        return status


class ReportsShortage(Client[N]):
    """Capability (placement): tells the cloud's lack of quota or capacity from other refusals, on a
    create (:meth:`shortage`) and on a queued job (:meth:`queued_shortage`), so a placement moves on
    to its next profile. Without it every refusal is an error and a queued job only times out."""

    def shortage(self, exc: BaseException, error: BackendError) -> Optional[Shortage]:
        """Whether a refused create is the cloud's lack of quota or capacity (a placement then moves
        on to its next profile), given the SDK's exception and its translation.

        A plugin refines this with its cloud's own codes. The default reads the message
        (:func:`shortage_in`) of an error that is not retried in place: a 5xx or a dropped
        connection is transient, and a 429 that carries ``Retry-After`` or speaks of a request
        rate is a rate limit (retried as any other); a 429 that names a resource quota is not."""
        if error.retry_after is not None or (isinstance(error, TransientBackendError) and error.status != 429):
            return None
        return shortage_in(error.detail)

    def queued_shortage(self, job_id: str, status: JobStatus) -> Optional[ShortageError]:
        """Whether a created job that has not started says the cloud lacks quota or capacity for it
        (a placement watching it with ``--max-queue`` moves on): the shortage, as the error the
        placement reports, or ``None``. Requests go through :meth:`call`. The default reads a failed
        job's message (:func:`shortage_in`)."""
        found = shortage_in(status.message) if status.state is JobState.FAILED else None
        return self.shortage_error(found, status.message) if found else None

    def shortage_error(self, shortage: Shortage | str, message: str) -> ShortageError:
        """The error a placement reports for a shortage this cloud met."""
        return ShortageError(message, shortage=Shortage(shortage).value, backend=self.name)


def _console_start(client: Client[Any], job_id: str) -> LogStart:
    url = client.backend.console_url(job_id, client.settings)
    return LogStart(header=(f"console: {url}",) if url else ())


def _states_only(client: Client[Any], job_id: str) -> LogPage:
    job = client.call(lambda: client.get_job(job_id))
    return LogPage(status=client._status(job_id, job), secrets=client.secrets_of(job))


def _state_line(status: JobStatus) -> str:
    return f"state: {status.state.value}" + (f" — {status.message}" if status.message else "")


REQUIRED: tuple[str, ...] = ("idempotency", "translate", "keyed", "create_job", "find_jobs", "get_job", "cancel_job",
                             "status_of", "id_of")
"""The names every client defines (:class:`Client`'s required protocol, one SDK call each); the rest
is the template, refinements with defaults, and the capability classes above."""
