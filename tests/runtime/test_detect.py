"""Platform detection from each platform's documented variables (PLATFORMS.md and the seeds)."""

from __future__ import annotations

import json
import pickle

import pytest

import omnidist.errors
from omnidist.runtime import RuntimeEnvError, context, platforms

# The Vertex AI documentation's CLUSTER_SPEC example (seeds/000), with its placeholder trial.
VERTEX_CLUSTER = {
    "workerpool0": ["cmle-training-workerpool0-ab-0:2222"],
    "workerpool1": ["cmle-training-workerpool1-ab-0:2222", "cmle-training-workerpool1-ab-1:2222"],
    "workerpool2": ["cmle-training-workerpool2-ab-0:2222", "cmle-training-workerpool2-ab-1:2222"],
    "workerpool3": ["cmle-training-workerpool3-ab-0:2222", "cmle-training-workerpool3-ab-1:2222",
                    "cmle-training-workerpool3-ab-2:2222"],
}


def vertex_env(pool: str, index: int, **extra: str) -> dict[str, str]:
    spec = {"cluster": VERTEX_CLUSTER, "environment": "cloud",
            "task": {"type": pool, "index": index, "trial": "TRIAL_ID"}, "job": {}}
    return {"CLUSTER_SPEC": json.dumps(spec), **extra}


# The Vertex TF_CONFIG example (seeds/000): hyperparameter tuning, chief + 2 workers + 1 ps.
VERTEX_TF_CONFIG = {
    "cluster": {"chief": ["training-workerpool0-abc-0:2222"], "ps": ["training-workerpool2-abc-0:2222"],
                "worker": ["training-workerpool1-abc-0:2222", "training-workerpool1-abc-1:2222"]},
    "environment": "cloud", "job": {},
    "task": {"cloud": "xyz", "index": 0, "trial": "1", "type": "worker"},
}

# The Azure ML TensorFlow example (seeds/003), plus the empty ps Azure writes.
AZURE_TF_CONFIG = {"cluster": {"worker": ["host0:2222", "host1:2222"], "ps": []},
                   "task": {"type": "worker", "index": 0}, "environment": "cloud"}

SPEC_KEYS = ("platform", "role", "index", "node_rank", "num_nodes", "rank", "world_size", "local_rank",
             "master_addr", "master_port", "trial", "cluster")


def fields(ctx) -> dict:
    return {k: getattr(ctx, k) for k in SPEC_KEYS}


VERTEX_ROLES_CLUSTER = {
    "primary": VERTEX_CLUSTER["workerpool0"], "worker": VERTEX_CLUSTER["workerpool1"],
    "parameter_server": VERTEX_CLUSTER["workerpool2"], "evaluator": VERTEX_CLUSTER["workerpool3"],
}


def test_vertex_primary_every_field():
    assert fields(context(vertex_env("workerpool0", 0))) == {
        "platform": "vertex", "role": "primary", "index": 0, "node_rank": 0, "num_nodes": 3, "rank": 0,
        "world_size": 3, "local_rank": 0, "master_addr": "cmle-training-workerpool0-ab-0", "master_port": 2222,
        "trial": "TRIAL_ID", "cluster": VERTEX_ROLES_CLUSTER,
    }


def test_vertex_second_worker():
    ctx = context(vertex_env("workerpool1", 1))
    assert (ctx.role, ctx.index, ctx.node_rank, ctx.rank, ctx.world_size, ctx.num_nodes) == ("worker", 1, 2, 2, 3, 3)
    assert ctx.master_addr == "cmle-training-workerpool0-ab-0" and ctx.source == "CLUSTER_SPEC"


def test_vertex_pool2_is_parameter_servers_without_a_hint():
    ctx = context(vertex_env("workerpool2", 1))
    assert (ctx.role, ctx.index, ctx.node_rank, ctx.rank, ctx.local_rank) == ("parameter_server", 1, None, None, None)
    assert ctx.num_nodes == 3 and ctx.world_size == 3


def test_vertex_pool2_role_comes_from_the_hint():
    ctx = context(vertex_env("workerpool2", 0, OMNIDIST_POOL2_ROLE="reduction_server"))
    assert ctx.role == "reduction_server" and ctx.node_rank is None
    assert ctx.cluster["reduction_server"] == VERTEX_CLUSTER["workerpool2"]
    assert "parameter_server" not in ctx.cluster


