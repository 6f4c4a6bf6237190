"""Fixtures: a fake ml v1 service on a local port, settings pointing at it, a backend with
deterministic suffixes and no real sleeping.

One server per test module (stopping a FakeServer waits out its 0.5 s poll), reset before
each test: its job store and request log are emptied; every test consumes the faults it queues.
"""

from __future__ import annotations

import pytest

from omnidist.testing.fakeserver import FakeServer
from omnidist_ai_platform import AIPlatformBackend, AIPlatformSettings
from omnidist_ai_platform.testing import FakeMLService


@pytest.fixture(scope="module")
def _shared():
    with FakeServer() as fake:
        yield fake, FakeMLService(fake)


@pytest.fixture
def server(_shared):
    fake, service = _shared
    fake.requests.clear()
    service.reset()
    return fake


@pytest.fixture
def service(_shared, server):
    return _shared[1]


@pytest.fixture
def settings(server):
    return AIPlatformSettings(project="proj", api_endpoint=server.url, credentials="anonymous",
                              retry_initial_wait_s=0.01, retry_max_wait_s=0.05, request_timeout_s=5)


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def backend(sleeps):
    return AIPlatformBackend(suffix=lambda: "s1", sleep=sleeps.append)
