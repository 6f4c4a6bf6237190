"""The Kubernetes platform (omnidist/runtime/platforms/kubernetes.py): PyTorchJob and TFJob pods
read as the operator writes their variables, ``omnidist launch`` wired from them, and
``omnidist run --emulate kubernetes`` giving replicas what the compiled job's pods get."""

from __future__ import annotations

import json
import sys

import pytest

import omnidist
from omnidist.kit import DistributedJob, Role, UnsupportedFeatureError
from omnidist.runtime import context, platforms
from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.launch import plan_launch
from omnidist.runtime.platforms import Decided, JobFacts, Slot
from omnidist.runtime.platforms import kubernetes as platform
from omnidist_kubernetes.tables import FRAMEWORK_KINDS, REPLICA_TYPES

POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "PYTHONUNBUFFERED": "1"}


def pytorch_pod(rank: int, nodes: int = 3, nproc: str | None = None, job: str = "bert-x7k2p") -> dict[str, str]:
    """What training-operator release-1.9 (pkg/controller.v1/pytorch/envvar.go) sets in a pod."""
    env = {**POD, "MASTER_ADDR": f"{job}-master-0", "MASTER_PORT": "23456", "PET_MASTER_ADDR": f"{job}-master-0",
           "PET_MASTER_PORT": "23456", "WORLD_SIZE": str(nodes * (int(nproc) if nproc and nproc.isdigit() else 1)),
           "RANK": str(rank), "PET_NODE_RANK": str(rank), "PET_NNODES": str(nodes)}
    if nproc:
        env["PET_NPROC_PER_NODE"] = nproc
    return env


def tf_pod(task: str, index: int) -> dict[str, str]:
    """A TFJob pod's TF_CONFIG (pkg/controller.v1/tensorflow: lowercase types, environment cloud)."""
    svc = "mnist-{}-{}.default.svc:2222"
    spec = {"cluster": {"chief": [svc.format("chief", 0)], "worker": [svc.format("worker", i) for i in range(2)],
                        "ps": [svc.format("ps", 0)], "evaluator": [svc.format("evaluator", 0)]},
            "task": {"type": task, "index": index}, "environment": "cloud"}
    return {**POD, "TF_CONFIG": json.dumps(spec)}


@pytest.mark.parametrize(("rank", "role", "index"), [(0, "primary", 0), (1, "worker", 0), (2, "worker", 1)])
def test_pytorchjob_pods(rank, role, index):
    env = pytorch_pod(rank)
    assert platform.detect(env)
    ctx = context(env, argv=[])
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes) == ("kubernetes", role, index, rank, 3)
    assert (ctx.master_addr, ctx.master_port, ctx.rank, ctx.world_size) == ("bert-x7k2p-master-0", 23456, rank, 3)
    assert ctx.cluster == {"primary": ["bert-x7k2p-master-0:23456"],
                           "worker": ["bert-x7k2p-worker-0:23456", "bert-x7k2p-worker-1:23456"]}


def test_nproc_per_node_makes_the_node_run_that_many_processes():
    ctx = context(pytorch_pod(1, nodes=2, nproc="8"), argv=[])
    assert (ctx.node_rank, ctx.num_nodes, ctx.processes_per_node) == (1, 2, 8)
    plan = plan_launch(ctx, ["train.py", "--lr", "1"], environ=pytorch_pod(1, nodes=2, nproc="8"), python="py")
    assert list(plan.argv) == ["py", "-m", "torch.distributed.run", "--nnodes=2", "--node_rank=1",
                               "--master_addr=bert-x7k2p-master-0", "--master_port=23456", "--nproc_per_node=8",
                               "train.py", "--lr", "1"]


