"""Backend and device are chosen together, from the CUDA device count (injected here)."""

from __future__ import annotations

import pytest

from omnidist.runtime import RuntimeEnvError
from omnidist.runtime.devices import torch_placement


@pytest.mark.parametrize(("cuda", "local_rank", "processes", "backend", "device"), [
    (0, 0, 1, "gloo", "cpu"),            # a CPU machine
    (1, 0, 1, "nccl", "cuda:0"),         # one process, one GPU
    (8, 3, 8, "nccl", "cuda:3"),         # one GPU per process: pinned to local_rank
    (1, 2, 3, "gloo", "cuda:0"),         # three processes share one GPU, with gloo over CUDA tensors
    (2, 2, 2, "gloo", "cuda:0"),         # local rank 2 of 3 at least: round robin over the two GPUs
    (2, 3, 4, "gloo", "cuda:1"),
    (4, 0, 2, "nccl", "cuda:0"),         # more GPUs than processes is fine
])
def test_nccl_only_when_every_process_has_its_own_gpu(cuda, local_rank, processes, backend, device):
    placement = torch_placement(cuda, local_rank, processes)
    assert (placement.backend, placement.device) == (backend, device)
    assert placement.reason


def test_an_explicit_backend_is_kept_with_the_matching_device():
    assert torch_placement(2, 1, 2, "gloo").device == "cuda:1"  # gloo can all-reduce CUDA tensors
    assert torch_placement(0, 0, 1, "gloo").device == "cpu"
    assert torch_placement(4, 1, 4, "nccl").device == "cuda:1"


@pytest.mark.parametrize(("cuda", "local_rank", "processes", "shared"), [
    (0, 0, 1, False), (1, 0, 2, False), (1, 1, 1, False), (1, 0, 1, True)])
def test_nccl_without_a_gpu_per_process_is_refused(cuda, local_rank, processes, shared):
    with pytest.raises(RuntimeEnvError) as info:
        torch_placement(cuda, local_rank, processes, "nccl", shared=shared)
    assert info.value.variable == "CUDA_VISIBLE_DEVICES" and "gloo" in str(info.value)


def test_replicas_the_local_backend_made_share_a_gpu_use_gloo_on_it():
    """Each replica sees one GPU (CUDA_VISIBLE_DEVICES), but other replicas see the same one."""
    placement = torch_placement(1, 0, 1, shared=True)
    assert (placement.backend, placement.device) == ("gloo", "cuda:0") and "share" in placement.reason
