"""What Skeleton Cloud gives a training process (optional): the runtime reads it, ``omnidist run``
writes it.

The distribution declares this module under the entry-point group ``omnidist.platforms``
(``pyproject.toml``), so :func:`omnidist.runtime.context` recognises Skeleton Cloud's containers
and ``omnidist run --emulate skeleton`` gives local replicas the same variables. Standard
library and :mod:`omnidist.runtime` only: it is imported inside training containers, where the
runtime needs no more than that, so this module imports nothing of the backend (and the
package's ``__init__`` loads the backend only when it is asked for). The containers must have
this distribution installed to be recognised; delete this file and its entry point and the
backend works as before, its containers read as torchrun's, MPI's or a single process.

Skeleton Cloud sets, on every replica of a job (its documentation, "The job's environment"):

======================  =====================================================================
``SKELETON_JOB_ID``     the job's id (only the cloud's containers have it)
``SKELETON_POOL``       the replica's pool: ``primary`` or ``workers``
``SKELETON_REPLICA``    the replica's index within its pool (0-based)
``SKELETON_WORKERS``    the replicas of the ``workers`` pool (0 without one)
``SKELETON_PRIMARY``    ``host:port`` where the primary's replica listens
======================  =====================================================================
"""

from __future__ import annotations

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, integer
from omnidist.runtime.platforms import Decided, JobFacts, Slot, hosts
from omnidist.runtime.view import RuntimeContext

NAME = "skeleton"
"""The platform's name: its entry point's, and the backend's the emulation compiles with."""

ORDER = 32
"""After the built-in clouds (up to Azure ML's 30), before Kubernetes (35) and a bare TF_CONFIG (40)."""

JOB_ID, POOL, REPLICA, WORKERS, PRIMARY = ("SKELETON_JOB_ID", "SKELETON_POOL", "SKELETON_REPLICA",
                                           "SKELETON_WORKERS", "SKELETON_PRIMARY")
VARIABLES = frozenset({JOB_ID, POOL, REPLICA, WORKERS, PRIMARY})
PREFIXES = ("SKELETON_",)

POOL_ROLES = {"primary": "primary", "workers": "worker"}
"""The cloud's pool -> the runtime's role (the pools the compiler writes, ``tables.ROLES``)."""

HINTS_PER_ROLE = True
"""The compiler adds omnidist's hints to each pool's ``env``."""

ENV_FIELD = True
"""A pool has an ``env``."""


def detect(env: Env) -> bool:
    """``SKELETON_JOB_ID`` is set."""
    return JOB_ID in env


def parse(env: Env) -> RuntimeContext:
    """The node-level context: primary node 0, worker ``i`` node ``i + 1``, rank 0 at ``SKELETON_PRIMARY``.

    Raises:
        RuntimeEnvError: a variable is missing or malformed; it is named.
    """
    pool = env.get(POOL, "")
    if pool not in POOL_ROLES:
        raise RuntimeEnvError(POOL, f"expected one of {', '.join(POOL_ROLES)}, got {pool!r}")
    index, workers = integer(env, REPLICA) or 0, integer(env, WORKERS) or 0
    addr, _, port = env.get(PRIMARY, "").rpartition(":")
    if not addr or not port.isdigit():
        raise RuntimeEnvError(PRIMARY, f"expected host:port, got {env.get(PRIMARY)!r}")
    role = POOL_ROLES[pool]
    node_rank = 0 if role == "primary" else index + 1
    return RuntimeContext(platform=NAME, role=role, index=index, node_rank=node_rank, num_nodes=1 + workers,
                          rank=node_rank, world_size=1 + workers, master_addr=addr, master_port=int(port),
                          cluster={"primary": [f"{addr}:{port}"]}, source=POOL)


def roles(decided: Decided) -> frozenset[str]:
    """The cloud runs a primary and workers only."""
    return frozenset(POOL_ROLES.values())


def follow(request: dict, job: JobFacts) -> Decided:
    """Nothing the request decides shows in the environment beyond the pools' sizes."""
    return Decided()


def assume(job: JobFacts) -> Decided:
    """The same, without the backend installed."""
    return Decided()


def emulate(job: JobFacts, slots: list[Slot], decided: Decided) -> list[dict[str, str]]:
    """What the cloud sets on each replica, for ``omnidist run --emulate skeleton``."""
    primary = hosts(slots, "primary")[0]
    workers = len(hosts(slots, "worker"))
    pools = {role: pool for pool, role in POOL_ROLES.items()}
    return [{JOB_ID: f"local-{job.name}", POOL: pools[slot.role], REPLICA: str(slot.index),
             WORKERS: str(workers), PRIMARY: primary} for slot in slots if slot.runs]
