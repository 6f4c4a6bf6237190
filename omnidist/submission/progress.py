"""Progress display for :meth:`~omnidist.submission.handle.JobHandle.wait`.

On a terminal (or in Jupyter, where ``tqdm.auto`` picks the notebook widget) a tqdm line shows
the job's state and elapsed time. Elsewhere (a log file, a pipe) a redrawn line would leave
carriage returns behind, so each state change is one plain line instead. With ``stream_logs``
the job's log lines come from a background thread through ``tqdm.write`` (so they do not break
the line), and the wait loop prints each state change among them as a ``state: <state>``
line, in the order it saw them. A log line that only reports a state change (a cloud without
its logging service follows the job that way) is left out: the wait loop has printed that change.
"""

from __future__ import annotations

import re
import sys
import threading
from typing import Any, Optional

from omnidist.backend.values import JobState
from omnidist.model.roles import effective_roles
from omnidist.secrets import is_secret, mask_text


def say(message: str) -> None:
    """Print a message to stderr without breaking an active progress line."""
    tqdm_class().write(message, file=sys.stderr)


def tqdm_class() -> Any:
    """``tqdm.auto``'s class, except Jupyter's widget where ipywidgets is not installed (the widget
    cannot be drawn there, and tqdm would raise): plain tqdm, which prints text."""
    from tqdm.auto import tqdm

    if _is_widget(tqdm):
        try:
            import ipywidgets  # noqa: F401 - only whether it imports
        except ImportError:
            from tqdm.std import tqdm
    return tqdm


def _is_widget(cls: type) -> bool:
    return any(c.__module__ == "tqdm.notebook" for c in cls.__mro__)


DRAIN_SECONDS = 5.0
"""How long a finished wait lets the log thread print the job's last lines."""

_STATE_LINE = re.compile(r"state: (?P<state>[a-z]+)")
"""A log line that only reports a state change, as :func:`state_line` writes it."""


def state_line(state: str) -> str:
    """How a state change reads among the log lines: ``state: running``."""
    return f"state: {state}"


def _interactive() -> bool:
    """Whether a redrawn tqdm line can be shown: a terminal, or Jupyter's widget (with ipywidgets;
    without it a notebook gets a line per state change)."""
    return _is_widget(tqdm_class()) or sys.stderr.isatty()


class WaitProgress:
    """Context manager that shows a job's progress while :meth:`JobHandle.wait` polls.

    Args:
        handle: the job being waited on.
        enabled: show progress: a redrawn line where one can be shown, else a line per change.
        stream_logs: print the job's log lines, and its state changes among them.
    """

    def __init__(self, handle: Any, enabled: bool, stream_logs: bool):
        self.handle, self.enabled, self.stream_logs = handle, enabled, stream_logs
        self._bar: Optional[Any] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._lines = stream_logs

    def __enter__(self) -> WaitProgress:
        if self.enabled and _interactive():
            self._bar = tqdm_class()(total=None, desc=self._describe("starting"), unit=" polls",
                             bar_format="{desc} [{elapsed}]", file=sys.stderr, leave=True)
        elif self.enabled:
            self._lines = True
        if self.stream_logs:
            self._thread = threading.Thread(target=self._pump_logs, daemon=True)
            self._thread.start()
        return self

    def _describe(self, text: str) -> str:
        return f"{self.handle.backend} {self.handle.id}: {text}"

    def update(self, status: Any) -> None:
        """Show the latest status (each poll)."""
        if self._bar is not None:
            text = status.state.value + (f" ({status.message})" if status.message else "")
            if status.trials:  # a tuning job: how far the search is, and the best so far
                best = status.best
                text += f", {len(status.trials)} trials" + (
                    f", best {status.metric}={best.value:.6g} (trial {best.id})" if best is not None else "")
            self._bar.set_description_str(self._describe(text), refresh=False)
            self._bar.update(1)

    def changed(self, status: Any) -> None:
        """Print a state change as a line, unless only the progress line is shown."""
        if self._lines:
            say(state_line(status.state.value))

    def _pump_logs(self) -> None:
        states = {s.value for s in JobState}
        secrets = [v for k, v in _env_of(self.handle).items() if is_secret(k)]
        try:
            for line in self.handle.logs(follow=True):
                if self._stop.is_set():
                    return
                line = line.rstrip("\n")
                only_state = _STATE_LINE.fullmatch(line)
                if not (only_state and only_state["state"] in states):  # the wait loop prints those
                    say(mask_text(line, secrets))
        except Exception as exc:  # logs are a convenience: never break waiting on them
            say(f"(log streaming stopped: {exc})")

    def __exit__(self, exc_type: Optional[type], *exc: object) -> None:
        if self._thread is not None and exc_type is None:
            # The job has ended, so its followed logs end too: let the last lines through.
            self._thread.join(timeout=DRAIN_SECONDS)
        self._stop.set()
        if self._bar is not None:
            self._bar.close()
        if self._thread is not None:
            self._thread.join(timeout=0.1)


def _env_of(handle: Any) -> dict:
    """Every environment variable the job's replicas get (job, primary and role env merged)."""
    job = getattr(handle, "job", None)
    if job is None:
        return {}
    env = dict(job.env)
    for role in effective_roles(job):
        env.update(role.env)
    return env
