"""import_native: the three native forms, malformed input, and round trips over generated jobs."""

from __future__ import annotations

import json
import string

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist.kit import (
    DistributedJob,
    NoteKind,
    OmnidistError,
    UnsupportedFeatureError,
    ValidationError,
    read_document,
    structure,
)
from omnidist_vertex import VertexBackend, VertexSettings

backend = VertexBackend()
RS = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
SEED_FLAGS = [
    "machine-type=n1-highmem-96,replica-count=1,accelerator-type=NVIDIA_TESLA_V100,accelerator-count=8,"
    "container-image-uri=gcr.io/p/trainer:1",
    "machine-type=n1-highmem-96,replica-count=4,accelerator-type=NVIDIA_TESLA_V100,accelerator-count=8,"
    "container-image-uri=gcr.io/p/trainer:1",
    f"machine-type=n1-highcpu-16,replica-count=16,container-image-uri={RS}",
]

# As GET customJobs/N answers the REST client: enums as numbers, int64 as strings, output-only fields.
API_JOB = {
    "name": "projects/123/locations/europe-west4/customJobs/456",
    "displayName": "Cassava ResNet",
    "state": 3,
    "createTime": "2024-05-01T00:00:00Z",
    "startTime": "2024-05-01T00:01:00Z",
    "updateTime": "2024-05-01T00:02:00Z",
    "webAccessUris": {},
    "error": {"code": 0},
    "labels": {"team": "vision", "omnidist-request-id": "abc123"},
    "jobSpec": {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "a2-highgpu-8g", "acceleratorType": 8, "acceleratorCount": 8},
                "replicaCount": "1",
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
                "containerSpec": {
                    "imageUri": "europe-docker.pkg.dev/p/r/pytorch-trainer:2",
                    "command": ["torchrun"],
                    "args": ["train.py"],
                    "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                },
            },
            {
                "machineSpec": {
                    "machineType": "a2-highgpu-8g",
                    "acceleratorType": "NVIDIA_TESLA_A100",
                    "acceleratorCount": "8",
                },
                "replicaCount": 3,
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": "200"},
                "containerSpec": {
                    "imageUri": "europe-docker.pkg.dev/p/r/pytorch-trainer:2",
                    "command": ["torchrun"],
                    "args": ["train.py"],
                    "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                },
            },
            {
                "machineSpec": {"machineType": "n1-highcpu-16"},
                "replicaCount": "10",
                "containerSpec": {
                    "imageUri": "europe-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
                },
            },
        ],
        "scheduling": {"timeout": "86400s", "strategy": 4, "restartJobOnWorkerRestart": True},
        "serviceAccount": "sa@p.iam.gserviceaccount.com",
        "baseOutputDirectory": {"outputUriPrefix": "gs://b/o"},
    },
}


def test_api_job_with_numbers_and_output_only_fields():
    job = backend.import_native(API_JOB)
    assert (
        job.name == "cassava-resnet" and job.framework.value == "custom"
    )  # migrate infers it from the image
    assert str(job.primary.accelerator) == "A100:8" and job.primary.disk_gb == 200
    assert job.workers.replicas == 3 and job.workers.accelerator is None  # inherited from the primary
    assert (
        job.reduction_servers.replicas == 10 and job.reduction_servers.image is None
    )  # the region's own image
    assert (job.image, job.command, job.args, job.env, job.primary.env) == (
        "europe-docker.pkg.dev/p/r/pytorch-trainer:2",
        ("torchrun",),
        ("train.py",),
        {},
        {"NCCL_DEBUG": "INFO"},
    )
    assert (job.spot, job.timeout, job.labels) == (True, 86400, {"team": "vision"})
    assert job.backends["vertex"] == {
        "machine_types": {
            "primary": "a2-highgpu-8g",
            "workers": "a2-highgpu-8g",
            "reduction_servers": "n1-highcpu-16",
        },
        "region": "europe-west4",
        "boot_disk_type": "pd-ssd",
        "restart_job_on_worker_restart": True,
        "service_account": "sa@p.iam.gserviceaccount.com",
        "base_output_dir": "gs://b/o",
    }


