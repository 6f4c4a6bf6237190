"""Tuning on Azure ML: the sweep job (golden, ``azure.ai.ml.load_job``), Azure's vocabulary
(natural-log bounds, ``randint`` from 0, what grid and Bayesian sampling take), import with notes,
round trips, and submitting a sweep through ``MLClient`` and following its child runs (the
cross-backend matrix is tests/reliability/test_tuning.py)."""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist.kit import (
    Algorithm,
    NoteKind,
    ParameterType,
    Scale,
    UnsupportedFeatureError,
    ValidationError,
    dump_yaml,
    job_from_dict,
    job_from_yaml,
    parse_yaml,
)
from omnidist.migration import detect_backend
from omnidist.testing import Fault, strategies
from omnidist_azure_ml import AzureMLBackend
from omnidist_azure_ml.tuning import SCHEMA

GOLDEN = Path(__file__).parent / "golden"
backend = AzureMLBackend()

RICH = """\
name: cassava-sweep
framework: pytorch
image: trainer.example/t:1.0
command: [python, -m, trainer.task]
args: [--epochs, "10", --data, "${{inputs.train}}"]
env: {NCCL_DEBUG: INFO}
primary: {accelerator: "A100:8"}
workers: {replicas: 1}
interconnect: infiniband
spot: true
timeout: 3h
labels: {team: vision}
backends:
  azure_ml:
    compute: gpu-cluster
    instance_type: Standard_ND96asr_v4
    inputs: {train: {type: uri_folder, path: "azureml://datastores/ws/paths/cassava"}}
tuning:
  metric: {name: val_accuracy, goal: maximize}
  parameters:
    learning-rate: {type: double, min: 1.0e-5, max: 1.0e-1, scale: log}
    dropout: {type: double, min: 0.0, max: 0.5}
    warmup: {type: integer, min: 0, max: 9}
    layers: {type: integer, min: 2, max: 6}
    batch_size: {type: discrete, values: [32, 64, 128]}
    optimizer: {type: categorical, values: [adam, sgd]}
  algorithm: random
  max_trials: 40
  parallel_trials: 8
  early_stopping: true
"""


@pytest.fixture
def sweep_rest(tmp_path):
    """Load a sweep with ``azure.ai.ml.load_job`` (the SDK's own schemas) and return its REST properties."""
    from azure.ai.ml import load_job
    from azure.ai.ml.sweep import SweepJob

    counter = iter(range(10**6))

    def convert(request: dict) -> dict:
        path = tmp_path / f"sweep-{next(counter)}.yml"
        path.write_text(dump_yaml(request))
        job = load_job(path)
        assert isinstance(job, SweepJob)
        return job._to_rest_object().as_dict()["properties"]

    return convert


def rich(**tuning) -> omnidist.DistributedJob:
    job = job_from_yaml(RICH)
    return attrs.evolve(job, tuning=attrs.evolve(job.tuning, **tuning)) if tuning else job


def only(job: omnidist.DistributedJob, *names: str) -> omnidist.DistributedJob:
    return attrs.evolve(job, tuning=attrs.evolve(job.tuning, parameters={
        k: v for k, v in job.tuning.parameters.items() if k in names}))


def compile_(job) -> omnidist.CompiledJob:
    return omnidist.compile(job, backend="azure_ml")


def test_golden_sweep_job(sweep_rest):
    compiled = compile_(rich())
    path = GOLDEN / "tuning_sweep.yaml"
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        path.write_text(str(compiled))
    assert str(compiled) == path.read_text()
    assert list(compiled.request)[:2] == ["$schema", "type"] and compiled.request["$schema"] == SCHEMA
    rest = sweep_rest(compiled.request)
    assert rest["jobType"] == "Sweep"
    assert rest["trial"]["command"] == compiled.request["trial"]["command"]
    assert rest["samplingAlgorithm"] == {"samplingAlgorithmType": "Random"}
    assert rest["objective"] == {"goal": "maximize", "primaryMetric": "val_accuracy"}
    assert rest["limits"]["maxTotalTrials"] == 40 and rest["limits"]["maxConcurrentTrials"] == 8
    assert rest["earlyTermination"]["policyType"] == "MedianStopping"
    assert rest["searchSpace"]["learning_rate"] == ["loguniform", [math.log(1e-5), math.log(0.1)]]