def test_vertex_evaluator():
    ctx = context(vertex_env("workerpool3", 2))
    assert (ctx.role, ctx.index, ctx.node_rank, ctx.trial) == ("evaluator", 2, None, "TRIAL_ID")


def test_vertex_primary_only_job_has_no_trial():
    spec = {"cluster": {"workerpool0": ["h:2222"]}, "environment": "cloud", "task": {"type": "workerpool0", "index": 0}}
    ctx = context({"CLUSTER_SPEC": json.dumps(spec)})
    assert (ctx.num_nodes, ctx.world_size, ctx.trial, ctx.cluster) == (1, 1, None, {"primary": ["h:2222"]})


def test_vertex_tf_config_alone():
    assert fields(context({"TF_CONFIG": json.dumps(VERTEX_TF_CONFIG)})) == {
        "platform": "vertex", "role": "worker", "index": 0, "node_rank": 1, "num_nodes": 3, "rank": 1,
        "world_size": 3, "local_rank": 0, "master_addr": "training-workerpool0-abc-0", "master_port": 2222,
        "trial": "1", "cluster": {"primary": ["training-workerpool0-abc-0:2222"],
                                  "parameter_server": ["training-workerpool2-abc-0:2222"],
                                  "worker": ["training-workerpool1-abc-0:2222", "training-workerpool1-abc-1:2222"]},
    }


AI_PLATFORM_CLUSTER = {"master": ["master-0:2222"], "worker": ["worker-0:2222", "worker-1:2222"], "ps": ["ps-0:2222"]}


@pytest.mark.parametrize("primary_key", ["master", "chief"])
def test_ai_platform_cluster_spec(primary_key):
    cluster = {primary_key if k == "master" else k: v for k, v in AI_PLATFORM_CLUSTER.items()}
    spec = {"cluster": cluster, "task": {"type": "worker", "index": 1, "trial": ""}, "job": {"scale_tier": "CUSTOM"},
            "environment": "cloud"}
    assert fields(context({"CLUSTER_SPEC": json.dumps(spec), "TF_CONFIG": json.dumps(spec)})) == {
        "platform": "ai_platform", "role": "worker", "index": 1, "node_rank": 2, "num_nodes": 3, "rank": 2,
        "world_size": 3, "local_rank": 0, "master_addr": "master-0", "master_port": 2222, "trial": None,
        "cluster": {"primary": ["master-0:2222"], "worker": ["worker-0:2222", "worker-1:2222"],
                    "parameter_server": ["ps-0:2222"]},
    }


def test_ai_platform_master_and_ps():
    spec = {"cluster": AI_PLATFORM_CLUSTER, "task": {"type": "master", "index": 0}}
    assert context({"CLUSTER_SPEC": json.dumps(spec)}).role == "primary"
    spec["task"] = {"type": "ps", "index": 0}
    ctx = context({"CLUSTER_SPEC": json.dumps(spec)})
    assert (ctx.role, ctx.node_rank, ctx.rank) == ("parameter_server", None, None)


def test_bare_tf_config_with_master_is_ai_platform():
    spec = {"cluster": AI_PLATFORM_CLUSTER, "task": {"type": "master", "index": 0}}
    assert context({"TF_CONFIG": json.dumps(spec)}).platform == "ai_platform"


def test_hand_written_tf_config_worker_zero_is_primary():
    spec = {"cluster": {"worker": ["a:1", "b:2", "c:3"]}, "task": {"type": "worker", "index": 2}}
    ctx = context({"TF_CONFIG": json.dumps(spec)})
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes) == ("local", "worker", 1, 2, 3)
    assert ctx.cluster == {"primary": ["a:1"], "worker": ["b:2", "c:3"]}


def test_azure_tensorflow_worker_zero_is_primary_and_empty_ps_is_fine():
    env = {"AZUREML_RUN_ID": "run_1", "TF_CONFIG": json.dumps(AZURE_TF_CONFIG)}
    assert fields(context(env)) == {
        "platform": "azure_ml", "role": "primary", "index": 0, "node_rank": 0, "num_nodes": 2, "rank": 0,
        "world_size": 2, "local_rank": 0, "master_addr": "host0", "master_port": 2222, "trial": None,
        "cluster": {"primary": ["host0:2222"], "worker": ["host1:2222"]},
    }
    env["TF_CONFIG"] = json.dumps({**AZURE_TF_CONFIG, "task": {"type": "worker", "index": 1}})
    ctx = context(env)
    assert (ctx.role, ctx.index, ctx.node_rank, ctx.rank) == ("worker", 0, 1, 1)


