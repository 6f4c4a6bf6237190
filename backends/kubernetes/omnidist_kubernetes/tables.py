"""Where Kubernetes differs: the Kubeflow job kinds, their replica types, the node labels that
name GPUs, and the states. Sorted tables with one docstring each; inverses are derived.

Sources: kubeflow/training-operator ``release-1.9`` (PyTorchJob and TFJob CRDs, webhooks,
``pkg/controller.v1``), kubeflow/mpi-operator (MPIJob ``v2beta1`` CRD, validation and
controller), GKE's "Run GPUs in GKE Standard node pools" and "Spot VMs" pages, and AWS's
accelerated-computing instance tables. Entries marked *unconfirmed* are best knowledge, kept
here so they are easy to correct.
"""

from __future__ import annotations

import functools
import re

import attrs

from omnidist.kit import Billing, Ending, Framework, JobState, RoleName, lazy_pattern
from omnidist.runtime.platforms import kubernetes as platform

NAME = "kubernetes"
"""The backend's name (entry point, settings block ``backends.kubernetes``)."""

GROUP = "kubeflow.org"
"""The API group of every Kubeflow training job."""


@attrs.frozen(kw_only=True)
class Kind:
    """One training-job custom resource: what ``kubectl`` and the API call it.

    Attributes:
        kind: ``PyTorchJob``, ``TFJob`` or ``MPIJob``.
        version: the API version within :data:`GROUP`.
        plural: the resource's plural, as in its URL.
        replica_specs: the ``spec`` key holding the replica types.
        container: the container the operator requires in every replica (its webhook refuses a
            replica without one), ``None`` where any name goes (MPIJob: the first container).
    """

    kind: str
    version: str
    plural: str
    replica_specs: str
    container: str | None

    @property
    def api_version(self) -> str:
        """``kubeflow.org/v1``."""
        return f"{GROUP}/{self.version}"


PYTORCH_JOB = Kind(kind="PyTorchJob", version="v1", plural="pytorchjobs", replica_specs="pytorchReplicaSpecs",
                   container="pytorch")
TF_JOB = Kind(kind="TFJob", version="v1", plural="tfjobs", replica_specs="tfReplicaSpecs", container="tensorflow")
MPI_JOB = Kind(kind="MPIJob", version="v2beta1", plural="mpijobs", replica_specs="mpiReplicaSpecs", container=None)

KINDS: dict[str, Kind] = {k.kind: k for k in (MPI_JOB, PYTORCH_JOB, TF_JOB)}
"""``kind`` -> the job kind."""

FRAMEWORK_KINDS: dict[Framework, str] = {
    framework: platform.KINDS[framework.value] for framework in sorted(Framework)
}
"""Portable framework -> the kind it compiles to, from the platform's own table
(:data:`omnidist.runtime.platforms.kubernetes.KINDS`), which the runtime reads too."""

KIND_FRAMEWORKS: dict[str, Framework] = {
    kind: min((f for f, k in FRAMEWORK_KINDS.items() if k == kind), key=lambda f: f.value not in kind.lower())
    for kind in sorted(set(FRAMEWORK_KINDS.values()))
}
"""Kind -> the framework an imported job gets when its environment does not say (derived,
preferring the framework the kind is named after; MPIJob: horovod)."""

REPLICA_TYPES: dict[str, dict[RoleName, str]] = {
    kind: {role: types[role.singular] for role in RoleName if role.singular in types}
    for kind, types in platform.REPLICA_TYPES.items()
}
"""Kind -> role -> replica type, from the platform's table. An MPIJob's primary and workers are
all ``Worker`` pods (one template, ``replicas`` = nodes); its ``Launcher`` runs ``mpirun`` and is
no node of the job."""

REPLICA_ROLES: dict[str, dict[str, RoleName]] = {
    kind: {rtype: role for role, rtype in roles.items()} for kind, roles in REPLICA_TYPES.items() if kind != "MPIJob"
}
"""Kind -> replica type -> role (derived; an MPIJob's ``Worker`` pods are the primary and the
workers together, which the importer splits)."""

LAUNCHER = "Launcher"
"""The MPIJob replica type that runs ``mpirun``."""

MPI_CONTAINERS: dict[str, str] = {"Launcher": "launcher", "Worker": "worker"}
"""MPIJob replica type -> the container name omnidist writes (mpi-operator takes any)."""

