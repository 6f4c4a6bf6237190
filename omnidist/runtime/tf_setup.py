"""A ``TF_CONFIG`` that TensorFlow accepts, from whatever the platform set (standard library only).

Two things go wrong between the platforms and ``tf.distribute``:

- A platform's TensorFlow distribution may write ``"ps": []`` when a job has no parameter servers,
  and TensorFlow >= 2.13 rejects an empty task list (``MultiWorkerMirroredStrategy`` then
  crashes, on some builds with a segfault and no message). Empty lists are dropped.
- Platforms that set no ``TF_CONFIG`` at all (a platform's PyTorch or MPI nodes, a local run
  emulating one, torchrun) leave TensorFlow a
  single worker. One is written from the context (:meth:`RuntimeContext.tf_config`).

Everything else in a platform's ``TF_CONFIG`` (``environment``, ``job``, ``task.trial``…) is kept.
A ``master`` task (a legacy platform's, without ``useChiefInTfConfig``) is left as it is: omnidist's
compiler for that platform sets ``useChiefInTfConfig`` for TensorFlow jobs instead.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Optional

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import cluster, json_object
from omnidist.runtime.view import RuntimeContext

VARIABLE = "TF_CONFIG"


@dataclasses.dataclass(frozen=True)
class TfConfigFix:
    """What to do to ``TF_CONFIG``: the new value (``None``: leave it) and why, one phrase each."""

    value: Optional[str] = None
    changes: tuple[str, ...] = ()


def tf_config_fix(ctx: RuntimeContext, env: Mapping[str, str]) -> TfConfigFix:
    """The ``TF_CONFIG`` this process should have before TensorFlow reads it (pure).

    Args:
        ctx: the process's context (:func:`omnidist.runtime.view` of ``env``).
        env: the environment variables, ``TF_CONFIG`` among them or not.

    Raises:
        RuntimeEnvError: ``TF_CONFIG`` is malformed; or none is set, the job spans several
            nodes and the platform does not reveal every node's address, or several
            processes run per node (TensorFlow's multi-worker strategies want one per node).
    """
    if VARIABLE in env:
        spec = json_object(env, VARIABLE)
        listing = cluster(spec, VARIABLE)
        empty = sorted(key for key, hosts in listing.items() if not hosts)
        if not empty:
            return TfConfigFix()
        spec["cluster"] = {key: hosts for key, hosts in listing.items() if hosts}
        return TfConfigFix(json.dumps(spec), tuple(f"dropped the empty {key!r} list (TensorFlow >= 2.13 "
                                                   "rejects it)" for key in empty))
    distributed = ctx.num_nodes > 1 or any(role not in ("primary", "worker") for role in ctx.cluster)
    if ctx.platform == "none" or not distributed:
        return TfConfigFix()
    if ctx.trains and ctx.world_size != ctx.num_nodes:
        raise RuntimeEnvError(ctx.source or VARIABLE, f"{ctx.world_size} processes on {ctx.num_nodes} nodes: "
                              "TensorFlow's multi-worker strategies run one process per node, so no TF_CONFIG "
                              "is written; start one process per node")
    return TfConfigFix(json.dumps(ctx.tf_config()), (f"wrote one from {ctx.source or ctx.platform} (the "
                                                     "platform sets none)",))
