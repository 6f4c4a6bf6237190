"""The job ledger: where it lives, its schema and migrations, concurrent writers in real processes,
and clear errors for a locked, damaged or newer database (SPEC §12)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from omnidist.errors import LedgerError, NotFoundError
from omnidist.submission import ledger
from omnidist.submission.ledger import Ledger
from omnidist.testing.cli import run_cli

JOB = "name: tiny\nframework: pytorch\nimage: img\ncommand: [python, -c, pass]\nprimary: {}\n"


def test_the_ledger_lives_in_the_state_folder(tmp_path):
    assert ledger.state_dir({"OMNIDIST_STATE_DIR": "/s/o"}) == Path("/s/o")
    assert ledger.state_dir({"XDG_STATE_HOME": "/x", "HOME": "/h"}) == Path("/x/omnidist")
    assert ledger.state_dir({"HOME": "/h"}) == Path("/h/.local/state/omnidist")
    assert Ledger.default({"OMNIDIST_NO_LEDGER": "1", "HOME": "/h"}) is None
    assert Ledger.default({"OMNIDIST_NO_LEDGER": "0", "HOME": "/h"}).path == Path("/h/.local/state/omnidist/jobs.db")


def test_tests_write_no_state_into_the_home_folder():
    assert Path.home() / ".local" / "state" not in Ledger.default().path.parents


def test_rows_are_written_read_newest_first_and_found_by_id_or_name(tmp_path):
    book = Ledger(tmp_path / "jobs.db")
    first = book.add(name="bert", backend="vertex", profile="gcp", state="refused", reason="quota")
    second = book.add(name="bert", backend="azure_ml", profile="azure", state="creating")
    book.update(second, id="bert-1234", url="https://ml.azure.com/x", state="submitted")
    book.add(name="other", backend="local", state="submitted", id="run-1")
    assert [r.seq for r in book.records()] == [3, second, first]
    assert book.find("bert").id == "bert-1234", "a name finds its newest job that was made"
    assert book.find("run-1").name == "other"
    assert book.find("nothing") is None
    assert [r.state for r in book.records(state="refused")] == ["refused"]
    assert [r.backend for r in book.records(backend="azure_ml")] == ["azure_ml"]
    record = book.find("bert")
    assert record.live and not book.records(state="refused")[0].live
    assert list(record.to_json()) == list(ledger.PUBLIC_KEYS)
    assert record.submitted_at.endswith("+00:00")


def test_a_name_with_only_refused_attempts_says_so():
    from omnidist import api

    book = Ledger.default()
    book.add(name="nowhere", backend="vertex", profile="gcp", state="refused", reason="quota: no A100s")
    with pytest.raises(NotFoundError, match="job 'nowhere' was never created: its last attempt was refused on gcp"):
        api.attach("nowhere")


def test_the_database_is_in_wal_mode_at_the_current_schema(tmp_path):
    book = Ledger(tmp_path / "jobs.db")
    book.records()
    with sqlite3.connect(book.path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA user_version").fetchone()[0] == ledger.SCHEMA_VERSION


def test_an_older_schema_is_migrated_in_place_keeping_its_rows(tmp_path):
    path = tmp_path / "jobs.db"
    with sqlite3.connect(path) as connection:
        for statement in ledger.MIGRATIONS[0]:
            connection.execute(statement)
        connection.execute("INSERT INTO jobs (name, id, backend, state, submitted_at, updated_at) VALUES "
                           "('old', 'j-1', 'vertex', 'running', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00')")
        connection.execute("PRAGMA user_version = 1")
    (old,) = Ledger(path).records()
    assert (old.name, old.id, old.placement, old.attempt) == ("old", "j-1", "", 1)
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == ledger.SCHEMA_VERSION
        indexes = {row[1] for row in connection.execute("PRAGMA index_list(jobs)")}
    assert {"jobs_by_name", "jobs_by_id"} <= indexes


def test_a_newer_schema_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "jobs.db"
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {ledger.SCHEMA_VERSION + 1}")
    with pytest.raises(LedgerError, match=f"{path}: the job ledger was written by a newer omnidist"):
        Ledger(path).records()


def test_a_damaged_database_is_a_clear_error_and_is_left_as_it_is(tmp_path):
    path = tmp_path / "jobs.db"
    path.write_bytes(b"this is not a database, just some bytes " * 100)
    before = path.read_bytes()
    with pytest.raises(LedgerError) as caught:
        Ledger(path).add(name="x", backend="local", state="creating")
    assert f"{path}: the job ledger is damaged" in str(caught.value) and f"mv {path}" in str(caught.value)
    assert path.read_bytes() == before, "nothing is rewritten: the user decides"


def test_a_locked_database_is_a_clear_error_naming_the_file(tmp_path):
    path = tmp_path / "jobs.db"
    Ledger(path).records()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(LedgerError, match=f"{path}: the job ledger is locked by another process"):
            Ledger(path, timeout=0.2).add(name="x", backend="local", state="creating")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_folder_that_cannot_be_written_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LedgerError, match="cannot make the ledger's folder"):
        Ledger(blocker / "state" / "jobs.db").records()


WRITER = textwrap.dedent("""
    import sys
    from omnidist.submission.ledger import Ledger
    book = Ledger(sys.argv[1])
    for n in range(int(sys.argv[3])):
        seq = book.add(name=f"{sys.argv[2]}-{n}", backend="local", state="creating")
        book.update(seq, id=f"{sys.argv[2]}-{n}", state="submitted")
