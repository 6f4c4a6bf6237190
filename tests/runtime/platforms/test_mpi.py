"""MPI launchers outside a cloud (omnidist/runtime/platforms/mpi.py): Open MPI's and Hydra's
documented per-rank variables, as a Kubeflow MPIJob's ranks see them."""

from __future__ import annotations

import pytest

from omnidist.runtime import RuntimeEnvError, context
from omnidist.runtime.platforms import mpi

# Open MPI's mpirun: rank 5 of 8, 4 ranks per node (the second node), in a pod.
OPEN_MPI = {"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
            "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
# MPICH / Intel MPI (Hydra): the same rank.
HYDRA = {"PMI_RANK": "5", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "4"}


@pytest.mark.parametrize("env", [OPEN_MPI, HYDRA], ids=["open-mpi", "hydra"])
def test_ranks_and_nodes_from_the_launchers_variables(env):
    assert mpi.detect(env)
    ctx = mpi.parse(env)
    assert (ctx.platform, ctx.role, ctx.index, ctx.node_rank, ctx.num_nodes, ctx.rank, ctx.world_size,
            ctx.local_rank, ctx.processes_per_node) == ("mpi", "worker", 0, 1, 2, 5, 8, 1, 4)
    assert ctx.master_addr is None  # MPI names no rendezvous address of its own
    with pytest.raises(RuntimeEnvError, match="where rank 0 listens"):
        ctx.torch_env()


def test_a_forwarded_master_address_is_used():
    ctx = mpi.parse({**OPEN_MPI, "MASTER_ADDR": "worker-0.job", "MASTER_PORT": "23456"})
    assert (ctx.master_addr, ctx.master_port) == ("worker-0.job", 23456)
    assert ctx.torch_env() == {"MASTER_ADDR": "worker-0.job", "MASTER_PORT": "23456", "RANK": "5",
                               "WORLD_SIZE": "8", "LOCAL_RANK": "1"}


def test_one_node_listens_locally():
    ctx = mpi.parse({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"})
    assert (ctx.role, ctx.num_nodes, ctx.master_addr, ctx.master_port) == ("primary", 1, "127.0.0.1", 29500)


def test_an_mpijob_rank_in_a_pod_is_read_as_mpi(monkeypatch):
    """A Kubeflow MPIJob's ranks run under mpirun: the pod's Kubernetes variables alone do not
    make it a PyTorchJob or TFJob pod, and the ranks come from mpirun."""
    for name in ("MASTER_ADDR", "WORLD_SIZE", "RANK", "TF_CONFIG", "PET_NNODES", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in OPEN_MPI.items():
        monkeypatch.setenv(name, value)
    ctx = context()
    assert (ctx.platform, ctx.rank, ctx.world_size, ctx.node_rank) == ("mpi", 5, 8, 1)


@pytest.mark.parametrize("env, variable", [
    ({"OMPI_COMM_WORLD_RANK": "0"}, "OMPI_COMM_WORLD_SIZE"),
    ({"PMI_RANK": "8", "PMI_SIZE": "8"}, "PMI_RANK"),
    ({"OMPI_COMM_WORLD_RANK": "x", "OMPI_COMM_WORLD_SIZE": "2"}, "OMPI_COMM_WORLD_RANK"),
])
def test_malformed_variables_are_named(env, variable):
    with pytest.raises(RuntimeEnvError) as info:
        mpi.parse(env)
    assert info.value.variable == variable
