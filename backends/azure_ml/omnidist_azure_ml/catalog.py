"""Azure VM SKUs that Azure ML command jobs run on: GPUs, memory and InfiniBand.

Facts from PLATFORMS.md (Azure section) and the seed page on distributed GPU training. A
SKU with an ``r`` has RDMA, but only the ones marked ``infiniband`` have the SR-IOV
InfiniBand that NCCL needs (``Standard_NC24r``, ``H16r`` and ``H16mr`` have RDMA without it).
"""

from __future__ import annotations

from typing import Optional

import attrs

NC_V3_RETIRED = "the NC v3 series was retired on 2025-09-30"


@attrs.frozen(kw_only=True)
class Sku:
    """One VM size: its GPUs (portable accelerator name, count, memory each), vCPUs, RAM,
    whether it has SR-IOV InfiniBand, and whether Azure still sells it."""

    name: str
    accelerator: Optional[str] = None
    gpus: int = 0
    gpu_memory_gb: int = 0
    vcpus: int
    memory_gb: float
    infiniband: bool = False
    rdma: bool = False
    retired: str = ""
    """Empty while the SKU is sold; else why it is not (shown in notes)."""
    topo_file: str = ""
    """An ``NCCL_TOPO_FILE`` the platform images ship for this SKU (ND A100 v4)."""


_NDV4_TOPO = "/opt/microsoft/ndv4-topo.xml"

SKUS: tuple[Sku, ...] = (
    Sku(name="Standard_D16s_v3", vcpus=16, memory_gb=64),
    Sku(name="Standard_D2s_v3", vcpus=2, memory_gb=8),
    Sku(name="Standard_D32s_v3", vcpus=32, memory_gb=128),
    Sku(name="Standard_D48s_v3", vcpus=48, memory_gb=192),
    Sku(name="Standard_D4s_v3", vcpus=4, memory_gb=16),
    Sku(name="Standard_D64s_v3", vcpus=64, memory_gb=256),
    Sku(name="Standard_D8s_v3", vcpus=8, memory_gb=32),
    Sku(name="Standard_H16mr", vcpus=16, memory_gb=224, rdma=True),
    Sku(name="Standard_H16r", vcpus=16, memory_gb=112, rdma=True),
    Sku(name="Standard_HB120rs_v3", vcpus=120, memory_gb=448, rdma=True, infiniband=True),
    Sku(name="Standard_HC44rs", vcpus=44, memory_gb=352, rdma=True, infiniband=True),
    Sku(name="Standard_NC12s_v3", accelerator="V100", gpus=2, gpu_memory_gb=16, vcpus=12, memory_gb=224,
        retired=NC_V3_RETIRED),
    Sku(name="Standard_NC16as_T4_v3", accelerator="T4", gpus=1, gpu_memory_gb=16, vcpus=16, memory_gb=110),
    Sku(name="Standard_NC24ads_A100_v4", accelerator="A100-80GB", gpus=1, gpu_memory_gb=80, vcpus=24,
        memory_gb=220),
    Sku(name="Standard_NC24r", accelerator="K80", gpus=4, gpu_memory_gb=12, vcpus=24, memory_gb=224, rdma=True,
        retired="the NC series (K80) is retired"),
    Sku(name="Standard_NC24rs_v3", accelerator="V100", gpus=4, gpu_memory_gb=16, vcpus=24, memory_gb=448,
        rdma=True, infiniband=True, retired=NC_V3_RETIRED),
    Sku(name="Standard_NC24s_v3", accelerator="V100", gpus=4, gpu_memory_gb=16, vcpus=24, memory_gb=448,
        retired=NC_V3_RETIRED),
    Sku(name="Standard_NC40ads_H100_v5", accelerator="H100", gpus=1, gpu_memory_gb=94, vcpus=40, memory_gb=320),
    Sku(name="Standard_NC48ads_A100_v4", accelerator="A100-80GB", gpus=2, gpu_memory_gb=80, vcpus=48,
        memory_gb=440),
    Sku(name="Standard_NC4as_T4_v3", accelerator="T4", gpus=1, gpu_memory_gb=16, vcpus=4, memory_gb=28),
    Sku(name="Standard_NC64as_T4_v3", accelerator="T4", gpus=4, gpu_memory_gb=16, vcpus=64, memory_gb=440),
    Sku(name="Standard_NC6s_v3", accelerator="V100", gpus=1, gpu_memory_gb=16, vcpus=6, memory_gb=112,
        retired=NC_V3_RETIRED),
    Sku(name="Standard_NC80adis_H100_v5", accelerator="H100", gpus=2, gpu_memory_gb=94, vcpus=80, memory_gb=640),
    Sku(name="Standard_NC8as_T4_v3", accelerator="T4", gpus=1, gpu_memory_gb=16, vcpus=8, memory_gb=56),
    Sku(name="Standard_NC96ads_A100_v4", accelerator="A100-80GB", gpus=4, gpu_memory_gb=80, vcpus=96,
        memory_gb=880),
    Sku(name="Standard_ND40rs_v2", accelerator="V100", gpus=8, gpu_memory_gb=32, vcpus=40, memory_gb=672,
        rdma=True, infiniband=True),
    Sku(name="Standard_ND96amsr_A100_v4", accelerator="A100-80GB", gpus=8, gpu_memory_gb=80, vcpus=96,
        memory_gb=1900, rdma=True, infiniband=True, topo_file=_NDV4_TOPO),
    Sku(name="Standard_ND96asr_v4", accelerator="A100", gpus=8, gpu_memory_gb=40, vcpus=96, memory_gb=900,
        rdma=True, infiniband=True, topo_file=_NDV4_TOPO),
    Sku(name="Standard_ND96is_H100_v5", accelerator="H100", gpus=8, gpu_memory_gb=80, vcpus=96, memory_gb=1900),
    Sku(name="Standard_ND96isr_H100_v5", accelerator="H100", gpus=8, gpu_memory_gb=80, vcpus=96, memory_gb=1900,
        rdma=True, infiniband=True),
    Sku(name="Standard_ND96isr_H200_v5", accelerator="H200", gpus=8, gpu_memory_gb=141, vcpus=96, memory_gb=1850,
        rdma=True, infiniband=True),
)
"""Every SKU omnidist knows, sorted by name."""

