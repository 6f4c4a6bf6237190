"""The real ``azure.ai.ml.MLClient`` against the local fake Azure ML service (conftest.py)."""

from __future__ import annotations

import attrs
import pytest

from omnidist.kit import ConfigError, InvalidRequestError, JobState, NotFoundError, TransientBackendError
from omnidist.testing import SleepRecorder
from omnidist.testing.fakeserver import Fault
from omnidist_azure_ml import AzureMLBackend, AzureMLSettings
from omnidist_azure_ml.tables import STATES

JOB = {"name": "cassava", "framework": "pytorch", "image": "trainer.example/t:1", "command": ["python", "train.py"],
       "primary": {"accelerator": "V100:8"}, "workers": {"replicas": 1}, "env": {"A": "1"}, "spot": True,
       "timeout": "2h"}
JOBS = r"/jobs/cassava-s1$"


@pytest.fixture
def sleeps():
    return SleepRecorder()


@pytest.fixture
def backend(sleeps):
    return AzureMLBackend(suffix=lambda: "s1", sleep=sleeps)


def submit(backend, settings, compile_, data=JOB):
    return backend.submit(compile_(data), settings)


def test_create_get_cancel(azure, settings, backend, compile_):
    azure.timeline = ["NotStarted", "Queued", "Running", "Running", "Running", "Completed"]
    handle = submit(backend, settings, compile_)
    assert handle.id == "cassava-s1" and handle.url == "https://ml.azure.com/runs/cassava-s1?wsid=fake"
    (put,) = azure.server.calls("PUT", JOBS)
    assert put.path.startswith("/subscriptions/sub-1/resourceGroups/rg-1/providers/"
                               "Microsoft.MachineLearningServices/workspaces/ws-1/jobs/")
    assert put.headers["Authorization"] == "Bearer omnidist-anonymous"
    props = put.body["properties"]
    assert props["jobType"] == "Command" and props["command"] == "python train.py"
    assert props["distribution"] == {"distributionType": "PyTorch", "processCountPerInstance": 8}
    assert props["resources"]["instanceCount"] == 2 and props["resources"]["instanceType"] == "Standard_ND40rs_v2"
    assert props["environmentVariables"]["A"] == "1" and props["queueSettings"] == {"jobTier": "Spot"}
    assert props["limits"]["timeout"] == "PT2H"
    assert props["environmentId"].endswith(next(iter(azure.environments)).replace(":", "/versions/"))
    assert put.query["api-version"]

    assert handle.status().state is JobState.QUEUED  # NotStarted -> Queued on this GET
    assert handle.status().native_state == "Running"
    handle.cancel()
    assert azure.server.calls("POST", r"/jobs/cassava-s1/cancel$")
    assert handle.status().native_state == "Canceled"
    handle.cancel()  # a finished job: no second POST
    assert len(azure.server.calls("POST", r"/cancel$")) == 1
    assert len(azure.jobs) == 1


def test_wait_follows_the_timeline(azure, settings, backend, compile_, sleeps):
    handle = submit(backend, settings, compile_)
    seen = []
    final = handle.wait(poll_interval=0, on_change=seen.append, sleep=sleeps)
    assert final.state is JobState.SUCCEEDED and final.native_state == "Completed"
    assert [s.state for s in seen] == [JobState.QUEUED, JobState.RUNNING, JobState.SUCCEEDED]


@pytest.mark.parametrize("fault", [Fault.http(429, "slow down", retry_after=3), Fault.http(503, "busy"),
                                   Fault.reset(), Fault.drop_after_create(), Fault.close_after_create()],
                         ids=["429", "503", "reset", "dropped-after-create", "closed-after-create"])
def test_transient_failures_are_retried_into_exactly_one_job(fault, azure, settings, backend, compile_, sleeps):
    azure.server.fail("PUT", JOBS, fault)
    handle = submit(backend, settings, compile_)
    assert handle.id == "cassava-s1"
    assert list(azure.jobs) == ["cassava-s1"]
    puts = azure.server.calls("PUT", JOBS)
    # The SDK's own retries are off and azure-core's RequestsTransport sends a request once: one
    # failed attempt (even a create closed without an answer), then omnidist's retry.
    if fault.kind in ("drop", "close"):
        assert len(puts) == 1  # the retry found the job by name instead of creating it again
        assert azure.server.calls("GET", JOBS)
    else:
        assert len(puts) == 2
    assert len(sleeps) == 1
    if fault.retry_after is not None:
        assert sleeps == [3]


