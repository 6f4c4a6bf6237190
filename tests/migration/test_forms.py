"""Native specs in the forms people keep them in, and migrations that keep their meaning:
command lines pasted into files, SDK objects, ``--command`` and ``--image``, legacy machine names,
machine sizes across providers, exit codes (2: invalid for its own cloud; 3: the target, or the
portable job, cannot hold it) and what the report says about each."""

from __future__ import annotations

import json

import pytest
import yaml

import omnidist
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.migration.imports import import_job
from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.model.features import Feature
from omnidist.testing.cli import run_cli

POOL = {"machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
        "replicaCount": 1, "containerSpec": {"imageUri": "gcr.io/p/trainer:1", "args": ["--epochs=3"]}}


def entries(report) -> dict[str, ReportEntry]:
    return {e.field: e for e in report.entries}


# --- command lines pasted into a file ---------------------------------------------------------------

VERTEX_COMMAND = """#!/bin/bash
# submit the training job
gcloud ai custom-jobs create \\
  --region=europe-west4 \\
  --display-name=bert-mnli \\
  --worker-pool-spec=machine-type=a2-highgpu-4g,replica-count=1,accelerator-type=NVIDIA_TESLA_A100,accelerator-count=4,container-image-uri=gcr.io/p/bert:1 \\
  --worker-pool-spec=machine-type=a2-highgpu-4g,replica-count=2,accelerator-type=NVIDIA_TESLA_A100,accelerator-count=4,container-image-uri=gcr.io/p/bert:1 \\
  --command=python,train.py \\
  --args=--epochs=3,--lr=0.1 \\
  --labels=team=nlp
"""


def test_a_vertex_command_line_in_a_file(tmp_path):
    path = tmp_path / "submit.sh"
    path.write_text(VERTEX_COMMAND)
    job, source, _ = import_job(path)
    assert source.name == "vertex" and job.name == "bert-mnli" and job.labels == {"team": "nlp"}
    assert job.workers.replicas == 2 and str(job.primary.accelerator) == "A100:4"
    assert (job.command, job.args) == (("python", "train.py"), ("--epochs=3", "--lr=0.1"))
    assert job.backends["vertex"]["region"] == "europe-west4"


def test_a_vertex_command_line_with_its_config_file(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"workerPoolSpecs": [POOL], "serviceAccount": "sa@p"}))
    (tmp_path / "run.sh").write_text("gcloud ai custom-jobs create --region=us-east1 --display-name=t "
                                     "--config=config.yaml\n")
    job = omnidist.import_native(tmp_path / "run.sh")
    assert job.image == "gcr.io/p/trainer:1" and job.backends["vertex"]["service_account"] == "sa@p"
    (tmp_path / "run.sh").write_text("gcloud ai custom-jobs create --region=us-east1 --config=missing.yaml\n")
    done = run_cli("import", "run.sh", cwd=tmp_path)
    assert done.returncode == 2 and "run.sh" in done.stderr and "missing.yaml" in done.stderr


