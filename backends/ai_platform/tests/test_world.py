"""The World of a legacy AI Platform request (SPEC §14): one test per documented fact, each naming
its source (the keys are ../shared/platforms/world.md §10's)."""

from __future__ import annotations

from omnidist.kit import ENTRYPOINT, TORCH_VARIABLES
from omnidist_ai_platform.world import world

IMAGE = "gcr.io/p/t:1"


def body(**training):
    return {"jobId": "j", "trainingInput": {"scaleTier": "CUSTOM", "masterType": "n1-standard-8",
                                            "region": "us-central1", **training}}


def test_a_custom_container_runs_its_entrypoint_with_the_args():
    """[AIP-PT]: the image's ENTRYPOINT/CMD run with containerCommand/containerArgs."""
    found = world(body(masterConfig={"imageUri": IMAGE, "containerArgs": ["--x"]}))
    assert found.training.argv == (ENTRYPOINT, "--x")


def test_a_package_job_runs_its_module():
    """[AIP-HPT]: packageUris + pythonModule → python -m MODULE ARGS on a runtime version's image."""
    found = world(body(packageUris=["gs://b/p.tar.gz"], pythonModule="trainer.task", args=["--y"],
                       runtimeVersion="2.11", pythonVersion="3.7"))
    assert found.training.argv == ("python", "-m", "trainer.task", "--y") and found.image.pullable


def test_the_job_dir_is_passed_as_an_argument_holding_a_uri():
    """[GH-gcloud]: jobDir reaches the trainer as --job-dir gs://… (a URI, not a path)."""
    found = world(body(masterConfig={"imageUri": IMAGE}, jobDir="gs://b/dir"))
    assert found.training.argv[-2:] == ("--job-dir", "gs://b/dir")
    assert [(d.location, d.given.value) for d in found.data] == [("gs://b/dir", "uri")]


def test_prebuilt_pytorch_containers_get_torch_variables_when_distributed():
    """[AIP-PT]: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK on every node (prebuilt PyTorch containers)."""
    image = "gcr.io/cloud-ml-public/training/pytorch-gpu.1-10"
    found = world(body(masterConfig={"imageUri": image}, workerType="n1-standard-8", workerCount="2"))
    assert TORCH_VARIABLES <= found.training.sees and found.node_count == 3
    custom = world(body(masterConfig={"imageUri": IMAGE}, workerType="n1-standard-8", workerCount="2"))
    assert {"TF_CONFIG", "CLUSTER_SPEC"} <= custom.training.sees and not TORCH_VARIABLES & custom.training.sees


def test_one_process_per_vm():
    """[AIP-PT]: one process per VM, like Vertex."""
    found = world(body(masterConfig={"imageUri": IMAGE, "acceleratorConfig": {"count": 4,
                                                                              "type": "NVIDIA_TESLA_T4"}}))
    assert found.training.processes == 1


def test_a_search_passes_args_and_reads_hypertune():
    """[AIP-HPT], [HT]: values as command-line args, the metric through cloudml-hypertune."""
    found = world(body(masterConfig={"imageUri": IMAGE}, hyperparameters={
        "goal": "MAXIMIZE", "hyperparameterMetricTag": "acc", "maxTrials": 2,
        "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.1, "maxValue": 1}]}))
    assert (found.hyperparameters, found.metric) == ("argv", "hypertune")
