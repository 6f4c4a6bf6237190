"""Tuning: CreateHyperParameterTuningJob checked with botocore's model, the objective read with the
pattern omnidist.runtime.report() prints, refusals, import, and a search followed through boto3
against the fake to its trials and best trial."""

from __future__ import annotations

import re

import pytest

import omnidist
from omnidist.kit import JobState, UnsupportedFeatureError, job_from_dict
from omnidist.runtime.trials import metric_line
from omnidist_sagemaker.importer import import_job
from omnidist_sagemaker.testing import ROLE, request_problems

SEARCH = {
    "metric": {"name": "accuracy", "goal": "maximize"},
    "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1, "scale": "log"},
                   "layers": {"type": "integer", "min": 1, "max": 4},
                   "optimizer": {"type": "categorical", "values": ["adam", "sgd"]}},
    "algorithm": "random", "max_trials": 4, "parallel_trials": 2,
}
JOB = {"name": "tune-mnist", "framework": "pytorch", "framework_version": "2.3", "code": "s3://b/code.tar.gz",
       "command": ["python", "train.py"], "args": ["--epochs", "3"], "primary": {"accelerator": "T4:1"},
       "tuning": SEARCH}


def compile_(job, **settings):
    return omnidist.compile(job_from_dict(job), backend="sagemaker", settings={"role_arn": ROLE, **settings})


def test_the_tuning_request_is_valid_for_botocore_and_reads_what_report_prints():
    request = compile_(JOB).request
    assert request_problems(request) == []
    config = request["HyperParameterTuningJobConfig"]
    assert config["Strategy"] == "Random" and config["HyperParameterTuningJobObjective"] == {
        "Type": "Maximize", "MetricName": "accuracy"}
    assert config["ResourceLimits"] == {"MaxNumberOfTrainingJobs": 4, "MaxParallelTrainingJobs": 2}
    assert config["ParameterRanges"]["ContinuousParameterRanges"] == [
        {"Name": "lr", "MinValue": "0.001", "MaxValue": "0.1", "ScalingType": "Logarithmic"}]
    definition = request["TrainingJobDefinition"]
    (metric,) = definition["AlgorithmSpecification"]["MetricDefinitions"]
    assert re.search(metric["Regex"], metric_line("accuracy", 0.91, 100))[1] == "0.91"
    assert definition["StaticHyperParameters"]["sagemaker_program"] == '"train.py"'
    assert definition["StaticHyperParameters"]["epochs"] == "3"


def test_a_command_on_a_custom_image_cannot_be_tuned():
    job = {**JOB, "image": "acct.dkr.ecr.us-east-1.amazonaws.com/t:1", "code": None}
    with pytest.raises(UnsupportedFeatureError, match="tuning with a command"):
        compile_(job)
    entrypoint = {**job, "command": [], "args": []}
    compiled = compile_(entrypoint)
    assert request_problems(compiled.request) == []
    assert any("hyperparameters.json" in n.message for n in compiled.diagnostics)


def test_grid_search_takes_lists_only():
    with pytest.raises(UnsupportedFeatureError, match="tuning.parameters.lr"):
        compile_({**JOB, "tuning": {**SEARCH, "algorithm": "grid"}})


def test_import_reads_the_search_back():
    compiled = compile_(JOB)
    back = omnidist.import_native(compiled.request, backend="sagemaker")
    assert back.tuning == job_from_dict(JOB).tuning
    assert compile_(back.to_dict()).request == compiled.request


def test_a_search_is_followed_to_its_trials_and_best(backend, fake, fake_settings):
    fake.trial_values = [0.3, None, 0.9, 0.5]
    compiled = backend.compile(job_from_dict(JOB), fake_settings)
    handle = backend.submit(compiled, fake_settings)
    assert handle.id == "tune-mnist-s0" and len(fake.calls("tuning_create")) == 1
    final = handle.wait(poll_interval=0, sleep=lambda s: None)
    assert final.state is JobState.SUCCEEDED and final.metric == "accuracy"
    assert [t.state for t in final.trials] == [JobState.SUCCEEDED, JobState.FAILED, JobState.SUCCEEDED,
                                               JobState.SUCCEEDED]
    assert [t.value for t in final.trials] == [0.3, None, 0.9, 0.5]
    assert final.best.id == "tune-mnist-s0-003-00000003" and final.best.value == 0.9
    assert dict(final.best.parameters)["optimizer"] == "adam"


def test_a_running_search_is_stopped(backend, fake, fake_settings):
    fake.keep_running()
    handle = backend.submit(backend.compile(job_from_dict(JOB), fake_settings), fake_settings)
    handle.status()
    handle.cancel()
    assert len(fake.calls("tuning_cancel")) == 1
    assert handle.wait(poll_interval=0, sleep=lambda s: None).state is JobState.CANCELLED


def test_the_reverse_log_scale_is_sagemakers_reverse_logarithmic():
    search = {**SEARCH, "parameters": {"momentum": {"type": "double", "min": 0.5, "max": 0.999,
                                                    "scale": "reverse_log"}}}
    request = compile_({**JOB, "tuning": search}).request
    assert request_problems(request) == []
    (momentum,) = request["HyperParameterTuningJobConfig"]["ParameterRanges"]["ContinuousParameterRanges"]
    assert momentum["ScalingType"] == "ReverseLogarithmic"
    job, notes = import_job(request)
    assert job.tuning.parameters["momentum"].scale.value == "reverse_log"
    assert not [n for n in notes if n.field.endswith("momentum.ScalingType")]


def test_reverse_logarithmic_takes_ranges_below_one_only():
    search = {**SEARCH, "parameters": {"n": {"type": "integer", "min": 1, "max": 100, "scale": "reverse_log"}}}
    with pytest.raises(UnsupportedFeatureError, match="within 0 <= x < 1"):
        compile_({**JOB, "tuning": search})


def test_more_trials_at_once_than_in_all_is_all_at_once():
    request = compile_(JOB).request
    request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] = 10
    job, notes = import_job(request)
    assert job.tuning.parallel_trials == job.tuning.max_trials == 4
    assert any(n.field == "tuning.parallel_trials" and "all at once" in n.message for n in notes)
