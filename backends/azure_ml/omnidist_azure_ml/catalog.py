"""Azure VM SKUs that Azure ML command jobs run on: GPUs, memory and InfiniBand.

Facts from PLATFORMS.md (Azure section) and the seed page on distributed GPU training. A
SKU with an ``r`` has RDMA, but only the ones marked ``infiniband`` have the SR-IOV
InfiniBand that NCCL needs (``Standard_NC24r``, ``H16r`` and ``H16mr`` have RDMA without it).
The SKUs are :class:`omnidist.compiler.catalog.Machine` records, picked by
:func:`omnidist.compiler.catalog.smallest_fit`.
"""

from __future__ import annotations

from typing import Optional

from omnidist.kit import Machine, MachineCatalog

Sku = Machine
"""An Azure VM size: a catalog machine (``infiniband``: SR-IOV InfiniBand; ``retired``: why Azure
no longer sells it)."""

NC_V3_RETIRED = "the NC v3 series was retired on 2025-09-30"
"""Why the NC v3 sizes are no longer sold."""

SKUS: tuple[Sku, ...] = (
    Machine(name="Standard_D16s_v3", vcpus=16, memory_gb=64),
    Machine(name="Standard_D2s_v3", vcpus=2, memory_gb=8),
    Machine(name="Standard_D32s_v3", vcpus=32, memory_gb=128),
    Machine(name="Standard_D48s_v3", vcpus=48, memory_gb=192),
    Machine(name="Standard_D4s_v3", vcpus=4, memory_gb=16),
    Machine(name="Standard_D64s_v3", vcpus=64, memory_gb=256),
    Machine(name="Standard_D8s_v3", vcpus=8, memory_gb=32),
    Machine(name="Standard_E16s_v3", vcpus=16, memory_gb=128),
    Machine(name="Standard_E2s_v3", vcpus=2, memory_gb=16),
    Machine(name="Standard_E32s_v3", vcpus=32, memory_gb=256),
    Machine(name="Standard_E48s_v3", vcpus=48, memory_gb=384),
    Machine(name="Standard_E4s_v3", vcpus=4, memory_gb=32),
    Machine(name="Standard_E64s_v3", vcpus=64, memory_gb=432),
    Machine(name="Standard_E8s_v3", vcpus=8, memory_gb=64),
    Machine(name="Standard_H16mr", vcpus=16, memory_gb=224, rdma=True),
    Machine(name="Standard_H16r", vcpus=16, memory_gb=112, rdma=True),
    Machine(name="Standard_HB120rs_v3", vcpus=120, memory_gb=448, rdma=True, infiniband=True),
    Machine(name="Standard_HC44rs", vcpus=44, memory_gb=352, rdma=True, infiniband=True),
    Machine(name="Standard_NC12s_v3", accelerator="V100", gpus=2, vcpus=12, memory_gb=224,
            retired=NC_V3_RETIRED),
    Machine(name="Standard_NC16as_T4_v3", accelerator="T4", gpus=1, vcpus=16, memory_gb=110),
    Machine(name="Standard_NC24ads_A100_v4", accelerator="A100-80GB", gpus=1, vcpus=24, memory_gb=220),
    Machine(name="Standard_NC24r", accelerator="K80", gpus=4, vcpus=24, memory_gb=224, rdma=True,
            retired="the NC series (K80) is retired"),
    Machine(name="Standard_NC24rs_v3", accelerator="V100", gpus=4, vcpus=24, memory_gb=448,
            rdma=True, infiniband=True, retired=NC_V3_RETIRED),
    Machine(name="Standard_NC24s_v3", accelerator="V100", gpus=4, vcpus=24, memory_gb=448,
            retired=NC_V3_RETIRED),
    Machine(name="Standard_NC40ads_H100_v5", accelerator="H100", gpus=1, vcpus=40, memory_gb=320),
    Machine(name="Standard_NC48ads_A100_v4", accelerator="A100-80GB", gpus=2, vcpus=48, memory_gb=440),
    Machine(name="Standard_NC4as_T4_v3", accelerator="T4", gpus=1, vcpus=4, memory_gb=28),
    Machine(name="Standard_NC64as_T4_v3", accelerator="T4", gpus=4, vcpus=64, memory_gb=440),
    Machine(name="Standard_NC6s_v3", accelerator="V100", gpus=1, vcpus=6, memory_gb=112,
            retired=NC_V3_RETIRED),
    Machine(name="Standard_NC80adis_H100_v5", accelerator="H100", gpus=2, vcpus=80, memory_gb=640),
    Machine(name="Standard_NC8as_T4_v3", accelerator="T4", gpus=1, vcpus=8, memory_gb=56),
    Machine(name="Standard_NC96ads_A100_v4", accelerator="A100-80GB", gpus=4, vcpus=96, memory_gb=880),
    Machine(name="Standard_ND40rs_v2", accelerator="V100", gpus=8, vcpus=40, memory_gb=672,
            rdma=True, infiniband=True),
    Machine(name="Standard_ND96amsr_A100_v4", accelerator="A100-80GB", gpus=8, vcpus=96, memory_gb=1900,
            rdma=True, infiniband=True),
    Machine(name="Standard_ND96asr_v4", accelerator="A100", gpus=8, vcpus=96, memory_gb=900,
            rdma=True, infiniband=True),
    Machine(name="Standard_ND96is_H100_v5", accelerator="H100", gpus=8, vcpus=96, memory_gb=1900),
    Machine(name="Standard_ND96isr_H100_v5", accelerator="H100", gpus=8, vcpus=96, memory_gb=1900,
            rdma=True, infiniband=True),
    Machine(name="Standard_ND96isr_H200_v5", accelerator="H200", gpus=8, vcpus=96, memory_gb=1850,
            rdma=True, infiniband=True),
    # NVadsA10 v5: the 36- and 72-vCPU sizes carry whole A10s (the smaller ones a fraction of one)
    Machine(name="Standard_NV36ads_A10_v5", accelerator="A10", gpus=1, vcpus=36, memory_gb=440),
    Machine(name="Standard_NV72ads_A10_v5", accelerator="A10", gpus=2, vcpus=72, memory_gb=880),
)
"""Every SKU omnidist knows, sorted by name: general-purpose Dsv3 (4 GB per vCPU) and memory-optimized
Esv3 (8 GB per vCPU, up to 432 GB) for CPU roles, the H and HB/HC HPC sizes, the N-series GPU sizes."""