RESTART_POLICIES: tuple[str, ...] = ("Always", "ExitCode", "Never", "OnFailure")
"""``restartPolicy`` values of a replica (training-operator); MPIJob takes Never and OnFailure only."""

MPI_RESTART_POLICIES: tuple[str, ...] = ("Never", "OnFailure")
"""``restartPolicy`` values mpi-operator's validation accepts."""

DEFAULT_RESTART_POLICIES: dict[str, str] = {
    "Launcher": "OnFailure",
    "MPIJob": "Never",
    "PyTorchJob": "OnFailure",
    "TFJob": "OnFailure",
}
"""Kind (or ``Launcher``) -> the ``restartPolicy`` omnidist writes when the settings name none:
the operators' own defaults (PyTorchJob's ``OnFailure``; mpi-operator's ``OnFailure`` launcher
and ``Never`` workers), TFJob like PyTorchJob."""

CLEAN_POD_POLICIES: tuple[str, ...] = ("All", "None", "Running")
"""``runPolicy.cleanPodPolicy`` values."""

DEFAULT_CLEAN_POD_POLICIES: dict[str, str] = {"MPIJob": "Running"}
"""Kind -> the ``cleanPodPolicy`` omnidist writes when the settings name none: MPIJob workers run
``sshd`` until deleted, so they go when the launcher ends (as mpi-operator's examples do)."""

MPI_SLOTS_DEFAULT = 1
"""mpi-operator's ``slotsPerWorker`` when a job names none."""

MPIRUN = ("mpirun", "--allow-run-as-root", "-bind-to", "none", "-map-by", "slot")
"""How the launcher starts the job (OpenMPI, as mpi-operator's examples do); ``-np`` and one
``-x NAME`` per variable follow, then the program."""

MPIRUN_FORWARDED = ("PATH",)
"""Variables every launch forwards to the ranks (processes started over ssh see no pod env)."""

MPIRUN_PROGRAMS = frozenset({"horovodrun", "mpiexec", "mpirun", "orterun"})
"""Launcher programs the importer reads options off to find the training program."""

MPIRUN_OPTION_VALUES: dict[str, int] = {
    "--allow-run-as-root": 0, "--bind-to": 1, "--display-map": 0, "--host": 1, "--hostfile": 1,
    "--map-by": 1, "--mca": 2, "--merge-stderr-to-stdout": 0, "--np": 1, "--npernode": 1,
    "--output-filename": 1, "--oversubscribe": 0, "--prefix": 1, "--rank-by": 1, "--report-bindings": 0,
    "--tag-output": 0, "--timestamp-output": 0, "--verbose": 0, "--wdir": 1, "-H": 1, "-N": 1,
    "-bind-to": 1, "-c": 1, "-display-map": 0, "-gmca": 2, "-host": 1, "-hostfile": 1, "-map-by": 1,
    "-mca": 2, "-n": 1, "-np": 1, "-npernode": 1, "-p": 1, "-rank-by": 1, "-report-bindings": 0,
    "-tag-output": 0, "-v": 0, "-wdir": 1, "-x": 1,
}
"""mpirun/horovodrun option -> how many values follow it (the importer skips them to find the
program); an option written ``--opt=value`` takes its value with it."""

