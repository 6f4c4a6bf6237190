"""The World of an Azure ML job file (SPEC §14): one test per documented fact, each naming its
source (the keys are ../shared/platforms/world.md §10's)."""

from __future__ import annotations

from omnidist.kit import MPI_VARIABLES
from omnidist_azure_ml.world import PYTORCH_VARIABLES, world


def command_job(command="python t.py", **fields):
    return {"type": "command", "command": command, "environment": {"image": "mcr.microsoft.com/azureml/base:1"},
            "compute": "azureml:gpu", **fields}


def test_the_command_is_a_shell_line():
    """[AZ-IN]: command is a shell command line; ${{inputs.x}} is substituted."""
    node = world(command_job("python t.py --data ${{inputs.d}}")).training
    assert node.argv[:2] == ("/bin/sh", "-c") and node.program == ("python", "t.py", "--data", "${{inputs.d}}")


def test_the_pytorch_distribution_starts_the_processes_and_sets_torch_variables():
    """[AZ-DGPU], [AZ-BLOG]: process_count_per_instance copies a node; MASTER_ADDR … LOCAL_RANK."""
    found = world(command_job(distribution={"type": "pytorch", "process_count_per_instance": 4},
                              resources={"instance_count": 2}))
    assert (found.training.processes, found.node_count) == (4, 2) and PYTORCH_VARIABLES <= found.training.sees


def test_the_mpi_distribution_runs_mpirun():
    """[AZ-DGPU]: Azure runs mpirun with process_count_per_instance slots; OMPI_COMM_WORLD_* from Open MPI."""
    node = world(command_job(distribution={"type": "mpi", "process_count_per_instance": 2})).training
    assert node.launcher.value == "mpirun" and MPI_VARIABLES <= node.sees


def test_the_tensorflow_distribution_sets_tf_config():
    """[AZ-DGPU-v1]: TF_CONFIG for the tensorflow distribution."""
    assert "TF_CONFIG" in world(command_job(distribution={"type": "tensorflow", "worker_count": 2})).training.sees


def test_every_job_gets_its_run_id():
    """[AZ-PR1572]: AZUREML_RUN_ID on all jobs."""
    assert "AZUREML_RUN_ID" in world(command_job()).training.sees


def test_data_modes_give_paths_or_uris():
    """[AZ-IN], [AZ-OUT]: ro_mount a read-only path, rw_mount (outputs) a writable one, direct a URI."""
    found = world(command_job(inputs={"d": {"type": "uri_folder", "path": "azureml://datastores/x/paths/d"},
                                      "u": {"type": "uri_file", "path": "https://x/f", "mode": "direct"},
                                      "epochs": 3},
                              outputs={"m": {"type": "uri_folder"}}))
    data = {d.where: (d.given.value, d.access.value) for d in found.data}
    assert data == {"${{inputs.d}}": ("path", "ro"), "${{inputs.u}}": ("uri", "ro"), "${{outputs.m}}": ("path", "rw")}


def test_a_sweep_substitutes_values_and_reads_an_mlflow_metric():
    """[AZ-SWEEP]: ${{search_space.x}} in trial.command; objective.primary_metric logged with MLflow."""
    sweep = {"type": "sweep", "trial": {"command": "python t.py --lr ${{search_space.lr}}",
                                        "environment": {"image": "mcr.microsoft.com/azureml/base:1"}},
             "search_space": {"lr": {"type": "uniform", "min_value": 0.1, "max_value": 1}},
             "objective": {"primary_metric": "acc", "goal": "maximize"}}
    found = world(sweep)
    assert (found.hyperparameters, found.metric) == ("argv", "mlflow")


def test_ecr_images_need_credentials_azure_cannot_name():
    """[AZ-MI], [AZ-ISS1049]: the workspace ACR and public images are pulled; ECR needs AWS credentials."""
    assert world(command_job()).image.pullable
    ecr = command_job(environment={"image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/t:1"})
    assert not world(ecr).image.pullable
