"""The client template (omnidist/clients.py) and the fake-service base class
(omnidist/testing/fakeservice.py), driven through a toy cloud: a FakeService with one job API,
and a client whose "SDK" is the standard library's urllib, so the template's retries,
exactly-once creates, cancel rule, masking and log following are checked apart from any cloud.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import socket
import urllib.error
import urllib.request
from typing import Any, ClassVar, Optional

import attrs
import pytest

from omnidist.backend.contract import Capabilities, Imports
from omnidist.backend.settings import ClientSettings
from omnidist.backend.values import CompiledJob, JobState, JobStatus
from omnidist.errors import (
    BackendError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    ShortageError,
    TransientBackendError,
    error_for_status,
)
from omnidist.model.roles import RoleName
from omnidist.secrets import MASK
from omnidist.submission import retry
from omnidist.submission.clients import (
    REQUEST_ID_LABEL,
    Idempotency,
    Keyed,
    LogPage,
    LogStart,
    ReadsLogs,
    ReportsShortage,
    Shortage,
    StagesCode,
    labelled,
    shortage_in,
)
from omnidist.submission.cloud import CloudBackend
from omnidist.testing import FakeServer, FakeService, Fault, Recorded, Response, SleepRecorder
from omnidist.testing.fakeserver import error_body

SECRET = "sk-live-0123456789"
REQUEST = {"name": "toy", "env": {"API_KEY": SECRET}}


class ToyCloud(FakeService):
    """Jobs under ``/jobs``: the server names a POSTed job unless it brings an ``id`` (409 when
    taken); a PUT names it (idempotent); ``?key=`` lists by label; a log of one line per step."""

    ROUTES = {
        "create": ("POST", r"^/jobs$"),
        "put": ("PUT", r"^/jobs/(?P<id>[^/:]+)$"),
        "list": ("GET", r"^/jobs$"),
        "get": ("GET", r"^/jobs/(?P<id>[^/:]+)$"),
        "cancel": ("POST", r"^/jobs/(?P<id>[^/:]+):cancel$"),
        "log": ("GET", r"^/jobs/(?P<id>[^/:]+)/log$"),
    }
    TIMELINE = ("QUEUED", "RUNNING", "DONE")
    TERMINAL = frozenset({"DONE", "FAILED", "CANCELLED"})

    def __init__(self, server: FakeServer) -> None:
        self._ids = itertools.count(1)
        self.lines: dict[str, list[str]] = {}
        super().__init__(server)

    def _new(self, job_id: str, body: dict[str, Any]) -> Response:
        return Response(200, self.add(job_id, {**body, "id": job_id, "made": next(self._ids)}))

    def on_create(self, record: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            job_id = record.body.get("id") or f"j{len(self.jobs) + 1}"
            if job_id in self.jobs:
                return Response(409, error_body(409, f"job {job_id} exists"))
            return self._new(job_id, record.body)

    def on_put(self, record: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            if match["id"] in self.jobs:
                return Response(200, self.jobs[match["id"]])
            return self._new(match["id"], record.body)

    def on_list(self, record: Recorded, match: re.Match[str]) -> Response:
        key = record.query["key"][0]
        with self.lock:
            found = [job for job in self.jobs.values() if job["labels"][REQUEST_ID_LABEL] == key]
            return Response(200, found)

    def on_get(self, record: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            job = self.jobs.get(match["id"])
            if job is None:
                return Response(404, error_body(404, f"no job {match['id']}"))
            answer = {**job, "error": self.error_message} if self.state(job) == self.FAILED else dict(job)
            self.advance(match["id"])
            return Response(200, answer)

    def on_cancel(self, record: Recorded, match: re.Match[str]) -> Response:
        with self.lock:
            if not self.cancelled(match["id"]):
                return Response(400, error_body(400, f"job {match['id']} has ended"))
            return Response(200, {})

    def on_log(self, record: Recorded, match: re.Match[str]) -> Response:
        start = int(record.query["from"][0])
        with self.lock:
            page = {"state": self.state(self.jobs[match["id"]]), "lines": self.lines[match["id"]][start:]}
            self.advance(match["id"])
            return Response(200, page)

    def stepped(self, key: Any, job: dict[str, Any]) -> None:
        self.lines.setdefault(key, []).append(f"{self.state(job).lower()} with {job['env']['API_KEY']}")


@attrs.frozen(kw_only=True)
class ToySettings(ClientSettings):
    endpoint: str = ""
    chosen_id: Optional[str] = None
    create_settle_s: float = 30.0


class ToyClient(ReadsLogs[dict], ReportsShortage[dict]):
    """The toy cloud's client; :attr:`idempotency` is set per test."""

    idempotency: ClassVar[Idempotency] = Idempotency.LABEL
    STATES: ClassVar[dict[str, JobState]] = {
        "QUEUED": JobState.QUEUED, "RUNNING": JobState.RUNNING, "DONE": JobState.SUCCEEDED,
        "FAILED": JobState.FAILED, "CANCELLING": JobState.CANCELLING, "CANCELLED": JobState.CANCELLED}

    def _http(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.settings.endpoint + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=self.settings.request_timeout_s) as response:
            return json.loads(response.read() or b"null")

    def translate(self, exc: BaseException) -> Optional[BackendError]:
        if isinstance(exc, urllib.error.HTTPError):
            message = json.loads(exc.read() or b"{}").get("error", {}).get("message", str(exc))
            after = retry.parse_retry_after(exc.headers.get("Retry-After"))
            return error_for_status(exc.code)(message, backend="toy", status=exc.code, retry_after=after)
        if isinstance(exc, (urllib.error.URLError, ConnectionError, TimeoutError)):
            return TransientBackendError(f"connection failed: {exc}", backend="toy")
        return None

    @property
    def settle_s(self) -> float:
        return self.settings.create_settle_s

    def timed_out(self, exc: BaseException) -> bool:
        return isinstance(exc, (TimeoutError, socket.timeout)) or isinstance(
            getattr(exc, "reason", None), (TimeoutError, socket.timeout))

    def keyed(self, compiled: CompiledJob) -> Keyed:
        if self.idempotency is Idempotency.NAME:
            name = f"{compiled.request['name']}-{self.suffix()}"
            return Keyed(request=labelled({**compiled.request, "id": name}, name), key=name)
        key = self.request_id()
        body = labelled(compiled.request, key)
        if self.idempotency is Idempotency.CHOSEN_ID:
            body["id"] = self.settings.chosen_id or f"{compiled.request['name']}-{self.suffix()}"
        return Keyed(request=body, key=key)

    def create_job(self, keyed: Keyed) -> dict:
        if self.idempotency is Idempotency.NAME:
            return self._http("PUT", f"/jobs/{keyed.key}", keyed.request)
        return self._http("POST", "/jobs", keyed.request)

    def find_jobs(self, keyed: Keyed) -> list[dict]:
        if self.idempotency is Idempotency.LABEL:
            return sorted(self._http("GET", f"/jobs?key={keyed.key}"), key=lambda job: job["made"])
        job = self.get_job(keyed.request["id"])
        return [job] if job["labels"][REQUEST_ID_LABEL] == keyed.key else []

    def get_job(self, job_id: str) -> dict:
        return self._http("GET", f"/jobs/{job_id}")

    def cancel_job(self, job_id: str) -> None:
        self._http("POST", f"/jobs/{job_id}:cancel", {})

    def status_of(self, job: dict) -> JobStatus:
        return JobStatus(state=self.STATES[job["state"]], native_state=job["state"],
                         message=job.get("error", ""))

    def id_of(self, keyed: Keyed, job: dict) -> str:
        return job["id"]

    def open_logs(self, job_id: str) -> LogStart:
        job = self.call(lambda: self.get_job(job_id))
        return LogStart(header=(f"logs of {job_id}",), secrets=self.secrets_of(job), cursor=0)

    def read_logs(self, job_id: str, cursor: Any, *, follow: bool) -> LogPage:
        page = self.call(lambda: self._http("GET", f"/jobs/{job_id}/log?from={cursor}"))
        status = JobStatus(state=self.STATES[page["state"]], native_state=page["state"])
        return LogPage(status=status, lines=page["lines"], cursor=cursor + len(page["lines"]))


