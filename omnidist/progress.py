"""Progress display for :meth:`JobHandle.wait`: a tqdm line (``tqdm.auto`` picks the notebook
widget in Jupyter) with the job's state and elapsed time, and optionally its logs streamed
from a background thread through ``tqdm.write`` so they do not break the line."""

from __future__ import annotations

import sys
import threading
from typing import Any, Optional


def say(message: str) -> None:
    """Print a message to stderr without breaking an active progress line."""
    from tqdm.auto import tqdm

    tqdm.write(message, file=sys.stderr)


DRAIN_SECONDS = 5.0
"""How long a finished wait lets the log thread print the job's last lines."""


class WaitProgress:
    """Context manager that shows a job's progress while :meth:`JobHandle.wait` polls."""

    def __init__(self, handle: Any, enabled: bool, stream_logs: bool):
        self.handle, self.enabled, self.stream_logs = handle, enabled, stream_logs
        self._bar: Optional[Any] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> WaitProgress:
        if self.enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=None, desc=f"{self.handle.backend} {self.handle.id}", unit=" polls",
                             bar_format="{desc}: {postfix} [{elapsed}]", file=sys.stderr, leave=True)
        if self.stream_logs:
            self._thread = threading.Thread(target=self._pump_logs, daemon=True)
            self._thread.start()
        return self

    def update(self, status: Any) -> None:
        """Show the latest status."""
        if self._bar is not None:
            text = status.state.value + (f" ({status.message})" if status.message else "")
            if status.trials:  # a tuning job: how far the search is, and the best so far
                best = status.best
                text += f", {len(status.trials)} trials" + (
                    f", best {status.metric}={best.value:.6g} (trial {best.id})" if best is not None else "")
            self._bar.set_postfix_str(text)
            self._bar.update(1)

    def _pump_logs(self) -> None:
        from omnidist.display import mask_text

        secrets = [v for k, v in _env_of(self.handle).items() if _is_secret(k)]
        try:
            for line in self.handle.logs(follow=True):
                if self._stop.is_set():
                    return
                say(mask_text(line.rstrip("\n"), secrets))
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


def _is_secret(name: str) -> bool:
    from omnidist.display import is_secret

    return is_secret(name)


def _env_of(handle: Any) -> dict:
    """Every environment variable the job's replicas get (job, primary and role env merged)."""
    job = getattr(handle, "job", None)
    if job is None:
        return {}
    from omnidist import lowering

    env = dict(job.env)
    for role in lowering.effective_roles(job):
        env.update(role.env)
    return env
