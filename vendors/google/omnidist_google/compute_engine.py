"""Compute Engine: the machines Google Cloud's training services run on (both Google backends
read them), as a :class:`~omnidist.compiler.catalog.MachineCatalog`.

Facts come from Compute Engine's machine pages (see ``PLATFORMS.md``); values marked
*unconfirmed* are best knowledge, kept in one place so they are easy to correct.
"""

from __future__ import annotations

from typing import Optional

from omnidist.kit import Attachment, Machine, MachineCatalog

COMPUTE_ENGINE_ACCELERATORS: dict[str, str] = {
    "A100": "NVIDIA_TESLA_A100",
    "A100-80GB": "NVIDIA_A100_80GB",
    "B200": "NVIDIA_B200",
    "H100": "NVIDIA_H100_80GB",
    "H100-MEGA": "NVIDIA_H100_MEGA_80GB",
    "H200": "NVIDIA_H200_141GB",
    "L4": "NVIDIA_L4",
    "P100": "NVIDIA_TESLA_P100",
    "P4": "NVIDIA_TESLA_P4",
    "T4": "NVIDIA_TESLA_T4",
    "V100": "NVIDIA_TESLA_V100",
}
"""Portable accelerator -> Compute Engine's accelerator type name (the ``acceleratorType`` both
Google backends write; legacy AI Platform took a few of them)."""


def _gpu_machine(name: str, vcpus: int, memory_gb: float, egress: float, accelerator: str, gpus: int,
                 rdma: bool = False) -> Machine:
    return Machine(name=name, vcpus=vcpus, memory_gb=memory_gb, egress_gbps=egress, accelerator=accelerator,
                   gpus=gpus, rdma=rdma)


COMPUTE_ENGINE_GPU_MACHINES: tuple[Machine, ...] = (
    _gpu_machine("a2-highgpu-1g", 12, 85, 24, "A100", 1),
    _gpu_machine("a2-highgpu-2g", 24, 170, 32, "A100", 2),
    _gpu_machine("a2-highgpu-4g", 48, 340, 50, "A100", 4),
    _gpu_machine("a2-highgpu-8g", 96, 680, 100, "A100", 8),
    _gpu_machine("a2-megagpu-16g", 96, 1360, 100, "A100", 16),
    _gpu_machine("a2-ultragpu-1g", 12, 170, 24, "A100-80GB", 1),
    _gpu_machine("a2-ultragpu-2g", 24, 340, 32, "A100-80GB", 2),
    _gpu_machine("a2-ultragpu-4g", 48, 680, 50, "A100-80GB", 4),
    _gpu_machine("a2-ultragpu-8g", 96, 1360, 100, "A100-80GB", 8),
    _gpu_machine("a3-highgpu-1g", 26, 234, 25, "H100", 1),
    _gpu_machine("a3-highgpu-2g", 52, 468, 50, "H100", 2),
    _gpu_machine("a3-highgpu-4g", 104, 936, 100, "H100", 4),
    _gpu_machine("a3-highgpu-8g", 208, 1872, 1000, "H100", 8),
    _gpu_machine("a3-megagpu-8g", 208, 1872, 1800, "H100-MEGA", 8),
    _gpu_machine("a3-ultragpu-8g", 224, 2952, 3600, "H200", 8, rdma=True),
    _gpu_machine("a4-highgpu-8g", 224, 3968, 3600, "B200", 8, rdma=True),
    _gpu_machine("g2-standard-12", 12, 48, 16, "L4", 1),
    _gpu_machine("g2-standard-16", 16, 64, 32, "L4", 1),
    _gpu_machine("g2-standard-24", 24, 96, 32, "L4", 2),
    _gpu_machine("g2-standard-32", 32, 128, 32, "L4", 1),
    _gpu_machine("g2-standard-4", 4, 16, 10, "L4", 1),
    _gpu_machine("g2-standard-48", 48, 192, 50, "L4", 4),
    _gpu_machine("g2-standard-8", 8, 32, 16, "L4", 1),
    _gpu_machine("g2-standard-96", 96, 384, 100, "L4", 8),
)
"""A2, A2 ultra, A3, A4 and G2 machines with their built-in GPUs (vCPUs, GB, egress Gbps), by
name. Only A3 ultra and A4 have GPUDirect RDMA (what ``interconnect: infiniband`` gets on Google
Cloud, which has no InfiniBand)."""

N1_MEMORY_PER_VCPU: dict[str, float] = {"highcpu": 0.9, "highmem": 6.5, "standard": 3.75}
"""N1 sub-family -> GB of memory per vCPU."""

N1_SIZES: dict[str, tuple[int, ...]] = {
    "highcpu": (2, 4, 8, 16, 32, 64, 96),
    "highmem": (2, 4, 8, 16, 32, 64, 96),
    "standard": (1, 2, 4, 8, 16, 32, 64, 96),
}
"""N1 sub-family -> the vCPU counts it comes in."""

