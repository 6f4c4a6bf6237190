"""A submitted job: its id and console URL, and the calls to follow it (the wait loop)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

import attrs

from omnidist import notebook
from omnidist.backend import registry
from omnidist.backend.contract import Backend
from omnidist.backend.values import JobState, JobStatus
from omnidist.model.job import DistributedJob
from omnidist.submission import ledger
from omnidist.submission import progress as progress_ui


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
                        ledger.record_state(self.backend, self.id, status.state.value, status.message or "")
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
        return notebook.handle_html(self)