AZURE_PYTORCH = {  # node 1 of 2, 8 processes per node (Azure sets RANK/LOCAL_RANK per process)
    "AZUREML_RUN_ID": "cassava_1700000000_abcd", "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105",
    "WORLD_SIZE": "16", "NODE_RANK": "1", "RANK": "11", "LOCAL_RANK": "3",
}


def test_azure_pytorch_every_field_with_the_host_list():
    env = {**AZURE_PYTORCH, "AZ_BATCH_HOST_LIST": "10.0.0.4,10.0.0.5"}
    assert fields(context(env)) == {
        "platform": "azure_ml", "role": "worker", "index": 0, "node_rank": 1, "num_nodes": 2, "rank": 11,
        "world_size": 16, "local_rank": 3, "master_addr": "10.0.0.4", "master_port": 6105, "trial": None,
        "cluster": {"primary": ["10.0.0.4:6105"], "worker": ["10.0.0.5:6105"]},
    }


@pytest.mark.parametrize("extra", [{"OMNIDIST_PROCESSES_PER_NODE": "8"}, {"AZUREML_NODE_COUNT": "2"},
                                   {"LOCAL_WORLD_SIZE": "8"}])
def test_azure_pytorch_node_count_sources(extra):
    ctx = context({**AZURE_PYTORCH, **extra})
    assert (ctx.num_nodes, ctx.node_rank, ctx.cluster) == (2, 1, {"primary": ["10.0.0.4:6105"]})


def test_azure_without_distribution_is_one_node():
    ctx = context({"AZUREML_RUN_ID": "r", "AZUREML_ARM_SUBSCRIPTION": "s"})
    assert (ctx.platform, ctx.role, ctx.num_nodes, ctx.world_size, ctx.rank) == ("azure_ml", "primary", 1, 1, 0)


AZURE_MPI = {  # global rank 5 of 8, 4 per node -> node 1
    "AZUREML_RUN_ID": "r", "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "OMPI_COMM_WORLD_NODE_RANK": "0",
    "AZ_BATCH_MASTER_NODE": "10.0.0.4:6105", "AZ_BATCHAI_MPI_MASTER_NODE": "10.0.0.4",
}


def test_azure_mpi_every_field():
    assert fields(context(AZURE_MPI)) == {
        "platform": "azure_ml", "role": "worker", "index": 0, "node_rank": 1, "num_nodes": 2, "rank": 5,
        "world_size": 8, "local_rank": 1, "master_addr": "10.0.0.4", "master_port": 6105, "trial": None,
        "cluster": {"primary": ["10.0.0.4:6105"]},
    }
    assert context(AZURE_MPI).processes_per_node == 4


def test_azure_mpi_master_from_batchai_variable():
    env = {k: v for k, v in AZURE_MPI.items() if k != "AZ_BATCH_MASTER_NODE"}
    ctx = context({**env, "OMPI_COMM_WORLD_RANK": "2"})
    assert (ctx.master_addr, ctx.master_port, ctx.node_rank, ctx.role) == ("10.0.0.4", 6105, 0, "primary")


def test_torchrun():
    env = {"TORCHELASTIC_RUN_ID": "none", "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4",
           "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"}
    assert fields(context(env)) == {
        "platform": "torchrun", "role": "worker", "index": 0, "node_rank": 1, "num_nodes": 2, "rank": 3,
        "world_size": 4, "local_rank": 1, "master_addr": "node0", "master_port": 29500, "trial": None,
        "cluster": {"primary": ["node0:29500"]},
    }
    assert context(env).processes_per_node == 2


def test_torchrun_inside_vertex_is_vertex_with_process_ranks():
    env = vertex_env("workerpool1", 0, TORCHELASTIC_RUN_ID="x", RANK="5", LOCAL_RANK="1", WORLD_SIZE="12",
                     LOCAL_WORLD_SIZE="4", MASTER_ADDR="cmle-training-workerpool0-ab-0", MASTER_PORT="2222")
    ctx = context(env)
    assert (ctx.platform, ctx.node_rank, ctx.rank, ctx.world_size, ctx.local_rank, ctx.processes_per_node) == (
        "vertex", 1, 5, 12, 1, 4)


