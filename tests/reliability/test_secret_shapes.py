"""Secrets by the shape of the value, not only by the variable's name: a password in a database
URL, a storage connection string's ``AccountKey=``, a Sentry DSN, ``MY_PASS`` and ``AUTH``, a
token of a well-known form. None shows on any output path: notebook reprs, an error a cloud
echoes, a failed job's message, the migration report, ``omnidist import``'s remarks, ``omnidist
run``'s replica output and ``omnidist logs ID --backend local``.
"""

from __future__ import annotations

import json
import sys

import pytest

import omnidist
from omnidist import migration
from omnidist.backend.values import JobState
from omnidist.errors import InvalidRequestError
from omnidist.model import serde
from omnidist.model.job import job_from_dict
from omnidist.secrets import MASK, is_secret, mask_shapes, mask_text, secret_parts, secret_values
from omnidist.testing import Fault
from omnidist.testing.cli import run_cli
from omnidist.testing.harness import cloud_backends, required_settings

pytestmark = pytest.mark.suite("secrets")

PASSWORD = "pw-Sh4pe-9x"
ACCOUNT_KEY = "Zm9vYmFyYmF6cXV4" * 5 + "Zm9vYmF=="
DSN_KEY = "0123456789abcdef0123456789abcdef"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
ENV = {
    "DATABASE_URL": f"postgres://trainer:{PASSWORD}@db.internal:5432/runs",
    "STORAGE": f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={ACCOUNT_KEY};EndpointSuffix=core.windows.net",
    "SENTRY_DSN": f"https://{DSN_KEY}@o1.ingest.sentry.io/42",
    "MY_PASS": "plain-pass-value-77",
    "AUTH": "plain-auth-value-88",
    "NOTES": f"pushes with {GITHUB}",
    "NCCL_DEBUG": "INFO",
}
SHOWN_SECRETS = (PASSWORD, ACCOUNT_KEY, DSN_KEY, GITHUB, "plain-pass-value-77", "plain-auth-value-88")

JOB = {"name": "shape-job", "framework": "pytorch", "image": "gcr.io/p/train:1", "command": ["python", "train.py"],
       "args": ["--db", ENV["DATABASE_URL"]], "env": ENV, "primary": {"accelerator": "T4:1"},
       "workers": {"replicas": 1}}


def leaks(text: str) -> list[str]:
    return [v for v in SHOWN_SECRETS if v in text]


@pytest.mark.parametrize("name", ["MY_PASS", "AUTH", "SENTRY_DSN", "DB_PWD", "BASIC_AUTH", "CONNECTION_STRING",
                                  "AZURE_STORAGE_SAS", "PASSPHRASE", "SESSION_COOKIE", "OAUTH_CLIENT_ID"])
def test_more_names_are_secret(name):
    assert is_secret(name)


@pytest.mark.parametrize("name", ["GIT_AUTHOR_NAME", "PASSPORT_ID", "BYPASS_CACHE", "NCCL_DEBUG", "PATH"])
def test_ordinary_names_are_not(name):
    assert not is_secret(name)


@pytest.mark.parametrize("text, secret", [
    ("postgres://u:hunter22@host/db", "hunter22"),
    ("mongodb+srv://admin:p%40ss@cluster0.x.net/?retryWrites=true", "p%40ss"),
    (f"https://{DSN_KEY}@o1.ingest.sentry.io/1", DSN_KEY),
    (f"AccountName=a;AccountKey={ACCOUNT_KEY};", ACCOUNT_KEY),
    ("Endpoint=sb://ns/;SharedAccessKeyName=root;SharedAccessKey=abcDEF123+/=", "abcDEF123+/="),
    ("https://acct.blob.core.windows.net/c?sv=2021&sig=AbC%2Bdef123&se=2030", "AbC%2Bdef123"),
    ("Authorization: Bearer abcdefghijklmnopqrstuv", "abcdefghijklmnopqrstuv"),
    (f"token {GITHUB}", GITHUB),
    ("AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"),
    ("hf_abcdefghijklmnopqrstuvwxyzABCDEF", "hf_abcdefghijklmnopqrstuvwxyzABCDEF"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlXzEyMw", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlXzEyMw"),
])
def test_values_shaped_like_secrets_are_found_and_masked(text, secret):
    assert secret in secret_parts(text)
    masked = mask_shapes(text)
    assert secret not in masked and MASK in masked


@pytest.mark.parametrize("text", ["https://example.com/a/b", "gs://bucket/path", "user@example.com",
                                  "python -m trainer.task --lr=0.1", "sha256:" + "a" * 64])
def test_ordinary_values_are_left_alone(text):
    assert mask_shapes(text) == text and secret_parts(text) == []


def test_secret_values_collects_shapes_from_every_string():
    found = secret_values({"args": ["--db", ENV["DATABASE_URL"]], "env": ENV})
    assert {PASSWORD, ACCOUNT_KEY, DSN_KEY, GITHUB, "plain-pass-value-77", "plain-auth-value-88"} <= found
    assert mask_text(f"connect failed: {PASSWORD}", found) == f"connect failed: {MASK}"


