"""Portable job -> CreateTrainingJob: every request checked with botocore's own model (and the limits
botocore leaves to the service), the golden request, machines, refusals, data, code and processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import omnidist
from omnidist.kit import UnsupportedFeatureError, ValidationError, job_from_dict
from omnidist.testing import strategies
from omnidist.testing.cli import run_cli
from omnidist_sagemaker import SageMakerSettings
from omnidist_sagemaker.testing import ROLE, request_problems

GOLDEN = Path(__file__).parent / "golden"
ROLE_SETTINGS = {"role_arn": ROLE}

JOB = {
    "name": "bert-ddp", "framework": "pytorch", "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/bert:1",
    "command": ["python", "-m", "trainer.task"], "args": ["--data", "${{inputs.train}}", "--out", "${{outputs.model}}"],
    "env": {"NCCL_DEBUG": "INFO"}, "primary": {"accelerator": "A100:8"}, "workers": {"replicas": 3},
    "inputs": {"train": "s3://data/train", "vocab": {"uri": "s3://data/vocab.txt", "mode": "download"}},
    "outputs": {"model": "default"}, "spot": True, "timeout": "12h", "interconnect": "infiniband",
    "labels": {"team": "nlp"},
}


def compile_(job, **settings):
    return omnidist.compile(job_from_dict(job), backend="sagemaker", settings={**ROLE_SETTINGS, **settings})


def valid(request):
    assert request_problems(request) == [], request_problems(request)
    return request


def test_golden_request_is_exactly_boto3s_keyword_arguments():
    compiled = compile_(JOB, base_output_dir="s3://out/runs")
    assert valid(compiled.request) == json.loads((GOLDEN / "bert-ddp.json").read_text())
    notes = {str(n) for n in compiled.diagnostics}
    assert any("EFA with GPUDirect RDMA" in n for n in notes)
    assert any("omnidist launch --nproc-per-node=8" in n for n in notes)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(job=strategies.jobs())
def test_whatever_compiles_is_valid_for_botocore(job):
    try:
        compiled = omnidist.compile(job, backend="sagemaker", settings=ROLE_SETTINGS)
    except (ValidationError, UnsupportedFeatureError):
        return
    valid(compiled.request)


def test_role_arn_is_required_at_compile_exit_2_naming_it(tmp_path):
    (tmp_path / "job.json").write_text(json.dumps({**JOB, "interconnect": "any"}))
    done = run_cli("compile", str(tmp_path / "job.json"), "--backend", "sagemaker", cwd=tmp_path)
    assert done.returncode == 2 and "backends.sagemaker.role_arn" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("accelerator, machine", [
    ("T4:1", "ml.g4dn.xlarge"), ("V100:8", "ml.p3.16xlarge"), ("A100:8", "ml.p4d.24xlarge"),
    ("A100-80GB:8", "ml.p4de.24xlarge"), ("H100:8", "ml.p5.48xlarge"), ("H200:8", "ml.p5e.48xlarge"),
    ("L4:4", "ml.g6.12xlarge"), ("B200:8", "ml.p6-b200.48xlarge")])
def test_the_smallest_instance_type_with_the_gpus(accelerator, machine):
    request = compile_({**JOB, "primary": {"accelerator": accelerator}, "interconnect": "any", "spot": False})
    assert valid(request.request)["ResourceConfig"]["InstanceType"] == machine


def test_a_gpu_count_no_type_has_runs_on_a_bigger_one_and_says_so():
    compiled = compile_({**JOB, "primary": {"accelerator": "V100:2"}, "interconnect": "any"})
    assert compiled.request["ResourceConfig"]["InstanceType"] == "ml.p3.8xlarge"
    assert any(n.kind.value == "changed" and "2 stay idle" in n.message for n in compiled.diagnostics)


def test_cpu_roles_and_named_types():
    request = compile_({**JOB, "primary": {"cpus": 16, "memory_gb": 60}, "interconnect": "any"}).request
    assert request["ResourceConfig"]["InstanceType"] == "ml.m5.4xlarge"
    named = compile_({**JOB, "primary": {"accelerator": "A100-80GB:8"}, "interconnect": "any"},
                     instance_types={"primary": "ml.p4de.24xlarge", "workers": "ml.p4de.24xlarge"}).request
    assert named["ResourceConfig"]["InstanceType"] == "ml.p4de.24xlarge"
    with pytest.raises(ValidationError, match="instance_types.primary: 'ml.p3.16large' is not a SageMaker"):
        compile_(JOB, instance_types={"primary": "ml.p3.16large"})
    with pytest.raises(ValidationError, match="comes with 8×V100, but primary asks for 8×A100"):
        compile_({**JOB, "interconnect": "any"}, instance_types={"primary": "ml.p3.16xlarge"})


def test_a_type_whose_gpus_have_no_portable_name_runs_when_named():
    compiled = compile_({**JOB, "primary": {}, "workers": None, "interconnect": "any"},
                        instance_types={"primary": "ml.trn1.2xlarge"})
    assert compiled.request["ResourceConfig"]["InstanceType"] == "ml.trn1.2xlarge"
    assert any("1×Trainium, which has no portable name" in n.message for n in compiled.diagnostics)


def test_a10g_and_l40s_are_portable_and_picked():
    """SageMaker's g5 (A10G) and g6e (L40S) types are picked for a job asking for those GPUs."""
    for accelerator, picked in (("A10G:1", "ml.g5.xlarge"), ("L40S:4", "ml.g6e.12xlarge")):
        compiled = compile_({**JOB, "primary": {"accelerator": accelerator}, "workers": None, "interconnect": "any"})
        assert compiled.request["ResourceConfig"]["InstanceType"] == picked