def test_trial_is_exactly_the_command_job():
    job = rich()
    sweep = compile_(job).request
    command = compile_(attrs.evolve(job, tuning=None)).request
    trial = dict(sweep["trial"])
    flags = trial.pop("command").removeprefix(command["command"])
    assert flags == (" --learning-rate=${{search_space.learning_rate}} --dropout=${{search_space.dropout}}"
                     " --warmup=${{search_space.warmup}} --layers=${{search_space.layers}}"
                     " --batch_size=${{search_space.batch_size}} --optimizer=${{search_space.optimizer}}")
    assert trial == {k: command[k] for k in ("environment", "environment_variables", "distribution", "resources")}
    for key in ("display_name", "experiment_name", "compute", "inputs", "queue_settings", "tags"):
        assert sweep[key] == command[key]
    assert sweep["limits"]["trial_timeout"] == command["limits"]["timeout"] == 3 * 3600


def test_search_space_speaks_azures_vocabulary():
    notes = compile_(rich())
    space = notes.request["search_space"]
    assert space["learning_rate"] == {"type": "loguniform", "min_value": math.log(1e-5), "max_value": math.log(0.1)}
    assert space["dropout"] == {"type": "uniform", "min_value": 0.0, "max_value": 0.5}
    assert space["warmup"] == {"type": "randint", "upper": 10}  # 0 … 9, exactly
    assert space["layers"] == {"type": "choice", "values": [2, 3, 4, 5, 6]}  # randint cannot start at 2
    assert space["batch_size"] == {"type": "choice", "values": [32, 64, 128]}
    assert space["optimizer"] == {"type": "choice", "values": ["adam", "sgd"]}
    changed = {n.field: n for n in notes.diagnostics if n.field.startswith("tuning")}
    assert changed["tuning.parameters.layers"].kind is NoteKind.APPROXIMATED
    assert "became a choice of its 5 values" in changed["tuning.parameters.layers"].message
    assert "tuning.parameters.warmup" not in changed


def test_a_log_scaled_integer_range_becomes_a_choice_with_a_change_note():
    job = only(rich(), "layers")
    job = attrs.evolve(job, tuning=attrs.evolve(job.tuning, parameters={
        "layers": attrs.evolve(job.tuning.parameters["layers"], scale=Scale.LOG)}))
    note = next(n for n in compile_(job).diagnostics if n.field == "tuning.parameters.layers")
    assert note.kind is NoteKind.CHANGED and "not on a log scale" in note.message


def test_a_huge_integer_range_not_from_zero_is_exit_3():
    job = only(rich(), "layers")
    job = attrs.evolve(job, tuning=attrs.evolve(job.tuning, parameters={
        "layers": attrs.evolve(job.tuning.parameters["layers"], min=5, max=100000)}))
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_(job)
    assert caught.value.subject == "tuning.parameters.layers" and "randint draws from 0" in caught.value.message


@pytest.mark.parametrize("algorithm, kept, feature, rule", [
    (Algorithm.GRID, ("dropout",), "tuning.parameters.dropout", "grid sampling takes only choice"),
    (Algorithm.BAYESIAN, ("learning-rate",), "tuning.parameters.learning-rate",
     "bayesian sampling takes only choice and quniform and uniform"),
])
def test_what_a_sampling_algorithm_cannot_take_is_exit_3(algorithm, kept, feature, rule):
    job = only(rich(algorithm=algorithm, early_stopping=False), *kept)
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_(job)
    assert caught.value.subject == feature and rule in caught.value.message


def test_bayesian_sampling_with_early_stopping_is_exit_3():
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_(only(rich(algorithm=Algorithm.BAYESIAN), "dropout"))
    assert caught.value.subject == "tuning.early_stopping"


def test_grid_and_bayesian_sweeps_load(sweep_rest):
    grid = compile_(only(rich(algorithm=Algorithm.GRID, early_stopping=False), "layers", "warmup", "optimizer"))
    assert grid.request["search_space"]["warmup"]["type"] == "choice"  # grid takes no randint
    assert sweep_rest(grid.request)["samplingAlgorithm"] == {"samplingAlgorithmType": "Grid"}
    bayes = compile_(only(rich(algorithm=Algorithm.BAYESIAN, early_stopping=False), "dropout", "layers"))
    assert "early_termination" not in bayes.request
    assert sweep_rest(bayes.request)["samplingAlgorithm"] == {"samplingAlgorithmType": "Bayesian"}


def test_max_failed_trials_is_dropped_with_a_note():
    note = next(n for n in compile_(rich(max_failed_trials=2)).diagnostics if n.field == "tuning.max_failed_trials")
    assert note.kind is NoteKind.DROPPED


