"""The Compute Engine machines Vertex AI training runs on: what each can hold and send.

Facts come from Compute Engine's machine-family and "Networking and GPU machines" pages
(see ``/work/shared/PLATFORMS.md``). Everything here is plain data plus two small functions:
:func:`machine` (look a name up, including N1 types with attached GPUs) and
:func:`candidates` (every machine that can carry a role's accelerator, for picking the
smallest). Pure: no SDK, no network.
"""

from __future__ import annotations

from typing import Optional

import attrs


@attrs.frozen(kw_only=True)
class Machine:
    """One machine type.

    Attributes:
        name: the Compute Engine machine type (``a2-highgpu-8g``).
        vcpus: virtual CPUs.
        memory_gb: memory in GB.
        egress_gbps: maximum egress bandwidth without GPUs attached (for N1 types) or with
            the built-in GPUs (accelerator-optimized types).
        accelerator: the portable accelerator the machine comes with (``None`` for N1,
            whose GPUs are attached separately; see :data:`N1_GPUS`).
        gpus: how many of ``accelerator`` it comes with.
        rdma: GPU-to-GPU networking with GPUDirect RDMA (what ``interconnect: infiniband``
            asks for; Google Cloud has no InfiniBand, see the backend's doc page).
    """

    name: str
    vcpus: int
    memory_gb: float
    egress_gbps: float
    accelerator: Optional[str] = None
    gpus: int = 0
    rdma: bool = False

    @property
    def family(self) -> str:
        """``n1``, ``a2``, ``a3``, ``a4`` or ``g2``."""
        return self.name.split("-", 1)[0]


def _fixed(
    name: str, vcpus: int, memory_gb: float, egress: float, accelerator: str, gpus: int, rdma: bool = False
) -> Machine:
    return Machine(
        name=name,
        vcpus=vcpus,
        memory_gb=memory_gb,
        egress_gbps=egress,
        accelerator=accelerator,
        gpus=gpus,
        rdma=rdma,
    )


ACCELERATOR_OPTIMIZED: tuple[Machine, ...] = (
    _fixed("a2-highgpu-1g", 12, 85, 24, "A100", 1),
    _fixed("a2-highgpu-2g", 24, 170, 32, "A100", 2),
    _fixed("a2-highgpu-4g", 48, 340, 50, "A100", 4),
    _fixed("a2-highgpu-8g", 96, 680, 100, "A100", 8),
    _fixed("a2-megagpu-16g", 96, 1360, 100, "A100", 16),
    _fixed("a2-ultragpu-1g", 12, 170, 24, "A100-80GB", 1),
    _fixed("a2-ultragpu-2g", 24, 340, 32, "A100-80GB", 2),
    _fixed("a2-ultragpu-4g", 48, 680, 50, "A100-80GB", 4),
    _fixed("a2-ultragpu-8g", 96, 1360, 100, "A100-80GB", 8),
    _fixed("a3-highgpu-1g", 26, 234, 25, "H100", 1),
    _fixed("a3-highgpu-2g", 52, 468, 50, "H100", 2),
    _fixed("a3-highgpu-4g", 104, 936, 100, "H100", 4),
    _fixed("a3-highgpu-8g", 208, 1872, 1000, "H100", 8),
    _fixed("a3-megagpu-8g", 208, 1872, 1800, "H100-MEGA", 8),
    _fixed("a3-ultragpu-8g", 224, 2952, 3600, "H200", 8, rdma=True),
    _fixed("a4-highgpu-8g", 224, 3968, 3600, "B200", 8, rdma=True),
    _fixed("g2-standard-12", 12, 48, 16, "L4", 1),
    _fixed("g2-standard-16", 16, 64, 32, "L4", 1),
    _fixed("g2-standard-24", 24, 96, 32, "L4", 2),
    _fixed("g2-standard-32", 32, 128, 32, "L4", 1),
    _fixed("g2-standard-4", 4, 16, 10, "L4", 1),
    _fixed("g2-standard-48", 48, 192, 50, "L4", 4),
    _fixed("g2-standard-8", 8, 32, 16, "L4", 1),
    _fixed("g2-standard-96", 96, 384, 100, "L4", 8),
)
"""A2, A2 ultra, A3, A4 and G2 machines with their built-in GPUs (vCPUs, GB, egress Gbps), by name."""

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


@attrs.frozen(kw_only=True)
class N1Gpu:
    """What N1 can take of one attachable GPU: per allowed count, the vCPU and memory caps
    and (for T4/V100) the egress that count unlocks."""

    caps: dict[int, tuple[int, float]]
    """GPU count -> (max vCPUs, max memory GB)."""
    egress_gbps: dict[int, tuple[int, float]] = attrs.field(factory=dict)
    """GPU count -> (vCPUs needed, max egress) with that count; below that vCPU count, or when
    empty, the plain N1 rate applies."""

    @property
    def counts(self) -> tuple[int, ...]:
        """The GPU counts N1 accepts, ascending."""
        return tuple(sorted(self.caps))


