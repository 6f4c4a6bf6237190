"""Tuning jobs moving between clouds: every direction, the report naming each distribution that
changes, ``--strict``, format detection, and the real tuning files of the corpus read in place."""

from __future__ import annotations

import json
from itertools import permutations
from pathlib import Path

import pytest
import yaml

import omnidist
from omnidist.backend import registry
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.migration.imports import import_job
from omnidist.migration.native import detect_backend
from omnidist.migration.report import StrictMigrationError
from omnidist.model import serde
from omnidist.model.job import job_from_yaml
from omnidist.testing.cli import run_cli

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
BACKENDS = ("vertex", "ai_platform", "azure_ml")

JOB = """\
name: tuned
framework: pytorch
image: gcr.io/p/trainer:1
command: [python, train.py]
primary: {accelerator: "V100:1"}
tuning:
  metric: {name: accuracy, goal: maximize}
  parameters:
    lr: {type: double, min: 1.0e-4, max: 1.0e-1, scale: log}
    depth: {type: integer, min: 2, max: 6}
    optimizer: {type: categorical, values: [adam, sgd]}
  algorithm: random
  max_trials: 12
  parallel_trials: 3
"""


def native(backend: str) -> dict:
    return json.loads(json.dumps(omnidist.compile(job_from_yaml(JOB), backend=backend).request))


@pytest.mark.parametrize("source, target", list(permutations(BACKENDS, 2)))
def test_tuning_moves_in_every_direction(source, target):
    compiled, report = omnidist.migrate(native(source), source=source, target=target)
    back = omnidist.import_native(compiled.request, target)
    original = job_from_yaml(JOB).tuning
    assert back.tuning.metric == original.metric and back.tuning.max_trials == 12
    assert set(back.tuning.parameters) == set(original.parameters)
    assert back.tuning.parameters["lr"] == original.parameters["lr"]
    entries = {e.field: e for e in report.entries}
    if target == "azure_ml":  # Azure writes the integer range 2 … 6 as a choice, and says so
        assert entries["tuning.parameters.depth"].fidelity.value == "approximated"
        assert "became a choice of its 5 values" in entries["tuning.parameters.depth"].message
    elif source == "azure_ml":  # the search carries; the program reports its metric to hypertune, not MLflow
        assert entries["tuning.metric"].fidelity.value == "changed"
        assert "through hypertune on" in entries["tuning.metric"].message and "through mlflow" in (
            entries["tuning.metric"].message)
        assert "tuning" not in entries  # never exact beside a change (SPEC §14)
    else:  # a choice read from Azure is a discrete list everywhere else: nothing changes on the way
        assert entries["tuning"].fidelity.value == "exact"
        assert "maximize accuracy over lr, depth, optimizer" in entries["tuning"].message
    if source == "azure_ml":
        assert back.tuning.parameters["depth"].values == (2, 3, 4, 5, 6)


def test_strict_refuses_a_tuning_migration_that_changes_a_distribution():
    data = native("vertex")
    data["studySpec"]["parameters"][0]["scaleType"] = "UNIT_REVERSE_LOG_SCALE"
    data["studySpec"]["algorithm"] = "RANDOM_SEARCH"
    with pytest.raises(StrictMigrationError) as caught:  # Azure ML has no reverse log scale
        omnidist.migrate(data, source="vertex", target="azure_ml", strict=True)
    assert "tuning.parameters.lr" in str(caught.value.report)


def test_what_the_target_cannot_tune_stops_the_migration_with_exit_3():
    data = native("ai_platform")
    data["trainingInput"]["hyperparameters"]["algorithm"] = "GRID_SEARCH"
    data["trainingInput"]["hyperparameters"]["params"] = [
        p for p in data["trainingInput"]["hyperparameters"]["params"] if p["type"] != "DOUBLE"]
    data["trainingInput"]["hyperparameters"]["params"].append(
        {"parameterName": "ratio", "type": "DOUBLE", "minValue": 0.1, "maxValue": 0.9})
    with pytest.raises(UnsupportedFeatureError) as caught:
        omnidist.migrate(data, source="ai_platform", target="vertex")
    assert caught.value.subject == "tuning.parameters.ratio"


def test_formats_are_detected_from_the_content():
    assert detect_backend(native("vertex")) == "vertex"
    assert detect_backend(native("ai_platform")) == "ai_platform"
    sweep = native("azure_ml")
    del sweep["$schema"]
    assert detect_backend(sweep) == "azure_ml"