def test_parameter_names_that_share_a_key_are_exit_3():
    job = rich()
    params = {"learning-rate": job.tuning.parameters["learning-rate"],
              "learning_rate": job.tuning.parameters["learning-rate"]}
    with pytest.raises(UnsupportedFeatureError, match="would share the key learning_rate"):
        compile_(attrs.evolve(job, tuning=attrs.evolve(job.tuning, parameters=params)))


def test_import_reads_the_sweep_back():
    request = compile_(rich()).request
    job, notes = backend.import_with_notes(copy.deepcopy(request))
    expected = rich().tuning.parameters
    assert job.tuning.parameters["learning-rate"] == expected["learning-rate"]  # hyphen from the flag, exp() of logs
    assert job.tuning.parameters["warmup"] == expected["warmup"]
    assert job.tuning.parameters["layers"].type is ParameterType.DISCRETE  # Azure wrote a choice
    assert job.tuning.parameters["layers"].values == (2, 3, 4, 5, 6)
    assert job.args == () and job.command[-4:] == ("--epochs", "10", "--data", "${{inputs.train}}")
    assert job.timeout == 3 * 3600 and job.tuning.early_stopping
    assert not [n for n in notes if n.field.startswith("tuning") or n.field == "args"]
    # The input declared in backends.azure_ml comes back as the job's own input, which compile
    # also hands to the runtime (an export before the command): the same job from then on.
    assert job.inputs["train"].uri == "azureml://datastores/ws/paths/cassava"
    again = compile_(job).request
    exported = 'export OMNIDIST_INPUT_train="${{inputs.train}}"; ' + request["trial"]["command"]
    assert again == {**request, "trial": {**request["trial"], "command": exported}}
    assert backend.import_with_notes(copy.deepcopy(again))[0] == job
    assert detect_backend(request) == "azure_ml"


HAND_WRITTEN = """\
$schema: https://azuremlschemas.azureedge.net/latest/sweepJob.schema.json
type: sweep
experiment_name: sklearn
compute: azureml:cpu-cluster
sampling_algorithm: {type: random, seed: 7}
search_space:
  C: {type: loguniform, min_value: -3, max_value: 2}
  kernel: {type: choice, values: [linear, rbf, 1]}
  gamma: {type: normal, mu: 0.5, sigma: 0.1}
  degree: {type: quniform, min_value: 1, max_value: 5, q: 1}
  tol: {type: qloguniform, min_value: -9, max_value: -2, q: 0.001}
  seed: {type: randint, upper: 100}
objective: {goal: Maximize, primary_metric: Accuracy}
limits: {max_total_trials: 20, timeout: 1800}
early_termination: {type: bandit, slack_factor: 0.1, evaluation_interval: 2}
trial:
  command: >-
    python train.py --C ${{search_space.C}} --k=${{search_space.kernel}}
    --gamma ${{search_space.gamma}} --degree=${{search_space.degree}} --tol=${{search_space.tol}}
  environment: {image: mcr.microsoft.com/azureml/sklearn:1}
"""


def test_import_of_a_hand_written_sweep_names_every_change():
    job, notes = backend.import_with_notes(parse_yaml(HAND_WRITTEN))
    tuning = job.tuning
    assert job.command == ("python", "train.py")
    assert set(tuning.parameters) == {"C", "k", "gamma", "degree", "tol", "seed"}
    assert tuning.parameters["C"].min == pytest.approx(math.exp(-3)) and tuning.parameters["C"].scale is Scale.LOG
    assert tuning.parameters["k"].values == ("linear", "rbf", "1")
    assert (tuning.parameters["gamma"].min, tuning.parameters["gamma"].max) == pytest.approx((0.2, 0.8))
    assert (tuning.parameters["degree"].type, tuning.parameters["degree"].min) == (ParameterType.INTEGER, 1)
    assert (tuning.parameters["seed"].min, tuning.parameters["seed"].max) == (0, 99)
    assert tuning.metric.goal.value == "maximize" and tuning.parallel_trials == 1 and tuning.early_stopping
    by_field = {}
    for note in notes:
        by_field.setdefault(note.field, []).append(note)
    kinds = lambda field: {n.kind for n in by_field.get(field, [])}  # noqa: E731
    assert NoteKind.CHANGED in kinds("tuning.parameters.gamma")       # normal -> an even range
    assert NoteKind.CHANGED in kinds("tuning.parameters.tol")         # quantization lost
    assert NoteKind.APPROXIMATED in kinds("tuning.parameters.degree")  # quniform q=1 -> integer
    assert NoteKind.APPROXIMATED in kinds("tuning.parameters.k")       # renamed to its flag; mixed values
    assert NoteKind.CHANGED in kinds("tuning.parameters.seed")        # the command never passes it
    assert NoteKind.APPROXIMATED in kinds("args")                     # --C VALUE -> --C=VALUE
    assert NoteKind.DEFAULTED in kinds("tuning.parallel_trials")
    assert NoteKind.APPROXIMATED in kinds("tuning.early_stopping")    # bandit -> median
    assert NoteKind.DROPPED in kinds("tuning.algorithm") and NoteKind.DROPPED in kinds("limits.timeout")


