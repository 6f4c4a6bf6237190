"""The backend contract, and the values that cross it.

A backend is one class: tables of differences plus small functions. ``compile`` and
``import_native`` are pure (no network, no SDK import); ``submit``/``status``/``logs``/
``cancel`` are the only methods that touch a cloud, through the backend's declared
:attr:`Backend.client` (:mod:`omnidist.clients`: the SDK is imported inside its methods).
"""

from __future__ import annotations

import enum
import importlib
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Optional

import attrs

from omnidist.features import ROLE_FEATURES, Feature, NoteCode, Refusal
from omnidist.job import DistributedJob, Framework, RoleName

if TYPE_CHECKING:
    from omnidist.clients import Client


class NoteKind(str, enum.Enum):
    """How a compiled request differs from what the job literally says."""

    DEFAULTED = "defaulted"        # the job left it open; the backend picked a value
    APPROXIMATED = "approximated"  # same meaning, different means (machine by equivalence, env via command)
    CHANGED = "changed"            # the meaning changed (another GPU model or count)
    DROPPED = "dropped"            # the target cannot carry it; it is gone
    HINT = "hint"                  # advice for the user; nothing changed


@attrs.frozen(kw_only=True)
class Note:
    """One diagnostic: what kind, which field of the job, and a sentence for the user.

    ``code`` and ``data`` say the same for code that reads notes (``omnidist migrate`` finds the
    machine a compiler picked in them); they never change how a note prints.
    """

    kind: NoteKind = attrs.field(converter=NoteKind)
    field: str
    message: str
    code: Optional[NoteCode] = attrs.field(default=None, converter=attrs.converters.optional(NoteCode))
    data: Mapping[str, Any] = attrs.field(factory=dict, converter=dict, eq=False)

    def __str__(self) -> str:
        return f"[{self.kind.value}] {self.field}: {self.message}"


@attrs.frozen(kw_only=True)
class Capabilities:
    """What a backend can express; shown by ``omnidist backends`` and the docs tables, and read
    by ``omnidist migrate`` to plan what a job gives up on the way (:attr:`features`).

    Attributes:
        roles: the roles it has (every backend has the primary and workers).
        frameworks: the frameworks it runs.
        accelerators: the portable accelerators it offers.
        spot: spot / preemptible capacity.
        infiniband: ``interconnect: infiniband`` (on some machines at least).
        per_role_machines: a role on other hardware than the primary's.
        env: environment variables.
        reduction_server: the Reduction Server role.
        submit: it can create jobs (not only compile them).
        role_frameworks: roles it has with some frameworks only (role -> those frameworks).
        refusals: the words of its refusals, for the features it lacks (what migration reports
            when it gives one up); its compiler raises with the same :class:`Refusal`.
    """

    roles: frozenset[RoleName]
    frameworks: frozenset[Framework] = frozenset(Framework)
    accelerators: frozenset[str] = frozenset()
    spot: bool = False
    infiniband: bool = False
    per_role_machines: bool = True
    env: bool = True
    reduction_server: bool = False
    submit: bool = True
    role_frameworks: Mapping[RoleName, frozenset[Framework]] = attrs.field(factory=dict, converter=dict,
                                                                           hash=False)
    refusals: Mapping[Feature, Refusal] = attrs.field(factory=dict, converter=dict, hash=False)

    @property
    def features(self) -> frozenset[Feature]:
        """The portable features it declares: its roles and flags as :class:`Feature` members,
        and every other feature it has no :attr:`refusals` entry for."""
        flags = {Feature.SPOT: self.spot, Feature.INFINIBAND: self.infiniband, Feature.ENV: self.env,
                 Feature.PER_ROLE_MACHINES: self.per_role_machines,
                 Feature.REDUCTION_SERVERS: self.reduction_server and RoleName.REDUCTION_SERVERS in self.roles,
                 **{feature: RoleName(role) in self.roles for role, feature in ROLE_FEATURES.items()
                    if feature is not Feature.REDUCTION_SERVERS}}
        rest = {f for f in Feature if f not in flags and f is not Feature.NATIVE and f not in self.refusals}
        return frozenset(rest | {f for f, on in flags.items() if on})

    def has_role(self, role: RoleName, framework: Framework) -> bool:
        """True when a job of ``framework`` can have ``role`` here."""
        return role in self.roles and framework in self.role_frameworks.get(role, self.frameworks)

    def summary(self) -> str:
        """A one-line description for tables."""
        roles = ", ".join(r.value for r in RoleName if r in self.roles)
        flags = [name for name in ("spot", "infiniband", "per_role_machines", "env", "reduction_server")
                 if getattr(self, name)]
        return f"roles: {roles}; " + ", ".join(flags)


