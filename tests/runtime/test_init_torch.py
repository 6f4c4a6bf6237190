"""init_torch joins a real torch.distributed world (gloo on this CPU-only machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from omnidist.local.environments import inherited

SCRIPT = """
import json, os, warnings
warnings.filterwarnings("ignore")
import torch.distributed as dist
from omnidist.runtime import init_torch
ctx = init_torch()
print(json.dumps({"backend": dist.get_backend(), "world": dist.get_world_size(), "rank": dist.get_rank(),
                  "platform": ctx.platform, "env": {k: os.environ[k] for k in ("MASTER_ADDR", "RANK", "WORLD_SIZE",
                  "LOCAL_RANK")}, "port": os.environ["MASTER_PORT"]}))
dist.destroy_process_group()
"""


def test_single_process_without_platform_uses_gloo_and_a_free_port():
    env = inherited(dict(os.environ))  # no platform variables at all
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["backend"] == "gloo" and (data["world"], data["rank"], data["platform"]) == (1, 0, "none")
    assert data["env"] == {"MASTER_ADDR": "127.0.0.1", "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    assert data["port"] != "29500" and 0 < int(data["port"]) < 65536