def test_notebook_reprs_show_no_secret():
    from omnidist.model.roles import effective_role

    job = job_from_dict({**JOB, "workers": {"replicas": 1, "args": ["--db", ENV["DATABASE_URL"]]}})
    compiled = omnidist.compile(job, backend="vertex")
    for shown in (repr(job), job._repr_html_(), repr(job.primary), repr(job.workers),
                  repr(effective_role(job, "workers")), repr(compiled), compiled._repr_html_()):
        assert leaks(shown) == [], shown
    assert PASSWORD in compiled.render(), "the request itself keeps every value"


CLOUDS = sorted(cloud_backends())
ECHO = f"cannot reach postgres://trainer:{PASSWORD}@db.internal: AccountKey={ACCOUNT_KEY}; {GITHUB} refused"


def test_an_echoed_cloud_error_shows_no_secret(cloud):
    cloud.server.fail(*cloud.create, Fault.http(400, ECHO))
    with pytest.raises(InvalidRequestError) as err:
        cloud.submit(JOB)
    assert leaks(str(err.value)) == [] and "cannot reach postgres://trainer:" + MASK in str(err.value)


def test_a_failed_jobs_message_shows_no_secret(cloud):
    cloud.service.fail_jobs(ECHO)
    handle = cloud.submit(JOB)
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.FAILED and leaks(final.message) == [] and MASK in final.message, final


PAIRS = [(s, t) for s, t in zip(CLOUDS, CLOUDS[1:] + CLOUDS[:1]) if s != t]


@pytest.mark.parametrize("source, target", PAIRS)
def test_the_migration_report_and_import_remarks_show_no_secret(isolated, source, target):
    native = omnidist.compile(job_from_dict(JOB), backend=source, settings=required_settings(source)).request
    compiled, report = migration.migrate(native, source, target, settings=required_settings(target))
    for shown in (str(report), json.dumps(report.to_dict()), report._repr_html_()):
        assert leaks(shown) == [], shown
    from omnidist.backend import registry
    from omnidist.migration.imports import import_job

    job, _, entries = import_job(native, registry.get(source))
    printed = migration.job_yaml_with_comments(job, entries, source, None)
    comments = "\n".join(line.split("#", 1)[1] for line in printed.splitlines() if "#" in line)
    assert leaks(comments) == [], comments


def test_an_error_about_a_native_file_shows_no_secret(tmp_path):
    spec = tmp_path / "job.yml"
    spec.write_text(serde.dump_yaml({"command": "python t.py", "environment": {"image": "python:3.11"},
                                     "resources": {"instance_count": f"postgres://u:{PASSWORD}@h/db"}}))
    done = run_cli("migrate", str(spec), "--from", "azure_ml", "--to", "vertex")
    assert done.returncode == 2 and leaks(done.stderr) == [], done.stderr


PRINTER = ("import os; print('db', os.environ['DATABASE_URL'], 'key', os.environ['STORAGE'], "
           "'pass', os.environ['MY_PASS'], flush=True)")


def local_job(tmp_path) -> str:
    job = {**JOB, "command": [sys.executable, "-c", PRINTER], "args": [], "primary": {}, "workers": None}
    path = tmp_path / "job.yaml"
    path.write_text(serde.dump_yaml({k: v for k, v in job.items() if v is not None}))
    return str(path)


def test_omnidist_run_masks_replica_output(tmp_path):
    done = run_cli("run", local_job(tmp_path), "--emulate", "none", cwd=tmp_path,
                   env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert done.returncode == 0, done.stderr
    assert "[primary-0] db postgres://trainer:" + MASK in done.stdout
    assert leaks(done.stdout + done.stderr) == [], done.stdout


def test_omnidist_logs_of_a_local_run_masks_replica_output(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    (tmp_path / "omnidist.toml").write_text(f'[profiles.laptop]\nbackend = "local"\nruns_dir = "{tmp_path / "runs"}"'
                                            '\nemulate = "none"\n')
    submitted = run_cli("submit", local_job(tmp_path), "--profile", "laptop", "--wait", "--poll", "0.05",
                        cwd=tmp_path, env=env)
    assert submitted.returncode == 0, submitted.stderr
    run_id = submitted.stdout.splitlines()[0]
    logs = run_cli("logs", run_id, "--profile", "laptop", "--backend", "local", cwd=tmp_path, env=env)
    assert logs.returncode == 0 and "db postgres://trainer:" + MASK in logs.stdout, logs.stdout + logs.stderr
    assert leaks(logs.stdout + logs.stderr + submitted.stdout + submitted.stderr) == []
    assert PASSWORD in (tmp_path / "runs" / run_id / "output.log").read_text(), "the run's own log keeps it"
