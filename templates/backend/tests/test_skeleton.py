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


# --- the platform module (optional): what the cloud's containers see ----------------------------

DOCUMENTED = {"SKELETON_JOB_ID": "j-42", "SKELETON_POOL": "workers", "SKELETON_REPLICA": "1",
              "SKELETON_WORKERS": "2", "SKELETON_PRIMARY": "ddp-primary-0:29400"}
"""A second worker's variables, as the cloud's documentation lists them."""


def test_the_platform_reads_the_documented_variables():
    from omnidist.runtime import context, platforms
    from omnidist_skeleton import platform

    assert platforms.named("skeleton") is platform  # found through its entry point
    ctx = context(DOCUMENTED, argv=[])
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes) == ("skeleton", "worker", 1, 2, 3)
    assert (ctx.master_addr, ctx.master_port, ctx.source) == ("ddp-primary-0", 29400, "SKELETON_POOL")
    primary = context({**DOCUMENTED, "SKELETON_POOL": "primary", "SKELETON_REPLICA": "0"}, argv=[])
    assert (primary.role, primary.node_rank, primary.rank) == ("primary", 0, 0)


def test_a_malformed_platform_variable_is_named():
    from omnidist.runtime import RuntimeEnvError, context

    with pytest.raises(RuntimeEnvError, match="SKELETON_POOL"):
        context({**DOCUMENTED, "SKELETON_POOL": "evaluators"}, argv=[])
    with pytest.raises(RuntimeEnvError, match="SKELETON_PRIMARY"):
        context({**DOCUMENTED, "SKELETON_PRIMARY": "no-port"}, argv=[])


def test_the_emulation_gives_each_replica_what_the_platform_reads():
    import omnidist
    from omnidist.runtime import context

    job = job_from_dict({**JOB, "backends": {"local": {"emulate": "skeleton"}}})
    replicas = omnidist.compile(job, backend="local").request["replicas"]
    found = [context(r["env"], argv=[]) for r in replicas]
    assert [(c.platform, c.role, c.index, c.node_rank, c.num_nodes) for c in found] == [
        ("skeleton", "primary", 0, 0, 3), ("skeleton", "worker", 0, 1, 3), ("skeleton", "worker", 1, 2, 3)]
    assert len({(c.master_addr, c.master_port) for c in found}) == 1