MACHINES = MachineCatalog(machines=SKUS, ignore_case=True)
"""The SKUs by name (Azure compares VM sizes case-insensitively)."""

TOPO_FILES: dict[str, str] = {
    "Standard_ND96amsr_A100_v4": "/opt/microsoft/ndv4-topo.xml",
    "Standard_ND96asr_v4": "/opt/microsoft/ndv4-topo.xml",
}
"""SKU -> the ``NCCL_TOPO_FILE`` the platform images ship for it (ND A100 v4)."""

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


def lookup(name: str) -> Optional[Machine]:
    """The SKU called ``name`` (any case), or ``None`` when omnidist does not know it."""
    return MACHINES.get(name)


def offered_accelerators() -> list[str]:
    """Portable accelerator names some sold SKU carries, sorted."""
    from omnidist.kit import ACCELERATORS_BY_NAME

    return sorted({s.accelerator for s in SKUS if s.accelerator in ACCELERATORS_BY_NAME})


def infiniband_env(sku: Machine) -> dict[str, str]:
    """The NCCL/UCX variables for an InfiniBand SKU (empty for the others)."""
    if not sku.infiniband:
        return {}
    env = dict(INFINIBAND_ENV)
    if sku.name in TOPO_FILES:
        env["NCCL_TOPO_FILE"] = TOPO_FILES[sku.name]
    return env


def infiniband_alternatives(accelerator: Optional[str]) -> list[Machine]:
    """SKUs with SR-IOV InfiniBand for ``accelerator`` (CPU SKUs for None), sold ones first."""
    found = [s for s in SKUS if s.infiniband and s.accelerator == accelerator]
    return sorted(found, key=lambda s: (bool(s.retired), s.gpus, s.name))


def largest(accelerator: str) -> Optional[Machine]:
    """The SKU with the most ``accelerator`` GPUs (for error messages)."""
    found = [s for s in SKUS if s.accelerator == accelerator]
    return max(found, key=lambda s: (s.gpus, not s.retired), default=None)