def test_an_ai_platform_command_line_with_its_config_file(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-8", "workerType": "n1-standard-8", "workerCount": 2}}))
    (tmp_path / "train.sh").write_text(
        "gcloud ai-platform jobs submit training census_1 \\\n  --region us-central1 \\\n"
        "  --master-image-uri gcr.io/p/census:1 --worker-image-uri gcr.io/p/census:1 \\\n"
        "  --master-accelerator count=1,type=nvidia-tesla-t4 --worker-accelerator count=1,type=nvidia-tesla-t4 \\\n"
        "  --config config.yaml --stream-logs \\\n  -- --epochs 5\n")
    job, source, _ = import_job(tmp_path / "train.sh")
    assert source.name == "ai_platform" and job.name == "census-1" and job.image == "gcr.io/p/census:1"
    assert job.workers.replicas == 2 and str(job.primary.accelerator) == "T4:1" and job.args == ("--epochs", "5")
    compiled, _ = omnidist.migrate(tmp_path / "train.sh", target="vertex", framework="tensorflow")
    pools = compiled.request["jobSpec"]["workerPoolSpecs"]
    assert pools[0]["machineSpec"] == {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4",
                                       "acceleratorCount": 1}


def test_scale_tier_flags_are_read_like_gcloud():
    from omnidist.compiler.commandline import CommandLine
    from omnidist_ai_platform import gcloud

    body = gcloud.command_to_request(CommandLine(argv=(
        "gcloud", "ai-platform", "jobs", "submit", "training", "j", "--scale-tier=basic-gpu", "--runtime-version=2.11",
        "--module-name=trainer.task", "--packages=gs://b/t.tar.gz")))
    assert body["trainingInput"] == {"scaleTier": "BASIC_GPU", "runtimeVersion": "2.11",
                                     "pythonModule": "trainer.task", "packageUris": ["gs://b/t.tar.gz"]}


def test_a_command_that_submits_no_job_is_invalid(tmp_path):
    (tmp_path / "x.sh").write_text("gcloud storage cp a gs://b/\n")
    done = run_cli("import", "x.sh", cwd=tmp_path)
    assert done.returncode == 2 and "x.sh" in done.stderr and "gcloud ai custom-jobs create" in done.stderr


# --- meaning kept ------------------------------------------------------------------------------------

def test_a_multi_line_azure_command_keeps_both_programs():
    native = {"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "type": "command",
              "command": "echo start\npython train.py --epochs ${{inputs.epochs}}\n",
              "inputs": {"epochs": 3}, "environment": {"image": "python:3.11"}}
    compiled, report = omnidist.migrate(native, target="vertex")
    container = compiled.request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    assert container["command"] == ["bash", "-c", "echo start\npython train.py --epochs 3"]
    assert entries(report)["command"].fidelity is Fidelity.APPROXIMATED


def test_legacy_machine_names_become_compute_engine_types_on_vertex():
    native = {"trainingInput": {"scaleTier": "CUSTOM", "masterType": "large_model", "masterConfig": {"imageUri": "i"},
                                "workerType": "complex_model_m", "workerCount": 2,
                                "workerConfig": {"imageUri": "i"}}}
    compiled, report = omnidist.migrate(native, target="vertex", framework="tensorflow")
    pools = compiled.request["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"]["machineType"] for p in pools] == ["n1-highmem-8", "n1-highcpu-16"]
    line = entries(report)["backends.ai_platform.machine_types.primary"]
    assert line.fidelity is Fidelity.APPROXIMATED and "n1-highmem-8" in line.message


def test_cpu_machine_sizes_survive_a_move_across_providers():
    """``n1-highmem-32`` (32 vCPUs, 208 GB) does not become a 4-vCPU Azure SKU."""
    native = {"workerPoolSpecs": [{**POOL, "machineSpec": {"machineType": "n1-highmem-32"}}]}
    compiled, report = omnidist.migrate(native, target="azure_ml", framework="pytorch", command="python t.py")
    assert compiled.request["resources"]["instance_type"] == "Standard_E32s_v3"
    assert "32 vCPUs, 208 GB (vertex ran n1-highmem-32)" in entries(report)["primary.machine"].message


def test_an_azure_gpu_cluster_of_unknown_size_is_a_change(tmp_path):
    path = tmp_path / "job.yml"
    path.write_text("command: python t.py\nenvironment: {image: x.example/t:1}\ncompute: azureml:gpu-cluster\n"
                    "resources: {instance_count: 2}\ndistribution: {type: pytorch, process_count_per_instance: 4}\n")
    _, report = omnidist.migrate(path, target="vertex")
    assert entries(report)["primary.accelerator"].fidelity is Fidelity.CHANGED
    done = run_cli("migrate", str(path), "--to", "vertex", "--strict", cwd=tmp_path)
    assert done.returncode == 3 and "primary.accelerator (changed)" in done.stderr


