"""The clouds the reliability suite drives: each backend's fake service (a
:class:`omnidist.testing.FakeService`) on a FakeServer, the backend with injected ids and sleeps,
and settings that point the real SDK client at the fake.

Every cross-backend test takes the ``cloud`` fixture, parametrized over :data:`CLOUDS`, so a
row of the fault matrix runs once per backend with the same expectations.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from omnidist.backend import Backend
from omnidist.testing import FakeServer, FakeService

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
            settings share the retry/timeout keys of :class:`omnidist.retry.ClientSettings`).
        sleeps: every wait the retry policy asked for (none actually happens).
    """

    name: str
    server: FakeServer
    service: FakeService
    backend: Backend
    make_settings: Callable[..., Any]
    sleeps: list[float]

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
    def poll(self) -> str:
        """Path regex of the GET that reads one job's status."""
        return self.service.ROUTES["get"][1]

    def settings(self, **overrides: Any) -> Any:
        """Settings for the fake with fast, bounded retries (4 attempts)."""
        return self.make_settings(**overrides)

    def submit(self, job: Any = None, **overrides: Any):
        """Compile ``job`` (default :data:`JOB`) and submit it through the backend."""
        from omnidist import serde

        settings = self.settings(**overrides)
        compiled = self.backend.compile(serde.job_from_dict(job or JOB), settings)
        return self.backend.submit(compiled, settings)

    def creates(self) -> int:
        """How many create requests reached the server."""
        return len(self.server.calls(*self.create))

    def job_count(self) -> int:
        """How many jobs exist on the fake cloud, not counting ones the client cancelled."""
        cancelled = {self.service.CANCELLING, self.service.CANCELLED}
        return sum(1 for job in self.service.jobs.values() if self.service.state(job) not in cancelled)


def _vertex(server: FakeServer, sleeps: list[float]) -> Cloud:
    from omnidist_vertex import VertexBackend, VertexSettings
    from omnidist_vertex.testing import FakeVertex

    ids = (f"req{n}" for n in itertools.count())
    return Cloud(
        name="vertex", server=server, service=FakeVertex(server),
        backend=VertexBackend(request_id=lambda: next(ids), sleep=sleeps.append),
        make_settings=lambda **o: VertexSettings(**{
            "project": "p", "region": "us-central1", "api_endpoint": server.url, "credentials": "anonymous",
            "retry_attempts": 4, "retry_deadline_s": 30.0, "create_settle_s": 3.0, **o}),
        sleeps=sleeps)


def _ai_platform(server: FakeServer, sleeps: list[float]) -> Cloud:
    from omnidist_ai_platform import AIPlatformBackend, AIPlatformSettings
    from omnidist_ai_platform.testing import FakeMLService

    suffixes = (f"s{n}" for n in itertools.count())
    return Cloud(
        name="ai_platform", server=server, service=FakeMLService(server),
        backend=AIPlatformBackend(suffix=lambda: next(suffixes), sleep=sleeps.append),
        make_settings=lambda **o: AIPlatformSettings(**{
            "project": "proj", "api_endpoint": server.url, "credentials": "anonymous", "retry_attempts": 4,
            "retry_deadline_s": 30.0, "retry_initial_wait_s": 0.01, **o}),
        sleeps=sleeps)


def _azure_ml(server: FakeServer, sleeps: list[float]) -> Cloud:
    from omnidist_azure_ml import AzureMLBackend, AzureMLSettings
    from omnidist_azure_ml.testing import FakeAzureML

    suffixes = (f"s{n}" for n in itertools.count())
    return Cloud(
        name="azure_ml", server=server, service=FakeAzureML(server),
        backend=AzureMLBackend(suffix=lambda: next(suffixes), sleep=sleeps.append),
        make_settings=lambda **o: AzureMLSettings(**{
            "subscription_id": "sub-1", "resource_group": "rg-1", "workspace": "ws-1", "credential": "anonymous",
            "endpoint": server.url, "retry_attempts": 4, "retry_deadline_s": 30.0, "poll_interval_s": 0.0, **o}),
        sleeps=sleeps)


CLOUDS: dict[str, Callable[[FakeServer, list[float]], Cloud]] = {
    "ai_platform": _ai_platform,
    "azure_ml": _azure_ml,
    "vertex": _vertex,
}
"""Backend name -> how to wire it to its fake service."""


@pytest.fixture(params=sorted(CLOUDS))
def cloud(request) -> Iterator[Cloud]:
    """Each cloud backend in turn, on a fresh fake service."""
    with FakeServer() as server:
        yield CLOUDS[request.param](server, [])
