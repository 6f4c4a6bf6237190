"""What legacy AI Platform Training accepted: machine types, accelerators, bandwidth.

Pure data and lookups (no SDK). Every table is sorted and says where its facts come from;
values marked *unconfirmed* are best knowledge, kept in one place so they are easy to correct.
"""

from __future__ import annotations

import difflib
import functools
import math
from typing import Optional

import attrs

ACCELERATOR_TYPES: dict[str, str] = {
    "A100": "NVIDIA_TESLA_A100",
    "P100": "NVIDIA_TESLA_P100",
    "P4": "NVIDIA_TESLA_P4",
    "T4": "NVIDIA_TESLA_T4",
    "V100": "NVIDIA_TESLA_V100",
}
"""Portable accelerator -> the legacy ``acceleratorConfig.type`` enum value (ml v1 discovery)."""

PORTABLE_ACCELERATORS: dict[str, str] = {native: portable for portable, native in ACCELERATOR_TYPES.items()}
"""Legacy enum value -> portable accelerator (derived from :data:`ACCELERATOR_TYPES`)."""

NATIVE_ONLY_ACCELERATORS: dict[str, str] = {
    "NVIDIA_TESLA_K80": "the K80 reached end of life and has no portable name; change it to NVIDIA_TESLA_T4 "
                        "(or another GPU) in the file, then import again",
    "TPU_V2": "TPUs are not part of the portable job format; rewrite the job for GPUs",
    "TPU_V2_POD": "TPU pods are not part of the portable job format; rewrite the job for GPUs",
    "TPU_V3": "TPUs are not part of the portable job format; rewrite the job for GPUs",
    "TPU_V3_POD": "TPU pods are not part of the portable job format; rewrite the job for GPUs",
    "TPU_V4_POD": "TPU pods are not part of the portable job format; rewrite the job for GPUs",
}
"""Legacy accelerator enum values with no portable counterpart -> what to do instead."""

N1_GPU_LIMITS: dict[str, dict[int, int]] = {
    "P100": {1: 16, 2: 32, 4: 96},
    "P4": {1: 24, 2: 48, 4: 96},
    "T4": {1: 24, 2: 48, 4: 96},
    "V100": {1: 12, 2: 24, 4: 48, 8: 96},
}
"""GPUs attachable to N1 machines: portable name -> {allowed count: max vCPUs}. Compute Engine's
GPU tables; P100 x4 allows 96 vCPUs only in some zones (64 elsewhere) — *unconfirmed* per zone."""

N1_GPU_EGRESS_GBPS: dict[str, dict[int, tuple[int, int]]] = {
    "T4": {1: (24, 32), 2: (48, 50), 4: (96, 100)},
    "V100": {1: (12, 24), 2: (24, 32), 4: (48, 50), 8: (96, 100)},
}
"""N1 machines with T4/V100 attached: GPU count -> (vCPUs needed, max egress Gbps) — the same table
as the Vertex backend's. *Unconfirmed* except V100 x8 = 100 Gbps (seed); below that vCPU count, and
for other N1 machines, the general N1 rule applies: 2 Gbps per vCPU, at most 32 (an underestimate is
the safe side here)."""

REDUCER_MACHINE = "n1-highcpu-16"
"""The machine the Reduction Server samples recommend for reducers (32 Gbps)."""

_N1_MEMORY_PER_VCPU: dict[str, float] = {"highcpu": 0.9, "highmem": 6.5, "standard": 3.75}
"""N1 series -> GB of memory per vCPU (Compute Engine)."""

_N1_SIZES: dict[str, tuple[int, ...]] = {
    "highcpu": (16, 32, 64, 96),
    "highmem": (2, 4, 8, 16, 32, 64, 96),
    "standard": (4, 8, 16, 32, 64, 96),
}
"""N1 series -> vCPU sizes AI Platform Training accepted (its "Compute Engine machine types" list)."""


@attrs.frozen(kw_only=True)
class Machine:
    """A machine type: vCPUs, memory, max egress, and GPUs built in (A2) if any."""

    name: str
    vcpus: int
    memory_gb: float
    egress_gbps: int
    builtin_accelerator: Optional[str] = None
    builtin_count: int = 0

    @property
    def family(self) -> str:
        """``n1`` or ``a2``."""
        return self.name.split("-", 1)[0]


def _n1(series: str, vcpus: int) -> Machine:
    memory = round(vcpus * _N1_MEMORY_PER_VCPU[series], 2)
    return Machine(name=f"n1-{series}-{vcpus}", vcpus=vcpus, memory_gb=memory, egress_gbps=min(2 * vcpus, 32))


def _a2(name: str, vcpus: int, memory_gb: float, egress_gbps: int, gpus: int) -> Machine:
    return Machine(name=name, vcpus=vcpus, memory_gb=memory_gb, egress_gbps=egress_gbps,
                   builtin_accelerator="A100", builtin_count=gpus)


_A2_MACHINES: tuple[Machine, ...] = (
    _a2("a2-highgpu-1g", 12, 85, 24, 1),
    _a2("a2-highgpu-2g", 24, 170, 32, 2),
    _a2("a2-highgpu-4g", 48, 340, 50, 4),
    _a2("a2-highgpu-8g", 96, 680, 100, 8),
    _a2("a2-megagpu-16g", 96, 1360, 100, 16),
)
"""A2 machines with A100 40 GB built in (PLATFORMS.md); ``a2-megagpu-16g`` on legacy is *unconfirmed*."""

