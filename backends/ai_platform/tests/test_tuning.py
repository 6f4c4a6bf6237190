"""Tuning on legacy AI Platform: ``trainingInput.hyperparameters`` (golden, the ml v1 discovery
schema), refusals, import with notes, round trips, and submitting it as an ordinary job whose
status reads ``trainingOutput.trials`` (the cross-backend matrix is tests/reliability/test_tuning.py)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings

import omnidist
from omnidist.kit import (
    Algorithm,
    NoteKind,
    ParameterType,
    UnsupportedFeatureError,
    ValidationError,
    job_from_dict,
    job_from_yaml,
)
from omnidist.migration import detect_backend
from omnidist.testing import strategies
from omnidist_ai_platform import AIPlatformBackend
from omnidist_ai_platform import tuning as tuning_module
from omnidist_ai_platform.testing import schema_problems

GOLDEN = Path(__file__).parent / "golden"
backend = AIPlatformBackend()

RICH = """\
name: census-tune
framework: tensorflow
image: gcr.io/p/census:1
command: [python, -m, trainer.task]
args: [--train-steps, "1000"]
primary: {accelerator: "V100:1"}
workers: {replicas: 2}
parameter_servers: {replicas: 1}
timeout: 4h
labels: {team: census}
tuning:
  metric: {name: rmse, goal: minimize}
  parameters:
    learning_rate: {type: double, min: 1.0e-4, max: 0.5, scale: log}
    hidden_units: {type: integer, min: 16, max: 512, scale: log}
    batch_size: {type: discrete, values: [64, 128, 256]}
    activation: {type: categorical, values: [relu, tanh]}
  algorithm: bayesian
  max_trials: 30
  parallel_trials: 3
  max_failed_trials: 5
  early_stopping: true