N1_EGRESS_GBPS: dict[int, float] = {1: 2, 2: 10, 4: 10, 8: 16, 16: 32, 32: 32, 64: 32, 96: 32}
"""N1 vCPUs -> max egress Gbps without GPUs (and with P100/P4). Confirmed: 16 vCPUs = 32 Gbps
(``n1-highcpu-16``, the Reduction Server page) and the 32 Gbps ceiling; *unconfirmed*: 1-8 vCPUs."""

N1_GPUS: dict[str, Attachment] = {
    "P100": Attachment(limits={1: (16, 104), 2: (32, 208), 4: (64, 208)}),
    "P4": Attachment(limits={1: (24, 156), 2: (48, 312), 4: (96, 624)}),
    "T4": Attachment(limits={1: (48, 312), 2: (48, 312), 4: (96, 624)},
                     egress_gbps={1: (24, 32), 2: (48, 50), 4: (96, 100)}),
    "V100": Attachment(limits={1: (12, 78), 2: (24, 156), 4: (48, 312), 8: (96, 624)},
                       egress_gbps={1: (12, 24), 2: (24, 32), 4: (48, 50), 8: (96, 100)}),
}
"""Portable GPU -> how N1 machines take it, sorted by GPU.

Confirmed: the V100 vCPU caps (12/24/48/96) and ``n1-highmem-96`` + 8×V100 = 100 Gbps (the
Reduction Server page); P100/P4 stay at the plain N1 rate (≤ 32 Gbps); T4/V100 reach
"up to 100 Gbps based on GPU and vCPU count" (Networking and GPU machines). *Unconfirmed*
(the per-count N1 table could not be retrieved; values from Compute Engine's GPU pages as
last read, easy to correct here): V100 1/2/4 = 24/32/50 Gbps, T4 1/2/4 = 32/50/100 Gbps, the
memory caps, and the T4/P4/P100 vCPU caps (P100 ×4 allows 96 vCPUs in some zones, 64 in others).
"""

REDUCTION_SERVER_MACHINE = "n1-highcpu-16"
"""The machine Google's Reduction Server documents recommend for reducers (32 Gbps for 16 vCPUs)."""


def _n1(sub_family: str, vcpus: int) -> Machine:
    return Machine(name=f"n1-{sub_family}-{vcpus}", vcpus=vcpus,
                   memory_gb=round(vcpus * N1_MEMORY_PER_VCPU[sub_family], 2),
                   egress_gbps=N1_EGRESS_GBPS[vcpus])


N1_MACHINES: tuple[Machine, ...] = tuple(
    sorted((_n1(kind, n) for kind, sizes in N1_SIZES.items() for n in sizes), key=lambda m: m.name))
"""Every N1 machine type, derived from :data:`N1_SIZES`."""

COMPUTE_ENGINE = MachineCatalog(machines=(*COMPUTE_ENGINE_GPU_MACHINES, *N1_MACHINES), attach_family="n1",
                         attachments=N1_GPUS)
"""Every Compute Engine machine omnidist knows, with the GPUs N1 takes."""

GB_PER_VCPU_BY_NAME: dict[str, dict[str, float]] = {
    "c2": {"standard": 4},
    "c2d": {"highcpu": 2, "highmem": 8, "standard": 4},
    "c3": {"highcpu": 2, "highmem": 8, "standard": 4},
    "e2": {"highcpu": 1, "highmem": 8, "standard": 4},
    "n2": {"highcpu": 1, "highmem": 8, "standard": 4},
    "n2d": {"highcpu": 1, "highmem": 8, "standard": 4},
    "n4": {"highcpu": 2, "highmem": 8, "standard": 4},
}
"""Compute Engine families outside the catalog -> kind -> GB of memory per vCPU, so an importer
can read the size a job ran on from ``FAMILY-KIND-VCPUS`` (``n2-standard-4``: 4 vCPUs, 16 GB).
From Compute Engine's general-purpose and compute-optimized machine pages; the C2D, C3 and N4
``highcpu`` ratios are *unconfirmed*."""


def compute_engine_shape(name: str) -> Optional[tuple[int, float]]:
    """``(vCPUs, GB)`` of a Compute Engine machine type, from the catalog or, for the families in
    :data:`GB_PER_VCPU_BY_NAME`, from its name; ``None`` when neither says."""
    machine = COMPUTE_ENGINE.get(name)
    if machine is not None:
        return machine.vcpus, machine.memory_gb
    family, _, rest = name.partition("-")
    kind, _, vcpus = rest.rpartition("-")
    ratio = GB_PER_VCPU_BY_NAME.get(family, {}).get(kind)
    if ratio is None or not vcpus.isdigit():
        return None
    return int(vcpus), int(vcpus) * ratio
