"""SageMaker's training instance types: the ``ml.*`` machines omnidist picks from and checks.

vCPUs, memory (GiB), GPU model and count are EC2's for the same hardware (the ``ml.`` types
are EC2 instances: :mod:`omnidist_aws.ec2`); EFA with GPUDirect RDMA (what ``interconnect: infiniband`` asks for) is on
the types SageMaker's own drivers turn RDMA on for (SDK v3 ``SM_EFA_RDMA_INSTANCES``: p4d,
p4de, p5, p5e) and on p5en and p6-b200, which AWS sells with EFA for GPUDirect RDMA
(*unconfirmed* from a SageMaker source: a table entry, easy to correct). GPUs without a portable
name (Trainium, Inferentia) keep the cloud's own name: such a type is run when a job
names it, never picked. :data:`INSTANCE_TYPES` is every value of botocore's
``TrainingInstanceType`` enum (botocore 1.44), so a name the API refuses is caught at compile.
"""

from __future__ import annotations

from omnidist.kit import Machine, MachineCatalog
from omnidist_aws import ec2

CPU_SIZES: dict[str, tuple[str, ...]] = {
    "c4": ("2xlarge", "4xlarge", "xlarge"),
    "c5": ("18xlarge", "2xlarge", "4xlarge", "9xlarge", "xlarge"),
    "c6i": ("12xlarge", "16xlarge", "24xlarge", "2xlarge", "32xlarge", "4xlarge", "8xlarge", "xlarge"),
    "c7i": ("12xlarge", "16xlarge", "24xlarge", "2xlarge", "48xlarge", "4xlarge", "8xlarge", "large", "xlarge"),
    "m4": ("10xlarge", "16xlarge", "2xlarge", "4xlarge", "xlarge"),
    "m5": ("12xlarge", "24xlarge", "2xlarge", "4xlarge", "large", "xlarge"),
    "m6i": ("12xlarge", "16xlarge", "24xlarge", "2xlarge", "32xlarge", "4xlarge", "8xlarge", "large", "xlarge"),
    "m7i": ("12xlarge", "16xlarge", "24xlarge", "2xlarge", "48xlarge", "4xlarge", "8xlarge", "large", "xlarge"),
    "r5": ("12xlarge", "16xlarge", "24xlarge", "2xlarge", "4xlarge", "8xlarge", "large", "xlarge"),
    "r7i": ("12xlarge", "16xlarge", "24xlarge", "2xlarge", "48xlarge", "4xlarge", "8xlarge", "large", "xlarge"),
    "t3": ("2xlarge", "large", "medium", "xlarge"),
}
"""CPU family -> the sizes SageMaker trains on (botocore's ``TrainingInstanceType``)."""

GPU_TYPES: dict[str, tuple[int, float, str, int]] = {f"ml.{name}": shape for name, shape in ec2.GPU_SHAPES.items()}
"""GPU (and Trainium) type -> (vCPUs, GiB, accelerator, count): EC2's shapes under SageMaker's names."""

RETIRED_TYPES: dict[str, tuple[int, float, str, int]] = {
    f"ml.{name}": shape for name, shape in ec2.RETIRED_SHAPES.items()}
"""Types whose GPUs no cloud sells any more (K80): read by import, never picked."""

EFA_RDMA: frozenset[str] = frozenset({
    "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge",
    "ml.p6-b200.48xlarge", "ml.trn1.32xlarge",
})
"""Types with EFA and GPUDirect RDMA: what ``interconnect: infiniband`` runs on."""

EFA: frozenset[str] = EFA_RDMA | {"ml.g5.48xlarge", "ml.p3dn.24xlarge"}
"""Types with an EFA device (SDK v3 ``SM_EFA_NCCL_INSTANCES``, plus the RDMA ones)."""