# --- resources, labels, annotations --------------------------------------------------------------
# (what any cluster's nodes say is the Kubernetes vendor kit's: omnidist_k8s.nodes)

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label Kueue admits a job by (its LocalQueue's name)."""

JOB_NAME_LABEL = "training.kubeflow.org/job-name"
"""The label both operators put on every pod of a job (what ``logs`` selects by)."""

REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
"""The labels telling a pod's replica type (lowercase) and index."""

DESCRIPTION_ANNOTATION = "kubernetes.io/description"
"""The well-known annotation a job's ``description`` goes into (Kubernetes objects have no field)."""

MAX_NAME = 63
"""A job's name, and every pod and service name the operators derive from it, is a DNS-1035 label."""

# --- GPUs on nodes ---------------------------------------------------------------------------------

GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
"""The node label GKE gives GPU nodes."""

GKE_ACCELERATORS: dict[str, str] = {
    "A100": "nvidia-tesla-a100",
    "A100-80GB": "nvidia-a100-80gb",
    "B200": "nvidia-b200",
    "H100": "nvidia-h100-80gb",
    "H100-MEGA": "nvidia-h100-mega-80gb",
    "H200": "nvidia-h200-141gb",
    "L4": "nvidia-l4",
    "P100": "nvidia-tesla-p100",
    "P4": "nvidia-tesla-p4",
    "T4": "nvidia-tesla-t4",
    "V100": "nvidia-tesla-v100",
}
"""Portable accelerator -> GKE's ``cloud.google.com/gke-accelerator`` value (GKE "Run GPUs in GKE
Standard node pools" names the A100 to B200 values; T4, V100, P100, P4 and L4 are Compute
Engine's accelerator-type names, which the label carries)."""

GKE_PORTABLE: dict[str, str] = {v: k for k, v in GKE_ACCELERATORS.items()}
"""GKE accelerator label value -> portable accelerator (derived)."""

DEFAULT_NODE_SELECTORS: dict[str, dict[str, str]] = {
    accelerator: {GKE_ACCELERATOR_LABEL: value} for accelerator, value in GKE_ACCELERATORS.items()
}
"""The ``node_selectors`` setting when none is given: GKE's accelerator label."""

OTHER_INSTANCE_GPUS: dict[str, tuple[str, int]] = {
    "g4dn.12xlarge": ("T4", 4), "g4dn.16xlarge": ("T4", 1), "g4dn.2xlarge": ("T4", 1), "g4dn.4xlarge": ("T4", 1),
    "g4dn.8xlarge": ("T4", 1), "g4dn.metal": ("T4", 8), "g4dn.xlarge": ("T4", 1),
    "g6.12xlarge": ("L4", 4), "g6.16xlarge": ("L4", 1), "g6.24xlarge": ("L4", 4), "g6.2xlarge": ("L4", 1),
    "g6.48xlarge": ("L4", 8), "g6.4xlarge": ("L4", 1), "g6.8xlarge": ("L4", 1), "g6.xlarge": ("L4", 1),
    "p3.16xlarge": ("V100", 8), "p3.2xlarge": ("V100", 1), "p3.8xlarge": ("V100", 4), "p3dn.24xlarge": ("V100", 8),
    "p4d.24xlarge": ("A100", 8), "p4de.24xlarge": ("A100-80GB", 8), "p5.48xlarge": ("H100", 8),
    "p5e.48xlarge": ("H200", 8), "p5en.48xlarge": ("H200", 8), "p6-b200.48xlarge": ("B200", 8),
    "Standard_ND96amsr_A100_v4": ("A100-80GB", 8), "Standard_ND96asr_v4": ("A100", 8),
    "Standard_ND96isr_H100_v5": ("H100", 8), "Standard_ND96isr_H200_v5": ("H200", 8),
}
"""AWS's GPU instances (EC2 accelerated computing tables; A10G and other models without a portable
name are left out) and Azure's ND InfiniBand sizes, as :func:`instance_gpus` reads them."""


@functools.cache
def instance_gpus() -> dict[str, tuple[str, int]]:
    """Machine type (a ``node.kubernetes.io/instance-type`` value) -> (portable accelerator, GPUs):
    Compute Engine's from omnidist's catalog, then :data:`OTHER_INSTANCE_GPUS`. Built on first use:
    reading the Compute Engine catalog costs a compile that never reads a node selector."""
    from omnidist_google.compute_engine import COMPUTE_ENGINE_GPU_MACHINES

    return {**{m.name: (m.accelerator, m.gpus) for m in COMPUTE_ENGINE_GPU_MACHINES if m.gpus}, **OTHER_INSTANCE_GPUS}

# --- TPUs on GKE (SPEC §13) ---------------------------------------------------------------------------

TPU_RESOURCE = "google.com/tpu"
"""The extended resource of GKE's TPU nodes: a pod asks for every chip of its TPU host."""

GKE_TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
GKE_TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
"""The node labels a TPU pod selects: which TPU, and the slice's topology (GKE "Deploy TPU
workloads": both are required for the pod to land on the slice's node pool)."""

GKE_TPU_ACCELERATORS: dict[str, str] = {
    "TPU-V4": "tpu-v4-podslice", "TPU-V5E": "tpu-v5-lite-podslice", "TPU-V5P": "tpu-v5p-slice",
    "TPU-V6E": "tpu-v6e-slice",
}
"""Portable TPU -> GKE's ``cloud.google.com/gke-tpu-accelerator`` value (the multi-host-capable
ones; GKE runs TPU VMs, so no v2 or v3)."""

GKE_TPU_PORTABLE: dict[str, str] = {
    **{v: k for k, v in GKE_TPU_ACCELERATORS.items()},
    "tpu-v5-lite-device": "TPU-V5E",
}
"""GKE TPU label value -> portable TPU (``tpu-v5-lite-device``: v5e's single-host node pools)."""

SPOT_NODE_SELECTOR: dict[str, str] = {"cloud.google.com/gke-spot": "true"}
"""The ``spot_node_selector`` setting's default: GKE's Spot VM node label."""

SPOT_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
)
"""The ``spot_tolerations`` setting's default: the taint GKE documents for Spot node pools."""

