"""SageMaker's native files -> portable job: requests, descriptions, the operators' custom resources
(the real files of ``../shared/corpus/sagemaker``), round trips, and SageMaker-only references."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import omnidist
from omnidist.kit import ValidationError, job_from_dict
from omnidist.migration.imports import import_job
from omnidist_sagemaker.testing import ROLE

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "sagemaker"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")


def imported(name):
    job, source, entries = import_job(CORPUS / name)
    assert source.name == "sagemaker"
    return job, {e.field: e for e in entries}


@needs_corpus
def test_script_mode_on_a_deep_learning_container_is_framework_version_code_and_args():
    job, entries = imported("sport-llm-g5-2xlarge-script-mode.json")
    assert (job.framework.value, job.framework_version, job.image) == ("pytorch", "2.1", None)
    assert job.command == ("python", "train_small.py") and job.code.endswith("/code/sourcedir.tar.gz")
    assert job.args[:2] == ("--max-steps", "500") and str(job.primary.accelerator) == "A10G:1"
    assert job.backends["sagemaker"]["instance_types"] == {"primary": "ml.g5.2xlarge"}
    assert job.inputs["train"].uri.startswith("s3://") and job.timeout == 7200


@needs_corpus
def test_a_heterogeneous_description_keeps_its_groups_types():
    job, entries = imported("ack-describe-inprogress-instance-groups.json")
    assert job.workers.replicas == 1
    assert job.backends["sagemaker"]["instance_types"] == {"primary": "ml.c5.xlarge", "workers": "ml.m4.xlarge"}
    assert "TrainingJobStatus" in entries and "ResourceConfig.InstanceGroups" in entries


@needs_corpus
def test_operator_resources_read_as_their_requests():
    job, _ = imported("operator-spot-xgboost-mnist-trainingjob.yaml")
    assert job.spot and job.timeout == 3599 and job.backends["sagemaker"]["max_wait"] == 3600
    assert job.backends["sagemaker"]["region"] == "us-west-2"
    assert job.backends["sagemaker"]["hyperparameters"]["num_round"] == "10"
    efs, entries = imported("operator-efs-vpc-xgboost.yaml")
    assert [c["DataSource"]["FileSystemDataSource"]["FileSystemType"] for c in efs.backends["sagemaker"]["channels"]] \
        == ["EFS", "EFS"]
    assert efs.backends["sagemaker"]["subnets"] and efs.backends["sagemaker"]["security_group_ids"]


@needs_corpus
def test_tuning_resources_read_their_search():
    job, _ = imported("k8s-sm-hyperopt-log-categorical.yaml")
    assert job.tuning.metric.name == "val_acc" and job.tuning.metric.goal.value == "maximize"
    assert job.tuning.max_trials == 8 and job.tuning.parallel_trials == 2 and job.tuning.early_stopping
    assert {n: p.type.value for n, p in job.tuning.parameters.items()}["optimizer"] == "categorical"
    ack, _ = imported("ack-hyperparameter-tuning-job.yaml")
    assert ack.tuning.metric.goal.value == "minimize"


@needs_corpus
@pytest.mark.parametrize("name, words", [
    ("deployment-pipeline-hash-comments.json", "not JSON"),
    ("k8s-sm-horovod-p3-x2-split-metric-definitions.yaml", "MetricDefinitions[0].Regex"),
])
def test_files_sagemaker_refuses_are_exit_2(name, words):
    with pytest.raises(ValidationError, match=re.escape(words)):
        import_job(CORPUS / name)


JOB = {"name": "refs", "framework": "pytorch", "image": "acct.dkr.ecr.us-east-1.amazonaws.com/t:1",
       "command": ["python", "train.py"], "primary": {"accelerator": "V100:1"}}


def request(**fields):
    return {"TrainingJobName": "refs", "RoleArn": ROLE,
            "AlgorithmSpecification": {"TrainingImage": JOB["image"], "TrainingInputMode": "File",
                                       "ContainerEntrypoint": ["python", "train.py"], **fields.pop("algorithm", {})},
            "ResourceConfig": {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
            "OutputDataConfig": {"S3OutputPath": "s3://out/"}, "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
            "InputDataConfig": [{"ChannelName": "train", "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": "s3://data/train", "S3DataDistributionType": "FullyReplicated"}}}],
            **fields}


def test_sagemaker_only_paths_become_references_or_are_reported():
    native = request(algorithm={"ContainerArguments": [
        "--data", "/opt/ml/input/data/train", "--model-dir", "/opt/ml/model", "--hosts", "/opt/ml/input/config"]},
        Environment={"TRAIN": "$SM_CHANNEL_TRAIN", "HOSTS": "$SM_HOSTS"})
    job, notes = omnidist.import_native(native, backend="sagemaker"), None
    assert job.args == ("--data", "${{inputs.train}}", "--model-dir", "${{outputs.model}}", "--hosts",
                        "/opt/ml/input/config")
    assert job.env == {"TRAIN": "${{inputs.train}}", "HOSTS": "$SM_HOSTS"}
    assert job.outputs["model"].default and job.backends["sagemaker"]["base_output_dir"] == "s3://out/"
    from omnidist_sagemaker.importer import import_job as sagemaker_import

    _, notes = sagemaker_import(native)
    changed = {n.field for n in notes if n.kind.value == "changed"}
    assert {"args[5]", "env.HOSTS"} <= changed
    vertex = omnidist.migrate(native, "sagemaker", "vertex", settings={
        "data_map": {"s3://": "gs://copied/"}, "staging_bucket": "gs://staging"})[0].request
    pool = vertex["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    assert pool["args"][1] == "/gcs/copied/data/train" and pool["args"][3].startswith("/gcs/staging/")


def test_a_compiled_job_round_trips():
    compiled = omnidist.compile(job_from_dict({**JOB, "workers": {"replicas": 2}, "spot": True, "timeout": "3h",
                                               "labels": {"team": "x"}, "env": {"A": "1"}}),
                                backend="sagemaker", settings={"role_arn": ROLE})
    back = omnidist.import_native(compiled.request, backend="sagemaker")
    again = omnidist.compile(back, backend="sagemaker")
    assert again.request == compiled.request


def test_what_is_not_a_sagemaker_job_is_exit_2():
    with pytest.raises(ValidationError, match="not a SageMaker job"):
        omnidist.import_native({"kind": "Pod"}, backend="sagemaker")

