"""The hosts of a Google TPU slice: ``TPU_WORKER_ID`` and ``TPU_WORKER_HOSTNAMES`` (SPEC §13).

GKE's TPU webhook sets both in every pod of an Indexed Job or JobSet that asks for
``google.com/tpu`` (``TPU_WORKER_ID``: "unique integer for each Pod … zero to the number of Pods
minus one"; ``TPU_WORKER_HOSTNAMES``: "comma-separated list of TPU VM hostnames or IP addresses …
ordered and zero indexed by the TPU_WORKER_ID"), and LeaderWorkerSet and KubeRay set them for
their TPU pods the same way. Each host runs one process, which drives every chip of the host:

- worker id 0 is the primary; id ``i > 0`` is worker ``i - 1``, with ``node_rank`` ``i`` (SPEC §5);
- ``num_nodes`` and ``world_size`` are the number of hostnames, ``rank`` the worker id;
- rank 0 listens on the first hostname, at JAX's TPU coordinator port (:data:`COORDINATOR_PORT`).

Both variables are needed; one without the other, an id that is not a whole number below the
number of hostnames, or an empty hostname is an error naming the variable. Kubeflow jobs on TPUs
(a PyTorchJob or TFJob, which the webhook leaves alone) are read as :mod:`.kubernetes` first.
"""

from __future__ import annotations

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, integer
from omnidist.runtime.view import RuntimeContext

NAME = "tpu"
ORDER = 38

WORKER_ID = "TPU_WORKER_ID"
HOSTNAMES = "TPU_WORKER_HOSTNAMES"
VARIABLES = frozenset({HOSTNAMES, WORKER_ID})
PREFIXES: tuple[str, ...] = ()

COORDINATOR_PORT = 8476
"""Where JAX's TPU cluster detection puts its coordinator on the first host (``jax.distributed``'s
Cloud TPU cluster); the context's ``master_port``."""


def detect(env: Env) -> bool:
    """Either TPU worker variable is set."""
    return WORKER_ID in env or HOSTNAMES in env


def hostnames(env: Env) -> list[str]:
    """The slice's hosts, in worker-id order.

    Raises:
        RuntimeEnvError: the variable is missing or names an empty host.
    """
    raw = env.get(HOSTNAMES)
    if raw is None:
        raise RuntimeEnvError(HOSTNAMES, f"not set, though {WORKER_ID} is (the TPU webhook sets both)")
    hosts = [h.strip() for h in raw.split(",")]
    if not raw.strip() or not all(hosts):
        raise RuntimeEnvError(HOSTNAMES, f"expected comma-separated hostnames, got {raw!r}")
    return hosts


def parse(env: Env) -> RuntimeContext:
    """The context of TPU host ``TPU_WORKER_ID`` of the ``TPU_WORKER_HOSTNAMES`` slice."""
    hosts = hostnames(env)
    if WORKER_ID not in env:
        raise RuntimeEnvError(WORKER_ID, f"not set, though {HOSTNAMES} is (the TPU webhook sets both)")
    worker = integer(env, WORKER_ID, minimum=0)
    if worker is None:
        raise RuntimeEnvError(WORKER_ID, "expected a whole number, got ''")
    if worker >= len(hosts):
        raise RuntimeEnvError(WORKER_ID, f"is {worker}, and {HOSTNAMES} names {len(hosts)} host(s): ids go from 0 "
                              f"to {len(hosts) - 1}")
    addresses = [f"{host}:{COORDINATOR_PORT}" for host in hosts]
    cluster = {"primary": addresses[:1], **({"worker": addresses[1:]} if len(hosts) > 1 else {})}
    return RuntimeContext(
        platform=NAME, role="primary" if worker == 0 else "worker", index=max(worker - 1, 0), node_rank=worker,
        num_nodes=len(hosts), rank=worker, world_size=len(hosts), local_rank=0, master_addr=hosts[0],
        master_port=COORDINATOR_PORT, cluster=cluster, processes_per_node=1, source=f"{WORKER_ID}, {HOSTNAMES}",
    )
