"""The real aiplatform_v1 JobServiceClient (REST) against a fake Vertex service started here:
create, get, list, cancel; faults; error mapping."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from omnidist.kit import (
    ConfigError,
    DistributedJob,
    InvalidRequestError,
    JobState,
    NotFoundError,
    PermissionDeniedError,
    TransientBackendError,
    ValidationError,
)
from omnidist.testing import SleepRecorder
from omnidist.testing.fakeserver import Fault
from omnidist_vertex import VertexBackend, VertexSettings

JOB = DistributedJob.from_dict(
    {
        "name": "demo",
        "framework": "pytorch",
        "image": "gcr.io/p/t:1",
        "command": "python train.py",
        "primary": {"accelerator": "V100:8"},
        "workers": {"replicas": 2},
        "reduction_servers": {"replicas": "auto"},
        "labels": {"team": "vision"},
    }
)
SEED_MACHINES = {"primary": "n1-highmem-96", "workers": "n1-highmem-96"}
"""The seed's machine: 96 vCPUs unlock the 100 Gbps of 8×V100."""
CREATE = r"/customJobs$"


@pytest.fixture
def sleeps():
    return SleepRecorder()


@pytest.fixture
def driver(sleeps):
    ids = (f"req-{i}" for i in itertools.count(1))
    return VertexBackend(request_id=lambda: next(ids), sleep=sleeps)


def conf(vertex, **extra) -> VertexSettings:
    extra.setdefault("machine_types", SEED_MACHINES)
    return VertexSettings(
        project="p", region="us-central1", api_endpoint=vertex.url, credentials="anonymous", **extra
    )


def submit(driver, vertex, **extra):
    settings = conf(vertex, **extra)
    return driver.submit(driver.compile(JOB, settings), settings)


def test_submit_status_wait(driver, vertex, valid):
    handle = submit(driver, vertex)
    assert handle.id == "projects/p/locations/us-central1/customJobs/1000"
    assert handle.url == (
        "https://console.cloud.google.com/agent-platform/locations/us-central1/training/1000?project=p"
    )
    (create,) = vertex.server.calls("POST", CREATE)
    assert create.path == "/v1/projects/p/locations/us-central1/customJobs"
    body = create.body
    assert body["labels"] == {"team": "vision", "omnidist-request-id": "req-1"}
    pools = body["jobSpec"]["workerPoolSpecs"]
    assert pools[0]["machineSpec"]["acceleratorType"] == 3  # REST sends enum numbers
    assert [p["replicaCount"] for p in pools] == ["1", "2", "10"]  # ceil(3 × 100 / 32)
    compiled = driver.compile(JOB, conf(vertex))
    assert body["displayName"] == compiled.request["displayName"]
    seen = []
    final = handle.wait(poll_interval=0, on_change=seen.append, sleep=lambda s: None)
    assert final.state is JobState.SUCCEEDED and final.native_state == "JOB_STATE_SUCCEEDED"
    assert [s.state for s in seen] == [
        JobState.QUEUED,
        JobState.PENDING,
        JobState.RUNNING,
        JobState.SUCCEEDED,
    ]


def test_failed_job_carries_the_message(driver, vertex):
    vertex.fail_jobs("replica workerpool1-0 exited with code 1")
    final = submit(driver, vertex).wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and "exited with code 1" in final.message


def test_cancel_running_and_finished(driver, vertex):
    vertex.keep_running()
    handle = submit(driver, vertex)
    for _ in range(3):
        handle.status()
    assert handle.status().state is JobState.RUNNING
    handle.cancel()
    assert len(vertex.server.calls("POST", r":cancel$")) == 1
    assert handle.status().state is JobState.CANCELLING
    assert handle.status().state is JobState.CANCELLED
    handle.cancel()  # finished: a no-op, no second cancel call
    assert len(vertex.server.calls("POST", r":cancel$")) == 1


def test_bare_number_completed_from_settings(driver, vertex):
    handle = submit(driver, vertex)
    assert driver.status("1000", conf(vertex)).state is JobState.QUEUED
    with pytest.raises(ValidationError):
        driver.status("1000", VertexSettings(api_endpoint=vertex.url, credentials="anonymous"))
    with pytest.raises(NotFoundError, match="not found"):
        driver.status(handle.id.replace("1000", "999"), conf(vertex))