def test_roles_on_different_types_make_a_heterogeneous_cluster():
    job = {**JOB, "interconnect": "any", "workers": {"replicas": 2, "accelerator": "none", "cpus": 8}}
    request = valid(compile_(job).request)
    assert request["ResourceConfig"]["InstanceGroups"] == [
        {"InstanceGroupName": "primary", "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 1},
        {"InstanceGroupName": "workers", "InstanceType": "ml.c5.2xlarge", "InstanceCount": 2}]
    assert "InstanceType" not in request["ResourceConfig"]


@pytest.mark.parametrize("role, feature", [
    ({"evaluators": {"replicas": 1}}, "evaluators"),
    ({"reduction_servers": {"replicas": 2}}, "reduction_servers"),
    ({"parameter_servers": {"replicas": 2}}, "parameter_servers"),
    ({"workers": {"replicas": 1, "image": "other:1"}}, "per_role_programs"),
])
def test_what_sagemaker_has_not_is_exit_3(role, feature):
    with pytest.raises(UnsupportedFeatureError) as caught:
        compile_({**JOB, **role, "interconnect": "any"})
    assert caught.value.feature.value == feature and caught.value.exit_code == 3


def test_accelerators_sagemaker_has_not_are_exit_3_naming_them():
    with pytest.raises(UnsupportedFeatureError, match="accelerator P100"):
        compile_({**JOB, "primary": {"accelerator": "P100:1"}, "interconnect": "any"})


def test_infiniband_needs_an_efa_type():
    with pytest.raises(UnsupportedFeatureError, match="interconnect: infiniband"):
        compile_({**JOB, "primary": {"accelerator": "V100:8"}})


def test_tensorflow_parameter_servers_run_one_per_instance():
    job = {**JOB, "framework": "tensorflow", "interconnect": "any", "parameter_servers": {"replicas": 2}}
    compiled = compile_(job)
    assert compiled.request["HyperParameters"]["sagemaker_parameter_server_enabled"] == "true"
    assert any(n.field == "parameter_servers.replicas" and "2 became 4" in n.message for n in compiled.diagnostics)


def test_spot_with_checkpoints_and_a_wait_at_least_the_timeout():
    request = valid(compile_({**JOB, "interconnect": "any"}, base_output_dir="s3://out/runs").request)
    assert request["EnableManagedSpotTraining"] is True
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 43200, "MaxWaitTimeInSeconds": 86400}
    assert request["CheckpointConfig"] == {"S3Uri": "s3://out/runs/checkpoints", "LocalPath": "/opt/ml/checkpoints"}
    with pytest.raises(ValidationError, match="max_wait"):
        compile_({**JOB, "interconnect": "any"}, max_wait=60)


def test_timeout_defaults_to_a_day_and_stops_at_28_days():
    compiled = compile_({**JOB, "interconnect": "any", "spot": False, "timeout": None})
    assert compiled.request["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    with pytest.raises(UnsupportedFeatureError, match="28 days"):
        compile_({**JOB, "interconnect": "any", "timeout": "29d"})


def test_inputs_are_channels_and_references_their_folders():
    request = compile_({**JOB, "interconnect": "any"}).request
    channels = {c["ChannelName"]: c for c in request["InputDataConfig"]}
    assert channels["train"]["InputMode"] == "FastFile" and channels["vocab"]["InputMode"] == "File"
    assert request["AlgorithmSpecification"]["ContainerArguments"] == [
        "--data", "/opt/ml/input/data/train", "--out", "/opt/ml/model"]


def test_other_clouds_data_needs_a_data_map():
    gs = {**JOB, "interconnect": "any", "inputs": {"train": "gs://bkt/train"}}
    with pytest.raises(UnsupportedFeatureError, match="inputs.train"):
        compile_(gs)
    request = compile_(gs, data_map={"gs://bkt/": "s3://copied/"}).request
    assert request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] == "s3://copied/train"


