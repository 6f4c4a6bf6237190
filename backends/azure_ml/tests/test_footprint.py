"""What a compiled Azure ML job runs on (``omnidist plan`` prices it as Azure VMs in the
``region`` setting): every node the same VM size, a cluster's assumed size said so, a sweep's
concurrent trials, the spot tier."""

from __future__ import annotations

from omnidist.kit import DistributedJob, structure
from omnidist_azure_ml import AzureMLBackend, AzureMLSettings

BASE = {"name": "demo", "framework": "pytorch", "image": "img:1", "command": ["python", "train.py"]}


def footprint(data: dict, **settings):
    resolved = structure({"region": "westeurope", **settings}, AzureMLSettings, path="backends.azure_ml")
    backend = AzureMLBackend()
    return backend.footprint(backend.compile(DistributedJob.from_dict({**BASE, **data}), resolved), resolved)


def test_every_node_is_the_job_vm_size_with_its_gpus():
    found = footprint({"primary": {"accelerator": "A100-80GB:1"}, "workers": {"replicas": 3}, "spot": True})
    assert found.service == "azure_machine_learning" and found.region == "westeurope" and found.spot
    assert [(p.role, p.replicas, p.machine, p.accelerator, p.count, p.assumed) for p in found.pools] == [
        ("primary", 1, "Standard_NC24ads_A100_v4", "A100-80GB", 1, ""),
        ("workers", 3, "Standard_NC24ads_A100_v4", "A100-80GB", 1, "")]


def test_a_cluster_job_is_priced_as_the_size_omnidist_assumed_and_says_so():
    found = footprint({"primary": {"accelerator": "T4:1"}}, compute="gpu-cluster")
    (pool,) = found.pools
    assert pool.machine == "Standard_NC4as_T4_v3" and "compute cluster's VM size is not in the request" in pool.assumed


def test_a_named_size_is_priced_as_named_and_a_sweep_as_its_concurrent_trials():
    found = footprint({"primary": {"accelerator": "V100:8"}, "tuning": {
        "metric": {"name": "acc", "goal": "maximize"}, "parameters": {"lr": {"type": "double", "min": 0.1, "max": 1}},
        "algorithm": "random", "max_trials": 8, "parallel_trials": 2}}, instance_type="standard_nd40rs_v2")
    assert found.machines == {"primary": "Standard_ND40rs_v2"} and found.parallel == 2
    assert found.accelerators == "V100:16"


def test_the_region_setting_is_never_sent():
    backend = AzureMLBackend()
    settings = structure({"region": "eastus"}, AzureMLSettings, path="backends.azure_ml")
    compiled = backend.compile(DistributedJob.from_dict({**BASE, "primary": {}}), settings)
    assert "eastus" not in str(compiled.request)