def test_api_job_round_trips(valid):
    job = backend.import_native(API_JOB)
    request = valid(omnidist.compile(job, backend="vertex").request)
    pools = request["jobSpec"]["workerPoolSpecs"]
    assert pools[2]["containerSpec"]["imageUri"].startswith("europe-docker")  # the job's region
    assert [p["replicaCount"] for p in pools] == ["1", "3", "10"]
    assert [p["machineSpec"]["machineType"] for p in pools] == [
        "a2-highgpu-8g",
        "a2-highgpu-8g",
        "n1-highcpu-16",
    ]
    again = backend.import_native(request)  # no resource name now, so the image is kept as written
    assert again.reduction_servers.image == pools[2]["containerSpec"]["imageUri"]
    assert omnidist.compile(again, backend="vertex").request == request


def test_gcloud_config_file(tmp_path):
    config = {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "n1-standard-8",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "replicaCount": 1,
                "containerSpec": {"imageUri": "gcr.io/p/tf2-gpu:1"},
            },
            {
                "machineSpec": {
                    "machineType": "n1-standard-8",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "replicaCount": 2,
                "containerSpec": {"imageUri": "gcr.io/p/tf2-gpu:1"},
            },
            {
                "machineSpec": {"machineType": "n1-highmem-8"},
                "replicaCount": 2,
                "containerSpec": {"imageUri": "gcr.io/p/tf2-gpu:1"},
            },
        ]
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    job, notes = backend.import_with_notes(read_document(path))
    assert job.framework.value == "custom" and job.name == "vertex-job"  # nothing in the spec says
    assert {n.field for n in notes} == {"framework", "name"}
    assert job.parameter_servers.replicas == 2 and job.reduction_servers is None
    assert job.workers.replicas == 2 and str(job.primary.accelerator) == "T4:1"


def test_worker_pool_spec_flags_from_the_seed(valid):
    job = backend.import_native(SEED_FLAGS)
    assert job.reduction_servers.replicas == 16 and job.workers.replicas == 4
    assert str(job.primary.accelerator) == "V100:8"
    request = valid(omnidist.compile(job, backend="vertex").request)
    assert [p["replicaCount"] for p in request["jobSpec"]["workerPoolSpecs"]] == ["1", "4", "16"]
    assert request["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "n1-highmem-96"


def test_worker_pool_spec_flags_with_options():
    job = backend.import_native(
        {
            "worker_pool_specs": [
                "--worker-pool-spec=machine-type=n1-standard-4,container-image-uri=gcr.io/p/t:1",
                "",
                "",
                "machine-type=n1-standard-4,replica-count=2,container-image-uri=gcr.io/p/t:1,"
                "disk-type=pd-standard,disk-size=50",
            ],
            "display_name": "My Job",
            "command": "python -m t",
            "args": ["--x", "1"],
            "labels": {"a": "b"},
            "region": "asia-east1",
            "service_account": "sa@x",
            "enable_web_access": True,
        }
    )
    assert job.name == "my-job" and job.command == ("python", "-m", "t") and job.args == ("--x", "1")
    assert job.evaluators.replicas == 2 and job.evaluators.disk_gb == 50 and job.workers is None
    assert (
        job.backends["vertex"]["region"] == "asia-east1"
        and job.backends["vertex"]["enable_web_access"] is True
    )
    assert job.backends["vertex"]["boot_disk_type"] == "pd-standard"


@pytest.mark.parametrize(
    "native, error, where",
    [
        ("not a mapping", ValidationError, ""),
        ({"something": 1}, ValidationError, ""),
        ({"workerPoolSpecs": []}, ValidationError, "workerPoolSpecs"),
        ({"workerPoolSpecs": [{}]}, ValidationError, "workerPoolSpecs[0]"),
        (
            {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "n1-standard-4"},
                        "replicaCount": "2",
                        "containerSpec": {"imageUri": "i"},
                    }
                ]
            },
            ValidationError,
            "workerPoolSpecs[0].replicaCount",
        ),
        (
            {"workerPoolSpecs": [{"machineSpec": {}, "containerSpec": {"imageUri": "i"}}]},
            ValidationError,
            "workerPoolSpecs[0].machineSpec.machineType",
        ),
        (
            {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "m"},
                        "replicaCount": "x",
                        "containerSpec": {"imageUri": "i"},
                    }
                ]
            },
            ValidationError,
            "workerPoolSpecs[0].replicaCount",
        ),
        (
            {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "m"},
                        "containerSpec": {"imageUri": "i", "env": [{"value": 1}]},
                    }
                ]
            },
            ValidationError,
            "workerPoolSpecs[0].containerSpec.env[0].name",
        ),
        (
            {"workerPoolSpecs": [{"machineSpec": {"machineType": "m"}, "containerSpec": "i"}]},
            ValidationError,
            "workerPoolSpecs[0].containerSpec",
        ),
        (
            {
                "workerPoolSpecs": [{"machineSpec": {"machineType": "m"}, "containerSpec": {"imageUri": "i"}}]
                * 5
            },
            ValidationError,
            "workerPoolSpecs",
        ),
        (
            {
                "jobSpec": {
                    "workerPoolSpecs": [
                        {"machineSpec": {"machineType": "m"}, "containerSpec": {"imageUri": "i"}}
                    ],
                    "scheduling": {"timeout": "1 day"},
                }
            },
            ValidationError,
            "jobSpec.scheduling.timeout",
        ),
        (
            {
                "jobSpec": {
                    "workerPoolSpecs": [
                        {"machineSpec": {"machineType": "m"}, "containerSpec": {"imageUri": "i"}}
                    ],
                    "scheduling": {"timeout": "0s"},
                }
            },
            ValidationError,
            "jobSpec.scheduling.timeout",
        ),
        (
            {"worker_pool_specs": ["machine-typ=n1-standard-4"]},
            ValidationError,
            "worker_pool_specs[0].machine-typ",
        ),
        ({"worker_pool_specs": "machine-type=n1-standard-4"}, ValidationError, "worker_pool_specs"),
        ({"worker_pool_specs": [], "regoin": "x"}, ValidationError, "regoin"),
    ],
)
def test_malformed_input_names_the_field(native, error, where):
    with pytest.raises(error) as err:
        backend.import_native(native)
    assert err.value.problems[0].path == where