def test_inside_torchrun_the_pod_keeps_its_node_rank():
    # torchrun rewrites RANK and WORLD_SIZE per process and adds its own variables; PET_* stay.
    env = {**pytorch_pod(1, nodes=2, nproc="4"), "RANK": "6", "LOCAL_RANK": "2", "WORLD_SIZE": "8",
           "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1", "TORCHELASTIC_RUN_ID": "none"}
    ctx = context(env, argv=[])
    assert (ctx.platform, ctx.node_rank, ctx.rank, ctx.local_rank, ctx.world_size, ctx.processes_per_node) == (
        "kubernetes", 1, 6, 2, 8, 4)
    assert plan_launch(ctx, ["train.py"], environ=env, python="py").argv == ("py", "train.py")


@pytest.mark.parametrize(("task", "index", "role", "node_rank"), [
    ("chief", 0, "primary", 0), ("worker", 1, "worker", 2), ("ps", 0, "parameter_server", None),
    ("evaluator", 0, "evaluator", None)])
def test_tfjob_pods(task, index, role, node_rank):
    ctx = context(tf_pod(task, index), argv=[])
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes) == ("kubernetes", role, index,
                                                                                  node_rank, 3)
    assert (ctx.master_addr, ctx.master_port) == ("mnist-chief-0.default.svc", 2222)


def test_not_kubernetes_without_a_pod_or_without_the_operators_variables():
    assert not platform.detect({k: v for k, v in pytorch_pod(0).items() if k != "KUBERNETES_SERVICE_HOST"})
    assert not platform.detect(POD)  # a pod, but no training operator
    torchrun_in_a_pod = {**POD, "MASTER_ADDR": "m", "MASTER_PORT": "1", "RANK": "0", "WORLD_SIZE": "2",
                         "TORCHELASTIC_RUN_ID": "x"}
    assert not platform.detect(torchrun_in_a_pod) and context(torchrun_in_a_pod, argv=[]).platform == "torchrun"
    # Clouds that run on Kubernetes keep their own variables first.
    assert context({**tf_pod("chief", 0), "AZUREML_RUN_ID": "r"}, argv=[]).platform == "azure_ml"


@pytest.mark.parametrize(("env", "variable"), [
    ({**pytorch_pod(0), "PET_NNODES": "two"}, "PET_NNODES"),
    ({**pytorch_pod(0), "PET_NNODES": "2", "PET_NODE_RANK": "5"}, "PET_NODE_RANK"),
    ({**pytorch_pod(0), "MASTER_PORT": "99999"}, "MASTER_PORT"),
    ({**POD, "PET_NNODES": "2", "PET_NPROC_PER_NODE": "auto"}, "PET_NODE_RANK"),
    ({**POD, "TF_CONFIG": "{not json"}, "TF_CONFIG"),
])
def test_malformed_variables_are_named(env, variable):
    with pytest.raises(RuntimeEnvError) as caught:
        context(env, argv=[])
    assert caught.value.variable == variable


def test_elastic_node_counts_read_as_their_maximum():
    env = {**pytorch_pod(1), "PET_NNODES": "1:3"}
    assert context(env, argv=[]).num_nodes == 3


def test_the_compiler_takes_the_platforms_tables():
    assert {f.value: k for f, k in FRAMEWORK_KINDS.items()} == dict(platform.KINDS)
    assert {k: {r.singular: t for r, t in v.items()} for k, v in REPLICA_TYPES.items()} == {
        k: dict(v) for k, v in platform.REPLICA_TYPES.items()}


def slots(shape: dict[str, int]) -> list[Slot]:
    placed = []
    for role in ("primary", "worker", "parameter_server", "evaluator"):
        for index in range(shape.get(role, 0)):
            placed.append(Slot(role=role, index=index, address=f"127.0.0.1:{40000 + len(placed)}"))
    return placed


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_emulated_pytorchjob_pods_read_back(workers):
    shape = {"primary": 1, "worker": workers}
    facts = JobFacts(name="demo", framework="pytorch", replicas=shape)
    envs = platform.emulate(facts, slots(shape), platform.follow({"kind": "PyTorchJob", "spec": {}}, facts))
    found = [context(env, argv=[]) for env in envs]
    assert [(c.platform, c.role, c.index, c.node_rank, c.num_nodes) for c in found] == [
        ("kubernetes", s.role, s.index, rank, 1 + workers) for rank, s in enumerate(slots(shape))]
    assert {(c.master_addr, c.master_port) for c in found} == {("127.0.0.1", 40000)}


