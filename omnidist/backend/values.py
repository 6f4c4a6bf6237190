"""The values that cross the backend contract: a compiled request with its notes, and a
submitted job's state (with a tuning job's trials)."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional

import attrs

from omnidist.model import serde
from omnidist.model.features import NoteCode
from omnidist.model.fields import as_dict, as_tuple
from omnidist.model.job import DistributedJob
from omnidist.model.recovery import Ending

REQUEST_ID_LABEL = "omnidist-request-id"
"""The label (tag) a create carries its idempotency key under, on clouds that name jobs themselves:
clients write it, importers leave it out of the job they read."""


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
    data: Mapping[str, Any] = attrs.field(factory=dict, converter=as_dict, eq=False)

    def __str__(self) -> str:
        return f"[{self.kind.value}] {self.field}: {self.message}"


@attrs.frozen(kw_only=True)
class CompiledJob:
    """A native request built from a job: plain JSON-ready data plus diagnostics.

    ``str(compiled)`` is exactly what ``omnidist compile`` prints.
    """

    backend: str
    request: dict[str, Any]
    diagnostics: tuple[Note, ...] = attrs.field(default=(), converter=as_tuple)
    format: str = "json"
    job: Optional[DistributedJob] = attrs.field(default=None, eq=False, repr=False)

    def render(self, fmt: Optional[str] = None, *, request: Optional[Mapping[str, Any]] = None) -> str:
        """The request as ``json`` or ``yaml`` (default: the backend's own format).

        Args:
            fmt: ``json`` or ``yaml``.
            request: what to render in the request's place (a display's masked copy of it).
        """
        fmt = fmt or self.format
        shown = self.request if request is None else request
        return serde.dump_yaml(shown) if fmt == "yaml" else serde.dump_json(shown)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"CompiledJob(backend={self.backend!r}, {len(self.diagnostics)} notes)"

    def _repr_html_(self) -> str:
        from omnidist import notebook  # a notebook's rendering: no compile or CLI run pays for it

        return notebook.compiled_html(self)

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
        id: the trial's id on the cloud (some clouds number trials from 1; others
            name each trial's child run).
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
        ended: how an ended job ended, as its backend classifies the native status (docs/recovery.md):
            preemption, capacity, node_failure, failure, succeeded or cancelled; ``None`` while
            it runs (or when nothing classified it).
    """

    state: JobState = attrs.field(converter=JobState)
    native_state: str = ""
    message: str = ""
    metric: str = ""
    trials: tuple[Trial, ...] = attrs.field(default=(), converter=as_tuple)
    best: Optional[Trial] = None
    ended: Optional[Ending] = attrs.field(default=None, converter=attrs.converters.optional(Ending))

    def _repr_html_(self) -> str:
        from omnidist import notebook

        return notebook.status_html(self)


@attrs.frozen(kw_only=True)
class Pool:
    """Machines of one kind that a compiled job runs at once (one role's replicas).

    Attributes:
        role: the role (``primary``, ``workers``, ``parameter_servers``, ``evaluators``,
            ``reduction_servers``), or ``tpu`` for the TPU Node beside a legacy TPU job's master.
        replicas: how many machines.
        machine: the cloud's machine type (``a2-highgpu-8g``, ``Standard_ND96asr_v4``).
        accelerator: the portable accelerator each machine carries (built in or attached), or
            ``None``.
        count: how many of ``accelerator`` each machine carries.
        assumed: why the machine is an assumption rather than what the request names (a compute
            cluster whose VM size the request does not carry, a Kubernetes node), else ``""``.
    """

    role: str
    replicas: int
    machine: str
    accelerator: Optional[str] = None
    count: int = 0
    assumed: str = ""


@attrs.frozen(kw_only=True)
class Credentials:
    """What a backend finds of its credentials (``omnidist check``, ``plan``'s ``credentials`` column).

    Attributes:
        found: credentials are where the cloud's client looks (``False``: none are).
        where: where they are (an environment variable, a file), or why none are needed.
        fix: how to provide them (shown when they are missing or refused).
        valid: the cloud accepted them (``None``: not asked, e.g. offline).
        detail: what the cloud said when it refused them.
    """

    found: bool
    where: str = ""
    fix: str = ""
    valid: Optional[bool] = None
    detail: str = ""

    @property
    def status(self) -> str:
        """``ok``, ``missing``, ``refused`` or ``unchecked`` (found, not asked)."""
        if not self.found:
            return "missing"
        return "unchecked" if self.valid is None else "ok" if self.valid else "refused"

    def checked(self, probe: Callable[[], object],
                errors: tuple[type[BaseException], ...] = (Exception,)) -> Credentials:
        """These credentials shown to the cloud: ``probe()`` is a call that creates nothing (a token
        asked for, an identity or a version read). Valid when it returns, refused with the first line
        of what it raised when that is one of ``errors``; as they are when none were found or the
        answer is already known (a local endpoint that needs none)."""
        if not self.found or self.valid is not None:
            return self
        try:
            probe()
        except errors as exc:
            return attrs.evolve(self, valid=False, detail=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return attrs.evolve(self, valid=True)


@attrs.frozen(kw_only=True)
class Footprint:
    """What a compiled job runs on, for pricing it (``omnidist plan``) and for the job ledger.

    A backend says it from its own compiled request (:meth:`omnidist.backend.contract.Backend.footprint`);
    the placement floor prices it from its price catalog.

    Attributes:
        service: the priced service, as the price catalog names it (a vendor kit's
            service name, or ``local``).
        region: where the machines run (``None``: the settings do not say).
        pools: the machines, one pool per role that has replicas.
        spot: spot / preemptible / low-priority capacity.
        parallel: how many copies of :attr:`pools` run at once (a tuning job's parallel trials).
        offered: whether the machines are there, when the backend knows it itself (this machine's
            GPUs); ``None``: the price catalog says.
    """

    service: str
    region: Optional[str]
    pools: tuple[Pool, ...] = attrs.field(default=(), converter=as_tuple)
    spot: bool = False
    parallel: int = 1
    offered: Optional[bool] = None

    @property
    def machines(self) -> dict[str, str]:
        """Role -> machine type."""
        return {pool.role: pool.machine for pool in self.pools}

    @property
    def accelerators(self) -> Optional[str]:
        """Every accelerator the job holds at once, ``"A100:16"`` (``+``-joined when several
        kinds), or ``None`` without any."""
        totals: dict[str, int] = {}
        for pool in self.pools:
            if pool.accelerator and pool.count:
                totals[pool.accelerator] = totals.get(pool.accelerator, 0) + pool.count * pool.replicas * self.parallel
        return "+".join(f"{name}:{count}" for name, count in totals.items()) or None