"""


def rich(**tuning) -> omnidist.DistributedJob:
    job = job_from_yaml(RICH)
    return attrs.evolve(job, tuning=attrs.evolve(job.tuning, **tuning)) if tuning else job


def compile_checked(job) -> omnidist.CompiledJob:
    compiled = omnidist.compile(job, backend="ai_platform")
    assert schema_problems(compiled.request) == []  # every field is one the ml v1 document defines
    return compiled


def test_golden_tuning_body():
    compiled = compile_checked(rich())
    path = GOLDEN / "tuning.json"
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        path.write_text(compiled.render() + "\n")
    assert compiled.request == json.loads(path.read_text())


def test_hyperparameters_are_added_to_the_same_training_input():
    job = rich()
    tuned = compile_checked(job).request
    plain = compile_checked(attrs.evolve(job, tuning=None)).request
    training = dict(tuned["trainingInput"])
    spec = training.pop("hyperparameters")
    assert {**tuned, "trainingInput": training} == plain
    assert spec["goal"] == "MINIMIZE" and spec["hyperparameterMetricTag"] == "rmse"
    assert (spec["maxTrials"], spec["maxParallelTrials"], spec["maxFailedTrials"]) == (30, 3, 5)
    assert spec["enableTrialEarlyStopping"] is True and "algorithm" not in spec  # unspecified = Bayesian
    params = {p["parameterName"]: p for p in spec["params"]}
    assert params["learning_rate"] == {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 1e-4,
                                       "maxValue": 0.5, "scaleType": "UNIT_LOG_SCALE"}
    assert params["hidden_units"]["type"] == "INTEGER" and params["hidden_units"]["scaleType"] == "UNIT_LOG_SCALE"
    assert params["batch_size"] == {"parameterName": "batch_size", "type": "DISCRETE", "discreteValues": [64, 128, 256]}
    assert params["activation"]["categoricalValues"] == ["relu", "tanh"]


def test_grid_search_over_a_double_is_exit_3():
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_checked(rich(algorithm=Algorithm.GRID))
    assert caught.value.subject == "tuning.parameters.learning_rate" and caught.value.backend == "ai_platform"
    assert "grid search takes only INTEGER, CATEGORICAL and DISCRETE" in str(caught.value)


def test_random_and_grid_algorithms_are_named():
    assert compile_checked(rich(algorithm=Algorithm.RANDOM)).request["trainingInput"]["hyperparameters"][
        "algorithm"] == "RANDOM_SEARCH"
    job = rich(algorithm=Algorithm.GRID)
    job = attrs.evolve(job, tuning=attrs.evolve(job.tuning, parameters={
        k: v for k, v in job.tuning.parameters.items() if k != "learning_rate"}))
    assert compile_checked(job).request["trainingInput"]["hyperparameters"]["algorithm"] == "GRID_SEARCH"


def test_import_reads_the_body_back():
    request = compile_checked(rich()).request
    job, notes = backend.import_with_notes(copy.deepcopy(request))
    assert job.tuning == rich().tuning
    assert compile_checked(job).request == request
    assert not [n for n in notes if n.field.startswith("tuning")]
    assert detect_backend(request) == "ai_platform"
    bare, _ = backend.import_with_notes(copy.deepcopy(request["trainingInput"]))  # a bare TrainingInput
    assert bare.tuning == job.tuning


def test_import_fills_the_apis_defaults_with_notes():
    request = compile_checked(rich()).request
    spec = request["trainingInput"]["hyperparameters"]
    for key in ("goal", "hyperparameterMetricTag", "maxTrials", "maxParallelTrials"):
        spec.pop(key)
    spec["params"][0]["scaleType"] = "UNIT_REVERSE_LOG_SCALE"
    spec["params"][2]["scaleType"] = "UNIT_LINEAR_SCALE"
    spec["resumePreviousJobId"] = "earlier_job"
    job, notes = backend.import_with_notes(request)
    tuning = job.tuning
    assert tuning.parameters["learning_rate"].scale.value == "reverse_log"  # carried, not changed
    assert (tuning.metric.name, tuning.metric.goal.value) == ("training/hptuning/metric", "maximize")
    assert (tuning.max_trials, tuning.parallel_trials) == (1, 1)
    kinds = {(n.kind, n.field) for n in notes}
    assert {(NoteKind.DEFAULTED, "tuning.metric.goal"), (NoteKind.DEFAULTED, "tuning.metric.name"),
            (NoteKind.DEFAULTED, "tuning.max_trials"), (NoteKind.DEFAULTED, "tuning.parallel_trials"),
            (NoteKind.DROPPED, "tuning.parameters.batch_size"),
            (NoteKind.DROPPED, "tuning")} <= kinds


@pytest.mark.parametrize("change, text", [
    (lambda s: s["params"][0].update(minValue=1.0), "trainingInput.hyperparameters.params[0].minValue: must be <= max"),
    (lambda s: s["params"][0].update(type="FLOAT"), "trainingInput.hyperparameters.params[0].type: 'FLOAT' is not one"),
    (lambda s: s["params"][1].update(minValue=1.5), "params[1].minValue: an integer parameter takes whole numbers"),
    (lambda s: s["params"][2].update(discreteValues=[]), "params[2].discreteValues: a discrete parameter needs"),
    (lambda s: s["params"].append(dict(s["params"][0])), "learning_rate named more than once"),
    (lambda s: s.update(maxTrial=3), "trainingInput.hyperparameters.maxTrial: unknown key; did you mean 'maxTrials'"),
    (lambda s: s.update(maxParallelTrials=0), "trainingInput.hyperparameters.parallel_trials: must be >= 1"),
])
def test_import_errors_name_the_native_field(change, text):
    request = compile_checked(rich()).request
    change(request["trainingInput"]["hyperparameters"])
    with pytest.raises(ValidationError) as caught:
        backend.import_native(request)
    assert text in str(caught.value)


def test_a_tuning_job_is_an_ordinary_create_and_its_status_reads_the_trials(settings, server, service):
    service.trial_values = [1.5, 0.25, None]
    driver = AIPlatformBackend(suffix=lambda: "s1", sleep=lambda s: None)
    compiled = compile_checked(rich())
    handle = driver.submit(compiled, settings)
    (create,) = server.calls(*service.ROUTES["create"])
    assert create.body["trainingInput"]["hyperparameters"] == compiled.request["trainingInput"]["hyperparameters"]
    assert handle.id == "census_tune_s1"
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    job = service.jobs[("proj", "census_tune_s1")]
    assert schema_problems(service._render(job, ("proj", "census_tune_s1"))) == [], "what the fake answers is ml v1"
    assert final.state.value == "succeeded" and final.metric == "rmse" and len(final.trials) == 30
    first, second, third = final.trials[:3]
    assert dict(first.parameters) == {"learning_rate": 0.0001, "hidden_units": 16, "batch_size": 64,
                                      "activation": "relu"}, "the API's strings, typed by each parameter's type"
    assert (first.value, first.step, third.state.value, third.value) == (1.5, 10, "failed", None)
    assert final.best == second, "rmse is minimized"


def test_trials_of_reads_training_output():
    job = {"trainingInput": {"hyperparameters": {"params": [
        {"parameterName": "units", "type": "INTEGER", "minValue": 1, "maxValue": 9},
        {"parameterName": "drop", "type": "DISCRETE", "discreteValues": [0.5, 1]}]}},
        "trainingOutput": {"trials": [
            {"trialId": "1", "state": "SUCCEEDED", "hyperparameters": {"units": "4", "drop": "0.5"},
             "finalMetric": {"trainingStep": "100", "objectiveValue": 0.8}, "isTrialStoppedEarly": True},
            {"trialId": "2", "state": "RUNNING", "hyperparameters": {"drop": "1", "units": "2", "extra": "x"}}]}}
    metric, trials, best = tuning_module.trials_of(job)
    assert metric == tuning_module.DEFAULT_METRIC_TAG, "no tag: the one the service reads"
    assert [t.parameters for t in trials] == [
        (("units", 4), ("drop", 0.5)),
        (("units", 2), ("drop", 1), ("extra", "x")),
    ]
    assert (trials[0].message, trials[0].step, trials[1].state.value) == ("stopped early", 100, "running")
    assert best == trials[0], "maximize when the goal is not given"
    assert tuning_module.trials_of({"trainingInput": {}}) == ("", (), None), "a plain job has no trials"


BASE_JOB = job_from_dict({"name": "gen", "framework": "tensorflow", "image": "gcr.io/p/t:1",
                                "command": ["python", "train.py"], "primary": {}, "workers": {"replicas": 1}})
FINITE = [ParameterType.INTEGER, ParameterType.DISCRETE, ParameterType.CATEGORICAL]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.tunings(algorithms=[Algorithm.BAYESIAN, Algorithm.RANDOM])
       | strategies.tunings(parameter=strategies.parameters(types=FINITE), algorithms=[Algorithm.GRID]))
def test_import_of_compile_gives_the_tuning_back(tuning):
    job = attrs.evolve(BASE_JOB, tuning=tuning)
    request = compile_checked(job).request
    imported = backend.import_native(json.loads(json.dumps(request)))
    assert imported.tuning == tuning
    assert compile_checked(imported).request == request
