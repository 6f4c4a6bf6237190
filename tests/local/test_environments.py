"""Each emulated platform's variables are the real ones: the runtime reads them back exactly."""

from __future__ import annotations

import json

import pytest

from omnidist.job import DistributedJob, Role, RoleName
from omnidist.local import environments
from omnidist.local.environments import Slot, hint_env, inherited, platform_env
from omnidist.runtime import context


def job(**kw) -> DistributedJob:
    return DistributedJob(name="demo", framework=kw.pop("framework", "pytorch"), command="python t.py",
                          workers=Role(replicas=2), **kw)


def slots_for(job: DistributedJob) -> list[Slot]:
    from omnidist.local import plan

    return plan.slots(job, range(40000, 40100))


def contexts(job: DistributedJob, emulate: str, use_chief: bool = False):
    """Each slot and the context the runtime reads from its platform variables and hints."""
    placed = slots_for(job)
    envs = platform_env(job, emulate, placed, use_chief=use_chief)
    return [(s, context({**hint_env(job, emulate, s.role), **env})) for s, env in zip(placed, envs)]


def test_vertex_every_role():
    demo = job(parameter_servers=Role(replicas=1), evaluators=Role(replicas=1),
               reduction_servers=Role(replicas=2))
    found = contexts(demo, "vertex")
    assert [(s.role, s.index) for s, _ in found] == [
        (RoleName.PRIMARY, 0), (RoleName.WORKERS, 0), (RoleName.WORKERS, 1), (RoleName.PARAMETER_SERVERS, 0),
        (RoleName.EVALUATORS, 0)]  # reduction servers are not run locally
    cluster = {"primary": ["127.0.0.1:40000"], "worker": ["127.0.0.1:40001", "127.0.0.1:40002"],
               "parameter_server": ["127.0.0.1:40003"], "evaluator": ["127.0.0.1:40004"]}
    for slot, ctx in found:
        assert ctx.platform == "vertex" and ctx.role == slot.role.singular and ctx.index == slot.index
        assert (ctx.num_nodes, ctx.master_addr, ctx.master_port, ctx.cluster) == (3, "127.0.0.1", 40000, cluster)
        assert (ctx.job_name, ctx.framework, ctx.processes_per_node) == ("demo", "pytorch", 1)
    assert [ctx.node_rank for _, ctx in found] == [0, 1, 2, None, None]


def test_vertex_tf_config_and_hints():
    placed = slots_for(job(parameter_servers=Role(replicas=1), evaluators=Role(replicas=1)))
    envs = platform_env(job(parameter_servers=Role(replicas=1), evaluators=Role(replicas=1)), "vertex", placed)
    tf = json.loads(envs[4]["TF_CONFIG"])
    assert tf["cluster"] == {"chief": ["127.0.0.1:40000"], "worker": ["127.0.0.1:40001", "127.0.0.1:40002"],
                             "ps": ["127.0.0.1:40003"]}
    assert tf["task"] == {"type": "evaluator", "index": 0} and tf["environment"] == "cloud"
    ps_hints = hint_env(job(parameter_servers=Role(replicas=1)), "vertex", RoleName.PARAMETER_SERVERS)
    assert ps_hints["OMNIDIST_ROLE"] == "parameter_server" and ps_hints["OMNIDIST_POOL2_ROLE"] == "parameter_server"


def test_vertex_single_replica_has_no_tf_config():
    single = DistributedJob(name="one", framework="pytorch", command="python t.py")
    (env,) = platform_env(single, "vertex", slots_for(single))
    assert "TF_CONFIG" not in env and json.loads(env["CLUSTER_SPEC"])["task"] == {"type": "workerpool0", "index": 0}


@pytest.mark.parametrize(("use_chief", "name"), [(False, "master"), (True, "chief")])
def test_ai_platform(use_chief, name):
    demo = job(parameter_servers=Role(replicas=1))
    placed = slots_for(demo)
    envs = platform_env(demo, "ai_platform", placed, use_chief=use_chief)
    spec = json.loads(envs[0]["CLUSTER_SPEC"])
    assert sorted(spec["cluster"]) == sorted([name, "worker", "ps"]) and spec["task"] == {"type": name, "index": 0}
    assert hint_env(demo, "ai_platform", RoleName.PRIMARY) == {}  # the platform has no env field for hints
    found = [context(env) for env in envs]
    assert [(c.platform, c.role, c.node_rank) for c in found] == [
        ("ai_platform", "primary", 0), ("ai_platform", "worker", 1), ("ai_platform", "worker", 2),
        ("ai_platform", "parameter_server", None)]


@pytest.mark.parametrize("framework", ["pytorch", "deepspeed", "custom", "horovod", "tensorflow"])
def test_azure_ml_by_framework(framework):
    found = contexts(job(framework=framework), "azure_ml")
    source = {"pytorch": "MASTER_ADDR", "deepspeed": "MASTER_ADDR", "custom": "MASTER_ADDR",
              "horovod": "OMPI_COMM_WORLD_RANK", "tensorflow": "TF_CONFIG"}[framework]
    for i, (slot, ctx) in enumerate(found):
        assert (ctx.platform, ctx.source, ctx.node_rank, ctx.rank, ctx.num_nodes, ctx.world_size) == (
            "azure_ml", source, i, i, 3, 3)
        assert (ctx.role, ctx.index) == (slot.role.singular, slot.index)
        assert (ctx.master_addr, ctx.master_port) == ("127.0.0.1", 40000)
        assert ctx.cluster == {"primary": ["127.0.0.1:40000"], "worker": ["127.0.0.1:40001", "127.0.0.1:40002"]}
        assert ctx.tf_config()["cluster"]["worker"] == ["127.0.0.1:40001", "127.0.0.1:40002"]


def test_azure_ml_common_variables_and_empty_ps():
    demo = job(framework="tensorflow")
    envs = platform_env(demo, "azure_ml", slots_for(demo))
    assert all(env["AZUREML_RUN_ID"] == "demo_local" for env in envs)
    assert [env["AZUREML_CR_NODE_RANK"] for env in envs] == ["0", "1", "2"]
    assert json.loads(envs[0]["TF_CONFIG"])["cluster"]["ps"] == []
    hints = hint_env(demo, "azure_ml", RoleName.WORKERS)
    assert "OMNIDIST_ROLE" not in hints and hints["OMNIDIST_JOB_NAME"] == "demo"


def test_azure_ml_tensorflow_parameter_servers():
    demo = job(framework="tensorflow", parameter_servers=Role(replicas=1))
    found = contexts(demo, "azure_ml")
    assert [(c.role, c.index, c.node_rank) for _, c in found] == [
        ("primary", 0, 0), ("worker", 0, 1), ("worker", 1, 2), ("parameter_server", 0, None)]


def test_none_sets_nothing():
    assert all(env == {} for env in platform_env(job(), "none", slots_for(job())))
    assert sorted(environments.PLATFORM_ENV) == sorted(environments.EMULATIONS)


def test_inherited_drops_platform_variables():
    env = {"PATH": "/bin", "TF_CONFIG": "{}", "AZUREML_RUN_ID": "x", "OMPI_COMM_WORLD_RANK": "0", "RANK": "1",
           "OMNIDIST_ROLE": "worker", "OMNIDIST_PROFILE": "laptop", "TORCHELASTIC_RUN_ID": "y", "HOME": "/h"}
    assert inherited(env) == {"PATH": "/bin", "OMNIDIST_PROFILE": "laptop", "HOME": "/h"}
