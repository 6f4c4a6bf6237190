"""Which torch.distributed backend and device a process uses (pure, standard library only).

The rule: ``nccl`` only when every process of the node has a GPU of its own (then the process
uses GPU ``local_rank``); when the processes outnumber the GPUs they see, or the local backend
says its replicas share this machine's GPUs (``OMNIDIST_GPUS_SHARED``), they share them round
robin (process ``local_rank`` on GPU ``local_rank % GPUs``) with ``gloo``, which all-reduces CUDA
tensors; without a GPU, ``gloo`` on the CPU. Two processes on one GPU with nccl fail ("Duplicate
GPU detected"), and a CPU model under nccl fails ("No backend type associated with device type
cpu"), so backend and device are chosen together, here, once.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from omnidist.runtime.errors import RuntimeEnvError


@dataclasses.dataclass(frozen=True)
class TorchPlacement:
    """The backend and device chosen for one process.

    Attributes:
        backend: the ``torch.distributed`` backend (``nccl``, ``gloo``…).
        cuda_device: the CUDA device index the process uses, ``None`` for the CPU.
        reason: one sentence saying why (``init_torch`` does not print it; tests and
            ``omnidist launch`` notes do).
    """

    backend: str
    cuda_device: Optional[int]
    reason: str

    @property
    def device(self) -> str:
        """``cuda:N`` or ``cpu``: what ``torch.device(...)`` takes."""
        return "cpu" if self.cuda_device is None else f"cuda:{self.cuda_device}"


def torch_placement(cuda_devices: int, local_rank: int, local_processes: int,
                    backend: Optional[str] = None, shared: bool = False) -> TorchPlacement:
    """Backend and device for the process ``local_rank`` of ``local_processes`` on its node.

    Args:
        cuda_devices: CUDA devices this process sees (``torch.cuda.device_count()``).
        local_rank: the process's rank on its node.
        local_processes: processes on the node (``LOCAL_WORLD_SIZE``, else the job's
            ``processes_per_node``).
        backend: the backend the caller asked for; ``None`` chooses by the rule above.
        shared: the GPUs this process sees are shared with other ranks (the local backend's
            ``OMNIDIST_GPUS_SHARED``), even if it sees enough of them.

    Raises:
        RuntimeEnvError: ``nccl`` was asked for, but this process has no GPU of its own.
    """
    local_processes = max(local_processes, local_rank + 1)
    own_gpu = 0 < cuda_devices and local_processes <= cuda_devices and not shared
    share = f"{local_processes} process(es) on this node, {cuda_devices} CUDA device(s) visible"
    if backend == "nccl" and not own_gpu:
        why = "they are shared with other ranks" if shared and cuda_devices else f"there are {share}"
        raise RuntimeEnvError("CUDA_VISIBLE_DEVICES", f"nccl needs a GPU per process, and {why}; use gloo "
                              "(init_torch() without backend= chooses it) or fewer processes per node")
    if backend is None:
        backend = "nccl" if own_gpu else "gloo"
    if own_gpu:
        return TorchPlacement(backend, local_rank, f"{share}: {backend} on cuda:{local_rank}")
    if cuda_devices:
        device = local_rank % cuda_devices
        why = "the local backend's replicas share them" if shared else "more processes than GPUs"
        return TorchPlacement(backend, device, f"{share} ({why}): {backend} on cuda:{device}, shared round robin")
    return TorchPlacement(backend, None, f"{share} (no CUDA device): {backend} on the CPU")
