"""The watcher against the local clouds (each backend's real SDK client on its fake service): a
preempted job restarts on its profile, moves with ``move: true``, gives up after ``max_restarts``,
never restarts a failing program, and two watchers restart it once (SPEC §15)."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from omnidist import errors
from omnidist.placement import failover
from omnidist.recovery import watcher
from omnidist.submission import ledger
from omnidist.testing import FakeServer
from omnidist.testing.cli import run_cli
from omnidist.testing.harness import harness

JOB: dict[str, Any] = {
    "name": "spot-ddp", "framework": "pytorch", "image": "us-docker.pkg.dev/p/trainers/ddp:1.0",
    "command": ["python", "-m", "trainer.task"], "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 1},
    "spot": True, "recovery": {"max_restarts": 2},
}
PROFILES = {"vtx": "vertex", "sm": "sagemaker"}
FAST = {"retry_attempts": 3, "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.05, "poll_interval_s": 0.0}
PREEMPTED = "The replica workerpool1-0 was preempted."
WAITS = watcher.Waits(poll_s=0.0, sleep=lambda s: None)


def _clouds(tmp_path, monkeypatch, extra: dict[str, list[str]]) -> Iterator[dict[str, Any]]:
    """The fake clouds, and an omnidist.toml whose profiles point at them (plus ``extra`` lines each)."""
    servers = {name: FakeServer().__enter__() for name in PROFILES}
    try:
        fakes = {name: harness(PROFILES[name]).service(server) for name, server in servers.items()}
        lines = []
        for name, backend in PROFILES.items():
            settings = {**harness(backend).settings(servers[name].url), **FAST}
            lines.append(f"[profiles.{name}]\nbackend = \"{backend}\"")
            lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items()] + extra.get(name, [])
        (tmp_path / "omnidist.toml").write_text("\n".join(lines) + "\n")
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("OMNIDIST_PROFILE", raising=False)
        yield fakes
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)


@pytest.fixture
def clouds(tmp_path, monkeypatch) -> Iterator[dict[str, Any]]:
    yield from _clouds(tmp_path, monkeypatch, {})


def submit(job: dict[str, Any], profiles: list[str]) -> str:
    handle = failover.submit(job, profile=profiles[0], say=lambda _: None)
    watcher.remember(ledger.Ledger.default(), handle.id, handle.job or failover.api.as_job(job), profiles)
    return handle.id


def attempts() -> list[ledger.JobRecord]:
    return sorted(ledger.Ledger.default().records(), key=lambda r: r.seq)


def test_a_preempted_job_restarts_on_its_profile_and_the_ledger_shows_every_attempt(clouds):
    clouds["vtx"].fail_jobs(PREEMPTED)
    submit(JOB, ["vtx", "sm"])
    clouds["vtx"].timeline = list(clouds["vtx"].TIMELINE)  # the next attempt succeeds
    said: list[str] = []
    outcome = watcher.watch("spot-ddp", waits=WAITS, say=said.append)
    assert (outcome.attempts, outcome.ended, outcome.restarted) == (2, "succeeded", 1)
    rows = attempts()
    assert [(r.attempt, r.profile, r.ended) for r in rows] == [(1, "vtx", "preemption"), (2, "vtx", "succeeded")]
    assert len(clouds["vtx"].jobs) == 2 and not clouds["sm"].jobs
    assert any("attempt 2 created" in line and "after preemption" in line for line in said)


def test_with_move_it_goes_to_the_next_profile(clouds):
    clouds["vtx"].fail_jobs(PREEMPTED)
    submit({**JOB, "recovery": {"max_restarts": 1, "move": True}}, ["vtx", "sm"])
    outcome = watcher.watch("spot-ddp", waits=WAITS)
    assert outcome.ended == "succeeded"
    assert [(r.backend, r.ended) for r in attempts()] == [("vertex", "preemption"), ("sagemaker", "succeeded")]
    (created,) = clouds["sm"].calls("create")
    assert created.body["EnableManagedSpotTraining"] is True


@pytest.fixture
def stores(tmp_path, monkeypatch, gcs, s3, moto_url) -> Iterator[dict[str, Any]]:
    """The fake clouds with object stores: the Vertex profile's Cloud Storage is the fake GCS, the
    SageMaker profile's S3 is moto, and its data_map puts the job's gs://train/ data in an S3 bucket."""
    bucket = f"moved-{uuid.uuid4().hex[:12]}"  # moto lives for the session
    s3.create_bucket(Bucket=bucket)
    extra = {"vtx": [f"storage_endpoint = {json.dumps(gcs.endpoint)}"],
             "sm": [f"s3_endpoint_url = {json.dumps(moto_url)}", f'data_map = {{"gs://train/" = "s3://{bucket}/train/"}}']}
    for fakes in _clouds(tmp_path, monkeypatch, extra):
        yield {**fakes, "gcs": gcs, "s3": s3, "bucket": bucket}


