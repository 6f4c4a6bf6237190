"""What Kubernetes clusters say about their nodes and what a pod asks of them, whatever cloud runs
them: resource names, the GPU device plugin's resource and taint, the node labels GPU feature
discovery and the clouds' node pools set, and the shared-memory volume a multi-GPU pod needs."""

from __future__ import annotations

import re

from omnidist.kit import lazy_pattern

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource NVIDIA's device plugin offers: a GPU count is a limit on it."""

CPU, MEMORY, EPHEMERAL_STORAGE = "cpu", "memory", "ephemeral-storage"
"""The core resources a role's ``cpus``, ``memory_gb`` and ``disk_gb`` become."""

SHM_VOLUME = "dshm"
SHM_PATH = "/dev/shm"
"""The memory-backed volume omnidist mounts for shared memory (the container default is 64 MiB)."""

MULTI_GPU_SHM_SIZE = "16Gi"
"""Shared memory given to pods with several GPUs when the settings name no ``shm_size``
(multi-process data loaders and NCCL hang on the default)."""

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
"""The node label NVIDIA's GPU feature discovery sets (``NVIDIA-A100-SXM4-80GB``, ``Tesla-T4``…)."""

GPU_PRODUCTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy_pattern(r"A100.*80GB", re.IGNORECASE), "A100-80GB"),
    (lazy_pattern(r"A100", re.IGNORECASE), "A100"),
    (lazy_pattern(r"B200", re.IGNORECASE), "B200"),
    (lazy_pattern(r"H100", re.IGNORECASE), "H100"),
    (lazy_pattern(r"H200", re.IGNORECASE), "H200"),
    (lazy_pattern(r"(^|-)L4($|-)", re.IGNORECASE), "L4"),
    (lazy_pattern(r"P100", re.IGNORECASE), "P100"),
    (lazy_pattern(r"(^|-)P4($|-)", re.IGNORECASE), "P4"),
    (lazy_pattern(r"(^|-)T4($|-)", re.IGNORECASE), "T4"),
    (lazy_pattern(r"V100", re.IGNORECASE), "V100"),
)
"""``nvidia.com/gpu.product`` pattern -> portable accelerator, first match wins (the label is the
marketing name with spaces as ``-``; *unconfirmed* beyond the common SXM/PCIe spellings)."""

INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
"""The well-known node labels holding the cloud's machine type."""

SPOT_NODE_LABELS: dict[str, str] = {
    "cloud.google.com/gke-preemptible": "true",
    "cloud.google.com/gke-spot": "true",
    "eks.amazonaws.com/capacityType": "SPOT",
    "karpenter.sh/capacity-type": "spot",
    "kubernetes.azure.com/scalesetpriority": "spot",
}
"""Node labels (with their value) that put a pod on spot capacity, for the importer: GKE,
EKS managed node groups, Karpenter, AKS spot node pools."""

GPU_TOLERATION: dict[str, str] = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
"""A toleration of the ``nvidia.com/gpu`` taint: GKE adds one to every pod that asks for GPUs
(ExtendedResourceToleration), so the importer does not carry it (any value of the key)."""
