"""EC2 instance shapes: vCPUs and memory by EC2's naming rule, and the GPU instance types' GPUs.

Other AWS services run EC2 instances under names of their own (SageMaker's ``ml.`` prefix): their
catalogs derive their shapes from these.
"""

from __future__ import annotations

SIZES: dict[str, int] = {
    "10xlarge": 40,
    "12xlarge": 48,
    "16xlarge": 64,
    "18xlarge": 72,
    "24xlarge": 96,
    "2xlarge": 8,
    "32xlarge": 128,
    "48xlarge": 192,
    "4xlarge": 16,
    "8xlarge": 32,
    "9xlarge": 36,
    "large": 2,
    "medium": 2,
    "xlarge": 4,
}
"""Size suffix -> vCPUs (EC2's naming: xlarge = 4 vCPUs, doubling; ``c4.8xlarge`` is the exception)."""

GIB_PER_VCPU: dict[str, float] = {
    "c4": 1.875,
    "c5": 2,
    "c6i": 2,
    "c7i": 2,
    "m4": 4,
    "m5": 4,
    "m6i": 4,
    "m7i": 4,
    "r5": 8,
    "r7i": 8,
    "t3": 4,
}
"""CPU family -> GiB of memory per vCPU (EC2's general purpose 4, compute 2, memory 8)."""

SHAPE_EXCEPTIONS: dict[str, tuple[int, float]] = {
    "c4.8xlarge": (36, 60),
    "t3.medium": (2, 4),
}
"""Instance types whose (vCPUs, GiB) the family rule gets wrong."""

GPU_SHAPES: dict[str, tuple[int, float, str, int]] = {
    "g4dn.12xlarge": (48, 192, "T4", 4),
    "g4dn.16xlarge": (64, 256, "T4", 1),
    "g4dn.2xlarge": (8, 32, "T4", 1),
    "g4dn.4xlarge": (16, 64, "T4", 1),
    "g4dn.8xlarge": (32, 128, "T4", 1),
    "g4dn.xlarge": (4, 16, "T4", 1),
    "g5.12xlarge": (48, 192, "A10G", 4),
    "g5.16xlarge": (64, 256, "A10G", 1),
    "g5.24xlarge": (96, 384, "A10G", 4),
    "g5.2xlarge": (8, 32, "A10G", 1),
    "g5.48xlarge": (192, 768, "A10G", 8),
    "g5.4xlarge": (16, 64, "A10G", 1),
    "g5.8xlarge": (32, 128, "A10G", 1),
    "g5.xlarge": (4, 16, "A10G", 1),
    "g6.12xlarge": (48, 192, "L4", 4),
    "g6.16xlarge": (64, 256, "L4", 1),
    "g6.24xlarge": (96, 384, "L4", 4),
    "g6.2xlarge": (8, 32, "L4", 1),
    "g6.48xlarge": (192, 768, "L4", 8),
    "g6.4xlarge": (16, 64, "L4", 1),
    "g6.8xlarge": (32, 128, "L4", 1),
    "g6.xlarge": (4, 16, "L4", 1),
    "g6e.12xlarge": (48, 384, "L40S", 4),
    "g6e.16xlarge": (64, 512, "L40S", 1),
    "g6e.24xlarge": (96, 768, "L40S", 4),
    "g6e.2xlarge": (8, 64, "L40S", 1),
    "g6e.48xlarge": (192, 1536, "L40S", 8),
    "g6e.4xlarge": (16, 128, "L40S", 1),
    "g6e.8xlarge": (32, 256, "L40S", 1),
    "g6e.xlarge": (4, 32, "L40S", 1),
    "p3.16xlarge": (64, 488, "V100", 8),
    "p3.2xlarge": (8, 61, "V100", 1),
    "p3.8xlarge": (32, 244, "V100", 4),
    "p3dn.24xlarge": (96, 768, "V100", 8),
    "p4d.24xlarge": (96, 1152, "A100", 8),
    "p4de.24xlarge": (96, 1152, "A100-80GB", 8),
    "p5.48xlarge": (192, 2048, "H100", 8),
    "p5e.48xlarge": (192, 2048, "H200", 8),
    "p5en.48xlarge": (192, 2048, "H200", 8),
    "p6-b200.48xlarge": (192, 2048, "B200", 8),
    "trn1.2xlarge": (8, 32, "Trainium", 1),
    "trn1.32xlarge": (128, 512, "Trainium", 16),
}
"""GPU (and Trainium) instance type -> (vCPUs, GiB, accelerator, count); the accelerator is a portable name
where it has one."""

RETIRED_SHAPES: dict[str, tuple[int, float, str, int]] = {
    "p2.16xlarge": (64, 732, "K80", 16),
    "p2.8xlarge": (32, 488, "K80", 8),
    "p2.xlarge": (4, 61, "K80", 1),
}
"""Instance types whose GPUs no cloud sells any more (K80): read by import, never picked."""


def shape(family: str, size: str) -> tuple[int, float]:
    """(vCPUs, GiB) of the CPU instance type ``family.size`` (``m5``, ``xlarge``), by EC2's naming
    rule unless it is one of :data:`SHAPE_EXCEPTIONS`.

    Raises:
        KeyError: a size or family the rule does not know.
    """
    return SHAPE_EXCEPTIONS.get(f"{family}.{size}", (SIZES[size], SIZES[size] * GIB_PER_VCPU[family]))