MACHINES: dict[str, Machine] = {
    m.name: m
    for m in sorted((*(_n1(s, v) for s, sizes in _N1_SIZES.items() for v in sizes), *_A2_MACHINES),
                    key=lambda m: m.name)
}
"""Machine type name -> machine, for every type omnidist lets a legacy job use."""

LEGACY_MACHINE_NAMES: dict[str, tuple[str, Optional[str], int]] = {
    "complex_model_l": ("n1-highcpu-32", None, 0),
    "complex_model_l_gpu": ("n1-standard-32", "NVIDIA_TESLA_K80", 8),
    "complex_model_l_v100": ("n1-standard-32", "NVIDIA_TESLA_V100", 8),
    "complex_model_m": ("n1-highcpu-16", None, 0),
    "complex_model_m_gpu": ("n1-standard-16", "NVIDIA_TESLA_K80", 4),
    "complex_model_m_p100": ("n1-standard-16", "NVIDIA_TESLA_P100", 4),
    "complex_model_m_v100": ("n1-standard-16", "NVIDIA_TESLA_V100", 4),
    "complex_model_s": ("n1-highcpu-8", None, 0),
    "large_model": ("n1-highmem-8", None, 0),
    "large_model_v100": ("n1-highmem-8", "NVIDIA_TESLA_V100", 1),
    "standard": ("n1-standard-4", None, 0),
    "standard_gpu": ("n1-standard-8", "NVIDIA_TESLA_K80", 1),
    "standard_p100": ("n1-standard-8", "NVIDIA_TESLA_P100", 1),
    "standard_v100": ("n1-standard-8", "NVIDIA_TESLA_V100", 1),
}
"""Deprecated legacy machine names -> (Compute Engine equivalent, built-in GPU enum, count).
From the legacy docs' comparison table; *unconfirmed* in detail. Accepted as given (old job files
use them); ``n1-highcpu-8`` exists only as the equivalent of ``complex_model_s``."""


def machine(name: str) -> Optional[Machine]:
    """The machine for a type name, resolving deprecated legacy names; ``None`` when unknown."""
    if name in MACHINES:
        return MACHINES[name]
    if name in LEGACY_MACHINE_NAMES:
        equivalent, native_gpu, count = LEGACY_MACHINE_NAMES[name]
        _, series, vcpus = equivalent.split("-")
        gpu = PORTABLE_ACCELERATORS.get(native_gpu, native_gpu) if native_gpu else None
        return attrs.evolve(_n1(series, int(vcpus)), name=name, builtin_accelerator=gpu, builtin_count=count)
    return None


def known_names() -> list[str]:
    """Every machine type name omnidist accepts on this backend, sorted."""
    return sorted({*MACHINES, *LEGACY_MACHINE_NAMES})


def suggest(name: str) -> str:
    """``"; did you mean 'n1-highmem-8'?"`` for a near miss, else ``""``."""
    close = difflib.get_close_matches(name, known_names(), n=1, cutoff=0.7)
    return f"; did you mean {close[0]!r}?" if close else ""


def pairing_problem(m: Machine, accelerator: Optional[str], count: int) -> Optional[str]:
    """Why ``count`` x ``accelerator`` cannot run on ``m`` (``None`` when it can)."""
    if m.builtin_accelerator:
        if accelerator == m.builtin_accelerator and count == m.builtin_count:
            return None
        return f"{m.name} comes with exactly {m.builtin_count} x {m.builtin_accelerator}, got " + (
            f"{count} x {accelerator}" if accelerator else "no accelerator")
    if accelerator is None:
        return None
    limits = N1_GPU_LIMITS.get(accelerator)
    if m.family != "n1" or limits is None:
        return f"{accelerator} cannot be attached to {m.name}" + (
            "; A100 comes only with a2-highgpu-* machines" if accelerator == "A100" else "")
    if count not in limits:
        counts = ", ".join(map(str, limits))
        return f"{accelerator} attaches to N1 machines in counts of {counts}, got {count}"
    if m.vcpus > limits[count]:
        return f"{count} x {accelerator} allows at most {limits[count]} vCPUs, {m.name} has {m.vcpus}"
    return None


def egress_gbps(m: Machine, accelerator: Optional[str], count: int) -> int:
    """Max egress of ``m`` with ``count`` x ``accelerator`` attached (see :data:`N1_GPU_EGRESS_GBPS`)."""
    needed, gbps = N1_GPU_EGRESS_GBPS.get(accelerator or "", {}).get(count, (0, 0))
    if m.family == "n1" and gbps and m.vcpus >= needed:
        return max(m.egress_gbps, gbps)
    return m.egress_gbps


@functools.lru_cache(maxsize=256)  # the catalog is constant: a sweep asks the same few questions
def smallest_fit(accelerator: Optional[str], count: int, cpus: Optional[float],
                 memory_gb: Optional[float]) -> Optional[Machine]:
    """The machine with the fewest vCPUs (then least memory) that fits, or ``None``."""
    fitting = [
        m for m in MACHINES.values()
        if pairing_problem(m, accelerator, count) is None
        and m.vcpus >= (cpus or 0) and m.memory_gb >= (memory_gb or 0)
    ]
    return min(fitting, key=lambda m: (m.vcpus, m.memory_gb, m.name), default=None)


def reducers_needed(node_egress: list[int], reducer_egress: int) -> int:
    """Reduction Server sizing: total reducer egress >= total egress of primary + workers."""
    return max(1, math.ceil(sum(node_egress) / reducer_egress))