def test_a_region_the_source_never_named_is_reported():
    _, report = omnidist.migrate({"workerPoolSpecs": [POOL]}, target="ai_platform", framework="pytorch")
    region = entries(report)["region"]
    assert region.fidelity is Fidelity.APPROXIMATED and region.message.startswith("us-central1")
    _, report = omnidist.migrate({"workerPoolSpecs": [POOL]}, target="ai_platform", framework="pytorch",
                                 settings={"region": "europe-west4"})
    assert "region" not in entries(report)


def test_literal_inputs_are_written_into_the_command_and_reported():
    native = {"type": "command", "command": "python t.py --epochs ${{inputs.epochs}}",
              "inputs": {"epochs": 3, "unused": 7}, "environment": {"image": "python:3.11"}}
    compiled, report = omnidist.migrate(native, target="vertex")
    container = compiled.request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    assert container["command"] == ["python", "t.py", "--epochs", "3"]
    assert {"name": "OMNIDIST_INPUT_unused", "value": "7"} in container["env"]  # context().inputs still has it
    assert entries(report)["inputs"].message == "epochs=3, unused=7"


def test_data_map_rewrites_are_reported_and_an_unmapped_azure_location_is_exit_3():
    native = {"type": "command", "command": "python t.py --data ${{inputs.data}}", "environment": {"image": "p:1"},
              "inputs": {"data": {"type": "uri_folder", "path": "azureml://datastores/ws/paths/cifar"}}}
    with pytest.raises(UnsupportedFeatureError) as err:
        omnidist.migrate(native, target="vertex")
    assert err.value.subject == "inputs.data" and "data_map" in str(err.value)
    compiled, report = omnidist.migrate(native, target="vertex", settings={
        "data_map": {"azureml://datastores/ws/paths/": "gs://bkt/"}})
    assert compiled.request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"][-1] == "/gcs/bkt/cifar"
    rewrite = entries(report)["inputs.data"]
    assert rewrite.fidelity is Fidelity.APPROXIMATED and "-> gs://bkt/cifar (data_map)" in rewrite.message


def test_a_registered_data_asset_cannot_move_and_the_refusal_says_what_to_do():
    native = {"type": "command", "command": "python t.py --data ${{inputs.coco}}", "environment": {"image": "p:1"},
              "inputs": {"coco": {"type": "uri_folder", "path": "azureml:coco128:1"}}}
    with pytest.raises(UnsupportedFeatureError) as err:
        omnidist.migrate(native, target="ai_platform")
    assert err.value.subject == "inputs.coco" and "registered Azure ML data asset" in str(err.value)
    assert "az ml data download --name coco128" in str(err.value)


# --- what the target needs from the user --------------------------------------------------------------

def test_a_command_less_job_needs_a_command_on_azure_and_command_gives_it(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"workerPoolSpecs": [{**POOL, "containerSpec": {"imageUri": "gcr.io/p/t:1"}}]}))
    done = run_cli("migrate", str(path), "--to", "azure_ml", cwd=tmp_path)
    assert done.returncode == 3 and "azure_ml cannot express command" in done.stderr and "--command" in done.stderr
    done = run_cli("migrate", str(path), "--to", "azure_ml", "--command", "python -m trainer.task && echo done",
                   "-o", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["command"] == "python -m trainer.task && echo done"  # Azure runs it in a shell
    report = json.loads(done.stderr)
    assert {"fidelity": "exact", "field": "command"} == {k: v for k, v in next(
        e for e in report["entries"] if e["field"] == "command").items() if k != "message"}


@pytest.mark.parametrize("environment, field", [
    ({"image": "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04", "conda_file": "conda.yml"},
     "environment.conda_file"),
    ({"build": {"path": "docker-context"}}, "environment.build"),
])
def test_image_stands_in_for_what_azure_builds(environment, field):
    native = {"type": "command", "command": "python t.py", "environment": environment}
    if "build" in environment:
        with pytest.raises(UnsupportedFeatureError) as err:
            omnidist.migrate(native, target="vertex")
        assert err.value.feature is Feature.IMAGE and "--image" in str(err.value) and err.value.exit_code == 3
    else:  # the base image runs, without the conda packages: a reported drop
        _, report = omnidist.migrate(native, target="vertex")
        assert entries(report)[field].fidelity is Fidelity.DROPPED
    compiled, report = omnidist.migrate(native, target="vertex", image="gcr.io/p/built:1")
    assert compiled.request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] == "gcr.io/p/built:1"
    found = entries(report)
    assert field not in found and found["image"].message == f"gcr.io/p/built:1 (from --image, in place of {field})"


