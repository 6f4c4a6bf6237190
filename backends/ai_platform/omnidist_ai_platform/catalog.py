"""What legacy AI Platform Training accepted: machine types and accelerators.

Pure data (no SDK): which of Compute Engine's machines (:mod:`omnidist.compiler.catalog`) legacy jobs
could use, and the deprecated machine names. Every table is sorted and says where its facts come
from; values marked *unconfirmed* are best knowledge, kept in one place so they are easy to correct.
"""

from __future__ import annotations

from typing import Optional

import attrs

from omnidist.kit import Machine, MachineCatalog
from omnidist_google.compute_engine import (
    COMPUTE_ENGINE,
    COMPUTE_ENGINE_ACCELERATORS,
    N1_GPUS,
    REDUCTION_SERVER_MACHINE,
)

ACCELERATOR_TYPES: dict[str, str] = {
    k: COMPUTE_ENGINE_ACCELERATORS[k] for k in ("A100", "P100", "P4", "T4", "V100")}
"""Portable accelerator -> the legacy ``acceleratorConfig.type`` enum value (ml v1 discovery):
Compute Engine's names, for the GPUs legacy AI Platform offered."""

PORTABLE_ACCELERATORS: dict[str, str] = {native: portable for portable, native in ACCELERATOR_TYPES.items()}
"""Legacy enum value -> portable accelerator (derived from :data:`ACCELERATOR_TYPES`)."""

NATIVE_ONLY_ACCELERATORS: dict[str, str] = {
    "NVIDIA_TESLA_K80": "K80",
    "TPU_V2": "TPU",
    "TPU_V2_POD": "TPU",
    "TPU_V3": "TPU",
    "TPU_V3_POD": "TPU",
    "TPU_V4_POD": "TPU",
}
"""Legacy accelerator enum values with no portable GPU name -> what they are: a retired GPU model
(replaced on import, see ``omnidist.compiler.delowering.RETIRED_GPUS``) or a TPU
(:data:`TPU_ACCELERATORS`; ``TPU_V4_POD`` has no portable name and is refused)."""

TPU_MACHINE = "cloud_tpu"
"""The ``workerType`` of a legacy TPU worker (``masterType`` may name it too, the API says)."""

TPU_ACCELERATORS: dict[str, tuple[str, str]] = {"TPU-V2": ("TPU_V2", "TPU_V2_POD"), "TPU-V3": ("TPU_V3", "TPU_V3_POD")}
"""Portable TPU -> its ``acceleratorConfig.type``: one 8-core device, or a Pod slice (more cores).
Legacy AI Platform ran TPU v2 and v3 only, as TPU Nodes: the master VM runs the program and
reaches the TPU worker over the network, by name."""

PORTABLE_TPUS: dict[str, str] = {native: tpu for tpu, names in TPU_ACCELERATORS.items() for native in names}
"""``acceleratorConfig.type`` -> portable TPU (derived)."""

TPU_DEFAULT = ("TPU_V2", 8)
"""The TPU a ``cloud_tpu`` worker without an ``acceleratorConfig`` gets, and the one ``BASIC_TPU``
runs: one TPU v2 device of 8 cores (the legacy "using TPUs" page configures TPU v3 through
``acceleratorConfig``; v2 with 8 cores as the default is *unconfirmed*)."""

REDUCER_MACHINE = REDUCTION_SERVER_MACHINE
"""The machine the Reduction Server samples recommend for reducers (32 Gbps)."""

N1_MIN_VCPUS: dict[str, int] = {"highcpu": 16, "highmem": 2, "standard": 4}
"""N1 series -> the fewest vCPUs AI Platform Training accepted (its "Compute Engine machine types"
list: n1-standard-4…96, n1-highmem-2…96, n1-highcpu-16…96)."""


def _accepted(machine: Machine) -> bool:
    """True for a Compute Engine machine AI Platform Training took: the listed N1 sizes, and the
    A2 machines with the one A100 it had (40 GB; ``a2-megagpu-16g`` is *unconfirmed*)."""
    if machine.family == "n1":
        return machine.vcpus >= N1_MIN_VCPUS[machine.name.split("-")[1]]
    return machine.accelerator in ACCELERATOR_TYPES


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


def compute_engine_name(name: str) -> Optional[str]:
    """The Compute Engine machine a deprecated legacy name stands for (``large_model`` ->
    ``n1-highmem-8``); ``None`` for a name that is a Compute Engine machine already."""
    equivalent = LEGACY_MACHINE_NAMES.get(name)
    return equivalent[0] if equivalent else None


SCALE_TIER_SHAPES: dict[str, tuple[tuple[str, str, int], ...]] = {
    "BASIC_GPU": (("master", "standard_gpu", 1),),
    "PREMIUM_1": (("master", "complex_model_m", 1), ("worker", "complex_model_m", 19),
                  ("parameterServer", "large_model", 11)),
    "STANDARD_1": (("master", "complex_model_s", 1), ("worker", "complex_model_s", 4),
                   ("parameterServer", "standard", 3)),
}
"""Scale tier -> the cluster it ran: ``(trainingInput prefix, machine type, replicas)``.

The documents say BASIC_GPU is "a single worker instance with a single NVIDIA Tesla K80 GPU",
STANDARD_1 "many workers and a few parameter servers", PREMIUM_1 "a large number of workers with
many parameter servers". The counts and machine types (4 workers and 3 parameter servers; 19
and 11) are *unconfirmed*, from the legacy "machine types" page as last read; BASIC (one
``standard`` machine) stays a tier, which legacy AI Platform can still be asked for."""


def _legacy(name: str, equivalent: str, native_gpu: Optional[str], count: int) -> Machine:
    machine = COMPUTE_ENGINE.get(equivalent)
    gpu = PORTABLE_ACCELERATORS.get(native_gpu, native_gpu) if native_gpu else None
    return attrs.evolve(machine, name=name, accelerator=gpu, gpus=count)


MACHINES = MachineCatalog(
    machines=tuple(m for m in COMPUTE_ENGINE.machines if _accepted(m)),
    attach_family="n1",
    attachments={k: v for k, v in N1_GPUS.items() if k in ACCELERATOR_TYPES},
    named_only=tuple(_legacy(name, *equivalent) for name, equivalent in LEGACY_MACHINE_NAMES.items()),
)
"""Every machine type omnidist lets a legacy job use; the deprecated names only when named."""
