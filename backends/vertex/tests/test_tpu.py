"""TPUs on Vertex (SPEC §13): a slice compiles to one worker pool of one replica (``cloud-tpu`` +
``TPU_V2``/``TPU_V3`` + cores, or a TPU VM machine + ``tpuTopology``), checked against the SDK's own
CustomJob type; the importer reads each form back; what a TPU layout cannot hold is exit 3."""

from __future__ import annotations

import pytest
from google.cloud import aiplatform_v1

from omnidist.kit import DistributedJob, Feature, NoteCode, UnsupportedFeatureError, ValidationError, structure
from omnidist_vertex import VertexBackend, VertexSettings

BASE = {"name": "tpu-job", "framework": "jax", "image": "us-docker.pkg.dev/p/r/jax:1", "command": ["python", "t.py"]}
backend = VertexBackend()


def build(primary: dict, extra: dict | None = None, **settings):
    job = DistributedJob.from_dict({**BASE, "primary": primary, **(extra or {})})
    return backend.compile(job, structure(settings, VertexSettings, path="backends.vertex"))


def machine_spec(compiled) -> dict:
    pools = compiled.request["jobSpec"]["workerPoolSpecs"]
    assert len(pools) == 1 and pools[0]["replicaCount"] == "1", "a slice is one pool of one replica"
    sdk = aiplatform_v1.CustomJob.from_json(compiled.render("json"))  # the SDK's own type takes it
    assert sdk.job_spec.worker_pool_specs[0].replica_count == 1
    return pools[0]["machineSpec"]


