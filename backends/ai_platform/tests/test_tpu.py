"""TPUs on legacy AI Platform (SPEC §13): TPU Nodes. The master runs the program, one ``cloud_tpu``
worker is the TPU (``acceleratorConfig`` TPU_V2/TPU_V3 or their Pod slices, ``tpuTfVersion`` for a
custom container); every body is checked against the ml v1 discovery document, and read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnidist.kit import DistributedJob, Feature, UnsupportedFeatureError, ValidationError, structure
from omnidist_ai_platform import AIPlatformBackend, AIPlatformSettings
from omnidist_ai_platform.testing import schema_problems

BACKEND = AIPlatformBackend()
BASE = {"name": "tpu-job", "framework": "tensorflow", "image": "gcr.io/p/tf:2.11",
        "command": ["python", "-m", "trainer.task"]}
CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "ai_platform"


def compile_checked(primary: dict, extra: dict | None = None, **settings) -> dict:
    job = DistributedJob.from_dict({**BASE, "primary": primary, **(extra or {})})
    body = BACKEND.compile(job, structure(settings, AIPlatformSettings, path="backends.ai_platform")).request
    assert schema_problems(body) == []
    return body["trainingInput"]


@pytest.mark.parametrize("accelerator, native", [
    ("TPU-V2:8", {"count": 8, "type": "TPU_V2"}),
    ("TPU-V3:8", {"count": 8, "type": "TPU_V3"}),
    ("TPU-V3:32", {"count": 32, "type": "TPU_V3_POD"}),
    ("TPU-V2:512", {"count": 512, "type": "TPU_V2_POD"}),
])
def test_a_tpu_is_a_cloud_tpu_worker_beside_the_master(accelerator, native):
    ti = compile_checked({"accelerator": accelerator}, tpu_tf_version="2.11")
    assert ti["workerType"] == "cloud_tpu" and ti["workerCount"] == 1
    assert ti["workerConfig"] == {"acceleratorConfig": native, "tpuTfVersion": "2.11"}
    assert "acceleratorConfig" not in ti["masterConfig"] and ti["masterConfig"]["imageUri"] == BASE["image"]
    assert ti["masterType"] == "n1-highmem-2", "the master is a CPU machine: it runs the program"


def test_a_custom_container_needs_its_tpu_tf_version():
    with pytest.raises(ValidationError) as caught:
        compile_checked({"accelerator": "TPU-V2:8"})
    assert caught.value.problems[0].path == "backends.ai_platform.tpu_tf_version"


def test_a_python_package_on_a_runtime_version_needs_none():
    job = DistributedJob.from_dict({"name": "tpu-pkg", "framework": "tensorflow", "primary": {"accelerator": "TPU-V3:8"},
                                    "backends": {}})
    settings = AIPlatformSettings(runtime_version="2.11", python_module="trainer.task", package_uris=("gs://b/p.tgz",))
    ti = BACKEND.compile(job, settings).request["trainingInput"]
    assert ti["workerConfig"] == {"acceleratorConfig": {"count": 8, "type": "TPU_V3"}}


@pytest.mark.parametrize("accelerator", ["TPU-V5E:16", "TPU-V6E:1"])
def test_tpu_vms_are_exit_3_naming_the_accelerator(accelerator):
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_checked({"accelerator": accelerator}, tpu_tf_version="2.11")
    assert caught.value.subject == f"accelerator {accelerator.split(':')[0]}" and caught.value.exit_code == 3
    assert "TPU v2 and v3 only" in caught.value.message


@pytest.mark.parametrize("extra, subject", [
    ({"workers": {"replicas": 1}}, "workers"),
    ({"parameter_servers": {"replicas": 2}}, "parameter_servers"),
    ({"evaluators": {"replicas": 1, "accelerator": "none"}}, "evaluators"),
])
def test_roles_beside_the_tpu_are_exit_3_naming_the_role(extra, subject):
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_checked({"accelerator": "TPU-V2:8"}, extra, tpu_tf_version="2.11")
    assert caught.value.subject == subject and "cloud_tpu worker beside the master" in caught.value.message


def test_basic_tpu_is_the_tier_with_its_one_tpu():
    ti = compile_checked({"accelerator": "TPU-V2:8"}, scale_tier="BASIC_TPU")
    assert ti["scaleTier"] == "BASIC_TPU" and "workerType" not in ti and "acceleratorConfig" not in ti["masterConfig"]
    job, notes = BACKEND.import_with_notes({"jobId": "tpu_job", "trainingInput": {"region": "us-central1", **ti}})
    assert str(job.primary.accelerator) == "TPU-V2:8" and job.backends["ai_platform"]["scale_tier"] == "BASIC_TPU"
    assert any(n.field == "scaleTier" and "BASIC_TPU" in n.message for n in notes)
    with pytest.raises(ValidationError, match="BASIC_TPU runs one master and one TPU-V2:8"):
        compile_checked({"accelerator": "TPU-V3:8"}, scale_tier="BASIC_TPU")


@pytest.mark.parametrize("primary, settings", [
    ({"accelerator": "TPU-V3:8"}, {"tpu_tf_version": "2.11"}),
    ({"accelerator": "TPU-V2:32", "cpus": 16}, {"tpu_tf_version": "1.15", "machine_types": {"primary": "n1-highcpu-16"}}),
])
def test_compile_then_import_gives_the_body_back(primary, settings):
    job = DistributedJob.from_dict({**BASE, "primary": primary, "backends": {"ai_platform": settings}})
    body = BACKEND.compile(job, structure(settings, AIPlatformSettings, path="backends.ai_platform")).request
    back, _ = BACKEND.import_with_notes(body)
    assert str(back.primary.accelerator) == primary["accelerator"] and back.workers is None
    assert back.framework.value == "tensorflow", "a TPU worker's tpuTfVersion says TensorFlow"
    again = BACKEND.compile(back, structure(back.backends["ai_platform"], AIPlatformSettings,
                                            path="backends.ai_platform")).request
    assert again == body


def test_a_tpu_master_imports_as_the_primary_tpu():
    job, notes = BACKEND.import_with_notes({"trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "cloud_tpu", "masterConfig": {
            "imageUri": "i", "acceleratorConfig": {"type": "TPU_V3", "count": 8}, "tpuTfVersion": "2.4"}}})
    assert str(job.primary.accelerator) == "TPU-V3:8" and job.backends["ai_platform"]["tpu_tf_version"] == "2.4"
    assert any(n.field == "trainingInput.masterType" for n in notes)


@pytest.mark.skipif(not (CORPUS / "structured-cloud-tpu-worker.yaml").is_file(), reason="the shared corpus is absent")
def test_the_corpus_tpu_worker_imports_as_a_tpu_v2_device():
    job, notes = BACKEND.import_with_notes(structure_yaml(CORPUS / "structured-cloud-tpu-worker.yaml"))
    assert str(job.primary.accelerator) == "TPU-V2:8" and job.workers is None
    assert job.backends["ai_platform"]["machine_types"] == {"primary": "complex_model_m"}
    assert any("no acceleratorConfig" in n.message for n in notes)


def structure_yaml(path: Path) -> dict:
    from omnidist.kit import parse_yaml

    return parse_yaml(path.read_text(), source=str(path))


def test_the_refusals_name_features_migrate_can_give_up():
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_checked({"accelerator": "TPU-V2:8"}, {"evaluators": {"replicas": 1, "accelerator": "none"}},
                        tpu_tf_version="2.11")
    assert caught.value.feature is Feature.EVALUATORS


def test_the_footprint_is_the_master_and_its_tpu():
    job = DistributedJob.from_dict({**BASE, "primary": {"accelerator": "TPU-V3:32"}})
    compiled = BACKEND.compile(job, AIPlatformSettings(tpu_tf_version="2.11"))
    found = BACKEND.footprint(compiled, AIPlatformSettings())
    assert [(p.role, p.replicas, p.machine, p.accelerator, p.count) for p in found.pools] == [
        ("primary", 1, "n1-highmem-2", None, 0), ("tpu", 4, "cloud-tpu", "TPU-V3", 8)]
    assert found.accelerators == "TPU-V3:32"


def test_the_gcloud_command_line_of_a_tpu_job_imports():
    """gcloud's own flags: a cloud_tpu worker, its accelerator, and --tpu-tf-version (workerConfig's)."""
    import shlex

    from omnidist.kit import CommandLine
    from omnidist_ai_platform import gcloud

    line = ("gcloud beta ai-platform jobs submit training tpu_job --region us-central1 --scale-tier custom "
            "--master-image-uri gcr.io/p/t:1 --master-machine-type n1-highcpu-16 --worker-machine-type cloud_tpu "
            "--worker-count 1 --worker-accelerator type=tpu-v3,count=8 --tpu-tf-version=2.11")
    body = gcloud.command_to_request(CommandLine(argv=tuple(shlex.split(line))))
    assert body["trainingInput"]["workerConfig"] == {"acceleratorConfig": {"type": "TPU_V3", "count": "8"},
                                                     "tpuTfVersion": "2.11"}
    job, _ = BACKEND.import_with_notes(body)
    assert str(job.primary.accelerator) == "TPU-V3:8" and job.backends["ai_platform"]["tpu_tf_version"] == "2.11"


def test_a_v5p_slice_is_refused_pointing_at_the_backend_that_runs_it():
    import omnidist

    job = DistributedJob.from_dict({"name": "t", "framework": "jax", "image": "i", "command": ["python", "t.py"],
                                    "primary": {"accelerator": "TPU-V5P:16"}})
    with pytest.raises(UnsupportedFeatureError) as caught:
        omnidist.compile(job, backend="ai_platform")
    assert caught.value.subject == "accelerator TPU-V5P" and "kubernetes" in caught.value.hint
    assert "vertex" not in caught.value.hint, "Vertex does not run v5p"