def test_a_move_copies_the_latest_complete_checkpoint_to_the_next_clouds_storage(stores):
    gcs, s3, bucket = stores["gcs"], stores["s3"], stores["bucket"]
    saved = {"step-2/state.pt": b"two", "step-2/.omnidist-complete": b"", "step-4/state.pt": b"four" * 1000,
             "step-4/.omnidist-complete": b"", "step-6/state.pt": b"cut off"}  # step-6 was never completed
    gcs.objects.update({("train", f"spot-ddp/ckpt/{name}"): data for name, data in saved.items()})
    stores["vtx"].fail_jobs(PREEMPTED)
    submit({**JOB, "outputs": {"checkpoints": "gs://train/spot-ddp/ckpt"},
            "recovery": {"max_restarts": 1, "move": True}}, ["vtx", "sm"])
    said: list[str] = []
    outcome = watcher.watch("spot-ddp", waits=WAITS, say=said.append)
    assert outcome.ended == "succeeded"
    assert [(r.backend, r.ended) for r in attempts()] == [("vertex", "preemption"), ("sagemaker", "succeeded")]
    (created,) = stores["sm"].calls("create")
    assert created.body["CheckpointConfig"]["S3Uri"] == f"s3://{bucket}/train/spot-ddp/ckpt"  # where the copy went
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="train/spot-ddp/ckpt/")["Contents"]
    copied = {o["Key"]: s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed}
    assert copied == {"train/spot-ddp/ckpt/step-4/state.pt": b"four" * 1000,
                      "train/spot-ddp/ckpt/step-4/.omnidist-complete": b""}
    assert f"recovery: checkpoint step-4 copied from gs://train/spot-ddp/ckpt to s3://{bucket}/train/spot-ddp/ckpt" \
        in said


def test_a_move_whose_checkpoint_cannot_be_copied_is_not_made(stores):
    stores["vtx"].fail_jobs(PREEMPTED)
    stores["gcs"].objects.update({("train", "ckpt/step-1/.omnidist-complete"): b""})
    submit({**JOB, "outputs": {"checkpoints": "gs://train/ckpt"}, "recovery": {"max_restarts": 1, "move": True}},
           ["vtx", "sm"])
    stores["s3"].delete_bucket(Bucket=stores["bucket"])
    with pytest.raises(errors.BackendError, match=f"s3://{stores['bucket']}/train/ckpt/step-1/") as info:
        watcher.watch("spot-ddp", waits=WAITS)
    assert info.value.exit_code == 1 and not stores["sm"].jobs  # no attempt starts without its checkpoint
    assert [r.attempt for r in attempts()] == [1]


def test_it_gives_up_after_max_restarts(clouds):
    clouds["vtx"].fail_jobs(PREEMPTED)
    submit(JOB, ["vtx"])
    outcome = watcher.watch("spot-ddp", waits=WAITS)
    assert (outcome.attempts, outcome.ended, outcome.restarted) == (3, "preemption", 2)
    assert "max_restarts" in outcome.why and len(clouds["vtx"].jobs) == 3


def test_a_failing_program_is_never_restarted_unless_listed(clouds):
    clouds["vtx"].fail_jobs("The replica workerpool0-0 exited with a non-zero status of 1.")
    submit(JOB, ["vtx"])
    outcome = watcher.watch("spot-ddp", waits=WAITS)
    assert (outcome.ended, outcome.restarted) == ("failure", 0) and "does not list" in outcome.why
    assert len(clouds["vtx"].jobs) == 1


def test_two_watchers_restart_it_once_and_a_new_watcher_resumes_from_the_ledger(clouds):
    clouds["vtx"].fail_jobs(PREEMPTED)
    submit({**JOB, "recovery": {"max_restarts": 1}}, ["vtx"])
    clouds["vtx"].keep_running()  # the restart runs until told otherwise
    gate = threading.Barrier(2)
    outcomes: list[Any] = []

    def run() -> None:
        gate.wait()
        outcomes.append(watcher.watch("spot-ddp", waits=watcher.Waits(poll_s=0.01), say=lambda _: None))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for _ in range(500):
        if len(clouds["vtx"].jobs) == 2:
            break
        threading.Event().wait(0.01)
    threading.Event().wait(0.3)  # both watchers see the restart running
    clouds["vtx"].finish_running()
    for thread in threads:
        thread.join(timeout=60)
    assert len(clouds["vtx"].jobs) == 2  # restarted once, by one of them
    assert sorted(o.restarted for o in outcomes) == [0, 1] and {o.ended for o in outcomes} == {"succeeded"}
    again = watcher.watch("spot-ddp", waits=WAITS)  # a watcher started later reads where it ended
    assert (again.attempts, again.ended, again.restarted) == (2, "succeeded", 0)


