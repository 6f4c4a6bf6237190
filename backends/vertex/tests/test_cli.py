"""`omnidist compile / submit --wait / status / cancel` end to end: the installed CLI in a
subprocess, a profile pointing at the fake Vertex service run by this test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from omnidist.testing.fakeserver import Fault

OMNIDIST = str(Path(sys.executable).with_name("omnidist"))
JOB_YAML = """\
name: cli-demo
framework: pytorch
image: gcr.io/p/trainer:1
command: [python, -m, trainer.task]
primary: {accelerator: "V100:8"}
workers: {replicas: 4}
reduction_servers: {replicas: auto}
backends:
  vertex:
    machine_types: {primary: n1-highmem-96, workers: n1-highmem-96}
"""


@pytest.fixture
def project(tmp_path, vertex):
    (tmp_path / "job.yaml").write_text(JOB_YAML)
    (tmp_path / "omnidist.toml").write_text(
        'default = "fake"\n[profiles.fake]\nbackend = "vertex"\nproject = "p"\nregion = "us-central1"\n'
        f'api_endpoint = "{vertex.url}"\ncredentials = "anonymous"\nretry_attempts = 3\n'
    )
    return tmp_path


def omnidist(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": str(Path(sys.executable).parent),
        "HOME": str(cwd),
        "XDG_CONFIG_HOME": str(cwd / ".config"),
    }
    return subprocess.run([OMNIDIST, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_compile_submit_wait_status(project, vertex, valid):
    compiled = omnidist(project, "compile", "job.yaml")
    assert compiled.returncode == 0, compiled.stderr
    request = valid(json.loads(compiled.stdout))
    assert request["jobSpec"]["workerPoolSpecs"][2]["replicaCount"] == "16"
    assert "note: [defaulted] reduction_servers.replicas" in compiled.stderr
    assert not vertex.server.requests  # compile makes no call

    submitted = omnidist(project, "submit", "job.yaml", "--wait", "--poll", "0.05")
    assert submitted.returncode == 0, submitted.stderr
    job_id, url, final = submitted.stdout.split("\n")[:3]
    assert job_id == "projects/p/locations/us-central1/customJobs/1000" and url.startswith(
        "https://console.cloud"
    )
    assert final == "succeeded"
    # Each state change once, in order (the fake advances a step per get, and the log stream
    # polls too, so the wait loop may not see every step).
    states = [line.removeprefix("state: ") for line in submitted.stderr.splitlines() if line.startswith("state: ")]
    lifecycle = ["queued", "pending", "running", "succeeded"]
    assert states[0] in lifecycle and states[-1] == "succeeded"  # the first poll may come after a step
    assert states == sorted(set(states), key=lifecycle.index), submitted.stderr
    (job,) = vertex.jobs.values()
    assert job["jobSpec"]["workerPoolSpecs"][2]["replicaCount"] == "16"
    listed = omnidist(project, "jobs", "-o", "json")
    assert [(r["id"], r["state"]) for r in json.loads(listed.stdout)] == [(job_id, "succeeded")], \
        "the ledger records the state the wait saw, not 'submitted'"



def test_submit_status_cancel(project, vertex):
    vertex.keep_running()
    submitted = omnidist(project, "submit", "job.yaml")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.split("\n")[0]
    assert omnidist(project, "status", job_id).stdout.strip() == "queued"
    cancelled = omnidist(project, "cancel", job_id)
    assert cancelled.returncode == 0 and f"cancel requested for {job_id}" in cancelled.stdout
    assert len(vertex.server.calls("POST", r":cancel$")) == 1
    assert omnidist(project, "status", job_id).stdout.strip() == "cancelling"
    assert vertex.jobs[job_id]["state"] == "JOB_STATE_CANCELLED"  # the fake moves on after that get


def test_server_rejection_exits_1_with_its_message(project, vertex):
    vertex.server.fail(
        "POST", r"/customJobs$", Fault.http(400, 'Machine type "n1-highmem-96" is not supported.')
    )
    failed = omnidist(project, "submit", "job.yaml")
    assert failed.returncode == 1
    assert 'Machine type "n1-highmem-96" is not supported.' in failed.stderr
    assert "Traceback" not in failed.stderr and not vertex.jobs
