"""The clouds the reliability suite drives: each backend's fake service (a
:class:`omnidist.testing.FakeService`) on a FakeServer, the backend with injected ids and sleeps,
and settings that point the real SDK client at the fake.

Every cross-backend test takes the ``cloud`` fixture, parametrized over every installed cloud
backend, so a row of the fault matrix runs once per backend with the same expectations. A test
module names its shared suite with ``pytestmark = pytest.mark.suite("tuning")`` (default
``reliability``); a backend that opts out of it is skipped with its reason, one that declares no
harness fails (:func:`omnidist.testing.harness.suite_harness`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from omnidist.backend.contract import Backend
from omnidist.testing import FakeServer, FakeService, Harness
from omnidist.testing.harness import cloud_backends, suite_harness

JOB: dict[str, Any] = {
    "name": "reliable-ddp",
    "framework": "pytorch",
    "image": "us-docker.pkg.dev/p/trainers/ddp:1.0",
    "command": ["python", "-m", "trainer.task"],
    "args": ["--epochs", "3"],
    "primary": {"accelerator": "T4:1"},
    "workers": {"replicas": 2},
}
"""A job every cloud backend compiles: PyTorch, one primary and two workers with a T4 each."""

TUNING_JOB: dict[str, Any] = {
    **JOB,
    "name": "reliable-tune",
    "tuning": {
        "metric": {"name": "accuracy", "goal": "maximize"},
        "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1},
                       "layers": {"type": "integer", "min": 0, "max": 3},
                       "optimizer": {"type": "categorical", "values": ["adam", "sgd"]}},
        "algorithm": "random",
        "max_trials": 4,
        "parallel_trials": 2,
    },
}
""":data:`JOB` with a search every cloud backend compiles: 4 trials, 2 at a time."""


@attrs.define
class Cloud:
    """One backend wired to its fake service.

    Attributes:
        name: the backend's name.
        server: the FakeServer the fake service's routes live on.
        service: the fake service (its ``jobs`` dict is what exists on the "cloud").
        backend: the backend, with deterministic ids and a recording ``sleep``.
        make_settings: settings pointing at the server, with the given overrides (every backend's
            settings share the retry/timeout keys of :class:`omnidist.backend.settings.ClientSettings`).
        sleeps: every wait the retry policy asked for (none actually happens).
        harness: what the plugin declared for suites like this one.
    """

    name: str
    server: FakeServer
    service: FakeService
    backend: Backend
    make_settings: Callable[..., Any]
    sleeps: list[float]
    harness: Harness

    @property
    def create(self) -> tuple[str, str]:
        """``(method, path regex)`` of the request that creates a job."""
        return self.service.ROUTES["create"]

    def tuning_route(self, operation: str) -> tuple[str, str]:
        """``(method, path regex)`` of a tuning job's ``create``/``get``/``cancel``/``list``
        request (a collection of its own on Vertex, the plain jobs' elsewhere)."""
        routes = self.service.ROUTES
        return routes.get(f"tuning_{operation}", routes[operation])

    @property
    def poll(self) -> tuple[str, str]:
        """``(method, path regex)`` of the request that reads one job's status (a GET on REST APIs,
        a POST naming the operation on AWS's)."""
        return self.service.ROUTES["get"]

    def settings(self, **overrides: Any) -> Any:
        """Settings for the fake with fast, bounded retries (4 attempts)."""
        return self.make_settings(**overrides)

    def submit(self, job: Any = None, **overrides: Any):
        """Compile ``job`` (default :data:`JOB`) and submit it through the backend."""
        from omnidist.model.job import job_from_dict

        settings = self.settings(**overrides)
        compiled = self.backend.compile(job_from_dict(job or JOB), settings)
        return self.backend.submit(compiled, settings)

    def creates(self) -> int:
        """How many create requests reached the server."""
        return len(self.server.calls(*self.create))

    def job_count(self) -> int:
        """How many jobs exist on the fake cloud, not counting ones the client cancelled."""
        cancelled = {self.service.CANCELLING, self.service.CANCELLED}
        return sum(1 for job in self.service.jobs.values() if self.service.state(job) not in cancelled)


RETRIES: dict[str, Any] = {"retry_attempts": 4, "retry_deadline_s": 30.0}
"""Fast, bounded retries (4 attempts): every cloud backend's settings share these keys."""


def wire(name: str, harness: Harness, server: FakeServer, sleeps: list[float]) -> Cloud:
    """Backend ``name`` on a fresh fake of its own, with deterministic ids and a recording sleep."""
    from omnidist.backend import registry

    ids, suffixes = (f"req{n}" for n in itertools.count()), (f"s{n}" for n in itertools.count())
    driver = type(registry.get(name))(request_id=lambda: next(ids), suffix=lambda: next(suffixes), sleep=sleeps.append)
    return Cloud(name=name, server=server, service=harness.service(server), backend=driver,
                 make_settings=lambda **o: driver.settings_type(**{**harness.settings(server.url), **RETRIES, **o}),
                 sleeps=sleeps, harness=harness)


CLOUDS: list[str] = sorted(cloud_backends())
"""Every installed backend that talks to a cloud (a fourth cloud's plugin is covered by installing it)."""


@pytest.fixture(params=CLOUDS)
def cloud(request) -> Iterator[Cloud]:
    """Each cloud backend in turn, on a fresh fake service (skipped where it opts out of the
    module's suite, failed where it declares no harness)."""
    marker = request.node.get_closest_marker("suite")
    harness = suite_harness(marker.args[0] if marker else "reliability", request.param)
    with FakeServer() as server:
        yield wire(request.param, harness, server, [])
