"""The runtime's view of the job's data (SPEC §7): ``inputs``, ``outputs`` and ``model_dir``
on each platform, from the compilers' hints and the platforms' own variables."""

from __future__ import annotations

import json

import pytest

from omnidist.runtime import context

from .test_detect import AZURE_PYTORCH, vertex_env

HINTS = {"OMNIDIST_INPUT_train": "/gcs/bkt/train", "OMNIDIST_INPUT_epochs": "3",
         "OMNIDIST_OUTPUT_model": "/gcs/bkt/out/model"}


def test_inputs_and_outputs_come_from_the_hints():
    ctx = context({**vertex_env("workerpool0", 0), **HINTS}, argv=[])
    assert ctx.inputs == {"epochs": "3", "train": "/gcs/bkt/train"}
    assert ctx.outputs == {"model": "/gcs/bkt/out/model"}
    data = ctx.to_dict()
    assert (data["inputs"], data["outputs"], data["model_dir"]) == (ctx.inputs, ctx.outputs, ctx.model_dir)
    assert json.loads(json.dumps(data)) == data


def test_vertex_model_dir_is_aip_model_dir_as_a_fuse_path():
    ctx = context({**vertex_env("workerpool1", 0), "AIP_MODEL_DIR": "gs://bkt/out/model/"}, argv=[])
    assert ctx.model_dir == "/gcs/bkt/out/model/"


@pytest.mark.parametrize("argv", [["--job-dir", "gs://bkt/jobs/1"], ["--lr=1", "--job-dir=gs://bkt/jobs/1"],
                                  ["--job_dir", "gs://bkt/jobs/1"]])
def test_ai_platform_model_dir_is_the_job_dir_argument(argv):
    env = {"CLUSTER_SPEC": json.dumps({"cluster": {"master": ["m:2222"]}, "task": {"type": "master", "index": 0}})}
    ctx = context(env, argv=["trainer/task.py", *argv])
    assert ctx.platform == "ai_platform" and ctx.model_dir == "gs://bkt/jobs/1" and ctx.inputs == {}


def test_azure_model_dir_is_the_model_output_else_outputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert context(AZURE_PYTORCH, argv=[]).model_dir == str(tmp_path / "outputs")
    mounted = {**AZURE_PYTORCH, "OMNIDIST_OUTPUT_model": "/mnt/azureml/cr/j/outputs/model"}
    assert context(mounted, argv=[]).model_dir == "/mnt/azureml/cr/j/outputs/model"


def test_local_model_dir_hint_and_nothing_without_one():
    assert context({"OMNIDIST_MODEL_DIR": "/runs/r/outputs/model"}, argv=[]).model_dir == "/runs/r/outputs/model"
    plain = context({}, argv=["x.py"])
    assert (plain.inputs, plain.outputs, plain.model_dir) == ({}, {}, None)