""")


def test_concurrent_writers_in_separate_processes_are_all_recorded(tmp_path):
    path = tmp_path / "jobs.db"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{i}", "25"]) for i in range(6)]
    assert [w.wait(timeout=120) for w in writers] == [0] * 6
    found = Ledger(path).records()
    assert len(found) == 150 and {r.state for r in found} == {"submitted"}
    assert {r.id for r in found} == {f"w{i}-{n}" for i in range(6) for n in range(25)}


def test_concurrent_submits_from_several_shells_are_all_recorded(isolated):
    (isolated / "job.yaml").write_text(JOB)
    shells = [subprocess.Popen([str(Path(sys.executable).with_name("omnidist")), "submit", "job.yaml", "-b", "local"],
                               cwd=isolated, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(4)]
    outputs = [shell.communicate(timeout=120) for shell in shells]
    assert [shell.returncode for shell in shells] == [0] * 4, outputs
    ids = {out.split()[0] for out, _ in outputs}
    found = Ledger.default().records()
    assert {r.id for r in found} == ids and len(found) == 4
    assert {(r.backend, r.profile, r.state) for r in found} == {("local", None, "submitted")}


def test_the_cli_reports_a_damaged_ledger_without_a_traceback(isolated):
    path = Ledger.default().path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"garbage" * 1000)
    (isolated / "job.yaml").write_text(JOB)
    for args in (("jobs",), ("submit", "job.yaml", "-b", "local")):
        done = run_cli(*args, cwd=isolated)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert f"{path}: the job ledger is damaged" in done.stderr
    assert not (Path(ledger.state_dir()) / "runs").exists(), "a submit that cannot be recorded creates nothing"


def test_no_ledger_turns_recording_off(isolated):
    (isolated / "job.yaml").write_text(JOB)
    done = run_cli("submit", "job.yaml", "-b", "local", cwd=isolated, env={"OMNIDIST_NO_LEDGER": "1"})
    assert done.returncode == 0, done.stderr
    assert not Ledger.default().path.exists()
    done = run_cli("jobs", cwd=isolated, env={"OMNIDIST_NO_LEDGER": "1"})
    assert done.returncode == 1 and "the job ledger is off" in done.stderr


def test_a_local_submit_is_recorded_and_followed_by_name(isolated):
    (isolated / "job.yaml").write_text(JOB)
    done = run_cli("submit", "job.yaml", "-b", "local", cwd=isolated)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.split()[0]
    listed = json.loads(run_cli("jobs", "-o", "json", cwd=isolated).stdout)
    assert [(j["name"], j["id"], j["backend"], j["state"]) for j in listed] == [("tiny", run_id, "local", "submitted")]
    done = run_cli("status", "tiny", cwd=isolated)
    assert done.returncode == 0 and done.stdout.split()[0] in ("running", "succeeded", "queued"), done.stderr


def test_the_job_list_is_a_table_in_notebooks(tmp_path):
    book = Ledger(tmp_path / "jobs.db")
    book.add(name="bert", backend="vertex", profile="gcp", state="refused", reason="quota: <no A100s>")
    html = book.records()._repr_html_()
    assert "omnidist jobs (1)" in html and "bert" in html and "&lt;no A100s&gt;" in html


def test_the_table_cuts_long_reasons_and_json_keeps_them(tmp_path):
    book = Ledger(tmp_path / "jobs.db")
    reason = "credentials: " + "the cloud refused the request because " * 8 + "\nsecond line"
    book.add(name="bert", backend="vertex", profile="gcp", state="refused", reason=reason)
    (shown,) = book.records().rows()
    assert shown[-1] == ledger.short(reason) and len(shown[-1]) == ledger.REASON_WIDTH and shown[-1].endswith("…")
    assert ledger.short("quota") == "quota" and ledger.short("") == ""
    assert book.records()[0].to_json()["reason"] == reason


def test_a_wait_records_the_state_it_saw(tmp_path):
    environ = {"OMNIDIST_STATE_DIR": str(tmp_path)}
    book = Ledger.default(environ)
    seq = book.add(name="bert", backend="vertex", state="submitted", id="job-1")
    book.add(name="ernie", backend="azure_ml", state="submitted", id="job-2")
    ledger.record_state("vertex", "job-1", "succeeded", "", environ)
    ledger.record_state("vertex", "job-2", "failed", "", environ)  # another backend's job: not this one
    ledger.record_state("vertex", "unknown", "failed", "", environ)  # no row: nothing to write
    assert {r.id: r.state for r in book.records()} == {"job-1": "succeeded", "job-2": "submitted"}
    assert book.records()[-1].seq == seq
    ledger.record_state("vertex", "job-1", "failed", "", {"OMNIDIST_NO_LEDGER": "1"})  # off: nothing
    assert book.find("job-1").state == "succeeded"
