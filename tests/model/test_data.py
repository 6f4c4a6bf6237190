"""SPEC §7 in the IR: description, code, module, framework_version, inputs, outputs,
references and ``accelerator: none`` (omnidist/jobdata.py, job.py, serde.py, lowering.py)."""

from __future__ import annotations

import pytest

from omnidist.compiler import code_data as data
from omnidist.errors import ValidationError
from omnidist.model import serde
from omnidist.model.data import InputMode, JobInput, JobOutput
from omnidist.model.job import DistributedJob, job_from_dict, job_from_yaml, job_to_dict, job_to_yaml
from omnidist.model.roles import Accelerator, Role, effective_role

FULL = """
name: mnli
framework: pytorch
description: Fine-tune BERT on MNLI
command: []
code: ./src
module: trainer.task
framework_version: "2.12"
inputs:
  train: gs://bucket/mnli/train
  vocab: {uri: "azureml://datastores/ws/paths/vocab.txt", mode: download}
  local: ./data
  epochs: 10
  lr: "0.1"
  optimizer: adam
outputs:
  model: default
  checkpoints: {uri: gs://bucket/ckpt}
args: [--data, "${{inputs.train}}", --epochs, "${{inputs.epochs}}", --model-dir, "${{outputs.model}}"]
env: {VOCAB: "${{inputs.vocab}}"}
primary: {accelerator: V100:8}
workers: {replicas: 4, accelerator: none}
"""


def job(text: str = "", **extra) -> DistributedJob:
    base = {"name": "a", "framework": "pytorch", "primary": {}}
    return job_from_dict({**base, **serde.parse_yaml(text or "{}"), **extra}, source="job.yaml")


def test_every_new_field_is_read_and_round_trips():
    parsed = job_from_yaml(FULL)
    assert parsed.description == "Fine-tune BERT on MNLI" and parsed.code == "./src"
    assert parsed.module == "trainer.task" and parsed.framework_version == "2.12" and parsed.command == ()
    assert parsed.inputs["train"] == JobInput(uri="gs://bucket/mnli/train")
    assert parsed.inputs["vocab"].mode is InputMode.DOWNLOAD and parsed.inputs["vocab"].scheme == "azureml"
    assert parsed.inputs["local"].scheme == "local"
    assert [parsed.inputs[k].value for k in ("epochs", "lr", "optimizer")] == [10, "0.1", "adam"]
    assert parsed.outputs == {"model": JobOutput(), "checkpoints": JobOutput(uri="gs://bucket/ckpt")}
    assert parsed.workers.accelerator == "none"
    assert job_from_dict(job_to_dict(parsed)) == parsed
    assert job_from_yaml(job_to_yaml(parsed)) == parsed
    written = job_to_dict(parsed)
    assert written["inputs"]["vocab"] == {"uri": "azureml://datastores/ws/paths/vocab.txt", "mode": "download"}
    assert written["outputs"] == {"model": "default", "checkpoints": {"uri": "gs://bucket/ckpt"}}


def test_the_python_api_takes_the_job_file_spellings():
    built = DistributedJob(name="a", framework="pytorch", inputs={"x": "gs://b/x", "n": 3},
                           outputs={"m": "default"}, workers=Role(accelerator="None"))
    assert built.inputs["x"].uri == "gs://b/x" and built.inputs["n"].literal and built.outputs["m"].default
    assert built.workers.accelerator == "none"


@pytest.mark.parametrize("text, path, message", [
    ("framework_version: 2.10", "framework_version", "YAML reads an unquoted 2.1 as a number"),
    ("module: trainer.task\ncommand: [python, x.py]", "module", "remove command"),
    ("module: m\nworkers: {command: [x]}", "workers.command", "cannot set its own command"),
    ("module: 1bad", "module", "not a Python module name"),
    ("inputs: {x: {url: gs://b}}", "inputs.x.url", "did you mean 'uri'"),
    ("inputs: {x: true}", "inputs.x", "a literal number or string"),
    ("inputs: {x: {mode: download}}", "inputs.x.uri", "required"),
    ("inputs: {x: {uri: gs://b, mode: rw}}", "inputs.x.mode", "ro_mount, download"),
    ("inputs: {1x: gs://b}", "inputs.1x", "names are letters"),
    ("outputs: {m: somewhere}", "outputs.m", "expected default"),
    ("primary: {accelerator: none}", "primary.accelerator", "leave accelerator out"),
])
def test_bad_new_fields_name_the_file_and_path(text, path, message):
    with pytest.raises(ValidationError) as info:
        job(text)
    problem = info.value.problems[0]
    assert (problem.path, info.value.source) == (path, "job.yaml") and message in problem.message


@pytest.mark.parametrize("text, path", [
    ('args: ["${{inputs.trian}}"]\ninputs: {train: gs://b/t}', "args[0]"),
    ('command: "python t.py --out ${{outputs.model}}"', "command[3]"),
    ('env: {D: "${{inputs.d}}"}', "env.D"),
    ('workers: {args: ["${{outputs.x}}"]}\noutputs: {y: default}', "workers.args[0]"),
])
def test_an_undeclared_reference_is_exit_2_with_its_path(text, path):
    parsed = job(text)  # the IR keeps it: a backend's own declarations may name it (Azure ML's inputs)
    with pytest.raises(ValidationError) as info:
        data.check_references(parsed)
    assert info.value.problems[0].path == path and info.value.exit_code == 2
    assert info.value.source == "job.yaml"


def test_an_undeclared_reference_suggests_the_close_name():
    with pytest.raises(ValidationError, match=r"Did you mean 'train'\? Declared: train\."):
        data.check_references(job('args: ["${{inputs.trian}}"]\ninputs: {train: gs://b/t}'))


def test_a_string_input_is_data_only_when_it_looks_like_a_location():
    assert [JobInput.parse(v).literal for v in ("gs://b", "https://x/y", "./d", "/abs", "azureml:ds:1")] == [False] * 5
    assert [JobInput.parse(v).literal for v in ("adam", "cuda:0", "0.1", 3, 2.5)] == [True] * 5
    with pytest.raises(ValidationError, match="names data"):
        JobInput(value="gs://b/x")  # a literal cannot pretend to be a location


def test_accelerator_none_stops_inheriting_the_primarys():
    parsed = DistributedJob(name="a", framework="pytorch", primary=Role(accelerator="A100:8"),
                            workers=Role(replicas=2, accelerator="none"), evaluators=Role(replicas=1))
    assert effective_role(parsed, "workers").accelerator is None
    assert effective_role(parsed, "evaluators").accelerator == Accelerator(type="A100", count=8)
    assert effective_role(parsed, "workers").gpus == 0
