"""``omnidist launch``: the torchrun command line, and a real two-node launch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from omnidist.local.environments import inherited
from omnidist.local.runner import free_ports
from omnidist.runtime import RuntimeEnvError, context
from omnidist.runtime.launch import (
    carry_processes_per_node,
    is_launch_command,
    launch_argv,
    plan_launch,
    torchrun_argv,
)

OMNIDIST = str(Path(sys.executable).with_name("omnidist"))


def vertex(pool: str, index: int, port: int = 2222, nodes: int = 3) -> dict[str, str]:
    cluster = {
        "workerpool0": [f"127.0.0.1:{port}"],
        "workerpool1": [f"127.0.0.1:{port + 1 + i}" for i in range(nodes - 1)],
        "workerpool3": ["127.0.0.1:9"],
    }
    return {"CLUSTER_SPEC": json.dumps({"cluster": cluster, "task": {"type": pool, "index": index}})}


def test_torchrun_argv_from_the_context():
    ctx = context({**vertex("workerpool1", 1), "OMNIDIST_PROCESSES_PER_NODE": "8"})
    assert torchrun_argv(ctx, ["train.py", "--lr", "1"], python="py") == [
        "py", "-m", "torch.distributed.run", "--nnodes=3", "--node_rank=2", "--master_addr=127.0.0.1",
        "--master_port=2222", "--nproc_per_node=8", "train.py", "--lr", "1"]


def test_nproc_flag_module_and_programs():
    ctx = context(vertex("workerpool0", 0))
    argv = launch_argv(ctx, ["-m", "pkg.train"], 2, environ={}, python="py")
    assert argv[-3:] == ["--nproc_per_node=2", "-m", "pkg.train"]
    argv = launch_argv(ctx, ["python", "train.py"], environ={}, python="py")
    assert argv[-3:] == ["--no-python", "python", "train.py"]


def test_roles_outside_the_world_run_the_command_directly():
    ctx = context(vertex("workerpool3", 0))
    assert launch_argv(ctx, ["eval.py", "--x"], environ={}, python="py") == ["py", "eval.py", "--x"]
    assert launch_argv(ctx, ["./eval.sh"], environ={}) == ["./eval.sh"]


@pytest.mark.parametrize(("command", "environ", "nproc", "variable"), [
    ([], {}, None, "argv"),
    (["t.py"], {}, 0, "--nproc-per-node"),
])
def test_launch_refuses(command, environ, nproc, variable):
    with pytest.raises(RuntimeEnvError) as info:
        launch_argv(context({}), command, nproc, environ=environ)
    assert info.value.variable == variable


AZURE = {"AZUREML_RUN_ID": "run", "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105", "AZUREML_NODE_COUNT": "2",
         "OMNIDIST_PROCESSES_PER_NODE": "8", "OMNIDIST_FRAMEWORK": "pytorch"}
"""An Azure ML PyTorch node of a 2-node job whose processes_per_node is 8."""

ALREADY_LAUNCHED = {
    # process_count_per_instance: 8 -> Azure started 8 processes per node, with process-level ranks
    "azure-per-process-node1": {**AZURE, "WORLD_SIZE": "16", "NODE_RANK": "1", "RANK": "9", "LOCAL_RANK": "1"},
    "azure-per-process-rank0": {**AZURE, "WORLD_SIZE": "16", "NODE_RANK": "0", "RANK": "0", "LOCAL_RANK": "0"},
    "azure-mpi": {"AZUREML_RUN_ID": "run", "OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "16",
                  "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "8",
                  "AZ_BATCH_MASTER_NODE": "10.0.0.4:6105"},
    "torchrun-inside-vertex": {**vertex("workerpool1", 0), "TORCHELASTIC_RUN_ID": "x", "RANK": "3", "LOCAL_RANK": "1",
                               "WORLD_SIZE": "6", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                               "MASTER_PORT": "2222"},
    "bare-torchrun": {"TORCHELASTIC_RUN_ID": "x", "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2",
                      "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "2222"},
}


@pytest.mark.parametrize("name", sorted(ALREADY_LAUNCHED))
def test_processes_the_platform_launched_run_the_command_directly(name):
    """One launcher, never two: no torchrun inside Azure's per-process launch, mpirun or torchrun."""
    env = ALREADY_LAUNCHED[name]
    plan = plan_launch(context(env), ["train.py", "--lr", "1"], environ=env, python="py")
    assert plan.argv == ("py", "train.py", "--lr", "1")
    assert "already started this node's processes" in plan.notes[-1]
    assert launch_argv(context(env), ["./run.sh"], environ=env) == ["./run.sh"]


def test_azure_one_process_per_node_gets_torchrun_for_the_rest():
    """What `compile --backend azure_ml` asks for with an `omnidist launch` command: one process per node."""
    env = {**AZURE, "WORLD_SIZE": "2", "NODE_RANK": "1", "RANK": "1", "LOCAL_RANK": "0"}
    plan = plan_launch(context(env), ["train.py"], environ=env, python="py")
    assert plan.argv == ("py", "-m", "torch.distributed.run", "--nnodes=2", "--node_rank=1",
                         "--master_addr=10.0.0.4", "--master_port=6105", "--nproc_per_node=8", "train.py")
    assert plan.notes == () and plan.env == {}


def test_tensorflow_jobs_run_directly_with_a_tf_config_tensorflow_accepts():
    """Azure's TensorFlow distribution writes "ps": [] (TensorFlow >= 2.13 rejects it)."""
    tf_config = {"cluster": {"worker": ["h0:2222", "h1:2222"], "ps": []}, "task": {"type": "worker", "index": 1},
                 "environment": "cloud"}
    env = {"AZUREML_RUN_ID": "run", "TF_CONFIG": json.dumps(tf_config), "OMNIDIST_FRAMEWORK": "tensorflow",
           "OMNIDIST_PROCESSES_PER_NODE": "4"}
    plan = plan_launch(context(env), ["train.py"], environ=env, python="py")
    assert plan.argv == ("py", "train.py")
    assert json.loads(plan.env["TF_CONFIG"]) == {**tf_config, "cluster": {"worker": ["h0:2222", "h1:2222"]}}
    assert any("'ps'" in note for note in plan.notes)


