"""TPU jobs move between the backends that run them (SPEC §13): Vertex <-> GKE exactly (both run
TPU VMs), legacy AI Platform <-> Vertex reported ``changed`` (TPU Nodes vs TPU VMs), and the clouds
without TPUs refuse them naming the accelerator."""

from __future__ import annotations

import pytest

import omnidist
from omnidist.errors import UnsupportedFeatureError, ValidationError

VERTEX_V5E = {"displayName": "v5e", "jobSpec": {"workerPoolSpecs": [{
    "machineSpec": {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "4x4"}, "replicaCount": "1",
    "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/jax:1", "command": ["python", "train.py"]}}]}}
VERTEX_V3 = {"displayName": "v3", "jobSpec": {"workerPoolSpecs": [{
    "machineSpec": {"machineType": "cloud-tpu", "acceleratorType": "TPU_V3", "acceleratorCount": 8},
    "replicaCount": "1", "containerSpec": {"imageUri": "gcr.io/p/tf:2.11", "command": ["python", "t.py"]}}]}}


def changed(report) -> list[str]:
    return [e.field for e in report.entries if e.fidelity == "changed"]


def test_vertex_to_gke_and_back_is_exact(isolated):
    compiled, report = omnidist.migrate(VERTEX_V5E, source="vertex", target="kubernetes", framework="jax")
    specs = compiled.request["spec"]["pytorchReplicaSpecs"]
    assert (specs["Master"]["replicas"], specs["Worker"]["replicas"]) == (1, 3)
    assert changed(report) == [] and not report.breaks_strict
    back, report = omnidist.migrate(compiled.request, source="kubernetes", target="vertex")
    assert back.request["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] == VERTEX_V5E["jobSpec"][
        "workerPoolSpecs"][0]["machineSpec"]
    assert changed(report) == []


def test_vertex_to_legacy_is_changed_and_needs_the_tpu_runtime_version(isolated):
    with pytest.raises(ValidationError) as caught:
        omnidist.migrate(VERTEX_V3, source="vertex", target="ai_platform")
    assert caught.value.problems[0].path == "backends.ai_platform.tpu_tf_version"
    compiled, report = omnidist.migrate(VERTEX_V3, source="vertex", target="ai_platform",
                                        settings={"tpu_tf_version": "2.11"})
    ti = compiled.request["trainingInput"]
    assert (ti["workerType"], ti["workerConfig"]["acceleratorConfig"]) == ("cloud_tpu", {"count": 8, "type": "TPU_V3"})
    assert changed(report) == ["primary.accelerator"]
    (line,) = [e for e in report.entries if e.field == "primary.accelerator" and e.fidelity == "changed"]
    assert "vertex runs TPU VMs" in line.message and "ai_platform runs TPU Nodes" in line.message


@pytest.mark.parametrize("target", ["azure_ml", "sagemaker"])
def test_clouds_without_tpus_refuse_them_naming_the_accelerator(isolated, target):
    with pytest.raises(UnsupportedFeatureError) as caught:
        omnidist.migrate(VERTEX_V5E, source="vertex", target=target,
                         settings={"role_arn": "arn:aws:iam::123456789012:role/r"} if target == "sagemaker" else None)
    assert caught.value.subject == "accelerator TPU-V5E" and caught.value.exit_code == 3


def test_a_v5e_slice_cannot_go_to_legacy_ai_platform(isolated):
    with pytest.raises(UnsupportedFeatureError) as caught:
        omnidist.migrate(VERTEX_V5E, source="vertex", target="ai_platform", settings={"tpu_tf_version": "2.11"})
    assert caught.value.subject == "accelerator TPU-V5E" and "TPU v2 and v3 only" in caught.value.message
