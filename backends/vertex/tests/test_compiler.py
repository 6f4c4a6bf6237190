"""compile: goldens for the seed examples, machine choice and validation, every request
checked against the SDK's own CustomJob type."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import omnidist
from omnidist.kit import (
    DistributedJob,
    Feature,
    NoteCode,
    NoteKind,
    UnsupportedFeatureError,
    ValidationError,
    structure,
)
from omnidist_vertex import VertexBackend, VertexSettings

GOLDEN = Path(__file__).parent / "golden"
BASE = {
    "name": "demo",
    "framework": "pytorch",
    "image": "us-docker.pkg.dev/p/r/trainer:1",
    "command": ["python", "-m", "trainer.task"],
}


def build(data: dict, **settings):
    job = DistributedJob.from_dict({**BASE, **data})
    return VertexBackend().compile(job, structure(settings, VertexSettings, path="backends.vertex"))


def pools(compiled) -> list:
    request = compiled if isinstance(compiled, dict) else compiled.request
    return request["jobSpec"]["workerPoolSpecs"]


def machine(pool) -> str:
    return pool["machineSpec"]["machineType"]


def check_golden(name: str, compiled, valid) -> None:
    valid(compiled.request)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        path.write_text(compiled.render("json") + "\n")
    assert compiled.request == json.loads(path.read_text())


# --- the seed examples (golden) ------------------------------------------------------------------


def test_golden_v100_reduction_server(valid):
    compiled = build(
        {
            "primary": {"accelerator": "V100:8"},
            "workers": {"replicas": 4},
            "reduction_servers": {"replicas": "auto"},
        },
        machine_types={"primary": "n1-highmem-96", "workers": "n1-highmem-96"},
    )
    check_golden("v100_reduction_server", compiled, valid)
    reducers = pools(compiled)[2]
    assert (reducers["replicaCount"], machine(reducers)) == ("16", "n1-highcpu-16")
    assert (
        reducers["containerSpec"]["imageUri"]
        == "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    )
    assert "acceleratorType" not in reducers["machineSpec"]
    hints = " ".join(n.message for n in compiled.notes(NoteKind.HINT))
    assert "bucket_cap_mb=64" in hints and "HOROVOD_FUSION_THRESHOLD=134217728" in hints
    assert any("= 16" in n.message for n in compiled.notes(NoteKind.DEFAULTED))


def test_golden_a2_megagpu_reduction_server(valid):
    compiled = build(
        {
            "primary": {"accelerator": "A100:16"},
            "workers": {"replicas": 7},
            "reduction_servers": {"replicas": "auto"},
        }
    )
    check_golden("a2_megagpu_reduction_server", compiled, valid)
    assert [machine(p) for p in pools(compiled)] == ["a2-megagpu-16g", "a2-megagpu-16g", "n1-highcpu-16"]
    assert pools(compiled)[2]["replicaCount"] == "25"


def test_golden_parameter_servers_only(valid):
    compiled = build(
        {
            "framework": "tensorflow",
            "primary": {"cpus": 4},
            "parameter_servers": {"replicas": 2, "cpus": 8, "memory_gb": 52},
        }
    )
    check_golden("parameter_servers_only", compiled, valid)
    assert pools(compiled)[1] == {}
    assert [machine(p) for p in (pools(compiled)[0], pools(compiled)[2])] == ["n1-standard-4", "n1-highmem-8"]
    env = {e["name"]: e["value"] for e in pools(compiled)[2]["containerSpec"]["env"]}
    assert "OMNIDIST_POOL2_ROLE" not in env and "OMNIDIST_ROLE" not in env  # pool 2 reads as parameter servers


def test_evaluators_only_keep_middle_placeholders(valid):
    compiled = build({"primary": {}, "evaluators": {"replicas": 1}})
    assert [bool(p) for p in pools(valid(compiled.request))] == [True, False, False, True]


def test_trailing_empty_pools_dropped(valid):
    assert len(pools(valid(build({"primary": {}}).request))) == 1
    assert len(pools(valid(build({"primary": {}, "workers": {"replicas": 2}}).request))) == 2


def test_reducers_without_workers_stay_at_pool_2(valid):
    compiled = build({"primary": {"accelerator": "V100:8"}, "reduction_servers": {"replicas": 2}})
    assert pools(valid(compiled.request))[1] == {}
    assert pools(compiled)[2]["containerSpec"]["imageUri"].endswith("reductionserver:latest")
    assert any("single training node" in n.message for n in compiled.notes(NoteKind.HINT))


# --- Reduction Server rules -------------------------------------------------------------------------


# (A job no cloud can run - reducers with parameter servers, on CPU trainers or with GPUs of
# their own - is refused before any backend compiles: tests/conformance/test_portable_rules.py.)


def test_custom_framework_keeps_reducers_with_a_note(valid):
    compiled = build(
        {
            "framework": "custom",
            "primary": {"accelerator": "V100:8"},
            "workers": {"replicas": 1},
            "reduction_servers": {"replicas": "auto"},
        }
    )
    # n1-standard-32 (the default pick) has too few vCPUs for 8×V100's 100 Gbps: 32 Gbps each.
    assert pools(valid(compiled.request))[2]["replicaCount"] == "2"  # ceil(2 × 32 / 32)
    assert any(
        "google-reduction-server" in n.message and n.field == "framework" for n in compiled.diagnostics
    )
    assert any(n.kind.value == "hint" and "96 vCPUs unlocks 100 Gbps" in n.message for n in compiled.diagnostics)


def test_gpu_bandwidth_needs_the_vcpus_compute_engine_lists(valid):
    job = {"primary": {"accelerator": "V100:8"}, "workers": {"replicas": 1}, "reduction_servers": {"replicas": "auto"}}
    compiled = build(job, machine_types={"primary": "n1-highmem-96", "workers": "n1-highmem-96"})
    assert pools(valid(compiled.request))[2]["replicaCount"] == "7"  # ceil(2 × 100 / 32)
    assert not any(n.kind.value == "hint" and "unlocks" in n.message for n in compiled.diagnostics)


@pytest.mark.parametrize(
    "region, multi",
    [
        ("europe-west4", "europe"),
        ("asia-northeast1", "asia"),
        ("us-east1", "us"),
        ("northamerica-northeast1", "us"),
    ],
)
def test_reducer_image_follows_region(region, multi, valid):
    compiled = build(
        {
            "primary": {"accelerator": "T4:4"},
            "workers": {"replicas": 1},
            "reduction_servers": {"replicas": 1},
        },
        region=region,
    )
    assert (
        pools(valid(compiled.request))[2]["containerSpec"]["imageUri"]
        == f"{multi}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    )


def test_auto_reducers_need_known_egress():
    with pytest.raises(ValidationError) as err:
        build(
            {
                "primary": {"accelerator": "V100:1"},
                "workers": {"replicas": 1},
                "reduction_servers": {"replicas": "auto"},
            },
            machine_types={"reduction_servers": "n2-highcpu-32"},
        )
    assert err.value.problems[0].path == "reduction_servers.replicas"


# --- machines --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "role, expected",
    [
        ({}, "n1-standard-4"),
        ({"cpus": 8, "memory_gb": 52}, "n1-highmem-8"),
        ({"cpus": 8, "memory_gb": 10}, "n1-standard-8"),
        ({"cpus": 30}, "n1-standard-32"),
        ({"memory_gb": 100}, "n1-highmem-16"),
        ({"accelerator": "T4:1"}, "n1-standard-4"),
        ({"accelerator": "V100:8"}, "n1-standard-32"),
        ({"accelerator": "V100:8", "cpus": 90}, "n1-standard-96"),
        ({"accelerator": "V100:1", "memory_gb": 40}, "n1-highmem-8"),
        ({"accelerator": "L4:1"}, "g2-standard-4"),
        ({"accelerator": "L4:1", "cpus": 10}, "g2-standard-12"),
        ({"accelerator": "L4:4"}, "g2-standard-48"),
        ({"accelerator": "A100:8"}, "a2-highgpu-8g"),
        ({"accelerator": "A100-80GB:2"}, "a2-ultragpu-2g"),
        ({"accelerator": "H100:8"}, "a3-highgpu-8g"),
        ({"accelerator": "H100-MEGA:8"}, "a3-megagpu-8g"),
        ({"accelerator": "H200:8"}, "a3-ultragpu-8g"),
        ({"accelerator": "B200:8"}, "a4-highgpu-8g"),
    ],
)
def test_smallest_machine_that_fits(role, expected, valid):
    compiled = build({"primary": role})
    assert machine(pools(valid(compiled.request))[0]) == expected
    note = compiled.notes(NoteKind.DEFAULTED)[0]
    assert note.field == "backends.vertex.machine_types.primary" and expected in note.message
    assert note.code is NoteCode.MACHINE_CHOSEN and note.data == {"role": "primary", "machine": expected}


def test_accelerator_names_and_counts(valid):
    spec = pools(valid(build({"primary": {"accelerator": "A100-80GB:4"}}).request))[0]["machineSpec"]
    assert spec == {
        "machineType": "a2-ultragpu-4g",
        "acceleratorType": "NVIDIA_A100_80GB",
        "acceleratorCount": 4,
    }


def test_unavailable_gpu_count_is_explained():
    with pytest.raises(ValidationError) as err:
        build({"primary": {"accelerator": "A100:3"}})
    assert err.value.problems[0].path == "primary.accelerator"
    assert "a2-highgpu-4g (4)" in str(err.value)


@pytest.mark.parametrize(
    "named, accelerator, words",
    [
        ("n1-standard-8", "V100:3", ["n1-standard-8", "V100", "1, 2, 4, 8"]),
        ("a2-highgpu-8g", "V100:8", ["a2-highgpu-8g", "8×A100", "V100"]),
        ("n1-highmem-96", "V100:4", ["n1-highmem-96", "at most 48 vCPUs"]),
        ("n1-standard-8", "A100:1", ["N1 machines cannot take A100", "a2-highgpu-1g"]),
        ("a2-highgpu-3g", "A100:4", ["unknown machine type", "did you mean"]),
        ("n2-standard-8", "T4:1", ["does not know which GPUs n2-standard-8", "n1-*"]),
        ("g2-standard-4", None, ["g2-standard-4 comes with 1×L4", "no accelerator"]),
    ],
)
def test_named_machine_checked(named, accelerator, words):
    with pytest.raises(ValidationError) as err:
        build(
            {"primary": {"accelerator": accelerator} if accelerator else {}}, machine_types={"primary": named}
        )
    assert err.value.problems[0].path == "backends.vertex.machine_types.primary"
    for word in words:
        assert word in str(err.value)


def test_named_machine_too_small_for_the_role():
    with pytest.raises(ValidationError, match="asks for cpus: 16"):
        build({"primary": {"cpus": 16}}, machine_types={"primary": "n1-standard-8"})


def test_unknown_cpu_machine_family_passes_through(valid):
    compiled = build({"primary": {}}, machine_types={"primary": "n2-standard-8"})
    assert machine(pools(valid(compiled.request))[0]) == "n2-standard-8" and not compiled.diagnostics


def test_machine_types_keys_are_roles():
    job = {**BASE, "primary": {}, "backends": {"vertex": {"machine_types": {"workrs": "n1-standard-4"}}}}
    with pytest.raises(ValidationError) as err:
        omnidist.compile(job, backend="vertex")
    assert err.value.problems[0].path == "backends.vertex.machine_types.workrs"
    assert "did you mean 'workers'" in str(err.value)


# --- interconnect ------------------------------------------------------------------------------------


def test_infiniband_maps_to_gpudirect_rdma(valid):
    compiled = build(
        {"primary": {"accelerator": "H200:8"}, "workers": {"replicas": 1}, "interconnect": "infiniband"}
    )
    assert [machine(p) for p in pools(valid(compiled.request))] == ["a3-ultragpu-8g"] * 2
    assert any(n.kind is NoteKind.APPROXIMATED and "RDMA" in n.message for n in compiled.diagnostics)


@pytest.mark.parametrize(
    "primary, named",
    [({"accelerator": "V100:8"}, None), ({}, None), ({"accelerator": "H100:8"}, "a3-highgpu-8g")],
)
def test_infiniband_refused_without_rdma(primary, named):
    settings = {"machine_types": {"primary": named}} if named else {}
    with pytest.raises(UnsupportedFeatureError) as err:
        build({"primary": primary, "interconnect": "infiniband"}, **settings)
    assert err.value.subject == "interconnect: infiniband" and "H200:8 or B200:8" in str(err.value)
    assert err.value.feature is Feature.INFINIBAND


# --- the rest of the request ------------------------------------------------------------------------


def test_scheduling_settings_and_disk(valid):
    compiled = build(
        {
            "primary": {"disk_gb": 200},
            "workers": {"replicas": 1, "disk_gb": 300},
            "timeout": "2h",
            "spot": True,
            "labels": {"team": "vision"},
        },
        service_account="sa@p.iam.gserviceaccount.com",
        network="projects/1/global/networks/n",
        base_output_dir="gs://b/out",
        enable_web_access=True,
        tensorboard="projects/p/locations/l/tensorboards/1",
        boot_disk_type="pd-standard",
        restart_job_on_worker_restart=True,
        persistent_resource_id="pr",
        kms_key_name="projects/p/locations/l/keyRings/k/cryptoKeys/c",
    )
    request = valid(compiled.request)
    spec = request["jobSpec"]
    assert spec["scheduling"] == {"timeout": "7200s", "restartJobOnWorkerRestart": True, "strategy": "SPOT"}
    assert spec["baseOutputDirectory"] == {"outputUriPrefix": "gs://b/out"}
    assert (spec["serviceAccount"], spec["enableWebAccess"], spec["persistentResourceId"]) == (
        "sa@p.iam.gserviceaccount.com",
        True,
        "pr",
    )
    assert [p["diskSpec"] for p in spec["workerPoolSpecs"]] == [
        {"bootDiskType": "pd-standard", "bootDiskSizeGb": 200},
        {"bootDiskType": "pd-standard", "bootDiskSizeGb": 300},
    ]
    assert request["labels"] == {"team": "vision"} and request["displayName"] == "demo"
    assert request["encryptionSpec"] == {"kmsKeyName": "projects/p/locations/l/keyRings/k/cryptoKeys/c"}


def test_tensorboard_needs_a_service_account():
    with pytest.raises(ValidationError, match="service_account"):
        build({"primary": {}}, tensorboard="projects/p/locations/l/tensorboards/1")


def test_env_hints_per_role_and_user_wins(valid):
    compiled = build(
        {
            "env": {"NCCL_DEBUG": "INFO", "OMNIDIST_PROCESSES_PER_NODE": "2"},
            "primary": {"accelerator": "T4:4"},
            "workers": {"replicas": 1, "env": {"X": "1"}},
            "args": ["--epochs", 10],
        }
    )
    first, second = pools(valid(compiled.request))
    env = {e["name"]: e["value"] for e in second["containerSpec"]["env"]}
    assert env == {
        "OMNIDIST_JOB_NAME": "demo",
        "OMNIDIST_FRAMEWORK": "pytorch",
        "OMNIDIST_PROCESSES_PER_NODE": "2",
        "NCCL_DEBUG": "INFO",
        "X": "1",
    }
    assert first["containerSpec"]["args"] == ["--epochs", "10"]
    # T4:4 runs 4 processes per node (auto): Vertex starts the command once, so a launcher does.
    assert first["containerSpec"]["command"] == ["omnidist", "launch", "--nproc-per-node=4", "--", "python", "-m",
                                                 "trainer.task"]


def test_invalid_inputs_name_the_field():
    with pytest.raises(ValidationError) as err:
        build({"image": None, "primary": {}})
    assert err.value.problems[0].path == "primary.image"
    with pytest.raises(ValidationError) as err:
        build({"primary": {}, "labels": {"Team": "x"}})
    assert err.value.problems[0].path == "labels.Team"
    with pytest.raises(ValidationError) as err:
        build({"primary": {}}, boot_disk_type="ssd")
    assert err.value.problems[0].path == "backends.vertex.boot_disk_type"
    with pytest.raises(ValidationError) as err:
        build({"primary": {}, "env": {f"V{i}": "x" for i in range(100)}})
    assert err.value.problems[0].path == "primary.env"


def test_compile_is_deterministic():
    job = {
        "primary": {"accelerator": "V100:8"},
        "workers": {"replicas": 3},
        "reduction_servers": {"replicas": "auto"},
    }
    assert build(job).render() == build(job).render()


def test_compile_imports_no_google_sdk(tmp_path):
    """Compiling (API and CLI) loads no google module a bare interpreter does not already
    have (google's nspkg .pth pre-loads the empty namespaces)."""
    probe = "import sys; print(sorted(m for m in sys.modules if m.startswith('google')))"
    bare = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    job = dict(
        BASE,
        primary={"accelerator": "V100:8"},
        workers={"replicas": 4},
        reduction_servers={"replicas": "auto"},
        backends={"vertex": {"machine_types": {"primary": "n1-highmem-96", "workers": "n1-highmem-96"}}},
    )
    code = (
        "import omnidist, sys\n"
        f"c = omnidist.compile({job!r}, backend='vertex')\n"
        "assert c.request['jobSpec']['workerPoolSpecs'][2]['replicaCount'] == '16'\n"
        "from omnidist_vertex import importer; importer.import_native(c.request)\n" + probe
    )
    after = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    assert after == bare


def test_recovery_restarts_every_worker_together_and_notes_the_rest(valid):
    compiled = build({"primary": {}, "workers": {"replicas": 2}, "spot": True,
                      "recovery": {"max_restarts": 4, "move": True}})
    request = valid(compiled.request)
    assert request["jobSpec"]["scheduling"] == {"strategy": "SPOT", "restartJobOnWorkerRestart": True}
    (note,) = [str(n) for n in compiled.diagnostics if n.field == "recovery"]
    assert "restartJobOnWorkerRestart" in note and "after preemption, capacity, node_failure, up to 4 times" in note
    assert "moving it to the next profile" in note
    single = build({"primary": {}, "recovery": {}})
    assert "scheduling" not in valid(single.request)["jobSpec"]
    assert any("nothing natively" in str(n) for n in single.diagnostics if n.field == "recovery")
    assert not any(n.field == "recovery" for n in build({"primary": {}}).diagnostics)
