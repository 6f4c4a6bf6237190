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
import tempfile
from omnidist.runtime import checkpoint, latest_checkpoint
saves = {"OMNIDIST_OUTPUT_checkpoints": tempfile.mkdtemp()}
with checkpoint(3, saves) as folder:
    (folder / "state").write_text("x")
assert latest_checkpoint(saves).step == 3
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_using_the_runtime_loads_only_the_standard_library():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    outside = [m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "omnidist"]
    assert outside == []
    # only the runtime's own modules (whatever they are), never the rest of omnidist
    assert {m for m in loaded if m.startswith("omnidist")} <= {"omnidist"} | {
        m for m in loaded if m == "omnidist.runtime" or m.startswith("omnidist.runtime.")}
    assert "torch" not in loaded  # init_torch imports torch only when called
    assert "tensorflow" not in loaded  # init_tensorflow never does