class ToyBackend(Imports, CloudBackend):
    name = "toy"
    capabilities = Capabilities(roles=frozenset({RoleName.PRIMARY}))
    settings_type = ToySettings
    client = ToyClient

    def compile(self, job, settings):
        raise NotImplementedError

    def import_native(self, request):
        raise NotImplementedError

    def console_url(self, job_id, settings):
        return f"https://toy.example/{job_id}"


@pytest.fixture
def toy():
    with FakeServer() as server:
        yield ToyCloud(server)


@pytest.fixture
def sleeps():
    return SleepRecorder()


@pytest.fixture
def backend(sleeps):
    ids = (f"req{n}" for n in itertools.count(1))
    suffixes = (f"s{n}" for n in itertools.count(1))
    return ToyBackend(request_id=lambda: next(ids), suffix=lambda: next(suffixes), sleep=sleeps)


def settings(toy, **overrides) -> ToySettings:
    return ToySettings(endpoint=toy.url, retry_attempts=4, **overrides)


def submit(backend, toy, idempotency=Idempotency.LABEL, **overrides):
    ToyClient.idempotency = idempotency
    try:
        return backend.submit(CompiledJob(backend="toy", request=REQUEST), settings(toy, **overrides))
    finally:
        ToyClient.idempotency = Idempotency.LABEL


