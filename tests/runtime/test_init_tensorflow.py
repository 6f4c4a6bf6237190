"""init_tensorflow: a TF_CONFIG TensorFlow accepts, without importing TensorFlow (SPEC §5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from omnidist.local.environments import inherited
from omnidist.runtime import RuntimeEnvError, context, init_tensorflow
from omnidist.runtime.tf_setup import tf_config_fix

AZURE_TF = {"cluster": {"worker": ["host0:2222", "host1:2222"], "ps": []}, "task": {"type": "worker", "index": 1},
            "environment": "cloud"}
"""What Azure ML's TensorFlow distribution writes for a job without parameter servers."""


def test_drops_the_empty_ps_azure_writes_and_keeps_the_rest():
    env = {"AZUREML_RUN_ID": "r", "TF_CONFIG": json.dumps(AZURE_TF)}
    ctx = init_tensorflow(env)
    assert (ctx.platform, ctx.role, ctx.index) == ("azure_ml", "worker", 0)
    assert json.loads(env["TF_CONFIG"]) == {"cluster": {"worker": ["host0:2222", "host1:2222"]},
                                            "task": {"type": "worker", "index": 1}, "environment": "cloud"}
    assert context(env) == ctx  # the fixed variable reads back the same


def test_a_good_tf_config_is_left_alone():
    spec = {"cluster": {"chief": ["a:1"], "worker": ["b:1"], "ps": ["c:1"]}, "task": {"type": "ps", "index": 0},
            "environment": "cloud", "job": {"workerPoolSpecs": []}}
    env = {"CLUSTER_SPEC": json.dumps({**spec, "cluster": {"workerpool0": ["a:1"], "workerpool1": ["b:1"],
                                                            "workerpool2": ["c:1"]},
                                       "task": {"type": "workerpool2", "index": 0}}),
           "TF_CONFIG": json.dumps(spec)}
    before = dict(env)
    init_tensorflow(env)
    assert env == before


def test_writes_one_where_the_platform_sets_none():
    env = {"AZUREML_RUN_ID": "r", "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105", "WORLD_SIZE": "3",
           "NODE_RANK": "2", "RANK": "2", "AZ_BATCH_HOST_LIST": "10.0.0.4,10.0.0.5,10.0.0.6"}
    init_tensorflow(env)
    assert json.loads(env["TF_CONFIG"]) == {
        "cluster": {"chief": ["10.0.0.4:6105"], "worker": ["10.0.0.5:6105", "10.0.0.6:6105"]},
        "task": {"type": "worker", "index": 1}}


@pytest.mark.parametrize("env", [{}, {"CLUSTER_SPEC": json.dumps(
    {"cluster": {"workerpool0": ["a:1"]}, "task": {"type": "workerpool0", "index": 0}})}])
def test_a_single_process_needs_none(env):
    before = dict(env)
    init_tensorflow(env)
    assert env == before


@pytest.mark.parametrize(("env", "variable", "message"), [
    ({"AZUREML_RUN_ID": "r", "TF_CONFIG": "{oops"}, "TF_CONFIG", "not valid JSON"),
    ({"CLUSTER_SPEC": json.dumps({"cluster": {"workerpool0": ["a:1"], "workerpool1": ["b:1"]},
                                  "task": {"type": "workerpool0", "index": 0}}),
      "TF_CONFIG": json.dumps({"cluster": {"chief": "a:1"}, "task": {"type": "chief", "index": 0}})},
     "TF_CONFIG", "cluster.chief"),
    ({"AZUREML_RUN_ID": "r", "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "6105", "WORLD_SIZE": "2", "NODE_RANK": "1"},
     "MASTER_ADDR", "addresses"),
    ({"TORCHELASTIC_RUN_ID": "x", "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
      "GROUP_RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, "TORCHELASTIC_RUN_ID", "one process per node"),
])
def test_what_cannot_be_fixed_is_a_named_error(env, variable, message):
    with pytest.raises(RuntimeEnvError) as info:
        tf_config_fix(context(env), env)
    assert info.value.variable == variable and message in str(info.value)


def test_fixes_os_environ_by_default_and_imports_no_tensorflow():
    probe = ("import json, os, sys; from omnidist.runtime import init_tensorflow; ctx = init_tensorflow(); "
             "print(json.dumps([ctx.platform, json.loads(os.environ['TF_CONFIG']), 'tensorflow' in sys.modules]))")
    env = {**inherited(dict(os.environ)), "AZUREML_RUN_ID": "r", "TF_CONFIG": json.dumps(AZURE_TF)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    platform, tf_config, imported = json.loads(out.stdout)
    assert (platform, "ps" in tf_config["cluster"], imported) == ("azure_ml", False, False)