def test_emulated_nproc_per_node_reaches_the_launcher():
    shape = {"primary": 1, "worker": 1}
    facts = JobFacts(name="demo", framework="pytorch", replicas=shape)
    decided = platform.follow({"kind": "PyTorchJob", "spec": {"nprocPerNode": "4"}}, facts)
    env = platform.emulate(facts, slots(shape), decided)[1]
    assert (env["PET_NPROC_PER_NODE"], env["WORLD_SIZE"], env["RANK"]) == ("4", "8", "1")
    ctx = context(env, argv=[])
    assert "--nproc_per_node=4" in plan_launch(ctx, ["t.py"], environ=env).argv


def test_emulated_tfjob_pods_read_back():
    shape = {"primary": 1, "worker": 2, "parameter_server": 1, "evaluator": 1}
    facts = JobFacts(name="demo", framework="tensorflow", replicas=shape)
    envs = platform.emulate(facts, slots(shape), platform.assume(facts))
    found = [context(env, argv=[]) for env in envs]
    assert [(c.platform, c.role, c.index) for c in found] == [("kubernetes", s.role, s.index) for s in slots(shape)]
    assert json.loads(envs[0]["TF_CONFIG"])["cluster"]["evaluator"] == ["127.0.0.1:40004"]


def test_mpijobs_have_no_place_in_the_emulation():
    assert platform.roles(Decided(details={"kind": "MPIJob"})) == frozenset()
    with pytest.raises(UnsupportedFeatureError, match="kubernetes environment has no place for primary"):
        omnidist.compile(DistributedJob(name="demo", framework="horovod", command="python t.py",
                                        workers=Role(replicas=1)), backend="local", settings={"emulate": "kubernetes"})


def test_omnidist_run_emulates_what_the_compiled_job_gives_its_pods():
    assert "kubernetes" in platforms.emulations()
    job = DistributedJob(name="demo", framework="pytorch", command="python t.py", processes_per_node=2,
                         workers=Role(replicas=2))
    replicas = omnidist.compile(job, backend="local", settings={"emulate": "kubernetes"}).request["replicas"]
    found = [context(r["env"], argv=[]) for r in replicas]
    assert [(c.platform, c.role, c.node_rank, c.processes_per_node, c.job_name) for c in found] == [
        ("kubernetes", "primary", 0, 2, "demo"), ("kubernetes", "worker", 1, 2, "demo"),
        ("kubernetes", "worker", 2, 2, "demo")]
    assert not [r for r in replicas if "OMNIDIST_ROLE" in r["env"]]  # the pods' own variables say it
    assert {r["env"]["PET_NPROC_PER_NODE"] for r in replicas} == {"2"}  # nprocPerNode, as compiled


def test_omnidist_run_with_the_kubernetes_environment(tmp_path):
    """A real local run: three replicas read their context from the emulated PyTorchJob pods."""
    script = tmp_path / "show.py"
    script.write_text("import omnidist.runtime as r\nc = r.context()\n"
                      "print(c.platform, c.role, c.node_rank, c.num_nodes, c.master_addr)\n")
    job = tmp_path / "job.yaml"
    job.write_text(f"name: show\nframework: pytorch\ncommand: [{sys.executable}, {script}]\nprimary: {{}}\n"
                   "workers: {replicas: 2}\n")
    from omnidist.testing.cli import run_cli

    done = run_cli("run", str(job), "--emulate", "kubernetes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = sorted(line for line in done.stdout.splitlines() if "kubernetes" in line)
    assert lines == ["[primary-0] kubernetes primary 0 3 127.0.0.1", "[worker-0] kubernetes worker 1 3 127.0.0.1",
                     "[worker-1] kubernetes worker 2 3 127.0.0.1"]