@pytest.mark.parametrize(
    "native, feature",
    [
        (
            {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "n1-standard-4"},
                        "pythonPackageSpec": {"executorImageUri": "e", "pythonModule": "m",
                                              "packageUris": ["gs://b/t.tar.gz", "gs://b/dep.whl"]},
                    }
                ]
            },
            "workerPoolSpecs[0].pythonPackageSpec.packageUris",
        ),
        (
            {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "n1-standard-4"},
                        "pythonPackageSpec": {"executorImageUri": "e", "pythonModule": "m",
                                              "packageUris": ["gs://b/t.tar.gz"]},
                    },
                    {
                        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 2,
                        "containerSpec": {"imageUri": "i"},
                    },
                ]
            },
            "workerPoolSpecs[1]",
        ),
        (
            {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "n1-standard-4", "acceleratorType": 6},
                        "containerSpec": {"imageUri": "i"},
                    }
                ]
            },
            "workerPoolSpecs[0].machineSpec.acceleratorType TPU_V2",
        ),
        (
            {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x2"},
                        "containerSpec": {"imageUri": "i"},
                    }
                ]
            },
            "workerPoolSpecs[0].machineSpec.tpuTopology",
        ),
        (
            {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "a4x-highgpu-4g", "acceleratorType": "NVIDIA_GB200"},
                        "containerSpec": {"imageUri": "i"},
                    }
                ]
            },
            "accelerator NVIDIA_GB200",
        ),
        (
            {"worker_pool_specs": ["machine-type=n1-standard-4,executor-image-uri=e,python-module=m"]},
            "--worker-pool-spec executor-image-uri",
        ),
    ],
)
def test_what_the_portable_job_cannot_hold(native, feature):
    with pytest.raises(UnsupportedFeatureError) as err:
        backend.import_native(native)
    assert err.value.subject == feature and err.value.exit_code == 3
    assert str(err.value).startswith(f"the portable job cannot hold {feature}")  # the side that lacks it
    if "TPU" in feature or "tpu" in feature:
        assert "does not import TPU jobs" in str(err.value)


