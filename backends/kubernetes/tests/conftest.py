"""Fixtures for the Kubernetes backend tests: compiling without profiles, the checks every
emitted job must pass (CRD schema, operator webhooks, the client's pod-template models), a
fake API server (:mod:`omnidist_kubernetes.testing`), and the shared corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from omnidist.testing import FakeServer, SleepRecorder

from omnidist_kubernetes import KubernetesBackend, KubernetesSettings
from omnidist_kubernetes.testing import FakeKubernetes, pod_templates, schema_problems, webhook_problems

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
CORPUS = HERE.parents[2].parent / "shared" / "corpus"
"""``../shared/corpus`` beside the checkout: third-party job files, read in place."""


def compile_job(data: dict[str, Any], **overrides: Any):
    """Compile a job (plain data, its ``backends.kubernetes`` block honoured) without profiles."""
    from omnidist import config, serde

    job = serde.job_from_dict(data)
    resolved = config.settings_for(KubernetesSettings, "kubernetes", config.Target(backend="kubernetes"), job,
                                   overrides)
    return KubernetesBackend().compile(job, resolved)


def check_manifest(request: dict[str, Any]) -> dict[str, Any]:
    """Assert that a job passes what a cluster checks: the CRD schema, the operator's admission
    rules, and the ``kubernetes`` client's models for every pod template; returns the models."""
    assert schema_problems(request) == []
    assert webhook_problems(request) == []
    return pod_templates(request)


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


def corpus_files() -> list[Path]:
    """The corpus's Kubernetes files (none when ``../shared/corpus`` is absent)."""
    folder = CORPUS / "kubernetes"
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def read_documents(path: Path) -> list[Any]:
    """Every YAML document of a file (``kubectl apply -f`` reads them all)."""
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]
