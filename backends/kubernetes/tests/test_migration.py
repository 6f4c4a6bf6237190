"""Migration to and from Kubernetes: the corpus's real manifests to the three clouds (each result
checked by that cloud's SDK), the clouds' documentation examples to Kubernetes (each result
checked like a cluster would), and the reports in between."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import omnidist
from omnidist.kit import UnsupportedFeatureError
from omnidist.migration import StrictMigrationError
from omnidist.testing.cli import run_cli
from omnidist_kubernetes.testing import check_manifest, compile_job

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT.parent / "shared" / "corpus" / "kubernetes"
INPUTS = ROOT / "tests" / "migration" / "golden" / "inputs"
"""The clouds' documentation examples the core's migration goldens start from (read in place)."""
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the checkout")

VALID = ["fmnist-tfjob-spec-cleanpodpolicy.yaml", "kueue-tfjob-ps-worker.yaml", "mnist-gke-t4-pytorchjob.yaml",
         "nccl-deadlock-two-pytorchjobs-efa.yaml", "nccl-efa-mpijob-p5.yaml", "qwen-sft-a40-envfrom.yaml",
         "scorehive-mpijob-master-replica.yaml"]

REFUSED = {
    ("kueue-tfjob-ps-worker.yaml", "azure_ml"): "command",
    ("mnist-gke-t4-pytorchjob.yaml", "azure_ml"): "command",
    ("nccl-deadlock-two-pytorchjobs-efa.yaml", "ai_platform"): "accelerator H100",
    ("nccl-deadlock-two-pytorchjobs-efa.yaml", "azure_ml"): "command",
    **{(mpijob, target): "processes_per_node" for mpijob in ("nccl-efa-mpijob-p5.yaml",
                                                            "scorehive-mpijob-master-replica.yaml")
       for target in ("vertex", "ai_platform")},
}
"""(file, target) -> the feature the target refuses: the job runs its image's ENTRYPOINT (Azure ML
always runs a command), needs a GPU legacy AI Platform never had, or runs several MPI ranks per
node, which only a platform with an MPI launcher starts (SPEC §10)."""

TARGETS = ("vertex", "ai_platform", "azure_ml")


def documents(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def check_with_sdk(target: str, request: dict[str, Any], tmp_path: Path) -> None:
    """Vertex: the SDK's ``CustomJob`` parses it and prints it back unchanged; legacy: only fields
    of the ml v1 discovery document; Azure ML: ``azure.ai.ml.load_job`` accepts the file."""
    if target == "vertex":
        aiplatform_v1 = pytest.importorskip("google.cloud.aiplatform_v1")
        message = aiplatform_v1.CustomJob.from_json(json.dumps(request))
        back = aiplatform_v1.CustomJob.to_json(message, use_integers_for_enums=False,
                                                including_default_value_fields=False,
                                                always_print_fields_with_no_presence=False)
        assert json.loads(back) == request
    elif target == "ai_platform":
        testing = pytest.importorskip("omnidist_ai_platform.testing")
        assert testing.schema_problems(request) == []
    else:
        load_job = pytest.importorskip("azure.ai.ml").load_job
        path = tmp_path / "job.yml"
        path.write_text(omnidist.kit.dump_yaml(request))
        assert load_job(path)._to_job()._to_rest_object().as_dict()["properties"]["command"]


@needs_corpus
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", VALID)
def test_corpus_manifests_migrate_to_every_cloud(name, target, tmp_path):
    pytest.importorskip(f"omnidist_{target}")
    native = documents(CORPUS / name)
    if (name, target) in REFUSED:
        with pytest.raises(UnsupportedFeatureError) as caught:
            omnidist.migrate(native, source="kubernetes", target=target)
        assert caught.value.subject == REFUSED[(name, target)] and caught.value.exit_code == 3
        return
    compiled, report = omnidist.migrate(native, source="kubernetes", target=target)
    check_with_sdk(target, compiled.request, tmp_path)
    assert report.source == "kubernetes" and report.target == target


@needs_corpus
def test_what_cannot_move_is_in_the_report_and_strict_refuses_it():
    native = documents(CORPUS / "mnist-gke-t4-pytorchjob.yaml")
    compiled, report = omnidist.migrate(native, source="kubernetes", target="vertex")
    fields = {e.field: e.fidelity.value for e in report.entries}
    assert fields["spec.pytorchReplicaSpecs.Master.template.spec.volumes"] == "dropped"
    assert fields["backends.kubernetes.namespace"] == "hint"
    pool = compiled.request["jobSpec"]["workerPoolSpecs"][0]
    assert pool["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_T4" and "command" not in pool["containerSpec"]
    with pytest.raises(StrictMigrationError):
        omnidist.migrate(native, source="kubernetes", target="vertex", strict=True)


CLOUD_EXAMPLES = {
    "ai_platform_doc_example.yaml": ("TFJob", {}),
    "ai_platform_doc_example_command.yaml": ("TFJob", {}),
    "ai_platform_python_package.json": ("TFJob", {"image": "gcr.io/my-project/census:1"}),
    "ai_platform_reduction_server.json": ("PyTorchJob", {"framework": "pytorch"}),
    "azure_ml_a100_80gb.yaml": ("PyTorchJob", {}),
    "azure_ml_curated_environment.yaml": ("PyTorchJob", {"image": "gcr.io/my-project/cifar:1"}),
    "azure_ml_pytorch_infiniband.yaml": ("PyTorchJob", {}),
    "azure_ml_tensorflow_ps.yaml": ("TFJob", {}),
    "vertex_a100x2.json": ("PyTorchJob", {"framework": "pytorch"}),
    "vertex_a2_megagpu_reduction_server.json": ("PyTorchJob", {}),
    "vertex_parameter_servers.json": ("TFJob", {}),
    "vertex_v100_reduction_server.yaml": ("PyTorchJob", {}),
}
"""The core's migration inputs -> the kind each becomes, and ``migrate``'s extra arguments."""


def test_every_cloud_example_is_covered():
    assert sorted(p.name for p in INPUTS.iterdir()) == sorted(CLOUD_EXAMPLES)


@pytest.mark.parametrize("name", sorted(CLOUD_EXAMPLES))
def test_cloud_examples_migrate_to_kubernetes(name):
    source = next(t for t in TARGETS if name.startswith(t))
    pytest.importorskip(f"omnidist_{source}")
    kind, extra = CLOUD_EXAMPLES[name]
    compiled, report = omnidist.migrate(INPUTS / name, target="kubernetes", **extra)
    assert compiled.request["kind"] == kind
    check_manifest(compiled.request)
    refused = {e.field for e in report.entries if e.fidelity.value in ("dropped", "changed")}
    if "reduction_server" in name:
        assert "reduction_servers" in refused  # Kubernetes has none: the role is left out, and said so
    if "infiniband" in name:
        assert "interconnect: infiniband" in refused


def test_a_kubernetes_round_trip_through_vertex_keeps_the_job():
    pytest.importorskip("omnidist_vertex")
    job = {"name": "cassava", "framework": "pytorch", "image": "trainer.example/t:1", "command": ["python", "t.py"],
           "primary": {"accelerator": "A100:8"}, "workers": {"replicas": 2}, "timeout": "2h"}
    native = compile_job(job).request
    to_vertex, _ = omnidist.migrate(native, source="kubernetes", target="vertex")
    back, _ = omnidist.migrate(to_vertex.request, source="vertex", target="kubernetes")
    assert back.request["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2
    master = back.request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert master["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert master["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
    assert back.request["spec"]["runPolicy"]["activeDeadlineSeconds"] == 7200


def test_compile_on_the_command_line_prints_yaml(tmp_path):
    (tmp_path / "job.yaml").write_text("name: demo\nframework: horovod\nimage: t:1\ncommand: [python, t.py]\n"
                                       "primary: {accelerator: \"T4:2\"}\nworkers: {replicas: 1}\n")
    done = run_cli("compile", "job.yaml", "--backend", "kubernetes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    request = yaml.safe_load(done.stdout)
    assert request["kind"] == "MPIJob" and request["spec"]["slotsPerWorker"] == 2
    check_manifest(request)
    assert "note: [defaulted] backends.kubernetes.node_selectors" in done.stderr
    (tmp_path / "bad.yaml").write_text("name: demo\nframework: pytorch\nimage: t:1\nprimary: {}\n"
                                       "labels: {\"Bad Key\": x}\n")
    refused = run_cli("compile", "bad.yaml", "--backend", "kubernetes", cwd=tmp_path)
    assert refused.returncode == 2 and "labels.Bad Key" in refused.stderr and "Traceback" not in refused.stderr