POOL = {"machineSpec": {"machineType": "n1-standard-8"}, "containerSpec": {"imageUri": "gcr.io/p/t:1"}}


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"scheduling": {"disableRetries": True}}, "scheduling.disableRetries"),
        ({"scheduling": {"maxWaitDuration": "3600s"}}, "scheduling.maxWaitDuration"),
        ({"pscInterfaceConfig": {"networkAttachment": "n"}}, "jobSpec.pscInterfaceConfig"),
        ({"reservedIpRanges": ["r"]}, "jobSpec.reservedIpRanges"),
        ({"experiment": "e"}, "jobSpec.experiment"),
        ({"workerPoolSpecs": [{**POOL, "nfsMounts": [{"server": "s", "path": "/p", "mountPoint": "m"}]}]},
         "workerPoolSpecs[0].nfsMounts"),
        ({"workerPoolSpecs": [{**POOL, "machineSpec": {**POOL["machineSpec"], "reservationAffinity": {
            "reservationAffinityType": "ANY_RESERVATION"}}}]}, "workerPoolSpecs[0].machineSpec.reservationAffinity"),
    ],
)
def test_extras_the_job_runs_without_are_dropped_with_a_note(spec, field):
    job, notes = backend.import_with_notes({"displayName": "j", "jobSpec": {"workerPoolSpecs": [POOL], **spec}})
    assert [n.field for n in notes if n.kind is NoteKind.DROPPED] == [field]


def test_flex_start_capacity_becomes_on_demand_with_a_change():
    job, notes = backend.import_with_notes({"workerPoolSpecs": [POOL], "scheduling": {"strategy": "FLEX_START"}})
    assert job.spot is False
    assert [(n.kind, n.field) for n in notes if n.field.startswith("scheduling")] == [
        (NoteKind.CHANGED, "scheduling.strategy")]


def test_proto_field_names_read_like_json_names():
    """protobuf's JSON parsers take ``worker_pool_specs`` as well as ``workerPoolSpecs``; labels keep their keys."""
    snake = {"display_name": "snake-job", "labels": {"cost_center": "ml"}, "job_spec": {"worker_pool_specs": [{
        "machine_spec": {"machine_type": "n1-standard-8", "accelerator_type": "NVIDIA_TESLA_T4",
                         "accelerator_count": 1},
        "replica_count": 1, "disk_spec": {"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 200},
        "container_spec": {"image_uri": "gcr.io/p/t:1", "command": [], "args": ["--epochs=3"],
                           "env": [{"name": "A", "value": "1"}]}}],
        "service_account": "sa@p.iam.gserviceaccount.com", "scheduling": {"timeout": "3600s"}}}
    camel = {"displayName": "snake-job", "labels": {"cost_center": "ml"}, "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
        "replicaCount": 1, "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
        "containerSpec": {"imageUri": "gcr.io/p/t:1", "command": [], "args": ["--epochs=3"],
                          "env": [{"name": "A", "value": "1"}]}}],
        "serviceAccount": "sa@p.iam.gserviceaccount.com", "scheduling": {"timeout": "3600s"}}}
    job = backend.import_native(snake)
    assert job == backend.import_native(camel)
    assert job.labels == {"cost_center": "ml"} and job.args == ("--epochs=3",) and job.timeout == 3600


def test_one_worker_pool_written_as_a_mapping():
    """gcloud's parser wraps a lone value of a repeated field in a list."""
    assert backend.import_native({"workerPoolSpecs": POOL}) == backend.import_native({"workerPoolSpecs": [POOL]})


def test_a_tuning_job_imports_with_its_search():
    job, notes = backend.import_with_notes({"displayName": "hp", "studySpec": {"metrics": [
        {"metricId": "f1", "goal": "MAXIMIZE"}], "parameters": [
        {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}]},
        "maxTrialCount": 8, "parallelTrialCount": 2, "trialJobSpec": {"workerPoolSpecs": [POOL]}})
    assert job.name == "hp" and job.image == "gcr.io/p/t:1"
    assert (job.tuning.metric.name, list(job.tuning.parameters), job.tuning.max_trials) == ("f1", ["lr"], 8)
    assert not [n for n in notes if n.kind is NoteKind.DROPPED]


def test_retired_k80_becomes_t4_with_a_change():
    job, notes = backend.import_with_notes({"workerPoolSpecs": [{**POOL, "machineSpec": {
        "machineType": "n1-standard-4", "acceleratorType": 1, "acceleratorCount": 2}}]})
    assert str(job.primary.accelerator) == "T4:2"
    assert [n.kind for n in notes if "K80" in n.message] == [NoteKind.CHANGED]


def test_machine_sizes_are_recorded_for_every_pool():
    """``n1-highmem-32`` stays 32 vCPUs and 208 GB; a family outside the catalog is read from its name."""
    job = backend.import_native({"workerPoolSpecs": [
        {**POOL, "machineSpec": {"machineType": "n1-highmem-32"}},
        {**POOL, "machineSpec": {"machineType": "n2-standard-4"}, "replicaCount": 2}]})
    assert (job.primary.cpus, job.primary.memory_gb) == (32, 208)
    assert (job.workers.cpus, job.workers.memory_gb) == (4, 16)


