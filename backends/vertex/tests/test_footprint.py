"""What a compiled Vertex job runs on (``omnidist plan`` prices it): each pool's machine, GPUs and
replicas read from the request, reducers told from parameter servers, spot, tuning trials."""

from __future__ import annotations

from omnidist.kit import DistributedJob, structure
from omnidist_vertex import VertexBackend, VertexSettings

BASE = {"name": "demo", "framework": "pytorch", "image": "us-docker.pkg.dev/p/r/trainer:1", "command": ["python"]}


def footprint(data: dict, **settings):
    resolved = structure({"region": "europe-west4", **settings}, VertexSettings, path="backends.vertex")
    backend = VertexBackend()
    return backend.footprint(backend.compile(DistributedJob.from_dict({**BASE, **data}), resolved), resolved)


def test_each_pool_is_priced_as_its_machine_with_its_gpus():
    found = footprint({"primary": {"accelerator": "A100:8"}, "workers": {"replicas": 3},
                       "reduction_servers": {"replicas": 4}, "spot": True})
    assert found.service == "vertex_ai" and found.region == "europe-west4" and found.spot
    assert [(p.role, p.replicas, p.machine, p.accelerator, p.count) for p in found.pools] == [
        ("primary", 1, "a2-highgpu-8g", "A100", 8), ("workers", 3, "a2-highgpu-8g", "A100", 8),
        ("reduction_servers", 4, "n1-highcpu-16", None, 0)]
    assert found.accelerators == "A100:32"


def test_parameter_servers_and_evaluators_are_their_own_machines():
    found = footprint({"framework": "tensorflow", "primary": {"accelerator": "V100:1"},
                       "parameter_servers": {"replicas": 2, "cpus": 8}, "evaluators": {"replicas": 1}})
    assert found.machines == {"primary": "n1-standard-4", "parameter_servers": "n1-standard-8",
                              "evaluators": "n1-standard-4"}
    assert found.accelerators == "V100:2"


def test_a_tuning_job_runs_its_parallel_trials_at_once():
    found = footprint({"primary": {"accelerator": "T4:1"}, "tuning": {
        "metric": {"name": "acc", "goal": "maximize"}, "parameters": {"lr": {"type": "double", "min": 0.1, "max": 1}},
        "max_trials": 8, "parallel_trials": 4}})
    assert found.parallel == 4 and found.accelerators == "T4:4"
