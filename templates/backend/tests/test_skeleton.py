"""The backend's own checks; the shared suites (tests/conformance, the harness-driven ones) cover
the contract, faults, secrets and fuzzing once it is installed."""

from __future__ import annotations

import pytest

from omnidist.kit import UnsupportedFeatureError, ValidationError, job_from_dict
from omnidist_skeleton import SkeletonBackend, SkeletonSettings

JOB = {"name": "ddp", "framework": "pytorch", "image": "registry.example/ddp:1", "command": ["python", "train.py"],
       "env": {"LR": "0.1"}, "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 2}, "timeout": 3600}


def test_a_job_compiles_to_one_pool_per_role_and_reads_back():
    backend = SkeletonBackend()
    compiled = backend.compile(job_from_dict(JOB), SkeletonSettings())
    pools = compiled.request["pools"]
    assert [(p["role"], p["replicas"]) for p in pools] == [("primary", 1), ("workers", 2)]
    assert pools[0]["accelerator"] == {"type": "nvidia-t4", "count": 1} and pools[0]["env"]["LR"] == "0.1"
    assert compiled.request["timeoutSeconds"] == 3600
    job, _ = backend.import_with_notes(compiled.request)
    assert job.env == {"LR": "0.1"} and job.workers.replicas == 2 and job.primary.accelerator.type == "T4"
    assert backend.compile(job, SkeletonSettings()).request == compiled.request


def test_what_the_cloud_lacks_is_refused_with_its_words():
    with pytest.raises(UnsupportedFeatureError, match="sells no spot capacity"):
        SkeletonBackend().compile(job_from_dict({**JOB, "spot": True}), SkeletonSettings())


def test_a_malformed_request_names_the_field():
    with pytest.raises(ValidationError, match=r"pools\[0\]\.replicas"):
        SkeletonBackend().import_native({"displayName": "a", "pools": [{"role": "primary", "image": "i",
                                                                        "replicas": "two"}]})