def test_other_outputs_default_to_the_output_data_folder():
    job = {**JOB, "interconnect": "any", "outputs": {"model": "default", "logs": "default"},
           "args": ["--logs", "${{outputs.logs}}"]}
    request = compile_(job).request
    assert request["AlgorithmSpecification"]["ContainerArguments"] == ["--logs", "/opt/ml/output/data/logs"]


def test_sagemakers_limits_are_checked_at_compile():
    with pytest.raises(ValidationError, match="labels"):
        compile_({**JOB, "labels": {f"k{i}": "v" for i in range(50)}})
    with pytest.raises(ValidationError, match="aws:"):
        compile_({**JOB, "labels": {"aws:team": "x"}})
    with pytest.raises(ValidationError, match="at most 100 variables"):
        compile_({**JOB, "interconnect": "any", "env": {f"V{i}": "x" for i in range(100)}})
    with pytest.raises(ValidationError, match="at most 20 channels"):
        compile_({**JOB, "interconnect": "any", "args": [], "outputs": {},
                  "inputs": {f"in{i}": f"s3://b/{i}" for i in range(21)}})


def test_a_name_ending_in_a_dash_loses_it():
    compiled = compile_({**JOB, "name": "bert-", "interconnect": "any"})
    assert compiled.request["TrainingJobName"] == "bert"


def test_a_word_longer_than_sagemaker_takes_travels_in_the_environment():
    script = "echo " + "x" * 600
    request = valid(compile_({**JOB, "interconnect": "any", "command": ["bash", "-c", script], "args": []}).request)
    assert request["AlgorithmSpecification"]["ContainerEntrypoint"][:2] == ["sh", "-c"]
    back = omnidist.import_native(request, backend="sagemaker")
    assert back.command == ("omnidist", "launch", "--nproc-per-node=8", "--", "bash", "-c", script) or \
        back.command == ("bash", "-c", script)


# --- code and the Deep Learning Containers ------------------------------------------------------------

