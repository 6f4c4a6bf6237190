"""End to end through the installed ``omnidist`` command, and the purity of compile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

OMNIDIST = Path(sys.executable).parent / "omnidist"
JOB = """\
name: mnist-ddp
framework: pytorch
image: gcr.io/p/trainer:1
command: [python, -m, trainer.task]
env: {NCCL_DEBUG: INFO}
primary: {accelerator: "T4:1"}
workers: {replicas: 2}
"""


@pytest.fixture
def project(tmp_path, server, service):
    (tmp_path / "omnidist.toml").write_text(textwrap.dedent(f"""\
        default = "legacy"
        [profiles.legacy]
        backend = "ai_platform"
        project = "proj"
        api_endpoint = "{server.url}"
        credentials = "anonymous"
        retry_initial_wait_s = 0.01
        """))
    (tmp_path / "job.yaml").write_text(JOB)
    (tmp_path / "h100.yaml").write_text(JOB.replace("T4:1", "H100:8"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIDIST_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    return tmp_path, env


def omnidist(project, *args: str) -> subprocess.CompletedProcess:
    cwd, env = project
    return subprocess.run([str(OMNIDIST), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_submit_wait_status_cancel(project, service):
    done = omnidist(project, "submit", "job.yaml", "--wait", "--poll", "0.05")
    assert done.returncode == 0, done.stderr
    job_id, url, *rest = done.stdout.splitlines()
    assert job_id.startswith("mnist_ddp_") and len(service.jobs) == 1
    assert url == f"https://console.cloud.google.com/ai-platform/jobs/{job_id}?project=proj"
    assert rest[-1] == "succeeded"
    states = [line for line in done.stderr.splitlines() if line.startswith("state:")]
    assert states[-1] == "state: succeeded"  # earlier ones vary: the log stream polls too
    assert "Cloud Logging" in done.stderr  # the streamed "logs" point at the console
    status = omnidist(project, "status", job_id)
    assert (status.returncode, status.stdout.strip()) == (0, "succeeded")

    service.keep_running()  # a job to cancel
    second = omnidist(project, "submit", "job.yaml")
    running_id = second.stdout.splitlines()[0]
    assert running_id != job_id  # a fresh suffix per submit
    cancel = omnidist(project, "cancel", running_id)
    assert (cancel.returncode, cancel.stdout.strip()) == (0, f"cancel requested for {running_id}")
    assert service.jobs[("proj", running_id)]["state"] == "CANCELLING"
    assert omnidist(project, "status", running_id).stdout.strip() == "cancelling"
    assert omnidist(project, "status", running_id).stdout.strip() == "cancelled"
    logs = omnidist(project, "logs", running_id)
    assert logs.returncode == 0 and "Cloud Logging" in logs.stdout and "job state: CANCELLED" in logs.stdout


def test_failed_job_exits_1_and_unknown_job_exits_2_saying_so(project, service):
    service.fail_jobs()
    done = omnidist(project, "submit", "job.yaml", "--wait", "--poll", "0.05")
    assert done.returncode == 1 and "failed" in done.stdout and "non-zero status" in done.stdout
    missing = omnidist(project, "status", "no_such_job")
    assert missing.returncode == 2 and "was not found" in missing.stderr and "Traceback" not in missing.stderr


def test_h100_exits_3_naming_the_accelerator_and_vertex(project, server):
    for command in (["compile", "h100.yaml"], ["submit", "h100.yaml"]):
        done = omnidist(project, *command)
        assert done.returncode == 3, done.stderr
        assert "H100" in done.stderr and "--backend vertex" in done.stderr and "Traceback" not in done.stderr
    assert not server.calls("POST", r"/jobs$")


def test_labels_google_refuses_exit_2_before_any_request(project, server):
    cwd, _ = project
    (cwd / "labelled.yaml").write_text(JOB + "labels: {Team: vision, owner: someone@example.com}\n")
    for command in ("compile", "submit"):
        done = omnidist(project, command, "labelled.yaml")
        assert done.returncode == 2, done.stderr
        assert "labelled.yaml: labels.Team: the key does not start with a lowercase letter" in done.stderr
        assert "labelled.yaml: labels.owner: the value holds '.@'" in done.stderr
        assert "rename it, e.g. 'team'" in done.stderr and "Traceback" not in done.stderr
    assert not server.calls("POST", r"/jobs$")


def test_compile_prints_the_create_body_and_notes(project):
    done = omnidist(project, "compile", "job.yaml")
    body = json.loads(done.stdout)
    assert body["jobId"] == "mnist_ddp" and body["trainingInput"]["workerCount"] == 2
    assert "note: [approximated] primary.env" in done.stderr


def test_compiling_imports_no_google_sdk(tmp_path):
    heavy = ("google", "googleapiclient", "httplib2", "google_auth_httplib2", "uritemplate")
    probe = "import sys; print(' '.join(sorted(sys.modules)))"
    script = textwrap.dedent(f"""\
        import sys, omnidist, omnidist_ai_platform
        job = omnidist.DistributedJob.from_yaml({JOB!r})
        compiled = omnidist.compile(job, backend="ai_platform")
        imported = omnidist_ai_platform.import_with_notes(compiled.request)
        {probe}
        """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIDIST_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path))
    bare = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    after = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env,
                           cwd=tmp_path)
    loaded = set(after.stdout.split()) - set(bare.stdout.split())
    assert "omnidist_ai_platform.compiler" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] in heavy) == []