def live(toy) -> list[str]:
    return [job_id for job_id, job in toy.jobs.items() if "CANCEL" not in toy.state(job)]


# --- retries -----------------------------------------------------------------------------------------

def test_a_throttled_create_waits_what_the_server_says_then_makes_one_job(backend, toy, sleeps):
    toy.fail("create", Fault.http(429, "slow down", retry_after=3))
    handle = submit(backend, toy)
    assert sleeps == [3.0] and live(toy) == [handle.id] and len(toy.calls("create")) == 2
    assert handle.url == f"https://toy.example/{handle.id}", "the console URL when the cloud gives none"
    assert not toy.calls("list"), "an answered 429 made nothing: no lookup"


def test_final_errors_are_not_retried_and_quote_the_server_with_secrets_masked(backend, toy, sleeps):
    toy.fail("create", Fault.http(400, f"bad env API_KEY={SECRET}"))
    with pytest.raises(InvalidRequestError) as err:
        submit(backend, toy)
    assert f"API_KEY={MASK}" in str(err.value) and SECRET not in str(err.value) and err.value.status == 400
    assert sleeps == [] and toy.jobs == {}


def test_attempts_are_bounded(backend, toy, sleeps):
    toy.fail("create", *[Fault.http(503, "down")] * 9)
    with pytest.raises(TransientBackendError, match="down"):
        submit(backend, toy)
    assert len(toy.calls("create")) == 4 and len(sleeps) == 3


# --- exactly once, per idempotency style ---------------------------------------------------------------

@pytest.mark.parametrize("fault", [Fault.drop_after_create(), Fault.close_after_create()],
                         ids=["reset", "closed"])
def test_label_an_unanswered_create_is_found_by_its_label(backend, toy, fault):
    toy.fail("create", fault)
    handle = submit(backend, toy)
    assert live(toy) == [handle.id] and len(toy.calls("create")) == 1
    (lookup,) = toy.calls("list")  # before creating again: found
    assert lookup.query == {"key": ["req1"]}


def test_label_a_create_after_a_reset_looks_once_more_for_a_duplicate(backend, toy):
    toy.fail("create", Fault.reset())
    handle = submit(backend, toy)
    assert live(toy) == [handle.id] and len(toy.calls("create")) == 2
    assert len(toy.calls("list")) == 2, "once before the create, once after it"


def test_label_a_timed_out_create_that_lands_late_is_cancelled(backend, toy, caplog):
    toy.fail("create", Fault.slow(0.6))
    with caplog.at_level(logging.WARNING):
        handle = submit(backend, toy, request_timeout_s=0.2, create_settle_s=10.0)
    first, late = sorted(toy.jobs.values(), key=lambda job: job["made"])
    assert handle.id == first["id"] and live(toy) == [first["id"]] and toy.state(late) == "CANCELLING"
    assert f"kept {first['id']}" in caplog.text and f"cancelled {late['id']}" in caplog.text


def test_chosen_id_a_409_for_this_submits_job_adopts_it(backend, toy, sleeps):
    toy.fail("create", Fault.drop_after_create())
    handle = submit(backend, toy, Idempotency.CHOSEN_ID)
    assert handle.id == "toy-s1" and list(toy.jobs) == ["toy-s1"]
    assert len(toy.calls("create")) == 2 and len(toy.calls("get")) == 1, "the 409 fetched the job's marker"


