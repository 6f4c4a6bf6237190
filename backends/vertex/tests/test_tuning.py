"""Tuning on Vertex: the HyperparameterTuningJob (golden, the SDK's own parser), refusals, import,
round trips over generated tuning blocks, and submitting and following it through the
JobServiceClient's tuning-job calls (the cross-backend matrix is tests/reliability/test_tuning.py)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings

import omnidist
from omnidist.kit import (
    Algorithm,
    NoteKind,
    NotFoundError,
    ParameterType,
    UnsupportedFeatureError,
    ValidationError,
    job_from_dict,
    job_from_yaml,
)
from omnidist.migration import detect_backend
from omnidist.testing import Fault, strategies
from omnidist_vertex import VertexBackend, VertexSettings
from omnidist_vertex import tuning as vertex_tuning

GOLDEN = Path(__file__).parent / "golden"
backend = VertexBackend()

RICH = """\
name: cassava-tune
framework: pytorch
image: us-docker.pkg.dev/p/r/trainer:1.0
command: [python, -m, trainer.task]
args: [--epochs, "10"]
primary: {accelerator: "V100:8"}
workers: {replicas: 2}
timeout: 6h
labels: {team: vision}
backends:
  vertex:
    machine_types: {primary: n1-highmem-96, workers: n1-highmem-96}
    kms_key_name: projects/p/locations/us-central1/keyRings/r/cryptoKeys/k
tuning:
  metric: {name: accuracy, goal: maximize}
  parameters:
    lr: {type: double, min: 1.0e-5, max: 1.0e-1, scale: log}
    layers: {type: integer, min: 1, max: 8}
    batch_size: {type: discrete, values: [32, 64, 128]}
    optimizer: {type: categorical, values: [adam, sgd]}
  algorithm: random
  max_trials: 20
  parallel_trials: 4
  max_failed_trials: 3
  early_stopping: true
"""


def canonical_tuning_job(request: dict) -> dict:
    """The request parsed by the SDK's own ``HyperparameterTuningJob`` and printed back in REST form."""
    from google.cloud import aiplatform_v1

    message = aiplatform_v1.HyperparameterTuningJob.from_json(json.dumps(request))  # unknown fields fail
    return json.loads(aiplatform_v1.HyperparameterTuningJob.to_json(
        message, use_integers_for_enums=False, including_default_value_fields=False,
        always_print_fields_with_no_presence=False))


def valid_tuning_job(request: dict) -> dict:
    assert canonical_tuning_job(request) == request
    return request


def rich(**tuning) -> omnidist.DistributedJob:
    job = job_from_yaml(RICH)
    return attrs.evolve(job, tuning=attrs.evolve(job.tuning, **tuning)) if tuning else job


def compile_(job) -> omnidist.CompiledJob:
    return omnidist.compile(job, backend="vertex")


def test_golden_tuning_job():
    compiled = compile_(rich())
    path = GOLDEN / "tuning_job.json"
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        path.write_text(compiled.render() + "\n")
    assert compiled.request == json.loads(path.read_text())
    valid_tuning_job(compiled.request)