N1_GPUS: dict[str, N1Gpu] = {
    "P100": N1Gpu(caps={1: (16, 104), 2: (32, 208), 4: (64, 208)}),
    "P4": N1Gpu(caps={1: (24, 156), 2: (48, 312), 4: (96, 624)}),
    "T4": N1Gpu(caps={1: (48, 312), 2: (48, 312), 4: (96, 624)}, egress_gbps={1: (24, 32), 2: (48, 50), 4: (96, 100)}),
    "V100": N1Gpu(
        caps={1: (12, 78), 2: (24, 156), 4: (48, 312), 8: (96, 624)},
        egress_gbps={1: (12, 24), 2: (24, 32), 4: (48, 50), 8: (96, 100)},
    ),
}
"""Portable GPU -> N1 attachment rules, sorted by GPU.

Confirmed: the V100 vCPU caps (12/24/48/96) and ``n1-highmem-96`` + 8×V100 = 100 Gbps (the
Vertex Reduction Server page); P100/P4 stay at the plain N1 rate (≤ 32 Gbps); T4/V100 reach
"up to 100 Gbps based on GPU and vCPU count" (Networking and GPU machines). *Unconfirmed*
(the per-count N1 table could not be retrieved; values from Compute Engine's GPU pages as
last read, easy to correct here): V100 1/2/4 = 24/32/50 Gbps, T4 1/2/4 = 50/50/100 Gbps, the
memory caps, and the T4/P4/P100 vCPU caps.
"""

N1_GPU_VCPUS_PER_GPU = 4
"""vCPUs per attached GPU when a role names neither a machine nor ``cpus`` (a few cores to
feed each GPU's input pipeline; one vCPU for eight V100s would starve them)."""

DEFAULT_CPU_MACHINE = "n1-standard-4"
"""The machine for a CPU-only role that names no machine, cpus or memory (Vertex's usual default)."""

REDUCER_MACHINE = "n1-highcpu-16"
"""The Reduction Server machine Vertex recommends (32 Gbps for 16 vCPUs)."""


def _n1(name: str) -> Optional[Machine]:
    parts = name.split("-")
    if len(parts) != 3 or parts[0] != "n1" or parts[1] not in N1_SIZES or not parts[2].isdigit():
        return None
    vcpus = int(parts[2])
    if vcpus not in N1_SIZES[parts[1]]:
        return None
    return Machine(
        name=name,
        vcpus=vcpus,
        memory_gb=round(vcpus * N1_MEMORY_PER_VCPU[parts[1]], 2),
        egress_gbps=N1_EGRESS_GBPS[vcpus],
    )


N1_MACHINES: tuple[Machine, ...] = tuple(
    sorted(
        (m for kind, sizes in N1_SIZES.items() for m in (_n1(f"n1-{kind}-{n}") for n in sizes) if m),
        key=lambda m: m.name,
    )
)
"""Every N1 machine type, derived from :data:`N1_SIZES`."""

BY_NAME: dict[str, Machine] = {m.name: m for m in (*ACCELERATOR_OPTIMIZED, *N1_MACHINES)}
"""Machine type -> machine (derived)."""

GPU_FAMILIES = frozenset(m.family for m in ACCELERATOR_OPTIMIZED)
"""Families whose every machine has GPUs built in (a typo there is an error, not a new machine)."""


def machine(name: str) -> Optional[Machine]:
    """The catalog entry for ``name`` (``None`` when the catalog does not know it)."""
    return BY_NAME.get(name)


def unlocked_gpu_egress(m: Machine, accelerator: Optional[str], count: int) -> Optional[tuple[int, float]]:
    """``(vCPUs needed, Gbps)`` when ``m`` has too few vCPUs for the GPU bandwidth that ``count`` ×
    ``accelerator`` could unlock on N1; ``None`` when it already has it or there is none."""
    if m.family != "n1" or accelerator not in N1_GPUS:
        return None
    needed, gbps = N1_GPUS[accelerator].egress_gbps.get(count, (0, 0.0))
    return (needed, gbps) if gbps and m.vcpus < needed else None


def egress_gbps(m: Machine, accelerator: Optional[str], count: int) -> float:
    """Maximum egress of ``m`` with ``count`` × ``accelerator`` attached (N1) or built in."""
    # The GPU rate needs the vCPU count Compute Engine lists with it ("based on the combination
    # of GPU and vCPU count"); with fewer vCPUs the plain N1 rate is the safe estimate.
    if m.family == "n1" and accelerator in N1_GPUS and unlocked_gpu_egress(m, accelerator, count) is None:
        return max(m.egress_gbps, N1_GPUS[accelerator].egress_gbps.get(count, (0, 0.0))[1])
    return m.egress_gbps


def machines_for(accelerator: str) -> tuple[str, ...]:
    """Human-readable ways to get ``accelerator`` on Vertex, for error messages."""
    fixed = [f"{m.name} ({m.gpus})" for m in ACCELERATOR_OPTIMIZED if m.accelerator == accelerator]
    if accelerator in N1_GPUS:
        fixed.append(f"n1-* with {'/'.join(map(str, N1_GPUS[accelerator].counts))}")
    return tuple(fixed)


def candidates(accelerator: Optional[str], count: int) -> tuple[Machine, ...]:
    """Every machine that can carry ``count`` × ``accelerator`` (CPU-only: every N1 type),
    smallest first (by vCPUs, then memory)."""
    if accelerator is None:
        found = list(N1_MACHINES)
    else:
        found = [m for m in ACCELERATOR_OPTIMIZED if m.accelerator == accelerator and m.gpus == count]
        rule = N1_GPUS.get(accelerator)
        if rule and count in rule.caps:
            max_vcpus, max_memory = rule.caps[count]
            found += [m for m in N1_MACHINES if m.vcpus <= max_vcpus and m.memory_gb <= max_memory]
    return tuple(sorted(found, key=lambda m: (m.vcpus, m.memory_gb, m.name)))
