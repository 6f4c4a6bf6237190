"""`omnidist submit --wait / status / logs / cancel --backend kubernetes` end to end: the installed CLI
in a subprocess, a profile pointing at the fake API server this test runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from omnidist.testing.fakeserver import Fault

OMNIDIST = str(Path(sys.executable).with_name("omnidist"))
SECRET = "s3cr3t-token-value"
JOB_YAML = f"""\
name: cli-demo
framework: pytorch
image: trainer.example/t:1
command: [python, -m, trainer.task]
env: {{HF_TOKEN: {SECRET}}}
primary: {{accelerator: "T4:1"}}
workers: {{replicas: 1}}
"""


@pytest.fixture
def project(tmp_path, kube):
    (tmp_path / "job.yaml").write_text(JOB_YAML)
    (tmp_path / "omnidist.toml").write_text(
        'default = "cluster"\n[profiles.cluster]\nbackend = "kubernetes"\n'
        f'api_server = "{kube.url}"\nnamespace = "ml"\nretry_attempts = 3\npoll_interval_s = 0\n')
    return tmp_path


def omnidist(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(cwd), "XDG_CONFIG_HOME": str(cwd / ".config")}
    return subprocess.run([OMNIDIST, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_submit_wait_logs(project, kube):
    submitted = omnidist(project, "submit", "job.yaml", "--wait", "--poll", "0")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.split("\n")[0]
    assert job_id.startswith("ml/pytorchjob/cli-demo-") and len(job_id) == len("ml/pytorchjob/cli-demo-") + 5
    assert "succeeded" in submitted.stdout
    assert [("ml", "pytorchjobs", job_id.rsplit("/", 1)[1])] == list(kube.jobs)
    logs = omnidist(project, "logs", job_id)
    assert logs.returncode == 0, logs.stderr
    assert "[master-0] master-0: step 0" in logs.stdout and "[worker-0] worker-0: step 1" in logs.stdout


def test_submit_status_cancel(project, kube):
    kube.keep_running()
    submitted = omnidist(project, "submit", "job.yaml")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.split("\n")[0]
    assert omnidist(project, "status", job_id).stdout.strip() == "pending — job is created"
    cancelled = omnidist(project, "cancel", job_id)
    assert cancelled.returncode == 0, cancelled.stderr
    (delete,) = kube.calls("cancel")
    assert delete.query["propagationPolicy"] == ["Foreground"]


def test_a_rejection_exits_1_with_the_servers_message_masked(project, kube):
    kube.fail("create", Fault.http(422, f"spec.env[0].value: Invalid value: \"{SECRET}\""))
    failed = omnidist(project, "submit", "job.yaml")
    assert failed.returncode == 1
    assert "Invalid value" in failed.stderr and SECRET not in failed.stderr and "Traceback" not in failed.stderr


def test_an_unknown_job_exits_2_as_an_unknown_name(project, kube):
    missing = omnidist(project, "status", "ml/tfjob/nothing")
    assert missing.returncode == 2 and "not found" in missing.stderr