@pytest.mark.parametrize("fault", [Fault.http(503), Fault.reset(), Fault.http(500, "backend error")])
def test_transient_failures_retried_once_created(driver, vertex, fault, sleeps):
    vertex.server.fail("POST", CREATE, fault)
    handle = submit(driver, vertex)
    assert len(vertex.jobs) == 1 and handle.id in vertex.jobs
    assert len(vertex.server.calls("POST", CREATE)) == 2
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 20


def test_429_honours_retry_after(driver, vertex, sleeps):
    vertex.server.fail("POST", CREATE, Fault.http(429, "quota exceeded", retry_after=7))
    submit(driver, vertex)
    assert sleeps == [7.0] and len(vertex.jobs) == 1


@pytest.mark.parametrize("fault", [Fault.drop_after_create(), Fault.close_after_create()], ids=["reset", "closed"])
def test_response_dropped_after_creation_makes_one_job(driver, vertex, fault):
    """Created, then the connection reset or closed without an answer. The REST transport
    (requests/urllib3 under google-auth's AuthorizedSession, SDK retries off) never sends a
    create again by itself: the one POST fails, and the retry finds the job by its label."""
    vertex.server.fail("POST", CREATE, fault)
    handle = submit(driver, vertex)
    assert len(vertex.jobs) == 1 and handle.id == next(iter(vertex.jobs))
    assert len(vertex.server.calls("POST", CREATE)) == 1  # found by its label, not created again
    (lookup,) = vertex.server.calls("GET", CREATE)
    assert lookup.query["filter"] == ['labels.omnidist-request-id="req-1"']


def test_lookup_ignores_other_requests_jobs(driver, vertex):
    submit(driver, vertex)  # req-1
    vertex.server.fail("POST", CREATE, Fault.http(503))
    handle = submit(driver, vertex)  # req-2: nothing found, created on the retry
    assert len(vertex.jobs) == 2 and vertex.jobs[handle.id]["labels"]["omnidist-request-id"] == "req-2"


@pytest.mark.parametrize(
    "status, error", [(400, InvalidRequestError), (403, PermissionDeniedError), (404, NotFoundError)]
)
def test_client_errors_fail_fast_with_the_server_message(driver, vertex, status, error, sleeps):
    vertex.server.fail("POST", CREATE, Fault.http(status, 'Accelerator "NVIDIA_TESLA_V100" is not supported'))
    with pytest.raises(error) as err:
        submit(driver, vertex)
    assert err.value.status == status and 'Accelerator "NVIDIA_TESLA_V100" is not supported' in str(err.value)
    assert "http://" not in str(err.value)  # the server's message, not the SDK's URL dump
    assert len(vertex.server.calls("POST", CREATE)) == 1 and not sleeps and not vertex.jobs
    assert isinstance(err.value.__cause__, Exception)


def test_attempts_are_bounded(driver, vertex, sleeps):
    vertex.server.fail("POST", CREATE, *[Fault.http(503, "still down")] * 10)
    with pytest.raises(TransientBackendError, match="still down"):
        submit(driver, vertex, retry_attempts=3)
    assert len(vertex.server.calls("POST", CREATE)) == 3 and len(sleeps) == 2 and not vertex.jobs


def test_transient_failures_on_status_are_retried(driver, vertex):
    handle = submit(driver, vertex)
    vertex.server.fail("GET", r"/customJobs/\d+$", Fault.http(503), Fault.reset())
    assert handle.status().state is JobState.QUEUED


def test_submit_needs_a_project(driver, vertex):
    settings = VertexSettings(api_endpoint=vertex.url, credentials="anonymous")
    with pytest.raises(ConfigError, match="project"):
        driver.submit(driver.compile(JOB, settings), settings)
    assert not vertex.server.requests


def test_logs_without_cloud_logging(driver, vertex):
    handle = submit(driver, vertex)
    lines = list(handle.logs())
    assert lines[0] == f"console: {handle.url}" and "google-cloud-logging" in lines[1]
    followed = list(driver.logs(handle.id, conf(vertex, poll_interval_s=0.01), follow=True))
    assert followed[2:] == ["state: queued", "state: pending", "state: running", "state: succeeded"]


def live(vertex) -> list[str]:
    return [name for name, job in vertex.jobs.items() if "CANCEL" not in job["state"]]