def test_cli_migrate_and_import_read_tuning_files(tmp_path):
    path = tmp_path / "sweep.yml"
    path.write_text(serde.dump_yaml(native("azure_ml")))
    migrated = run_cli("migrate", str(path), "--to", "vertex")
    assert migrated.returncode == 0, migrated.stderr
    assert json.loads(migrated.stdout)["studySpec"]["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    assert "changed      tuning.metric: the objective is read back through hypertune" in migrated.stderr
    imported = run_cli("import", str(path))
    assert imported.returncode == 0, imported.stderr
    assert job_from_yaml(imported.stdout).tuning.metric.name == "accuracy"


# --- the corpus: real tuning files, read where they are ------------------------------------------

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the checkout")


@needs_corpus
def test_corpus_vertex_study_spec_config():
    job, source, entries = import_job(CORPUS / "vertex" / "compromise-heatmap-hptuning-studyspec.yaml")
    tuning = job.tuning
    assert source.name == "vertex" and len(tuning.parameters) == 18 and tuning.metric.name == "F1"
    assert tuning.parameters["max_game_time"].min == tuning.parameters["max_game_time"].max == 1024  # pinned
    assert tuning.parameters["gnn_type"].values == ("GAT",)
    assert {"tuning.max_trials", "tuning.parallel_trials"} <= {e.field for e in entries}  # gcloud flags
    compiled, _ = omnidist.migrate(
        CORPUS / "vertex" / "compromise-heatmap-hptuning-studyspec.yaml", target="ai_platform"
    )
    assert len(compiled.request["trainingInput"]["hyperparameters"]["params"]) == 18


@needs_corpus
def test_corpus_ai_platform_census_config():
    job, _, entries = import_job(CORPUS / "ai_platform" / "census-hptuning-config.yaml")
    assert job.tuning.parameters["first-layer-size"].max == 500
    assert job.tuning.parameters["scale-factor"].scale.value == "reverse_log"  # AI Platform's own scale, carried
    assert not [e for e in entries if e.field == "tuning.parameters.scale-factor"]


@needs_corpus
@pytest.mark.parametrize("name, count", [
    ("hfr-hptuning-complex-model-l-gpu.yaml", 10),
    ("seed-rl-atari-custom-container.yaml", 12),      # 50.e9 (a YAML 1.1 string) and min == max
    ("mimicknet-hptuning-basic-gpu.yaml", 15),        # maxFailedTrials, single-value DISCRETE lists
    ("vapit-hptuning-standard-hyphen.yaml", 3),
])
def test_corpus_ai_platform_hyperparameter_blocks_read(name, count):
    from omnidist_ai_platform import tuning

    data = serde.read_document(CORPUS / "ai_platform" / name)
    read = tuning.native_to_tuning(data["trainingInput"]["hyperparameters"], [])
    assert len(read.parameters) == count
    if name.startswith("seed-rl"):
        assert read.parameters["total_environment_frames"].min == 50e9 and read.early_stopping
    if name.startswith("mimicknet"):
        assert read.max_failed_trials == 100 and read.parameters["m"].values == (0,)


@needs_corpus
def test_corpus_ai_platform_float_type_is_exit_2_with_the_path():
    with pytest.raises(ValidationError) as caught:
        import_job(CORPUS / "ai_platform" / "driblet-hptuning-float-type.yaml")
    assert "trainingInput.hyperparameters.params[2].type: 'FLOAT' is not one of" in str(caught.value)


@needs_corpus
def test_corpus_azure_sweep_with_bandit_termination():
    data = yaml.safe_load((CORPUS / "azure_ml" / "heart-failure-sweep-bandit.yml").read_text())
    data["trial"]["environment"].pop("conda_file")  # the portable job runs images, not conda files
    job, notes = registry.get("azure_ml").import_with_notes(data)
    tuning = job.tuning
    assert job.command == ("python", "train.py")
    assert set(tuning.parameters) == {"C", "max_iter", "solver"} and tuning.early_stopping
    assert tuning.parameters["C"].min == pytest.approx(0.0497870683679)
    assert (tuning.max_trials, tuning.parallel_trials) == (20, 4)
    assert {n.field for n in notes} >= {"args", "tuning.early_stopping", "limits.timeout"}


@needs_corpus
def test_corpus_azure_preview_sweep_syntax_is_invalid():
    with pytest.raises(ValidationError, match="'sweep_job' is not an Azure ML job type"):
        import_job(CORPUS / "azure_ml" / "txtsum-preview-sweep-job.yml")