@pytest.mark.parametrize("change, error, text", [
    (lambda s: s["trial"].update(command="python t.py ${{search_space.C}}"), UnsupportedFeatureError,
     "other than as a --FLAG value"),
    (lambda s: s["search_space"].update(C={"type": "choice", "values": [{"a": 1}]}), UnsupportedFeatureError,
     "nested search spaces"),
    (lambda s: s["search_space"].update(C={"type": "beta"}), ValidationError, "search_space.C.type"),
    (lambda s: s["search_space"].update(C={"type": "uniform", "min_value": 3, "max_value": 1}), ValidationError,
     "search_space.C.min_value: must be <= max"),
    (lambda s: s["search_space"].update(seed={"type": "randint", "upper": 0}), ValidationError,
     "search_space.seed.upper"),
    (lambda s: s["objective"].update(goal="best"), ValidationError, "objective.goal"),
    (lambda s: s["limits"].pop("max_total_trials"), ValidationError, "limits.max_total_trials"),
    (lambda s: s.update(sampling_algorithm="sobol"), ValidationError, "sampling_algorithm"),
    (lambda s: s["trial"].update(image="x"), ValidationError, "trial.image"),
])
def test_import_refusals_name_the_field(change, error, text):
    native = parse_yaml(HAND_WRITTEN)
    change(native)
    with pytest.raises(error) as caught:
        backend.import_native(native)
    assert text in str(caught.value)


def test_a_sweep_is_put_by_name_and_followed_through_its_child_runs(azure, settings, caplog):
    azure.trial_values = [0.5, 0.875, None]
    driver = AzureMLBackend(suffix=lambda: "s1", sleep=lambda s: None)
    settings = attrs.evolve(settings, **rich().backends["azure_ml"])  # what the job's block sets
    handle = driver.submit(driver.compile(rich(max_trials=6, parallel_trials=3), settings), settings)
    (put,) = azure.calls("create")
    props = put.body["properties"]
    assert handle.id == "cassava-sweep-s1" and put.path.endswith("/jobs/cassava-sweep-s1")
    assert props["jobType"] == "Sweep" and props["objective"] == {"goal": "maximize", "primaryMetric": "val_accuracy"}
    assert props["searchSpace"]["learning_rate"][0] == "loguniform"
    assert props["trial"]["command"].endswith("--optimizer=${{search_space.optimizer}}")
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state.value == "succeeded" and len(final.trials) == 6
    first = final.trials[0]
    assert first.id == "cassava-sweep-s1_0" and [n for n, _ in first.parameters] == [
        "learning-rate", "dropout", "warmup", "layers", "batch_size", "optimizer"], "the flags' names"
    assert first.parameters[0][1] == pytest.approx(1e-5), "loguniform bounds are natural logs"
    assert (first.value, first.step) == (0.5, 10), "the last value logged, at its step"
    assert final.best == final.trials[1] and final.trials[2].state.value == "failed"
    assert final.trials[2].message == azure.error_message
    metric_calls = azure.calls("metric")
    assert metric_calls and {c.body["metricName"] for c in metric_calls} == {"val_accuracy"}
    assert all(c.headers["Authorization"].startswith("Bearer ") for c in azure.calls("children"))


def test_a_trial_that_has_not_started_costs_no_metrics_request(azure, settings):
    from omnidist.testing.study import QUEUED

    driver = AzureMLBackend(suffix=lambda: "s1", sleep=lambda s: None)
    settings = attrs.evolve(settings, **rich().backends["azure_ml"])
    handle = driver.submit(driver.compile(rich(max_trials=4, parallel_trials=2), settings), settings)
    assert any(handle.status().trials for _ in range(10))
    azure.studies["cassava-sweep-s1"].trials[1].state = QUEUED
    azure.server.requests.clear()
    status = handle.status()
    assert status.trials[1].state.value == "queued"
    asked = {c.path.rsplit("/", 2)[-2] for c in azure.calls("metric")}
    assert "cassava-sweep-s1_0" in asked and "cassava-sweep-s1_1" not in asked


