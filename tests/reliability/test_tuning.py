"""Tuning jobs on every cloud backend, through its real SDK client against its fake service: a
search is created exactly once (a lost answer, throttling and outages included), followed to its
trials and its best trial, cancelled, and shows no secret; the CLI prints its trials table.

The fakes run each search's trials ``parallel_trials`` at a time while the job runs, with the
final values a test scripts (``service.trial_values``; ``None`` fails a trial).
"""

from __future__ import annotations

import json

import attrs
import pytest

from omnidist.backend.values import JobState
from omnidist.errors import InvalidRequestError
from omnidist.model import serde
from omnidist.secrets import MASK
from omnidist.submission.handle import JobHandle
from omnidist.testing import Fault
from omnidist.testing.cli import run_cli

from .conftest import TUNING_JOB
from .test_secrets import ECHO, SECRETS, leaks

pytestmark = pytest.mark.suite("tuning")

VALUES = [0.3, None, 0.9, 0.5]
"""The trials' final accuracies: trial 2 fails, trial 3 is the best."""

BEST_VALUES = {"lr": 0.1, "layers": 0, "optimizer": "adam"}
"""What the fakes give trial 3 (the 3rd of [min, mid, max], the 1st of [0, 3], the 1st choice)."""

SECRET_JOB = {**TUNING_JOB, "env": SECRETS}


def _follow(handle):
    return handle.wait(poll_interval=0, sleep=lambda s: None)


def _trial_number(cloud, trial_id: str) -> int:
    """A trial's number from 1, from its id on the cloud (each harness says how it reads)."""
    return cloud.harness.trial_number(trial_id)


def test_a_search_is_created_once_and_followed_to_its_best_trial(cloud):
    cloud.service.trial_values = VALUES
    handle = cloud.submit(TUNING_JOB)
    assert len(cloud.server.calls(*cloud.tuning_route("create"))) == 1 and len(cloud.service.jobs) == 1
    assert cloud.service.studies, "the cloud made a tuning job, not a plain one"
    final = _follow(handle)
    assert final.state is JobState.SUCCEEDED and final.metric == "accuracy"
    assert [_trial_number(cloud, t.id) for t in final.trials] == [1, 2, 3, 4]
    assert [t.state for t in final.trials] == [JobState.SUCCEEDED, JobState.FAILED, JobState.SUCCEEDED,
                                               JobState.SUCCEEDED]
    assert [t.value for t in final.trials] == VALUES
    best = final.best
    assert best is not None and _trial_number(cloud, best.id) == 3 and best.value == 0.9
    assert dict(best.parameters) == BEST_VALUES, "portable names, typed values, in the block's order"
    assert [name for name, _ in best.parameters] == ["lr", "layers", "optimizer"]
    assert best.flags == "--lr=0.1 --layers=0 --optimizer=adam"
    html = handle._repr_html_()
    assert "trials (4)" in html and "best: trial" in html and "accuracy=0.9" in html


def test_trials_appear_while_the_search_runs(cloud):
    handle = cloud.submit(TUNING_JOB)
    seen = []
    while True:
        status = handle.status()
        seen.append((status.state, len(status.trials), sum(t.state is JobState.RUNNING for t in status.trials)))
        if status.state.terminal:
            break
    running = [s for s in seen if s[0] is JobState.RUNNING]
    assert any(count == 2 and active == 2 for _, count, active in running), seen
    assert max(active for *_, active in seen) <= 2, "parallel_trials at a time"
    assert seen[-1][1:] == (4, 0)


@pytest.mark.parametrize("fault", [Fault.drop_after_create(), Fault.close_after_create()], ids=["reset", "closed"])
def test_a_lost_answer_to_the_create_leaves_exactly_one_search(cloud, fault):
    cloud.server.fail(*cloud.tuning_route("create"), fault)
    handle = cloud.submit(TUNING_JOB)
    assert len(cloud.service.jobs) == 1 and cloud.job_count() == 1, "exactly one, none cancelled either"
    assert 1 <= len(cloud.server.calls(*cloud.tuning_route("create"))) <= 2
    assert _follow(handle).trials, "the handle follows that job"


def test_throttled_and_unavailable_creates_are_retried_into_one_search(cloud):
    cloud.server.fail(*cloud.tuning_route("create"), Fault.http(429, "Quota exceeded", retry_after=2),
                      Fault.http(503, "The service is currently unavailable"))
    handle = cloud.submit(TUNING_JOB)
    assert len(cloud.server.calls(*cloud.tuning_route("create"))) == 3 and cloud.job_count() == 1
    assert cloud.sleeps[0] == 2.0 and len(cloud.sleeps) == 2, "Retry-After honoured, then a backoff"
    assert handle.status().state.value in ("queued", "pending", "running")


