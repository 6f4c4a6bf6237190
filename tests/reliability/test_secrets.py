"""No secret leaks: secret-looking env values are in the request (that is the request) and
nowhere a person looks — reprs, notebook HTML, ``note:`` lines, migration reports, streamed
logs, and whatever a cloud repeats back (an error quoting the request, a failed job's message,
its log lines), also for a job known only by its id; credentials never reach compiled output.
"""

from __future__ import annotations

import json
import sys

import attrs
import pytest

import omnidist
from omnidist import migration
from omnidist.backend.values import JobState
from omnidist.errors import InvalidRequestError
from omnidist.model import serde
from omnidist.model.job import job_from_dict
from omnidist.secrets import MASK
from omnidist.submission.handle import JobHandle
from omnidist.testing import Fault
from omnidist.testing.cli import run_cli
from omnidist.testing.harness import cloud_backends, required_settings

pytestmark = pytest.mark.suite("secrets")

CLOUDS = sorted(cloud_backends())
"""The installed backends that talk to a cloud."""

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
    return {cloud.harness.key_file_setting: str(key)} if cloud.harness.key_file_setting else {}


PAIRS = [(source, target) for source, target in zip(CLOUDS, CLOUDS[1:] + CLOUDS[:1]) if source != target]
"""Each cloud backend migrated to the next (every one is a source and a target once)."""


def test_compiled_request_carries_secrets_but_no_display_does(cloud, credentials):
    job = job_from_dict(JOB)
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
    job = job_from_dict({**JOB, "primary": {"env": {"HF_TOKEN": SECRETS["HF_TOKEN"]}},
                               "workers": {"replicas": 1, "env": {"DB_PASSWORD": SECRETS["DB_PASSWORD"]}}})
    assert leaks(repr(job.primary)) == [] and leaks(repr(job.workers)) == []



@pytest.mark.parametrize("source, target", PAIRS)
def test_migration_report_shows_no_secret(isolated, source, target):
    native = omnidist.compile(job_from_dict(JOB), backend=source, settings=required_settings(source)).request
    compiled, report = migration.migrate(native, source, target, settings=required_settings(target))
    assert SECRETS["API_KEY"] in compiled.render(), "the migrated request still carries the job's env"
    for shown in (str(report), json.dumps(report.to_dict()), report._repr_html_()):
        assert leaks(shown) == [], shown


def _compile_cli(tmp_path, backend):
    job_file = tmp_path / "job.yaml"
    needs = required_settings(backend)
    job_file.write_text(serde.dump_yaml({**JOB, "backends": {backend: needs}} if needs else JOB))
    return run_cli("compile", str(job_file), "--backend", backend, cwd=tmp_path, env={
        "AZURE_CLIENT_SECRET": CREDENTIAL, "GOOGLE_OAUTH_ACCESS_TOKEN": CREDENTIAL})


@pytest.mark.parametrize("backend", CLOUDS)
def test_cli_note_lines_show_no_secret(tmp_path, backend):
    result = _compile_cli(tmp_path, backend)
    assert result.returncode == 0, result.stderr
    assert "note:" in result.stderr
    assert leaks(result.stderr) == [], result.stderr
    assert SECRETS["API_KEY"] in result.stdout and CREDENTIAL not in result.stdout