def test_an_unreadable_run_history_leaves_the_sweeps_own_state(azure, settings, caplog):
    driver = AzureMLBackend(suffix=lambda: "s1", sleep=lambda s: None)
    settings = attrs.evolve(settings, **rich().backends["azure_ml"])  # what the job's block sets
    handle = driver.submit(driver.compile(rich(), settings), settings)
    azure.fail("children", *[Fault.http(403, "no access to run history")])
    status = handle.status()
    assert status.state.value == "queued" and status.trials == () and status.metric == "val_accuracy"
    assert "cannot read the trials of sweep cassava-sweep-s1" in caplog.text and "no access" in caplog.text


@pytest.mark.parametrize("tags, expected", [
    ({"sw_0": '{"learning_rate": 0.01, "layers": 3}'}, (("learning-rate", 0.01), ("layers", 3))),
    ({"sw_0": '{"--layers": 3, "--learning_rate": 0.01}'}, (("learning-rate", 0.01), ("layers", 3))),
    ({"sw_0": "not json"}, ()),
    ({}, ()),
])
def test_child_values_come_from_the_sweeps_tags(tags, expected):
    from omnidist_azure_ml import tuning

    children = [tuning.ChildRun(run_id="sw_1", status="Running"), tuning.ChildRun(run_id="sw_0", status="Completed",
                                                                                    value=0.5)]
    trials, best = tuning.trials_of("sw", tags, "python t.py --learning-rate=${{search_space.learning_rate}} "
                                    "--layers ${{search_space.layers}}", ["learning_rate", "layers"], "Maximize",
                                    children)
    assert [t.id for t in trials] == ["sw_0", "sw_1"] and trials[0].parameters == expected
    assert best == trials[0] and trials[1].state.value == "running"


BASE_JOB = job_from_dict({"name": "gen", "framework": "pytorch", "image": "trainer.example/t:1",
                                "command": ["python", "train.py"], "primary": {"accelerator": "V100:1"}})


def _expressible(tuning) -> bool:
    """What Azure holds exactly: no integer range that must become a choice, no Bayesian early stop."""
    for p in tuning.parameters.values():
        if p.type is ParameterType.INTEGER and not (p.min == 0 and p.scale is Scale.LINEAR
                                                    and tuning.algorithm is Algorithm.RANDOM):
            return False
    return tuning.max_failed_trials == 0 and not (tuning.algorithm is Algorithm.BAYESIAN and tuning.early_stopping)


EXPRESSIBLE = (
    strategies.tunings(algorithms=[Algorithm.RANDOM], max_parameters=3, max_failed_trials=st.just(0),
                       parameter=strategies.parameters(lowest_integer=0).filter(
                           lambda p: p.type is not ParameterType.INTEGER or (p.min == 0 and p.scale is Scale.LINEAR)))
    | strategies.tunings(algorithms=[Algorithm.BAYESIAN], early_stopping=st.just(False), max_failed_trials=st.just(0),
                         parameter=strategies.parameters(types=[ParameterType.DISCRETE, ParameterType.CATEGORICAL,
                                                                ParameterType.DOUBLE], scales=[Scale.LINEAR]))
    | strategies.tunings(algorithms=[Algorithm.GRID], max_failed_trials=st.just(0),
                         parameter=strategies.parameters(types=[ParameterType.DISCRETE, ParameterType.CATEGORICAL]))
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(EXPRESSIBLE)
def test_import_of_compile_gives_the_tuning_back(tuning):
    assert _expressible(tuning)
    job = attrs.evolve(BASE_JOB, tuning=tuning)
    request = compile_(job).request
    imported = backend.import_native(parse_yaml(dump_yaml(request)))
    assert imported.tuning == tuning
    assert compile_(imported).request == request


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.tunings(max_parameters=2, parameter=strategies.parameters(max_integer_span=30)))
def test_every_generated_tuning_compiles_or_is_refused_with_exit_3(tuning):
    job = attrs.evolve(BASE_JOB, tuning=tuning)
    try:
        request = compile_(job).request
    except UnsupportedFeatureError as exc:
        assert exc.subject.startswith("tuning.")
        return
    assert set(request["search_space"]) == {k.replace("-", "_") for k in tuning.parameters}
