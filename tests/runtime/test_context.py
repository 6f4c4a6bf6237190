"""RuntimeContext helpers: torch_env, tf_config, to_dict."""

from __future__ import annotations

import json

import pytest

from omnidist.runtime import RuntimeEnvError, context
from omnidist.runtime.view import RuntimeContext

from .test_detect import AZURE_PYTORCH, SPEC_KEYS, VERTEX_TF_CONFIG, vertex_env


def test_to_dict_has_every_spec_key_and_is_json():
    data = context(vertex_env("workerpool1", 0)).to_dict()
    assert list(data)[:len(SPEC_KEYS)] == list(SPEC_KEYS)
    assert json.loads(json.dumps(data)) == data


def test_context_is_frozen():
    with pytest.raises(AttributeError):
        context({}).rank = 3


def test_torch_env_from_vertex():
    assert context(vertex_env("workerpool1", 1)).torch_env() == {
        "MASTER_ADDR": "cmle-training-workerpool0-ab-0", "MASTER_PORT": "2222", "RANK": "2", "WORLD_SIZE": "3",
        "LOCAL_RANK": "0"}


def test_torch_env_keeps_process_level_values():
    env = context(AZURE_PYTORCH).torch_env()
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"]) == ("11", "16", "3")


@pytest.mark.parametrize("pool", ["workerpool2", "workerpool3"])
def test_torch_env_refuses_roles_outside_the_world(pool):
    with pytest.raises(RuntimeEnvError, match="only the primary and the workers"):
        context(vertex_env(pool, 0)).torch_env()


def test_tf_config_from_vertex_cluster_spec():
    assert context(vertex_env("workerpool1", 1)).tf_config() == {
        "cluster": {"chief": ["cmle-training-workerpool0-ab-0:2222"],
                    "worker": ["cmle-training-workerpool1-ab-0:2222", "cmle-training-workerpool1-ab-1:2222"],
                    "ps": ["cmle-training-workerpool2-ab-0:2222", "cmle-training-workerpool2-ab-1:2222"]},
        "task": {"type": "worker", "index": 1, "trial": "TRIAL_ID"},
    }


def test_tf_config_round_trips_through_detection():
    ctx = context({"TF_CONFIG": json.dumps(VERTEX_TF_CONFIG)})
    again = context({"TF_CONFIG": json.dumps({**ctx.tf_config(), "environment": "cloud"})})
    assert (again.role, again.index, again.node_rank, again.cluster) == (
        ctx.role,
        ctx.index,
        ctx.node_rank,
        ctx.cluster,
    )


def test_tf_config_for_azure_pytorch_needs_the_host_list():
    with pytest.raises(RuntimeEnvError, match="names 1 of 2"):
        context({**AZURE_PYTORCH, "AZUREML_NODE_COUNT": "2"}).tf_config()
    ctx = context({**AZURE_PYTORCH, "AZ_BATCH_HOST_LIST": "10.0.0.4,10.0.0.5"})
    assert ctx.tf_config() == {"cluster": {"chief": ["10.0.0.4:6105"], "worker": ["10.0.0.5:6105"]},
                               "task": {"type": "worker", "index": 0}}


def test_tf_config_single_process_and_evaluator():
    assert context({}).tf_config() == {"cluster": {"chief": ["127.0.0.1:29500"]}, "task": {"type": "chief", "index": 0}}
    ev = context(vertex_env("workerpool3", 1)).tf_config()
    assert ev["task"] == {"type": "evaluator", "index": 1, "trial": "TRIAL_ID"} and "evaluator" not in ev["cluster"]


def test_tf_config_refuses_reduction_servers():
    with pytest.raises(RuntimeEnvError, match="no TensorFlow task type"):
        RuntimeContext(platform="vertex", role="reduction_server", node_rank=None, rank=None,
                       cluster={"primary": ["h:1"]}).tf_config()
