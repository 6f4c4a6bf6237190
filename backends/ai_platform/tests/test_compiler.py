"""compile: golden bodies, the ml v1 schema on every body, machines, env, Reduction Server, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import omnidist
from omnidist.kit import DistributedJob, Feature, NoteCode, NoteKind, UnsupportedFeatureError, ValidationError
from omnidist_ai_platform import AIPlatformBackend, AIPlatformSettings
from omnidist_ai_platform.testing import schema_problems

GOLDEN = Path(__file__).parent / "golden"


def compile_checked(job: dict | DistributedJob, **settings) -> omnidist.CompiledJob:
    """Compile and insist that the body has only what the ml v1 discovery document defines."""
    job = job if isinstance(job, DistributedJob) else DistributedJob.from_dict(job)
    compiled = AIPlatformBackend().compile(job, AIPlatformSettings(**settings))
    assert schema_problems(compiled.request) == []
    json.dumps(compiled.request)  # JSON-ready
    return compiled


def base(**extra) -> dict:
    return {"name": "demo-job", "framework": "pytorch", "image": "gcr.io/p/t:1", "command": ["python", "train.py"],
            "primary": {}, **extra}


def test_golden_cassava_matches_snapshot():
    compiled = omnidist.compile(GOLDEN / "cassava.yaml", backend="ai_platform")
    assert schema_problems(compiled.request) == []
    assert compiled.request == json.loads((GOLDEN / "cassava.json").read_text())


def test_golden_documentation_example_compiles_to_the_documented_body():
    job = omnidist.load(GOLDEN / "doc_example.yaml")
    compiled = compile_checked(job, **job.backends["ai_platform"])
    assert compiled.request == json.loads((GOLDEN / "doc_example.json").read_text())
    assert compiled.diagnostics == ()  # every machine was named: nothing defaulted


def test_compile_is_deterministic_and_job_id_is_derived():
    a, b = compile_checked(base()), compile_checked(base())
    assert a.request == b.request
    assert a.request["jobId"] == "demo_job"
    assert compile_checked(base(), job_id="Pinned_1").request["jobId"] == "Pinned_1"


def test_images_omitted_when_equal_to_master_and_kept_when_different():
    ti = compile_checked(base(workers={"replicas": 2}, parameter_servers={"replicas": 1, "image": "gcr.io/p/ps:1"})
                         ).request["trainingInput"]
    assert ti["masterConfig"]["imageUri"] == "gcr.io/p/t:1"
    assert "imageUri" not in ti["workerConfig"]
    assert ti["parameterServerConfig"]["imageUri"] == "gcr.io/p/ps:1"
    assert ti["workerCount"] == 2 and ti["parameterServerCount"] == 1


def test_job_wide_fields_and_enums():
    job = base(timeout="2h", labels={"team": "vision"}, primary={"accelerator": "T4:2", "disk_gb": 200})
    compiled = compile_checked(job, region="europe-west4", service_account="sa@p.iam.gserviceaccount.com",
                               network="projects/1/global/networks/n", job_dir="gs://b/out",
                               use_chief_in_tf_config=True, enable_web_access=True)
    ti = compiled.request["trainingInput"]
    assert compiled.request["labels"] == {"team": "vision"}
    assert ti["region"] == "europe-west4" and ti["scaleTier"] == "CUSTOM"
    assert ti["masterConfig"]["acceleratorConfig"] == {"count": 2, "type": "NVIDIA_TESLA_T4"}
    assert ti["masterConfig"]["diskConfig"] == {"bootDiskSizeGb": 200}
    assert ti["scheduling"] == {"maxRunningTime": "7200s"}
    assert ti["useChiefInTfConfig"] is True and ti["enableWebAccess"] is True
    assert ti["serviceAccount"].startswith("sa@") and ti["jobDir"] == "gs://b/out" and ti["network"]


@pytest.mark.parametrize(("accelerator", "cpus", "machine"), [
    (None, None, "n1-highmem-2"),
    (None, 10, "n1-highcpu-16"),
    ("V100:8", 96, "n1-highcpu-96"),
    ("V100:1", None, "n1-highmem-2"),
    ("A100:1", None, "a2-highgpu-1g"),
    ("A100:8", None, "a2-highgpu-8g"),
    ("P4:4", 40, "n1-highcpu-64"),
    ("T4:1", 32, "n1-highcpu-32"),  # Compute Engine lets one T4 have up to 48 vCPUs
])
def test_smallest_fitting_machine_is_chosen_and_noted(accelerator, cpus, machine):
    primary = {k: v for k, v in {"accelerator": accelerator, "cpus": cpus}.items() if v is not None}
    compiled = compile_checked(base(primary=primary))
    assert compiled.request["trainingInput"]["masterType"] == machine
    note = next(n for n in compiled.diagnostics if n.field == "primary.machine_type")
    assert note.kind is NoteKind.DEFAULTED and machine in note.message
    assert note.code is NoteCode.MACHINE_CHOSEN and note.data == {"role": "primary", "machine": machine}


@pytest.mark.parametrize(("machine", "accelerator", "fragment"), [
    ("a2-highgpu-1g", "V100:1", "comes with 1×A100"),
    ("n1-standard-8", "A100:1", "a2-highgpu"),
    ("n1-highmem-96", "V100:1", "at most 12 vCPUs"),
    ("n1-standard-8", "T4:8", "counts 1, 2, 4"),
])
def test_named_machine_that_cannot_take_the_accelerator_is_rejected(machine, accelerator, fragment):
    with pytest.raises(ValidationError) as err:
        compile_checked(base(primary={"accelerator": accelerator}), machine_types={"primary": machine})
    assert "backends.ai_platform.machine_types.primary" in str(err.value) and fragment in str(err.value)


@pytest.mark.parametrize("accelerator", ["A100-80GB", "L4", "H100", "H100-MEGA", "H200", "B200"])
def test_accelerators_legacy_never_had_exit_3_and_suggest_vertex(accelerator):
    with pytest.raises(UnsupportedFeatureError) as err:
        compile_checked(base(primary={"accelerator": f"{accelerator}:1"}))
    assert err.value.exit_code == 3 and accelerator in err.value.subject and "--backend vertex" in str(err.value)


@pytest.mark.parametrize("labels, key, words", [
    ({"Team": "vision"}, "Team", "start with a lowercase letter"),
    ({"owner": "someone@example.com"}, "owner", "holds '.@'"),
    ({"team": "v" * 64}, "team", "has 64 characters"),
])
def test_labels_follow_google_cloud_rules(labels, key, words):
    """projects.jobs.create answers 400 for these; compile refuses them first, as Vertex does."""
    with pytest.raises(ValidationError) as err:
        compile_checked(base(labels=labels))
    (problem,) = err.value.problems
    assert problem.path == f"labels.{key}" and words in problem.message
    assert compile_checked(base(labels={"team": "vision", "cost-center": ""})).request["labels"] == {
        "team": "vision", "cost-center": ""}


def test_env_is_wrapped_into_the_command_and_noted():
    compiled = compile_checked(base(env={"B": "2", "A": "x y"}, workers={"replicas": 1, "env": {"C": "3"}}))
    ti = compiled.request["trainingInput"]
    assert ti["masterConfig"]["containerCommand"] == ["env", "A=x y", "B=2", "python", "train.py"]
    assert ti["workerConfig"]["containerCommand"] == ["env", "A=x y", "B=2", "C=3", "python", "train.py"]
    assert {n.field for n in compiled.notes(NoteKind.APPROXIMATED)} == {"primary.env", "workers.env"}
    assert not any(k.startswith("OMNIDIST_") for k in json.dumps(compiled.request).split('"'))


def test_env_without_a_command_is_refused():
    with pytest.raises(UnsupportedFeatureError) as err:
        compile_checked({"name": "a", "framework": "custom", "image": "i", "env": {"A": "1"}, "primary": {}})
    assert err.value.subject == "env" and "command" in str(err.value)


def test_reduction_server_in_the_parameter_server_slot_with_auto_sizing():
    job = base(primary={"accelerator": "A100:8"}, workers={"replicas": 7}, reduction_servers={"replicas": "auto"})
    compiled = compile_checked(job)
    ti = compiled.request["trainingInput"]
    assert ti["parameterServerType"] == "n1-highcpu-16"
    assert ti["parameterServerCount"] == 25  # 8 x a2-highgpu-8g at 100 Gbps / 32 Gbps
    assert ti["parameterServerConfig"] == {"imageUri": "gcr.io/cloud-ml-service-private/reductionserver:latest"}
    assert ti["useChiefInTfConfig"] is True
    assert any("unconfirmed" in n.message for n in compiled.notes(NoteKind.APPROXIMATED))
    assert any("bucket_cap_mb" in n.message for n in compiled.notes(NoteKind.HINT))


def test_reduction_server_sizing_reads_compute_engine_bandwidth():
    # n1-highmem-4 sends 10 Gbps, and one V100 unlocks more only from 12 vCPUs: 4 x 10 / 32 -> 2
    job = base(primary={"accelerator": "V100:1"}, workers={"replicas": 3}, reduction_servers={"replicas": "auto"})
    compiled = compile_checked(job, machine_types={"primary": "n1-highmem-4", "workers": "n1-highmem-4"})
    assert compiled.request["trainingInput"]["parameterServerCount"] == 2
    note = next(n for n in compiled.diagnostics if n.field == "reduction_servers.replicas")
    assert note.message == "auto = ceil((1×10 + 3×10 Gbps) / 32 Gbps per n1-highcpu-16) = 2"


def test_reducers_on_a_single_gpu_node_are_sized_from_the_primary_alone():
    # What no cloud can run (reducers with parameter servers or CPU trainers) is refused before
    # any backend compiles (tests/conformance/test_portable_rules.py); one GPU node is legal.
    compiled = compile_checked(base(primary={"accelerator": "A100:8"}, reduction_servers={"replicas": "auto"}))
    ti = compiled.request["trainingInput"]
    assert ti["parameterServerCount"] == 4  # one a2-highgpu-8g at 100 Gbps / 32 Gbps
    assert "workerCount" not in ti


@pytest.mark.parametrize(("extra", "feature"), [({"spot": True}, "spot"),
                                                ({"interconnect": "infiniband"}, "interconnect infiniband")])
def test_unexpressible_job_features(extra, feature):
    with pytest.raises(UnsupportedFeatureError) as err:
        compile_checked(base(**extra))
    assert err.value.subject == feature
    assert err.value.feature in (Feature.SPOT, Feature.INFINIBAND)
    assert err.value.message == AIPlatformBackend.capabilities.refusals[err.value.feature].message, \
        "the compiler refuses in the words migration plans with"


def test_python_package_job_uses_runtime_fields_and_trainingInput_args():
    job = {"name": "census", "framework": "tensorflow", "args": ["--steps", "100"], "primary": {},
           "workers": {"replicas": 2}}
    compiled = compile_checked(job, runtime_version="2.11", python_version="3.7", python_module="trainer.task",
                               package_uris=["gs://b/trainer-0.1.tar.gz"])
    ti = compiled.request["trainingInput"]
    assert ti["runtimeVersion"] == "2.11" and ti["pythonModule"] == "trainer.task"
    assert ti["packageUris"] == ["gs://b/trainer-0.1.tar.gz"] and ti["args"] == ["--steps", "100"]
    assert "masterConfig" not in ti and "workerConfig" not in ti


def test_python_package_job_rejects_an_image_and_env():
    with pytest.raises(ValidationError, match="backends.ai_platform"):
        compile_checked(base(), python_module="m", package_uris=["gs://b/p.tar.gz"])
    with pytest.raises(UnsupportedFeatureError):
        compile_checked({"name": "a", "framework": "custom", "env": {"A": "1"}, "primary": {}},
                        python_module="m", package_uris=["gs://b/p.tar.gz"])


def test_container_job_without_image_names_the_field():
    with pytest.raises(ValidationError) as err:
        compile_checked({"name": "a", "framework": "custom", "primary": {}})
    assert err.value.problems[0].path == "image"


def test_non_custom_tier_only_for_a_single_plain_replica():
    assert compile_checked(base(), scale_tier="BASIC").request["trainingInput"]["scaleTier"] == "BASIC"
    with pytest.raises(ValidationError, match="scale_tier"):
        compile_checked(base(workers={"replicas": 1}), scale_tier="BASIC")


def test_deprecated_machine_names_carry_their_gpus_without_acceleratorConfig():
    ti = compile_checked(base(primary={"accelerator": "V100:4"}), machine_types={"primary": "complex_model_m_v100"}
                         ).request["trainingInput"]
    assert ti["masterType"] == "complex_model_m_v100" and "acceleratorConfig" not in ti["masterConfig"]


@pytest.mark.parametrize(("block", "path"), [
    ({"machine_types": {"workrs": "n1-standard-4"}}, "backends.ai_platform.machine_types.workrs"),
    ({"machine_types": {"workers": "n1-standrd-4"}}, "backends.ai_platform.machine_types.workers"),
    ({"job_id": "1bad"}, "backends.ai_platform.job_id"),
    ({"scale_tier": "HUGE"}, "backends.ai_platform.scale_tier"),
    ({"credentials": "mine"}, "backends.ai_platform.credentials"),
    ({"regoin": "x"}, "backends.ai_platform.regoin"),
])
def test_bad_settings_name_their_path(block, path):
    with pytest.raises(ValidationError) as err:
        omnidist.compile(base(backends={"ai_platform": block}), backend="ai_platform")
    assert path in str(err.value)
    if "standrd" in str(block):
        assert "did you mean 'n1-standard-4'" in str(err.value)


# --- TensorFlow's chief, and processes per node -------------------------------------------------

def test_a_tensorflow_job_gets_use_chief_in_tf_config_with_a_note():
    """TensorFlow 2's tf.distribute rejects a task named master (ValueError: Disallowed task type)."""
    compiled = compile_checked(base(framework="tensorflow", workers={"replicas": 2}, parameter_servers={"replicas": 1}))
    assert compiled.request["trainingInput"]["useChiefInTfConfig"] is True
    (note,) = [n for n in compiled.diagnostics if n.field == "useChiefInTfConfig"]
    assert note.kind is NoteKind.DEFAULTED and "master" in note.message