def test_framework_version_runs_script_mode_on_the_deep_learning_container(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('hi')\n")
    job = {"name": "mnist", "framework": "pytorch", "framework_version": "2.3", "code": str(tmp_path / "src"),
           "command": ["python", "train.py"], "args": ["--epochs", "3", "--lr=0.1"],
           "primary": {"accelerator": "V100:4"}, "workers": {"replicas": 1}}
    compiled = compile_(job, region="eu-west-1")
    request = valid(compiled.request)
    assert request["AlgorithmSpecification"] == {
        "TrainingImage": "763104351884.dkr.ecr.eu-west-1.amazonaws.com/pytorch-training:2.3.0-gpu-py311",
        "TrainingInputMode": "File"}
    hyper = request["HyperParameters"]
    assert hyper["sagemaker_program"] == '"train.py"' and hyper["sagemaker_torch_distributed_enabled"] == "true"
    assert hyper["sagemaker_submit_directory"] == (
        '"s3://sagemaker-eu-west-1-123456789012/omnidist/code/{content-sha256}/sourcedir.tar.gz"')
    assert (hyper["epochs"], hyper["lr"]) == ("3", "0.1")
    back = omnidist.import_native(request, backend="sagemaker")
    assert (back.framework_version, back.command, back.args) == ("2.3", ("python", "train.py"),
                                                                  ("--epochs", "3", "--lr", "0.1"))


def test_processes_other_than_the_gpus_use_sagemakers_mpi_distribution(tmp_path):
    job = {"name": "hvd", "framework": "horovod", "framework_version": "2.3", "code": "s3://b/code.tar.gz",
           "command": ["python", "train.py"], "primary": {"accelerator": "V100:8"}, "processes_per_node": 4}
    hyper = valid(compile_(job).request)["HyperParameters"]
    assert hyper["sagemaker_mpi_enabled"] == "true" and hyper["sagemaker_mpi_num_of_processes_per_host"] == "4"
    assert omnidist.import_native(compile_(job).request, backend="sagemaker").processes_per_node == 4



def test_an_own_image_starts_its_processes_as_every_backend_says():
    job = {"name": "ddp", "framework": "pytorch", "image": "acct.dkr.ecr.us-east-1.amazonaws.com/t:1",
           "command": ["python", "train.py"], "primary": {"accelerator": "A100:8"}, "workers": {"replicas": 1}}
    compiled = compile_(job)
    assert compiled.request["AlgorithmSpecification"]["ContainerEntrypoint"][:4] == [
        "omnidist", "launch", "--nproc-per-node=8", "--"]
    [note] = [n for n in compiled.diagnostics if n.field == "processes_per_node"]
    vertex = omnidist.compile(job_from_dict(job), backend="vertex")
    [same] = [n for n in vertex.diagnostics if n.field == "processes_per_node"]
    assert (note.kind, note.message) == (same.kind, same.message.replace("vertex", "sagemaker"))
    # a command that is its own launcher is left as it is, not started under a second one
    launched = compile_({**job, "command": ["torchrun", "--nproc-per-node=8", "train.py"]})
    assert launched.request["AlgorithmSpecification"]["ContainerEntrypoint"][0] == "torchrun"
    # Horovod's processes need mpirun across the instances: refused, as on Vertex AI
    with pytest.raises(UnsupportedFeatureError, match="processes_per_node"):
        compile_({**job, "framework": "horovod"})

def test_code_with_an_image_arrives_as_a_channel_and_is_unpacked(tmp_path):
    job = {"name": "own", "framework": "pytorch", "image": "acct.dkr.ecr.us-east-1.amazonaws.com/t:1",
           "code": "s3://b/src.tar.gz", "command": ["python", "train.py"], "primary": {}}
    request = valid(compile_(job).request)
    assert request["InputDataConfig"][-1]["ChannelName"] == "code"
    entry = request["AlgorithmSpecification"]["ContainerEntrypoint"]
    assert entry[:2] == ["sh", "-c"] and "tar -xzf /opt/ml/input/data/code/src.tar.gz" in entry[2]
    back = omnidist.import_native(request, backend="sagemaker")
    assert (back.code, back.command, back.inputs) == ("s3://b/src.tar.gz", ("python", "train.py"), {})


def test_an_unknown_framework_version_lists_the_real_ones():
    job = {"name": "x", "framework": "pytorch", "framework_version": "0.4", "code": "s3://b/c.tar.gz",
           "command": ["python", "t.py"], "primary": {}}
    with pytest.raises(ValidationError, match="versions: 2.0, 2.1"):
        compile_(job)


def test_settings_reach_the_request():
    request = valid(compile_({**JOB, "interconnect": "any"}, subnets=["subnet-1"], security_group_ids=["sg-1"],
                             volume_gb=200, max_retries=2, enable_network_isolation=True,
                             checkpoint_s3_uri="s3://ck/", endpoint_url="http://x").request)
    assert request["VpcConfig"] == {"SecurityGroupIds": ["sg-1"], "Subnets": ["subnet-1"]}
    assert request["ResourceConfig"]["VolumeSizeInGB"] == 200 and request["RetryStrategy"]["MaximumRetryAttempts"] == 2
    assert request["EnableNetworkIsolation"] is True and request["CheckpointConfig"]["S3Uri"] == "s3://ck/"
    with pytest.raises(ValidationError, match="security_group_ids"):
        compile_(JOB, subnets=["subnet-1"])
    with pytest.raises(ValidationError, match="not an S3 location"):
        SageMakerSettings(staging_bucket="gs://x")


def test_recovery_compiles_to_managed_spot_checkpoints_and_a_retry_strategy():
    job = {**JOB, "interconnect": "any", "outputs": {"model": "default", "checkpoints": {"uri": "s3://ck/run"}},
           "recovery": {"max_restarts": 50, "on": ["preemption", "capacity"]}}
    compiled = compile_(job, base_output_dir="s3://out/runs")
    request = valid(compiled.request)
    assert request["EnableManagedSpotTraining"] is True
    assert request["CheckpointConfig"] == {"S3Uri": "s3://ck/run", "LocalPath": "/opt/ml/checkpoints"}
    assert request["StoppingCondition"]["MaxWaitTimeInSeconds"] >= request["StoppingCondition"]["MaxRuntimeInSeconds"]
    assert request["RetryStrategy"] == {"MaximumRetryAttempts": 30}  # SageMaker's most
    (note,) = [str(n) for n in compiled.diagnostics if n.field == "recovery"]
    assert "managed spot restarts an interrupted job" in note and "InternalServerError only" in note
    assert "restarts it after capacity, up to 50 times" in note and "preemption" not in note.split("restarts it after")[1]


def test_recovery_on_demand_still_syncs_checkpoints_and_leaves_preemption_to_the_watcher():
    job = {**JOB, "interconnect": "any", "spot": False, "recovery": {"max_restarts": 0}}
    compiled = compile_(job, base_output_dir="s3://out/runs")
    request = valid(compiled.request)
    assert request["CheckpointConfig"]["S3Uri"] == "s3://out/runs/checkpoints" and "RetryStrategy" not in request
    (note,) = [str(n) for n in compiled.diagnostics if n.field == "recovery"]
    assert "nothing natively" in note and "restarts nothing" in note
