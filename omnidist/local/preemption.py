"""``omnidist run --preempt REPLICA@DURATION``: preempt one replica the way its platform would (SPEC §15).

After DURATION the replica's process group gets what the emulated platform sends a preempted
machine (SIGTERM; :func:`omnidist.runtime.platforms.preemption`), then SIGKILL once that
platform's grace period is over, and the whole run ends as a preemption: the machine is gone,
so the other replicas are stopped too, whatever the preempted one's exit code. With a
``recovery`` policy listing ``preemption`` the run then restarts in the same run folder (its
``outputs/checkpoints`` kept), and the program resumes from ``latest_checkpoint()``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Optional

import attrs

from omnidist.errors import ValidationError
from omnidist.local.plan import ReplicaSpec
from omnidist.model.recovery import Recovery

OPTION = "--preempt"
_SPELLING = re.compile(r"^(?P<replica>[a-z_]+-\d+)@(?P<after>.+)$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smh]?)$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


@attrs.frozen(kw_only=True)
class Preemption:
    """When and whom to preempt, and what the platform sends.

    Attributes:
        replica: the replica as ``run`` names it (``primary-0``, ``worker-1``).
        after: seconds after the replicas start.
        signum: the signal the platform sends (SIGTERM everywhere).
        grace: seconds between the signal and SIGKILL.
        platform: the emulated platform it follows.
    """

    replica: str
    after: float
    signum: int = signal.SIGTERM
    grace: float = 30.0
    platform: str = ""


def parse(value: str) -> tuple[str, float]:
    """``REPLICA@DURATION`` (``worker-0@30s``, ``primary-0@2m``, ``primary-0@45``) -> (replica, seconds).

    Raises:
        ValidationError: exit 2, naming ``--preempt`` and the spelling.
    """
    match = _SPELLING.match(value.strip())
    if not match:
        raise ValidationError(f"{value!r} is not REPLICA@DURATION, e.g. primary-0@30s or worker-1@2m", path=OPTION)
    after = _DURATION.match(match["after"])
    if not after:
        raise ValidationError(f"{match['after']!r} is no duration; write 30s, 1.5s, 2m or seconds", path=OPTION)
    return match["replica"], float(after[1]) * _UNITS[after[2] or "s"]


def check(preemption: Preemption, specs: Sequence[ReplicaSpec]) -> None:
    """The replica must be one of the run's (exit 2 naming the ones it has)."""
    labels = [spec.label for spec in specs]
    if preemption.replica not in labels:
        raise ValidationError(f"no replica {preemption.replica!r} in this run; it has {', '.join(labels)}",
                              path=OPTION)


class Preempter:
    """A timer thread that preempts one replica of a started run, then ends the others."""

    def __init__(self, preemption: Preemption, procs: Sequence[subprocess.Popen], specs: Sequence[ReplicaSpec]):
        self.preemption = preemption
        self.procs = list(procs)
        index = [spec.label for spec in specs].index(preemption.replica)
        self.target = self.procs[index]
        self.fired = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Preempter:
        self._thread.start()
        return self

    def cancel(self) -> None:
        """The run ended first: preempt nothing (or stop waiting out the grace)."""
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        if self._stop.wait(self.preemption.after) or self.target.poll() is not None:
            return
        self.fired.set()
        _kill(self.target.pid, self.preemption.signum)
        deadline = time.monotonic() + self.preemption.grace
        while time.monotonic() < deadline and self.target.poll() is None and not self._stop.is_set():
            time.sleep(0.05)
        _kill(self.target.pid, signal.SIGKILL)
        for proc in self.procs:  # the machine is gone: the run ends, whatever the others do
            if proc is not self.target:
                _kill(proc.pid, signal.SIGTERM)

    def describe(self) -> str:
        name = signal.Signals(self.preemption.signum).name
        return (f"{self.preemption.replica} was preempted ({name}, then SIGKILL after "
                f"{self.preemption.grace:g} s, as {self.preemption.platform or 'the platform'} does)")


def _kill(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def restarts(ended: Optional[str], recovery: Optional[Recovery], done: int) -> bool:
    """Whether a run that ended so restarts, ``done`` restarts in (``recovery``: the job's policy)."""
    if ended is None or recovery is None:
        return False
    return recovery.restarts(ended) and done < recovery.max_restarts