# --- exit codes ---------------------------------------------------------------------------------------

def test_extras_are_dropped_and_reported_and_strict_refuses_them(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"workerPoolSpecs": [POOL], "scheduling": {"disableRetries": True}}))
    done = run_cli("migrate", str(path), "--to", "ai_platform", "--framework", "pytorch", cwd=tmp_path)
    assert done.returncode == 0 and "dropped      scheduling.disableRetries" in done.stderr
    done = run_cli("migrate", str(path), "--to", "ai_platform", "--framework", "pytorch", "--strict", cwd=tmp_path)
    assert done.returncode == 3 and done.stdout == "" and "scheduling.disableRetries (dropped)" in done.stderr


def test_a_legacy_tpu_job_imports_and_migrates_to_vertex_reported_changed(tmp_path):
    """SPEC §13: legacy ran TPU Nodes, Vertex runs TPU VMs; --strict refuses the change."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"trainingInput": {"scaleTier": "CUSTOM", "masterType": "complex_model_m",
                                                      "workerType": "cloud_tpu", "workerCount": 1}}))
    done = run_cli("import", str(path), cwd=tmp_path)
    assert done.returncode == 0 and "accelerator: TPU-V2:8" in done.stdout, done.stderr
    done = run_cli("migrate", str(path), "--to", "vertex", "--image", "gcr.io/p/t:1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"machineType": "cloud-tpu"' in done.stdout and '"acceleratorType": "TPU_V2"' in done.stdout
    assert "changed      primary.accelerator: TPU-V2:8: ai_platform runs TPU Nodes" in done.stderr
    assert "Code that finds its TPU by name must change" in done.stderr
    done = run_cli("migrate", str(path), "--to", "vertex", "--image", "gcr.io/p/t:1", "--strict", cwd=tmp_path)
    assert done.returncode == 3 and "primary.accelerator (changed)" in done.stderr
    done = run_cli("migrate", str(path), "--to", "azure_ml", "--image", "gcr.io/p/t:1", cwd=tmp_path)
    assert done.returncode == 3 and "azure_ml cannot express accelerator TPU-V2" in done.stderr


def test_a_file_invalid_for_its_own_cloud_exits_2_naming_the_file(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"displayName": "x", "workerPoolSpecs": [POOL]}))  # a CustomJob field in a spec
    for command in (["import", str(path)], ["migrate", str(path), "--to", "azure_ml"]):
        done = run_cli(*command, cwd=tmp_path)
        assert done.returncode == 2 and f"{path}: displayName: not a field of CustomJobSpec" in done.stderr


def test_the_target_refusing_a_valid_file_is_exit_3_not_2():
    with pytest.raises(UnsupportedFeatureError) as err:
        omnidist.migrate({"workerPoolSpecs": [{**POOL, "containerSpec": {"imageUri": "i"}}]}, target="azure_ml")
    assert err.value.subject == "command" and "--command" in err.value.hint
    with pytest.raises(ValidationError):  # settings the caller gives stay invalid input
        omnidist.migrate({"workerPoolSpecs": [POOL]}, target="vertex", settings={"boot_disk_type": "floppy"})