@attrs.frozen(kw_only=True)
class MigrationPolicy:
    """How jobs move between a backend and the others (:mod:`omnidist.migration` reads it).

    Attributes:
        vocabulary: backends of the same vocabulary (``compute_engine``: the Google backends)
            share :attr:`shared_settings`, which carry over between them as they are.
        shared_settings: settings keys that mean the same on every backend of the vocabulary.
        left_behind: settings key -> why a job imported from this backend loses meaning when
            that setting stays behind (other settings that stay are reported as hints).
        machine_setting: the settings key naming machines: role -> machine type with per-role
            machines, else the one machine of every training node.
        label_rules: its compiler holds labels to :mod:`omnidist.labels`'s rules (Google
            Cloud's), so migration rewrites tags other clouds allow and it refuses.
        inputs_setting: the settings key of the inputs its commands reference as
            ``${{inputs.NAME}}``: literal ones are written into the command when a job leaves.
        module_setting: the settings key naming a Python module its jobs run without an image
            (given an image elsewhere, the job runs ``python -m MODULE``).
        runs_instead: settings key -> what a job with that setting runs instead of a container
            image (``{value}`` is the setting's value), for the error asking for ``--image``.
    """

    vocabulary: str = ""
    shared_settings: frozenset[str] = frozenset()
    left_behind: Mapping[str, str] = attrs.field(factory=dict, converter=dict, hash=False)
    machine_setting: str = ""
    label_rules: bool = False
    inputs_setting: str = ""
    module_setting: str = ""
    runs_instead: Mapping[str, str] = attrs.field(factory=dict, converter=dict, hash=False)

    def shares_with(self, other: MigrationPolicy) -> bool:
        """True when both backends speak the same vocabulary."""
        return bool(self.vocabulary) and self.vocabulary == other.vocabulary


@attrs.frozen(kw_only=True)
class CompiledJob:
    """A native request built from a job: plain JSON-ready data plus diagnostics.

    ``str(compiled)`` is exactly what ``omnidist compile`` prints.
    """

    backend: str
    request: dict[str, Any]
    diagnostics: tuple[Note, ...] = attrs.field(default=(), converter=tuple)
    format: str = "json"
    job: Optional[DistributedJob] = attrs.field(default=None, eq=False, repr=False)

    def render(self, fmt: Optional[str] = None) -> str:
        """The request as ``json`` or ``yaml`` (default: the backend's own format)."""
        from omnidist import serde

        fmt = fmt or self.format
        return serde.dump_yaml(self.request) if fmt == "yaml" else serde.dump_json(self.request)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"CompiledJob(backend={self.backend!r}, {len(self.diagnostics)} notes)"

    def _repr_html_(self) -> str:
        from omnidist import display

        return display.compiled_html(self)

    def notes(self, *kinds: NoteKind | str) -> tuple[Note, ...]:
        """The diagnostics of the given kinds (all when none is given)."""
        wanted = {NoteKind(k) for k in kinds}
        return tuple(n for n in self.diagnostics if not wanted or n.kind in wanted)


