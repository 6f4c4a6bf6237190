"""Each emulated platform's variables are the real ones: the runtime reads them back exactly."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from omnidist.local import environments
from omnidist.local.environments import Slot, hint_env, inherited, platform_env
from omnidist.model.job import DistributedJob
from omnidist.model.roles import Role, RoleName
from omnidist.runtime import context, platforms


def job(**kw) -> DistributedJob:
    return DistributedJob(name="demo", framework=kw.pop("framework", "pytorch"),
                          command=kw.pop("command", "python t.py"), workers=Role(replicas=2), **kw)


def settings(emulate: str = "vertex", **kw) -> SimpleNamespace:
    return SimpleNamespace(**{"emulate": emulate, "workdir": None, "python": None, "use_chief_in_tf_config": False,
                              **kw})


def layout_for(job: DistributedJob, emulate: str = "vertex", **kw):
    from omnidist.local import plan

    return plan.layout(job, settings(emulate, **kw))


def slots_for(job: DistributedJob, emulate: str = "vertex", **kw) -> list[Slot]:
    from omnidist.local import plan

    return plan.slots(layout_for(job, emulate, **kw), range(40000, 40100))


def envs_for(job: DistributedJob, emulate: str, **kw) -> list[dict[str, str]]:
    return platform_env(job, emulate, slots_for(job, emulate, **kw), layout_for(job, emulate, **kw).native)


def contexts(job: DistributedJob, emulate: str, **kw):
    """Each running slot and the context the runtime reads from its platform variables and hints."""
    placed = [s for s in slots_for(job, emulate, **kw) if s.runs]
    envs = envs_for(job, emulate, **kw)
    return [(s, context({**hint_env(job, emulate, s.role), **env})) for s, env in zip(placed, envs)]


def test_vertex_every_role():
    demo = job(parameter_servers=Role(replicas=1), evaluators=Role(replicas=1))
    found = contexts(demo, "vertex")
    assert [(s.role, s.index) for s, _ in found] == [
        (RoleName.PRIMARY, 0), (RoleName.WORKERS, 0), (RoleName.WORKERS, 1), (RoleName.PARAMETER_SERVERS, 0),
        (RoleName.EVALUATORS, 0)]
    cluster = {"primary": ["127.0.0.1:40000"], "worker": ["127.0.0.1:40001", "127.0.0.1:40002"],
               "parameter_server": ["127.0.0.1:40003"], "evaluator": ["127.0.0.1:40004"]}
    for slot, ctx in found:
        assert ctx.platform == "vertex" and ctx.role == slot.role.singular and ctx.index == slot.index
        assert (ctx.num_nodes, ctx.master_addr, ctx.master_port, ctx.cluster) == (3, "127.0.0.1", 40000, cluster)
        assert (ctx.job_name, ctx.framework, ctx.processes_per_node) == ("demo", "pytorch", 1)
    assert [ctx.node_rank for _, ctx in found] == [0, 1, 2, None, None]


GPU_JOB = dict(image="gcr.io/p/t:1", primary=Role(accelerator="V100:8"))


@pytest.mark.parametrize("reducers", [2, "auto"])
def test_vertex_lists_the_reduction_server_pool_compile_sized(reducers):
    """Vertex's CLUSTER_SPEC names every pool, workerpool2's reducers too (as many as compile
    sized for auto); the reducers themselves are not run locally."""
    import omnidist

    demo = job(reduction_servers=Role(replicas=reducers), **GPU_JOB)
    listed = int(omnidist.compile(demo, backend="vertex").request["jobSpec"]["workerPoolSpecs"][2]["replicaCount"])
    assert listed == 2 if reducers == 2 else listed > 2
    placed = slots_for(demo)
    assert [s.runs for s in placed] == [True] * 3 + [False] * listed
    found = contexts(demo, "vertex")
    assert [s.role for s, _ in found] == [RoleName.PRIMARY, RoleName.WORKERS, RoleName.WORKERS]
    spec = json.loads(envs_for(demo, "vertex")[1]["CLUSTER_SPEC"])
    assert spec["cluster"]["workerpool2"] == [f"127.0.0.1:{40003 + i}" for i in range(listed)]
    for _, ctx in found:
        assert len(ctx.cluster["reduction_server"]) == listed and ctx.world_size == 3
    assert "ps" not in json.loads(envs_for(demo, "vertex")[0]["TF_CONFIG"])["cluster"]


def test_vertex_writes_the_compiled_custom_job_spec_as_job():
    import omnidist

    demo = job(parameter_servers=Role(replicas=1), image="gcr.io/p/t:1")
    compiled = omnidist.compile(demo, backend="vertex").request["jobSpec"]
    for env in envs_for(demo, "vertex"):
        assert json.loads(env["CLUSTER_SPEC"])["job"] == compiled
        assert json.loads(env["TF_CONFIG"])["job"] == compiled
    no_image = json.loads(envs_for(job(), "vertex")[0]["CLUSTER_SPEC"])["job"]
    assert no_image["workerPoolSpecs"][1]["replicaCount"] == "2"


def test_vertex_tf_config_and_hints():
    envs = envs_for(job(parameter_servers=Role(replicas=1), evaluators=Role(replicas=1)), "vertex")
    tf = json.loads(envs[4]["TF_CONFIG"])
    assert tf["cluster"] == {"chief": ["127.0.0.1:40000"], "worker": ["127.0.0.1:40001", "127.0.0.1:40002"],
                             "ps": ["127.0.0.1:40003"]}
    assert tf["task"] == {"type": "evaluator", "index": 0} and tf["environment"] == "cloud"
    ps_hints = hint_env(job(parameter_servers=Role(replicas=1)), "vertex", RoleName.PARAMETER_SERVERS)
    assert "OMNIDIST_ROLE" not in ps_hints and "OMNIDIST_POOL2_ROLE" not in ps_hints  # pool 2 reads as servers anyway
    rs_hints = hint_env(job(primary=Role(accelerator="V100:1"), reduction_servers=Role(replicas=1)), "vertex",
                        RoleName.PRIMARY)
    assert rs_hints["OMNIDIST_POOL2_ROLE"] == "reduction_server"


def test_vertex_single_replica_has_no_tf_config():
    single = DistributedJob(name="one", framework="pytorch", command="python t.py")
    (env,) = envs_for(single, "vertex")
    assert "TF_CONFIG" not in env and json.loads(env["CLUSTER_SPEC"])["task"] == {"type": "workerpool0", "index": 0}


@pytest.mark.parametrize(("framework", "use_chief", "name"), [
    ("pytorch", False, "master"), ("pytorch", True, "chief"), ("tensorflow", False, "chief")])
def test_ai_platform(framework, use_chief, name):
    """``chief`` when compile sets useChiefInTfConfig (TensorFlow jobs) or the setting asks."""
    demo = job(framework=framework, parameter_servers=Role(replicas=1))
    envs = envs_for(demo, "ai_platform", use_chief_in_tf_config=use_chief)
    spec = json.loads(envs[0]["CLUSTER_SPEC"])
    assert sorted(spec["cluster"]) == sorted([name, "worker", "ps"]) and spec["task"] == {"type": name, "index": 0}
    assert json.loads(envs[0]["TF_CONFIG"]) == spec
    assert spec["job"]["workerCount"] == 2 and spec["job"]["masterConfig"]["containerCommand"] == ["python", "t.py"]
    assert hint_env(demo, "ai_platform", RoleName.PRIMARY) == {}  # the platform has no env field for hints
    found = [context(env) for env in envs]
    assert [(c.platform, c.role, c.node_rank) for c in found] == [
        ("ai_platform", "primary", 0), ("ai_platform", "worker", 1), ("ai_platform", "worker", 2),
        ("ai_platform", "parameter_server", None)]


def test_ai_platform_reducers_take_the_ps_slot_with_chief():
    demo = job(reduction_servers=Role(replicas=2), **GPU_JOB)
    spec = json.loads(envs_for(demo, "ai_platform")[0]["CLUSTER_SPEC"])
    assert spec["cluster"] == {"chief": ["127.0.0.1:40000"], "worker": ["127.0.0.1:40001", "127.0.0.1:40002"],
                               "ps": ["127.0.0.1:40003", "127.0.0.1:40004"]}


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


@pytest.mark.parametrize(("framework", "source"), [("pytorch", "MASTER_ADDR"), ("horovod", "OMPI_COMM_WORLD_RANK")])
def test_azure_ml_starts_the_processes_azure_starts(framework, source):
    """process_count_per_instance: 2 -> two processes per node, each with its own rank, as Azure does."""
    demo = job(framework=framework, processes_per_node=2)
    placed = slots_for(demo, "azure_ml")
    assert [s.processes for s in placed] == [2, 2, 2]
    envs = envs_for(demo, "azure_ml")
    found = [context({**hint_env(demo, "azure_ml", RoleName.WORKERS), **env}) for env in envs]
    assert [(c.rank, c.local_rank, c.node_rank, c.world_size, c.num_nodes) for c in found] == [
        (r, r % 2, r // 2, 6, 3) for r in range(6)]
    assert {(c.source, c.processes_per_node) for c in found} == {(source, 2)}


def test_azure_ml_launch_command_gets_one_process_per_node():
    demo = job(processes_per_node=2, command=["omnidist", "launch", "--", "t.py"])
    assert [s.processes for s in slots_for(demo, "azure_ml")] == [1, 1, 1]
    assert [json.loads(json.dumps(e))["RANK"] for e in envs_for(demo, "azure_ml")] == ["0", "1", "2"]


def test_azure_ml_common_variables_and_empty_ps():
    demo = job(framework="tensorflow")
    envs = envs_for(demo, "azure_ml")
    assert all(env["AZUREML_RUN_ID"] == "demo_local" for env in envs)
    assert [env["AZUREML_CR_NODE_RANK"] for env in envs] == ["0", "1", "2"]
    assert {env["AZUREML_NODE_COUNT"] for env in envs} == {"3"}
    assert json.loads(envs[0]["TF_CONFIG"])["cluster"]["ps"] == []
    hints = hint_env(demo, "azure_ml", RoleName.WORKERS)
    assert "OMNIDIST_ROLE" not in hints and hints["OMNIDIST_JOB_NAME"] == "demo"


def test_azure_ml_tensorflow_parameter_servers():
    demo = job(framework="tensorflow", parameter_servers=Role(replicas=1))
    found = contexts(demo, "azure_ml")
    assert [(c.role, c.index, c.node_rank) for _, c in found] == [
        ("primary", 0, 0), ("worker", 0, 1), ("worker", 1, 2), ("parameter_server", 0, None)]


def test_none_sets_nothing():
    assert all(env == {} for env in envs_for(job(), "none"))
    found = tuple(sorted(m.NAME for m in platforms.modules() if hasattr(m, "emulate")))
    assert environments.EMULATIONS == found and {"ai_platform", "azure_ml", "none", "vertex"} <= set(found)
    # found in runtime/platforms: a new platform file is emulated with no edit here


def test_inherited_drops_platform_variables():
    env = {"PATH": "/bin", "TF_CONFIG": "{}", "AZUREML_RUN_ID": "x", "OMPI_COMM_WORLD_RANK": "0", "RANK": "1",
           "OMNIDIST_ROLE": "worker", "OMNIDIST_PROFILE": "laptop", "TORCHELASTIC_RUN_ID": "y", "HOME": "/h"}
    assert inherited(env) == {"PATH": "/bin", "OMNIDIST_PROFILE": "laptop", "HOME": "/h"}
