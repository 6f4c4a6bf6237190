"""Import: Kubeflow jobs -> portable job, with notes on what cannot move; round trips both ways;
the shared corpus of real manifests read in place (skipped when ``../shared/corpus`` is absent)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist.kit import Framework, NoteKind, OmnidistError, ValidationError, job_from_dict, job_to_dict
from omnidist.testing import strategies
from omnidist_kubernetes import KubernetesBackend, importer
from omnidist_kubernetes.testing import compile_job

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "kubernetes"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the checkout")

INVALID = {
    "dist-bench-container-not-named-pytorch.yaml": (
        "spec.pytorchReplicaSpecs.Master.template.spec.containers", "no container is named 'pytorch'"),
    "pi-kueue-mpijob.yaml": (
        "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].resources.limits.cpu",
        "whole number or a string"),
}
"""Corpus files the platform refuses (SOURCES.md): the field path and what the error says."""


def backend() -> KubernetesBackend:
    return KubernetesBackend()


def documents(path: Path) -> list:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def corpus(valid: bool) -> list[str]:
    names = sorted(p.name for p in CORPUS.glob("*.yaml")) if CORPUS.is_dir() else []
    return [n for n in names if (n not in INVALID) == valid]


BASE = {"name": "cassava", "framework": "pytorch", "image": "trainer.example/t:1.0",
        "command": ["python", "-m", "trainer.task"], "args": ["--epochs", "10"]}

ROUND_TRIPS = {
    "pytorch": {**BASE, "primary": {"accelerator": "A100:8", "cpus": 48, "memory_gb": 340}, "workers": {"replicas": 3},
                "spot": True, "timeout": 3600, "labels": {"team": "vision"}, "env": {"NCCL_DEBUG": "INFO"},
                "description": "a description", "backends": {"kubernetes": {
                    "namespace": "ml", "queue": "q", "service_account": "sa", "image_pull_secrets": ["reg"],
                    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}],
                    "node_selector": {"pool": "a"}, "backoff_limit": 2, "ttl_seconds_after_finished": 60}}},
    "tensorflow": {**BASE, "framework": "tensorflow", "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 2},
                   "parameter_servers": {"replicas": 2, "cpus": 8, "memory_gb": 52}, "evaluators": {"replicas": 1}},
    "horovod": {**BASE, "framework": "horovod", "primary": {"accelerator": "V100:4"}, "workers": {"replicas": 1},
                "processes_per_node": 2},
    "deepspeed": {**BASE, "framework": "deepspeed", "primary": {"accelerator": "H100:8", "disk_gb": 500},
                  "processes_per_node": 1, "backends": {"kubernetes": {
                      "node_selectors": {"H100": {"node.kubernetes.io/instance-type": "p5.48xlarge"}},
                      "shm_size": "64Gi", "restart_policy": "Never"}}},
    "command-less": {**BASE, "command": [], "args": ["--data", "$(DATA_DIR)/x"], "primary": {"cpus": 0.5}},
}


@pytest.mark.parametrize("case", sorted(ROUND_TRIPS))
def test_compiled_jobs_import_back_to_the_same_job(case):
    compiled = compile_job(ROUND_TRIPS[case])
    job, notes = backend().import_with_notes(compiled.request)
    assert [n for n in notes if n.kind in (NoteKind.DROPPED, NoteKind.CHANGED)] == []
    job = omnidist.import_native(compiled.request, backend="kubernetes")  # a launcher compile added, read back
    assert job_to_dict(job) == job_to_dict(job_from_dict(ROUND_TRIPS[case]))
    assert compile_job(job_to_dict(job)).request == compiled.request


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(job=strategies.jobs())
def test_any_job_that_compiles_imports_back_to_the_same_request(job):
    program = (job.primary.command or job.command or ("",))[0]
    # mpirun reads a first program word that starts with "-" as one of its own options
    assume(job.framework is not Framework.HOROVOD or not program.startswith("-"))
    try:
        compiled = compile_job(job_to_dict(job))
    except OmnidistError:
        return
    again = backend().import_native(compiled.request)
    assert compile_job(job_to_dict(again)).request == compiled.request


def test_kubectl_get_output_with_status_imports_like_the_manifest():
    compiled = compile_job(ROUND_TRIPS["pytorch"]).request
    served = copy.deepcopy(compiled)
    served["metadata"].update({"uid": "0d6b…", "resourceVersion": "812", "generation": 1,
                               "creationTimestamp": "2025-01-01T00:00:00Z",
                               "annotations": {**served["metadata"]["annotations"],
                                               "kubectl.kubernetes.io/last-applied-configuration": "{}"},
                               "labels": {**served["metadata"]["labels"], "omnidist-request-id": "f" * 32}})
    for spec in served["spec"]["pytorchReplicaSpecs"].values():  # what the operator's defaulting adds
        spec["template"]["metadata"] = {"creationTimestamp": None}
        spec["template"]["spec"]["containers"][0]["ports"] = [{"name": "pytorchjob-port", "containerPort": 23456,
                                                               "protocol": "TCP"}]
    served["status"] = {"conditions": [{"type": "Created", "status": "True"}], "replicaStatuses": {}}
    listing = {"apiVersion": "v1", "kind": "List", "items": [served], "metadata": {"resourceVersion": ""}}
    job, notes = backend().import_with_notes(listing)
    assert job == backend().import_native(compiled)
    assert [n for n in notes if n.kind is not NoteKind.HINT] == []


def test_several_documents_import_the_first_job_and_say_so():
    first = compile_job(ROUND_TRIPS["pytorch"]).request
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "other"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    job, notes = backend().import_with_notes([namespace, first, second])
    assert job.name == "cassava"
    said = {n.field: n for n in notes}
    assert said["[0]"].kind is NoteKind.HINT and "Namespace" in said["[0]"].message
    assert said["[2]"].kind is NoteKind.DROPPED and "other" in said["[2]"].message


def test_recognizes_its_own_kinds_only():
    request = compile_job(ROUND_TRIPS["horovod"]).request
    assert KubernetesBackend.recognizes(request) and KubernetesBackend.recognizes([{"kind": "Secret"}, request])
    assert KubernetesBackend.recognizes({"kind": "List", "items": [request]})
    assert not KubernetesBackend.recognizes({"apiVersion": "batch/v1", "kind": "Job"})
    assert not KubernetesBackend.recognizes({"apiVersion": "kubeflow.org/v1", "kind": "XGBoostJob"})
    assert not KubernetesBackend.recognizes({"jobSpec": {"workerPoolSpecs": []}})


def test_mpirun_lines_are_read_down_to_the_program():
    assert importer.parse_mpirun(["mpirun", "-np", "4", "--mca", "btl", "^openib", "-x", "A=1",
                                  "--bind-to=none", "python", "train.py", "-x", "1"]) == (
        {"-np": ["4"], "--mca": ["btl", "^openib"], "-x": ["A=1"], "--bind-to": ["none"]},
        ("python", "train.py", "-x", "1"))
    assert importer.parse_mpirun(["/usr/bin/mpirun", "--unknown-flag", "python"]) is None
    assert importer.parse_mpirun(["bash", "-c", "mpirun python"]) is None
    assert importer.parse_mpirun(["mpirun", "-np", "2"]) is None


def test_worker_only_tfjob_takes_worker_0_as_the_primary():
    native = compile_job(ROUND_TRIPS["tensorflow"]).request
    specs = native["spec"]["tfReplicaSpecs"]
    specs["Worker"]["replicas"] = 3
    del specs["Chief"]
    job, notes = backend().import_with_notes(native)
    assert job.workers.replicas == 2 and job.primary.accelerator is not None
    assert any(n.field == "primary" and n.kind is NoteKind.APPROXIMATED for n in notes)


def test_kubernetes_expansion_references_are_reported():
    native = compile_job(ROUND_TRIPS["pytorch"]).request
    container = native["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    container["args"] = ["--rdzv", "$(MASTER_ADDR):$(MASTER_PORT)", "--cost", "$$5"]
    for spec in native["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["args"] = container["args"]
    job, notes = backend().import_with_notes(native)
    assert job.args == ("--rdzv", "$(MASTER_ADDR):$(MASTER_PORT)", "--cost", "$5")
    assert any(n.kind is NoteKind.CHANGED and "$(MASTER_ADDR)" in n.message for n in notes)


def test_what_cannot_move_is_dropped_and_reported():
    native = compile_job({**BASE, "primary": {"accelerator": "T4:1"}}).request
    pod = native["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    container = pod["containers"][0]
    container["envFrom"] = [{"secretRef": {"name": "creds"}}]
    container["env"].append({"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}})
    container["resources"]["limits"]["vpc.amazonaws.com/efa"] = "4"
    container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    container["imagePullPolicy"] = "Always"
    pod.update({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}}], "hostNetwork": True,
                "affinity": {"podAntiAffinity": {}}, "initContainers": [{"name": "init", "image": "busybox"}]})
    pod["containers"].append({"name": "sidecar", "image": "envoy"})
    job, notes = backend().import_with_notes(native)
    assert job.primary.accelerator is not None and "TOKEN" not in job.env
    dropped = " ".join(n.message for n in notes if n.kind is NoteKind.DROPPED)
    for word in ("secrets or config maps", "TOKEN", "vpc.amazonaws.com/efa", "'data'",
                 "True", "podAntiAffinity", "init", "'sidecar'"):
        assert word in dropped, word
    assert any(n.kind is NoteKind.HINT and n.field.endswith("imagePullPolicy") for n in notes)


def test_gpus_without_a_model_are_a_change():
    native = compile_job({**BASE, "primary": {"accelerator": "T4:2"}}, node_selectors={}).request
    job, notes = backend().import_with_notes(native)
    assert job.primary.accelerator is None
    assert [n.field for n in notes if n.kind is NoteKind.CHANGED] == ["primary.accelerator"]


@pytest.mark.parametrize(("selector", "model"), [
    ({"cloud.google.com/gke-accelerator": "nvidia-l4"}, "L4"),
    ({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, "A100-80GB"),
    ({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, "H100"),
    ({"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"}, "V100"),
    ({"node.kubernetes.io/instance-type": "a2-ultragpu-8g"}, "A100-80GB"),
    ({"node.kubernetes.io/instance-type": "p4d.24xlarge"}, "A100"),
    ({"beta.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"}, "H100"),
])
def test_gpu_model_from_node_labels(selector, model):
    native = compile_job({**BASE, "primary": {"accelerator": "T4:8"}}, node_selectors={"T4": selector}).request
    job = backend().import_native(native)
    assert job.primary.accelerator.type == model and job.primary.accelerator.count == 8


@pytest.mark.parametrize(("change", "path", "message"), [
    (lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"].update(replicas=2),
     "spec.pytorchReplicaSpecs.Master.replicas", "must be 1"),
    (lambda d: d["spec"]["pytorchReplicaSpecs"].update(Chief=d["spec"]["pytorchReplicaSpecs"]["Master"]),
     "spec.pytorchReplicaSpecs.Chief", "not a PyTorchJob replica type"),
    (lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"].update(restartPolicy="Sometimes"),
     "spec.pytorchReplicaSpecs.Master.restartPolicy", "not one of"),
    (lambda d: d["spec"].update(nprocPerNode=8), "spec.nprocPerNode", "expected a number"),
    (lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["resources"]
     ["limits"].update({"nvidia.com/gpu": "1.5"}),
     "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].resources.limits.nvidia.com/gpu", "whole number"),
    (lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["resources"]
     ["requests"].update(memory="lots"),
     "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].resources.requests.memory", "not a quantity"),
    (lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0].update(args=[1]),
     "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].args[0]", "expected a string"),
    (lambda d: d["spec"].pop("pytorchReplicaSpecs"), "spec.pytorchReplicaSpecs", "expected a mapping"),
])
def test_what_the_platform_refuses_is_exit_2_with_its_path(change, path, message):
    native = copy.deepcopy(compile_job({**BASE, "primary": {"cpus": 4, "memory_gb": 8}}).request)
    change(native)
    with pytest.raises(ValidationError) as caught:
        backend().import_native(native)
    assert caught.value.exit_code == 2
    assert [p.path for p in caught.value.problems] == [path] and message in str(caught.value)


def test_a_tfjob_with_a_chief_and_a_master_is_exit_2():
    native = compile_job(ROUND_TRIPS["tensorflow"]).request
    specs = native["spec"]["tfReplicaSpecs"]
    specs["Master"] = copy.deepcopy(specs["Chief"])
    with pytest.raises(ValidationError, match="one Chief or Master"):
        backend().import_native(native)
    del specs["Chief"]  # the deprecated spelling alone is the chief
    assert backend().import_native(native) == backend().import_native(compile_job(ROUND_TRIPS["tensorflow"]).request)


def test_not_a_training_job_is_exit_2():
    with pytest.raises(ValidationError, match="not a Kubeflow training job.*batch/v1 Job"):
        backend().import_native({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}})


def test_a_worker_without_the_primarys_gpus_imports_as_accelerator_none():
    native = compile_job({**BASE, "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 1}}).request
    worker = native["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    del worker["containers"][0]["resources"], worker["nodeSelector"]
    job = backend().import_native(native)  # SPEC §7: the role's own hardware, not the primary's
    assert str(job.primary.accelerator) == "T4:1" and job.workers.accelerator == "none"


# --- the corpus: real manifests, read where they are ------------------------------------------------

@needs_corpus
def test_the_corpus_has_the_files_this_suite_expects():
    assert set(INVALID) <= set(p.name for p in CORPUS.glob("*.yaml"))
    assert len(corpus(valid=True)) >= 5


@needs_corpus
@pytest.mark.parametrize("name", corpus(valid=True))
def test_every_valid_corpus_file_imports(name):
    job, notes = backend().import_with_notes(documents(CORPUS / name))
    assert job.image and job.framework.value in ("pytorch", "tensorflow", "horovod")
    again = compile_job(job_to_dict(job))  # what was imported compiles back for Kubernetes
    assert again.request["kind"] in ("PyTorchJob", "TFJob", "MPIJob")


@needs_corpus
@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_corpus_files_are_exit_2_naming_the_problem(name):
    path, message = INVALID[name]
    with pytest.raises(ValidationError) as caught:
        backend().import_native(documents(CORPUS / name))
    assert [p.path for p in caught.value.problems] == [path] and message in str(caught.value)


@needs_corpus
def test_corpus_specifics_are_read():
    mnist = backend().import_native(documents(CORPUS / "mnist-gke-t4-pytorchjob.yaml"))
    assert str(mnist.primary.accelerator) == "T4:1" and mnist.command == ()
    assert mnist.backends["kubernetes"]["namespace"] == "mnist"
    queue = backend().import_native(documents(CORPUS / "kueue-tfjob-ps-worker.yaml"))
    assert queue.backends["kubernetes"]["queue"] == "training-local-queue"
    assert queue.parameter_servers.replicas == 1 and queue.workers.replicas == 1
    deadlock, notes = backend().import_with_notes(documents(CORPUS / "nccl-deadlock-two-pytorchjobs-efa.yaml"))
    assert deadlock.name == "deadlock-test-vulnerable" and str(deadlock.primary.accelerator) == "H100:8"
    assert any("deadlock-test-control" in n.message for n in notes)
    assert any("hostNetwork" in n.field for n in notes if n.kind is NoteKind.DROPPED)
    scorehive, notes = backend().import_with_notes(documents(CORPUS / "scorehive-mpijob-master-replica.yaml"))
    assert scorehive.command == ("/app/build/ScoreHiveCluster",) and scorehive.processes_per_node == 2
    assert any(n.field.endswith("mpiReplicaSpecs.Master") and n.kind is NoteKind.DROPPED for n in notes)
    fmnist, notes = backend().import_with_notes(documents(CORPUS / "fmnist-tfjob-spec-cleanpodpolicy.yaml"))
    assert any(n.field == "spec.cleanPodPolicy" and n.kind is NoteKind.DROPPED for n in notes)
    qwen, notes = backend().import_with_notes(documents(CORPUS / "qwen-sft-a40-envfrom.yaml"))
    assert any("nvidia.com/a40" in n.field and n.kind is NoteKind.CHANGED for n in notes)
    assert qwen.backends["kubernetes"]["image_pull_secrets"] == ["nrp-registry"]


@given(native=st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(
        ["apiVersion", "kind", "metadata", "name", "spec", "pytorchReplicaSpecs", "tfReplicaSpecs", "Master",
         "Worker", "Launcher", "replicas", "template", "containers", "image", "command", "env", "resources",
         "limits", "nvidia.com/gpu", "nodeSelector", "runPolicy"]), children, max_size=5),
    max_leaves=30))
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_garbage_fails_with_an_omnidist_error(native):
    for kind, version in (("PyTorchJob", "v1"), ("MPIJob", "v2beta1")):
        doc = {**native, "apiVersion": f"kubeflow.org/{version}", "kind": kind} if isinstance(native, dict) else native
        try:
            backend().import_native(doc)
        except OmnidistError:
            pass


def test_mpirun_reads_a_lone_dash_as_the_program():
    from omnidist_kubernetes.importer import parse_mpirun

    assert parse_mpirun(("mpirun", "-np", "2", "-", "x"))[1] == ("-", "x")
