"""What a compiled legacy AI Platform job runs on (``omnidist plan`` prices it as Vertex AI
training): each ``trainingInput`` slot, legacy machine names and scale tiers as the Compute Engine
machines they stand for, reducers in the parameter-server slot, tuning trials."""

from __future__ import annotations

from omnidist.kit import DistributedJob, structure
from omnidist_ai_platform import AIPlatformBackend, AIPlatformSettings
from omnidist_ai_platform.footprint import footprint as read

BASE = {"name": "demo", "framework": "tensorflow", "image": "gcr.io/p/t:1", "command": ["python"]}
SETTINGS = structure({"region": "europe-west1"}, AIPlatformSettings, path="backends.ai_platform")


def compiled_footprint(data: dict):
    backend = AIPlatformBackend()
    return backend.footprint(backend.compile(DistributedJob.from_dict({**BASE, **data}), SETTINGS), SETTINGS)


def test_each_slot_is_a_pool_with_its_gpus():
    found = compiled_footprint({"primary": {"accelerator": "V100:4", "cpus": 16}, "workers": {"replicas": 2},
                                "parameter_servers": {"replicas": 3, "cpus": 16}})
    assert found.service == "ai_platform_training" and found.region == "europe-west1"
    assert [(p.role, p.replicas, p.machine, p.accelerator, p.count) for p in found.pools] == [
        ("primary", 1, "n1-highcpu-16", "V100", 4), ("workers", 2, "n1-highcpu-16", "V100", 4),
        ("parameter_servers", 3, "n1-highcpu-16", None, 0)]


def test_reducers_in_the_parameter_server_slot_are_reduction_servers():
    found = compiled_footprint({"framework": "pytorch", "primary": {"accelerator": "V100:8"}, "workers": {"replicas": 1},
                                "reduction_servers": {"replicas": 2}})
    assert found.machines["reduction_servers"] == "n1-highcpu-16"


def test_legacy_machine_names_and_scale_tiers_count_as_what_they_ran():
    request = {"trainingInput": {"scaleTier": "CUSTOM", "region": "us-east1", "masterType": "complex_model_m_v100",
                                 "workerType": "n1-standard-8", "workerCount": 2,
                                 "workerConfig": {"acceleratorConfig": {"count": 1, "type": "NVIDIA_TESLA_T4"}},
                                 "hyperparameters": {"maxParallelTrials": 3}}}
    found = read(request, SETTINGS)
    assert [(p.role, p.machine, p.accelerator, p.count) for p in found.pools] == [
        ("primary", "n1-standard-16", "V100", 4), ("workers", "n1-standard-8", "T4", 1)]
    assert found.region == "us-east1" and found.parallel == 3 and found.accelerators == "V100:12+T4:6"
    tier = read({"trainingInput": {"scaleTier": "STANDARD_1"}}, SETTINGS)
    assert [(p.role, p.replicas, p.machine) for p in tier.pools] == [
        ("primary", 1, "n1-highcpu-8"), ("workers", 4, "n1-highcpu-8"), ("parameter_servers", 3, "n1-standard-4")]
    gpu = read({"trainingInput": {"scaleTier": "BASIC_GPU"}}, SETTINGS)
    assert [(p.machine, p.accelerator, p.count) for p in gpu.pools] == [("n1-standard-8", "K80", 1)]
