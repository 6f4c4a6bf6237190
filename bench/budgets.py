"""Wall-clock budgets: how long the failure paths take, measured here instead of asserted in tests.

The tests decide these behaviours by events (the number of retries, which job survived, a
marker a stopped process never wrote); this module times the same scenarios in real time,
with real sleeps, against the local fake services, and compares each with its budget:

- a create the cloud rejects (400) fails at once;
- a create the server sits on is abandoned at ``request_timeout_s`` and retried into one job;
- a persistent 503 outage stops after ``retry_attempts``;
- a status read the server sits on is abandoned at ``request_timeout_s``;
- a backend that settles a timed-out create (``create_settle_s``, Vertex's): a create that lands
  late is waited for, then the client stops (not the whole window); a create that never lands
  is given up on after the window;
- local: ``cancel`` stops a running submission; a failing replica stops the others, even ones
  that ignore SIGTERM, within the grace period.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import submission
import sweep

import omnidist
from omnidist import errors
from omnidist.runtime import platforms
from omnidist.testing import FakeServer, Fault

FAST = {"retry_attempts": 4, "retry_deadline_s": 30.0, "retry_initial_wait_s": 0.01}
"""Real, short retry waits (the tests inject a recording sleep instead)."""


@attrs.frozen
class Budget:
    """One timed scenario: what it shows, the seconds it took and its budget (a range for the
    Vertex late create, which must wait at least until the job lands)."""

    measure: str
    seconds: float
    budget: float
    at_least: float = 0.0

    @property
    def met(self) -> bool:
        """Whether the time is within the budget."""
        return self.at_least <= self.seconds <= self.budget

    @property
    def goal(self) -> str:
        """The budget as the results table prints it."""
        return f"{self.at_least:g}-{self.budget:g} s" if self.at_least else f"<= {self.budget:g} s"


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _raises(error: type[BaseException], fn: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except error:
            return
        raise AssertionError(f"expected {error.__name__}")
    return run


@contextmanager
def _fake(name: str) -> Iterator[tuple[FakeServer, submission.Target]]:
    with FakeServer() as server:
        yield server, submission.wire(name, server)
        server.wait_idle()  # a request the client abandoned finishes before the server stops


def cloud_budgets(name: str) -> list[Budget]:
    """The create, outage and status-read scenarios on one cloud's fake service."""
    trial = sweep.trials(1)[0]
    hung = {**FAST, "request_timeout_s": 0.3}
    rows = []
    with _fake(name) as (server, target):
        server.fail(*target.create, Fault.http(400, "Invalid value at 'job.labels'"))
        seconds = _timed(_raises(errors.InvalidRequestError, lambda: target.omnidist_submit(trial, **FAST)))
        rows.append(Budget(f"{name}: a create answered 400 fails without retrying", seconds, 5.0))
    with _fake(name) as (server, target):
        server.fail(*target.create, Fault.slow(1.5))
        seconds = _timed(lambda: target.omnidist_submit(trial, **hung))
        rows.append(Budget(f"{name}: a create the server sits on (1.5 s) is abandoned at 0.3 s and retried",
                           seconds, 5.0))
    with _fake(name) as (server, target):
        server.fail(*target.create, *[Fault.http(503, "backend unavailable")] * 10)
        seconds = _timed(_raises(errors.TransientBackendError, lambda: target.omnidist_submit(trial, **FAST)))
        rows.append(Budget(f"{name}: a 503 outage stops after 4 attempts", seconds, 10.0))
    with _fake(name) as (server, target):
        handle = target.omnidist_submit(trial, **hung)
        server.fail(*target.service.ROUTES["get"], Fault.slow(2.0))
        seconds = _timed(handle.status)
        rows.append(Budget(f"{name}: a status read the server sits on (2 s) is abandoned at 0.3 s", seconds, 1.8))
    return rows


def settling(name: str) -> list[Budget]:
    """For a backend that settles a timed-out create (its settings have ``create_settle_s``: a
    cloud that lets the client choose no job id): a create that lands 0.8 s in is waited for;
    one that lands after the window is not."""
    trial = sweep.trials(1)[0]
    rows = []
    with _fake(name) as (server, target):
        server.fail(*target.create, Fault.slow(0.8))
        seconds = _timed(lambda: target.omnidist_submit(trial, request_timeout_s=0.2, create_settle_s=10.0, **FAST))
        rows.append(Budget(f"{name}: a timed-out create that lands 0.8 s in is waited for, then settling stops",
                           seconds, 5.0, at_least=0.8))
    with _fake(name) as (server, target):
        server.fail(*target.create, Fault.slow(2.0))
        seconds = _timed(lambda: target.omnidist_submit(trial, request_timeout_s=0.2, create_settle_s=0.3, **FAST))
        rows.append(Budget(f"{name}: settling gives up after create_settle_s (0.3 s)", seconds, 1.5))
    return rows


def settles(name: str) -> bool:
    """True for a backend whose settings have ``create_settle_s``."""
    from omnidist.backend import registry

    return "create_settle_s" in attrs.fields_dict(registry.get(name).settings_type)


STUBBORN = """
import os, signal, sys, time
if os.environ.get("OMNIDIST_ROLE") == "worker":
    while not os.path.exists("ready"):
        time.sleep(0.02)
    sys.exit(3)
signal.signal(signal.SIGTERM, signal.SIG_IGN)   # only SIGKILL after the grace period ends it
open("ready", "w").close()
time.sleep(60)
"""


def local_budgets() -> list[Budget]:
    """``cancel`` of a running local submission; a failing replica stopping a stubborn one."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "sleep.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
        job = {"name": "budget", "framework": "custom", "command": ["python", "sleep.py"], "primary": {},
               "workers": {"replicas": 1}}
        handle = omnidist.submit(job, backend="local",
                                 settings={"runs_dir": str(folder / "runs"), "workdir": tmp, "emulate": "none"})
        next(line for line in handle.logs(follow=True) if line.endswith(" up"))  # both replicas run
        rows.append(Budget("local: cancel stops a running submission", _timed(handle.cancel), 5.0))
        (folder / "stubborn.py").write_text(STUBBORN)
        (folder / "job.yaml").write_text(
            json.dumps(
                {
                    "name": "stubborn",
                    "framework": "custom",
                    "command": ["python", "stubborn.py"],
                    "primary": {},
                    "workers": {"replicas": 1},
                    "backends": {"local": {"grace_period": 0.5, "emulate": platforms.DEFAULT_EMULATION}},
                }
            )
        )
        omnidist_cli = str(Path(sys.executable).with_name("omnidist"))
        ran: list[subprocess.CompletedProcess] = []
        seconds = _timed(lambda: ran.append(subprocess.run([omnidist_cli, "run", "job.yaml"], cwd=tmp,
                                                           capture_output=True, text=True, timeout=120)))
        assert ran[0].returncode == 3, ran[0].stderr  # the failing replica's code
        rows.append(Budget("local: omnidist run stops a SIGTERM-ignoring replica when another fails "
                           "(grace 0.5 s, process start included)", seconds, 8.0))
    return rows


def budgets() -> list[Budget]:
    """Every scenario, clouds first."""
    import logging

    rows = []
    for name in submission.clouds():
        logging.getLogger(f"omnidist.{name}").setLevel(logging.ERROR)  # the settling warnings are expected here
        rows += cloud_budgets(name)
    for name in filter(settles, submission.clouds()):
        rows += settling(name)
    return rows + local_budgets()


if __name__ == "__main__":
    for row in budgets():
        print(f"{'ok  ' if row.met else 'OVER'} {row.seconds:6.2f} s  {row.goal:>18}  {row.measure}")
