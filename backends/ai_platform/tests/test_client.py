"""The real discovery client (googleapiclient, bundled ml v1 document) against a local fake service."""

from __future__ import annotations

import attrs
import pytest

import omnidist
from omnidist.kit import (
    ConfigError,
    ConflictError,
    InvalidRequestError,
    JobState,
    NotFoundError,
    PermissionDeniedError,
    TransientBackendError,
)
from omnidist.testing.fakeserver import Fault
from omnidist_ai_platform import AIPlatformBackend, AIPlatformSettings

JOB = {"name": "mnist-ddp", "framework": "pytorch", "image": "gcr.io/p/t:1", "command": ["python", "t.py"],
       "env": {"NCCL_DEBUG": "INFO"}, "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 2}}
CREATE = r"/v1/projects/proj/jobs$"


def compiled(**settings):
    return omnidist.compile(JOB, backend="ai_platform", settings=settings)


def test_create_get_cancel_through_the_discovery_client(backend, settings, service, server):
    service.keep_running()  # so cancel has something to do
    handle = backend.submit(compiled(), settings)
    assert handle.id == "mnist_ddp_s1"
    assert handle.url == "https://console.cloud.google.com/ai-platform/jobs/mnist_ddp_s1?project=proj"
    (create,) = server.calls("POST", CREATE)
    assert create.body["jobId"] == "mnist_ddp_s1"
    assert create.body["trainingInput"]["masterConfig"]["containerCommand"][:2] == ["env", "NCCL_DEBUG=INFO"]
    assert set(create.body["labels"]) == {"omnidist-request-id"}, "the submit's marker, among the job's labels"
    assert create.query == {"alt": ["json"]}
    assert handle.status().state is JobState.QUEUED
    assert handle.status().state is JobState.PENDING  # PREPARING
    handle.cancel()
    assert server.calls("POST", r"/jobs/mnist_ddp_s1:cancel$")
    assert handle.wait(poll_interval=0, sleep=lambda s: None).state is JobState.CANCELLED


def test_wait_ends_and_logs_say_where_the_lines_are(backend, settings, service):
    handle = backend.submit(compiled(), settings)
    seen = []
    final = handle.wait(poll_interval=0, sleep=lambda s: None, on_change=lambda s: seen.append(s.native_state))
    assert final.state is JobState.SUCCEEDED and seen == ["QUEUED", "PREPARING", "RUNNING", "SUCCEEDED"]
    lines = list(handle.logs())
    assert "console.cloud.google.com" in lines[0] and "Cloud Logging" in lines[0]
    assert lines[1] == "job state: SUCCEEDED"


def test_failed_job_carries_the_error_message(backend, settings, service):
    service.fail_jobs()
    handle = backend.submit(compiled(), settings)
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and "non-zero status" in final.message


def test_cancel_of_a_finished_job_is_a_no_op(backend, settings, service, server):
    handle = backend.submit(compiled(), settings)
    handle.wait(poll_interval=0, sleep=lambda s: None)
    handle.cancel()
    assert not server.calls("POST", r":cancel$")


@pytest.mark.parametrize("faults", [
    [Fault.http(429, "slow down", retry_after=2)],
    [Fault.http(503)],
    [Fault.reset()],
    [Fault.drop_after_create()],
    [Fault.http(503), Fault.drop_after_create(), Fault.reset()],
])
def test_retries_end_in_exactly_one_job(backend, settings, service, server, sleeps, faults):
    server.fail("POST", CREATE, *faults)
    handle = backend.submit(compiled(), settings)
    assert handle.id == "mnist_ddp_s1"
    assert list(service.jobs) == [("proj", "mnist_ddp_s1")]
    posts = server.calls("POST", CREATE)
    assert len(posts) == len(faults) + 1 and {p.body["jobId"] for p in posts} == {"mnist_ddp_s1"}
    assert len(sleeps) == len(faults)


def test_retry_after_is_honoured(backend, settings, service, server, sleeps):
    server.fail("POST", CREATE, Fault.http(429, "slow down", retry_after=2))
    backend.submit(compiled(), attrs.evolve(settings, retry_max_wait_s=10))
    assert sleeps == [2.0]


def test_dropped_response_then_409_fetches_the_existing_job(backend, settings, service, server):
    server.fail("POST", CREATE, Fault.drop_after_create())
    backend.submit(compiled(), settings)
    assert len(service.jobs) == 1
    assert server.calls("GET", r"/jobs/mnist_ddp_s1$")  # the 409 led to a get, not a second job


def test_create_closed_without_an_answer_is_resent_by_httplib2_and_ends_in_one_job(backend, settings, service,
                                                                                   server, sleeps):
    """The server makes the job, then closes the connection cleanly without answering: httplib2
    takes that for a stale connection and sends the create again by itself (omnidist sees no
    failure, so it neither waits nor retries); that second create gets 409 for the jobId. The
    job holding it carries this submit's marker, so the submit succeeds with it."""
    server.fail("POST", CREATE, Fault.close_after_create())
    handle = backend.submit(compiled(), settings)
    posts = server.calls("POST", CREATE)
    assert len(posts) == 2 and sleeps == [], "one re-send, by httplib2, not by omnidist's retry"
    assert posts[0].body == posts[1].body
    assert list(service.jobs) == [("proj", "mnist_ddp_s1")] and handle.id == "mnist_ddp_s1"
    marker = service.jobs["proj", "mnist_ddp_s1"]["labels"]["omnidist-request-id"]
    assert marker == posts[0].body["labels"]["omnidist-request-id"]
    assert len(server.calls("GET", r"/jobs/mnist_ddp_s1$")) == 1, "the 409 fetched the job to check its marker"
    assert handle.status().native_state == "PREPARING", "the handle follows that job (QUEUED on the first get)"


@pytest.mark.parametrize("pinned", [False, True])
def test_a_taken_job_id_this_submit_did_not_make_is_a_conflict(backend, settings, service, server, pinned):
    """A 409 whose job carries another marker (or none) is someone else's job: never adopted."""
    job_id = "taken" if pinned else "mnist_ddp_s1"
    service.jobs["proj", job_id] = {"jobId": job_id, "state": "RUNNING", "labels": {"omnidist-request-id": "other"}}
    settings = attrs.evolve(settings, job_id="taken") if pinned else settings
    with pytest.raises(ConflictError) as err:
        backend.submit(compiled(**({"job_id": "taken"} if pinned else {})), settings)
    assert f"{job_id!r} already exists" in str(err.value) and "this submit did not make it" in str(err.value)
    assert ("job_id" if pinned else "submit again for a new suffix") in str(err.value)
    assert len(service.jobs) == 1 and service.jobs["proj", job_id]["labels"] == {"omnidist-request-id": "other"}


def test_first_attempt_409_with_a_pinned_id_is_a_conflict(backend, settings, service):
    pinned = attrs.evolve(settings, job_id="taken")
    backend.submit(compiled(job_id="taken"), pinned)
    with pytest.raises(ConflictError) as err:
        backend.submit(compiled(job_id="taken"), pinned)
    assert "'taken' already exists" in str(err.value) and "job_id" in str(err.value)
    assert len(service.jobs) == 1


@pytest.mark.parametrize(("status", "error"), [(400, InvalidRequestError), (403, PermissionDeniedError),
                                               (404, NotFoundError)])
def test_final_errors_fail_fast_with_the_servers_message(backend, settings, service, server, sleeps, status, error):
    server.fail("POST", CREATE, Fault.http(status, f"Field: job.training_input Error: nope {status}"))
    with pytest.raises(error) as err:
        backend.submit(compiled(), settings)
    assert f"nope {status}" in str(err.value) and err.value.status == status
    assert len(server.calls("POST", CREATE)) == 1 and sleeps == []


def test_fake_rejects_fields_the_schema_does_not_define(backend, settings, service):
    bad = attrs.evolve(compiled(), request={"jobId": "x", "trainingInput": {"masterEnv": {"A": "1"}}})
    with pytest.raises(InvalidRequestError, match="trainingInput.masterEnv"):
        AIPlatformBackend(suffix=lambda: "1").submit(bad, settings)


def test_transient_errors_give_up_after_the_policy(backend, settings, service, server, sleeps):
    server.fail("GET", r"/jobs/", *[Fault.http(503, "backend down")] * 3)
    with pytest.raises(TransientBackendError, match="backend down"):
        backend.status("anything", attrs.evolve(settings, retry_attempts=3))
    assert len(sleeps) == 2


def test_unknown_job_and_unreachable_endpoint(backend, settings, service):
    with pytest.raises(NotFoundError, match="was not found"):
        backend.status("nope", settings)
    dead = attrs.evolve(settings, api_endpoint="http://127.0.0.1:1", retry_attempts=2)
    with pytest.raises(TransientBackendError, match="connection failed"):
        backend.status("x", dead)


def test_project_is_required_to_talk_to_the_service(backend, server):
    with pytest.raises(ConfigError, match="project"):
        backend.status("x", AIPlatformSettings(api_endpoint=server.url, credentials="anonymous"))


def test_status_accepts_a_full_resource_name(backend, settings, service):
    handle = backend.submit(compiled(), settings)
    assert backend.status(f"projects/proj/jobs/{handle.id}", settings).state is JobState.QUEUED


@pytest.mark.parametrize(("message", "ended"), [
    ("The replica master 0 exited with a non-zero status of 1.", "failure"),
    ("The replica worker 1 was preempted.", "preemption"),
    ("RESOURCE_EXHAUSTED: Resources are insufficient in region us-central1.", "capacity"),
])
def test_how_a_failed_job_ended_is_read_from_its_error_message(backend, settings, service, message, ended):
    service.fail_jobs(message)
    final = backend.submit(compiled(), settings).wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and final.ended.value == ended