def test_chosen_id_held_by_another_job_is_a_conflict(backend, toy):
    submit(backend, toy, Idempotency.CHOSEN_ID, chosen_id="taken")
    with pytest.raises(ConflictError, match="this submit did not make it"):
        submit(backend, toy, Idempotency.CHOSEN_ID, chosen_id="taken")
    assert list(toy.jobs) == ["taken"]


@pytest.mark.parametrize("fault, puts", [(Fault.drop_after_create(), 1), (Fault.http(503), 2)],
                         ids=["dropped", "503"])
def test_name_every_repeat_looks_the_name_up_first(backend, toy, fault, puts):
    toy.fail("put", fault)
    handle = submit(backend, toy, Idempotency.NAME)
    assert handle.id == "toy-s1" and list(toy.jobs) == ["toy-s1"]
    assert len(toy.calls("put")) == puts and len(toy.calls("get")) == 1


def test_every_submit_has_its_own_key(backend, toy):
    submit(backend, toy)
    submit(backend, toy)
    assert len(live(toy)) == 2


# --- status, cancel, masking ---------------------------------------------------------------------------

def test_status_masks_what_a_failed_job_repeats(backend, toy):
    toy.fail_jobs(f"crashed: API_KEY={SECRET}")
    handle = submit(backend, toy)
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and final.message == f"crashed: API_KEY={MASK}"


def test_cancel_only_while_unfinished(backend, toy):
    toy.keep_running()
    handle = submit(backend, toy)
    handle.cancel()
    assert [s.state for s in (handle.status(), handle.status())] == [JobState.CANCELLING, JobState.CANCELLED]
    handle.cancel()
    assert len(toy.calls("cancel")) == 1


def test_a_cancel_refused_because_the_job_just_ended_is_no_error(backend, toy):
    handle = submit(backend, toy)
    assert handle.status().state is JobState.QUEUED
    toy.fail("cancel", Fault.http(400, "it has ended"))
    handle.cancel()  # running when read; the refusal is checked by reading the job again: done
    assert len(toy.calls("cancel")) == 1 and handle.status().state is JobState.SUCCEEDED


def test_a_refused_cancel_of_a_running_job_is_raised(backend, toy):
    toy.keep_running()
    handle = submit(backend, toy)
    toy.fail("cancel", Fault.http(400, "not now"))
    with pytest.raises(InvalidRequestError, match="not now"):
        handle.cancel()


# --- logs ----------------------------------------------------------------------------------------------

def test_logs_follow_pages_from_a_cursor_framed_by_states_and_masked(backend, toy, sleeps):
    handle = submit(backend, toy)
    lines = list(handle.logs(follow=True))
    assert lines == [f"logs of {handle.id}", "state: running", f"queued with {MASK}", f"running with {MASK}",
                     f"done with {MASK}", "state: succeeded"]
    assert [r.query["from"] for r in toy.calls("log")] == [["0"], ["2"]] and sleeps == [15.0]


def test_logs_without_follow_read_one_page(backend, toy, sleeps):
    handle = submit(backend, toy)
    assert list(handle.logs()) == [f"logs of {handle.id}", "state: running", f"queued with {MASK}",
                                   f"running with {MASK}"]
    assert sleeps == []


def test_a_failed_page_is_retried_without_repeating_lines(backend, toy, sleeps):
    handle = submit(backend, toy)
    toy.fail("log", Fault.reset())
    lines = list(handle.logs(follow=True))
    assert lines.count(f"queued with {MASK}") == 1 and lines[-1] == "state: succeeded"


# --- the base class and the backend --------------------------------------------------------------------

def test_a_backend_without_a_client_cannot_submit():
    class Offline(ToyBackend):
        name = "offline"
        client = None

    with pytest.raises(BackendError, match="talks to no cloud"):
        Offline().status("x", ToySettings())


def test_prepare_runs_once_before_the_create(backend, toy):
    prepared = []

    class Uploading(StagesCode[dict], ToyClient):
        def prepare(self, compiled):
            prepared.append(len(toy.calls("create")))
            return attrs.evolve(compiled, request={**compiled.request, "code": "gs://b/code.tar.gz"})

    backend.client = Uploading
    toy.fail("create", Fault.http(503))
    handle = submit(backend, toy)
    assert prepared == [0] and toy.jobs[handle.id]["code"] == "gs://b/code.tar.gz"


