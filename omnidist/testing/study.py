"""The trials of a fake tuning job: what every fake cloud's tuning routes share.

A :class:`FakeStudy` belongs to one job of a :class:`~omnidist.testing.FakeService`; it moves
along with the job's states: each step of the job into its running state ends the trials that
were running (succeeded with a scripted value, or failed) and starts up to ``parallel`` more,
until ``total`` have run; the job's end ends the running ones; a cancel stops them. Each fake
renders the trials in its cloud's own shape (Vertex ``trials[]``, AI Platform
``trainingOutput.trials[]``, Azure ML child runs). Imports no SDK.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import attrs

DEFAULT_VALUES: tuple[Optional[float], ...] = (0.61, 0.84, 0.72, 0.55, 0.78)
"""The final metric values trials report, in trial order (cycled); ``None`` fails a trial."""

QUEUED, RUNNING, SUCCEEDED, FAILED, STOPPED = "queued", "running", "succeeded", "failed", "stopped"
"""A fake trial's states (each fake maps them onto its cloud's); the study itself starts trials
running, a test may hold one back as queued."""


@attrs.define
class FakeTrial:
    """One trial: its number (from 1), values, state and final metric value."""

    number: int
    params: dict[str, Any]
    state: str = RUNNING
    value: Optional[float] = None
    step: int = 0


@attrs.define
class FakeStudy:
    """The trials of one fake tuning job.

    Attributes:
        choices: parameter name -> the values trials draw from (trial ``n`` takes the
            ``(n - 1) % len``-th), in the search space's order.
        total: how many trials the job runs.
        parallel: how many run at a time.
        values: the final metric values, in trial order (cycled; ``None`` fails the trial).
        trials: the trials started so far.
    """

    choices: Mapping[str, Sequence[Any]]
    total: int
    parallel: int
    values: Sequence[Optional[float]] = DEFAULT_VALUES
    trials: list[FakeTrial] = attrs.field(factory=list)

    @property
    def rounds(self) -> int:
        """How many steps of the job into its running state start every trial."""
        return math.ceil(self.total / max(self.parallel, 1))

    def timeline(self, timeline: Sequence[str], running: str) -> list[str]:
        """``timeline`` with its running state repeated once per round, plus one to end the last."""
        out: list[str] = []
        for state in timeline:
            out += [state] * (self.rounds + 1 if state == running else 1)
        return out

    def moved(self, state: str, *, running: str, cancelled: frozenset[str], ended: frozenset[str]) -> None:
        """The job stepped into ``state``: run, stop or end the trials accordingly."""
        if state == running:
            self._end_running()
            self._start()
        elif state in cancelled:
            for trial in self.running():
                trial.state = STOPPED
        elif state in ended:
            self._end_running()

    def running(self) -> list[FakeTrial]:
        """The trials running now."""
        return [t for t in self.trials if t.state == RUNNING]

    def _start(self) -> None:
        for _ in range(min(self.parallel, self.total - len(self.trials))):
            number = len(self.trials) + 1
            params = {name: values[(number - 1) % len(values)] for name, values in self.choices.items()}
            self.trials.append(FakeTrial(number=number, params=params))

    def _end_running(self) -> None:
        for trial in self.running():
            value = self.values[(trial.number - 1) % len(self.values)] if self.values else None
            trial.state, trial.value, trial.step = (FAILED, None, 0) if value is None else (SUCCEEDED, value, 10)
