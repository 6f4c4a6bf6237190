"""``omnidist run --preempt``: real processes preempted as their platform would, resumed from checkpoints."""

from __future__ import annotations

import io
import re
import signal

import pytest

from omnidist import api
from omnidist.errors import ValidationError
from omnidist.local import preemption

# Saves a checkpoint every step; on SIGTERM it finishes the step it is on and exits 143, as a
# program that handles a preemption notice does. It prints where it started from.
TRAIN = """
import signal, sys, time
from omnidist import runtime

stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
last = runtime.latest_checkpoint()
start = last.step + 1 if last else 0
print(f"start {start}", flush=True)
for step in range(start, 12):
    time.sleep(0.1)
    with runtime.checkpoint(step) as folder:
        (folder / "state").write_text(str(step))
    if stop:
        print(f"saved {step} and stopping", flush=True)
        sys.exit(143)
print("done", flush=True)
"""

IGNORES_SIGTERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("start", flush=True)
time.sleep(60)
"""


def _run(job_dir, preempt, emulate="vertex", **job):
    path = job_dir({"train.py": TRAIN, "stubborn.py": IGNORES_SIGTERM}, command=["python", "train.py"],
                   outputs={"checkpoints": "default"}, env={"OMP_NUM_THREADS": "1"}, **job)
    out, err = io.StringIO(), io.StringIO()
    found, driver, settings = api.prepare(path, backend="local", settings={"emulate": emulate})
    result = driver.run(found, settings, out=out, err=err, preempt=preempt)
    return result, out.getvalue(), err.getvalue()


def test_with_recovery_a_preempted_run_restarts_from_its_latest_checkpoint(job_dir, clean_env):
    result, out, err = _run(job_dir, "primary-0@0.6s", recovery={"max_restarts": 1})
    starts = [int(n) for n in re.findall(r"\[primary-0\] start (\d+)", out)]
    assert result.exit_code == 0 and result.ended == "succeeded", out + err
    assert starts[0] == 0 and len(starts) == 2 and starts[1] > 0  # resumed, not from scratch
    saved = int(re.search(r"saved (\d+) and stopping", out)[1])
    assert starts[1] == saved + 1 and "[primary-0] done" in out
    assert "primary-0 was preempted (SIGTERM, then SIGKILL after 30 s, as vertex does)" in err
    assert "restarting it (1 of 1 restarts)" in err


def test_without_recovery_the_run_ends_by_preemption_and_every_replica_stops(job_dir, clean_env):
    result, out, err = _run(job_dir, "worker-0@0.5s", workers={"replicas": 1})
    assert (result.exit_code, result.ended, result.failed) == (143, "preemption", "worker-0")
    assert "[primary-0] done" not in out and "[worker-0] done" not in out  # the primary was stopped too
    assert "restarting" not in err


def test_a_program_that_ignores_the_notice_is_killed_after_the_platforms_grace(job_dir, clean_env, monkeypatch):
    monkeypatch.setattr("omnidist.runtime.platforms.sagemaker.PREEMPTION_GRACE_S", 0.5)
    path = job_dir({"stubborn.py": IGNORES_SIGTERM}, command=["python", "stubborn.py"])
    found, driver, settings = api.prepare(path, backend="local", settings={"emulate": "sagemaker"})
    err = io.StringIO()
    result = driver.run(found, settings, out=io.StringIO(), err=err, preempt="primary-0@0.3s")
    assert result.ended == "preemption" and "SIGKILL after 0.5 s, as sagemaker does" in err.getvalue()


def test_a_failing_program_is_not_restarted_unless_recovery_lists_failure(job_dir, clean_env):
    path = job_dir({"fail.py": "print('start', flush=True)\nraise SystemExit(3)\n"}, command=["python", "fail.py"],
                   recovery={"max_restarts": 2})
    found, driver, settings = api.prepare(path, backend="local")
    out = io.StringIO()
    result = driver.run(found, settings, out=out, err=io.StringIO())
    assert (result.exit_code, result.ended) == (3, "failure") and out.getvalue().count("start") == 1
    path = job_dir({"fail.py": "print('start', flush=True)\nraise SystemExit(3)\n"}, command=["python", "fail.py"],
                   recovery={"max_restarts": 2, "on": ["failure"]})
    found, driver, settings = api.prepare(path, backend="local")
    out = io.StringIO()
    result = driver.run(found, settings, out=out, err=io.StringIO())
    assert result.exit_code == 3 and out.getvalue().count("start") == 3  # the first run and two restarts


@pytest.mark.parametrize(("value", "words"), [
    ("primary-0", "not REPLICA@DURATION"), ("primary-0@soon", "no duration"), ("master@3s", "not REPLICA@DURATION")])
def test_bad_spellings_are_exit_2_naming_the_option(value, words):
    with pytest.raises(ValidationError, match=words) as info:
        preemption.parse(value)
    assert info.value.exit_code == 2 and "--preempt" in str(info.value)


def test_a_replica_the_run_has_not_is_named_with_the_ones_it_has(job_dir, clean_env):
    with pytest.raises(ValidationError, match="no replica 'worker-3' in this run; it has primary-0, worker-0"):
        _run(job_dir, "worker-3@1s", workers={"replicas": 1})


def test_each_platform_sends_sigterm_with_its_own_grace():
    from omnidist.runtime import platforms

    assert platforms.preemption("sagemaker") == (signal.SIGTERM, 120.0)
    assert platforms.preemption("vertex") == (signal.SIGTERM, 30.0)
