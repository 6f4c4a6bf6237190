"""SageMaker's contract (omnidist/runtime/platforms/sagemaker.py): hosts without ports, the
toolkit's variables and resourceconfig.json, its distributions, and emulate <-> parse."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from omnidist.runtime import RuntimeEnvError, context, report
from omnidist.runtime.platforms import Decided, sagemaker

from .cluster import job, round_trip, shapes

# What the training toolkit exports on the second of three hosts (script mode).
TOOLKIT = {"SM_HOSTS": '["algo-1","algo-2","algo-3"]', "SM_CURRENT_HOST": "algo-2", "SM_NUM_GPUS": "8",
           "SM_CHANNELS": '["train","Vocab"]', "SM_CHANNEL_TRAIN": "/opt/ml/input/data/train",
           "SM_CHANNEL_VOCAB": "/opt/ml/input/data/Vocab", "SM_MODEL_DIR": "/opt/ml/model",
           "TRAINING_JOB_NAME": "bert-s0"}


def test_the_toolkits_variables():
    assert sagemaker.detect(TOOLKIT)
    ctx = context(TOOLKIT, argv=[])
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes) == ("sagemaker", "worker", 0, 1, 3)
    assert (ctx.master_addr, ctx.master_port) == ("algo-1", 7777), "rank 0 on the first host, the toolkit's port"
    assert ctx.cluster == {"primary": ["algo-1:7777"], "worker": ["algo-2:7777", "algo-3:7777"]}
    assert ctx.inputs == {"train": "/opt/ml/input/data/train", "Vocab": "/opt/ml/input/data/Vocab"}
    assert ctx.model_dir == "/opt/ml/model"


def test_torch_distributed_starts_one_process_per_gpu():
    params = {"SM_FRAMEWORK_PARAMS": json.dumps({"sagemaker_torch_distributed_enabled": True})}
    assert context({**TOOLKIT, **params}, argv=[]).processes_per_node == 8
    assert context(TOOLKIT, argv=[]).processes_per_node == 1


def test_an_image_without_the_toolkit_reads_resourceconfig_json(tmp_path):
    (tmp_path / "resourceconfig.json").write_text(json.dumps({
        "current_host": "algo-1", "hosts": ["algo-2", "algo-1"], "current_group_name": "primary",
        "instance_groups": [{"instance_group_name": "workers", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1"]},
                            {"instance_group_name": "primary", "instance_type": "ml.p4d.24xlarge",
                             "hosts": ["algo-2"]}]}))
    env = {"TRAINING_JOB_NAME": "j", "SM_INPUT_CONFIG_DIR": str(tmp_path)}
    assert sagemaker.detect(env) and not sagemaker.detect({"TRAINING_JOB_NAME": "j"})
    ctx = context(env, argv=[])
    assert (ctx.role, ctx.node_rank, ctx.master_addr) == ("worker", 1, "algo-2"), "the primary group's host leads"
    assert ctx.model_dir == "/opt/ml/model"


@pytest.mark.parametrize("env, name", [
    ({**TOOLKIT, "SM_HOSTS": "algo-1"}, "SM_HOSTS"),
    ({**TOOLKIT, "SM_HOSTS": "[]"}, "SM_HOSTS"),
    ({**TOOLKIT, "SM_CURRENT_HOST": "algo-9"}, "SM_CURRENT_HOST"),
    ({**TOOLKIT, "SM_MASTER_PORT": "x"}, "SM_MASTER_PORT"),
])
def test_malformed_variables_are_named(env, name):
    with pytest.raises(RuntimeEnvError, match=name):
        context(env, argv=[])


def test_report_prints_the_line_the_tuners_pattern_reads(monkeypatch, capsys):
    import re

    from omnidist.runtime.trials import metric_regex

    monkeypatch.setattr("os.environ", dict(TOOLKIT))
    assert report(accuracy=0.91, step=100) == "logs"
    line = capsys.readouterr().out.strip()
    assert line == "[omnidist] metric accuracy=0.91 step=100"
    assert re.search(metric_regex("accuracy"), line)[1] == "0.91"


@settings(max_examples=30, deadline=None)
@given(shape=shapes(roles=("primary", "worker")))
def test_emulate_then_parse_round_trips(shape):
    round_trip(sagemaker, shape, Decided(details={"distribution": ""}))


def test_mpi_ranks_round_trip():
    round_trip(sagemaker, {"primary": 1, "worker": 1}, Decided(processes_per_node=2, details={"distribution": "mpi"}))


def test_parameter_servers_round_trip_with_the_tensorflow_toolkits_tf_config():
    shape = {"primary": 1, "worker": 1, "parameter_server": 2}
    found = round_trip(sagemaker, shape, Decided(details={"distribution": "parameter_server"}),
                       facts=job(shape, framework="tensorflow"))
    assert [c.role for c in found] == ["primary", "worker", "parameter_server", "parameter_server"]


def test_compile_then_follow_decides_the_distribution():
    import omnidist
    from omnidist.model.job import job_from_dict

    portable = job_from_dict({"name": "demo", "framework": "horovod", "framework_version": "2.3",
                              "code": "s3://b/c.tar.gz", "command": ["python", "t.py"],
                              "primary": {"accelerator": "V100:8"}, "workers": {"replicas": 1},
                              "processes_per_node": 4})
    request = omnidist.compile(portable, backend="sagemaker",
                               settings={"role_arn": "arn:aws:iam::123456789012:role/r"}).request
    decided = sagemaker.follow(request, job({"primary": 1, "worker": 1}, framework="horovod"))
    assert (decided.processes_per_node, decided.details["distribution"]) == (4, "mpi")


def test_omnidist_launch_wires_torchrun_from_the_hosts():
    from omnidist.runtime.launch import plan_launch

    env = {**TOOLKIT, "OMNIDIST_PROCESSES_PER_NODE": "8"}
    plan = plan_launch(context(env, argv=[]), ["train.py", "--lr", "1"], environ=env, python="python")
    assert plan.argv == ("python", "-m", "torch.distributed.run", "--nnodes=3", "--node_rank=1",
                         "--master_addr=algo-1", "--master_port=7777", "--nproc_per_node=8", "train.py", "--lr", "1")


def test_omnidist_run_emulates_sagemaker(tmp_path):
    from omnidist.testing.cli import run_cli

    (tmp_path / "job.yaml").write_text(json.dumps({
        "name": "emu", "framework": "pytorch", "primary": {}, "workers": {"replicas": 1},
        "command": ["python", "-c", "import omnidist.runtime as r; c = r.context(); "
                                    "print(c.platform, c.role, c.node_rank, c.num_nodes, c.master_addr)"]}))
    done = run_cli("run", "job.yaml", "--emulate", "sagemaker", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[primary-0] sagemaker primary 0 2 127.0.0.1" in done.stdout
    assert "[worker-0] sagemaker worker 1 2 127.0.0.1" in done.stdout


@pytest.mark.parametrize("env, name", [
    ({**TOOLKIT, "SM_CHANNELS": "[nope"}, "SM_CHANNELS"),
    ({**TOOLKIT, "SM_RESOURCE_CONFIG": json.dumps({"hosts": ["algo-1"], "current_host": "algo-1",
                                                   "instance_groups": 3})}, "SM_HOSTS"),
])
def test_malformed_channels_and_groups_are_named(env, name):
    with pytest.raises(RuntimeEnvError, match=name):
        context(env, argv=[])
