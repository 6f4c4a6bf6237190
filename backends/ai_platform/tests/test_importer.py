"""import_native: the documentation example both ways, round trips (hypothesis), errors with paths."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import omnidist
from omnidist.kit import (
    Accelerator,
    DistributedJob,
    NoteKind,
    RoleName,
    UnsupportedFeatureError,
    ValidationError,
    effective_roles,
    read_document,
)
from omnidist_ai_platform import AIPlatformBackend, AIPlatformSettings, catalog, importer, tables
from omnidist_ai_platform.importer import import_with_notes
from omnidist_ai_platform.testing import schema, schema_problems

GOLDEN = Path(__file__).parent / "golden"
BACKEND = AIPlatformBackend()


def compile_native(job: DistributedJob) -> dict:
    body = BACKEND.compile(job, AIPlatformSettings(**job.backends.get("ai_platform", {}))).request
    assert schema_problems(body) == []
    return body


def test_documentation_example_imports_to_the_golden_job():
    native = json.loads((GOLDEN / "doc_example.json").read_text())
    job, notes = import_with_notes(native)
    assert job == omnidist.load(GOLDEN / "doc_example.yaml")
    assert (job.workers.replicas, job.parameter_servers.replicas, job.evaluators.replicas) == (9, 3, 1)
    assert job.workers.image is None and job.parameter_servers.image is None  # inherited from the master
    assert notes == ()
    assert compile_native(job) == native  # and back, exactly


def test_config_file_form_imports_like_the_create_body():
    config = read_document(GOLDEN / "doc_example_config.yaml")
    job = BACKEND.import_native(config)
    golden = omnidist.load(GOLDEN / "doc_example.yaml")
    assert attrs.evolve(job, name=golden.name) == golden
    bare = BACKEND.import_native(config["trainingInput"])  # a bare TrainingInput mapping works too
    assert bare == job


def test_native_to_native_is_exact_for_a_gpu_env_job():
    native = json.loads((GOLDEN / "cassava.json").read_text())
    job = omnidist.import_native(native, backend="ai_platform")  # the launcher compile added is read back
    assert job.env == {"NCCL_DEBUG": "INFO"} and job.command == ("python", "-m", "trainer.task")
    assert job.reduction_servers.replicas == 16 and job.parameter_servers is None
    assert compile_native(job) == native


def test_a_fetched_jobs_request_marker_is_not_imported():
    native = json.loads((GOLDEN / "cassava.json").read_text())
    fetched = {**native, "labels": {"team": "vision", "omnidist-request-id": "0f3a"}, "state": "RUNNING"}
    assert import_with_notes(fetched)[0].labels == {"team": "vision"}


def test_a2_machine_without_acceleratorConfig_maps_to_its_A100s_and_legacy_names_to_their_gpus():
    job = BACKEND.import_native({"trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "a2-highgpu-4g", "masterConfig": {"imageUri": "i"},
        "workerType": "complex_model_m_p100", "workerCount": "2"}})
    assert str(job.primary.accelerator) == "A100:4"
    assert str(job.workers.accelerator) == "P100:4" and job.workers.replicas == 2


def test_explicit_acceleratorConfig_wins():
    job = BACKEND.import_native({"trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-8",
        "masterConfig": {"imageUri": "i", "acceleratorConfig": {"count": "2", "type": "NVIDIA_TESLA_T4"}}}})
    assert str(job.primary.accelerator) == "T4:2"


def test_env_prefix_is_unwrapped_and_workers_keep_only_their_differences():
    native = {"jobId": "x", "trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-4",
        "masterConfig": {"imageUri": "i", "containerCommand": ["env", "A=1", "B=a=b", "python", "t.py"]},
        "workerType": "n1-standard-4", "workerCount": 1,
        "workerConfig": {"containerCommand": ["env", "A=1", "B=a=b", "C=3", "python", "t.py"]},
        "parameterServerType": "n1-highmem-8", "parameterServerCount": 1,
        "parameterServerConfig": {"imageUri": "ps", "containerCommand": ["run-ps"]}}}
    job = BACKEND.import_native(native)
    assert job.primary.env == {"A": "1", "B": "a=b"} and job.env == {}
    assert job.workers.env == {"C": "3"} and job.workers.command is None
    assert job.parameter_servers.command == ("run-ps",) and job.parameter_servers.env == {}
    assert compile_native(job)["trainingInput"] == {**native["trainingInput"], "region": "us-central1"}


def test_variables_every_replica_has_go_job_wide_and_the_rest_stay_with_their_role():
    native = {"jobId": "x", "trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-4",
        "masterConfig": {"imageUri": "i", "containerCommand": ["env", "A=1", "B=2", "python", "t.py"]},
        "workerType": "n1-standard-4", "workerCount": 1,
        "workerConfig": {"containerCommand": ["env", "A=1", "B=2", "C=3", "python", "t.py"]},
        "parameterServerType": "n1-highmem-8", "parameterServerCount": 1,
        "parameterServerConfig": {"containerCommand": ["env", "A=1", "run-ps"]}}}
    job = BACKEND.import_native(native)
    assert job.env == {"A": "1"} and job.primary.env == {"B": "2"}
    assert job.workers.env == {"C": "3"} and job.parameter_servers.env == {}
    assert compile_native(job)["trainingInput"] == {**native["trainingInput"], "region": "us-central1"}


def test_workers_without_a_disk_of_their_own_get_the_default_not_the_masters():
    native = {"jobId": "x", "trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-8",
        "masterConfig": {"imageUri": "i", "diskConfig": {"bootDiskSizeGb": 500}},
        "workerType": "n1-standard-8", "workerCount": 2}}
    job = BACKEND.import_native(native)
    assert job.primary.disk_gb == 500 and job.workers.disk_gb == importer.DEFAULT_BOOT_DISK_GB == 100
    worker = compile_native(job)["trainingInput"]["workerConfig"]
    assert worker["diskConfig"] == {"bootDiskSizeGb": 100}


def test_python_package_job_becomes_a_module_job():
    native = {"jobId": "census_1", "trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-8", "region": "us-east1", "runtimeVersion": "2.11",
        "pythonVersion": "3.7", "pythonModule": "trainer.task", "packageUris": ["gs://b/t.tar.gz"],
        "args": ["--steps", "10"], "jobDir": "gs://b/out"}}
    job, notes = import_with_notes(native)
    assert (job.module, job.code, job.framework.value, job.framework_version) == (
        "trainer.task", "gs://b/t.tar.gz", "tensorflow", "2.11")
    assert job.image is None and job.args == ("--steps", "10") and job.outputs["model"].default
    assert job.backends["ai_platform"] == {"region": "us-east1", "machine_types": {"primary": "n1-standard-8"},
                                           "job_dir": "gs://b/out"}
    jobdir = next(n for n in notes if n.field == "trainingInput.jobDir")
    assert "--job-dir" in jobdir.message and "outputs.model" in jobdir.message
    assert compile_native(job) == native


def test_pytorch_prebuilt_image_becomes_framework_version():
    native = {"jobId": "torch_1", "trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-8", "region": "us-central1",
        "masterConfig": {"imageUri": "gcr.io/cloud-ml-public/training/pytorch-gpu.1-10",
                         "acceleratorConfig": {"count": 1, "type": "NVIDIA_TESLA_T4"}},
        "pythonModule": "trainer.task", "packageUris": ["gs://b/t-0.1.tar.gz"]}}
    job, _ = import_with_notes(native)
    assert (job.framework.value, job.framework_version, job.image, job.primary.image) == ("pytorch", "1.10", None, None)
    assert compile_native(job) == native


def test_an_older_runtime_version_stays_in_the_backend_block():
    native = {"jobId": "census_1", "trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-8", "region": "us-east1", "runtimeVersion": "1.13",
        "pythonVersion": "3.5", "pythonModule": "trainer.task", "packageUris": ["gs://b/t.tar.gz"]}}
    job, _ = import_with_notes(native)
    assert (job.module, job.code, job.framework_version) == ("trainer.task", "gs://b/t.tar.gz", None)
    assert job.backends["ai_platform"]["runtime_version"] == "1.13"
    assert compile_native(job) == native


@pytest.mark.parametrize("changes", [{"packageUris": ["gs://b/t.tar.gz", "gs://b/dep.whl"]},  # several packages
                                     {"packageUris": ["gs://b/trainer"]}])  # not a built package
def test_python_package_job_goes_into_the_backend_block_with_a_note(changes):
    native = {"jobId": "census_1", "trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-8", "region": "us-east1", "runtimeVersion": "2.11",
        "pythonVersion": "3.7", "pythonModule": "trainer.task", "packageUris": ["gs://b/t.tar.gz"],
        "args": ["--steps", "10"]} | changes}
    job, notes = import_with_notes(native)
    assert job.image is None and job.framework.value == "tensorflow" and job.args == ("--steps", "10")
    assert job.backends["ai_platform"]["python_module"] == "trainer.task"
    assert any(n.field == "image" and "needs an image" in n.message for n in notes)
    assert compile_native(job) == native
    with pytest.raises(ValidationError) as err:  # without the package settings, an image is required
        BACKEND.compile(attrs.evolve(job, backends={}), AIPlatformSettings())
    assert err.value.problems[0].path == "image"


def test_odd_job_ids_are_pinned_so_compiling_gives_them_back():
    job, _ = import_with_notes({"jobId": "MyJob_2020", "trainingInput": {"masterConfig": {"imageUri": "i"}}})
    assert job.name == "myjob-2020" and job.backends["ai_platform"]["job_id"] == "MyJob_2020"
    assert job.backends["ai_platform"]["scale_tier"] == "BASIC"
    assert compile_native(job)["jobId"] == "MyJob_2020"


def test_dropped_scheduling_fields_are_reported_and_timeout_kept():
    job, notes = import_with_notes({"trainingInput": {"masterConfig": {"imageUri": "i"}, "scheduling": {
        "maxRunningTime": "3600.5s", "maxWaitTime": "60s", "priority": 3}}})
    assert job.timeout == 3601 and job.name == "imported-job"
    assert {n.field for n in notes if n.kind is NoteKind.DROPPED} == {"trainingInput.scheduling.maxWaitTime",
                                                                      "trainingInput.scheduling.priority"}


@pytest.mark.parametrize(("native", "feature"), [
    ({"trainingInput": {"scaleTier": "BASIC_TPU"}}, "scaleTier BASIC_TPU"),
    ({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "complex_model_m", "workerType": "cloud_tpu",
                        "workerCount": 1}}, "trainingInput.workerType"),
    ({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-8", "masterConfig": {
        "imageUri": "i", "acceleratorConfig": {"count": 8, "type": "TPU_V3"}}}}, "accelerator TPU_V3"),
    ({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-8", "masterConfig": {
        "imageUri": "i", "tpuTfVersion": "2.1"}}}, "trainingInput.masterConfig.tpuTfVersion"),
    ({"predictionInput": {}}, "predictionInput"),
])
def test_unportable_specs_exit_3_naming_the_feature(native, feature):
    with pytest.raises(UnsupportedFeatureError) as err:
        BACKEND.import_native(native)
    assert err.value.subject == feature and err.value.exit_code == 3
    assert str(err.value).startswith(f"the portable job cannot hold {feature}")  # the side that lacks it
    if "TPU" in feature or "tpu" in feature or "cloud_tpu" in str(native):
        assert "does not import TPU jobs" in str(err.value)


@pytest.mark.parametrize(("native", "model", "count", "machine"), [
    ({"scaleTier": "CUSTOM", "masterType": "n1-standard-8", "masterConfig": {
        "imageUri": "i", "acceleratorConfig": {"count": 1, "type": "NVIDIA_TESLA_K80"}}}, "T4", 1, "n1-standard-8"),
    ({"scaleTier": "CUSTOM", "masterType": "standard_gpu", "masterConfig": {"imageUri": "i"}}, "T4", 1,
     "n1-standard-8"),
    ({"scaleTier": "CUSTOM", "masterType": "complex_model_l_gpu", "masterConfig": {"imageUri": "i"}}, "V100", 8,
     "n1-standard-32"),
])
def test_retired_k80s_become_the_gpu_every_cloud_sells_with_a_change(native, model, count, machine):
    job, notes = import_with_notes({"trainingInput": native})
    assert job.primary.accelerator == Accelerator(type=model, count=count)
    assert job.backends["ai_platform"]["machine_types"]["primary"] == machine  # the K80 name no longer fits
    assert [n.kind for n in notes if "K80" in n.message] == [NoteKind.CHANGED]
    assert compile_native(job)["trainingInput"]["masterType"] == machine


def test_hyperparameters_import_as_the_jobs_tuning():
    job, notes = import_with_notes({"trainingInput": {"masterConfig": {"imageUri": "i"}, "hyperparameters": {
        "goal": "MAXIMIZE", "hyperparameterMetricTag": "acc", "maxTrials": 4,
        "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.1, "maxValue": 1}]}}})
    assert job.image == "i" and job.args == ()
    assert (job.tuning.metric.name, list(job.tuning.parameters), job.tuning.max_trials) == ("acc", ["lr"], 4)
    with pytest.raises(ValidationError) as err:  # what the API refuses is still refused
        BACKEND.import_native({"trainingInput": {"hyperparameters": {"params": [{"parameterName": "x",
                                                                                 "type": "FLOAT"}]}}})
    assert err.value.problems[0].path == "trainingInput.hyperparameters.params[0].type"


@pytest.mark.parametrize(("tier", "roles"), [
    ("BASIC_GPU", {"primary": ("n1-standard-8", 1)}),
    ("STANDARD_1", {"primary": ("n1-highcpu-8", 1), "workers": ("n1-highcpu-8", 4),
                    "parameter_servers": ("n1-standard-4", 3)}),
    ("PREMIUM_1", {"primary": ("n1-highcpu-16", 1), "workers": ("n1-highcpu-16", 19),
                   "parameter_servers": ("n1-highmem-8", 11)}),
])
def test_scale_tiers_become_the_cluster_google_documents(tier, roles):
    job, notes = import_with_notes({"trainingInput": {"scaleTier": tier, "masterConfig": {"imageUri": "i"}}})
    machines = job.backends["ai_platform"]["machine_types"]
    found = {name: (catalog.compute_engine_name(machines[name]) or machines[name],
                    1 if name == "primary" else job.role(name).replicas) for name in machines}
    assert found == roles
    assert "scale_tier" not in job.backends["ai_platform"]  # CUSTOM from here on
    assert [n.kind for n in notes if n.field == "scaleTier"] == [NoteKind.APPROXIMATED]
    assert compile_native(job)["trainingInput"]["scaleTier"] == "CUSTOM"


def test_a_role_type_with_no_replicas_is_noted():
    job, notes = import_with_notes({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4",
                                                      "masterConfig": {"imageUri": "i"}, "workerType": "standard_gpu",
                                                      "workerCount": 0}})
    assert job.workers is None
    assert [(n.kind, n.field) for n in notes if n.field.startswith("trainingInput")] == [
        (NoteKind.HINT, "trainingInput.workerType")]


def test_legacy_names_have_compute_engine_equivalents():
    assert BACKEND.machine_alias("large_model") == "n1-highmem-8"
    assert BACKEND.machine_alias("n1-highmem-8") is None


@pytest.mark.parametrize(("native", "path"), [
    ({"trainingInput": {"masterConfgi": {}}}, "trainingInput.masterConfgi"),
    ({"trainingInput": {"workerCount": "many"}}, "trainingInput.workerCount"),
    ({"trainingInput": {"masterConfig": {"containerCommand": "python t.py"}}}, "trainingInput.masterConfig.containerCommand"),
    ({"trainingInput": {"masterConfig": {"acceleratorConfig": {"type": "NVIDIA_TESLA_Z1"}}}},
     "trainingInput.masterConfig.acceleratorConfig.type"),
    ({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-5"}}, "trainingInput.masterType"),
    ({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-4", "workerCount": 2}},
     "trainingInput.workerType"),
    ({"trainingInput": {"scheduling": {"maxRunningTime": "2h"}}}, "trainingInput.scheduling.maxRunningTime"),
    ({"jobId": "x"}, "trainingInput"),
    ({"trainingInput": {"scaleTier": 3}}, "trainingInput.scaleTier"),
])
def test_malformed_specs_name_the_field_path(native, path):
    with pytest.raises(ValidationError) as err:
        BACKEND.import_native(native)
    assert err.value.problems[0].path == path


def test_native_models_cover_exactly_the_discovery_schema():
    pairs = [(importer.NativeTrainingInput, "GoogleCloudMlV1__TrainingInput"),
             (importer.NativeReplica, "GoogleCloudMlV1__ReplicaConfig"),
             (importer.NativeAccelerator, "GoogleCloudMlV1__AcceleratorConfig"),
             (importer.NativeDisk, "GoogleCloudMlV1__DiskConfig"),
             (importer.NativeScheduling, "GoogleCloudMlV1__Scheduling"),
             (importer.NativeJob, "GoogleCloudMlV1__Job")]
    for cls, name in pairs:
        assert {a.name for a in attrs.fields(cls)} == set(schema(name)["properties"]), name
    assert set(importer.ACCELERATOR_ENUM) == set(
        schema("GoogleCloudMlV1__AcceleratorConfig")["properties"]["type"]["enum"]
    )
    assert set(tables.SCALE_TIERS) == set(schema("GoogleCloudMlV1__TrainingInput")["properties"]["scaleTier"]["enum"])
    assert set(catalog.ACCELERATOR_TYPES.values()) <= set(importer.ACCELERATOR_ENUM)


# --- round trips ------------------------------------------------------------------------------

_token = st.text(alphabet="abcxyz019-_./", min_size=1, max_size=8)
_label_value = st.text(alphabet="abcxyz019-_", max_size=8)  # Google Cloud label values
_command = st.lists(_token, min_size=1, max_size=3).filter(lambda c: c[0] != "env")
_env = st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_]{0,5}", fullmatch=True), st.text(max_size=6), max_size=2)
_accelerator = st.sampled_from([None, "T4:1", "T4:4", "P4:2", "P100:1", "V100:2", "V100:8", "A100:1", "A100:8"])


@st.composite
def jobs(draw):
    accel = draw(_accelerator)
    primary = {"accelerator": accel} if accel else {}
    if draw(st.booleans()) and not (accel or "").startswith("A100"):
        primary["cpus"] = draw(st.sampled_from([2, 4, 8]))
    job = {
        "name": draw(st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True)),
        "framework": "custom",
        "image": draw(st.sampled_from(["gcr.io/p/a:1", "gcr.io/p/b:2"])),
        "command": draw(_command),
        "args": draw(st.lists(_token, max_size=2)),
        "env": draw(_env),
        "primary": primary,
        "labels": draw(st.dictionaries(st.sampled_from(["team", "env"]), _label_value, max_size=2)),
    }
    if draw(st.booleans()):
        job["workers"] = {"replicas": draw(st.integers(1, 9)), "env": draw(_env)}
        if draw(st.booleans()):
            job["workers"]["args"] = draw(st.lists(_token, max_size=2))
    if draw(st.booleans()) and accel and "workers" in job:
        job["reduction_servers"] = {"replicas": draw(st.sampled_from([1, 3, "auto"]))}
    elif draw(st.booleans()):
        job["parameter_servers"] = {"replicas": draw(st.integers(1, 3)), "cpus": 8,
                                    "image": draw(st.sampled_from([None, "gcr.io/p/ps:1"]))}
    if draw(st.booleans()):
        job["evaluators"] = {"replicas": 1, "command": draw(_command)}
    if draw(st.booleans()):
        job["timeout"] = draw(st.sampled_from(["90m", "2h", "7d", "45s"]))
    return DistributedJob.from_dict({k: v for k, v in job.items() if v is not None})


def _semantics(job: DistributedJob) -> list:
    return [(r.name, r.replicas if r.name is not RoleName.REDUCTION_SERVERS else None, r.accelerator,
             r.image if r.name is not RoleName.REDUCTION_SERVERS else None,
             r.command if r.name is not RoleName.REDUCTION_SERVERS else None, r.args, r.env)
            for r in effective_roles(job) if r.name is not RoleName.REDUCTION_SERVERS] + [
        job.timeout, job.labels, job.name]


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs())
def test_round_trip_native_is_a_fixed_point_and_meaning_survives(job):
    native = compile_native(job)
    imported, _ = import_with_notes(native)
    assert compile_native(imported) == native           # native -> IR -> native is exact
    assert _semantics(imported) == _semantics(job)       # IR -> native -> IR keeps what each replica runs
    assert import_with_notes(json.loads(json.dumps(native)))[0] == imported  # via JSON text too


def test_cpu_only_workers_beside_a_gpu_master_are_accelerator_none():
    job = BACKEND.import_native({"trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-8", "masterConfig": {
            "imageUri": "i", "acceleratorConfig": {"count": 1, "type": "NVIDIA_TESLA_T4"}},
        "workerType": "n1-standard-8", "workerCount": 3}})
    assert job.workers.accelerator == "none" and job.workers.replicas == 3