def test_timed_out_create_that_lands_late_is_cancelled(driver, vertex, sleeps, caplog):
    # The first create is held past the client's timeout (0.2 s); a retry makes the job. While the
    # client settles, the held create makes its job at the third listing (events, not timings):
    # the client saw one job, waited, saw two, keeps the earliest and cancels the other at once.
    landed = threading.Event()

    def land_late() -> None:
        landed.set()
        deadline = time.monotonic() + 60  # a guard against hanging, not a budget
        while len(vertex.jobs) < 2 and time.monotonic() < deadline:  # the held create makes its job
            time.sleep(0.005)

    vertex.server.fail("POST", CREATE, Fault.held(landed))
    vertex.server.fail("GET", CREATE, Fault.slow(0), Fault.slow(0), Fault.hook(land_late))
    handle = submit(driver, vertex, request_timeout_s=0.2, create_settle_s=60.0)
    assert len(vertex.jobs) == 2 and live(vertex) == [handle.id]
    first, late = sorted(vertex.jobs.values(), key=lambda job: job["createTime"])
    assert handle.id == first["name"] and late["state"] == "JOB_STATE_CANCELLING"
    assert vertex.server.calls("POST", late["name"] + ":cancel")
    # the retry's lookup, a listing that found one job, a listing that found both; then no more
    assert len(vertex.server.calls("GET", CREATE)) == 3, "waits for the late job, then stops"
    assert len(sleeps) == 1, "settling is not a retry"
    assert f"kept {handle.id}" in caplog.text and f"cancelled {late['name']}" in caplog.text


def test_settling_is_bounded_and_says_so(driver, vertex, caplog):
    # The held create never lands while the client settles (0.3 s): it gives up and says so.
    release = threading.Event()
    vertex.server.fail("POST", CREATE, Fault.held(release))
    try:
        handle = submit(driver, vertex, request_timeout_s=0.2, create_settle_s=0.3)
        assert list(vertex.jobs) == [handle.id], "returned without waiting for the held create"
    finally:
        release.set()
    assert vertex.server.wait_idle()
    assert len(vertex.jobs) == 2 and handle.id in live(vertex), "the late job lands after the warning"
    assert "had not made its job" in caplog.text and "omnidist-request-id=req-1" in caplog.text


def test_create_after_a_reset_checks_the_label_once_more(driver, vertex, caplog):
    vertex.server.fail("POST", CREATE, Fault.reset())
    handle = submit(driver, vertex)
    assert live(vertex) == [handle.id]
    lookups = vertex.server.calls("GET", CREATE)
    assert len(lookups) == 2, "once before the re-create, once after it"
    assert "vertex:" not in caplog.text, "nothing to report when no duplicate appeared"


def test_duplicate_cancel_failure_is_reported_not_raised(driver, vertex, caplog):
    vertex.server.fail("POST", CREATE, Fault.slow(0.6))
    vertex.server.fail("POST", r":cancel$", *[Fault.http(403, "cannot cancel (perm-9)")])
    handle = submit(driver, vertex, request_timeout_s=0.2, create_settle_s=10.0)
    assert len(vertex.jobs) == 2 and handle.id in vertex.jobs
    assert "could not cancel the duplicate job" in caplog.text and "perm-9" in caplog.text


@pytest.mark.parametrize(("code", "message", "ended"), [
    (3, "The replica workerpool0-0 exited with a non-zero status of 1.", "failure"),
    (13, "The replica workerpool1-0 was preempted: its VM was reclaimed.", "preemption"),
    (8, "Resources are insufficient in region: us-central1.", "capacity"),
    (13, "Internal error occurred for the current attempt.", "node_failure"),
])
def test_how_a_failed_job_ended_is_read_from_its_error(driver, vertex, code, message, ended):
    vertex.fail_jobs(message)
    vertex.error_code = code
    final = submit(driver, vertex).wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and final.ended.value == ended


def test_success_and_cancellation_are_endings_too(driver, vertex):
    assert submit(driver, vertex).wait(poll_interval=0, sleep=lambda s: None).ended.value == "succeeded"
    vertex.keep_running()
    handle = submit(driver, vertex)
    assert handle.status().ended is None
    handle.cancel()
    assert handle.wait(poll_interval=0, sleep=lambda s: None).ended.value == "cancelled"