def test_pools_with_different_boot_disk_types_get_one_with_a_note():
    job, notes = backend.import_with_notes({"workerPoolSpecs": [
        {**POOL, "diskSpec": {"bootDiskType": "pd-standard"}}, {**POOL, "replicaCount": 2}]})
    assert job.backends["vertex"]["boot_disk_type"] == "pd-standard"
    assert [(n.kind, n.field) for n in notes if n.field.endswith(".disk")] == [(NoteKind.APPROXIMATED, "workers.disk")]


def test_fields_outside_the_api_are_invalid_input():
    with pytest.raises(ValidationError) as err:
        backend.import_native({"displayName": "x", "workerPoolSpecs": [POOL], "description": "d"})
    assert err.value.problems[0].path == "displayName"


PACKAGE_POOL = {
    "machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
    "replicaCount": "1",
    "pythonPackageSpec": {
        "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-2.py310:latest",
        "packageUris": ["gs://b/trainer-0.1.tar.gz"],
        "pythonModule": "trainer.task",
        "args": ["--epochs", "3"],
        "env": [{"name": "MODE", "value": "fast"}],
    },
}


def test_a_python_package_job_is_a_module_job_on_the_prebuilt_container():
    job, notes = backend.import_with_notes({"workerPoolSpecs": [PACKAGE_POOL], "baseOutputDirectory": {
        "outputUriPrefix": "gs://b/out"}})
    assert (job.module, job.code, job.framework.value, job.framework_version) == (
        "trainer.task", "gs://b/trainer-0.1.tar.gz", "pytorch", "2.2")
    assert job.image is None and job.args == ("--epochs", "3") and job.env == {"MODE": "fast"}
    assert job.outputs["model"].default and job.backends["vertex"]["base_output_dir"] == "gs://b/out"
    assert not [n for n in notes if n.field == "framework"]  # the prebuilt image says it
    assert any(n.field == "baseOutputDirectory" and "AIP_MODEL_DIR" in n.message for n in notes)
    compiled = omnidist.compile(job, backend="vertex", settings={})
    pool = compiled.request["jobSpec"]["workerPoolSpecs"][0]
    spec = pool["pythonPackageSpec"]
    assert {k: spec[k] for k in ("executorImageUri", "packageUris", "pythonModule", "args")} == {
        k: PACKAGE_POOL["pythonPackageSpec"][k] for k in ("executorImageUri", "packageUris", "pythonModule", "args")}
    assert compiled.request["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://b/out"}
    again = backend.import_native(compiled.request)  # what omnidist compiled reads back as the same job
    assert (again.module, again.code, again.framework_version, again.outputs) == (
        job.module, job.code, job.framework_version, job.outputs)


def test_another_multi_region_of_the_prebuilt_image_is_reported():
    pool = {**PACKAGE_POOL, "pythonPackageSpec": {**PACKAGE_POOL["pythonPackageSpec"], "executorImageUri":
                                                  "europe-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-2.py310:latest"}}
    job, notes = backend.import_with_notes({"workerPoolSpecs": [pool]})
    assert job.framework_version == "2.2"
    note = next(n for n in notes if n.field == "workerPoolSpecs[0].pythonPackageSpec.executorImageUri")
    assert note.kind is NoteKind.APPROXIMATED and "us-docker.pkg.dev" in note.message


def test_a_package_on_its_own_executor_image_keeps_the_image():
    pool = {**PACKAGE_POOL, "pythonPackageSpec": {**PACKAGE_POOL["pythonPackageSpec"],
                                                  "executorImageUri": "gcr.io/p/trainer-base:3"}}
    job = backend.import_native({"workerPoolSpecs": [pool]})
    assert (job.image, job.framework_version, job.module) == ("gcr.io/p/trainer-base:3", None, "trainer.task")


