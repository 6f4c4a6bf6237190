"""A process started by ``mpirun`` outside any cloud that says so (a Kubeflow MPIJob's ranks, an
``mpirun`` on a cluster of your own).

Open MPI gives every rank ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE``,
``OMPI_COMM_WORLD_LOCAL_RANK`` and ``OMPI_COMM_WORLD_LOCAL_SIZE``; MPICH and Intel MPI (Hydra)
give ``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALRANKID`` and ``MPI_LOCALNRANKS``. Ranks fill the nodes
in order, so the node rank is ``rank // local size``. MPI has no rendezvous address of its own:
``MASTER_ADDR``/``MASTER_PORT`` are read when the launcher forwards them (``mpirun -x
MASTER_ADDR``); without them a one-node world listens on 127.0.0.1, and a larger one leaves the
address unknown (Horovod needs none; :func:`omnidist.runtime.init_torch` then says what is missing).
On Azure ML the same variables are read as Azure's MPI distribution, which names rank 0's node.
"""

from __future__ import annotations

from typing import Optional

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, integer
from omnidist.runtime.view import RuntimeContext

NAME = "mpi"
ORDER = 45

FLAVOURS: tuple[tuple[str, str, str, str], ...] = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
)
"""(rank, world size, local rank, local size) variables: Open MPI's, then MPICH / Intel MPI's."""

VARIABLES = frozenset({"MPI_LOCALRANKID", "MPI_LOCALNRANKS"})
PREFIXES = ("OMPI_COMM_WORLD_", "PMI_")

DEFAULT_PORT = 29500
"""torch's default ``MASTER_PORT``, for a one-node world that names none."""


def _flavour(env: Env) -> Optional[tuple[str, str, str, str]]:
    return next((names for names in FLAVOURS if names[0] in env), None)


def detect(env: Env) -> bool:
    """An MPI rank: ``OMPI_COMM_WORLD_RANK`` or ``PMI_RANK`` is set."""
    return _flavour(env) is not None


def parse(env: Env) -> RuntimeContext:
    """The rank, world and node from the MPI library's variables; rank 0's address from
    ``MASTER_ADDR``/``MASTER_PORT`` when forwarded."""
    rank_name, size_name, local_name, local_size_name = _flavour(env)
    rank, size = integer(env, rank_name), integer(env, size_name, minimum=1)
    if size is None:
        raise RuntimeEnvError(size_name, f"not set, though {rank_name} is (the MPI launcher sets both)")
    if rank >= size:
        raise RuntimeEnvError(rank_name, f"{rank} is not below {size_name}={size}")
    local_size = integer(env, local_size_name, minimum=1) or 1
    node_rank, num_nodes = rank // local_size, -(-size // local_size)
    addr = env.get("MASTER_ADDR") or ("127.0.0.1" if num_nodes == 1 else None)
    port = integer(env, "MASTER_PORT", minimum=1) or (DEFAULT_PORT if addr else None)
    return RuntimeContext(
        platform=NAME, role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=num_nodes, rank=rank, world_size=size,
        local_rank=integer(env, local_name) or 0, master_addr=addr, master_port=port,
        cluster={"primary": [f"{addr}:{port}"]} if addr else {}, processes_per_node=local_size, source=rank_name,
    )
