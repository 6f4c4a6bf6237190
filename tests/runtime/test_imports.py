"""The runtime runs inside other people's containers: standard library only."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
before = set(sys.modules)
import omnidist.runtime
from omnidist.runtime import context, init_tensorflow, init_torch, RuntimeContext
from omnidist.runtime.launch import launch_argv, plan_launch
from omnidist.runtime.devices import torch_placement
ctx = context({"CLUSTER_SPEC": '{"cluster": {"workerpool0": ["h:1"]}, "task": {"type": "workerpool0", "index": 0}}'})
launch_argv(ctx, ["train.py"], environ={})
ctx.tf_config(); ctx.torch_env(); ctx.to_dict(); torch_placement(2, 0, 2)
tf = {"AZUREML_RUN_ID": "r",
      "TF_CONFIG": '{"cluster": {"worker": ["h:1", "h:2"], "ps": []}, "task": {"type": "worker", "index": 0}}'}
init_tensorflow(tf)
plan_launch(context(tf), ["train.py"], environ=tf)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_using_the_runtime_loads_only_the_standard_library():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    outside = [m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "omnidist"]
    assert outside == []
    # the platform modules, whatever they are, are the runtime's own (omnidist.runtime.platforms)
    omnidist_modules = {m for m in loaded if m.startswith("omnidist") and not m.startswith("omnidist.runtime.platforms.")}
    assert omnidist_modules <= {"omnidist", "omnidist.runtime", "omnidist.runtime.context", "omnidist.runtime.detect",
                                "omnidist.runtime.devices", "omnidist.runtime.errors", "omnidist.runtime.hints",
                                "omnidist.runtime.launch", "omnidist.runtime.platforms", "omnidist.runtime.report",
                                "omnidist.runtime.tfconfig"}
    assert "torch" not in loaded  # init_torch imports torch only when called
    assert "tensorflow" not in loaded  # init_tensorflow never does
