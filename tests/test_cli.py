"""The ``omnidist`` command: exit codes, messages, no tracebacks (omnidist/cli.py, SPEC §3)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from omnidist.testing.cli import OMNIDIST, run_cli

PLUGINS = Path(__file__).parent / "plugins"

JOB = "name: demo\nframework: custom\nimage: img:1\ncommand: [python, t.py]\nprimary: {}\n"


@pytest.fixture
def plugin_env(tmp_path):
    """PYTHONPATH with a real distribution registering the 'echo' backend."""
    site = tmp_path / "site"
    info = site / "omnidist_testplugin-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: omnidist-testplugin\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text("[omnidist.backends]\necho = omnidist_testplugin:EchoBackend\n")
    return {"PYTHONPATH": os.pathsep.join([str(site), str(PLUGINS)]), "HOME": str(tmp_path)}


def _job(tmp_path: Path, text: str = JOB) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def test_compile_prints_the_request(tmp_path, plugin_env):
    result = run_cli("compile", str(_job(tmp_path)), "--backend", "echo", cwd=tmp_path, env=plugin_env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "demo", "greeting": None}
    yaml_out = run_cli("compile", str(_job(tmp_path)), "-b", "echo", "-o", "yaml", cwd=tmp_path, env=plugin_env)
    assert "name: demo" in yaml_out.stdout


def test_profile_from_omnidist_toml_selects_backend_and_settings(tmp_path, plugin_env):
    (tmp_path / "omnidist.toml").write_text('default = "e"\n[profiles.e]\nbackend = "echo"\ngreeting = "hello"\n')
    result = run_cli("compile", str(_job(tmp_path)), cwd=tmp_path, env=plugin_env)
    assert json.loads(result.stdout)["greeting"] == "hello"
    env = {**plugin_env, "OMNIDIST_BACKEND": "nope"}
    result = run_cli("compile", str(_job(tmp_path)), cwd=tmp_path, env=env)
    assert result.returncode == 2 and "Unknown backend 'nope'" in result.stderr


@pytest.mark.parametrize("text, message", [
    (JOB + "workers: {replicas: -1}\n", "job.yaml: workers.replicas: must be >= 0, got -1"),
    (JOB + "workrs: {replicas: 1}\n", "job.yaml: workrs: unknown key; did you mean 'workers'?"),
    (JOB + "spot: 3\n", "job.yaml: spot: expected true or false"),
    (JOB.replace("primary: {}", "primary: {accelerator: Z100:8}"), "job.yaml: primary.accelerator.type: unknown accelerator"),
    (JOB.replace("demo", "Demo"), "job.yaml: name: 'Demo' is not a valid job name"),
    (JOB + "timeout: forever\n", "job.yaml: timeout: 'forever' is not a duration"),
    ("name: [", "job.yaml: line 1, column 8: not valid YAML/JSON"),
])
def test_invalid_input_exits_2_with_file_and_path_and_no_traceback(tmp_path, plugin_env, text, message):
    result = run_cli("compile", str(_job(tmp_path, text)), "--backend", "echo", cwd=tmp_path, env=plugin_env)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_file_and_unknown_backend_exit_2(tmp_path, plugin_env):
    assert run_cli("compile", "nope.yaml", "-b", "echo", cwd=tmp_path, env=plugin_env).returncode == 2
    result = run_cli("compile", str(_job(tmp_path)), "-b", "vertx", cwd=tmp_path, env=plugin_env)
    assert result.returncode == 2 and "Did you mean 'vertex'?" in result.stderr


def test_validate_prints_a_table_per_backend(tmp_path, plugin_env):
    result = run_cli("validate", str(_job(tmp_path)), cwd=tmp_path, env=plugin_env)
    assert result.returncode == 0, result.stderr
    assert any(line.split()[:2] == ["echo", "ok"] for line in result.stdout.splitlines())
    bad = run_cli("validate", str(_job(tmp_path, JOB + "workers: {replicas: x}\n")), cwd=tmp_path, env=plugin_env)
    assert bad.returncode == 2 and "workers.replicas" in bad.stderr


def test_backends_lists_versions_and_capabilities(tmp_path, plugin_env):
    result = run_cli("backends", cwd=tmp_path, env=plugin_env)
    assert result.returncode == 0
    assert any(line.startswith("echo") and "1.2.3" in line for line in result.stdout.splitlines())


def test_debug_shows_the_traceback(tmp_path, plugin_env):
    result = run_cli("--debug", "compile", str(_job(tmp_path, "name: [")), "-b", "echo", cwd=tmp_path, env=plugin_env)
    assert "Traceback" in result.stderr


def test_python_m_omnidist_cli_has_every_command(tmp_path):
    import subprocess
    import sys

    from omnidist import cli

    ran = subprocess.run([sys.executable, "-m", "omnidist.cli", "--help"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert ran.returncode == 0, ran.stderr
    listed = {line.split()[0] for line in ran.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(cli.main.commands) and {"import", "migrate"} <= listed
    migrate = subprocess.run([sys.executable, "-m", "omnidist.cli", "migrate", "--help"], capture_output=True,
                             text=True, cwd=tmp_path, timeout=120)
    assert migrate.returncode == 0 and "--strict" in migrate.stdout


def test_a_native_spec_given_as_a_job_says_whose_it_is_and_how_to_import_it(tmp_path):
    native = tmp_path / "legacy.yaml"
    native.write_text("trainingInput:\n  scaleTier: BASIC\n  masterConfig: {imageUri: gcr.io/p/t:1}\n")
    result = run_cli("validate", str(native))
    assert result.returncode == 2
    assert result.stderr.strip() == (f"error: {native}: not a job file: it reads as ai_platform's native spec. "
                                     f"`omnidist import {native}` turns it into a job file; `omnidist migrate "
                                     f"{native} --to BACKEND` compiles it for another backend")


CLOUD_JOB = """name: creds
framework: pytorch
image: img:1
command: [python, train.py]
primary: {accelerator: A100:8}
workers: {replicas: 1}
backends:
  vertex: {project: p, region: us-central1}
  ai_platform: {project: p, region: us-central1}
  azure_ml: {subscription_id: 00000000-0000-0000-0000-000000000000, resource_group: rg, workspace: ws, compute: gpu}