@pytest.mark.parametrize("method, path", [("PUT", JOBS), ("GET", JOBS), ("PUT", r"/environments/")])
def test_request_timeout_bounds_every_call(method, path, azure, settings, backend, compile_, sleeps):
    # A hung server (2 s) on any call the SDK makes is abandoned after request_timeout_s and retried.
    azure.server.fail(method, path, Fault.slow(2.0))
    fast = attrs.evolve(settings, request_timeout_s=0.3)
    handle = backend.submit(compile_(JOB), fast)
    if method == "GET":
        assert handle.status().state is JobState.QUEUED
    # One retry after the hung call: it was abandoned at the timeout, not answered by the server.
    assert list(azure.jobs) == ["cassava-s1"] and len(sleeps) == 1
    assert len(azure.server.calls(method, path)) == 2, "the hung call, then its retry"


def test_retries_are_bounded(azure, settings, backend, compile_, sleeps):
    azure.server.fail("PUT", JOBS, *[Fault.http(503, "still busy")] * 10)
    with pytest.raises(TransientBackendError, match=r"still busy.*HTTP 503"):
        submit(backend, settings, compile_)
    assert len(azure.server.calls("PUT", JOBS)) == settings.retry_attempts
    assert azure.jobs == {}


def test_bad_request_fails_fast_with_the_service_message(azure, settings, backend, compile_, sleeps):
    azure.server.fail("PUT", JOBS, Fault.http(400, "Requested VM size Standard_ND40rs_v2 is not available in westus"))
    with pytest.raises(InvalidRequestError, match="Standard_ND40rs_v2 is not available in westus") as info:
        submit(backend, settings, compile_)
    assert info.value.status == 400 and info.value.exit_code == 1
    assert len(azure.server.calls("PUT", JOBS)) == 1 and sleeps == [] and azure.jobs == {}


def test_registered_environment_is_not_registered_again(azure, settings, backend, compile_):
    data = {**JOB, "backends": {"azure_ml": {"environment": "azureml:acpt-pytorch:3", "compute": "gpu-cluster"}}}
    submit(backend, settings, compile_, data)
    assert azure.environments == {}
    (put,) = azure.server.calls("PUT", JOBS)
    assert put.body["properties"]["environmentId"].endswith("/environments/acpt-pytorch/versions/3")
    assert put.body["properties"]["computeId"].endswith("/computes/gpu-cluster")


def test_unknown_job_is_not_found(azure, settings, backend):
    with pytest.raises(NotFoundError, match="Job nope not found"):
        backend.status("nope", settings)


OFFLINE = AzureMLSettings(subscription_id="sub-1", resource_group="rg-1", workspace="ws-1")


def test_missing_workspace_settings_are_a_config_error(backend):
    with pytest.raises(ConfigError, match="needs workspace"):
        backend.status("x", attrs.evolve(OFFLINE, workspace=None))


def test_default_credential_is_azure_identity():
    from azure.identity import DefaultAzureCredential

    from omnidist_azure.credentials import StaticTokenCredential, credential

    assert isinstance(credential(OFFLINE.credential), DefaultAzureCredential)
    assert isinstance(credential("anonymous"), StaticTokenCredential)


def test_every_azure_status_is_mapped():
    from azure.ai.ml._restclient.arm_ml_service.models import JobStatus as RestStatus

    assert {s.value for s in RestStatus} <= set(STATES)
    assert {STATES[s] for s in ("Completed", "Failed", "Canceled")} == {s for s in JobState if s.terminal}


def test_console_url(backend):
    assert backend.console_url("j-1", OFFLINE) == (
        "https://ml.azure.com/runs/j-1?wsid=/subscriptions/sub-1/resourcegroups/rg-1/workspaces/ws-1")


@pytest.mark.parametrize(("error", "ended"), [
    ("PreemptionError: Nodes of this job got pre-empted. Please retry the job.", "preemption"),
    ("UserError: Execution failed. User process 'python' exited with status code 1.", "failure"),
])
def test_how_a_failed_job_ended_is_read_from_its_run_error(azure, settings, backend, compile_, error, ended):
    azure.fail_jobs(error)
    final = submit(backend, settings, compile_).wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and final.ended.value == ended


def test_a_completed_job_succeeded(azure, settings, backend, compile_):
    assert submit(backend, settings, compile_).wait(poll_interval=0, sleep=lambda s: None).ended.value == "succeeded"