INSTANCE_TYPES: tuple[str, ...] = (
    "ml.c4.2xlarge", "ml.c4.4xlarge", "ml.c4.8xlarge", "ml.c4.xlarge", "ml.c5.18xlarge", "ml.c5.2xlarge",
    "ml.c5.4xlarge", "ml.c5.9xlarge", "ml.c5.xlarge", "ml.c5n.18xlarge", "ml.c5n.2xlarge", "ml.c5n.4xlarge",
    "ml.c5n.9xlarge", "ml.c5n.xlarge", "ml.c6i.12xlarge", "ml.c6i.16xlarge", "ml.c6i.24xlarge", "ml.c6i.2xlarge",
    "ml.c6i.32xlarge", "ml.c6i.4xlarge", "ml.c6i.8xlarge", "ml.c6i.xlarge", "ml.c7i-flex.12xlarge",
    "ml.c7i-flex.16xlarge", "ml.c7i-flex.2xlarge", "ml.c7i-flex.4xlarge", "ml.c7i-flex.8xlarge",
    "ml.c7i-flex.xlarge", "ml.c7i.12xlarge", "ml.c7i.16xlarge", "ml.c7i.24xlarge", "ml.c7i.2xlarge",
    "ml.c7i.48xlarge", "ml.c7i.4xlarge", "ml.c7i.8xlarge", "ml.c7i.large", "ml.c7i.xlarge", "ml.c8i-flex.12xlarge",
    "ml.c8i-flex.16xlarge", "ml.c8i-flex.2xlarge", "ml.c8i-flex.4xlarge", "ml.c8i-flex.8xlarge",
    "ml.c8i-flex.xlarge", "ml.c8i.12xlarge", "ml.c8i.16xlarge", "ml.c8i.24xlarge", "ml.c8i.2xlarge",
    "ml.c8i.32xlarge", "ml.c8i.48xlarge", "ml.c8i.4xlarge", "ml.c8i.8xlarge", "ml.c8i.96xlarge", "ml.c8i.xlarge",
    "ml.g4dn.12xlarge", "ml.g4dn.16xlarge", "ml.g4dn.2xlarge", "ml.g4dn.4xlarge", "ml.g4dn.8xlarge",
    "ml.g4dn.xlarge", "ml.g5.12xlarge", "ml.g5.16xlarge", "ml.g5.24xlarge", "ml.g5.2xlarge", "ml.g5.48xlarge",
    "ml.g5.4xlarge", "ml.g5.8xlarge", "ml.g5.xlarge", "ml.g6.12xlarge", "ml.g6.16xlarge", "ml.g6.24xlarge",
    "ml.g6.2xlarge", "ml.g6.48xlarge", "ml.g6.4xlarge", "ml.g6.8xlarge", "ml.g6.xlarge", "ml.g6e.12xlarge",
    "ml.g6e.16xlarge", "ml.g6e.24xlarge", "ml.g6e.2xlarge", "ml.g6e.48xlarge", "ml.g6e.4xlarge", "ml.g6e.8xlarge",
    "ml.g6e.xlarge", "ml.g7.12xlarge", "ml.g7.24xlarge", "ml.g7.2xlarge", "ml.g7.48xlarge", "ml.g7.4xlarge",
    "ml.g7.8xlarge", "ml.g7e.12xlarge", "ml.g7e.24xlarge", "ml.g7e.2xlarge", "ml.g7e.48xlarge", "ml.g7e.4xlarge",
    "ml.g7e.8xlarge", "ml.m4.10xlarge", "ml.m4.16xlarge", "ml.m4.2xlarge", "ml.m4.4xlarge", "ml.m4.xlarge",
    "ml.m5.12xlarge", "ml.m5.24xlarge", "ml.m5.2xlarge", "ml.m5.4xlarge", "ml.m5.large", "ml.m5.xlarge",
    "ml.m6i.12xlarge", "ml.m6i.16xlarge", "ml.m6i.24xlarge", "ml.m6i.2xlarge", "ml.m6i.32xlarge", "ml.m6i.4xlarge",
    "ml.m6i.8xlarge", "ml.m6i.large", "ml.m6i.xlarge", "ml.m7i-flex.12xlarge", "ml.m7i-flex.16xlarge",
    "ml.m7i-flex.2xlarge", "ml.m7i-flex.4xlarge", "ml.m7i-flex.8xlarge", "ml.m7i-flex.large", "ml.m7i-flex.xlarge",
    "ml.m7i.12xlarge", "ml.m7i.16xlarge", "ml.m7i.24xlarge", "ml.m7i.2xlarge", "ml.m7i.48xlarge", "ml.m7i.4xlarge",
    "ml.m7i.8xlarge", "ml.m7i.large", "ml.m7i.xlarge", "ml.m8i-flex.12xlarge", "ml.m8i-flex.16xlarge",
    "ml.m8i-flex.2xlarge", "ml.m8i-flex.4xlarge", "ml.m8i-flex.8xlarge", "ml.m8i-flex.large", "ml.m8i-flex.xlarge",
    "ml.m8i.12xlarge", "ml.m8i.16xlarge", "ml.m8i.24xlarge", "ml.m8i.2xlarge", "ml.m8i.32xlarge", "ml.m8i.48xlarge",
    "ml.m8i.4xlarge", "ml.m8i.8xlarge", "ml.m8i.96xlarge", "ml.m8i.large", "ml.m8i.xlarge", "ml.p2.16xlarge",
    "ml.p2.8xlarge", "ml.p2.xlarge", "ml.p3.16xlarge", "ml.p3.2xlarge", "ml.p3.8xlarge", "ml.p3dn.24xlarge",
    "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5.4xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge",
    "ml.p6-b200.48xlarge", "ml.p6-b300.48xlarge", "ml.p6e-gb200.36xlarge", "ml.r5.12xlarge", "ml.r5.16xlarge",
    "ml.r5.24xlarge", "ml.r5.2xlarge", "ml.r5.4xlarge", "ml.r5.8xlarge", "ml.r5.large", "ml.r5.xlarge",
    "ml.r5d.12xlarge", "ml.r5d.16xlarge", "ml.r5d.24xlarge", "ml.r5d.2xlarge", "ml.r5d.4xlarge", "ml.r5d.8xlarge",
    "ml.r5d.large", "ml.r5d.xlarge", "ml.r6i.12xlarge", "ml.r6i.16xlarge", "ml.r6i.24xlarge", "ml.r6i.2xlarge",
    "ml.r6i.32xlarge", "ml.r6i.4xlarge", "ml.r6i.8xlarge", "ml.r6i.large", "ml.r6i.xlarge", "ml.r7i.12xlarge",
    "ml.r7i.16xlarge", "ml.r7i.24xlarge", "ml.r7i.2xlarge", "ml.r7i.48xlarge", "ml.r7i.4xlarge", "ml.r7i.8xlarge",
    "ml.r7i.large", "ml.r7i.xlarge", "ml.r8i-flex.12xlarge", "ml.r8i-flex.16xlarge", "ml.r8i-flex.2xlarge",
    "ml.r8i-flex.4xlarge", "ml.r8i-flex.8xlarge", "ml.r8i-flex.large", "ml.r8i-flex.xlarge", "ml.r8i.12xlarge",
    "ml.r8i.16xlarge", "ml.r8i.24xlarge", "ml.r8i.2xlarge", "ml.r8i.32xlarge", "ml.r8i.48xlarge", "ml.r8i.4xlarge",
    "ml.r8i.8xlarge", "ml.r8i.96xlarge", "ml.r8i.large", "ml.r8i.xlarge", "ml.t3.2xlarge", "ml.t3.large",
    "ml.t3.medium", "ml.t3.xlarge", "ml.trn1.2xlarge", "ml.trn1.32xlarge", "ml.trn1n.32xlarge", "ml.trn2.48xlarge",
)
"""Every ``TrainingInstanceType`` botocore's service model allows (a test compares them)."""

