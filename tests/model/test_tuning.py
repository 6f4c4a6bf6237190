"""The ``tuning`` block (SPEC §8): model, normalization, validation with field paths, YAML round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from omnidist.errors import ValidationError
from omnidist.model.job import DistributedJob, job_from_dict, job_from_yaml, load
from omnidist.model.tuning import Algorithm, Goal, Parameter, ParameterType, Scale, Tuning
from omnidist.testing.cli import run_cli
from omnidist.testing.strategies import jobs, tunings

SPEC_EXAMPLE = """\
name: tuned
framework: pytorch
command: [python, train.py]
primary: {}
tuning:
  metric: {name: accuracy, goal: maximize}
  parameters:
    lr: {type: double, min: 1.0e-5, max: 1.0e-1, scale: log}
    layers: {type: integer, min: 1, max: 8}
    batch_size: {type: discrete, values: [32, 64, 128]}
    optimizer: {type: categorical, values: [adam, sgd]}
  algorithm: bayesian
  max_trials: 20
  parallel_trials: 4
  max_failed_trials: 0
  early_stopping: false
"""

BASE = {"name": "tuned", "framework": "pytorch", "command": ["python", "train.py"], "primary": {}}
TUNING = {"metric": {"name": "accuracy", "goal": "maximize"},
          "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}, "max_trials": 4}


def with_tuning(**changes) -> dict:
    return {**BASE, "tuning": {**TUNING, **changes}}


def test_spec_example_reads_into_the_model():
    tuning = job_from_yaml(SPEC_EXAMPLE).tuning
    assert tuning.metric.goal is Goal.MAXIMIZE and tuning.algorithm is Algorithm.BAYESIAN
    lr = tuning.parameters["lr"]
    assert (lr.type, lr.min, lr.max, lr.scale) == (ParameterType.DOUBLE, 1e-5, 0.1, Scale.LOG)
    assert tuning.parameters["layers"].min == 1 and isinstance(tuning.parameters["layers"].max, int)
    assert tuning.parameters["batch_size"].values == (32, 64, 128)
    assert tuning.parameters["optimizer"].values == ("adam", "sgd")
    assert (tuning.max_trials, tuning.parallel_trials, tuning.max_failed_trials) == (20, 4, 0)
    assert str(tuning) == "maximize accuracy over lr, layers, batch_size, optimizer (bayesian, 20 trials, 4 at a time)"


def test_a_job_without_tuning_writes_no_tuning_key():
    job = job_from_dict(BASE)
    assert job.tuning is None and "tuning" not in job.to_dict()


def test_yaml_round_trip_keeps_the_spec_order_and_drops_defaults():
    job = job_from_yaml(SPEC_EXAMPLE)
    data = job.to_dict()["tuning"]
    assert list(data) == ["metric", "parameters", "max_trials", "parallel_trials"]  # defaults left out
    assert data["parameters"]["layers"] == {"type": "integer", "min": 1, "max": 8}  # linear scale is the default
    assert job_from_yaml(job.to_yaml()) == job


def test_values_are_normalized():
    tuning = job_from_dict(with_tuning(parameters={
        "lr": {"type": "double", "min": "1e-5", "max": 1},           # PyYAML reads 1e-5 as a string
        "bs": {"type": "discrete", "values": [128, 32, 64.5]},       # sorted
        "opt": {"type": "categorical", "values": ["adam", 1, 2.5]},  # text
        "n": {"type": "integer", "min": 2.0, "max": 8}})).tuning     # whole numbers become int
    assert tuning.parameters["lr"].min == 1e-5
    assert tuning.parameters["bs"].values == (32, 64.5, 128)
    assert tuning.parameters["opt"].values == ("adam", "1", "2.5")
    assert tuning.parameters["n"].min == 2 and isinstance(tuning.parameters["n"].min, int)
    # the same value written two ways is the same parameter
    assert Parameter(type="discrete", values=[2, 1]) == Parameter(type="discrete", values=(1, 2))


def test_pyyaml_style_exponents_in_a_job_file(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(SPEC_EXAMPLE.replace("1.0e-5", "1e-5"))
    assert load(path).tuning.parameters["lr"].min == 1e-5


@pytest.mark.parametrize("changes, path, message", [
    ({"parameters": {"lr": {"type": "dubble", "min": 1, "max": 2}}}, "tuning.parameters.lr.type", "did you mean 'double'"),
    ({"parameters": {"lr": {"type": "double", "min": 3, "max": 2}}}, "tuning.parameters.lr.min", "must be <= max (2)"),
    ({"parameters": {"lr": {"type": "double", "max": 2}}}, "tuning.parameters.lr.min", "required for a double"),
    ({"parameters": {"lr": {"type": "double", "min": "abc", "max": 2}}}, "tuning.parameters.lr.min", "expected a number"),
    ({"parameters": {"lr": {"type": "double", "min": 0, "max": 2, "scale": "log"}}}, "tuning.parameters.lr.min",
     "scale: log needs min > 0"),
    ({"parameters": {"lr": {"type": "double", "min": 1, "max": 2, "scale": "lgo"}}}, "tuning.parameters.lr.scale",
     "did you mean 'log'"),
    ({"parameters": {"lr": {"type": "double", "min": 1, "max": 2, "values": [1]}}}, "tuning.parameters.lr.values",
     "is a range"),
    ({"parameters": {"n": {"type": "integer", "min": 1.5, "max": 2}}}, "tuning.parameters.n.min", "whole numbers"),
    ({"parameters": {"bs": {"type": "discrete", "values": []}}}, "tuning.parameters.bs.values", "at least one value"),
    ({"parameters": {"bs": {"type": "discrete", "values": [1, "x"]}}}, "tuning.parameters.bs.values[1]",
     "expected a number"),
    ({"parameters": {"bs": {"type": "discrete", "values": [1, 1.0]}}}, "tuning.parameters.bs.values", "more than once"),
    ({"parameters": {"bs": {"type": "discrete", "values": [1], "min": 0}}}, "tuning.parameters.bs.min", "lists its values"),
    ({"parameters": {"o": {"type": "categorical", "values": ["a"], "scale": "log"}}}, "tuning.parameters.o.scale",
     "double and integer ranges"),
    ({"parameters": {"o": {"type": "categorical", "values": "adam"}}}, "tuning.parameters.o.values", "expected a list"),
    ({"parameters": {"o": {"type": "categorical", "values": [True]}}}, "tuning.parameters.o.values[0]", "expected text"),
    ({"parameters": {"lr": {"type": "double", "min": 1, "max": 2, "step": 1}}}, "tuning.parameters.lr.step",
     "unknown key"),
    ({"parameters": {"lr": "double"}}, "tuning.parameters.lr", "expected a mapping"),
    ({"parameters": {"bad name": {"type": "double", "min": 1, "max": 2}}}, "tuning.parameters.bad name",
     "not a parameter name"),
    ({"parameters": {}}, "tuning.parameters", "at least one parameter"),
    ({"metric": {"name": "accuracy", "goal": "maximise"}}, "tuning.metric.goal", "did you mean 'maximize'"),
    ({"metric": {"name": "accuracy"}}, "tuning.metric.goal", "required"),
    ({"metric": {"name": "", "goal": "minimize"}}, "tuning.metric.name", "metric's name"),
    ({"algorithm": "hyperband"}, "tuning.algorithm", "bayesian, random, grid"),
    ({"max_trials": 0}, "tuning.max_trials", "must be >= 1"),
    ({"max_trials": True}, "tuning.max_trials", "whole number"),
    ({"parallel_trials": 0}, "tuning.parallel_trials", "must be >= 1"),
    ({"parallel_trials": 5}, "tuning.parallel_trials", "only 4 in all"),
    ({"max_failed_trials": -1}, "tuning.max_failed_trials", "must be >= 0"),
    ({"early_stopping": "yes"}, "tuning.early_stopping", "true or false"),
    ({"trials": 3}, "tuning.trials", "unknown key"),
])
def test_invalid_tuning_names_the_field(changes, path, message):
    with pytest.raises(ValidationError) as caught:
        job_from_dict(with_tuning(**changes), source="job.yaml")
    text = str(caught.value)
    assert text.startswith(f"job.yaml: {path}: "), text
    assert message in text


def test_min_equal_to_max_pins_a_value():
    tuning = job_from_dict(with_tuning(parameters={"lr": {"type": "double", "min": 0.1, "max": 0.1}})).tuning
    assert tuning.parameters["lr"].min == tuning.parameters["lr"].max == 0.1


def test_missing_max_trials_is_required():
    data = {**BASE, "tuning": {k: v for k, v in TUNING.items() if k != "max_trials"}}
    with pytest.raises(ValidationError, match="tuning.max_trials: required"):
        job_from_dict(data)


def test_the_python_api_takes_mappings_and_prefixes_its_errors():
    job = DistributedJob(name="a", framework="pytorch", tuning=TUNING)
    assert job.tuning == job_from_dict(with_tuning()).tuning
    with pytest.raises(ValidationError, match=r"^tuning\.parameters\.lr\.min: must be <= max"):
        DistributedJob(name="a", framework="pytorch",
                       tuning={**TUNING, "parameters": {"lr": {"type": "double", "min": 5, "max": 1}}})
    with pytest.raises(ValidationError, match=r"^tuning: .*needs metric, parameters and max_trials"):
        DistributedJob(name="a", framework="pytorch", tuning={"metric": TUNING["metric"]})
    with pytest.raises(ValidationError, match=r"^metric: expected"):
        Tuning(metric="accuracy", parameters=TUNING["parameters"], max_trials=1)


def test_cli_validate_exits_2_with_the_path(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(SPEC_EXAMPLE.replace("min: 1, max: 8", "min: 9, max: 8"))
    result = run_cli("validate", str(path))
    assert result.returncode == 2
    assert f"{path}: tuning.parameters.layers.min: must be <= max (8), got 9" in result.stderr
    assert "Traceback" not in result.stderr


@settings(max_examples=200, deadline=None)
@given(jobs(tuning=tunings()))
def test_any_tuning_round_trips_through_yaml(job):
    again = job_from_yaml(job.to_yaml())
    assert again == job and again.tuning == job.tuning


def test_notebook_html_shows_the_search():
    job = job_from_yaml(SPEC_EXAMPLE)
    assert "maximize accuracy over lr, layers, batch_size, optimizer (bayesian, 20 trials, 4 at a time)" in \
        job._repr_html_().replace("<wbr>", "")  # <wbr>: where a long cell may wrap