def test_a_throttled_status_poll_is_retried(cloud):
    handle = cloud.submit(TUNING_JOB)
    cloud.server.fail(*cloud.tuning_route("get"), Fault.http(429, "slow down", retry_after=1))
    assert handle.status().state.value in ("queued", "pending", "running")
    assert 1.0 in cloud.sleeps


def test_cancel_stops_a_running_search(cloud):
    cloud.service.keep_running()
    handle = cloud.submit(TUNING_JOB)
    assert any(handle.status().trials for _ in range(10)), "trials start while it runs"
    handle.cancel()
    assert len(cloud.server.calls(*cloud.tuning_route("cancel"))) == 1
    final = _follow(handle)
    assert final.state is JobState.CANCELLED
    assert final.trials and not [t for t in final.trials if t.state is JobState.RUNNING], final.trials
    handle.cancel()  # a finished search: nothing is sent
    assert len(cloud.server.calls(*cloud.tuning_route("cancel"))) == 1


def test_an_error_quoting_the_trial_spec_shows_its_secrets_masked(cloud):
    cloud.server.fail(*cloud.tuning_route("create"), Fault.http(400, ECHO))
    with pytest.raises(InvalidRequestError) as err:
        cloud.submit(SECRET_JOB)
    assert f"API_KEY={MASK}" in str(err.value) and leaks(str(err.value)) == [], str(err.value)
    assert cloud.job_count() == 0


def test_a_failed_search_and_its_trials_show_no_secret(cloud):
    cloud.service.trial_values = [0.4, None]
    cloud.service.fail_jobs(ECHO)
    handle = cloud.submit(SECRET_JOB)
    (body,) = [r.body for r in cloud.server.calls(*cloud.tuning_route("create"))]
    assert set(leaks(json.dumps(body))) == set(SECRETS.values()), "the trial spec sent carries the env"
    final = _follow(handle)
    assert final.state is JobState.FAILED and f"API_KEY={MASK}" in final.message
    failed = [t for t in final.trials if t.state is JobState.FAILED]
    assert failed and leaks(repr(final)) == [] and leaks(handle._repr_html_()) == []
    if cloud.name != "ai_platform":  # AI Platform's trials carry no message
        assert all(f"API_KEY={MASK}" in t.message for t in failed), failed
    attached = JobHandle(backend=cloud.name, id=handle.id, settings=cloud.settings(), driver=cloud.backend)
    assert leaks(repr(attached.status())) == []


# --- the CLI ---------------------------------------------------------------------------------------

@pytest.fixture
def project(cloud, tmp_path, monkeypatch):
    """The search in a job file and a profile pointing the CLI at the cloud's fake; the CLI's env."""
    monkeypatch.delenv("AZUREML_CURRENT_CLOUD", raising=False)  # the CLI's process registers its own
    settings = attrs.asdict(cloud.settings(poll_interval_s=0.0, retry_initial_wait_s=0.01))
    keys = "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()
                   if isinstance(v, (str, int, float)) and not isinstance(v, bool))
    (tmp_path / "omnidist.toml").write_text(f'default = "fake"\n[profiles.fake]\nbackend = "{cloud.name}"\n{keys}')
    (tmp_path / "job.yaml").write_text(serde.dump_yaml(TUNING_JOB))
    return {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_cli_submit_wait_and_status_print_the_trials_table(cloud, tmp_path, project):
    cloud.service.trial_values = VALUES
    waited = run_cli("submit", "job.yaml", "--wait", "--poll", "0", cwd=tmp_path, env=project)
    assert waited.returncode == 0, waited.stderr
    job_id = waited.stdout.splitlines()[0]
    status = run_cli("status", job_id, cwd=tmp_path, env=project)
    assert status.returncode == 0, status.stderr
    for out in (waited.stdout, status.stdout):
        lines = out.splitlines()
        start = lines.index("succeeded")
        assert lines[start + 1].split() == ["trial", "state", "accuracy", "lr", "layers", "optimizer"], out
        rows = [line.split() for line in lines[start + 3:start + 7]]
        assert [row[1:] for row in rows] == [
            ["succeeded", "0.3", "0.001", "0", "adam"],
            ["failed", "0.0505", "3", "sgd"],
            ["succeeded", "0.9", "0.1", "0", "adam"],
            ["succeeded", "0.5", "0.001", "3", "sgd"],
        ], out
        assert lines[start + 7].startswith("best: trial ") and lines[start + 7].endswith(
            ", accuracy=0.9: --lr=0.1 --layers=0 --optimizer=adam"), out
