"""Submitting against the local fake services: omnidist's submit next to the SDK called
directly, and a concurrent sweep while the server misbehaves.

Each cloud is a :class:`Target`: its fake service on a FakeServer, omnidist's settings for it,
and the direct-SDK submit a user without omnidist would write: all from the backend's
:class:`omnidist.testing.Harness`, so every installed cloud backend that declares one is measured.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import sweep

import omnidist
from omnidist.testing import FakeServer, FakeService, Fault
from omnidist.testing.harness import harnesses


@attrs.define
class Target:
    """One cloud's fake service and the two ways to submit a trial to it."""

    backend: str
    service: FakeService
    create: tuple[str, str]
    settings: dict[str, Any]
    direct: Callable[[sweep.Trial], Any]

    def omnidist_submit(self, trial: sweep.Trial, **settings: Any) -> Any:
        """``omnidist.submit`` of the trial's portable job."""
        return omnidist.submit(sweep.job_document(trial), backend=self.backend, settings={**self.settings, **settings})


def clouds() -> list[str]:
    """The installed backends whose harness submits directly with the SDK (bench baselines)."""
    return sorted(name for name, h in harnesses().items() if h.direct_submit is not None)


def wire(name: str, server: FakeServer) -> Target:
    """Backend ``name``'s fake service on ``server`` and its direct-SDK submit (its harness's)."""
    harness = harnesses()[name]
    service = harness.service(server)
    submit = harness.direct_submit(service)
    return Target(name, service, service.ROUTES["create"], harness.settings(server.url),
                  lambda trial: submit(sweep.job_document(trial)))


def sequential(name: str, count: int, rounds: int = 3) -> tuple[float, float]:
    """Seconds for ``count`` sequential submits through omnidist and through the SDK directly,
    alternating in ``rounds`` so drift in the machine hits both alike (after one warm-up each)."""
    with FakeServer() as server:
        target = wire(name, server)
        *trials, warm = sweep.trials(count + 1)
        target.omnidist_submit(warm)
        target.direct(warm)
        ours = theirs = 0.0
        per_round = max(1, count // rounds)
        for r in range(rounds):
            batch = trials[r * per_round:(r + 1) * per_round]
            t0 = time.perf_counter()
            for trial in batch:
                target.omnidist_submit(trial)
            t1 = time.perf_counter()
            for trial in batch:
                target.direct(trial)
            t2 = time.perf_counter()
            ours, theirs = ours + t1 - t0, theirs + t2 - t1
        expected = 2 + 2 * per_round * rounds
        assert len(target.service.jobs) == expected, (len(target.service.jobs), expected)
        return ours, theirs


FAST_RETRIES: dict[str, Any] = {"retry_attempts": 10, "retry_deadline_s": 60.0, "retry_initial_wait_s": 0.01}
"""The retry knobs (shared :class:`omnidist.backend.settings.ClientSettings` keys) every backend's run uses."""


def _faults(rng: random.Random, count: int, drops: bool) -> list[Fault]:
    faults = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.10:
            faults.append(Fault.http(429, "throttled", retry_after=0))
        elif roll < 0.20:
            faults.append(Fault.http(503, "unavailable", retry_after=0))
        elif drops and roll < 0.23:
            faults.append(Fault.drop_after_create())
        else:
            faults.append(Fault.slow(0))  # answers normally
    return faults


def concurrent_sweep(name: str, count: int, workers: int, faulty: bool, seed: int = 7) -> tuple[float, int, int]:
    """Submit ``count`` trials on ``workers`` threads; with ``faulty``, 20% of every call is
    answered 429/503 (Retry-After 0) and 3% of creates lose their response after creating.

    Returns:
        (wall seconds, jobs that exist on the fake, requests the server saw)
    """
    with FakeServer() as server:
        target = wire(name, server)
        trials = sweep.trials(count)
        if faulty:
            rng = random.Random(seed)
            server.fail(*target.create, *_faults(rng, count * 3, drops=True))
            for method in ("GET",):  # lookups on retry and status reads misbehave too
                server.fail(method, "", *_faults(rng, count * 3, drops=False))
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda t: target.omnidist_submit(t, **FAST_RETRIES), trials))
        elapsed = time.perf_counter() - start
        return elapsed, len(target.service.jobs), len(server.requests)
