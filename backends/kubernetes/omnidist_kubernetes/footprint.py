"""What a compiled Kubeflow job runs on, read from its own manifest (for ``omnidist plan`` and the
job ledger), priced as the nodes of a cluster on the ``cloud`` setting's VMs in the ``region``
setting (GKE Standard nodes by default): each replica type's pods, one pod per node, on the
machine its node labels name (``node.kubernetes.io/instance-type``) or else, on GKE, the smallest
Compute Engine machine that holds the pod (its GPUs, CPU and memory requests); a TPU host's pod as
the TPU VM machine with its chips (GKE's TPU labels and ``google.com/tpu``). An MPIJob's launcher
pod is not priced (it shares a node). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from omnidist.kit import Accelerator, Footprint, Pool, RoleName, smallest_fit
from omnidist_google.compute_engine import COMPUTE_ENGINE
from omnidist_google.tpu import TPU_HOSTS
from omnidist_k8s.nodes import INSTANCE_TYPE_LABELS
from omnidist_kubernetes.pods import NativePod, native_to_pod
from omnidist_kubernetes.settings import KubernetesSettings
from omnidist_kubernetes.tables import (
    AKS_SERVICE,
    EKS_SERVICE,
    GKE_TPU_ACCELERATOR_LABEL,
    GKE_TPU_PORTABLE,
    GKE_TPU_TOPOLOGY_LABEL,
    KINDS,
    LAUNCHER,
    REPLICA_ROLES,
    SERVICE,
)

SERVICES = {"aws": EKS_SERVICE, "azure": AKS_SERVICE, "gcp": SERVICE}
"""The ``cloud`` setting -> the service its nodes are priced as."""

LARGEST_REGION = {"aws": "us-east-1", "azure": "eastus", "gcp": "us-central1"}
"""The ``cloud`` setting -> the region a plan prices in when the settings name none."""


def _machine(pod: NativePod, selector: Mapping[str, str], cloud: str = "gcp") -> tuple[Optional[str], str]:
    """The node's machine type, and why it is an assumption (``""``: the labels name it)."""
    named = next((selector[label] for label in INSTANCE_TYPE_LABELS if label in selector), None)
    if named:
        return named, ""
    if cloud != "gcp":  # omnidist knows no machine list of that cloud to fit the pod to
        return f"{cloud}-node", (f"no node instance type named: set nodeSelector {INSTANCE_TYPE_LABELS[0]} to the "
                                 f"{cloud} VM size the nodes are, and plan prices it")
    if pod.tpus:
        return _tpu_host(pod)
    wanted = Accelerator(type=pod.accelerator, count=pod.gpus) if pod.accelerator and pod.gpus else None
    machine = smallest_fit(COMPUTE_ENGINE, wanted, cpus=pod.cpus, memory_gb=pod.memory_gb)
    if machine is None:
        return None, ""
    return machine.name, f"priced as a GKE node {machine.name}, the smallest Compute Engine machine that holds the pod"


def _tpu_host(pod: NativePod) -> tuple[Optional[str], str]:
    """The TPU VM machine of a TPU host's pod: the one of its TPU with as many chips, in its topology."""
    kind = GKE_TPU_PORTABLE.get(pod.tpu_labels.get(GKE_TPU_ACCELERATOR_LABEL, ""))
    topology = pod.tpu_labels.get(GKE_TPU_TOPOLOGY_LABEL)
    host = next((h for h in TPU_HOSTS if h.accelerator == kind and h.chips == pod.tpus
                 and (topology is None or topology in h.topologies)), None)
    return (host.machine_type, "") if host else (None, "")


def _pools(rtype: str, role: Optional[RoleName], replicas: int, pod: NativePod, machine: str,
           assumed: str) -> list[Pool]:
    tpu = GKE_TPU_PORTABLE.get(pod.tpu_labels.get(GKE_TPU_ACCELERATOR_LABEL, "")) if pod.tpus else None
    accelerator = tpu or (pod.accelerator if pod.gpus else None)
    per_node = pod.tpus if tpu else pod.gpus
    make = lambda name, count: Pool(role=name, replicas=count, machine=machine, accelerator=accelerator,  # noqa: E731
                                    count=per_node if accelerator else 0, assumed=assumed)
    if role is None:  # an MPIJob's Worker pods: the primary and the workers
        return [make("primary", 1)] + ([make("workers", replicas - 1)] if replicas > 1 else [])
    return [make(role.value, replicas)]


def footprint(request: Mapping[str, Any], settings: KubernetesSettings) -> Footprint:
    """One pool per replica type (the MPIJob's launcher left out)."""
    kind = KINDS[request["kind"]]
    pools: list[Pool] = []
    spot = True
    for rtype, body in (request.get("spec") or {}).get(kind.replica_specs, {}).items():
        replicas = int(body.get("replicas", 1))
        if rtype == LAUNCHER or replicas < 1:
            continue
        pod = native_to_pod(body.get("template"), kind, rtype, [])
        selector = (body["template"].get("spec") or {}).get("nodeSelector") or {}
        machine, assumed = _machine(pod, selector, settings.cloud)
        if machine is None:
            continue
        spot = spot and pod.spot
        pools += _pools(rtype, REPLICA_ROLES.get(kind.kind, {}).get(rtype), replicas, pod, machine, assumed)
    return Footprint(service=SERVICES[settings.cloud], region=settings.cluster_region, pools=pools,
                     spot=spot and bool(pools))