def test_none():
    assert fields(context({})) == {
        "platform": "none", "role": "primary", "index": 0, "node_rank": 0, "num_nodes": 1, "rank": 0,
        "world_size": 1, "local_rank": 0, "master_addr": "127.0.0.1", "master_port": 29500, "trial": None,
        "cluster": {},
    }


def test_hints_fill_name_framework_and_processes():
    ctx = context(vertex_env("workerpool0", 0, OMNIDIST_JOB_NAME="cassava", OMNIDIST_FRAMEWORK="pytorch",
                             OMNIDIST_PROCESSES_PER_NODE="8", OMNIDIST_ROLE="primary"))
    assert (ctx.job_name, ctx.framework, ctx.processes_per_node, ctx.role) == ("cassava", "pytorch", 8, "primary")


def test_detection_order_is_the_documented_one():
    documented = ["vertex", "ai_platform", "azure_ml", "kubernetes", "tf_config", "mpi", "torchrun", "none"]
    names = [m.NAME for m in platforms.modules()]
    assert [n for n in names if n in documented] == documented  # other platforms sit anywhere between them
    both = {**vertex_env("workerpool0", 0), **AZURE_PYTORCH}
    assert context(both).platform == "vertex"
    assert context({**AZURE_PYTORCH, "TORCHELASTIC_RUN_ID": "x"}).platform == "azure_ml"
    tf = {"TF_CONFIG": json.dumps(VERTEX_TF_CONFIG), "TORCHELASTIC_RUN_ID": "x", "RANK": "0", "WORLD_SIZE": "1",
          "MASTER_ADDR": "a", "MASTER_PORT": "1"}
    assert context(tf).platform == "vertex"


# --- malformed and missing ---------------------------------------------------------------------

def spec_env(cluster, task=None, name="CLUSTER_SPEC"):
    return {name: json.dumps({"cluster": cluster, "task": task or {"type": "workerpool0", "index": 0}})}


