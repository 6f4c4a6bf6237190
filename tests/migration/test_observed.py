"""What the program sees, compared (SPEC §14): each class of silent change, on a file written here
for it, is kept or reported; ``omnidist explain`` prints the World."""

from __future__ import annotations

import json

import pytest

import omnidist
from omnidist.errors import UnsupportedFeatureError
from omnidist.migration.report import StrictMigrationError
from omnidist.model import serde
from omnidist.testing.cli import run_cli

ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com/trainer:1"


def sagemaker_byo(**algorithm):
    return {"TrainingJobName": "byo", "RoleArn": "arn:aws:iam::123456789012:role/r",
            "AlgorithmSpecification": {"TrainingImage": ECR, "TrainingInputMode": "File", **algorithm},
            "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
            "OutputDataConfig": {"S3OutputPath": "s3://b/out"}, "StoppingCondition": {"MaxRuntimeInSeconds": 3600}}


def pytorchjob(gpus=1):
    def pod(replicas):
        return {"replicas": replicas, "template": {"spec": {"containers": [{
            "name": "pytorch", "image": "docker.io/me/t:1", "command": ["python", "train.py"],
            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "ddp"},
            "spec": {"pytorchReplicaSpecs": {"Master": pod(1), "Worker": pod(2)}}}


def mpijob():
    def pod(name, replicas, command):
        return {"replicas": replicas, "template": {"spec": {"containers": [{
            "name": name, "image": "docker.io/me/hvd:1", "command": command}]}}}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "hvd"},
            "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": {
                "Launcher": pod("launcher", 1, ["mpirun", "-np", "2", "--allow-run-as-root", "python", "train.py"]),
                "Worker": pod("worker", 2, ["/usr/sbin/sshd", "-De"])}}}


def fields(report, fidelity=None):
    return {e.field: e for e in report.entries if fidelity is None or e.fidelity.value == fidelity}


def test_a_sagemaker_image_keeps_its_train_argument_elsewhere():
    compiled, report = omnidist.migrate(sagemaker_byo(), target="kubernetes")
    container = compiled.request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["train"] and "command" not in container
    assert fields(report)["args"].fidelity.value == "inferred"
    assert "args" not in fields(report, "changed")


def test_an_image_run_as_it_is_gets_train_on_sagemaker_and_the_report_says_so():
    vertex = {"displayName": "plain", "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
        "containerSpec": {"imageUri": ECR}}]}}
    _, report = omnidist.migrate(vertex, target="sagemaker", framework="custom",
                                 settings={"role_arn": "arn:aws:iam::123456789012:role/r"})
    line = fields(report, "changed")["args"]
    assert "`<image entrypoint> train` on sagemaker" in line.message


def test_kubeflow_cluster_variables_are_kept_under_omnidist_launch_with_one_gpu_a_node():
    compiled, report = omnidist.migrate(pytorchjob(gpus=1), target="vertex")
    for pool in compiled.request["jobSpec"]["workerPoolSpecs"]:
        assert pool["containerSpec"]["command"][:3] == ["omnidist", "launch", "--nproc-per-node=1"]
    assert "cluster variables" in fields(report)["command"].message
    assert "env" not in fields(report, "changed")


def test_an_mpi_program_runs_under_an_mpi_launcher_or_is_refused():
    compiled, report = omnidist.migrate(mpijob(), target="azure_ml")
    assert compiled.request["distribution"]["type"] == "mpi"
    assert fields(report)["framework"].message.startswith("horovod")
    with pytest.raises(UnsupportedFeatureError) as caught:
        omnidist.migrate(mpijob(), target="vertex")
    assert caught.value.subject == "processes_per_node" and caught.value.exit_code == 3


def test_a_writable_azure_output_that_becomes_a_uri_is_changed():
    azure = {"type": "command", "command": "python train.py --out ${{outputs.model}}",
             "environment": {"image": "docker.io/me/t:1"}, "compute": "azureml:cpu",
             "outputs": {"model": {"type": "uri_folder", "path": "azureml://datastores/d/paths/m", "mode": "rw_mount"}}}
    _, report = omnidist.migrate(azure, target="kubernetes",
                                 settings={"data_map": {"azureml://datastores/d/paths/": "gs://bkt/"}})
    line = fields(report, "changed").get("outputs.model") or fields(report, "dropped").get("outputs.model")
    assert line is not None and "local writable folder" in line.message
    assert "outputs" not in fields(report, "exact")


def test_a_plain_s3_channel_with_a_content_type_is_carried_as_an_input():
    channel = {"ChannelName": "train", "ContentType": "text/csv", "CompressionType": "None",
               "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/train",
                                               "S3DataDistributionType": "FullyReplicated"}}}
    job = omnidist.import_native(sagemaker_byo(InputDataConfig=[channel]) | {"InputDataConfig": [channel]})
    assert job.inputs["train"].uri == "s3://b/train"
    assert job.backends["sagemaker"]["content_types"] == {"train": "text/csv"}
    back = omnidist.compile(job, backend="sagemaker")
    assert back.request["InputDataConfig"][0]["ContentType"] == "text/csv"


def test_a_search_reports_the_metric_channel_the_program_must_use():
    sweep = {"type": "sweep", "sampling_algorithm": "random",
             "trial": {"command": "python t.py --lr ${{search_space.lr}}", "environment": {"image": "docker.io/me/t:1"}},
             "compute": "azureml:cpu", "search_space": {"lr": {"type": "uniform", "min_value": 0.01, "max_value": 0.1}},
             "objective": {"primary_metric": "acc", "goal": "maximize"}, "limits": {"max_total_trials": 4}}
    _, report = omnidist.migrate(sweep, target="vertex")
    assert "tuning.metric" in fields(report, "changed")
    assert "tuning" not in fields(report, "changed")  # the values are args on both: the same channel
    assert "command" not in fields(report, "changed")


def test_an_image_the_target_cannot_pull_is_changed_not_exact():
    _, report = omnidist.migrate(sagemaker_byo(), target="vertex")
    assert "ecr" in fields(report, "changed")["image"].message
    assert "image" not in fields(report, "exact")
    with pytest.raises(StrictMigrationError):
        omnidist.migrate(sagemaker_byo(), target="vertex", strict=True)


def test_explain_prints_the_world_as_a_table_and_as_json(tmp_path):
    path = tmp_path / "ddp.yaml"
    path.write_text(serde.dump_yaml(pytorchjob(gpus=2)))
    table = run_cli("explain", str(path))
    assert table.returncode == 0, table.stderr
    assert "what the program sees on kubernetes" in table.stdout and "MASTER_ADDR" in table.stdout
    data = json.loads(run_cli("explain", str(path), "-o", "json").stdout)
    assert data["platform"] == "kubernetes" and [n["count"] for n in data["nodes"]] == [1, 2]
    job = tmp_path / "job.yaml"
    job.write_text("name: j\nframework: pytorch\nimage: docker.io/me/t:1\ncommand: [python, t.py]\n"
                   "primary: {accelerator: T4:2}\n")
    compiled = json.loads(run_cli("explain", str(job), "--backend", "vertex", "-o", "json").stdout)
    assert compiled["nodes"][0]["processes"] == 2 and compiled["nodes"][0]["launcher"] == "omnidist launch"


def test_explain_of_a_file_that_is_no_spec_exits_2_naming_it(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("hello: world\n")
    result = run_cli("explain", str(path))
    assert result.returncode == 2 and "x.yaml" in result.stderr and "Traceback" not in result.stderr