def test_use_chief_in_tf_config_false_is_kept_with_a_warning_and_pytorch_gets_none():
    kept = compile_checked(base(framework="tensorflow"), use_chief_in_tf_config=False)
    assert "useChiefInTfConfig" not in kept.request["trainingInput"]
    assert [n.kind for n in kept.diagnostics if n.field == "useChiefInTfConfig"] == [NoteKind.HINT]
    plain = compile_checked(base(workers={"replicas": 1}))
    assert "useChiefInTfConfig" not in plain.request["trainingInput"]
    assert not [n for n in plain.diagnostics if n.field == "useChiefInTfConfig"]


def test_a_python_package_tensorflow_job_is_left_alone():
    """useChiefInTfConfig has no effect without a custom container, the API says."""
    job = {"name": "pkg", "framework": "tensorflow", "primary": {}}
    compiled = compile_checked(job, runtime_version="2.11", python_module="trainer.task",
                               package_uris=["gs://b/t.tar.gz"])
    assert "useChiefInTfConfig" not in compiled.request["trainingInput"]


def test_a_launch_command_carries_processes_per_node():
    """Legacy has no field (and no env field for the runtime hint): the command carries the count."""
    compiled = compile_checked(base(command=["omnidist", "launch", "--", "train.py"], processes_per_node=2,
                                    workers={"replicas": 1}))
    ti = compiled.request["trainingInput"]
    assert ti["masterConfig"]["containerCommand"] == ["omnidist", "launch", "--nproc-per-node=2", "--", "train.py"]
    assert ti["workerConfig"]["containerCommand"] == ti["masterConfig"]["containerCommand"]
    (note,) = [n for n in compiled.diagnostics if n.field == "processes_per_node"]
    assert note.kind is NoteKind.APPROXIMATED and "--nproc-per-node=2" in note.message
    plain = compile_checked(base(processes_per_node=2))
    (note,) = [n for n in plain.diagnostics if n.field == "processes_per_node"]
    assert note.kind is NoteKind.APPROXIMATED and "omnidist launch --nproc-per-node=2 -- …" in note.message
    assert plain.request["trainingInput"]["masterConfig"]["containerCommand"] == [
        "omnidist", "launch", "--nproc-per-node=2", "--", "python", "train.py"]


def test_recovery_is_left_to_the_watcher():
    compiled = compile_checked(base(recovery={"on": ["capacity", "failure"]}))
    (note,) = [str(n) for n in compiled.diagnostics if n.field == "recovery"]
    assert "nothing natively" in note and "after capacity, failure, up to 3 times" in note