def test_tensorflow_jobs_get_a_tf_config_where_the_platform_sets_none():
    env = {**AZURE, "WORLD_SIZE": "2", "NODE_RANK": "1", "RANK": "1", "LOCAL_RANK": "0",
           "AZ_BATCH_HOST_LIST": "10.0.0.4,10.0.0.5", "OMNIDIST_FRAMEWORK": "tensorflow"}
    plan = plan_launch(context(env), ["train.py"], environ=env, python="py")
    assert plan.argv == ("py", "train.py")
    assert json.loads(plan.env["TF_CONFIG"]) == {"cluster": {"chief": ["10.0.0.4:6105"], "worker": ["10.0.0.5:6105"]},
                                                 "task": {"type": "worker", "index": 0}}


def test_a_pytorch_job_keeps_torchrun_and_gets_the_empty_ps_dropped():
    env = {**vertex("workerpool0", 0, nodes=2), "TF_CONFIG": json.dumps(
        {"cluster": {"chief": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"], "ps": []},
         "task": {"type": "chief", "index": 0}})}
    plan = plan_launch(context(env), ["train.py"], environ=env, python="py")
    assert plan.argv[1:3] == ("-m", "torch.distributed.run")
    assert "ps" not in json.loads(plan.env["TF_CONFIG"])["cluster"]


@pytest.mark.parametrize(("command", "expected"), [
    (["omnidist", "launch", "--", "train.py"], ("omnidist", "launch", "--nproc-per-node=4", "--", "train.py")),
    (["/usr/bin/omnidist", "launch", "train.py"], ("/usr/bin/omnidist", "launch", "--nproc-per-node=4", "train.py")),
    (["python", "-m", "omnidist.cli", "launch", "--", "t.py"],
     ("python", "-m", "omnidist.cli", "launch", "--nproc-per-node=4", "--", "t.py")),
    (["omnidist", "launch", "--nproc-per-node", "2", "--", "t.py"], None),
    (["omnidist", "launch", "--nproc-per-node=2", "--", "t.py"], None),
    (["python", "train.py"], None),
    (["omnidist", "env"], None),
])
def test_launch_commands_carry_the_process_count(command, expected):
    assert carry_processes_per_node(command, 4) == (expected or tuple(command))
    assert carry_processes_per_node(command, 1) == tuple(command)
    assert is_launch_command(command) == (command not in (["python", "train.py"], ["omnidist", "env"]))


def test_cli_dry_run_and_bad_environment():
    env = {**inherited(dict(os.environ)), **vertex("workerpool1", 0), "OMNIDIST_PROCESSES_PER_NODE": "4"}
    out = subprocess.run([OMNIDIST, "launch", "--dry-run", "--", "train.py", "--epochs", "2"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1:] == ["-m", "torch.distributed.run", "--nnodes=3", "--node_rank=1",
                                      "--master_addr=127.0.0.1", "--master_port=2222", "--nproc_per_node=4",
                                      "train.py", "--epochs", "2"]
    env["CLUSTER_SPEC"] = "{oops"
    out = subprocess.run([OMNIDIST, "launch", "--", "train.py"], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "environment variable CLUSTER_SPEC" in out.stderr and "Traceback" not in out.stderr


WORKER = """
import json, os, warnings
warnings.filterwarnings("ignore")
import torch, torch.distributed as dist
from omnidist.runtime import context, init_torch
ctx = init_torch()
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
with open(f"rank{ctx.rank}.json", "w") as fh:  # a file each: processes of one node share stdout
    json.dump({"rank": ctx.rank, "world": dist.get_world_size(), "local_rank": ctx.local_rank,
               "node": ctx.node_rank, "platform": ctx.platform, "sum": value.item()}, fh)
dist.barrier()
dist.destroy_process_group()
"""


def test_two_nodes_form_one_gloo_world(tmp_path):
    """Two `omnidist launch` processes (2 + 1 processes) wired from a Vertex CLUSTER_SPEC."""
    (tmp_path / "worker.py").write_text(WORKER)
    master, other = free_ports(2)
    cluster = {"workerpool0": [f"127.0.0.1:{master}"], "workerpool1": [f"127.0.0.1:{other}"]}
    base = {**inherited(dict(os.environ)), "OMNIDIST_PROCESSES_PER_NODE": "2", "OMP_NUM_THREADS": "1"}
    nodes = []
    for pool, extra in (("workerpool0", []), ("workerpool1", ["--nproc-per-node", "1"])):
        env = {**base, "CLUSTER_SPEC": json.dumps({"cluster": cluster, "task": {"type": pool, "index": 0}})}
        nodes.append(subprocess.Popen([OMNIDIST, "launch", *extra, "--", "worker.py"], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = []
    try:
        for node in nodes:
            outputs.append(node.communicate(timeout=90)[0])
    finally:
        for node in nodes:
            node.kill()
    assert [n.returncode for n in nodes] == [0, 0], outputs
    results = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("rank*.json"))]
    assert sorted(r["rank"] for r in results) == [0, 1, 2]
    assert {r["world"] for r in results} == {3} and {r["sum"] for r in results} == {6.0}
    assert {r["platform"] for r in results} == {"vertex"}
    assert sorted((r["node"], r["local_rank"]) for r in results) == [(0, 0), (0, 1), (1, 0)]