def test_a_job_without_a_copy_in_the_ledger_is_exit_2_saying_how(clouds):
    failover.submit(JOB, profile="vtx", say=lambda _: None)
    with pytest.raises(errors.ValidationError, match="submit --recover") as info:
        watcher.watch("spot-ddp", waits=WAITS)
    assert info.value.exit_code == 2


def test_jobs_json_has_attempt_and_ended(clouds):
    clouds["vtx"].fail_jobs(PREEMPTED)
    submit({**JOB, "recovery": {"max_restarts": 1}}, ["vtx"])
    clouds["vtx"].timeline = list(clouds["vtx"].TIMELINE)
    watcher.watch("spot-ddp", waits=WAITS)
    done = run_cli("jobs", "-o", "json")
    listed = json.loads(done.stdout)
    assert [(item["attempt"], item["ended"]) for item in listed] == [(2, "succeeded"), (1, "preemption")]
    shown = run_cli("jobs", "spot-ddp").stdout
    assert "preemption" in shown and "restart after preemption" in shown


def test_submit_recover_and_watch_on_the_command_line(clouds, tmp_path):
    clouds["vtx"].fail_jobs(PREEMPTED)
    (tmp_path / "job.json").write_text(json.dumps({**JOB, "recovery": {"max_restarts": 1}}))
    done = run_cli("submit", "job.json", "--profile", "vtx", "--recover", "--poll", "0")
    assert done.returncode == 0, done.stderr  # the submit made its job; how it ended is in the ledger
    assert "attempt 2 created" in done.stderr and "2 attempt(s), the last ended by preemption" in done.stderr
    assert len(clouds["vtx"].jobs) == 2
    again = run_cli("watch", "spot-ddp", "--poll", "0")
    assert again.returncode == 1 and "max_restarts" in again.stderr and len(clouds["vtx"].jobs) == 2
    assert run_cli("watch").returncode == 2


def test_max_cost_is_checked_by_submit_plan_and_the_watcher(clouds, tmp_path, monkeypatch):
    catalog = tmp_path / "prices.csv"
    catalog.write_text("cloud,service,region,kind,name,on_demand,spot,source,date\n"
                       "gcp,vertex_ai,us-central1,machine,n1-standard-4,0.2,0.1,test,2026-01-01\n"
                       "gcp,vertex_ai,us-central1,accelerator,T4,0.4,0.2,test,2026-01-01\n")
    monkeypatch.setenv("OMNIDIST_PRICES", str(catalog))
    priced = {**JOB, "timeout": "2h"}  # 2 spot nodes at 0.3 USD/h: 1.20 USD for the timeout
    with pytest.raises(errors.ValidationError, match=r"max_cost 1 USD: the job's timeout \(2 h\) at 0.60 USD/h "
                                                     r"is 1.20 USD more") as info:
        failover.submit({**priced, "max_cost": 1}, profile="vtx", say=lambda _: None)
    assert info.value.exit_code == 2 and not clouds["vtx"].jobs
    with pytest.raises(errors.ValidationError, match="max_cost 500 USD needs a timeout"):
        failover.submit({**JOB, "max_cost": 500}, profile="vtx", say=lambda _: None)
    (tmp_path / "job.json").write_text(json.dumps({**priced, "max_cost": 1}))
    done = run_cli("plan", "job.json", "--profile", "vtx", env={"OMNIDIST_PRICES": str(catalog)})
    assert done.returncode == 2 and "max_cost 1 USD" in done.stdout + done.stderr
    # the watcher makes no restart that would take the spend over max_cost
    clouds["vtx"].fail_jobs(PREEMPTED)
    submit({**priced, "max_cost": 2}, ["vtx"])
    book = ledger.Ledger.default()
    (first,) = book.records()
    assert first.price_per_hour == pytest.approx(0.6)
    book.update(first.seq, submitted_at="2026-01-01T00:00:00+00:00")  # it ran two hours before it was preempted
    outcome = watcher.watch("spot-ddp", waits=WAITS)
    assert outcome.restarted == 0 and "max_cost 2 USD" in outcome.why and len(clouds["vtx"].jobs) == 1
    listed = json.loads(run_cli("jobs", "--cost", "-o", "json", env={"OMNIDIST_PRICES": str(catalog)}).stdout)
    assert len(listed) == 1 and listed[0]["cost"] == pytest.approx(0.6 * _hours(book), rel=1e-2)


def _hours(book: ledger.Ledger) -> float:
    from omnidist.recovery import cost

    (record,) = book.records()
    return cost.billed_hours(record.submitted_at, record.ended_at)
