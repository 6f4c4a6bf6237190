"""What a compiled Kubeflow job runs on (``omnidist plan`` prices it as GKE nodes in the
``gke_region`` setting): one node per pod, the machine its labels name or the smallest Compute
Engine machine that holds it, MPIJob workers without the launcher, spot node pools."""

from __future__ import annotations

from omnidist.kit import DistributedJob, structure
from omnidist_kubernetes import KubernetesBackend
from omnidist_kubernetes.settings import KubernetesSettings

BASE = {"name": "demo", "framework": "pytorch", "image": "img:1", "command": ["python", "train.py"]}


def footprint(data: dict, **settings):
    resolved = structure({"gke_region": "us-east4", **settings}, KubernetesSettings, path="backends.kubernetes")
    backend = KubernetesBackend()
    return backend.footprint(backend.compile(DistributedJob.from_dict({**BASE, **data}), resolved), resolved)


def test_each_pod_is_the_smallest_compute_engine_node_that_holds_it():
    found = footprint({"primary": {"accelerator": "H100:8"}, "workers": {"replicas": 2}, "spot": True})
    assert found.service == "gke" and found.region == "us-east4" and found.spot
    assert [(p.role, p.replicas, p.machine, p.accelerator, p.count) for p in found.pools] == [
        ("primary", 1, "a3-highgpu-8g", "H100", 8), ("workers", 2, "a3-highgpu-8g", "H100", 8)]
    assert "smallest Compute Engine machine" in found.pools[0].assumed


def test_a_node_label_naming_the_machine_wins():
    found = footprint({"primary": {"accelerator": "T4:1"}},
                      node_selector={"node.kubernetes.io/instance-type": "n1-standard-16"})
    (pool,) = found.pools
    assert (pool.machine, pool.assumed) == ("n1-standard-16", "")


def test_an_mpijob_prices_its_workers_not_its_launcher():
    found = footprint({"framework": "horovod", "primary": {"accelerator": "V100:4"}, "workers": {"replicas": 1}})
    assert [(p.role, p.replicas, p.count) for p in found.pools] == [("primary", 1, 4), ("workers", 1, 4)]
    assert found.accelerators == "V100:8", "the launcher pod (no GPUs, no node of its own) is not priced"


def test_without_gke_region_the_region_is_unknown():
    backend = KubernetesBackend()
    assert backend.region(KubernetesSettings()) is None
    assert footprint({"primary": {}}, gke_region=None).region is None


def test_region_and_cloud_price_the_nodes_as_that_clouds_vms():
    """SPEC §12a: a kubernetes profile names its cluster's region and cloud (gke_region stays an alias)."""
    backend = KubernetesBackend()
    on_aws = footprint({"primary": {"accelerator": "A100:8"}}, gke_region=None, region="us-east-1", cloud="aws",
                       node_selector={"node.kubernetes.io/instance-type": "p4d.24xlarge"})
    assert (on_aws.service, on_aws.region, on_aws.pools[0].machine) == ("eks", "us-east-1", "p4d.24xlarge")
    on_azure = footprint({"primary": {"accelerator": "T4:1"}}, gke_region=None, region="eastus", cloud="azure")
    assert on_azure.service == "aks" and "set nodeSelector node.kubernetes.io/instance-type" in (
        on_azure.pools[0].assumed)
    aliased = structure({"gke_region": "us-central1"}, KubernetesSettings, path="backends.kubernetes")
    assert backend.region(aliased) == "us-central1" and aliased.cloud == "gcp"
    assert backend.pricing_region(structure({"cloud": "aws"}, KubernetesSettings, path="k")) == "us-east-1"