# --- states ----------------------------------------------------------------------------------------

CONDITION_STATES: dict[str, JobState] = {
    "Created": JobState.PENDING,
    "Failed": JobState.FAILED,
    "Restarting": JobState.RUNNING,
    "Running": JobState.RUNNING,
    "Succeeded": JobState.SUCCEEDED,
    "Suspended": JobState.PAUSED,
}
"""``status.conditions[].type`` (with status ``True``) -> portable state. A suspended job that
carries a Kueue queue label is waiting for admission: queued (see the client)."""

CONDITION_ORDER: tuple[str, ...] = ("Failed", "Succeeded", "Suspended", "Restarting", "Running", "Created")
"""Which true condition says the state when several are true: the first in this order."""



UNSCHEDULABLE = "Unschedulable"
"""The reason of a pod's ``PodScheduled=False`` condition when no node can take it ("0/6 nodes are
available: 6 Insufficient nvidia.com/gpu."): a placement watching the job moves on (capacity)."""

QUOTA_REFUSAL = lazy_pattern(r"exceeded quota", re.I)
"""How the API server refuses a create over a ``ResourceQuota`` (403 "exceeded quota: gpus, requested: …")."""


CONDITION_ENDINGS: tuple[tuple[re.Pattern[str], Ending], ...] = (
    (lazy_pattern(r"(?i)evicted"), Ending.PREEMPTION),
)
"""A failed job's condition (``reason message``) -> its ending: mpi-operator's ``MPIJobEvicted``."""

POD_ENDINGS: dict[str, Ending] = {
    "DeletionByPodGC": Ending.NODE_FAILURE,
    "DeletionByTaintManager": Ending.NODE_FAILURE,
    "Evicted": Ending.PREEMPTION,
    "EvictionByEvictionAPI": Ending.PREEMPTION,
    "PreemptionByScheduler": Ending.PREEMPTION,
    "TerminationByKubelet": Ending.PREEMPTION,
}
"""A pod's ``status.reason`` or ``DisruptionTarget`` condition reason -> how the job it failed
ended: taken back (a higher-priority pod, a drained or shut-down spot node, a kubelet eviction)
or lost with its node (the node gone or not ready)."""

SERVICE = "gke"
"""The price list: GKE Standard nodes (Compute Engine prices plus the cluster fee)."""

BILLING = Billing(
    prices="compute_engine", gpus_apart=True, fees=("cluster",),
    rule="GKE Standard nodes bill Compute Engine prices, plus the cluster management fee "
         "(GKE pricing page; the fee row names it)")
"""How it bills (its :attr:`Backend.billing <omnidist.kit.Backend.billing>`; the rows are its vendor kit's)."""

AKS_SERVICE = "aks"
"""The price list of a cluster on Azure (``cloud = "azure"``): AKS nodes."""

EKS_SERVICE = "eks"
"""The price list of a cluster on AWS (``cloud = "aws"``): EKS nodes."""

CLOUD_BILLING: dict[str, Billing] = {
    AKS_SERVICE: Billing(prices="azure_vm", rule="AKS nodes bill the Azure VM price; the cluster's own fee (AKS "
                                                 "Standard tier) is not in omnidist's sources and not included"),
    EKS_SERVICE: Billing(prices="ec2", rule="EKS nodes bill the EC2 price; the EKS cluster fee is not in omnidist's "
                                            "sources and not included"),
}
"""How a cluster on another cloud bills, by service (sorted)."""
