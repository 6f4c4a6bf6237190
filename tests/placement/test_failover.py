"""Placement across profiles, end to end: every cloud backend's real SDK client against its fake
service, profiles in an ``omnidist.toml``, refusals and slow queues injected on the fakes, and the
job ledger read back after each placement (SPEC §12)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from omnidist import errors
from omnidist.placement import failover
from omnidist.submission import ledger
from omnidist.testing import FakeServer, FakeService, Fault
from omnidist.testing.cli import run_cli
from omnidist.testing.harness import harness

JOB: dict[str, Any] = {
    "name": "placed-ddp",
    "framework": "pytorch",
    "image": "us-docker.pkg.dev/p/trainers/ddp:1.0",
    "command": ["python", "-m", "trainer.task"],
    "primary": {"accelerator": "T4:1"},
    "workers": {"replicas": 1},
}
"""A job every cloud backend compiles."""

PROFILES = {"vtx": "vertex", "aip": "ai_platform", "aml": "azure_ml", "k8s": "kubernetes", "sm": "sagemaker"}
"""Profile -> backend, one per cloud."""

EXTRA = {"aml": {"region": "eastus"}, "k8s": {"gke_region": "us-central1"}}
FAST = {"retry_attempts": 3, "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05, "poll_interval_s": 0.0}

REFUSALS: dict[str, Fault] = {
    "vtx": Fault.http(429, "The following quota metrics exceed quota limits: "
                           "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"),
    "aip": Fault.http(429, "Quota failure for project proj. The request for 2 T4 accelerators exceeds the allowed "
                           "maximum of 0 A100, 0 K80, 0 P100, 0 P4, 0 T4, 0 TPU_V2, 0 TPU_V3, 0 V100 accelerators."),
    "aml": Fault.http(400, "The specified subscription has a Standard NCASv3_T4 Family vCPU quota of 0 and is less "
                           "than the requested job node count", code="QuotaExceeded"),
    "k8s": Fault.http(403, 'pytorchjobs.kubeflow.org "placed-ddp" is forbidden: exceeded quota: gpus, requested: '
                           "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: "
                           "requests.nvidia.com/gpu=1"),
    "sm": Fault.http(400, "The account-level service limit 'ml.g4dn.xlarge for training job usage' is 0 Instances, "
                          "with current utilization of 0 Instances and a request delta of 2 Instances. Please use "
                          "AWS Service Quotas to request an increase for this quota.", code="ResourceLimitExceeded"),
}
"""Each cloud's own quota refusal at create, in its own words (docs/placement.md)."""


@attrs.define
class Fake:
    """One cloud's fake service and how to count its jobs."""

    server: FakeServer
    service: FakeService

    def creates(self) -> int:
        return len(self.service.calls("create"))

    def live(self) -> int:
        """Jobs that exist and were not cancelled."""
        gone = {self.service.CANCELLING, self.service.CANCELLED}
        return sum(1 for job in self.service.jobs.values() if self.service.state(job) not in gone)

    def refuse(self, profile: str) -> None:
        self.server.fail(*self.service.ROUTES["create"], REFUSALS[profile])


def _toml(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


@pytest.fixture
def clouds(tmp_path, monkeypatch) -> Iterator[dict[str, Fake]]:
    """A fake service per cloud and an ``omnidist.toml`` with a profile on each (and two groups)."""
    servers = {name: FakeServer().__enter__() for name in PROFILES}
    try:
        fakes = {name: Fake(server, harness(PROFILES[name]).service(server)) for name, server in servers.items()}
        lines = []
        for name, backend in PROFILES.items():
            settings = {**harness(backend).settings(servers[name].url), **FAST, **EXTRA.get(name, {})}
            lines.append(f"[profiles.{name}]\nbackend = \"{backend}\"")
            lines += [f"{key} = {_toml(value)}" for key, value in settings.items()]
        lines.append('[groups.everywhere]\nprofiles = ["vtx", "aip", "aml", "k8s", "sm"]')
        (tmp_path / "omnidist.toml").write_text("\n".join(lines) + "\n")
        (tmp_path / "job.json").write_text(json.dumps(JOB))
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("OMNIDIST_PROFILE", raising=False)
        # azure-ai-ml names the cloud of the last MLClient in this process's environment (restored after)
        monkeypatch.setenv("AZUREML_CURRENT_CLOUD", "AzureCloud")
        yield fakes
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)


