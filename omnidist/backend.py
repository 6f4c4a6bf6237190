"""The backend contract, and the values that cross it.

A backend is one class: tables of differences plus small functions. ``compile`` and
``import_native`` are pure (no network, no SDK import); ``submit``/``status``/``logs``/
``cancel`` are the only methods that touch a cloud SDK, and they import it lazily.
"""

from __future__ import annotations

import enum
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Optional

import attrs

from omnidist.job import DistributedJob, Framework, RoleName


class NoteKind(str, enum.Enum):
    """How a compiled request differs from what the job literally says."""

    DEFAULTED = "defaulted"        # the job left it open; the backend picked a value
    APPROXIMATED = "approximated"  # same meaning, different means (machine by equivalence, env via command)
    CHANGED = "changed"            # the meaning changed (another GPU model or count)
    DROPPED = "dropped"            # the target cannot carry it; it is gone
    HINT = "hint"                  # advice for the user; nothing changed


@attrs.frozen(kw_only=True)
class Note:
    """One diagnostic: what kind, which field of the job, and a sentence for the user."""

    kind: NoteKind = attrs.field(converter=NoteKind)
    field: str
    message: str

    def __str__(self) -> str:
        return f"[{self.kind.value}] {self.field}: {self.message}"


@attrs.frozen(kw_only=True)
class Capabilities:
    """What a backend can express; shown by ``omnidist backends`` and the docs tables."""

    roles: frozenset[RoleName]
    frameworks: frozenset[Framework] = frozenset(Framework)
    accelerators: frozenset[str] = frozenset()
    spot: bool = False
    infiniband: bool = False
    per_role_machines: bool = True
    env: bool = True
    reduction_server: bool = False
    submit: bool = True

    def summary(self) -> str:
        """A one-line description for tables."""
        roles = ", ".join(r.value for r in RoleName if r in self.roles)
        flags = [name for name in ("spot", "infiniband", "per_role_machines", "env", "reduction_server")
                 if getattr(self, name)]
        return f"roles: {roles}; " + ", ".join(flags)


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


@attrs.frozen(kw_only=True)
class JobStatus:
    """A job's state as the backend reported it."""

    state: JobState = attrs.field(converter=JobState)
    native_state: str = ""
    message: str = ""


class Backend(ABC):
    """What every backend implements. Subclasses are registered under the entry-point
    group ``omnidist.backends`` with the same name as :attr:`name`."""

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    settings_type: ClassVar[type]
    """An attrs class holding the backend's settings (profile keys and ``backends.<name>``)."""
    output_format: ClassVar[str] = "json"

    @abstractmethod
    def compile(self, job: DistributedJob, settings: Any) -> CompiledJob:
        """Build the native request. Pure: no network, no SDK import."""

    @abstractmethod
    def import_native(self, request: Mapping[str, Any]) -> DistributedJob:
        """Turn a native request into a portable job. Pure."""

    @abstractmethod
    def submit(self, compiled: CompiledJob, settings: Any) -> JobHandle:
        """Create the job on the cloud."""

    @abstractmethod
    def status(self, job_id: str, settings: Any) -> JobStatus:
        """The job's current state."""

    @abstractmethod
    def logs(self, job_id: str, settings: Any, follow: bool = False) -> Iterator[str]:
        """The job's log lines (following until it ends when ``follow``)."""

    @abstractmethod
    def cancel(self, job_id: str, settings: Any) -> None:
        """Ask the cloud to cancel the job; a no-op on a finished job."""

    def console_url(self, job_id: str, settings: Any) -> str:
        """Where a person can look at the job; empty when there is no console."""
        return ""


@attrs.frozen(kw_only=True)
class JobHandle:
    """A submitted job: its id and console URL, and the calls to follow it."""

    backend: str
    id: str
    url: str = ""
    settings: Any = attrs.field(default=None, eq=False, repr=False)
    driver: Optional[Backend] = attrs.field(default=None, eq=False, repr=False)

    def _backend(self) -> Backend:
        if self.driver is not None:
            return self.driver
        from omnidist import registry

        return registry.get(self.backend)

    def status(self) -> JobStatus:
        """The job's current state."""
        return self._backend().status(self.id, self.settings)

    def logs(self, follow: bool = False) -> Iterator[str]:
        """The job's log lines."""
        return self._backend().logs(self.id, self.settings, follow=follow)

    def cancel(self) -> None:
        """Cancel the job (no-op once it has ended)."""
        self._backend().cancel(self.id, self.settings)

    def wait(
        self,
        poll_interval: float = 15.0,
        timeout: Optional[float] = None,
        on_change: Optional[Callable[[JobStatus], None]] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> JobStatus:
        """Poll until the job ends and return its final status.

        Args:
            poll_interval: seconds between polls.
            timeout: give up waiting (the job keeps running) after this many seconds.
            on_change: called with each new status as the state changes.
            sleep: injectable for tests.

        Raises:
            TimeoutError: when ``timeout`` passes first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        last: Optional[JobState] = None
        while True:
            status = self.status()
            if status.state != last:
                last = status.state
                if on_change:
                    on_change(status)
            if status.state.terminal:
                return status
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {self.id} still {status.state.value} after {timeout}s")
            sleep(poll_interval)