@pytest.mark.parametrize("spec, where", [
    ({"executorImageUri": "e", "pythonModule": "m"}, "packageUris"),
    ({"executorImageUri": "e", "packageUris": ["gs://b/t.tar.gz"]}, "pythonModule"),
    ({"executorImageUri": "e", "packageUris": ["gs://b/t.tar.gz"], "pythonModule": "m", "entry": "x"}, "entry"),
])
def test_a_malformed_package_spec_names_the_field(spec, where):
    with pytest.raises(ValidationError) as err:
        backend.import_native({"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"},
                                                    "pythonPackageSpec": spec}]})
    assert err.value.problems[0].path == f"workerPoolSpecs[0].pythonPackageSpec.{where}"


def test_the_field_tables_match_the_sdk():
    from google.cloud import aiplatform_v1 as v1

    from omnidist_vertex import importer

    messages = {"CustomJob": v1.CustomJob, "CustomJobSpec": v1.CustomJobSpec, "ContainerSpec": v1.ContainerSpec,
                "DiskSpec": v1.DiskSpec, "HyperparameterTuningJob": v1.HyperparameterTuningJob,
                "MachineSpec": v1.MachineSpec, "Scheduling": v1.Scheduling, "WorkerPoolSpec": v1.WorkerPoolSpec,
                "PythonPackageSpec": v1.PythonPackageSpec}
    for name, message in messages.items():
        fields = {f.json_name for f in message.pb().DESCRIPTOR.fields}
        assert importer.FIELDS[name] == fields - importer.OUTPUT_ONLY, name
    numbers = {m.name: m.value for m in v1.AcceleratorType}
    from omnidist_vertex.tables import ACCELERATOR_BY_NUMBER

    assert {name: numbers[name] for name in ACCELERATOR_BY_NUMBER.values()} == {
        v: k for k, v in ACCELERATOR_BY_NUMBER.items()}


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 20)
    | st.text(max_size=8)
    | st.sampled_from(["n1-standard-4", "NVIDIA_TESLA_T4", "3600s", RS, "8"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "jobSpec",
                    "workerPoolSpecs",
                    "machineSpec",
                    "machineType",
                    "acceleratorType",
                    "acceleratorCount",
                    "replicaCount",
                    "containerSpec",
                    "imageUri",
                    "env",
                    "name",
                    "value",
                    "command",
                    "args",
                    "diskSpec",
                    "bootDiskSizeGb",
                    "scheduling",
                    "timeout",
                    "strategy",
                    "labels",
                    "displayName",
                    "worker_pool_specs",
                    "baseOutputDirectory",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_garbage_raises_only_omnidist_errors(native):
    try:
        backend.import_native(native)
    except OmnidistError:
        pass


# --- round trips over generated jobs ---------------------------------------------------------------

GPUS = [
    "T4:1",
    "T4:4",
    "V100:1",
    "V100:8",
    "P100:2",
    "P4:1",
    "A100:8",
    "A100:16",
    "A100-80GB:4",
    "L4:1",
    "L4:8",
    "H100:2",
    "H100:8",
    "H100-MEGA:8",
    "H200:8",
    "B200:8",
]
WORDS = st.text(alphabet=string.ascii_lowercase + "-=./", min_size=1, max_size=6)
ARGV = st.lists(WORDS, max_size=3)
ENV = st.dictionaries(
    st.from_regex(r"[A-Z][A-Z0-9_]{0,6}", fullmatch=True),
    st.text(alphabet=string.ascii_letters + " :/=", max_size=6),
    max_size=3,
)
IMAGES = st.sampled_from(["gcr.io/p/a:1", "gcr.io/p/b:2"])


def _role(replicas, gpus=True):
    optional = {"env": ENV, "image": IMAGES, "command": ARGV, "args": ARGV, "disk_gb": st.integers(50, 500)}
    if gpus:
        optional["accelerator"] = st.sampled_from(GPUS)
    required = {"replicas": replicas} if replicas is not None else {}
    return st.fixed_dictionaries(required, optional=optional)


@st.composite
def jobs(draw):
    data = {
        "name": draw(st.from_regex(r"[a-z][a-z0-9-]{0,15}", fullmatch=True)),
        "framework": draw(st.sampled_from(["pytorch", "tensorflow", "horovod", "deepspeed", "custom"])),
        "image": draw(IMAGES),
        "command": draw(ARGV),
        "args": draw(ARGV),
        "env": draw(ENV),
        "primary": draw(_role(None)),
        "spot": draw(st.booleans()),
        "labels": draw(
            st.dictionaries(
                st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True),
                st.from_regex(r"[a-z0-9_-]{0,8}", fullmatch=True),
                max_size=2,
            )
        ),
        "processes_per_node": draw(st.sampled_from(["auto", 1, 2, 8])),
    }
    timeout = draw(st.none() | st.integers(60, 10**6))
    if timeout:
        data["timeout"] = timeout
    if draw(st.booleans()):
        data["workers"] = draw(_role(st.integers(1, 4)))
    if draw(st.booleans()):
        data["evaluators"] = draw(_role(st.integers(1, 2)))
    pool2 = draw(st.sampled_from(["none", "ps", "reducers"]))
    gpu_trainers = "accelerator" in data["primary"]
    if pool2 == "ps":
        data["parameter_servers"] = draw(_role(st.integers(1, 3), gpus=False))
    elif pool2 == "reducers" and gpu_trainers:
        data["reduction_servers"] = {
            "replicas": draw(st.sampled_from(["auto", 1, 5])),
            **draw(st.fixed_dictionaries({}, optional={"env": ENV, "image": IMAGES})),
        }
    return DistributedJob.from_dict(data)


SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "region": st.sampled_from(["us-central1", "europe-west4", "asia-east1"]),
        "boot_disk_type": st.sampled_from(["pd-ssd", "pd-standard"]),
        "service_account": st.just("sa@p.iam.gserviceaccount.com"),
        "restart_job_on_worker_restart": st.booleans(),
    },
)


