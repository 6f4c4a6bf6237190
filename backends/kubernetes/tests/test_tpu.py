"""TPUs on GKE (SPEC §13): a slice is one pod per TPU host, each asking for its host's chips as
``google.com/tpu`` on GKE's TPU node labels; every manifest passes the CRD schema, the operator's
rules and the ``kubernetes`` client's models; the importer folds the hosts back into one slice."""

from __future__ import annotations

import pytest

from omnidist.kit import Feature, UnsupportedFeatureError, ValidationError
from omnidist_kubernetes import KubernetesBackend, KubernetesSettings
from omnidist_kubernetes.testing import check_manifest

BASE = {"name": "tpu-job", "framework": "jax", "image": "us-docker.pkg.dev/p/r/jax:1", "command": ["python", "t.py"]}
backend = KubernetesBackend()


def job(primary: dict, **fields) -> dict:
    return {**BASE, "primary": primary, **fields}


def pods(request: dict) -> dict:
    specs = request["spec"]["pytorchReplicaSpecs" if request["kind"] == "PyTorchJob" else "tfReplicaSpecs"]
    return {rtype: (body["replicas"], body["template"]["spec"]) for rtype, body in specs.items()}


@pytest.mark.parametrize("accelerator, hosts, chips, labels", [
    ("TPU-V5E:16", 4, "4", ("tpu-v5-lite-podslice", "4x4")),
    ("TPU-V5E:8", 1, "8", ("tpu-v5-lite-podslice", "2x4")),
    ("TPU-V6E:1", 1, "1", ("tpu-v6e-slice", "1x1")),
    ({"type": "TPU-V6E", "count": 64, "topology": "8x8"}, 16, "4", ("tpu-v6e-slice", "8x8")),
    ("TPU-V4:4", 1, "4", ("tpu-v4-podslice", "2x2x1")),
    ("TPU-V5P:16", 4, "4", ("tpu-v5p-slice", "2x2x4")),
    ({"type": "TPU-V5P", "count": 64, "topology": "4x4x4"}, 16, "4", ("tpu-v5p-slice", "4x4x4")),
])
def test_a_slice_is_one_pod_per_host_with_its_chips(compile_, accelerator, hosts, chips, labels):
    compiled = compile_(job({"accelerator": accelerator}))
    check_manifest(compiled.request)  # CRD schema, webhook rules, V1PodTemplateSpec
    found = pods(compiled.request)
    assert sum(count for count, _ in found.values()) == hosts
    assert set(found) == ({"Master", "Worker"} if hosts > 1 else {"Master"})
    for _, pod in found.values():
        container = pod["containers"][0]
        assert container["resources"]["limits"] == {"google.com/tpu": chips}, "no nvidia.com/gpu"
        assert pod["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": labels[0],
                                       "cloud.google.com/gke-tpu-topology": labels[1]}
        assert "volumes" not in pod, "no shared-memory volume: that is for multi-GPU pods"
    assert "nprocPerNode" not in compiled.request["spec"], "one process per TPU host"


def test_tensorflow_is_a_tfjob_of_chief_and_workers(compile_):
    found = pods(compile_(job({"accelerator": "TPU-V5E:16"}, framework="tensorflow")).request)
    assert {rtype: count for rtype, (count, _) in found.items()} == {"Chief": 1, "Worker": 3}


def test_the_settings_node_selectors_name_the_tpu_nodes_of_other_clusters(compile_):
    found = pods(compile_(job({"accelerator": "TPU-V5E:4"}, backends={"kubernetes": {
        "node_selectors": {"TPU-V5E": {"example.com/tpu": "v5e"}}}})).request)
    assert found["Master"][1]["nodeSelector"] == {"example.com/tpu": "v5e"}


def test_a_long_name_leaves_room_for_every_host_pod(compile_):
    name = "a" * 60
    compiled = compile_(job({"accelerator": "TPU-V5E:256"}, name=name))
    assert len(compiled.request["metadata"]["name"] + "-worker-62") <= 63  # 64 hosts: worker-0 … worker-62


@pytest.mark.parametrize("data, subject", [
    (job({"accelerator": "TPU-V3:8"}), "accelerator TPU-V3"),
    (job({"accelerator": "TPU-V5E:16"}, workers={"replicas": 1}), "workers"),
    (job({"accelerator": "TPU-V5E:16"}, framework="tensorflow", evaluators={"replicas": 1, "accelerator": "none"}),
     "evaluators"),
    (job({"accelerator": "TPU-V5E:16"}, framework="horovod"), "framework horovod"),
])
def test_what_gke_tpus_cannot_hold_is_exit_3(compile_, data, subject):
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_(data)
    assert caught.value.subject == subject and caught.value.exit_code == 3


@pytest.mark.parametrize("primary, extra", [
    ({"accelerator": "TPU-V5E:16", "cpus": 100, "memory_gb": 180}, {}),
    ({"accelerator": "TPU-V6E:8"}, {"framework": "tensorflow"}),
    ({"accelerator": {"type": "TPU-V5E", "count": 32, "topology": "4x8"}}, {}),
])
def test_compile_then_import_gives_the_job_back(compile_, primary, extra):
    data = job(primary, **extra)
    compiled = compile_(data)
    back, notes = backend.import_with_notes(compiled.request)
    # the slice comes back; a topology that is the default for its chips is not written out again
    assert str(back.primary.accelerator) == str(compiled.job.primary.accelerator) and back.workers is None
    assert (back.primary.cpus, back.primary.memory_gb) == (primary.get("cpus"), primary.get("memory_gb"))
    assert not [n for n in notes if n.field == "primary.accelerator"]
    again = backend.compile(back, KubernetesSettings())
    assert again.request == compiled.request


