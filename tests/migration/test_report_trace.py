"""Report lines traced to what wrote them: the note (and its code) a line came from, or the
migration step; ``omnidist migrate --debug`` shows it, and nothing else changes."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

import omnidist
from omnidist.backend.values import Note, NoteKind
from omnidist.migration.report import Fidelity, MigrationReport, ReportEntry, entry_for
from omnidist.model.features import NoteCode
from omnidist.testing.cli import run_cli

INPUTS = Path(__file__).parent / "golden" / "inputs"
A100 = INPUTS / "azure_ml_a100_80gb.yaml"


def _by_field(report: MigrationReport) -> dict[str, ReportEntry]:
    return {e.field: e for e in report.entries}


def test_a_line_from_a_note_keeps_the_notes_code_and_whose_note_it_was():
    note = Note(kind=NoteKind.DEFAULTED, field="primary.machine", message="picked n1", code=NoteCode.MACHINE_CHOSEN,
                data={"machine": "n1-standard-8"})
    entry = entry_for(note, "vertex compiler")
    assert (entry.fidelity, entry.code, entry.origin) == (Fidelity.APPROXIMATED, NoteCode.MACHINE_CHOSEN,
                                                          "vertex compiler")
    assert entry.trace == "vertex compiler machine.chosen"
    plain = entry_for(attrs.evolve(note, code=None), "azure_ml importer")
    assert plain.code is None and plain.trace == "azure_ml importer"


def test_tracing_changes_neither_how_a_line_prints_nor_which_lines_are_equal():
    traced = ReportEntry(fidelity=Fidelity.EXACT, field="image", message="img:1", origin="migration move",
                         code=NoteCode.DETAIL)
    bare = ReportEntry(fidelity=Fidelity.EXACT, field="image", message="img:1")
    assert traced == bare and str(traced) == str(bare) == f"{'exact':<12} image: img:1"
    assert bare.trace == "migration"


def test_a_fidelity_is_the_enum_never_a_loose_string():
    with pytest.raises(TypeError):
        ReportEntry(fidelity="exact", field="image", message="img:1")
    assert Fidelity("dropped") is Fidelity.DROPPED and Fidelity.DROPPED == "dropped"  # JSON keeps the words


def test_every_line_of_a_migration_says_where_it_came_from(isolated):
    """The machine the target picked is traced to the target compiler's note and its code, the
    accelerator read off the Azure VM size to the source importer, the rest to the step that wrote it."""
    _, report = omnidist.migrate(A100, target="vertex")
    found = _by_field(report)
    assert found["primary.machine"].trace == "vertex compiler machine.chosen"
    assert found["primary.accelerator"].trace == "azure_ml importer"
    assert found["region"].trace == "migration region"
    assert found["image"].trace == "migration exact"
    assert all(e.origin for e in report.entries), [str(e) for e in report.entries if not e.origin]
    untraced = report.to_dict()
    assert all(set(e) == {"fidelity", "field", "message"} for e in untraced["entries"])  # -o json unchanged
    entries = report.to_dict(traced=True)["entries"]
    machine = next(e for e in entries if e["field"] == "primary.machine")
    assert (machine["origin"], machine["code"]) == ("vertex compiler", "machine.chosen")


def test_the_target_given_as_the_registrys_object_migrates_as_by_name(isolated):
    from omnidist.backend import registry

    by_name = omnidist.migrate(A100, target="vertex")
    by_object = omnidist.migrate(A100, source=registry.get("azure_ml"), target=registry.get("vertex"))
    assert by_object[0].request == by_name[0].request and str(by_object[1]) == str(by_name[1])


@pytest.mark.parametrize("where", ["after", "before"])
def test_migrate_debug_shows_each_lines_origin(where):
    args = ["migrate", str(A100), "--to", "vertex"]
    run = run_cli(*(args + ["--debug"] if where == "after" else ["--debug", *args]), env={"NO_COLOR": "1"})
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("  ")]
    assert lines and all(line.endswith("]") for line in lines), run.stderr
    machine = next(line for line in lines if "primary.machine:" in line)
    assert machine.endswith("  [vertex compiler machine.chosen]")
    plain = run_cli(*args, env={"NO_COLOR": "1"})
    assert plain.returncode == 0 and "[vertex compiler" not in plain.stderr
    assert plain.stdout == run.stdout  # the request is the same


def test_migrate_debug_json_carries_origin_and_code():
    run = run_cli("migrate", str(A100), "--to", "vertex", "-o", "json", "--debug")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stderr[run.stderr.index("{"):])
    assert all({"origin", "code"} <= set(e) for e in report["entries"])
    assert {"vertex compiler", "azure_ml importer"} <= {e["origin"] for e in report["entries"]}


def test_the_coloured_report_ends_each_line_with_its_trace_too():
    from omnidist.cli import style

    report = MigrationReport(source="azure_ml", target="vertex", entries=[
        ReportEntry(fidelity=Fidelity.APPROXIMATED, field="primary.machine", message="picked a2",
                    origin="vertex compiler", code=NoteCode.MACHINE_CHOSEN),
        ReportEntry(fidelity=Fidelity.EXACT, field="image", message="img:1", origin="migration exact")])
    coloured = style.report(report, True, traced=True)
    assert "\x1b[" in coloured and "picked a2  [vertex compiler machine.chosen]" in coloured
    assert "img:1  [migration exact]" in coloured
    assert "[vertex compiler" not in style.report(report, True)
    assert style.report(report, False, traced=True) == report.traced()