BY_NAME: dict[str, Sku] = {s.name.lower(): s for s in SKUS}
"""Lower-cased SKU name -> SKU (Azure compares VM sizes case-insensitively)."""

DEFAULT_CPU_SKU = "Standard_D4s_v3"
"""The general-purpose SKU for a CPU-only job that names no cpus or memory."""

INFINIBAND_ENV: dict[str, str] = {
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_SOCKET_IFNAME": "eth0",
    "UCX_IB_PCI_RELAXED_ORDERING": "on",
}
"""Variables Azure's examples set for NCCL over SR-IOV InfiniBand (plus the SKU's topo file)."""

MULTI_GPU_SHM_SIZE = "16g"
"""``shm_size`` for nodes with 2+ GPUs: Azure's 2g default starves multi-process data loaders."""


def lookup(name: str) -> Optional[Sku]:
    """The SKU called ``name`` (any case), or ``None`` when omnidist does not know it."""
    return BY_NAME.get(name.lower())


def offered_accelerators() -> list[str]:
    """Portable accelerator names some sold SKU carries, sorted."""
    from omnidist import accelerators

    return sorted({s.accelerator for s in SKUS if s.accelerator in accelerators.BY_NAME})


def infiniband_env(sku: Sku) -> dict[str, str]:
    """The NCCL/UCX variables for an InfiniBand SKU (empty for the others)."""
    if not sku.infiniband:
        return {}
    env = dict(INFINIBAND_ENV)
    if sku.topo_file:
        env["NCCL_TOPO_FILE"] = sku.topo_file
    return env


def fits(sku: Sku, accelerator: Optional[str], count: int, cpus: Optional[float], memory_gb: Optional[float]) -> bool:
    """True when ``sku`` has ``count`` of ``accelerator`` (or any GPUs when None) and the cpus/memory."""
    if accelerator is not None and (sku.accelerator != accelerator or sku.gpus < count):
        return False
    return (cpus is None or sku.vcpus >= cpus) and (memory_gb is None or sku.memory_gb >= memory_gb)


def choose(accelerator: Optional[str], count: int, cpus: Optional[float], memory_gb: Optional[float],
           need_infiniband: bool, prefer_infiniband: bool) -> Optional[Sku]:
    """The smallest sold SKU that fits; retired SKUs only when nothing else does.

    Among fitting SKUs: sold before retired, then the fewest GPUs, then InfiniBand first when
    preferred (multi-node GPU jobs: never at the price of idle GPUs), then the fewest vCPUs and
    RAM. CPU-only jobs (``accelerator`` None) get GPU-less SKUs.
    """
    candidates = [
        s for s in SKUS
        if (s.gpus == 0) == (accelerator is None)
        and fits(s, accelerator, count, cpus, memory_gb)
        and (s.infiniband or not need_infiniband)
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda s: (bool(s.retired), s.gpus, prefer_infiniband and not s.infiniband,
                                          s.vcpus, s.memory_gb, s.name))


def infiniband_alternatives(accelerator: Optional[str]) -> list[Sku]:
    """SKUs with SR-IOV InfiniBand for ``accelerator`` (CPU SKUs for None), sold ones first."""
    found = [s for s in SKUS if s.infiniband and s.accelerator == accelerator]
    return sorted(found, key=lambda s: (bool(s.retired), s.gpus, s.name))


def largest(accelerator: str) -> Optional[Sku]:
    """The SKU with the most ``accelerator`` GPUs (for error messages)."""
    found = [s for s in SKUS if s.accelerator == accelerator]
    return max(found, key=lambda s: (s.gpus, not s.retired), default=None)
