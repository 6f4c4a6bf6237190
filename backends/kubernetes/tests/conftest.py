"""Fixtures for the Kubernetes backend tests: compiling without profiles, the checks every
emitted job must pass (CRD schema, operator webhooks, the client's pod-template models), a
fake API server (:mod:`omnidist_kubernetes.testing`), and the shared corpus."""

from __future__ import annotations

from typing import Any

import pytest

from omnidist.testing import FakeServer, SleepRecorder
from omnidist_kubernetes import KubernetesBackend, KubernetesSettings
from omnidist_kubernetes.testing import FakeKubernetes, check_manifest, compile_job


@pytest.fixture
def compile_():
    """:func:`compile_job`, every result checked with :func:`check_manifest`."""
    def compile_and_check(data: dict[str, Any], **overrides: Any):
        compiled = compile_job(data, **overrides)
        check_manifest(compiled.request)
        return compiled

    return compile_and_check


@pytest.fixture
def kube():
    """A running fake Kubernetes API server."""
    with FakeServer() as server:
        yield FakeKubernetes(server)


@pytest.fixture
def sleeps() -> SleepRecorder:
    """The waits retries and ``logs --follow`` asked for (none really happen)."""
    return SleepRecorder()


@pytest.fixture
def settings(kube) -> KubernetesSettings:
    """Settings that point the real client at the fake, with fast retries."""
    return KubernetesSettings(api_server=kube.url, retry_attempts=4, retry_deadline_s=30, poll_interval_s=0,
                              request_timeout_s=10)


@pytest.fixture
def backend(sleeps) -> KubernetesBackend:
    """A backend whose names and request ids are predictable and whose waits are recorded."""
    return KubernetesBackend(suffix=lambda: "abcde", request_id=lambda: "f" * 32, sleep=sleeps)
