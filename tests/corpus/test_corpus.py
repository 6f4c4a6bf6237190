"""Real job files from public repositories (``../shared/corpus`` beside the checkout), tested in
place: every Vertex AI, AI Platform and Azure ML file imports and migrates to every other target;
each request passes the target SDK's own checks; every field of the input is mapped, reported or
refused (:mod:`.fidelity`); files that are not valid for their own cloud (``SOURCES.md`` says
which) exit 2 naming the file. Skipped when the corpus is not there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import pytest

import omnidist
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.migration.imports import import_job
from omnidist.migration.native import read_native
from omnidist.testing.cli import run_cli
from omnidist.testing.harness import Harness, suite_backends, suite_harness

from .fidelity import meaning_changes, unaccounted

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
SUITE = suite_backends("corpus")
HARNESSES = {name: found for name, found in SUITE.items() if isinstance(found, Harness)}
BACKENDS = tuple(sorted(HARNESSES))
"""The cloud backends this suite runs on: every one with a harness, unless it opts out (their
corpus folders are read; a backend without files of its own is still a migration target)."""

if not CORPUS.is_dir():
    pytest.skip(f"no corpus at {CORPUS}", allow_module_level=True)

IMAGE = "registry.example/trainer:1"
COMMAND = "python train.py"

REFUSED: dict[tuple[str, Optional[str]], str] = {
    ("vertex/distillix-l4.yaml", "ai_platform"): "accelerator L4",
    ("ai_platform/ml-engine-standard-p100.yaml", "sagemaker"): "accelerator P100",
    ("ai_platform/seed-rl-atari-custom-container.yaml", "sagemaker"): "accelerator P100",
    # SageMaker's script mode ships its code as a packed archive: legacy containers get nothing but
    # their image, and Azure ML ships code as a folder.
    **{(f"sagemaker/{file}", target): "cannot express code" for file in (
        "aws-yolo-code-channel-gpu-image-on-cpu.json", "k8s-sm-hyperopt-log-categorical.yaml",
        "mindmate-spot-checkpoint-no-max-wait.json", "sport-llm-g5-2xlarge-script-mode.json")
       for target in ("ai_platform", "azure_ml")},
    # A SageMaker tuning job runs the image's entrypoint: a sweep whose trials run a command cannot move there.
    ("azure_ml/heart-failure-sweep-bandit.yml", "sagemaker"): "tuning with a command",
    # Bayesian sampling on Azure ML has no early termination; SageMaker's Bayesian searches stop early.
    **{(f"sagemaker/{file}", "azure_ml"): "tuning.early_stopping" for file in (
        "ack-hpo-warm-start-tags.yaml", "operator-xgboost-mnist-hpo.yaml")},
    ("vertex/distillix-l4.yaml", "azure_ml"): "accelerator L4",
    # AWS's A10G (g5) is a GPU Google's clouds do not offer.
    ("sagemaker/sport-llm-g5-2xlarge-script-mode.json", "vertex"): "accelerator A10G",
    # An MPI program (Azure ML's MPI distribution, 2 nodes): Google's platforms and a SageMaker custom image start
    # independent copies (SPEC §14).
    **{("azure_ml/tensorflow-mnist-horovod-mpi-serverless.yml", target): "processes_per_node"
       for target in ("ai_platform", "sagemaker", "vertex")},
    ("ai_platform/ml-engine-standard-p100.yaml", "azure_ml"): "accelerator P100",
    ("ai_platform/seed-rl-atari-custom-container.yaml", "azure_ml"): "accelerator P100",
    # A TPU (SPEC §13): Vertex runs it (a TPU VM, reported changed); Azure ML and SageMaker have none.
    **{("ai_platform/structured-cloud-tpu-worker.yaml", target): "cannot express accelerator TPU-V2"
       for target in ("azure_ml", "sagemaker")},
    # Bayesian sampling on Azure ML has no log-scaled double (loguniform): the search would change.
    ("vertex/compromise-heatmap-hptuning-studyspec.yaml", "azure_ml"): "tuning.parameters.learning_rate",
    ("ai_platform/census-hptuning-config.yaml", "azure_ml"): "tuning.parameters.scale-factor",
    # SageMaker's reverse log scale takes ranges within 0 <= x < 1; [0.1, 1] reaches 1.
    ("ai_platform/census-hptuning-config.yaml", "sagemaker"): "tuning.parameters.scale-factor",
    ("ai_platform/mimicknet-hptuning-basic-gpu.yaml", "azure_ml"): "tuning.parameters.lr",
    # Registered Azure ML data assets are not locations another cloud can read.
    **{(f"azure_ml/{file}", target): f"inputs.{name}: azureml:" for file, name in (
        ("activity-no-type-curated-env.yml", "train_data"), ("churn-mltable-direct.yml", "training_data"),
        ("pix2seq-accelerate-pytorch-shm.yaml", "coco"), ("protein-folded-backslash-upload.yml", "data"),
        ("pytorch-cifar-distributed-serverless.yml", "cifar"), ("simlingo-two-nodes-acr-image.yml", "training_data"),
        ("yolov8-custom-model-input.yaml", "training_data")) for target in ("vertex", "ai_platform", "sagemaker")},
    # A local data folder Azure ML uploads at submit; Google and AWS jobs read their object stores.
    ("azure_ml/pytorch-word-language-model-serverless.yml", "vertex"): "inputs.corpus: data is a local location",
    ("azure_ml/pytorch-word-language-model-serverless.yml", "sagemaker"): "inputs.corpus: data is a local location",
    ("azure_ml/pytorch-word-language-model-serverless.yml", "ai_platform"): "inputs.corpus: data is a local location",
    # A code folder (here the file's own, which exists): legacy containers get nothing but their image.
    ("azure_ml/node-health-check-docker-args.yaml", "ai_platform"): "cannot express code",
    ("azure_ml/xmem-shm-literal-bash.yml", "ai_platform"): "cannot express code",
    ("azure_ml/heart-failure-sweep-bandit.yml", "ai_platform"): "cannot express code",
    # Environment variables on a Python-package job: legacy AI Platform has no env and no command to prefix.
    ("vertex/flood-python-package-env-output-dir.yaml", "ai_platform"): "primary sets GPU_ENABLED",
}
"""(file, target; ``None``: the import) -> what the refusal (exit 3) names. Everything else
imports and migrates, given ``--image`` and ``--command`` where the target asks for them."""

ASKS_FOR = {"image": "image", "command": "command", "env": "command", "framework_version": "image"}
"""Feature a target refuses -> the migrate argument that answers it."""


def invalid_files() -> set[str]:
    """The files ``SOURCES.md`` marks as not valid for their own cloud."""
    text = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    found, folder = set(), ""
    for line in text.splitlines():
        heading = re.match(r"^## (\w+)/", line)
        folder = heading[1] if heading else folder
        row = re.match(r"^\| ([\w.-]+\.(?:ya?ml|json)) \|", line)
        if row and "**invalid" in line:
            found.add(f"{folder}/{row[1]}")
        bullet = re.match(r"^\* `(\w+/[\w.-]+)`: ", line)
        if bullet and "Borderline" not in line:
            found.add(bullet[1])
    return found


INVALID = invalid_files()
FILES = sorted(f"{b}/{p.name}" for b in BACKENDS if (CORPUS / b).is_dir() for p in (CORPUS / b).iterdir())
VALID = [f for f in FILES if f not in INVALID]


def test_sources_name_the_invalid_files_that_are_here():
    here = {f for f in INVALID if f.split("/")[0] in BACKENDS}
    assert here and here <= set(FILES), sorted(here - set(FILES))


# --- the SDKs' own checks -------------------------------------------------------------------------

def check_with_sdk(target: str, request: dict[str, Any], tmp_path: Path) -> None:
    """The target SDK's own checks of the request (its harness's ``check_request``)."""
    HARNESSES[target].check_request(request, tmp_path)


def test_every_cloud_backend_runs_the_corpus_or_says_why_not():
    for name in SUITE:
        if name not in HARNESSES:
            with pytest.raises(pytest.skip.Exception):
                suite_harness("corpus", name)
        else:
            assert HARNESSES[name].check_request is not None, f"{name}'s harness has no check_request"


# --- import ---------------------------------------------------------------------------------------

def _refused(name: str, target: Optional[str], exc: UnsupportedFeatureError) -> None:
    wanted = REFUSED.get((name, target))
    assert wanted, f"{name} -> {target or 'import'} refused unexpectedly: {exc}"
    assert wanted in str(exc), str(exc)


@pytest.mark.parametrize("name", VALID)
def test_valid_files_import_with_every_field_accounted_for(name):
    path = CORPUS / name
    source = name.split("/")[0]
    try:
        job, found, entries = import_job(path)
    except UnsupportedFeatureError as exc:
        return _refused(name, None, exc)
    assert (name, None) not in REFUSED, f"{name} imports, but the test expects a refusal"
    assert found.name == source  # the format is told from the content
    native, _ = read_native(path)
    assert unaccounted(native, source, job, [e.field for e in entries]) == []
    assert omnidist.DistributedJob.from_yaml(job.to_yaml()) == job


@pytest.mark.parametrize("name", sorted(f for f in INVALID if f.split("/")[0] in BACKENDS))
def test_invalid_files_exit_2_naming_the_file(name, tmp_path):
    done = run_cli("import", str(CORPUS / name), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert str(CORPUS / name) in done.stderr and "Traceback" not in done.stderr


# --- migrate --------------------------------------------------------------------------------------

SETTINGS: dict[str, dict[str, Any]] = {
    "vertex": {"staging_bucket": "gs://migrated-staging", "data_map": {
        "azureml://": "gs://migrated-data/azureml/",
        "https://azuremlexamples.blob.core.windows.net/": "gs://migrated-data/azuremlexamples/",
        "wasbs://datasets@azuremlexamples.blob.core.windows.net/": "gs://migrated-data/azuremlexamples/",
        "s3://": "gs://migrated-data/s3/"}},
    "azure_ml": {"data_map": {"gs://": "azureml://datastores/migrated/paths/",
                              "s3://": "azureml://datastores/migrated/paths/s3/"}},
}
"""The profile a user migrating these files would have: where default outputs and code go on
Google, and prefix rewrites for the data they copied (``data_map``); a backend's harness gives its
own (``Harness.migration_settings``). Registered Azure ML assets
(``azureml:name:1``) are not mapped: the migration must refuse them, naming the input."""
SETTINGS["ai_platform"] = SETTINGS["vertex"]


def migrate(name: str, target: str) -> tuple[Any, Any, dict[str, str]]:
    """Migrate as a user would, with the target's profile settings (:data:`SETTINGS`): plainly
    first; when the target asks for an image or a command the spec does not have (exit 3 naming
    it), again with ``--image``/``--command``."""
    given: dict[str, str] = {}
    while True:
        try:
            settings = {**HARNESSES[target].migration_settings, **SETTINGS.get(target, {})}
            compiled, report = omnidist.migrate(CORPUS / name, target=target, settings=settings, **given)
            return compiled, report, given
        except UnsupportedFeatureError as exc:
            wanted = ASKS_FOR.get(exc.subject.split(".")[-1])
            if wanted is None or wanted in given or f"--{wanted}" not in str(exc):
                raise  # a refusal no flag answers: REFUSED says which
            given[wanted] = IMAGE if wanted == "image" else COMMAND


NO_WORLD = frozenset({"ai_platform/vapit-hptuning-standard-hyphen.yaml", "azure_ml/txtsum-preview-sweep-job.yml"})
"""Files whose form the source derives no World from (the comparison is skipped for them, never guessed)."""

MIGRATIONS = [(name, target) for name in VALID for target in BACKENDS
              if target != name.split("/")[0] and (name, None) not in REFUSED]


@pytest.mark.parametrize(("name", "target"), MIGRATIONS, ids=[f"{n}->{t}" for n, t in MIGRATIONS])
def test_valid_files_migrate_with_every_field_accounted_for(name, target, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no omnidist.toml of the checkout's
    source = name.split("/")[0]
    try:
        compiled, report, given = migrate(name, target)
    except UnsupportedFeatureError as exc:
        return _refused(name, target, exc)
    except ValidationError as exc:  # pragma: no cover - the assertion says what went wrong
        pytest.fail(f"a valid file must never exit 2 in a migration: {exc}")
    assert (name, target) not in REFUSED, f"{name} -> {target} migrates, but the test expects a refusal"
    check_with_sdk(target, compiled.request, tmp_path)
    job, _, entries = import_job(CORPUS / name)
    native, _ = read_native(CORPUS / name)
    fields = [e.field for e in [*entries, *report.entries]]
    assert unaccounted(native, source, job, fields, carried=[e.field for e in report.entries]) == []
    changes = meaning_changes(job, source, compiled.request, target, report.entries)
    assert changes == []
    check_worlds(name, source, target, compiled, report)
    if "image" in given:
        assert compiled.job.image == IMAGE or compiled.job.primary.image == IMAGE


def check_worlds(name: str, source: str, target: str, compiled: Any, report: Any) -> None:
    """The differential check (SPEC §14): what the program sees on the source (the World of the
    native file) and on the target (the World of the request) differ only where a ``changed`` or
    ``dropped`` line says so, and no field is both ``exact`` and changed. Each World comes from its
    backend's ``world``, called here directly, so a derivation that fails fails the test."""
    from omnidist.backend import registry
    from omnidist.migration.native import native_parts
    from omnidist.migration.observed import unreported

    before = registry.get(source).world(native_parts(CORPUS / name, source)[0])
    after = registry.get(target).world(compiled.request)
    assert after is not None, f"{target} derives no World from the request it compiled"
    if before is None:
        assert name in NO_WORLD, f"{source} derives no World from {name}"
        return
    assert unreported(before, after, report.entries) == []
    exact = {e.field for e in report.entries if e.fidelity.value == "exact"}
    assert not exact & {e.field for e in report.breaks_strict}
