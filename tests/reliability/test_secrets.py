"""No secret leaks: secret-looking env values are in the request (that is the request) and
nowhere a person looks — reprs, notebook HTML, ``note:`` lines, migration reports, streamed
logs; credentials never reach compiled output at all.
"""

from __future__ import annotations

import json
import sys

import pytest

import omnidist
from omnidist import migration, serde
from omnidist.testing.cli import run_cli

SECRETS = {"API_KEY": "sk-live-7f3a9c2e1b", "HF_TOKEN": "hf_QpLmZx81Wq", "DB_PASSWORD": "pw-Tr0ub4dor-3"}
"""Secret-looking variables and their values (job-level env: Azure ML has no per-role env)."""

CREDENTIAL = "ya29.cred-token-5d1e8b"
"""A bearer token in a service-account key file and in the process environment."""

JOB = {
    "name": "secret-job",
    "framework": "pytorch",
    "image": "gcr.io/p/train:1",
    "command": ["python", "train.py"],
    "env": {**SECRETS, "NCCL_DEBUG": "INFO"},
    "primary": {"accelerator": "T4:1"},
    "workers": {"replicas": 1},
}


def leaks(text: str) -> list[str]:
    """The secret values and credentials that appear in ``text``."""
    return [v for v in (*SECRETS.values(), CREDENTIAL) if v in text]


@pytest.fixture
def credentials(tmp_path, monkeypatch):
    """Credentials a user has around: a key file named by a setting and by the environment,
    and cloud secrets in the process environment (compiling must read none of them)."""
    key = tmp_path / "key.json"
    key.write_text(json.dumps({"type": "service_account", "private_key": CREDENTIAL, "client_email": "a@b.c"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    monkeypatch.setenv("AZURE_CLIENT_SECRET", CREDENTIAL)
    monkeypatch.setenv("GOOGLE_OAUTH_ACCESS_TOKEN", CREDENTIAL)
    return key


def _credential_setting(cloud, key) -> dict:
    return {"credentials": str(key)} if cloud.name == "vertex" else {}


def test_compiled_request_carries_secrets_but_no_display_does(cloud, credentials):
    job = serde.job_from_dict(JOB)
    compiled = cloud.backend.compile(job, cloud.settings(**_credential_setting(cloud, credentials)))
    request = compiled.render("json")
    assert set(leaks(request)) == set(SECRETS.values()), "every env value is in the request, no credential"
    assert str(credentials) not in request
    for shown in (repr(job), job._repr_html_(), repr(compiled), compiled._repr_html_(),
                  *(f"note: {note}" for note in compiled.diagnostics)):
        assert leaks(shown) == [], shown


def test_submitted_handle_and_followed_logs_show_no_secret(cloud, capsys):
    handle = cloud.submit(JOB)
    (body,) = [r.body for r in cloud.server.calls(*cloud.create)]
    assert set(leaks(json.dumps(body))) == set(SECRETS.values()), "the request sent holds the values"
    final = handle.wait(poll_interval=0, sleep=lambda s: None, stream_logs=True)
    assert final.state.terminal
    lines = list(handle.logs())
    captured = capsys.readouterr()
    for shown in (repr(handle), handle._repr_html_(), captured.out, captured.err, *lines):
        assert leaks(shown) == [], shown


def test_role_repr_masks_secrets():
    job = serde.job_from_dict({**JOB, "primary": {"env": {"HF_TOKEN": SECRETS["HF_TOKEN"]}},
                               "workers": {"replicas": 1, "env": {"DB_PASSWORD": SECRETS["DB_PASSWORD"]}}})
    assert leaks(repr(job.primary)) == [] and leaks(repr(job.workers)) == []



@pytest.mark.parametrize("source", ["ai_platform", "vertex"])
def test_migration_report_shows_no_secret(isolated, source):
    native = omnidist.compile(serde.job_from_dict(JOB), backend=source).request
    compiled, report = migration.migrate(native, source, "azure_ml")
    assert SECRETS["API_KEY"] in compiled.render(), "the migrated request still carries the job's env"
    for shown in (str(report), json.dumps(report.to_dict()), report._repr_html_()):
        assert leaks(shown) == [], shown


def _compile_cli(tmp_path, backend):
    job_file = tmp_path / "job.yaml"
    job_file.write_text(serde.dump_yaml(JOB))
    return run_cli("compile", str(job_file), "--backend", backend, cwd=tmp_path, env={
        "AZURE_CLIENT_SECRET": CREDENTIAL, "GOOGLE_OAUTH_ACCESS_TOKEN": CREDENTIAL})


@pytest.mark.parametrize("backend", ["ai_platform", "azure_ml", "vertex"])
def test_cli_note_lines_show_no_secret(tmp_path, backend):
    result = _compile_cli(tmp_path, backend)
    assert result.returncode == 0, result.stderr
    assert "note:" in result.stderr
    assert leaks(result.stderr) == [], result.stderr
    assert SECRETS["API_KEY"] in result.stdout and CREDENTIAL not in result.stdout


@pytest.mark.parametrize("backend", ["ai_platform", "vertex"])
def test_cli_migration_report_shows_no_secret(tmp_path, backend):
    native = tmp_path / "native.json"
    native.write_text(_compile_cli(tmp_path, backend).stdout)
    migrated = run_cli("migrate", str(native), "--to", "azure_ml", cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert "migration" in migrated.stderr and leaks(migrated.stderr) == [], migrated.stderr
    assert SECRETS["API_KEY"] in migrated.stdout


def test_local_streamed_logs_mask_secrets(isolated, capsys):
    """A local job that prints its secrets: the raw log has them, the followed display does not."""
    job = serde.job_from_dict({
        **JOB, "command": [sys.executable, "-c", "import os, time; print('key', os.environ['API_KEY'], flush=True); time.sleep(1)"],
        "primary": {}, "workers": None,
    })
    handle = omnidist.submit(job, backend="local", settings={"runs_dir": str(isolated / "runs"), "emulate": "none"})
    final = handle.wait(poll_interval=0.05, timeout=60, stream_logs=True)
    assert final.state.value == "succeeded", final
    assert SECRETS["API_KEY"] in "\n".join(handle.logs()), "the job really printed it"
    captured = capsys.readouterr()
    assert "key" in captured.err, "the log line was streamed"
    assert leaks(captured.err + captured.out) == [], captured.err