def _compile(job, base):
    merged = {**base, **job.backends.get("vertex", {})}
    return backend.compile(job, structure(merged, VertexSettings))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs(), SETTINGS)
def test_round_trip_reproduces_the_request(valid, job, base):
    try:
        first = _compile(job, base)
    except OmnidistError:
        return  # a generated job Vertex refuses has nothing to round-trip
    valid(first.request)
    imported = backend.import_native(json.loads(first.render()))
    second = _compile(imported, base)
    assert second.request == first.request
    assert backend.import_native(second.request) == imported


def test_cpu_only_workers_beside_a_gpu_primary_are_accelerator_none():
    job = backend.import_native({"workerPoolSpecs": [
        {"machineSpec": {"machineType": "n1-standard-4", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
         "containerSpec": {"imageUri": "i"}},
        {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 2, "containerSpec": {"imageUri": "i"}}]})
    assert job.workers.accelerator == "none" and job.workers.replicas == 2
    pools = backend.compile(job, backend.settings_type(**job.backends["vertex"])).request["jobSpec"]["workerPoolSpecs"]
    assert "acceleratorType" not in pools[1]["machineSpec"]


@pytest.mark.parametrize("code", ["gs://b/src.tar.gz", "gs://b/src"])
def test_a_compiled_code_and_data_job_reads_back_with_its_references(code):
    """What the compiler wrote for code and data (the unpack line, /gcs/ paths, hints) reads back as
    the job's own code, inputs, outputs and ${{…}} references, so it can move to another cloud."""
    job = DistributedJob.from_dict({
        "name": "rt", "framework": "pytorch", "image": "gcr.io/p/t:1", "command": ["python", "train.py"],
        "code": code, "inputs": {"data": "gs://b/data", "epochs": 3}, "outputs": {"model": "default"},
        "args": ["--data", "${{inputs.data}}", "--out=${{outputs.model}}", "--epochs", "${{inputs.epochs}}"],
        "env": {"DATA": "${{inputs.data}}"}, "primary": {"accelerator": "T4:1"}})
    request = omnidist.compile(job, backend="vertex", settings={"staging_bucket": "gs://b/staging"}).request
    again = backend.import_native(request)
    assert (again.code, again.command) == (code, ("python", "train.py"))
    assert again.args == ("--data", "${{inputs.data}}", "--out=${{outputs.model}}", "--epochs", "3")
    assert again.env == {"DATA": "${{inputs.data}}"}
    assert again.inputs["data"].uri == "gs://b/data" and again.outputs["model"].default
    assert omnidist.compile(again, backend="vertex", settings={}).request == request


def test_a_hand_written_sh_c_command_is_kept_as_written():
    pool = {"machineSpec": {"machineType": "n1-standard-4"},
            "containerSpec": {"imageUri": "i", "command": ["sh", "-c", "cd /app && python t.py"]}}
    job = backend.import_native({"workerPoolSpecs": [pool]})
    assert job.command == ("sh", "-c", "cd /app && python t.py") and job.code is None
