"""Legacy AI Platform's contract (omnidist/runtime/platforms/ai_platform.py): slots and task
types, reading the documented CLUSTER_SPEC, and emulate <-> parse."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnidist.runtime import RuntimeEnvError
from omnidist.runtime.platforms import Decided, ai_platform

from .cluster import job, round_trip, shapes, slots

# PLATFORMS.md: CLUSTER_SPEC and TF_CONFIG (the same object) use master (or chief), worker, ps.
DOCUMENTED = {
    "cluster": {
        "master": ["master-0:2222"],
        "worker": ["worker-0:2222", "worker-1:2222"],
        "ps": ["ps-0:2222"],
        "evaluator": ["evaluator-0:2222"],
    },
    "environment": "cloud",
    "task": {"type": "worker", "index": 1, "trial": ""},
    "job": {"scale_tier": "CUSTOM"},
}


def test_each_training_input_slot_and_its_task_type():
    assert ai_platform.FIELD_PREFIXES == {"evaluator": "evaluator", "parameter_server": "parameterServer",
                                          "primary": "master", "reduction_server": "parameterServer",
                                          "worker": "worker"}
    assert ai_platform.TASK_TYPES == {"evaluator": "evaluator", "parameter_server": "ps", "primary": "master",
                                      "reduction_server": "ps", "worker": "worker"}
    assert ai_platform.CHIEF == "chief"


@pytest.mark.parametrize(("task", "role", "index", "node_rank"), [
    ({"type": "master", "index": 0}, "primary", 0, 0),
    ({"type": "worker", "index": 1}, "worker", 1, 2),
    ({"type": "ps", "index": 0}, "parameter_server", 0, None),
    ({"type": "evaluator", "index": 0}, "evaluator", 0, None),
])
def test_parse_the_documented_cluster_spec(task, role, index, node_rank):
    spec = json.dumps({**DOCUMENTED, "task": task})
    read = {"CLUSTER_SPEC": spec, "TF_CONFIG": spec}
    assert ai_platform.detect(read)
    ctx = ai_platform.parse(read)
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes, ctx.master_addr) == (
        "ai_platform", role, index, node_rank, 3, "master-0")
    assert ctx.cluster["primary"] == ["master-0:2222"] and ctx.cluster["parameter_server"] == ["ps-0:2222"]


def test_a_cluster_spec_of_neither_google_platform_is_an_error():
    assert not ai_platform.detect({"TF_CONFIG": json.dumps(DOCUMENTED)})
    with pytest.raises(RuntimeEnvError, match="neither workerpool0"):
        ai_platform.detect({"CLUSTER_SPEC": json.dumps({"cluster": {"worker": ["w:1"]}})})


@pytest.mark.parametrize("argv", [["--job-dir", "gs://b/j"], ["--lr=1", "--job-dir=gs://b/j"], ["--job_dir", "gs://b/j"]])
def test_model_dir_is_the_job_dir_argument(argv):
    assert ai_platform.model_dir({}, ["task.py", *argv]) == "gs://b/j"
    assert ai_platform.model_dir({}, ["task.py", "--job-dir"]) is None


@pytest.mark.parametrize(("use_chief", "primary"), [(False, "master"), (True, "chief")])
def test_emulate_names_the_primary_as_the_request_says(use_chief, primary):
    shape = {"primary": 1, "worker": 2, "reduction_server": 2}
    envs = ai_platform.emulate(job(shape), slots(shape), Decided(reducers=2, details={"use_chief": use_chief,
                                                                                      "job": {"workerCount": "2"}}))
    assert len(envs) == 3
    spec = json.loads(envs[0]["CLUSTER_SPEC"])
    assert spec == json.loads(envs[0]["TF_CONFIG"])
    assert spec["cluster"] == {primary: ["127.0.0.1:40000"], "worker": ["127.0.0.1:40001", "127.0.0.1:40002"],
                               "ps": ["127.0.0.1:40003", "127.0.0.1:40004"]}  # reducers take the ps slot
    assert spec["task"] == {"type": primary, "index": 0} and spec["job"] == {"workerCount": "2"}


def test_follow_and_assume():
    request = {"trainingInput": {"parameterServerCount": "3", "useChiefInTfConfig": True}}
    decided = ai_platform.follow(request, job({"primary": 1, "reduction_server": 0}))
    assert (decided.reducers, decided.details["use_chief"]) == (3, True)
    assert ai_platform.follow(request, job({"primary": 1, "parameter_server": 3})).reducers == 0
    plain = ai_platform.follow({"trainingInput": {}}, job({"primary": 1}, use_chief_in_tf_config=True))
    assert plain.details["use_chief"] is True  # the local backend's setting adds to compile's
    assert ai_platform.assume(job({"primary": 1, "reduction_server": 2})).reducers == 2
    assert ai_platform.assume(job({"primary": 1})).details["use_chief"] is False


@settings(max_examples=60, deadline=None, derandomize=True)
@given(shape=shapes(), use_chief=st.booleans())
def test_emulate_parse_round_trip(shape, use_chief):
    round_trip(ai_platform, shape, Decided(reducers=shape.get("reduction_server", 0), details={"use_chief": use_chief}))


def test_compile_then_emulate_reads_back_each_slot():
    pytest.importorskip("omnidist_ai_platform")
    import omnidist
    from omnidist.model.job import DistributedJob
    from omnidist.model.roles import Role

    portable = DistributedJob(name="demo", framework="tensorflow", image="gcr.io/p/t:1", command="python t.py",
                              workers=Role(replicas=2), parameter_servers=Role(replicas=1),
                              evaluators=Role(replicas=1))
    request = omnidist.compile(portable, backend="ai_platform").request
    training = request["trainingInput"]
    shape = {"primary": 1, "worker": 2, "parameter_server": 1, "evaluator": 1}
    decided = ai_platform.follow(request, job(shape, framework="tensorflow"))
    assert decided.details["use_chief"] is True  # compile sets useChiefInTfConfig for TensorFlow
    found = round_trip(ai_platform, shape, decided)
    counts = {role: int(training[f"{ai_platform.FIELD_PREFIXES[role]}Count"])
              for role in ("worker", "parameter_server", "evaluator")}
    assert counts == {"worker": 2, "parameter_server": 1, "evaluator": 1}
    assert sorted({c.role for c in found}) == sorted(shape)
    assert {r: len(found[0].cluster[r]) for r in ("worker", "parameter_server")} == {"worker": 2, "parameter_server": 1}
