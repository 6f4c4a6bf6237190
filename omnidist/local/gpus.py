"""GPUs for local replicas: which replica gets which GPU (pure), and which GPUs there are.

Every local replica is a process on this one machine, so without care they would all use GPU
0 (torch's default), and two nccl processes on one GPU fail ("Duplicate GPU detected"). The
local backend therefore gives each replica its own ``CUDA_VISIBLE_DEVICES``:

- a training replica (primary, worker) gets as many GPUs as it runs processes
  (``processes_per_node``, or 1 for each process an emulated platform starts itself);
- other roles (parameter servers, evaluators) get none, so they do not take a training GPU;
- when the training processes outnumber the machine's GPUs, they share them round robin
  (process k on GPU k mod N), and every training replica gets ``OMNIDIST_GPUS_SHARED=1``, so
  ``init_torch`` uses gloo over CUDA tensors (nccl refuses two ranks on one GPU); a note says so;
- on request (``omnidist run --cpu``, the ``cpu`` setting), every replica gets none
  (``CUDA_VISIBLE_DEVICES=""``), runs on the CPU, and ``init_torch`` picks gloo.

A machine without GPUs changes nothing: no variable is set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Optional

import attrs

VARIABLE = "CUDA_VISIBLE_DEVICES"
"""The variable CUDA (and so torch and TensorFlow) reads to know which GPUs a process may use."""

NVIDIA_SMI_TIMEOUT = 10.0
"""Seconds to wait for ``nvidia-smi`` before treating the machine as having no GPU."""


@attrs.frozen
class GpuAssignment:
    """``CUDA_VISIBLE_DEVICES`` per replica (``None``: leave it alone), a note for the user, and
    whether the training replicas share the GPUs (then they get ``OMNIDIST_GPUS_SHARED=1``)."""

    visible: tuple[Optional[str], ...]
    note: Optional[str] = None
    shared: bool = False


def assign_gpus(needs: Sequence[int], gpus: Sequence[str], cpu: bool = False) -> GpuAssignment:
    """Hand out ``gpus`` to replicas that need ``needs[i]`` GPUs each, in order (pure).

    Args:
        needs: GPUs each replica needs (0 for roles that do not train).
        gpus: the GPU ids this machine lets us use (``CUDA_VISIBLE_DEVICES`` entries or indices).
        cpu: run every replica on the CPU, GPUs or not (``omnidist run --cpu``).
    """
    if not gpus:
        return GpuAssignment(visible=tuple(None for _ in needs))
    if cpu:
        return GpuAssignment(visible=tuple("" for _ in needs),
                             note=f"every replica runs on the CPU ({VARIABLE}=\"\"), as asked (--cpu, the cpu "
                                  f"setting), so init_torch picks gloo; this machine's {len(gpus)} GPU(s) stay idle")
    wanted = sum(needs)
    if wanted > len(gpus):
        return _share(needs, gpus)
    visible: list[Optional[str]] = []
    next_gpu = 0
    for need in needs:
        visible.append(",".join(gpus[next_gpu:next_gpu + need]))
        next_gpu += need
    others = sum(1 for n in needs if not n)
    rest = f"; the {others} other replica(s) run on the CPU" if others else ""
    return GpuAssignment(visible=tuple(visible),
                         note=f"{wanted} of this machine's {len(gpus)} GPU(s) go to the training replicas, "
                              f"one per process ({VARIABLE} per replica){rest}")


def _share(needs: Sequence[int], gpus: Sequence[str]) -> GpuAssignment:
    """More training processes than GPUs: process k (counting every training replica's processes
    in order) on GPU k mod N; each replica sees its processes' GPUs, in the order its local ranks
    take them (local rank j on the j-th it sees, mod their number)."""
    visible: list[Optional[str]] = []
    process = 0
    for need in needs:
        mine = [gpus[(process + j) % len(gpus)] for j in range(need)]
        visible.append(",".join(dict.fromkeys(mine)))
        process += need
    trainers = sum(1 for n in needs if n)
    wanted = sum(needs)
    return GpuAssignment(
        visible=tuple(visible), shared=True,
        note=f"{trainers} training replica(s) run {wanted} process(es) and this machine has {len(gpus)} GPU(s): they "
             f"share them round robin ({VARIABLE} per replica), and init_torch uses gloo over CUDA tensors (nccl "
             "refuses two ranks on one GPU); --cpu runs them on the CPU instead")


def visible_gpus(environ: Optional[Mapping[str, str]] = None,
                 run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> list[str]:
    """The GPU ids replicas may use: the user's ``CUDA_VISIBLE_DEVICES`` when set, else the
    GPUs ``nvidia-smi`` lists, else the NVIDIA driver's ``/proc`` entries, else none."""
    env = os.environ if environ is None else environ
    if VARIABLE in env:
        return [g.strip() for g in env[VARIABLE].split(",") if g.strip() and g.strip() != "-1"]
    if shutil.which("nvidia-smi", path=env.get("PATH")):
        try:
            out = run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                      text=True, timeout=NVIDIA_SMI_TIMEOUT, env=dict(env))
        except (OSError, subprocess.SubprocessError):
            out = None
        if out is not None and out.returncode == 0:
            return [line.strip() for line in out.stdout.splitlines() if line.strip()]
    try:
        return [str(i) for i in range(len(os.listdir("/proc/driver/nvidia/gpus")))]
    except OSError:
        return []
