"""init_torch joins a real torch.distributed world: gloo on the CPU without a GPU, nccl on GPU
``local_rank`` with one of its own, gloo on a shared GPU when processes outnumber the GPUs (the
GPU tests skip without an NVIDIA GPU and CUDA torch; the others hold on either kind of machine)."""

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
import torch
ctx = init_torch()
print(json.dumps({"backend": dist.get_backend(), "world": dist.get_world_size(), "rank": dist.get_rank(),
                  "platform": ctx.platform, "env": {k: os.environ[k] for k in ("MASTER_ADDR", "RANK", "WORLD_SIZE",
                  "LOCAL_RANK")}, "port": os.environ["MASTER_PORT"],
                  "cuda": torch.cuda.device_count() if torch.cuda.is_available() else 0}))
dist.destroy_process_group()
"""


def test_single_process_without_platform_uses_a_free_port_and_the_backend_its_device_takes():
    """nccl when this process sees a GPU (it is then its own), gloo on a machine without one."""
    env = inherited(dict(os.environ))  # no platform variables at all
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["backend"] == ("nccl" if data["cuda"] else "gloo")
    assert (data["world"], data["rank"], data["platform"]) == (1, 0, "none")
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


def test_without_a_gpu_the_process_uses_gloo_on_the_cpu():
    """CUDA_VISIBLE_DEVICES="" is what `omnidist run --cpu` gives every replica."""
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


@needs_cuda
def test_on_a_gpu_processes_that_outnumber_the_gpus_share_them_with_gloo(tmp_path):
    """Under torchrun with one process more than GPUs (at most 3 here), ranks share the GPUs round robin."""
    gpus = visible_gpus()[:2]
    count = len(gpus) + 1
    script = tmp_path / "probe.py"
    script.write_text(DEVICE_SCRIPT.replace('print(json.dumps(', 'print("RESULT " + json.dumps('))
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          f"--nproc_per_node={count}", str(script)], capture_output=True, text=True,
                         env={**inherited(dict(os.environ)), "CUDA_VISIBLE_DEVICES": ",".join(gpus)}, timeout=300)
    assert out.returncode == 0, out.stderr
    results = [json.loads(line.split("RESULT ", 1)[1]) for line in out.stdout.splitlines() if "RESULT " in line]
    assert results[0]["cuda"] == len(gpus)
    assert sorted(r["device"] for r in results) == sorted(f"cuda:{i % len(gpus)}" for i in range(count))
    assert {(r["backend"], r["sum"]) for r in results} == {("gloo", count * (count + 1) / 2)}


@needs_cuda
def test_on_a_gpu_replicas_the_local_backend_made_share_it_use_gloo(tmp_path):
    """Two single-process replicas that both see GPU 0, as `omnidist run` gives them (OMNIDIST_GPUS_SHARED=1)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    base = {**inherited(dict(os.environ)), "CUDA_VISIBLE_DEVICES": visible_gpus()[0], "OMNIDIST_GPUS_SHARED": "1",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "shared",
            "LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    runs = [subprocess.Popen([sys.executable, "-c", DEVICE_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**base, "RANK": str(rank), "GROUP_RANK": str(rank)}) for rank in (0, 1)]
    outs = [run.communicate(timeout=300) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in outs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert {(r["backend"], r["device"], r["sum"]) for r in results} == {("gloo", "cuda:0", 3.0)}
