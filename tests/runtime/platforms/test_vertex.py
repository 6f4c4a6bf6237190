"""Vertex AI's contract (omnidist/runtime/platforms/vertex.py): its pool table, reading the
documented CLUSTER_SPEC, and emulate <-> parse."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from omnidist.runtime.platforms import Decided, vertex

from .cluster import job, round_trip, shapes, slots

# PLATFORMS.md: CLUSTER_SPEC on every replica (hosts as Vertex names them).
DOCUMENTED = {
    "cluster": {"workerpool0": ["cmle-training-workerpool0-ab-0:2222"],
                "workerpool1": ["cmle-training-workerpool1-ab-0:2222", "cmle-training-workerpool1-ab-1:2222"],
                "workerpool2": ["cmle-training-workerpool2-ab-0:2222"],
                "workerpool3": ["cmle-training-workerpool3-ab-0:2222"]},
    "environment": "cloud", "task": {"type": "workerpool1", "index": 0, "trial": "1"}, "job": {},
}


def env(task: dict, **extra: str) -> dict[str, str]:
    return {"CLUSTER_SPEC": json.dumps({**DOCUMENTED, "task": task}), **extra}


def test_pool_table_and_its_inverse():
    assert vertex.POOL_INDEX == {"evaluator": 3, "parameter_server": 2, "primary": 0, "reduction_server": 2,
                                 "worker": 1}
    assert vertex.POOL_ROLES == {"workerpool0": ("primary",), "workerpool1": ("worker",),
                                 "workerpool2": ("parameter_server", "reduction_server"),
                                 "workerpool3": ("evaluator",)}


@pytest.mark.parametrize(("pool", "index", "hints", "role", "node_rank"), [
    ("workerpool0", 0, {}, "primary", 0),
    ("workerpool1", 1, {}, "worker", 2),
    ("workerpool2", 0, {}, "parameter_server", None),
    ("workerpool2", 0, {"OMNIDIST_POOL2_ROLE": "reduction_server"}, "reduction_server", None),
    ("workerpool3", 0, {}, "evaluator", None),
])
def test_parse_the_documented_cluster_spec(pool, index, hints, role, node_rank):
    read = env({"type": pool, "index": index, "trial": "1"}, **hints)
    assert vertex.detect(read)
    ctx = vertex.parse(read)
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes, ctx.trial) == (
        "vertex", role, index, node_rank, 3, "1")
    assert (ctx.master_addr, ctx.master_port, ctx.source) == ("cmle-training-workerpool0-ab-0", 2222, "CLUSTER_SPEC")
    assert ctx.cluster[role] == DOCUMENTED["cluster"][pool]


def test_not_vertex_without_worker_pools():
    assert not vertex.detect({})
    assert not vertex.detect({"CLUSTER_SPEC": json.dumps({"cluster": {"master": ["m:1"]}})})
    assert not vertex.detect({"TF_CONFIG": json.dumps(DOCUMENTED)})


def test_model_dir_is_aip_model_dir_through_cloud_storage_fuse():
    assert vertex.model_dir({"AIP_MODEL_DIR": "gs://bkt/out/model/"}, []) == "/gcs/bkt/out/model/"
    assert vertex.model_dir({"AIP_MODEL_DIR": "/mnt/model"}, []) == "/mnt/model"
    assert vertex.model_dir({}, ["--job-dir", "gs://x"]) is None


def test_emulate_writes_cluster_spec_and_tf_config_as_vertex_does():
    shape = {"primary": 1, "worker": 2, "parameter_server": 1, "evaluator": 1}
    envs = vertex.emulate(job(shape), slots(shape), Decided(details={"job": {"workerPoolSpecs": []}}))
    spec = json.loads(envs[4]["CLUSTER_SPEC"])
    assert spec == {
        "cluster": {
            "workerpool0": ["127.0.0.1:40000"],
            "workerpool1": ["127.0.0.1:40001", "127.0.0.1:40002"],
            "workerpool2": ["127.0.0.1:40003"],
            "workerpool3": ["127.0.0.1:40004"],
        },
        "environment": "cloud",
        "task": {"type": "workerpool3", "index": 0},
        "job": {"workerPoolSpecs": []},
    }
    tf = json.loads(envs[4]["TF_CONFIG"])
    assert tf["cluster"] == {"chief": ["127.0.0.1:40000"], "worker": ["127.0.0.1:40001", "127.0.0.1:40002"],
                             "ps": ["127.0.0.1:40003"]}
    assert tf["task"] == {"type": "evaluator", "index": 0}
    (single,) = vertex.emulate(job({"primary": 1}), slots({"primary": 1}), Decided())
    assert "TF_CONFIG" not in single


def test_reducers_are_listed_in_pool_2_but_not_run():
    shape = {"primary": 1, "worker": 1, "reduction_server": 2}
    envs = vertex.emulate(job(shape), slots(shape), Decided(reducers=2))
    assert len(envs) == 2
    assert json.loads(envs[0]["CLUSTER_SPEC"])["cluster"]["workerpool2"] == ["127.0.0.1:40002", "127.0.0.1:40003"]
    assert "ps" not in json.loads(envs[0]["TF_CONFIG"])["cluster"]


def test_follow_reads_the_reducer_pool_and_the_job_spec_from_the_request():
    request = {"jobSpec": {"workerPoolSpecs": [{"replicaCount": "1"}, {"replicaCount": "2"}, {"replicaCount": "5"}]}}
    decided = vertex.follow(request, job({"primary": 1, "worker": 2, "reduction_server": 0}))
    assert (decided.reducers, decided.details["job"]) == (5, request["jobSpec"])
    assert vertex.follow(request, job({"primary": 1, "worker": 2, "parameter_server": 5})).reducers == 0
    assert vertex.assume(job({"primary": 1, "reduction_server": 3})).reducers == 3


@settings(max_examples=60, deadline=None, derandomize=True)
@given(shape=shapes())
def test_emulate_parse_round_trip(shape):
    hints = {"OMNIDIST_POOL2_ROLE": "reduction_server"} if "reduction_server" in shape else {}
    round_trip(vertex, shape, Decided(reducers=shape.get("reduction_server", 0)), hints=hints)


def test_the_compiler_places_each_role_in_the_pool_the_runtime_reads_it_from():
    """Compile a job, follow the request, emulate it, and read each replica back with the hints
    its compiled pool carries: OMNIDIST_ROLE must agree with the pool CLUSTER_SPEC names."""
    pytest.importorskip("omnidist_vertex")
    import omnidist
    from omnidist.model.job import DistributedJob
    from omnidist.model.roles import Role

    portable = DistributedJob(name="demo", framework="pytorch", image="gcr.io/p/t:1", command="python t.py",
                              workers=Role(replicas=2), parameter_servers=Role(replicas=1),
                              evaluators=Role(replicas=1))
    request = omnidist.compile(portable, backend="vertex").request
    pools = request["jobSpec"]["workerPoolSpecs"]

    def pool_env(slot):
        return {e["name"]: e["value"] for e in pools[vertex.POOL_INDEX[slot.role]]["containerSpec"]["env"]}

    shape = {"primary": 1, "worker": 2, "parameter_server": 1, "evaluator": 1}
    found = round_trip(vertex, shape, vertex.follow(request, job(shape)), hints=pool_env)
    assert [(c.role, c.job_name) for c in found] == [("primary", "demo"), ("worker", "demo"), ("worker", "demo"),
                                                     ("parameter_server", "demo"), ("evaluator", "demo")]
    assert [int(pools[vertex.POOL_INDEX[c.role]]["replicaCount"]) for c in found] == [1, 2, 2, 1, 1]