def test_trial_job_spec_is_exactly_the_custom_jobs_spec():
    job = rich()
    tuned = compile_(job).request
    plain = compile_(attrs.evolve(job, tuning=None)).request
    assert tuned["trialJobSpec"] == plain["jobSpec"]
    assert tuned["displayName"] == plain["displayName"] and tuned["labels"] == plain["labels"]
    assert tuned["encryptionSpec"] == plain["encryptionSpec"]
    # the values are not in the args: Vertex appends --ID=VALUE to every replica itself
    assert plain["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] == ["--epochs", "10"]


def test_study_spec_maps_every_part():
    study = compile_(rich()).request["studySpec"]
    assert study["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    by_id = {p["parameterId"]: p for p in study["parameters"]}
    assert by_id["lr"] == {"parameterId": "lr", "doubleValueSpec": {"minValue": 1e-5, "maxValue": 0.1},
                           "scaleType": "UNIT_LOG_SCALE"}
    assert by_id["layers"]["integerValueSpec"] == {"minValue": "1", "maxValue": "8"}  # int64 as strings
    assert by_id["batch_size"] == {"parameterId": "batch_size", "discreteValueSpec": {"values": [32.0, 64.0, 128.0]}}
    assert by_id["optimizer"]["categoricalValueSpec"] == {"values": ["adam", "sgd"]}
    assert study["algorithm"] == "RANDOM_SEARCH" and study["medianAutomatedStoppingSpec"] == {}


def test_defaults_are_left_out_as_the_api_prints_them():
    request = valid_tuning_job(compile_(rich(algorithm=Algorithm.BAYESIAN, early_stopping=False,
                                             max_failed_trials=0)).request)
    assert "algorithm" not in request["studySpec"]  # unspecified = Vertex's Bayesian optimization
    assert "medianAutomatedStoppingSpec" not in request["studySpec"]
    assert "maxFailedTrialCount" not in request  # 0: Vertex decides
    assert (request["maxTrialCount"], request["parallelTrialCount"]) == (20, 4)


def test_grid_search_over_a_double_is_exit_3_naming_the_parameter_and_rule():
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_(rich(algorithm=Algorithm.GRID))
    assert caught.value.subject == "tuning.parameters.lr" and caught.value.exit_code == 3
    assert "grid search takes only integer, discrete and categorical" in str(caught.value)


def test_grid_search_over_finite_parameters_compiles():
    job = rich(algorithm=Algorithm.GRID)
    job = attrs.evolve(job, tuning=attrs.evolve(job.tuning, parameters={
        k: v for k, v in job.tuning.parameters.items() if k != "lr"}))
    assert valid_tuning_job(compile_(job).request)["studySpec"]["algorithm"] == "GRID_SEARCH"


def test_too_many_discrete_values_is_exit_3():
    job = rich()
    many = {"type": "discrete", "values": list(range(1001))}
    job = attrs.evolve(job, tuning=attrs.evolve(job.tuning, parameters={"n": many}))
    with pytest.raises(UnsupportedFeatureError, match="at most 1000 values"):
        compile_(job)


def test_import_reads_the_tuning_job_back():
    request = compile_(rich()).request
    job, notes = backend.import_with_notes(copy.deepcopy(request))
    assert job.tuning == rich().tuning
    assert job.tuning.parameters["batch_size"].values == (32, 64, 128)  # whole doubles read back as ints
    assert compile_(job).request == request
    assert detect_backend(request) == "vertex"


def test_import_accepts_enum_numbers_and_notes_changed_distributions():
    request = compile_(rich()).request
    study = request["studySpec"]
    study["metrics"][0]["goal"] = 2
    study["algorithm"] = 3
    study["parameters"][0]["scaleType"] = "UNIT_REVERSE_LOG_SCALE"
    study["parameters"][2]["discreteValueSpec"]["defaultValue"] = 64
    study["decayCurveStoppingSpec"] = study.pop("medianAutomatedStoppingSpec")
    study["measurementSelectionType"] = "BEST_MEASUREMENT"
    job, notes = backend.import_with_notes(request)
    assert job.tuning.metric.goal.value == "minimize" and job.tuning.algorithm is Algorithm.RANDOM
    assert job.tuning.parameters["lr"].scale.value == "reverse_log" and job.tuning.early_stopping
    kinds = {(n.kind, n.field) for n in notes}
    assert not any(field == "tuning.parameters.lr" for _, field in kinds)  # Vertex's own scale, carried
    assert (NoteKind.DROPPED, "tuning.parameters.batch_size") in kinds
    assert (NoteKind.APPROXIMATED, "tuning.early_stopping") in kinds
    assert (NoteKind.DROPPED, "tuning") in kinds


@pytest.mark.parametrize("change, error, text", [
    (lambda r: r["studySpec"]["metrics"].append({"metricId": "loss", "goal": "MINIMIZE"}), UnsupportedFeatureError,
     "optimizes 2 metrics"),
    (lambda r: r["studySpec"]["parameters"][0].update(conditionalParameterSpecs=[{"parameterSpec": {}}]),
     UnsupportedFeatureError, "conditional parameters"),
    (lambda r: r.update(parallelTrialCount=-2), ValidationError, "parallelTrialCount"),
    (lambda r: r["studySpec"]["parameters"][0]["doubleValueSpec"].update(minValue=1.0),
     ValidationError, "studySpec.parameters[0].doubleValueSpec.min: must be <= max"),
    (lambda r: r["studySpec"]["parameters"][1].pop("integerValueSpec"), ValidationError,
     "studySpec.parameters[1]: give exactly one of"),
    (lambda r: r["studySpec"]["metrics"][0].update(goal="UP"), ValidationError, "studySpec.metrics[0].goal"),
    (lambda r: r["trialJobSpec"].update(workerPoolSpecs=[]), ValidationError, "trialJobSpec.workerPoolSpecs"),
])
def test_import_refusals_name_the_native_field(change, error, text):
    request = compile_(rich()).request
    change(request)
    with pytest.raises(error) as caught:
        backend.import_native(request)
    assert text in str(caught.value)


def _submitted(vertex, job_text=RICH, **extra):
    import itertools

    ids = (f"req-{n}" for n in itertools.count(1))
    driver = VertexBackend(request_id=lambda: next(ids), sleep=lambda s: None)
    settings_ = VertexSettings(project="p", api_endpoint=vertex.url, credentials="anonymous", **extra)
    compiled = driver.compile(omnidist.DistributedJob.from_yaml(job_text), settings_)
    return compiled, driver.submit(compiled, settings_)


def test_submit_creates_the_tuning_job_with_a_request_id_label(vertex):
    compiled, handle = _submitted(vertex)
    (create,) = vertex.calls("tuning_create")
    assert create.path == "/v1/projects/p/locations/us-central1/hyperparameterTuningJobs"
    assert not vertex.calls("create"), "no CustomJob"
    sent = canonical_tuning_job(create.body)
    expected = copy.deepcopy(compiled.request)
    expected["labels"]["omnidist-request-id"] = "req-1"
    assert sent == canonical_tuning_job(expected), "exactly the compiled job, labelled"
    assert handle.id == "projects/p/locations/us-central1/hyperparameterTuningJobs/1000"
    assert handle.url.endswith("/locations/us-central1/training/1000?project=p")


def test_status_reads_the_trials_by_the_tuning_job_name(vertex):
    vertex.trial_values = [0.7, 0.95, None, 0.8]
    _, handle = _submitted(vertex)
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert vertex.calls("tuning_get") and not vertex.calls("get")
    assert final.state.value == "succeeded" and len(final.trials) == 20
    second = final.trials[1]
    # Vertex sends every value as a double: integer and whole discrete values read back as ints.
    assert dict(second.parameters) == {"lr": 0.050005, "layers": 8, "batch_size": 64, "optimizer": "sgd"}
    assert isinstance(dict(second.parameters)["layers"], int) and second.step == 10
    assert final.best == second and final.best.value == 0.95
    infeasible = final.trials[2]
    assert infeasible.state.value == "failed" and infeasible.value is None
    assert infeasible.message.startswith("The trial's CustomJob failed")


def test_a_lost_create_answer_is_found_by_listing_tuning_jobs(vertex):
    vertex.fail("tuning_create", Fault.drop_after_create())
    _, handle = _submitted(vertex)
    (listed,) = vertex.calls("tuning_list")
    assert listed.query["filter"] == ['labels.omnidist-request-id="req-1"']
    assert len(vertex.jobs) == 1 and handle.id == next(iter(vertex.jobs))


def test_cancel_calls_the_tuning_job_cancel(vertex):
    vertex.keep_running()
    _, handle = _submitted(vertex)
    handle.cancel()
    (cancel,) = vertex.calls("tuning_cancel")
    assert cancel.path == "/v1/projects/p/locations/us-central1/hyperparameterTuningJobs/1000:cancel"
    assert handle.status().state.value == "cancelling"


def test_a_bare_number_still_names_a_custom_job(vertex):
    _, handle = _submitted(vertex)
    with pytest.raises(NotFoundError):
        backend.status("1000", VertexSettings(project="p", api_endpoint=vertex.url, credentials="anonymous"))
    assert vertex.calls("get") and handle.status().state.value == "queued"


@pytest.mark.parametrize("native, parsed", [
    ({"studySpec": {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
                    "parameters": [{"parameterId": "n", "integerValueSpec": {"maxValue": "4"}}]},
      "trials": [{"id": "1", "state": "SUCCEEDED", "parameters": [{"parameterId": "n", "value": 2.0}],
                  "finalMeasurement": {"stepCount": "7", "metrics": [{"metricId": "loss", "value": 0.2}]}},
                 {"id": "2", "state": "SUCCEEDED", "parameters": [{"parameterId": "n", "value": 3.0}],
                  "finalMeasurement": {"metrics": [{"metricId": "loss", "value": 0.1}]}},
                 {"id": "3", "state": "ACTIVE", "parameters": [{"parameterId": "n", "value": 1.0}]},
                 {"id": "4", "state": "STOPPING", "parameters": [{"parameterId": "n", "value": 4.0}],
                  "finalMeasurement": {"stepCount": "2", "metrics": [{"metricId": "other", "value": 0.0}]}}]},
     ("loss", ["succeeded", "succeeded", "running", "running"], [0.2, 0.1, None, None], "2")),
    ({"studySpec": {"metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}], "parameters": []}},
     ("acc", [], [], None)),
])
def test_trials_of_reads_the_rest_form(native, parsed):
    metric, trials, best = vertex_tuning.trials_of(native)
    assert (metric, [t.state.value for t in trials], [t.value for t in trials],
            best.id if best else None) == parsed
    assert all(isinstance(v, int) for t in trials for _, v in t.parameters)


def test_cli_compile_prints_the_tuning_job_and_status_shows_its_trials(tmp_path, vertex):
    (tmp_path / "job.yaml").write_text(RICH)
    (tmp_path / "omnidist.toml").write_text(
        f'default = "fake"\n[profiles.fake]\nbackend = "vertex"\nproject = "p"\napi_endpoint = "{vertex.url}"\n'
        'credentials = "anonymous"\n')
    omnidist_cli = str(Path(sys.executable).with_name("omnidist"))
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    compiled = subprocess.run([omnidist_cli, "compile", "job.yaml"], cwd=tmp_path, capture_output=True, text=True,
                              env=env, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    assert valid_tuning_job(json.loads(compiled.stdout))["maxTrialCount"] == 20
    submitted = subprocess.run([omnidist_cli, "submit", "job.yaml"], cwd=tmp_path, capture_output=True, text=True,
                               env=env, timeout=120)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.splitlines()[0]
    assert job_id == "projects/p/locations/us-central1/hyperparameterTuningJobs/1000"
    for _ in range(3):  # queued, pending, then running with its first trials
        shown = subprocess.run([omnidist_cli, "status", job_id], cwd=tmp_path, capture_output=True, text=True,
                               env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "running"
    assert lines[1].split() == ["trial", "state", "accuracy", "lr", "layers", "batch_size", "optimizer"]
    assert [line.split()[:2] for line in lines[3:7]] == [[str(n), "running"] for n in range(1, 5)]
    assert lines[7] == "best: none yet (no trial has reported accuracy)"


# --- round trips over generated tuning blocks ------------------------------------------------------

BASE_JOB = job_from_dict({"name": "gen", "framework": "pytorch", "image": "gcr.io/p/t:1",
                                "command": ["python", "train.py"], "primary": {"accelerator": "T4:1"},
                                "workers": {"replicas": 1}})
FINITE = [ParameterType.INTEGER, ParameterType.DISCRETE, ParameterType.CATEGORICAL]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.tunings(algorithms=[Algorithm.BAYESIAN, Algorithm.RANDOM])
       | strategies.tunings(parameter=strategies.parameters(types=FINITE), algorithms=[Algorithm.GRID]))
def test_import_of_compile_gives_the_tuning_back(tuning):
    job = attrs.evolve(BASE_JOB, tuning=tuning)
    request = valid_tuning_job(compile_(job).request)
    imported = backend.import_native(json.loads(json.dumps(request)))
    assert imported.tuning == tuning
    assert compile_(imported).request == request
