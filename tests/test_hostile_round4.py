"""Hostile inputs, round four: importer inputs with keys that are not strings and numbers at a
float's extremes; price catalogs with non-finite prices; the ledger on a broken file."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from omnidist.cli import main

KUBEFLOW_LIMIT = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: x}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: img
            resources:
              limits: {hugepages-2Mi: LIMIT}
"""


@pytest.mark.parametrize("backend, text, where", [
    ("azure_ml", "1: 2\n", "1: unknown key"),
    ("azure_ml", "command: x\n? [a, b]\n: c\n", "not valid YAML"),
    ("ai_platform", "trainingInput: {1: 2}\n", "trainingInput.1: unknown key"),
    ("ai_platform", "trainingInput: {null: 2, 1.5: 3}\n", "unknown key"),
    ("vertex", "jobSpec: {1: 2}\n", "1"),
    ("sagemaker", "{1: 2}\n", "not a SageMaker job"),
    ("kubernetes", KUBEFLOW_LIMIT.replace("LIMIT", "-1.0e+308"), "must not be negative"),
    ("kubernetes", KUBEFLOW_LIMIT.replace("LIMIT", "1.0e+308"), "hugepages-2Mi"),
    ("kubernetes", KUBEFLOW_LIMIT.replace("LIMIT", "-5e-324"), "must not be negative"),
])
def test_keys_that_are_not_strings_and_extreme_numbers_are_clean_errors(tmp_path, backend, text, where):
    path = tmp_path / "native.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["import", str(path), "--from", backend])
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output and where in result.output, result.output


def test_a_kubeflow_resource_named_by_a_number_is_a_clean_error(tmp_path):
    """Found by the bench fuzz campaign: ``requests: {1: 2}``."""
    path = tmp_path / "native.yaml"
    path.write_text(KUBEFLOW_LIMIT.replace("limits: {hugepages-2Mi: LIMIT}", "requests: {1: 2}"))
    result = CliRunner().invoke(main, ["import", str(path), "--from", "kubernetes"])
    assert result.exit_code == 2 and "the key 1 is not a string" in result.output, result.output


# --- the job ledger -------------------------------------------------------------------------------

import os  # noqa: E402 - the ledger section's own imports
import sqlite3  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from omnidist import api  # noqa: E402
from omnidist.errors import LedgerError  # noqa: E402
from omnidist.submission import ledger  # noqa: E402

ROW = {"name": "x", "backend": "vertex", "state": "submitted", "job_hash": "h", "placement": "p", "attempt": 1,
       "config_dir": "/nonexistent"}


@pytest.fixture
def state(tmp_path, monkeypatch, isolated):
    monkeypatch.setenv("OMNIDIST_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("OMNIDIST_NO_LEDGER", raising=False)
    return tmp_path / "state"


def test_a_ledger_linked_to_dev_null_says_so(state):
    state.mkdir()
    (state / "jobs.db").symlink_to(os.devnull)
    with pytest.raises(LedgerError, match="is a link to /dev/null, not a database file") as caught:
        ledger.Ledger.default().add(**ROW)
    assert "rollback" not in str(caught.value) and "mv " in str(caught.value)


FULL = """
import resource, signal, sys
from omnidist.submission.ledger import Ledger
from omnidist.errors import LedgerError
book = Ledger(sys.argv[1], timeout=1)
book.add(name="x", backend="vertex", state="s", job_hash="h", placement="p", attempt=1, config_dir="/")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))  # a disk that is full past 100 kB
try:
    for _ in range(1000):
        book.add(name="x", backend="vertex", state="s", job_hash="h", placement="p", attempt=1, config_dir="/",
                 reason="r" * 5000)
except LedgerError as exc:
    print(exc)
"""


def test_a_full_disk_says_so(tmp_path):
    done = subprocess.run([sys.executable, "-c", FULL, str(tmp_path / "jobs.db")], capture_output=True, text=True,
                          timeout=120)
    assert "the disk may be full" in done.stdout and "OMNIDIST_STATE_DIR" in done.stdout, done.stdout + done.stderr


def many_rows(count: int) -> ledger.Ledger:
    """A ledger of ``count`` live jobs, written directly (fast), plus the one ``add`` made."""
    book = ledger.Ledger.default()
    book.add(**ROW)
    with sqlite3.connect(book.path) as raw:
        raw.executemany("INSERT INTO jobs (name, id, backend, state, job_hash, placement, attempt, config_dir, "
                        "submitted_at, updated_at) VALUES (?, ?, 'vertex', 'running', 'h', 'p', 1, '/nonexistent', "
                        "'2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
                        ((f"job-{n}", f"projects/p/locations/us-central1/customJobs/{n}") for n in range(count)))
    return book


def test_jobs_pages_by_default_and_refresh_asks_about_the_rows_shown_only(state):
    book = many_rows(100_000)
    started = time.monotonic()
    listed = CliRunner().invoke(main, ["jobs"])
    assert listed.exit_code == 0, listed.output
    assert "showing the newest 50 of 100,001 rows; -n N shows more, --all every one" in listed.stderr
    assert listed.stdout.count("customJobs/") == 50
    refreshed = CliRunner().invoke(main, ["jobs", "--refresh", "-n", "5"])
    assert refreshed.exit_code == 0, refreshed.output
    assert time.monotonic() - started < 60
    asked = [r for r in book.records() if r.reason.startswith("refresh failed")]
    assert [r.name for r in asked] == [f"job-{n}" for n in range(99_999, 99_994, -1)], "the five shown, no more"


def test_status_by_name_with_a_backend_still_finds_the_ledgers_job(state):
    many_rows(3)
    handle = api.attach("job-1", backend="vertex")
    assert handle.id == "projects/p/locations/us-central1/customJobs/1"
    assert api.attach("job-1", backend="azure_ml").id == "job-1", "a row of another backend is not that job"


def test_an_unknown_name_exits_2(state):
    done = CliRunner().invoke(main, ["status", "no-such-job"])
    assert done.exit_code == 2 and "no job 'no-such-job'" in done.output, done.output
