"""init_torch joins a real torch.distributed world: gloo on the CPU without a GPU of its own,
nccl on GPU ``local_rank`` with one (those tests skip without an NVIDIA GPU and CUDA torch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from omnidist.local.environments import inherited
from omnidist.local.gpus import visible_gpus

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


DEVICE_SCRIPT = """
import json, os, warnings
warnings.filterwarnings("ignore")
import torch, torch.distributed as dist
from omnidist.runtime import init_torch, torch_device
before = str(torch_device())
ctx = init_torch()
device = torch_device()
value = torch.ones(1, device=device) * (dist.get_rank() + 1)
dist.all_reduce(value)
print(json.dumps({"backend": dist.get_backend(), "device": str(device), "before": before, "sum": value.item(),
                  "visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "cuda": torch.cuda.device_count()}))
dist.destroy_process_group()
"""


def _run(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", DEVICE_SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_without_a_gpu_of_its_own_the_process_uses_gloo_on_the_cpu():
    """CUDA_VISIBLE_DEVICES="" is what `omnidist run` gives replicas when they outnumber the GPUs."""
    data = _run({**inherited(dict(os.environ)), "CUDA_VISIBLE_DEVICES": ""})
    assert (data["backend"], data["device"], data["before"]) == ("gloo", "cpu", "cpu")
    assert (data["sum"], data["cuda"]) == (1.0, 0)


def _cuda_devices() -> int:
    if not visible_gpus():  # no NVIDIA driver: do not pay for importing torch at collection
        return 0
    probe = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return int(out.stdout.strip() or 0) if out.returncode == 0 else 0


needs_cuda = pytest.mark.skipif(_cuda_devices() == 0, reason="needs an NVIDIA GPU and a CUDA build of torch")


@needs_cuda
def test_on_a_gpu_a_single_process_uses_nccl_on_its_gpu():
    data = _run(inherited(dict(os.environ)))
    assert (data["backend"], data["device"], data["sum"]) == ("nccl", "cuda:0", 1.0)


@needs_cuda
def test_on_a_gpu_each_local_rank_is_pinned_to_its_own_gpu(tmp_path):
    """Under torchrun with as many processes as GPUs (at most 2 here), rank r computes on cuda:r."""
    count = min(_cuda_devices(), 2)
    script = tmp_path / "probe.py"
    script.write_text(DEVICE_SCRIPT.replace('print(json.dumps(', 'print("RESULT " + json.dumps('))
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          f"--nproc_per_node={count}", str(script)], capture_output=True, text=True,
                         env=inherited(dict(os.environ)), timeout=300)
    assert out.returncode == 0, out.stderr
    results = [json.loads(line.split("RESULT ", 1)[1]) for line in out.stdout.splitlines() if "RESULT " in line]
    assert sorted(r["device"] for r in results) == [f"cuda:{i}" for i in range(count)]
    assert {(r["backend"], r["sum"]) for r in results} == {("nccl", count * (count + 1) / 2)}
