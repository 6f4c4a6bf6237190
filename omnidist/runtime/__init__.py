"""Inside the training container: one view of the distributed job on every platform (SPEC §5).

Standard library only — this package runs inside other people's containers, so importing it
loads nothing outside Python's standard library (torch is imported inside :func:`init_torch`).

Example:
    >>> from omnidist import runtime
    >>> ctx = runtime.context()            # doctest: +SKIP
    >>> ctx.role, ctx.node_rank, ctx.world_size  # doctest: +SKIP
    ('worker', 2, 3)

See :mod:`omnidist.runtime.detect` for the detection order and :mod:`omnidist.runtime.hints`
for the ``OMNIDIST_*`` variables compilers add.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Optional

from omnidist.runtime import hints
from omnidist.runtime.context import RuntimeContext
from omnidist.runtime.detect import context
from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.report import report

__all__ = ["RuntimeContext", "RuntimeEnvError", "context", "hints", "init_torch", "report"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def init_torch(backend: Optional[str] = None, **kwargs: Any) -> RuntimeContext:
    """Join the ``torch.distributed`` world this process belongs to.

    Sets ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` from
    :func:`context`, then calls ``torch.distributed.init_process_group`` with ``env://``.
    A single process with no platform at all gets a free local port, so it never collides.

    Args:
        backend: ``nccl``, ``gloo``…; default ``nccl`` when CUDA is available (and then the
            process is pinned to GPU ``local_rank``), else ``gloo``.
        **kwargs: passed on to ``init_process_group`` (``timeout=`` …).

    Returns:
        The context it initialized from.

    Raises:
        RuntimeEnvError: a platform variable is malformed, or this replica (a parameter
            server, evaluator or reduction server) is not part of the training world.
    """
    import torch
    import torch.distributed as dist

    ctx = context()
    env = ctx.torch_env()
    if ctx.platform == "none" and ctx.world_size == 1 and "MASTER_PORT" not in os.environ:
        env["MASTER_PORT"] = str(_free_port())
    os.environ.update(env)
    if dist.is_initialized():
        return ctx
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(ctx.local_rank or 0)
    dist.init_process_group(backend=backend, init_method="env://", rank=int(env["RANK"]),
                            world_size=int(env["WORLD_SIZE"]), **kwargs)
    return ctx
