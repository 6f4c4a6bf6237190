"""The World of a SageMaker request (SPEC §14): one test per documented fact, each naming its
source (the keys are ../shared/platforms/world.md §10's)."""

from __future__ import annotations

from omnidist.kit import ENTRYPOINT, MPI_VARIABLES, PROCESS_VARIABLES
from omnidist_sagemaker.world import HYPERPARAMETERS, world

ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com/trainer:1"
DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.1.0-gpu-py310"


def request(**overrides):
    base = {
        "TrainingJobName": "t",
        "AlgorithmSpecification": {"TrainingImage": ECR, "TrainingInputMode": "File"},
        "ResourceConfig": {"InstanceType": "ml.p3.16xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
        "OutputDataConfig": {"S3OutputPath": "s3://b/out"},
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    }
    base.update(overrides)
    return base


def test_without_container_entrypoint_the_image_runs_as_image_train():
    """[SM-RUN]: SageMaker runs `docker run IMAGE train`."""
    node = world(request()).training
    assert node.argv == (ENTRYPOINT, "train") and node.processes == 1


def test_container_entrypoint_and_arguments_replace_train():
    """[SM-NOTE] (botocore model): ContainerEntrypoint + ContainerArguments replace the default invocation."""
    spec = {"TrainingImage": ECR, "ContainerEntrypoint": ["python", "t.py"], "ContainerArguments": ["--lr", "1"]}
    assert world(request(AlgorithmSpecification=spec)).training.argv == ("python", "t.py", "--lr", "1")


def test_script_mode_passes_hyperparameters_as_sorted_args():
    """[TK-map], [TK-env]: every user hyperparameter becomes an argument, keys sorted, one-letter keys as -k;
    values JSON-decoded; sagemaker_* keys removed."""
    hyper = {"sagemaker_program": '"train.py"', "lr": '"0.1"', "b": "8", "sagemaker_region": '"us-east-1"'}
    node = world(request(AlgorithmSpecification={"TrainingImage": DLC}, HyperParameters=hyper)).training
    assert node.program == ("python", "train.py", "-b", "8", "--lr", "0.1")


def test_the_pytorch_toolkit_sets_master_addr_and_the_sm_variables():
    """[PT-train]: MASTER_ADDR/MASTER_PORT for every PyTorch job; [TK-env]: SM_HOSTS, SM_CHANNEL_<NAME>."""
    channel = {"ChannelName": "train", "DataSource": {"S3DataSource": {"S3Uri": "s3://b/train"}}}
    node = world(request(AlgorithmSpecification={"TrainingImage": DLC}, HyperParameters={"sagemaker_program": "t.py"},
                         InputDataConfig=[channel])).training
    assert {"MASTER_ADDR", "MASTER_PORT", "SM_HOSTS", "SM_CHANNEL_TRAIN", "TRAINING_JOB_NAME"} <= node.sees


def test_torch_distributed_runs_torchrun_one_process_per_gpu():
    """[TK-torch], [TK-runner]: torch_distributed starts torchrun with nproc_per_node = the GPUs."""
    hyper = {"sagemaker_program": "t.py", "sagemaker_torch_distributed_enabled": "true"}
    node = world(request(AlgorithmSpecification={"TrainingImage": DLC}, HyperParameters=hyper)).training
    assert node.launcher.value == "torchrun" and node.processes == 8 and PROCESS_VARIABLES <= node.sees


def test_mpi_runs_mpirun_with_the_processes_per_host():
    """[TK-mpi]: sagemaker_mpi_enabled runs mpirun with sagemaker_mpi_num_of_processes_per_host ranks a host."""
    hyper = {"sagemaker_program": "t.py", "sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "4"}
    node = world(request(AlgorithmSpecification={"TrainingImage": DLC}, HyperParameters=hyper)).training
    assert node.launcher.value == "mpirun" and node.processes == 4 and MPI_VARIABLES <= node.sees


def test_a_channel_is_a_local_read_only_path_and_the_model_folder_is_writable():
    """[TK-envmd], [SM-NOTE]: channel NAME at /opt/ml/input/data/NAME; /opt/ml/model is uploaded."""
    channel = {"ChannelName": "train", "DataSource": {"S3DataSource": {"S3Uri": "s3://b/train"}}}
    data = {d.where: d for d in world(request(InputDataConfig=[channel])).data}
    assert (data["/opt/ml/input/data/train"].given.value, data["/opt/ml/input/data/train"].access.value) == ("path", "ro")
    assert data["/opt/ml/model"].access.value == "rw" and data["/opt/ml/model"].implicit


def test_an_image_reads_its_hyperparameters_from_the_config_file():
    """[TK-env]: /opt/ml/input/config/hyperparameters.json holds the request's HyperParameters."""
    data = {d.where: d for d in world(request(HyperParameters={"eta": "0.2"})).data}
    assert "eta" in data[HYPERPARAMETERS].location


def test_a_search_reads_its_metric_from_the_logs():
    """[SM-NOTE]: MetricDefinitions regexes over the job's log output; values via hyperparameters.json."""
    tuning = {"HyperParameterTuningJobName": "s", "HyperParameterTuningJobConfig": {"Strategy": "Bayesian"},
              "TrainingJobDefinition": {**request(), "StaticHyperParameters": {"x": "1"}}}
    found = world(tuning)
    assert (found.metric, found.hyperparameters) == ("logs", HYPERPARAMETERS)


def test_sagemaker_pulls_from_ecr_only_unless_a_vpc_registry_is_named():
    """[SM-REG]: ECR by default; a private registry through TrainingImageConfig (Vpc); Docker Hub directly: no."""
    assert world(request()).image.pullable
    hub = world(request(AlgorithmSpecification={"TrainingImage": "pytorch/pytorch:2.2"}))
    assert not hub.image.pullable and "ECR" in hub.image.why
    vpc = request(AlgorithmSpecification={"TrainingImage": "registry.example.com/t:1",
                                          "TrainingImageConfig": {"TrainingRepositoryAccessMode": "Vpc"}})
    assert world(vpc).image.pullable


def test_every_host_runs_the_program():
    """[PT-train], [TK-runner]: without a distribution, one process on every host."""
    found = world(request())
    assert found.node_count == 2 and [n.role for n in found.nodes] == ["primary", "workers"]