def test_fake_service_timeline_and_faults(toy):
    toy.add("a", {"env": {"API_KEY": SECRET}})
    assert toy.state(toy.jobs["a"]) == "QUEUED" and toy.steps("a") == 0
    toy.advance("a"), toy.advance("a"), toy.advance("a")
    assert toy.state(toy.jobs["a"]) == "DONE" and toy.steps("a") == 2 and not toy.cancelled("a")
    toy.keep_running()
    assert toy.timeline == ["QUEUED", "RUNNING"]
    toy.fail_jobs("boom")
    assert toy.timeline == ["QUEUED", "RUNNING", "FAILED"] and toy.error_message == "boom"
    toy.reset()
    assert toy.jobs == {} and toy.timeline == list(ToyCloud.TIMELINE) and toy.server.requests == []


def test_not_found_propagates_from_status(backend, toy):
    with pytest.raises(NotFoundError, match="no job nope"):
        backend.status("nope", settings(toy))


# --- refusals for quota or capacity (placement moves on; never retried in place) ---------------------

@pytest.mark.parametrize("text, expected", [
    ("The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus",
     Shortage.QUOTA),
    ("Quota exceeded for quota metric 'Create requests' and limit 'Create requests per minute per region'", None),
    ("Resources are insufficient in region: us-central1", Shortage.CAPACITY),
    ("CapacityError: Unable to provision requested ML compute capacity.", Shortage.CAPACITY),
    ("Rate exceeded", None),
    ("Invalid value at 'job.labels'", None),
    ("exceeding approved LowPriorityCores quota. Current Limit: 100", Shortage.QUOTA),
])
def test_the_words_of_a_shortage_are_told_from_a_request_rate(text, expected):
    assert shortage_in(text) == expected


@pytest.mark.parametrize("idempotency", list(Idempotency))
def test_a_quota_refusal_is_raised_as_a_shortage_and_not_retried(backend, toy, sleeps, idempotency):
    toy.fail("create", Fault.http(429, f"The following quota metrics exceed quota limits: gpus (API_KEY={SECRET})"))
    toy.fail("put", Fault.http(429, f"The following quota metrics exceed quota limits: gpus (API_KEY={SECRET})"))
    with pytest.raises(ShortageError) as caught:
        submit(backend, toy, idempotency)
    assert caught.value.shortage == "quota" and caught.value.status == 429
    assert SECRET not in str(caught.value) and MASK in str(caught.value)
    assert sleeps == [] and toy.jobs == {}
    assert len(toy.calls("create")) + len(toy.calls("put")) == 1


def test_a_capacity_refusal_is_a_shortage_but_a_5xx_is_retried(backend, toy, sleeps):
    toy.fail("create", Fault.http(503, "no capacity right now, try again"))
    assert submit(backend, toy).id and len(sleeps) == 1, "a 503 is transient whatever it says"
    toy.fail("create", Fault.http(400, "Resources are insufficient in region: toy-1"))
    with pytest.raises(ShortageError, match="Resources are insufficient") as caught:
        submit(backend, toy)
    assert caught.value.shortage == "capacity"


def test_a_rate_limit_with_retry_after_is_retried_even_when_it_says_quota(backend, toy, sleeps):
    toy.fail("create", Fault.http(429, "Quota exceeded: too many jobs", retry_after=2))
    assert submit(backend, toy).id and sleeps == [2.0]


def test_a_queued_job_that_failed_for_quota_is_a_shortage_by_default(backend, toy):
    client = backend.connect(settings(toy))
    failed = JobStatus(state=JobState.FAILED, message="Training failed with: code: 8 message: The following quota "
                                                      "metrics exceed quota limits: custom_model_training_cpus")
    found = client.queued_shortage("j1", failed)
    assert isinstance(found, ShortageError) and found.shortage == "quota" and found.backend == "toy"
    assert client.queued_shortage("j1", JobStatus(state=JobState.QUEUED)) is None
    assert client.queued_shortage("j1", JobStatus(state=JobState.FAILED, message="exit code 1")) is None
