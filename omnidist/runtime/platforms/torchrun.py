"""torchrun (``torch.distributed.run``) outside any cloud: ``TORCHELASTIC_RUN_ID`` and torch's variables.

torchrun sets ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE`` and ``GROUP_RANK`` (the node rank) for every process it starts, and
``TORCHELASTIC_RUN_ID``. Inside a cloud, the cloud's variables are read first and these only
make the ranks process-level (:mod:`omnidist.runtime.detect`).
"""

from __future__ import annotations

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, integer
from omnidist.runtime.view import RuntimeContext

NAME = "torchrun"
ORDER = 50

RUN_ID = "TORCHELASTIC_RUN_ID"
VARIABLES = frozenset({"GROUP_RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "RANK",
                       "WORLD_SIZE"})
PREFIXES = ("TORCHELASTIC_",)

DEFAULT_PORT = 29500
"""torch's default ``MASTER_PORT``, used when a single-node platform names none."""


def detect(env: Env) -> bool:
    """``TORCHELASTIC_RUN_ID`` is set."""
    return RUN_ID in env


def parse(env: Env) -> RuntimeContext:
    """torchrun's variables (node rank ``GROUP_RANK``, processes per node ``LOCAL_WORLD_SIZE``)."""
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        if not env.get(name):
            raise RuntimeEnvError(name, f"not set, though {RUN_ID} is (torchrun sets both)")
    world_size = integer(env, "WORLD_SIZE", minimum=1)
    per_node = integer(env, "LOCAL_WORLD_SIZE", minimum=1) or 1
    node_rank = integer(env, "GROUP_RANK")
    rank = integer(env, "RANK")
    if node_rank is None:
        node_rank = rank // per_node
    addr, port = env["MASTER_ADDR"], integer(env, "MASTER_PORT", minimum=1)
    return RuntimeContext(
        platform=NAME, role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=max(world_size // per_node, 1), rank=rank, world_size=world_size,
        local_rank=integer(env, "LOCAL_RANK") or 0, master_addr=addr, master_port=port,
        cluster={"primary": [f"{addr}:{port}"]}, processes_per_node=per_node, source=RUN_ID,
    )
