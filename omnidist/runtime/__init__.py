"""Inside the training container: one view of the distributed job on every platform (SPEC §5).

Standard library only — this package runs inside other people's containers, so importing it
loads nothing outside Python's standard library (torch is imported inside :func:`init_torch` and
:func:`torch_device`; :func:`init_tensorflow` never imports TensorFlow).

Example:
    >>> from omnidist import runtime
    >>> ctx = runtime.context()            # doctest: +SKIP
    >>> ctx.role, ctx.node_rank, ctx.world_size  # doctest: +SKIP
    ('worker', 2, 3)

See :mod:`omnidist.runtime.detect` for the detection order, :mod:`omnidist.runtime.platforms`
for each platform's variables (one module per platform), and :mod:`omnidist.runtime.hints` for
the ``OMNIDIST_*`` variables compilers add.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from omnidist.runtime.devices import TorchPlacement
    from omnidist.runtime.view import RuntimeContext

_LAZY = {
    "Checkpoint": "omnidist.runtime.checkpoints",
    "RuntimeContext": "omnidist.runtime.view",
    "RuntimeEnvError": "omnidist.runtime.errors",
    "TorchPlacement": "omnidist.runtime.devices",
    "checkpoint": "omnidist.runtime.checkpoints",
    "checkpoint_dir": "omnidist.runtime.checkpoints",
    "context": "omnidist.runtime.detect",
    "latest_checkpoint": "omnidist.runtime.checkpoints",
    "report": "omnidist.runtime.reporting",
}
"""Public names imported on first use (PEP 562): a compiler that reads one platform module's
tables, or the errors module that re-exports the runtime's error, loads nothing else of the
runtime. (No submodule is named like these, so importing one never hides a name here.)"""

__all__ = ["Checkpoint", "RuntimeContext", "RuntimeEnvError", "TorchPlacement", "checkpoint", "checkpoint_dir",
           "context", "hints", "init_tensorflow", "init_torch", "latest_checkpoint", "report", "torch_device"]

_placement: Optional[TorchPlacement] = None
"""What :func:`init_torch` chose for this process (read by :func:`torch_device`)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name == "hints":  # the one submodule in __all__: `runtime.hints` works without importing it first
        return importlib.import_module("omnidist.runtime.hints")
    raise AttributeError(f"module 'omnidist.runtime' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def init_torch(backend: Optional[str] = None, **kwargs: Any) -> RuntimeContext:
    """Join the ``torch.distributed`` world this process belongs to, on the right device.

    Sets ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` from
    :func:`context`, then calls ``torch.distributed.init_process_group`` with ``env://``.
    A single process with no platform at all gets a free local port, so it never collides.

    Backend and device are chosen together (:func:`omnidist.runtime.devices.torch_placement`):
    ``nccl`` only when every process of the node has a GPU of its own, and then the process is
    pinned to GPU ``local_rank`` (``torch.cuda.set_device``); when processes outnumber the GPUs
    (or ``omnidist run`` made its replicas share them), ``gloo`` on GPU ``local_rank % GPUs``;
    without a GPU, ``gloo`` on the CPU.
    :func:`torch_device` gives the device to move the model and data to.

    Args:
        backend: ``nccl``, ``gloo``…; default: chosen as above.
        **kwargs: passed on to ``init_process_group`` (``timeout=`` …).

    Returns:
        The context it initialized from.

    Raises:
        RuntimeEnvError: a platform variable is malformed; this replica (a parameter
            server, evaluator or reduction server) is not part of the training world; or
            ``backend="nccl"`` without a GPU for every process of the node.
    """
    import torch
    import torch.distributed as dist

    from omnidist.runtime.detect import context
    from omnidist.runtime.devices import torch_placement

    global _placement
    ctx = context()
    env = ctx.torch_env()
    if ctx.platform == "none" and ctx.world_size == 1 and "MASTER_PORT" not in os.environ:
        env["MASTER_PORT"] = str(_free_port())
    os.environ.update(env)
    if dist.is_initialized():
        return ctx
    cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    placement = torch_placement(cuda_devices, ctx.local_rank or 0, ctx.processes_per_node, backend,
                                shared=_shared())
    if placement.cuda_device is not None:
        torch.cuda.set_device(placement.cuda_device)
    dist.init_process_group(backend=placement.backend, init_method="env://", rank=int(env["RANK"]),
                            world_size=int(env["WORLD_SIZE"]), **kwargs)
    _placement = placement
    return ctx


def torch_device() -> Any:
    """The ``torch.device`` this process computes on: ``cuda:<local_rank>`` under nccl, a shared
    GPU under gloo when processes outnumber the GPUs, else ``cpu``.

    After :func:`init_torch` it is the device chosen there; before, the one it would choose.

    Example:
        >>> ctx = runtime.init_torch()                       # doctest: +SKIP
        >>> model = DistributedDataParallel(model.to(runtime.torch_device()))  # doctest: +SKIP
    """
    import torch

    from omnidist.runtime.detect import context
    from omnidist.runtime.devices import torch_placement

    placement = _placement
    if placement is None:
        ctx = context()
        cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
        placement = torch_placement(cuda_devices, ctx.local_rank or 0, ctx.processes_per_node, shared=_shared())
    return torch.device(placement.device)


def _shared() -> bool:
    """``omnidist run`` made this machine's training replicas share its GPUs (:data:`hints.GPUS_SHARED`)."""
    from omnidist.runtime import hints

    return os.environ.get(hints.GPUS_SHARED) == "1"


def init_tensorflow(environ: Optional[MutableMapping[str, str]] = None) -> RuntimeContext:
    """Make ``TF_CONFIG`` right for ``tf.distribute``; call it before building a strategy.

    Drops empty task lists (a platform may write ``"ps": []``, which TensorFlow >= 2.13 rejects),
    and writes a ``TF_CONFIG`` from the context on platforms that set none (PyTorch
    or MPI nodes); everything else the platform set is kept. Does not import TensorFlow.

    Args:
        environ: the variables to read and fix (default: ``os.environ``).

    Returns:
        The context of this process.

    Raises:
        RuntimeEnvError: a platform variable is malformed, or a ``TF_CONFIG`` is needed but
            cannot be written (see :func:`omnidist.runtime.tf_setup.tf_config_fix`).
    """
    from omnidist.runtime.detect import context
    from omnidist.runtime.tf_setup import tf_config_fix

    env = os.environ if environ is None else environ
    ctx = context(env)
    fix = tf_config_fix(ctx, env)
    if fix.value is not None:
        env["TF_CONFIG"] = fix.value
    return ctx
