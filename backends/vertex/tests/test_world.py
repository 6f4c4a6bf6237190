"""The World of a Vertex AI request (SPEC §14): one test per documented fact, each naming its
source (the keys are ../shared/platforms/world.md §10's)."""

from __future__ import annotations

from omnidist.kit import ENTRYPOINT
from omnidist_vertex.world import world

IMAGE = "us-docker.pkg.dev/p/r/t:1"


def job(*pools, **spec):
    return {"displayName": "t", "jobSpec": {"workerPoolSpecs": list(pools), **spec}}


def pool(replicas=1, gpus=0, **container):
    machine = {"machineType": "n1-standard-8", **({"acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": gpus}
                                                    if gpus else {})}
    return {"machineSpec": machine, "replicaCount": str(replicas), "containerSpec": {"imageUri": IMAGE, **container}}


def test_command_replaces_the_entrypoint_and_args_the_cmd():
    """[V-CS]: command overrides ENTRYPOINT, args overrides CMD (Docker semantics)."""
    assert world(job(pool(args=["--lr", "1"]))).training.argv == (ENTRYPOINT, "--lr", "1")
    assert world(job(pool(command=["python", "t.py"]))).training.argv == ("python", "t.py")


def test_a_python_package_runs_as_a_module():
    """[V-CS]: pythonPackageSpec runs `python -m MODULE ARGS`."""
    spec = {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
            "pythonPackageSpec": {"executorImageUri": IMAGE, "packageUris": ["gs://b/p.tar.gz"],
                                  "pythonModule": "trainer.task", "args": ["--x"]}}
    assert world(job(spec)).training.argv == ("python", "-m", "trainer.task", "--x")


def test_a_distributed_job_gets_cluster_spec_and_tf_config_but_no_torch_variables():
    """[V-DT]: CLUSTER_SPEC and TF_CONFIG on every replica; no MASTER_ADDR/RANK is documented."""
    node = world(job(pool(command=["python", "t.py"]), pool(2, command=["python", "t.py"]))).training
    assert {"CLUSTER_SPEC", "TF_CONFIG"} <= node.sees and "MASTER_ADDR" not in node.sees


def test_one_process_per_replica_whatever_its_gpus():
    """[V-DT]: Vertex starts no launcher; one container process per replica."""
    node = world(job(pool(gpus=4, command=["python", "t.py"]))).training
    assert node.processes == 1 and node.launcher.value == "none"


def test_omnidist_launch_starts_one_process_per_gpu_and_sets_torch_variables():
    """omnidist launch is torchrun wired from the platform's variables (SPEC §10)."""
    node = world(job(pool(gpus=4, command=["omnidist", "launch", "--", "python", "t.py"]))).training
    assert node.processes == 4 and {"MASTER_ADDR", "RANK", "WORLD_SIZE", "LOCAL_RANK"} <= node.sees


def test_gcs_fuse_paths_are_local_writable_and_gs_uris_stay_strings():
    """[V-FUSE]: /gcs/BUCKET/… is Cloud Storage FUSE, read and write; [V-CS]: gs:// args as-is."""
    data = world(job(pool(args=["--data=/gcs/b/d", "--out", "gs://b/o"]))).data
    assert {(d.location, d.given.value, d.access.value) for d in data} == {("gs://b/d", "path", "rw"),
                                                                          ("gs://b/o", "uri", "ro")}


def test_the_base_output_directory_reaches_the_program_as_a_uri():
    """[V-ENV]: AIP_MODEL_DIR & co. hold gs:// URIs when the job sets baseOutputDirectory."""
    found = world(job(pool(command=["t"]), baseOutputDirectory={"outputUriPrefix": "gs://b/out"}))
    assert "AIP_MODEL_DIR" in found.training.sees
    assert [(d.given.value, d.implicit) for d in found.data] == [("uri", True)]


def test_a_search_appends_flags_and_reads_hypertune():
    """[V-HPT]: trial values appended as flags; [HT]: the metric through cloudml-hypertune's file."""
    found = world({"displayName": "s", "trialJobSpec": {"workerPoolSpecs": [pool(command=["t"])]},
                   "studySpec": {"metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}]}})
    assert (found.hyperparameters, found.metric) == ("argv", "hypertune")


def test_vertex_pulls_google_and_public_registries_not_ecr():
    """[V-CS]: Artifact Registry, Container Registry or Docker Hub; ECR needs AWS credentials."""
    assert world(job(pool(command=["t"]))).image.pullable
    ecr = pool(command=["t"])
    ecr["containerSpec"]["imageUri"] = "123456789012.dkr.ecr.us-east-1.amazonaws.com/t:1"
    assert not world(job(ecr)).image.pullable


def test_a_code_unpacking_wrapper_runs_the_program_it_execs():
    """[V-CS]: the command runs as given; a `sh -c '…; exec "$@"' NAME CMD…` wrapper ends in CMD."""
    wrapped = ["sh", "-c", 'tar -xzf /gcs/b/c.tar.gz; exec "$@"', "code", "omnidist", "launch", "--", "python", "t.py"]
    node = world(job(pool(gpus=2, command=wrapped))).training
    assert (node.launcher.value, node.processes, node.program) == ("omnidist launch", 2, ("python", "t.py"))
