"""examples/spot-recovery resumes from its checkpoint under ``omnidist run --preempt`` (real torch processes)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from omnidist import api

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spot-recovery" / "job.yaml"


def test_the_example_resumes_from_its_latest_checkpoint_after_a_preemption(clean_env, tmp_path):
    pytest.importorskip("torch")
    job, driver, settings = api.prepare(EXAMPLE, backend="local", settings={"runs_dir": str(tmp_path)})
    out, err = io.StringIO(), io.StringIO()
    result = driver.run(job, settings, out=out, err=err, preempt="worker-0@20s")
    text = out.getvalue() + err.getvalue()
    assert result.exit_code == 0 and result.ended == "succeeded", text
    assert "worker-0 was preempted (SIGTERM" in text and "restarting it (1 of 3 restarts)" in text
    stopped = int(re.search(r"preempted at step (\d+): saved", text)[1])
    resumed = re.search(r"starting at step (\d+) \(resumed from step-(\d+)\)", text)
    assert resumed and int(resumed[2]) == stopped and int(resumed[1]) == stopped + 1 and stopped > 0
    assert "done: 300 steps" in text