class JobState(str, enum.Enum):
    """The portable job states every backend maps its own onto."""

    QUEUED = "queued"
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    PAUSED = "paused"
    UNKNOWN = "unknown"

    @property
    def terminal(self) -> bool:
        """True for states a job never leaves."""
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


def _pairs(parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
    items = parameters.items() if isinstance(parameters, Mapping) else parameters
    return tuple((str(name), value) for name, value in items)


@attrs.frozen(kw_only=True)
class Trial:
    """One trial of a tuning job, as the cloud reported it.

    Attributes:
        id: the trial's id on the cloud (Vertex and AI Platform number trials from 1; Azure ML
            names each trial's child run).
        state: the trial's state, through the backend's table.
        parameters: ``(name, value)`` pairs in the tuning block's order, named as the portable job
            names them (the values the program got as ``--NAME=VALUE``).
        value: the final value of the tuning metric (``None``: none reported yet).
        step: the step that value was reported at, when the cloud says.
        message: why the trial failed or stopped, when the cloud says.
    """

    id: str
    state: JobState = attrs.field(converter=JobState)
    parameters: tuple[tuple[str, Any], ...] = attrs.field(default=(), converter=_pairs)
    value: Optional[float] = None
    step: Optional[int] = None
    message: str = ""

    @property
    def flags(self) -> str:
        """The trial's values as the program got them: ``--lr=0.01 --layers=4``."""
        return " ".join(f"--{name}={value}" for name, value in self.parameters)


def best_trial(trials: Iterable[Trial], maximize: bool) -> Optional[Trial]:
    """The trial with the best final value so far (the first of equals), among those that did not
    fail; ``None`` when none has a value."""
    scored = [t for t in trials if t.value is not None and not math.isnan(t.value) and t.state is not JobState.FAILED]
    if not scored:
        return None
    return (max if maximize else min)(scored, key=lambda t: t.value)  # max/min keep the first of equals


@attrs.frozen(kw_only=True)
class JobStatus:
    """A job's state as the backend reported it; a tuning job's also carries its trials.

    Attributes:
        state: the portable state.
        native_state: the cloud's own name for it.
        message: what the cloud says about it (a failed job's error), secrets masked.
        metric: a tuning job's metric (``""`` for a plain job).
        trials: a tuning job's trials so far, in the cloud's order (empty for a plain job).
        best: the trial with the best final value so far (:func:`best_trial`).
    """

    state: JobState = attrs.field(converter=JobState)
    native_state: str = ""
    message: str = ""
    metric: str = ""
    trials: tuple[Trial, ...] = attrs.field(default=(), converter=tuple)
    best: Optional[Trial] = None

    def _repr_html_(self) -> str:
        from omnidist import display

        return display.status_html(self)


class LazyClient:
    """Declares :attr:`Backend.client` by its import path, ``"package.module:Class"``: the class
    is imported when first used, so loading a backend to compile loads no client code."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __get__(self, instance: object, owner: type) -> type[Client]:
        module, _, name = self.path.partition(":")
        return getattr(importlib.import_module(module), name)


class Backend(ABC):
    """What every backend implements. Subclasses are registered under the entry-point
    group ``omnidist.backends`` with the same name as :attr:`name`.

    A cloud backend declares its :attr:`client`; ``submit``/``status``/``logs``/``cancel``
    then go through it (retries, exactly-once creates, masking: :mod:`omnidist.clients`).
    A backend without one (``local``) overrides those four methods instead.

    Args:
        request_id: makes the idempotency key each submit marks its create with (injectable for
            tests; ``compile`` never calls it, so compiling stays deterministic).
        suffix: makes the suffix that gives each submitted job a name of its own (injectable for
            tests; default: the client's own).
        sleep: how retries and log polls wait (injectable for tests; default: real time).
    """

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    settings_type: ClassVar[type]
    """An attrs class holding the backend's settings (profile keys and ``backends.<name>``)."""
    output_format: ClassVar[str] = "json"
    client: ClassVar[Optional[type[Client]]] = None
    """The cloud's client (a :class:`omnidist.clients.Client` subclass, or a :class:`LazyClient`
    naming one); ``None`` for a backend that talks to no cloud."""
    migration: ClassVar[MigrationPolicy] = MigrationPolicy()
    """How its jobs move to and from other backends."""
    native_formats: ClassVar[tuple[str, ...]] = ()
    """The native forms its importer reads, in words (listed when a file's format cannot be told)."""
    testing: ClassVar[str] = ""
    """``"package.module:NAME"`` of its :class:`omnidist.testing.Harness` (its fake service and the
    settings that point its client there), for the suites and benchmarks that run every cloud
    backend; empty when it has none. Imported only by those."""

    def __init__(self, *, request_id: Optional[Callable[[], str]] = None,
                 suffix: Optional[Callable[[], str]] = None,
                 sleep: Optional[Callable[[float], None]] = None) -> None:
        self.request_id, self.suffix, self.sleep = request_id, suffix, sleep

    @abstractmethod
    def compile(self, job: DistributedJob, settings: Any) -> CompiledJob:
        """Build the native request. Pure: no network, no SDK import."""

    def import_native(self, request: Mapping[str, Any]) -> DistributedJob:
        """Turn a native request into a portable job. Pure. (The job of :meth:`import_with_notes`.)"""
        return self.import_with_notes(request)[0]

    def import_with_notes(self, request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
        """Like :meth:`import_native`, plus notes on what was inferred, approximated or
        dropped while importing (migration reports them).

        A backend implements one of the two: this one when its importer has something to say
        (the default has nothing to add to :meth:`import_native`)."""
        if type(self).import_native is Backend.import_native:
            raise NotImplementedError(f"backend {self.name!r} implements neither import_native nor import_with_notes")
        return self.import_native(request), ()

    def recognizes(self, native: Any) -> bool:
        """True when ``native`` (a mapping or list as read from a file) is one of this backend's
        own native formats: how ``omnidist import`` and ``migrate`` tell the source without
        ``--from``. Pure and cheap; the default recognises nothing."""
        return False

    def submit(self, compiled: CompiledJob, settings: Any) -> JobHandle:
        """Create the job on the cloud: retried on transient errors, never twice."""
        job_id, url = self.connect(settings).submit(compiled)
        return JobHandle(backend=self.name, id=job_id, url=url or self.console_url(job_id, settings),
                         settings=settings, driver=self)

    def status(self, job_id: str, settings: Any) -> JobStatus:
        """The job's current state."""
        return self.connect(settings).status(job_id)

    def logs(self, job_id: str, settings: Any, follow: bool = False) -> Iterator[str]:
        """The job's log lines (following until it ends when ``follow``)."""
        return self.connect(settings).logs(job_id, follow=follow)

    def cancel(self, job_id: str, settings: Any) -> None:
        """Ask the cloud to cancel the job; a no-op on a finished job."""
        self.connect(settings).cancel(job_id)

    def console_url(self, job_id: str, settings: Any) -> str:
        """Where a person can look at the job; empty when there is no console."""
        return ""

    def connect(self, settings: Any) -> Client:
        """A :attr:`client` for ``settings``, with this backend's injected ids and waits.

        Raises:
            BackendError: the backend declares no client.
        """
        from omnidist.clients import Injected
        from omnidist.errors import BackendError

        if self.client is None:
            raise BackendError("this backend talks to no cloud: it cannot submit or follow jobs",
                               backend=self.name)
        # getattr: a subclass with an __init__ of its own may not have called this one.
        given = {key: getattr(self, key, None) for key in ("request_id", "suffix", "sleep")}
        injected = Injected(**{key: value for key, value in given.items() if value is not None})
        return self.client(settings, backend=self, injected=injected)

    def machine_alias(self, name: str) -> Optional[str]:
        """The name the cloud's shared machine vocabulary (Compute Engine's, for the Google
        backends) has for a machine only this backend calls ``name`` (a deprecated alias);
        ``None`` when ``name`` is that vocabulary's own. ``migrate`` carries machines with it."""
        return None


@attrs.frozen(kw_only=True)
class JobHandle:
    """A submitted job: its id and console URL, and the calls to follow it."""

    backend: str
    id: str
    url: str = ""
    settings: Any = attrs.field(default=None, eq=False, repr=False)
    driver: Optional[Backend] = attrs.field(default=None, eq=False, repr=False)
    job: Optional[DistributedJob] = attrs.field(default=None, eq=False, repr=False)
    """The submitted job, when known: its secret-looking env values are masked in streamed logs."""
    _seen: dict = attrs.field(factory=dict, eq=False, repr=False, alias="_seen")

    def _backend(self) -> Backend:
        if self.driver is not None:
            return self.driver
        from omnidist import registry

        return registry.get(self.backend)

    @property
    def last_status(self) -> Optional[JobStatus]:
        """The status seen by the latest :meth:`status` or :meth:`wait` call (no network)."""
        return self._seen.get("status")

    def status(self) -> JobStatus:
        """The job's current state (asks the backend)."""
        status = self._backend().status(self.id, self.settings)
        self._seen["status"] = status
        return status

    def logs(self, follow: bool = False) -> Iterator[str]:
        """The job's log lines."""
        return self._backend().logs(self.id, self.settings, follow=follow)

    def cancel(self) -> None:
        """Cancel the job (no-op once it has ended)."""
        self._backend().cancel(self.id, self.settings)

    def cancel_hint(self) -> str:
        """How to cancel this job from Python and from the shell."""
        return (f"handle.cancel(), or: omnidist cancel {self.id} --backend {self.backend}")

    def wait(
        self,
        poll_interval: Optional[float] = None,
        timeout: Optional[float] = None,
        on_change: Optional[Callable[[JobStatus], None]] = None,
        sleep: Callable[[float], None] = time.sleep,
        progress: bool = False,
        stream_logs: bool = False,
    ) -> JobStatus:
        """Poll until the job ends and return its final status.

        Ctrl-C stops waiting (the job keeps running), prints how to cancel it, and returns
        the last status seen.

        Args:
            poll_interval: seconds between polls (default: the backend setting
                ``poll_interval_s`` when it has one, else 15).
            timeout: give up waiting (the job keeps running) after this many seconds.
            on_change: called with each new status as the state changes.
            sleep: injectable for tests.
            progress: show a tqdm progress line (notebook-aware) with the state and elapsed
                time; where no line can be redrawn (a log file, a pipe), a line per state change.
            stream_logs: print the job's log lines as they arrive (through tqdm, so they do
                not break the progress line), with each state change among them as
                ``state: <state>``, printed once.

        Raises:
            TimeoutError: when ``timeout`` passes first.
        """
        from omnidist import progress as progress_ui

        if poll_interval is None:
            poll_interval = float(getattr(self.settings, "poll_interval_s", None) or 15.0)
        ui = progress_ui.WaitProgress(self, enabled=progress, stream_logs=stream_logs)
        deadline = None if timeout is None else time.monotonic() + timeout
        last: Optional[JobState] = None
        status: Optional[JobStatus] = None
        try:
            with ui:
                while True:
                    status = self.status()
                    ui.update(status)
                    if status.state != last:
                        last = status.state
                        ui.changed(status)
                        if on_change:
                            on_change(status)
                    if status.state.terminal:
                        return status
                    if deadline is not None and time.monotonic() >= deadline:
                        raise TimeoutError(f"job {self.id} still {status.state.value} after {timeout}s; "
                                           "it keeps running")
                    sleep(poll_interval)
        except KeyboardInterrupt:
            progress_ui.say(f"stopped waiting; job {self.id} keeps running. To cancel it: {self.cancel_hint()}")
            return status if status is not None else JobStatus(state=JobState.UNKNOWN)

    def _repr_html_(self) -> str:
        from omnidist import display

        return display.handle_html(self)
