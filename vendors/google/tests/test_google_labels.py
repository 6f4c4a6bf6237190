"""Google Cloud label rules (omnidist/labels.py): one rule for both Google backends, and the
rewrite of free-form tags for ``migrate``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import omnidist
from omnidist.kit import ValidationError, dump_yaml
from omnidist.migration.report import Fidelity, StrictMigrationError
from omnidist.testing.cli import run_cli
from omnidist_google import google_labels as labels

GOOGLE = ("ai_platform", "vertex")
JOB = {"name": "labelled", "framework": "pytorch", "image": "gcr.io/p/t:1", "command": ["python", "t.py"],
       "primary": {}}


@pytest.mark.parametrize("key, value", [
    ("team", "vision"), ("a", ""), ("cost-center_2", "r-and-d_7"), ("équipe", "données"), ("チーム", "ビジョン"),
    ("k" * 63, "v" * 63),
])
def test_valid_labels(key, value):
    assert labels.problems({key: value}) == []


@pytest.mark.parametrize("key, value, words", [
    ("Team", "x", "does not start with a lowercase letter"),
    ("1team", "x", "does not start with a lowercase letter"),
    ("_team", "x", "does not start with a lowercase letter"),
    ("", "x", "does not start with a lowercase letter"),
    ("team@x", "x", "holds '@'"),
    ("teAm", "x", "holds 'A'"),
    ("k" * 64, "x", "has 64 characters"),
    ("owner", "a@b.com", "holds '.@'"),
    ("team", "Vision", "holds 'V'"),
    ("team", "v" * 64, "has 64 characters"),
    ("omnidist-request-id", "x", "reserved"),
])
def test_invalid_labels_name_the_key_the_rule_and_a_fix(key, value, words):
    (problem,) = labels.problems({key: value})
    assert problem.path == f"labels.{key}"
    assert words in problem.message
    assert "rename it" in problem.message or "write it as" in problem.message or "another key" in problem.message


def test_fixes_offered_are_valid():
    for key, value in {"Team": "Vision", "1x": "a@b.com", "k" * 80: "v" * 80}.items():
        assert labels.valid_key(labels.to_key(key)) and labels.valid_value(labels.to_value(value))


def test_a_job_keeps_one_label_for_the_submit_marker():
    assert labels.problems({f"k{i}": "v" for i in range(labels.MAX_JOB_LABELS)}) == []
    (problem,) = labels.problems({f"k{i}": "v" for i in range(64)})
    assert problem.path == "labels" and "at most 63" in problem.message


@pytest.mark.parametrize("backend", GOOGLE)
@pytest.mark.parametrize("bad", [{"Team": "vision"}, {"owner": "someone@example.com"}, {"team": "v" * 64}])
def test_both_google_backends_refuse_the_same_labels_with_the_same_problem(backend, bad):
    with pytest.raises(ValidationError) as err:
        omnidist.compile({**JOB, "labels": bad}, backend=backend)
    assert err.value.exit_code == 2
    assert list(err.value.problems) == labels.problems(bad)


def test_azure_ml_takes_any_tag():
    compiled = omnidist.compile({**JOB, "labels": {"Owner": "someone@example.com"}}, backend="azure_ml")
    assert compiled.request["tags"] == {"Owner": "someone@example.com"}


def test_rewrite_keeps_valid_labels_and_reports_each_change():
    tags = {"team": "vision", "Project": "Data AI VLA", "owner": "a@b.com", "2024": "q1"}
    rewritten, changes = labels.rewrite(tags)
    assert rewritten == {"team": "vision", "project": "data_ai_vla", "owner": "a_b_com", "tag_2024": "q1"}
    assert [(c.tag, c.key, c.value) for c in changes] == [
        ("Project", "project", "data_ai_vla"), ("owner", "owner", "a_b_com"), ("2024", "tag_2024", "q1")]


def test_rewrite_keeps_tags_that_collide_apart_and_drops_what_does_not_fit():
    rewritten, changes = labels.rewrite({"team": "a", "Team": "b", "TEAM": "c"})
    assert rewritten["team"] == "a" and len(rewritten) == 3 and set(rewritten.values()) == {"a", "b", "c"}
    many = {f"K{i}": "v" for i in range(70)}
    rewritten, changes = labels.rewrite(many)
    assert len(rewritten) == labels.MAX_JOB_LABELS
    assert [c.tag for c in changes if c.key is None] == [f"K{i}" for i in range(63, 70)]


@given(st.dictionaries(st.text(max_size=80), st.text(max_size=80), max_size=70))
def test_rewritten_tags_always_pass_the_rule(tags):
    rewritten, changes = labels.rewrite(tags)
    assert labels.problems(rewritten) == []
    assert len(rewritten) == min(len(tags), labels.MAX_JOB_LABELS)
    unchanged = {c.tag for c in changes}
    assert all(rewritten.get(tag) == value for tag, value in tags.items() if tag not in unchanged)


# --- migrate: Azure ML tags (free-form) into Google labels ----------------------------------------

TAGS = {"team": "vision", "Project": "Data AI VLA", "owner": "someone@example.com"}


def _azure_native(tmp_path=None):
    native = omnidist.compile({**JOB, "labels": TAGS, "primary": {"accelerator": "V100:1"}},
                              backend="azure_ml").request
    if tmp_path is None:
        return native
    path = tmp_path / "azure.yaml"
    path.write_text(dump_yaml(native))
    return path


@pytest.mark.parametrize("target", GOOGLE)
def test_migrate_rewrites_azure_tags_into_google_labels_and_reports_each(target):
    compiled, report = omnidist.migrate(_azure_native(), "azure_ml", target)
    assert compiled.request["labels"] == {"team": "vision", "project": "data_ai_vla", "owner": "someone_example_com"}
    rewrites = {e.field: e for e in report.entries if e.field.startswith("labels")}
    assert set(rewrites) == {"labels.Project", "labels.owner"}, "a valid tag is not a rewrite"
    assert rewrites["labels.Project"].fidelity is Fidelity.CHANGED
    assert "'Data AI VLA' is now project: 'data_ai_vla'" in rewrites["labels.Project"].message
    with pytest.raises(StrictMigrationError) as err:
        omnidist.migrate(_azure_native(), "azure_ml", target, strict=True)
    assert "labels.Project (changed)" in str(err.value) and "labels.owner (changed)" in str(err.value)


def test_migrate_cli_reports_rewrites_and_strict_refuses_them(tmp_path):
    native = _azure_native(tmp_path)
    done = run_cli("migrate", str(native), "--to", "ai_platform", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["labels"]["owner"] == "someone_example_com"
    assert "changed      labels.owner: owner: 'someone@example.com' is now owner: 'someone_example_com'" in done.stderr
    strict = run_cli("migrate", str(native), "--to", "vertex", "--strict", cwd=tmp_path)
    assert strict.returncode == 3 and strict.stdout == ""
    assert "changed      labels.Project" in strict.stderr and "--strict" in strict.stderr


def test_migrate_between_clouds_keeps_valid_labels_untouched():
    native = omnidist.compile({**JOB, "labels": {"team": "vision"}}, backend="azure_ml").request
    compiled, report = omnidist.migrate(native, "azure_ml", "vertex", strict=True)
    assert compiled.request["labels"] == {"team": "vision"}
    assert [e.field for e in report.entries if e.field.startswith("labels")] == ["labels"]  # exact
