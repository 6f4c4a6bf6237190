"""The World of a Kubeflow manifest (SPEC §14): one test per documented fact, each naming its
source (the keys are ../shared/platforms/world.md §10's)."""

from __future__ import annotations

from omnidist.kit import ENTRYPOINT, MPI_VARIABLES, TORCH_VARIABLES
from omnidist_kubernetes.world import world


def replica(replicas=1, name="pytorch", gpus=0, **container):
    limits = {"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}} if gpus else {}
    return {"replicas": replicas, "template": {"spec": {"containers": [
        {"name": name, "image": "docker.io/me/t:1", **limits, **container}]}}}


def pytorchjob(spec=None, **replicas):
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"},
            "spec": {"pytorchReplicaSpecs": replicas, **(spec or {})}}


def test_command_and_args_are_plain_kubernetes():
    """[KF-env]: the operators never rewrite argv; command replaces ENTRYPOINT, args the CMD."""
    assert world(pytorchjob(Master=replica(args=["--x"]))).training.argv == (ENTRYPOINT, "--x")


def test_a_master_brings_torch_variables_on_every_pod():
    """[KF-env], [KF-master]: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK only if a Master replica exists."""
    found = world(pytorchjob(Master=replica(command=["python", "t.py"]), Worker=replica(2, command=["python", "t.py"])))
    assert all(TORCH_VARIABLES <= n.sees for n in found.nodes) and found.node_count == 3


def test_a_worker_only_job_has_no_master_addr():
    """[KF-env]: without a Master, no MASTER_ADDR/RANK/WORLD_SIZE."""
    found = world(pytorchjob(Worker=replica(2, command=["python", "t.py"])))
    assert not TORCH_VARIABLES & found.training.sees


def test_a_bare_torchrun_starts_nproc_per_node():
    """[KF-env]: a torchrun in the command reads PET_NPROC_PER_NODE (spec.nprocPerNode)."""
    found = world(pytorchjob({"nprocPerNode": "4"}, Master=replica(command=["torchrun", "t.py"])))
    assert (found.training.launcher.value, found.training.processes) == ("torchrun", 4)
    assert "PET_NPROC_PER_NODE" in found.training.sees


def test_a_distributed_tfjob_gets_tf_config():
    """[KF-tf]: TF_CONFIG only when the job is distributed."""
    tfjob = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "j"},
             "spec": {"tfReplicaSpecs": {"Worker": replica(2, name="tensorflow", command=["python", "t.py"])}}}
    assert "TF_CONFIG" in world(tfjob).training.sees


def test_an_mpijob_launcher_starts_slots_per_worker_ranks():
    """[MPI]: mpirun on the launcher starts slotsPerWorker ranks on each worker; OMPI_* from mpirun."""
    mpijob = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "m"},
              "spec": {"slotsPerWorker": 2, "mpiReplicaSpecs": {
                  "Launcher": replica(name="l", command=["mpirun", "-np", "4", "--allow-run-as-root", "python", "t.py"]),
                  "Worker": replica(2, name="w", command=["/usr/sbin/sshd", "-De"])}}}
    node = world(mpijob).training
    assert (node.launcher.value, node.processes, node.count, node.program) == ("mpirun", 2, 2, ("python", "t.py"))
    assert MPI_VARIABLES <= node.sees


def test_a_mounted_claim_is_a_local_path():
    """[KF-env]: data is whatever the pod mounts."""
    master = replica(command=["t"])
    master["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "d", "mountPath": "/data",
                                                                     "readOnly": True}]
    master["template"]["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]
    (data,) = world(pytorchjob(Master=master)).data
    assert (data.location, data.given.value, data.access.value, data.where) == ("persistentVolumeClaim:c", "path",
                                                                                 "ro", "/data")


def test_a_master_variable_the_workers_lack_imports_with_a_change_note():
    """SPEC §10: Kubernetes runs a PyTorchJob whose Master sets a variable its Workers lack, so it imports."""
    from omnidist.kit import NoteKind
    from omnidist_kubernetes.backend import KubernetesBackend

    job = pytorchjob(Master=replica(command=["t"], env=[{"name": "ROLE", "value": "m"}]),
                     Worker=replica(2, command=["t"]))
    imported, notes = KubernetesBackend().import_with_notes(job)
    assert imported.primary.env == {"ROLE": "m"} and imported.workers.env == {"ROLE": ""}
    assert [(n.kind, n.field) for n in notes if "ROLE" in n.message] == [(NoteKind.CHANGED, "workers.env")]