def test_pods_of_a_host_shape_the_compiler_would_not_pick_are_noted():
    """Two 4-chip pods in 2x4 (v5e on ct5lp-hightpu-4t): the slice is TPU-V5E:8, compiled back as one 8-chip pod."""
    request = backend.compile(__import__("omnidist").DistributedJob.from_dict(job({"accelerator": "TPU-V5E:16"})),
                              KubernetesSettings()).request
    for body in request["spec"]["pytorchReplicaSpecs"].values():
        body["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "2x4"
    request["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 1
    back, notes = backend.import_with_notes(request)
    assert str(back.primary.accelerator) == "TPU-V5E:8"
    assert any(n.field == "primary.accelerator" and "compiles as 1 pod(s) of 8" in n.message for n in notes)


@pytest.mark.parametrize("label, topology, chips, hosts, expected", [
    ("tpu-v5p-slice", "2x2x4", "4", 4, "TPU-V5P:16"),
    ("tpu-v4-podslice", "2x2x1", "4", 1, "TPU-V4:4"),
    ("tpu-v4-podslice", "2x4x4", "4", 8, "TPU-V4:32"),
])
def test_gke_tpu_v4_and_v5p_slices_import_as_their_portable_tpu(label, topology, chips, hosts, expected):
    template = {"spec": {"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": label,
                                          "cloud.google.com/gke-tpu-topology": topology},
                         "containers": [{"name": "pytorch", "image": "i",
                                         "resources": {"limits": {"google.com/tpu": chips}}}]}}
    specs = {"Master": {"replicas": 1, "template": template}}
    if hosts > 1:
        specs["Worker"] = {"replicas": hosts - 1, "template": template}
    request = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"},
               "spec": {"pytorchReplicaSpecs": specs}}
    back, _ = backend.import_with_notes(request)
    assert str(back.primary.accelerator) == expected and back.workers is None


def test_a_gke_tpu_without_a_portable_name_is_exit_3():
    request = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}, "spec": {
        "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
            "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu7x", "cloud.google.com/gke-tpu-topology": "2x2x1"},
            "containers": [{"name": "pytorch", "image": "i", "resources": {"limits": {"google.com/tpu": "4"}}}]}}}}}}
    with pytest.raises(UnsupportedFeatureError, match="no portable accelerator name") as caught:
        backend.import_with_notes(request)
    assert caught.value.feature is Feature.ACCELERATOR and "TPU-V5P" in caught.value.message


def test_a_v5p_topology_gke_does_not_lay_out_is_exit_2():
    request = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}, "spec": {
        "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
            "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
                             "cloud.google.com/gke-tpu-topology": "2x2"},
            "containers": [{"name": "pytorch", "image": "i", "resources": {"limits": {"google.com/tpu": "4"}}}]}}}}}}
    with pytest.raises(ValidationError) as caught:
        backend.import_with_notes(request)
    assert caught.value.problems[0].path.endswith("nodeSelector.cloud.google.com/gke-tpu-topology")
    assert "2x2x1" in caught.value.problems[0].message


def test_a_topology_gke_does_not_run_is_exit_2_naming_the_label():
    request = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}, "spec": {
        "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
            "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                             "cloud.google.com/gke-tpu-topology": "3x3"},
            "containers": [{"name": "pytorch", "image": "i", "resources": {"limits": {"google.com/tpu": "4"}}}]}}}}}}
    with pytest.raises(ValidationError) as caught:
        backend.import_with_notes(request)
    assert caught.value.problems[0].path.endswith("nodeSelector.cloud.google.com/gke-tpu-topology")


def test_the_footprint_is_the_tpu_hosts(compile_):
    compiled = compile_(job({"accelerator": "TPU-V6E:16"}))
    found = backend.footprint(compiled, KubernetesSettings())
    assert [(p.role, p.replicas, p.machine, p.accelerator, p.count) for p in found.pools] == [
        ("primary", 1, "ct6e-standard-4t", "TPU-V6E", 4), ("workers", 3, "ct6e-standard-4t", "TPU-V6E", 4)]
    assert found.accelerators == "TPU-V6E:16"


def test_a_2d_topology_on_a_3d_tpu_is_exit_2_naming_the_field(compile_):
    with pytest.raises(ValidationError) as caught:
        compile_(job({"accelerator": {"type": "TPU-V5P", "count": 16, "topology": "4x4"}}))
    assert caught.value.problems[0].path.endswith("accelerator.topology")
    assert "2x2x4" in caught.value.problems[0].message


def test_a_v5p_slice_on_gke_is_its_4_chip_hosts(compile_):
    compiled = compile_(job({"accelerator": "TPU-V5P:16"}))
    found = backend.footprint(compiled, KubernetesSettings())
    assert [(p.role, p.replicas, p.machine, p.accelerator, p.count) for p in found.pools] == [
        ("primary", 1, "ct5p-hightpu-4t", "TPU-V5P", 4), ("workers", 3, "ct5p-hightpu-4t", "TPU-V5P", 4)]
    assert found.accelerators == "TPU-V5P:16"
