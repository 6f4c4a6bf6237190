"""A bare TF_CONFIG and TensorFlow's task types (omnidist/runtime/platforms/tf_config.py)."""

from __future__ import annotations

import json

import pytest

from omnidist.runtime import RuntimeEnvError
from omnidist.runtime.platforms import tf_config


def test_task_types_and_their_inverse():
    assert tf_config.TASK_TYPES == {"evaluator": "evaluator", "parameter_server": "ps", "primary": "chief",
                                    "worker": "worker"}
    assert tf_config.TASK_ROLES == {"chief": "primary", "evaluator": "evaluator", "master": "primary",
                                    "ps": "parameter_server", "worker": "worker"}


@pytest.mark.parametrize(("spec", "platform"), [
    ({"cluster": {"master": ["m:1"]}, "task": {"type": "master", "index": 0}}, "ai_platform"),
    ({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief", "index": 0}, "environment": "cloud"}, "vertex"),
    ({"cluster": {"master": ["m:1"]}, "task": {"type": "master", "index": 0}, "environment": "cloud"}, "ai_platform"),
    ({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief", "index": 0}}, "local"),
])
def test_the_platform_a_bare_tf_config_belongs_to(spec, platform):
    env = {"TF_CONFIG": json.dumps(spec)}
    assert tf_config.detect(env) and tf_config.parse(env).platform == platform


def test_worker_0_is_the_primary_without_a_chief():
    # PLATFORMS.md: TensorFlow's TF_CONFIG; the evaluator is not in the cluster.
    cluster = {"worker": ["w0:2222", "w1:2222", "w2:2222"], "ps": ["p0:2222"]}
    read = [tf_config.parse({"TF_CONFIG": json.dumps({"cluster": cluster, "task": task})})
            for task in ({"type": "worker", "index": 0}, {"type": "worker", "index": 2}, {"type": "ps", "index": 0},
                         {"type": "evaluator", "index": 0})]
    assert [(c.role, c.index, c.node_rank) for c in read] == [
        ("primary", 0, 0), ("worker", 1, 2), ("parameter_server", 0, None), ("evaluator", 0, None)]
    assert read[0].cluster == {
        "primary": ["w0:2222"],
        "worker": ["w1:2222", "w2:2222"],
        "parameter_server": ["p0:2222"],
    }


def test_ps_holds_reduction_servers_when_the_hint_says_so():
    env = {"TF_CONFIG": json.dumps({"cluster": {"chief": ["c:1"], "ps": ["p:1"]}, "task": {"type": "ps", "index": 0}}),
           "OMNIDIST_POOL2_ROLE": "reduction_server"}
    assert tf_config.parse(env).role == "reduction_server"


def test_an_unknown_task_type_is_named():
    env = {"TF_CONFIG": json.dumps({"cluster": {"chief": ["c:1"], "trainer": ["t:1"]}, "task": {"type": "chief"}})}
    with pytest.raises(RuntimeEnvError, match="cluster.trainer: unknown task type"):
        tf_config.parse(env)
