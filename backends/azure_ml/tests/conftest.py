"""Fixtures: the local Azure ML management API for the real ``MLClient``
(:mod:`omnidist_azure_ml.testing`), and helpers shared by the tests.

The fake implements exactly the routes ``jobs.create_or_update`` / ``get`` / ``begin_cancel``
call: PUT an (anonymous) environment version, PUT / GET a job by name, POST cancel. Jobs keep
real state: a PUT of an existing name returns the stored job (Azure's PUT is idempotent), GETs
walk the job through a scripted status timeline, cancel moves it to CancelRequested/Canceled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omnidist.testing import FakeServer
from omnidist_azure_ml import AzureMLSettings
from omnidist_azure_ml.testing import FakeAzureML

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def azure():
    """A running fake Azure ML service."""
    with FakeServer() as server:
        yield FakeAzureML(server)


@pytest.fixture
def settings(azure) -> AzureMLSettings:
    """Settings that point the real MLClient at the fake, with fast retries."""
    return AzureMLSettings(subscription_id="sub-1", resource_group="rg-1", workspace="ws-1", credential="anonymous",
                           endpoint=azure.server.url, retry_attempts=4, retry_deadline_s=30, poll_interval_s=0)


@pytest.fixture
def to_rest(tmp_path):
    """Load a compiled job with ``azure.ai.ml.load_job`` (the SDK's own schemas) and return the
    properties of its REST body (``_to_rest_object()``); an inline environment, which the SDK
    registers only at submit time, is shown as ``{"image": …}``."""
    from azure.ai.ml import load_job

    from omnidist.kit import dump_yaml

    counter = iter(range(10**6))

    def convert(request: dict[str, Any]) -> dict[str, Any]:
        path = tmp_path / f"job-{next(counter)}.yml"
        path.write_text(dump_yaml(request))
        rest = load_job(path)._to_job()._to_rest_object().as_dict()["properties"]
        env = rest.get("environmentId")
        if not isinstance(env, str):
            rest["environmentId"] = {"image": env.image}
        return rest

    return convert


def compile_job(data: dict[str, Any], **overrides: Any):
    """Compile a job (plain data, its ``backends.azure_ml`` block honoured) without profiles."""
    from omnidist.kit import Target, job_from_dict, settings_for
    from omnidist_azure_ml import AzureMLBackend

    job = job_from_dict(data)
    resolved = settings_for(AzureMLSettings, "azure_ml", Target(backend="azure_ml"), job, overrides)
    return AzureMLBackend().compile(job, resolved)


def check_with_sdk(request: dict[str, Any], rest: dict[str, Any]) -> None:
    """Assert that the fields omnidist wrote survive the SDK's load and REST conversion."""
    resources = request["resources"]
    assert rest["jobType"] == "Command" and rest["command"] == request["command"]
    assert rest["displayName"] == request["display_name"] and rest["experimentName"] == request["experiment_name"]
    assert rest["resources"]["instanceCount"] == resources["instance_count"]
    assert rest["resources"].get("instanceType") == resources.get("instance_type")
    assert rest["resources"].get("shmSize") == resources.get("shm_size")
    assert rest["environmentVariables"] == request.get("environment_variables", {})
    assert rest["tags"] == request.get("tags", {})
    dist, native = request["distribution"], rest["distribution"]
    assert native["distributionType"].lower() == dist["type"]
    assert native.get("processCountPerInstance") == dist.get("process_count_per_instance")
    assert native.get("workerCount") == dist.get("worker_count")
    assert native.get("parameterServerCount") == dist.get("parameter_server_count")
    assert ("limits" in rest) == ("limits" in request)
    tier = request.get("queue_settings", {}).get("job_tier")
    assert (rest.get("queueSettings") or {}).get("jobTier", "").lower() == (tier or "")
    env = request["environment"]
    assert rest["environmentId"] == (env if isinstance(env, dict) else env.removeprefix("azureml:"))


@pytest.fixture
def compile_(to_rest):
    """:func:`compile_job`, with every compiled job loaded by ``azure.ai.ml.load_job``, turned
    into its REST body and checked field by field (:func:`check_with_sdk`)."""
    def compile_and_check(data: dict[str, Any], **overrides: Any):
        compiled = compile_job(data, **overrides)
        check_with_sdk(compiled.request, to_rest(compiled.request))
        return compiled

    return compile_and_check


@pytest.fixture
def sdk_check(to_rest):
    """Check one compiled request against the SDK (for tests that compile by other means)."""
    return lambda request: check_with_sdk(request, to_rest(request))