@pytest.mark.parametrize("backend, target", PAIRS)
def test_cli_migration_report_shows_no_secret(tmp_path, backend, target):
    native = tmp_path / "native.json"
    native.write_text(_compile_cli(tmp_path, backend).stdout)
    profile = _target_profile(tmp_path, target)
    migrated = run_cli("migrate", str(native), "--from", backend, "--to", target, *profile, cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert "migration" in migrated.stderr and leaks(migrated.stderr) == [], migrated.stderr
    assert SECRETS["API_KEY"] in migrated.stdout


def _target_profile(tmp_path, target) -> list[str]:
    """``--profile target`` naming the settings the target cannot compile without, when it has any."""
    needs = required_settings(target)
    if not needs:
        return []
    keys = "".join(f"{k} = {json.dumps(v)}\n" for k, v in needs.items())
    (tmp_path / "omnidist.toml").write_text(f'[profiles.target]\nbackend = "{target}"\n{keys}')
    return ["--profile", "target"]


def test_local_streamed_logs_mask_secrets(isolated, capsys):
    """A local job that prints its secrets: the raw log has them, the followed display does not."""
    job = job_from_dict(
        {
            **JOB,
            "command": [
                sys.executable,
                "-c",
                "import os, time; print('key', os.environ['API_KEY'], flush=True); time.sleep(1)",
            ],
            "primary": {},
            "workers": None,
        }
    )
    handle = omnidist.submit(job, backend="local", settings={"runs_dir": str(isolated / "runs"), "emulate": "none"})
    final = handle.wait(poll_interval=0.05, timeout=60, stream_logs=True)
    assert final.state.value == "succeeded", final
    assert SECRETS["API_KEY"] in "\n".join(handle.logs()), "the job really printed it"
    captured = capsys.readouterr()
    assert "key" in captured.err, "the log line was streamed"
    assert leaks(captured.err + captured.out) == [], captured.err


# --- what the cloud says back: errors, failed jobs' messages, log lines ---------------------------

ECHO = (f"Invalid credential API_KEY={SECRETS['API_KEY']}: the hub refused token \"{SECRETS['HF_TOKEN']}\" "
        f"and {json.dumps(SECRETS['DB_PASSWORD'])}")
"""A cloud repeating the job's secret values back (an error quoting the request, a job's failure)."""


def _masked(text: str) -> bool:
    """The echo is shown, its secrets masked."""
    return "Invalid credential API_KEY=" + MASK in text and leaks(text) == []


def test_an_error_quoting_the_request_shows_its_secrets_masked(cloud):
    cloud.server.fail(*cloud.create, Fault.http(400, ECHO))
    with pytest.raises(InvalidRequestError) as err:
        cloud.submit(JOB)
    assert _masked(str(err.value)), str(err.value)
    assert err.value.status == 400 and cloud.job_count() == 0


def test_a_failed_jobs_message_shows_its_secrets_masked(cloud):
    cloud.service.fail_jobs(ECHO)
    handle = cloud.submit(JOB)
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and _masked(final.message), final
    # A job known only by its id: the env to mask comes from the job the cloud returns.
    attached = JobHandle(backend=cloud.name, id=handle.id, settings=cloud.settings(), driver=cloud.backend)
    assert _masked(attached.status().message)
    lines = list(attached.logs(follow=True))
    assert any(_masked(line) for line in lines), lines
    assert leaks("\n".join(lines)) == []


def _prints_secret(cloud) -> bool:
    """Make the job print a secret in its own log, where the fake serves the job's output (Azure ML
    streams it); ``False`` where the fake serves none."""
    if not isinstance(getattr(cloud.service, "output", None), dict):
        return False
    cloud.service.output["Running"] = {"user_logs/std_log.txt": f"wandb key {SECRETS['API_KEY']}\n"}
    return True


def test_log_lines_repeating_a_secret_are_masked_for_a_job_known_by_its_id(cloud):
    """A cloud that streams the job's own output: a program printing its env leaks nothing."""
    if not _prints_secret(cloud):
        pytest.skip(f"the {cloud.name} fake serves no output of the job's own")
    handle = cloud.submit(JOB)
    attached = JobHandle(backend=cloud.name, id=handle.id, settings=cloud.settings(), driver=cloud.backend)
    lines = list(attached.logs(follow=True))
    assert f"wandb key {MASK}" in lines and leaks("\n".join(lines)) == [], lines


# --- the same through the CLI ----------------------------------------------------------------------

@pytest.fixture
def project(cloud, tmp_path, monkeypatch):
    """A job file with the secrets and a profile pointing the CLI at the cloud's fake; returns
    the CLI's environment."""
    # The Azure ML SDK records the cloud it used in this process's environment; the CLI's
    # process registers its own.
    monkeypatch.delenv("AZUREML_CURRENT_CLOUD", raising=False)
    settings = attrs.asdict(cloud.settings(poll_interval_s=0.0, retry_initial_wait_s=0.01))
    keys = "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()
                   if isinstance(v, (str, int, float)) and not isinstance(v, bool))
    (tmp_path / "omnidist.toml").write_text(f'default = "fake"\n[profiles.fake]\nbackend = "{cloud.name}"\n{keys}')
    (tmp_path / "job.yaml").write_text(serde.dump_yaml(JOB))
    return {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_cli_create_error_quoting_a_secret_is_masked(cloud, tmp_path, project):
    env = project
    cloud.server.fail(*cloud.create, Fault.http(400, ECHO))
    done = run_cli("submit", "job.yaml", cwd=tmp_path, env=env)
    assert done.returncode == 1 and _masked(done.stderr), done.stderr
    assert "Traceback" not in done.stderr


def test_cli_failed_job_status_and_logs_are_masked(cloud, tmp_path, project):
    env = project
    cloud.service.fail_jobs(ECHO)
    prints = _prints_secret(cloud)
    waited = run_cli("submit", "job.yaml", "--wait", "--poll", "0", cwd=tmp_path, env=env)
    assert waited.returncode == 1, waited.stderr
    job_id, *_, last = waited.stdout.strip().splitlines()
    assert last.startswith("failed — ") and _masked(last), waited.stdout
    assert leaks(waited.stdout + waited.stderr) == [], waited.stderr
    status = run_cli("status", job_id, cwd=tmp_path, env=env)
    assert status.returncode == 0 and _masked(status.stdout), status.stdout + status.stderr
    logs = run_cli("logs", job_id, "--follow", cwd=tmp_path, env=env)
    assert logs.returncode == 0 and _masked(logs.stdout), logs.stdout + logs.stderr
    assert leaks(logs.stdout + logs.stderr) == []
    if prints:
        assert f"wandb key {MASK}" in logs.stdout
