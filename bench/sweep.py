"""A hyperparameter sweep, and the same requests built two ways: through ``omnidist.compile``
and by hand with each cloud's own SDK objects (what a user without omnidist writes).

The hand-written builders come from the plugins (each backend's
:attr:`omnidist.testing.Harness.native_builder`): they hard-code what omnidist picks (machines,
SKUs, env wrapper), as such a user would, and produce the same request shape, not a simplified one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import attrs

IMAGE = "us-docker.pkg.dev/p/trainers/sweep:1.0"
COMMAND = ("python", "-m", "trainer.task")
ACCELERATORS = ("T4:1", "V100:2", "V100:8")
"""Accelerators the sweep visits (every cloud backend offers them; the harnesses' hand-written
builders name a machine for each)."""


@attrs.frozen
class Trial:
    """One point of the sweep."""

    index: int
    lr: str
    batch: str
    workers: int
    accelerator: str

    @property
    def name(self) -> str:
        """The job's name."""
        return f"sweep-{self.index}"

    @property
    def args(self) -> tuple[str, ...]:
        """The trainer's arguments."""
        return ("--lr", self.lr, "--batch-size", self.batch)


def trials(count: int) -> list[Trial]:
    """``count`` trials over learning rate x batch size x workers x accelerator."""
    grid = itertools.cycle(itertools.product(("0.1", "0.03", "0.01", "0.003"), ("64", "128", "256"),
                                             (1, 2, 4), ACCELERATORS))
    return [Trial(i, *point) for i, point in zip(range(count), grid)]


def job_document(trial: Trial) -> dict[str, Any]:
    """The portable job of a trial."""
    return {"name": trial.name, "framework": "pytorch", "image": IMAGE, "command": list(COMMAND),
            "args": list(trial.args), "env": {"NCCL_DEBUG": "INFO"},
            "primary": {"accelerator": trial.accelerator}, "workers": {"replicas": trial.workers},
            "timeout": "2h", "labels": {"sweep": "lr-batch"}}


def omnidist_jobs(sweep: list[Trial]) -> Iterator[Any]:
    """The sweep as :class:`DistributedJob` values made the omnidist way: ``evolve`` a base job."""
    from omnidist.model.job import job_from_dict
    from omnidist.model.roles import Accelerator

    base = job_from_dict(job_document(sweep[0]))
    for trial in sweep:
        yield attrs.evolve(base, name=trial.name, args=trial.args,
                           primary=attrs.evolve(base.primary, accelerator=Accelerator.parse(trial.accelerator)),
                           workers=attrs.evolve(base.workers, replicas=trial.workers))


def native_builders() -> dict[str, Callable[[], Callable[[Trial], Any]]]:
    """Backend -> the hand-written, SDK-object way to build a trial's request: every installed
    backend whose harness has one."""
    from omnidist.testing.harness import harnesses

    def trial_builder(harness: Any) -> Callable[[], Callable[[Trial], Any]]:
        def make() -> Callable[[Trial], Any]:
            build = harness.native_builder()
            return lambda trial: build(job_document(trial))
        return make

    return {name: trial_builder(h) for name, h in harnesses().items() if h.native_builder is not None}