@pytest.mark.parametrize("accelerator, machine", [
    ("TPU-V5E:1", {"machineType": "ct5lp-hightpu-1t", "tpuTopology": "1x1"}),
    ("TPU-V5E:4", {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x2"}),
    ("TPU-V5E:8", {"machineType": "ct5lp-hightpu-8t", "tpuTopology": "2x4"}),
    ("TPU-V5E:16", {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "4x4"}),
    ("TPU-V6E:256", {"machineType": "ct6e-standard-4t", "tpuTopology": "16x16"}),
    ("TPU-V2:8", {"machineType": "cloud-tpu", "acceleratorType": "TPU_V2", "acceleratorCount": 8}),
    ("TPU-V3:32", {"machineType": "cloud-tpu", "acceleratorType": "TPU_V3", "acceleratorCount": 32}),
])
def test_a_slice_is_one_pool_with_the_machine_its_topology_runs_on(accelerator, machine):
    compiled = build({"accelerator": accelerator})
    assert machine_spec(compiled) == machine
    chosen = [n for n in compiled.diagnostics if n.code is NoteCode.MACHINE_CHOSEN]
    assert chosen and chosen[0].data["machine"] == machine["machineType"]
    assert any("TPU VMs" in n.message for n in compiled.diagnostics)


def test_a_named_machine_and_topology_are_checked_and_kept():
    compiled = build({"accelerator": {"type": "TPU-V5E", "count": 8, "topology": "2x4"}},
                     machine_types={"primary": "ct5lp-hightpu-4t"})
    assert machine_spec(compiled) == {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x4"}  # two 4-chip hosts
    with pytest.raises(ValidationError) as caught:
        build({"accelerator": "TPU-V5E:16"}, machine_types={"primary": "ct5lp-hightpu-8t"})
    assert caught.value.problems[0].path == "backends.vertex.machine_types.primary"
    assert "runs the topologies 2x4, not 4x4" in str(caught.value) and "ct5lp-hightpu-4t" in str(caught.value)
    with pytest.raises(ValidationError, match="not a TPU-V6E machine"):
        build({"accelerator": "TPU-V6E:4"}, machine_types={"primary": "ct5lp-hightpu-4t"})
    with pytest.raises(ValidationError, match="runs on Vertex's cloud-tpu machine"):
        build({"accelerator": "TPU-V3:8"}, machine_types={"primary": "n1-standard-8"})
    with pytest.raises(ValidationError, match="has 112; ask for less") as caught:
        build({"accelerator": "TPU-V5E:4", "cpus": 200})
    assert caught.value.problems[0].path == "primary.cpus"


@pytest.mark.parametrize("extra, subject, feature", [
    ({"workers": {"replicas": 3}}, "workers", Feature.OTHER),
    ({"evaluators": {"replicas": 1, "accelerator": "none"}}, "evaluators", Feature.EVALUATORS),
    ({"framework": "tensorflow", "parameter_servers": {"replicas": 2}}, "parameter_servers", Feature.PARAMETER_SERVERS),
])
def test_roles_the_tpu_layout_cannot_hold_are_exit_3_naming_the_role(extra, subject, feature):
    with pytest.raises(UnsupportedFeatureError) as caught:
        build({"accelerator": "TPU-V5E:16"}, extra)
    assert (caught.value.subject, caught.value.feature, caught.value.exit_code) == (subject, feature, 3)
    assert "one worker pool of one replica" in caught.value.message


def test_a_tpu_on_workers_only_is_refused_naming_them():
    with pytest.raises(UnsupportedFeatureError) as caught:
        build({}, {"workers": {"replicas": 2, "accelerator": "TPU-V5E:4"}})
    assert caught.value.subject == "workers" and "primary.accelerator" in caught.value.hint


def test_a_prebuilt_container_for_a_tpu_is_refused():
    job = DistributedJob.from_dict({"name": "t", "framework": "pytorch", "framework_version": "2.3",
                                    "module": "trainer.task", "code": "gs://b/c.tar.gz",
                                    "primary": {"accelerator": "TPU-V5E:4"}})
    with pytest.raises(UnsupportedFeatureError) as caught:
        backend.compile(job, VertexSettings())
    assert caught.value.feature is Feature.FRAMEWORK_VERSION


@pytest.mark.parametrize("primary, settings", [
    ({"accelerator": "TPU-V5E:16"}, {}),
    ({"accelerator": {"type": "TPU-V6E", "count": 8, "topology": "2x4"}}, {"machine_types": {"primary": "ct6e-standard-4t"}}),
    ({"accelerator": "TPU-V2:8"}, {}),
    ({"accelerator": "TPU-V3:128"}, {}),
])
def test_compile_then_import_gives_the_job_back(primary, settings):
    job = DistributedJob.from_dict({**BASE, "primary": primary, "backends": {"vertex": settings} if settings else {}})
    compiled = backend.compile(job, structure(settings, VertexSettings, path="backends.vertex"))
    back, _ = backend.import_with_notes(compiled.request)
    assert back.primary.accelerator.type == job.primary.accelerator.type
    assert back.primary.accelerator.count == job.primary.accelerator.count
    assert back.framework.value == "jax" and back.workers is None
    assert back.backends.get("vertex", {}).get("machine_types") == settings.get("machine_types")
    again = backend.compile(back, structure(back.backends.get("vertex", {}), VertexSettings, path="backends.vertex"))
    assert again.request == compiled.request


def test_vertex_documented_tpu_jobs_import():
    """The two jobs Vertex's TPU pages show: v2 cloud-tpu with 8 cores, and v5e on 4-chip hosts in 4x4."""
    v2 = {"workerPoolSpecs": [{"machineSpec": {"machineType": "cloud-tpu", "acceleratorType": "TPU_V2",
                                               "acceleratorCount": 8},
                               "replicaCount": 1, "containerSpec": {"imageUri": "gcr.io/p/tf-tpu:1"}}]}
    v5e = {"workerPoolSpecs": {"machineSpec": {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "4x4"},
                               "replicaCount": 1, "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/jax:1"}}}
    job, _ = backend.import_with_notes(v2)
    assert str(job.primary.accelerator) == "TPU-V2:8" and "vertex" not in job.backends
    job, _ = backend.import_with_notes(v5e)
    assert str(job.primary.accelerator) == "TPU-V5E:16" and job.primary.accelerator.topology is None
    job, _ = backend.import_with_notes({"workerPoolSpecs": [{
        "machineSpec": {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x4"}, "containerSpec": {"imageUri": "i"}}]})
    assert str(job.primary.accelerator) == "TPU-V5E:8"
    assert job.backends["vertex"]["machine_types"] == {"primary": "ct5lp-hightpu-4t"}, "not the default host: kept"


@pytest.mark.parametrize("machine, path, words", [
    ({"machineType": "ct5lp-hightpu-8t", "tpuTopology": "4x4"}, "tpuTopology", "runs the topologies 2x4, not 4x4"),
    ({"machineType": "n1-standard-8", "acceleratorType": "TPU_V3", "acceleratorCount": 8}, "machineType",
     "runs on the cloud-tpu machine"),
    ({"machineType": "cloud-tpu", "acceleratorType": "TPU_V2", "acceleratorCount": 12}, "acceleratorCount",
     "comes in slices of 8, 32"),
])
def test_a_tpu_pool_vertex_would_refuse_is_exit_2_naming_the_field(machine, path, words):
    native = {"workerPoolSpecs": [{"machineSpec": machine, "containerSpec": {"imageUri": "i"}}]}
    with pytest.raises(ValidationError) as caught:
        backend.import_with_notes(native)
    assert caught.value.problems[0].path == f"workerPoolSpecs[0].machineSpec.{path}"
    assert words in str(caught.value)


def test_the_footprint_is_the_slice_hosts():
    compiled = build({"accelerator": "TPU-V5E:16"})
    found = backend.footprint(compiled, VertexSettings())
    assert [(p.machine, p.replicas, p.accelerator, p.count) for p in found.pools] == [
        ("ct5lp-hightpu-4t", 4, "TPU-V5E", 4)]
    assert found.accelerators == "TPU-V5E:16"
    found = backend.footprint(build({"accelerator": "TPU-V3:32"}), VertexSettings())
    assert [(p.machine, p.replicas, p.count) for p in found.pools] == [("cloud-tpu", 4, 8)]


@pytest.mark.parametrize("accelerator", ["TPU-V4:16", "TPU-V5P:16"])
def test_a_tpu_vertex_does_not_run_is_exit_3_pointing_at_gke(accelerator):
    import omnidist

    with pytest.raises(UnsupportedFeatureError) as caught:
        omnidist.compile(DistributedJob.from_dict({**BASE, "primary": {"accelerator": accelerator}}), backend="vertex")
    kind = accelerator.split(":")[0]
    assert (caught.value.subject, caught.value.exit_code) == (f"accelerator {kind}", 3)
    assert "kubernetes" in caught.value.hint
    assert backend.tpu_hosts(kind) == [], "omnidist gpus lists no Vertex machine for it"


def test_a_v5p_tpu_vm_pool_does_not_import_into_vertex():
    native = {"workerPoolSpecs": [{"machineSpec": {"machineType": "ct5p-hightpu-4t", "tpuTopology": "2x2x4"},
                                   "containerSpec": {"imageUri": "i"}}]}
    with pytest.raises(UnsupportedFeatureError, match="does not run TPU-V5P") as caught:
        backend.import_with_notes(native)
    assert caught.value.feature is Feature.ACCELERATOR and caught.value.exit_code == 3