DEFAULT_CPU_TYPE = "ml.m5.xlarge"
"""The type of a CPU-only role that names no type, cpus or memory (the SageMaker SDK's examples' size)."""


def _cpu(family: str, size: str) -> Machine:
    vcpus, memory = ec2.shape(family, size)
    return Machine(name=f"ml.{family}.{size}", vcpus=vcpus, memory_gb=memory)


def _gpu(name: str, shape: tuple[int, float, str, int], retired: str = "") -> Machine:
    vcpus, memory, accelerator, count = shape
    return Machine(name=name, vcpus=vcpus, memory_gb=memory, accelerator=accelerator, gpus=count,
                   infiniband=name in EFA_RDMA, rdma=name in EFA_RDMA, retired=retired)


PREVIOUS_GENERATION: frozenset[str] = frozenset({"c4", "m4"})
"""CPU families run when a job names them, never picked (a current one is cheaper for the same size)."""

MACHINES = MachineCatalog(
    machines=(*(_cpu(f, s) for f, sizes in sorted(CPU_SIZES.items()) if f not in PREVIOUS_GENERATION for s in sizes),
              *(_gpu(n, shape) for n, shape in sorted(GPU_TYPES.items()))),
    named_only=(*(_cpu(f, s) for f in sorted(PREVIOUS_GENERATION) for s in CPU_SIZES[f]),
                *(_gpu(n, shape, retired="the K80 is retired") for n, shape in sorted(RETIRED_TYPES.items()))),
)
"""The types omnidist knows the shape of (GPU types with a portable GPU are picked; the others run when named)."""


def machine(name: str) -> Machine | None:
    """The catalog's record of an instance type (``None`` when its shape is unknown)."""
    return MACHINES.get(name)
