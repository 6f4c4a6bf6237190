"""Backend and device are chosen together, from the CUDA device count (injected here)."""

from __future__ import annotations

import pytest

from omnidist.runtime import RuntimeEnvError
from omnidist.runtime.devices import torch_placement


@pytest.mark.parametrize(("cuda", "local_rank", "processes", "backend", "device"), [
    (0, 0, 1, "gloo", "cpu"),            # a CPU machine
    (1, 0, 1, "nccl", "cuda:0"),         # one process, one GPU
    (8, 3, 8, "nccl", "cuda:3"),         # one GPU per process: pinned to local_rank
    (1, 0, 3, "gloo", "cpu"),            # three processes would share one GPU
    (2, 2, 2, "gloo", "cpu"),            # local rank 2 has no GPU of its own (3 processes at least)
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


@pytest.mark.parametrize(("cuda", "local_rank", "processes"), [(0, 0, 1), (1, 0, 2), (1, 1, 1)])
def test_nccl_without_a_gpu_per_process_is_refused(cuda, local_rank, processes):
    with pytest.raises(RuntimeEnvError) as info:
        torch_placement(cuda, local_rank, processes, "nccl")
    assert info.value.variable == "CUDA_VISIBLE_DEVICES" and "gloo" in str(info.value)