"""


@pytest.mark.parametrize("backend, fix", [
    ("azure_ml", "no Azure credentials: run `az login`, or set AZURE_CLIENT_ID, AZURE_TENANT_ID and "
                 "AZURE_CLIENT_SECRET"),
    ("vertex", "no Google credentials: run `gcloud auth application-default login`"),
    ("ai_platform", "no Google credentials: run `gcloud auth application-default login`"),
    ("kubernetes", "no kubeconfig and not inside a cluster: get one with your cluster's tool"),
])
def test_no_credentials_is_one_line_with_the_fix_and_exit_1(backend, fix, tmp_path):
    """A machine without credentials, as a new user's: the real SDKs look in an empty HOME with no
    credential variables and no cloud CLI on PATH. One rule on every cloud: exit 1 and one line
    naming the login command; the SDKs' own warnings (Azure's credential chain, its "experimental
    field" notice for queue_settings) stay out of it.

    Azure's chain is held to its developer credentials (AZURE_TOKEN_CREDENTIALS=dev) and google.auth
    skips the metadata server (NO_GCE_CHECK): on a cloud-hosted test machine both would otherwise
    find that machine's own identity."""
    job = tmp_path / "job.yaml"
    job.write_text(CLOUD_JOB + ("spot: true\n" if backend == "azure_ml" else ""))  # Azure: queue_settings
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path / "bin"), "AZURE_TOKEN_CREDENTIALS": "dev",
           "NO_GCE_CHECK": "True", "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([OMNIDIST, "submit", str(job), "--backend", backend], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {backend}: {fix}"), result.stderr
