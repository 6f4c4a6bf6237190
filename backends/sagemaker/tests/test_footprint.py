"""What a compiled SageMaker job runs on (``omnidist plan`` prices it as SageMaker training
instances in the ``region`` setting): one instance type split into the primary and workers,
instance groups per role, managed spot, a tuning job's trials at once."""

from __future__ import annotations

from omnidist.kit import DistributedJob, structure
from omnidist_sagemaker import SageMakerBackend, SageMakerSettings
from omnidist_sagemaker.testing import ROLE

BASE = {"name": "demo", "framework": "pytorch", "framework_version": "2.3", "command": ["python", "train.py"],
        "code": "s3://bucket/code.tar.gz"}


def footprint(data: dict, **settings):
    resolved = structure({"region": "eu-west-1", "role_arn": ROLE, **settings}, SageMakerSettings,
                         path="backends.sagemaker")
    backend = SageMakerBackend()
    return backend.footprint(backend.compile(DistributedJob.from_dict({**BASE, **data}), resolved), resolved)


def test_one_instance_type_is_the_primary_and_the_workers():
    found = footprint({"primary": {"accelerator": "A100:8"}, "workers": {"replicas": 3}, "spot": True},
                      checkpoint_s3_uri="s3://bucket/ckpt")
    assert found.service == "amazon_sagemaker" and found.region == "eu-west-1" and found.spot and found.parallel == 1
    assert [(p.role, p.replicas, p.machine, p.accelerator, p.count) for p in found.pools] == [
        ("primary", 1, "ml.p4d.24xlarge", "A100", 8), ("workers", 3, "ml.p4d.24xlarge", "A100", 8)]


def test_roles_on_different_types_are_priced_per_instance_group():
    found = footprint({"primary": {}, "workers": {"replicas": 2, "accelerator": "T4:1"}})
    assert found.machines == {"primary": "ml.m5.xlarge", "workers": "ml.g4dn.xlarge"}
    assert [p.replicas for p in found.pools] == [1, 2] and found.accelerators == "T4:2"


def test_a_tuning_job_is_its_trial_times_its_trials_at_once():
    found = footprint({"primary": {"accelerator": "T4:1"}, "tuning": {
        "metric": {"name": "acc", "goal": "maximize"}, "parameters": {"lr": {"type": "double", "min": 0.1, "max": 1}},
        "algorithm": "random", "max_trials": 8, "parallel_trials": 4}})
    assert found.machines == {"primary": "ml.g4dn.xlarge"} and found.parallel == 4 and not found.spot


def test_a_named_instance_type_is_priced_as_named():
    found = footprint({"primary": {}}, instance_types={"primary": "ml.trn1.32xlarge"})
    (pool,) = found.pools
    assert pool.machine == "ml.trn1.32xlarge" and pool.replicas == 1