@attrs.define
class Clock:
    """A clock that moves only when the placement sleeps (at least a minute a time)."""

    now: float = 0.0
    sleeps: list[float] = attrs.Factory(list)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(seconds, 60.0)  # a poll a minute: few polls, however long the wait

    def __call__(self) -> float:
        return self.now


def cli(*args: str) -> Any:
    """``omnidist ARGS`` in a subprocess, not inheriting the Azure cloud an in-process client named."""
    return run_cli(*args, env={"AZUREML_CURRENT_CLOUD": "AzureCloud"})


def place(profile: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    lines: list[str] = []
    clock = Clock()
    handle = failover.submit(JOB, profile=profile, say=lines.append,
                             waits=failover.Waits(sleep=clock.sleep, clock=clock, confirm_s=30), **kwargs)
    return handle, lines


def records() -> list[ledger.JobRecord]:
    return list(reversed(ledger.Ledger.default().records()))


def test_a_quota_refusal_moves_to_the_next_profile_and_every_attempt_is_recorded(clouds):
    clouds["vtx"].refuse("vtx")
    handle, lines = place("vtx,aml")
    assert handle.backend == "azure_ml" and clouds["aml"].live() == 1
    assert clouds["vtx"].creates() == 1 and clouds["vtx"].live() == 0, "a quota refusal is not retried in place"
    assert "vtx (vertex): refused — quota: The following quota metrics exceed quota limits" in lines[0]
    assert lines[1].startswith(f"placement: aml (azure_ml): created {handle.id}")
    first, second = records()
    assert (first.profile, first.state, first.id) == ("vtx", "refused", None)
    assert "custom_model_training_nvidia_t4_gpus" in first.reason
    assert (second.profile, second.state, second.id, second.region) == ("aml", "submitted", handle.id, "eastus")
    assert first.placement == second.placement and (first.attempt, second.attempt) == (1, 2)


@pytest.mark.parametrize("profile", sorted(REFUSALS))
def test_each_cloud_classifies_its_own_quota_refusal(clouds, profile):
    clouds[profile].refuse(profile)
    other = "aml" if profile != "aml" else "vtx"
    handle, lines = place(f"{profile},{other}")
    assert handle.backend == PROFILES[other]
    assert clouds[profile].creates() == 1 and clouds[profile].live() == 0
    assert "refused — quota:" in lines[0]


def test_all_refuse_exits_1_with_every_reason_and_no_job_anywhere(clouds):
    for name, fake in clouds.items():
        fake.refuse(name)
    done = cli("submit", "job.json", "--profile", "everywhere")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    for words in ("custom_model_training_nvidia_t4_gpus", "Quota failure for project", "Family vCPU quota of 0",
                  "exceeded quota: gpus", "account-level service limit"):
        assert done.stderr.count(words) >= 2, f"{words!r} is printed as it happens and in the final error"
    assert "no profile took job 'placed-ddp' (5 tried; no job is left running)" in done.stderr
    assert [fake.live() for fake in clouds.values()] == [0, 0, 0, 0, 0]
    assert [fake.creates() for fake in clouds.values()] == [1, 1, 1, 1, 1]


def test_a_request_rate_limit_is_retried_in_place_not_moved(clouds):
    clouds["vtx"].server.fail(*clouds["vtx"].service.ROUTES["create"],
                              Fault.http(429, "Quota exceeded for quota metric 'Create requests' and limit "
                                              "'Create requests per minute per region'", retry_after=0))
    handle, lines = place("vtx,aml")
    assert handle.backend == "vertex" and clouds["vtx"].creates() == 2 and clouds["aml"].creates() == 0
    assert lines == [f"placement: vtx (vertex): created {handle.id}"]


def test_a_non_quota_error_does_not_fail_over(clouds):
    clouds["vtx"].server.fail(*clouds["vtx"].service.ROUTES["create"],
                              Fault.http(400, "Invalid value at 'custom_job.labels' (bad-label-7)"))
    with pytest.raises(errors.InvalidRequestError, match="bad-label-7"):
        place("vtx,aml")
    assert clouds["aml"].creates() == 0 and clouds["vtx"].live() == 0
    (only,) = records()
    assert (only.state, only.profile) == ("error", "vtx") and "bad-label-7" in only.reason


def test_a_profile_that_cannot_express_the_job_is_skipped_saying_why(clouds):
    job = {**JOB, "evaluators": {"replicas": 1}}  # Azure ML has no evaluator role
    lines: list[str] = []
    handle = failover.submit(job, profile="aml,vtx", say=lines.append)
    assert handle.backend == "vertex" and clouds["aml"].creates() == 0
    assert "aml (azure_ml): skipped — azure_ml cannot express evaluators" in lines[0]
    skipped, created = records()
    assert skipped.state == "skipped" and "evaluators" in skipped.reason and created.state == "submitted"


def test_every_profile_skipped_is_exit_3_like_compile(clouds):
    job = {**JOB, "reduction_servers": {"replicas": 1}}
    with pytest.raises(errors.PlacementError) as caught:
        failover.submit(job, profile="aml,k8s", say=lambda _: None)
    assert caught.value.exit_code == 3 and len(caught.value.attempts) == 2


def test_a_job_queued_too_long_is_cancelled_and_confirmed_ended_before_the_next_create(clouds):
    vertex, azure = clouds["vtx"], clouds["aml"]
    vertex.service.timeline = ["JOB_STATE_QUEUED"]  # it never starts
    seen: list[list[str]] = []
    azure.server.fail(*azure.service.ROUTES["create"],
                      Fault.hook(lambda: seen.append([vertex.service.state(j) for j in vertex.service.jobs.values()])))
    handle, lines = place("vtx,aml", max_queue="10m")
    assert handle.backend == "azure_ml"
    assert seen == [["JOB_STATE_CANCELLED"]], "the first job had ended before the second create"
    assert "vtx (vertex): refused — still queued after --max-queue 10m; cancelled" in lines[1]
    first = records()[0]
    assert first.state == "refused" and first.id is not None and "max-queue" in first.reason


def test_a_queued_job_the_cloud_says_lacks_capacity_moves_on(clouds):
    vertex = clouds["vtx"]
    vertex.service.timeline = ["JOB_STATE_QUEUED", "JOB_STATE_FAILED"]
    vertex.service.error_message = "Resources are insufficient in region: us-central1. Please try a different region."
    handle, lines = place("vtx,aml", max_queue="1h")
    assert handle.backend == "azure_ml"
    assert "refused — capacity: Resources are insufficient in region: us-central1" in lines[1]


def test_a_sagemaker_job_failed_for_capacity_moves_on(clouds):
    sagemaker = clouds["sm"]
    sagemaker.service.timeline = ["InProgress/Starting", "Failed/Failed"]
    sagemaker.service.error_message = ("CapacityError: Unable to provision requested ML compute capacity. "
                                       "Please retry using a different ML instance type.")
    handle, lines = place("sm,aml", max_queue="1h")
    assert handle.backend == "azure_ml"
    assert "refused — capacity: CapacityError: Unable to provision" in lines[1]
    first, second = records()
    assert (first.profile, first.state) == ("sm", "refused") and first.id


def test_unschedulable_pods_are_a_capacity_refusal_on_kubernetes(clouds):
    k8s = clouds["k8s"]
    k8s.service.unschedulable("0/6 nodes are available: 6 Insufficient nvidia.com/gpu.")
    handle, lines = place("k8s,vtx", max_queue="1h")
    assert handle.backend == "vertex"
    assert "k8s (kubernetes): refused — capacity: pod" in lines[1] and "Insufficient nvidia.com/gpu" in lines[1]
    assert k8s.live() == 0


def test_a_cancelled_job_that_does_not_end_stops_the_placement(clouds):
    vertex = clouds["vtx"]
    vertex.service.timeline = ["JOB_STATE_QUEUED"]
    vertex.service.CANCELLED = "JOB_STATE_CANCELLING"  # it stays cancelling forever
    with pytest.raises(errors.PlacementError, match="did not end within 30 s of its cancel"):
        place("vtx,aml", max_queue="5m")
    assert clouds["aml"].creates() == 0


def test_a_group_ordered_cheapest_tries_the_cheapest_first(clouds, tmp_path, monkeypatch):
    catalog = tmp_path / "prices.csv"
    catalog.write_text("cloud,service,region,kind,name,on_demand,spot,source,date\n"
                       "gcp,vertex_ai,us-central1,machine,n1-standard-4,0.2,,test,2026-01-01\n"
                       "gcp,vertex_ai,us-central1,accelerator,T4,0.4,,test,2026-01-01\n"
                       "azure,azure_vm,eastus,machine,Standard_NC4as_T4_v3,0.5,,test,2026-01-01\n")
    monkeypatch.setenv("OMNIDIST_PRICES", str(catalog))
    with open("omnidist.toml", "a") as handle:
        handle.write('[groups.cheap]\nprofiles = ["vtx", "aml"]\norder = "cheapest"\n')
    handle, _ = place("cheap")
    assert handle.backend == "azure_ml", "2 x 0.5 on Azure is cheaper than 2 x (0.2 + 0.4) on Vertex"
    assert records()[0].price_per_hour == 1.0


def test_status_logs_and_cancel_find_a_placed_job_by_name_without_a_profile(clouds):
    clouds["vtx"].refuse("vtx")
    handle, _ = place("vtx,aml")
    done = cli("status", "placed-ddp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] in ("queued", "pending", "running", "succeeded")
    done = cli("logs", "placed-ddp")
    assert done.returncode == 0, done.stderr
    done = cli("cancel", "placed-ddp")
    assert done.returncode == 0 and handle.id in done.stdout


def test_jobs_lists_every_attempt_with_the_spec_keys(clouds):
    clouds["vtx"].refuse("vtx")
    place("vtx,aml")
    done = cli("jobs", "-o", "json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [list(item) for item in listed] == [list(ledger.PUBLIC_KEYS)] * 2
    assert [(item["profile"], item["state"]) for item in listed] == [("aml", "submitted"), ("vtx", "refused")]
    done = cli("jobs", "--state", "refused")
    assert "vtx" in done.stdout and "aml" not in done.stdout


def test_jobs_refresh_asks_every_cloud_at_once(clouds):
    barrier = threading.Barrier(len(clouds), timeout=90)  # generous: a loaded machine starts SDK clients slowly
    for name in clouds:
        failover.submit(JOB, profile=name)
    for fake in clouds.values():
        fake.server.fail(*fake.service.ROUTES["get"], Fault.hook(barrier.wait))
    done = cli("jobs", "--refresh", "-o", "json")
    assert done.returncode == 0, done.stderr
    states = {item["backend"]: item["state"] for item in json.loads(done.stdout)}
    assert not barrier.broken, "every cloud's status request was waiting at once: asked in parallel"
    assert set(states) == set(PROFILES.values()) and "submitted" not in states.values(), states


def test_a_max_queue_that_is_no_duration_is_invalid_input(clouds):
    with pytest.raises(errors.ValidationError, match="max_queue: 'soon' is not a duration"):
        place("vtx,aml", max_queue="soon")
    assert [fake.creates() for fake in clouds.values()] == [0, 0, 0, 0, 0]


def test_a_profile_without_credentials_is_skipped_and_the_next_one_tried(clouds, monkeypatch, tmp_path):
    """`submit --profile gcp,azure` with no Google credentials tries Azure (SPEC §12a)."""
    toml = tmp_path / "omnidist.toml"
    toml.write_text(toml.read_text().replace('[profiles.vtx]\nbackend = "vertex"',
                                             '[profiles.vtx]\nbackend = "vertex"\ncredentials = "default"', 1)
                    .replace('credentials = "anonymous"\n', "", 1))
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "GCE_METADATA_HOST", "GCE_METADATA_IP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    handle, lines = place("vtx,aml")
    assert handle.backend == "azure_ml" and clouds["vtx"].creates() == 0
    assert lines[0].startswith("placement: vtx (vertex): skipped — credentials missing: run `gcloud auth")
    first, second = records()
    assert (first.profile, first.state) == ("vtx", "skipped") and second.state == "submitted"

# --- a refusal after a create whose outcome is unknown (never two live jobs) -----------------------

@pytest.mark.parametrize("profile", sorted(REFUSALS))
@pytest.mark.parametrize("status", [500, 503])
def test_a_refusal_after_a_create_that_made_its_job_keeps_that_job(clouds, profile, status):
    """The server makes the job and answers 5xx; the repeat is refused for quota (the quota that
    job now uses): the refusal is believed only after looking the job up, which finds it."""
    clouds[profile].server.fail(*clouds[profile].service.ROUTES["create"], Fault.http_after_create(status),
                                REFUSALS[profile])
    other = "aml" if profile != "aml" else "vtx"
    handle, lines = place(f"{profile},{other}")
    assert handle.backend == PROFILES[profile], lines
    assert clouds[profile].live() == 1 and clouds[other].creates() == 0, "one live job, on the first profile"
    assert lines == [f"placement: {profile} ({PROFILES[profile]}): created {handle.id}"]
    (only,) = records()
    assert (only.state, only.id) == ("submitted", handle.id)


@pytest.mark.parametrize("message", ["Resources are insufficient in region: us-central1.",
                                     "The following quota metrics exceed quota limits: "
                                     "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"])
def test_a_5xx_that_reads_like_a_shortage_is_looked_up_before_moving_on(clouds, message):
    vtx = clouds["vtx"]
    vtx.server.fail(*vtx.service.ROUTES["create"], Fault.http_after_create(503, message))
    handle, lines = place("vtx,aml")
    assert handle.backend == "vertex" and vtx.live() == 1 and clouds["aml"].creates() == 0, lines


def test_a_5xx_shortage_that_made_no_job_still_moves_on(clouds):
    vtx = clouds["vtx"]
    vtx.server.fail(*vtx.service.ROUTES["create"], Fault.http(503, "Resources are insufficient in region: us-central1."))
    handle, lines = place("vtx,aml")
    assert handle.backend == "azure_ml" and vtx.live() == 0 and "refused — capacity" in lines[0]


def test_a_timed_out_create_that_lands_late_is_found_before_a_quota_refusal_is_believed(clouds, tmp_path):
    """Vertex: the create is held past ``request_timeout_s``, the repeat is refused for quota, and
    the held create makes its job a moment later: settling (``create_settle_s``) finds it."""
    release = threading.Event()
    vtx = clouds["vtx"]
    route = vtx.service.ROUTES["create"]
    vtx.server.fail(*route, Fault.held(release), REFUSALS["vtx"])
    vtx.server.fail(*vtx.service.ROUTES["list"], Fault.slow(0), Fault.hook(release.set))  # lands while settling
    toml = tmp_path / "omnidist.toml"
    toml.write_text(re.sub(r"create_settle_s = [^\n]+", "create_settle_s = 30.0\nrequest_timeout_s = 0.5",
                           toml.read_text()))
    try:
        handle, lines = place("vtx,aml")
    finally:
        release.set()
    assert vtx.server.wait_idle()
    assert handle.backend == "vertex" and vtx.live() == 1 and clouds["aml"].creates() == 0, lines
    (only,) = records()
    assert (only.state, only.id) == ("submitted", handle.id)


def test_when_the_look_up_fails_the_refusal_is_not_passed_on(clouds):
    """Whether the first create made a job is unknown: the placement stops instead of moving on."""
    vtx = clouds["vtx"]
    vtx.server.fail(*vtx.service.ROUTES["create"],
                    Fault.http_after_create(503, "Resources are insufficient in region: us-central1."))
    vtx.server.fail(*vtx.service.ROUTES["list"], *[Fault.http(500, "list failed")] * 20)
    with pytest.raises(errors.BackendError, match="omnidist-request-id=") as caught:
        place("vtx,aml")
    assert not isinstance(caught.value, errors.ShortageError) and clouds["aml"].creates() == 0


# --- secrets a refusal quotes -----------------------------------------------------------------------

SECRET_ENV = {"DATABASE_URL": "postgres://trainer:Pg-pass-2291@db.internal:5432/runs",
              "HF_TOKEN": "hf_" + "Zq8" * 12, "MLFLOW_PASS": "name-only-value-77"}
"""Secrets by shape (a URL's password, an ``hf_`` token) and by name only (``*_PASS``)."""


@pytest.mark.parametrize("profile", ["vtx", "aml", "sm"])
def test_a_refusal_that_quotes_the_environment_is_masked_everywhere(clouds, profile):
    quoted = " ".join(f"{name}={value}" for name, value in SECRET_ENV.items())
    refusal = REFUSALS[profile]
    clouds[profile].server.fail(*clouds[profile].service.ROUTES["create"],
                                attrs.evolve(refusal, message=f"{refusal.message} (env: {quoted}; "
                                                              f"{json.dumps(SECRET_ENV)})"))
    other = "k8s"
    lines: list[str] = []
    failover.submit({**JOB, "env": SECRET_ENV}, profile=f"{profile},{other}", say=lines.append)
    first, _ = records()
    listed = cli("jobs")
    as_json = cli("jobs", "-o", "json")
    for value in ("Pg-pass-2291", SECRET_ENV["HF_TOKEN"], SECRET_ENV["MLFLOW_PASS"]):
        assert value not in lines[0], lines[0]
        assert value not in first.reason, first.reason
        assert value not in listed.stdout and value not in as_json.stdout
    assert "refused — quota:" in lines[0] and "••••••" in lines[0]


def test_a_reason_stored_with_a_secret_is_masked_when_shown(tmp_path, monkeypatch):
    """Rows an older omnidist stored raw are masked when ``omnidist jobs`` shows them."""
    monkeypatch.setenv("OMNIDIST_STATE_DIR", str(tmp_path))
    book = ledger.Ledger.default()
    seq = book.add(name="j", backend="vertex", state="refused", job_hash="h", placement="p", attempt=1,
                   config_dir=str(tmp_path))
    with __import__("sqlite3").connect(book.path) as raw:
        raw.execute("UPDATE jobs SET reason = ? WHERE seq = ?", ("quota: HF_TOKEN=hf_" + "a" * 34, seq))
    (row,) = book.records()
    assert "hf_aaaa" not in str(row.to_json()) and "hf_aaaa" not in str(ledger.JobList([row]).rows())


# --- Ctrl-C during a create ---------------------------------------------------------------------------

def test_ctrl_c_during_a_create_records_how_to_find_the_job(clouds):
    import os
    import signal

    vtx = clouds["vtx"]
    release = threading.Event()
    vtx.server.fail(*vtx.service.ROUTES["create"], Fault.held(release))
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            place("vtx,aml")
    finally:
        timer.cancel()
        release.set()
    assert vtx.server.wait_idle()
    stop = caught.value
    assert isinstance(stop, errors.InterruptedCreate) and stop.job_id is None
    assert "omnidist-request-id=" in stop.message and "may exist" in stop.message
    (only,) = records()
    assert only.state == "creating" and stop.marker in only.reason and "omnidist-request-id=" in only.reason
    assert clouds["aml"].creates() == 0, "an interrupt ends the placement"
    (job,) = vtx.service.jobs.values()  # the held create made its job: the label the row names finds it
    assert stop.marker.split("=", 1)[1] in json.dumps(job)


def test_ctrl_c_after_the_job_was_made_records_the_job(clouds, monkeypatch):
    """The look-up after the interrupt finds the job the create made: the row names it."""
    from omnidist.submission import clients

    original = clients.Client._create

    def interrupted(self, keyed):
        original(self, keyed)  # the job is made; the answer never reaches the caller
        raise KeyboardInterrupt

    monkeypatch.setattr(clients.Client, "_create", interrupted)
    with pytest.raises(errors.InterruptedCreate) as caught:
        place("vtx,aml")
    (only,) = records()
    assert caught.value.job_id is not None and (only.state, only.id) == ("submitted", caught.value.job_id)
    assert f"omnidist cancel {caught.value.job_id}" in caught.value.message