MALFORMED = [
    ({"CLUSTER_SPEC": "{not json"}, "CLUSTER_SPEC", "not valid JSON"),
    ({"CLUSTER_SPEC": "[1, 2]"}, "CLUSTER_SPEC", "expected a JSON object"),
    ({"CLUSTER_SPEC": json.dumps({"task": {}})}, "CLUSTER_SPEC", "no 'cluster'"),
    (spec_env({"workerpool0": "h:1"}), "CLUSTER_SPEC", "cluster.workerpool0"),
    (spec_env({"workerpool0": ["no-port"]}), "CLUSTER_SPEC", "expected 'host:port'"),
    (spec_env({"workerpool0": ["h:http"]}), "CLUSTER_SPEC", "not a port number"),
    (spec_env({"workerpool0": ["h:1"], "workerpool7": ["h:2"]}), "CLUSTER_SPEC", "workerpool7"),
    (spec_env({"workerpool0": ["h:1"]}, {"type": "workerpool9", "index": 0}), "CLUSTER_SPEC", "task.type"),
    (spec_env({"workerpool0": ["h:1"]}, {"type": ["workerpool0"], "index": 0}), "CLUSTER_SPEC", "task.type"),
    (spec_env({"master": ["h:1"]}, {"type": {"a": 1}, "index": 0}), "CLUSTER_SPEC", "task.type"),
    (spec_env({"worker": ["h:1"]}, {"type": ["worker"], "index": 0}, name="TF_CONFIG"), "TF_CONFIG", "task.type"),
    (spec_env({"workerpool0": ["h:1"]}, {"type": "workerpool0", "index": 0, "trial": {}}), "CLUSTER_SPEC",
     "task.trial"),
    ({"TF_CONFIG": json.dumps({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}, "environment": 1})},
     "TF_CONFIG", "environment"),
    ({"TF_CONFIG": "[" * 100_000}, "TF_CONFIG", "nested too deeply"),
    (spec_env({"workerpool0": ["h:1"]}, {"type": "workerpool0", "index": -1}), "CLUSTER_SPEC", "task.index"),
    (spec_env({"workerpool0": ["h:1"]}, {"type": "workerpool0", "index": True}), "CLUSTER_SPEC", "task.index"),
    (spec_env({"workerpool0": ["h:1"]}, {"type": "workerpool1", "index": 0}), "CLUSTER_SPEC", "task.index 0"),
    ({"CLUSTER_SPEC": json.dumps({"cluster": {"worker": ["h:1"]}, "task": {}})}, "CLUSTER_SPEC", "neither"),
    (spec_env({"workerpool1": ["h:1"]}, {"type": "workerpool1", "index": 0}), "CLUSTER_SPEC", "no primary"),
    ({"TF_CONFIG": json.dumps({"cluster": {"chief": ["h:1"], "boss": ["h:2"]}, "task": {"type": "chief"}})},
     "TF_CONFIG", "cluster.boss"),
    ({**AZURE_MPI, "OMPI_COMM_WORLD_RANK": "five"}, "OMPI_COMM_WORLD_RANK", "whole number"),
    ({**AZURE_MPI, "OMPI_COMM_WORLD_RANK": "9"}, "OMPI_COMM_WORLD_RANK", "not below"),
    ({**AZURE_MPI, "OMPI_COMM_WORLD_LOCAL_SIZE": "0"}, "OMPI_COMM_WORLD_LOCAL_SIZE", ">= 1"),
    ({k: v for k, v in AZURE_MPI.items() if k != "OMPI_COMM_WORLD_SIZE"}, "OMPI_COMM_WORLD_SIZE", "not set"),
    ({k: v for k, v in AZURE_MPI.items() if not k.startswith("AZ_BATCH")}, "AZ_BATCH_MASTER_NODE", "not set"),
    ({**AZURE_MPI, "AZ_BATCH_MASTER_NODE": "10.0.0.4"}, "AZ_BATCH_MASTER_NODE", "host:port"),
    ({k: v for k, v in AZURE_PYTORCH.items() if k != "MASTER_ADDR"}, "MASTER_ADDR", "not set"),
    ({**AZURE_PYTORCH, "MASTER_PORT": "x"}, "MASTER_PORT", "whole number"),
    ({**AZURE_PYTORCH, "NODE_RANK": "16"}, "NODE_RANK", "not below"),
    ({**AZURE_PYTORCH, "AZ_BATCH_HOST_LIST": "a:1,b:x"}, "AZ_BATCH_HOST_LIST", "not a port"),
    ({"TORCHELASTIC_RUN_ID": "x", "RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "1"}, "MASTER_ADDR", "not set"),
    ({"TORCHELASTIC_RUN_ID": "x", "RANK": "0", "WORLD_SIZE": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"},
     "WORLD_SIZE", ">= 1"),
    (vertex_env("workerpool0", 0, RANK="zero"), "RANK", "whole number"),
    (vertex_env("workerpool2", 0, OMNIDIST_POOL2_ROLE="reducer"), "OMNIDIST_POOL2_ROLE", "reduction_server"),
    (vertex_env("workerpool1", 0, OMNIDIST_ROLE="boss"), "OMNIDIST_ROLE", "expected one of"),
    (vertex_env("workerpool1", 0, OMNIDIST_ROLE="primary"), "OMNIDIST_ROLE", "says primary"),
    (vertex_env("workerpool0", 0, OMNIDIST_PROCESSES_PER_NODE="0"), "OMNIDIST_PROCESSES_PER_NODE", ">= 1"),
    ({"MASTER_PORT": "port"}, "MASTER_PORT", "whole number"),
]


@pytest.mark.parametrize(("env", "variable", "message"), MALFORMED,
                         ids=[f"{i}-{v}" for i, (_, v, _) in enumerate(MALFORMED)])
def test_malformed_variables_are_named(env, variable, message):
    with pytest.raises(RuntimeEnvError) as info:
        context(env)
    assert info.value.variable == variable
    assert message in str(info.value)
    assert str(info.value).startswith(f"environment variable {variable}: ")


def test_runtime_env_error_is_part_of_the_one_tree():
    assert omnidist.errors.RuntimeEnvError is RuntimeEnvError
    error = RuntimeEnvError("TF_CONFIG", "bad")
    assert isinstance(error, omnidist.errors.OmnidistError) and isinstance(error, ValueError)
    assert error.exit_code == 2
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.variable, str(copy)) == ("TF_CONFIG", str(error))


def test_the_sdks_client_side_cloud_variable_is_not_an_azure_job():
    """azure-ai-ml sets AZUREML_CURRENT_CLOUD in any process that used a sovereign cloud or a
    custom endpoint; a laptop with it exported is not inside an Azure ML job."""
    from omnidist.runtime import context

    assert context({"AZUREML_CURRENT_CLOUD": "AzureChinaCloud"}).platform == "none"
