"""Platform detection: the environment of a training process -> :class:`RuntimeContext`.

Standard library only. This module is the generic driver: each platform's own variables —
its tables, how to recognise it and how to read it — live in its module under
:mod:`omnidist.runtime.platforms` (or in a plugin's, named by an ``omnidist.platforms`` entry
point), which this module asks in their detection order (each module's ``ORDER``); the first
platform present wins. The order of the built-in ones, with the modules' orders:

1. **The clouds' training services** (orders 10 to 30, a module each) — each recognised by what
   only it sets: a ``CLUSTER_SPEC`` whose ``cluster`` names its pools by position or by task
   type, a variable prefix of its own (less any variable its SDK also sets outside a job), a
   resource configuration file; then read through the variables of the job's distribution
   (``TF_CONFIG``, mpirun's ``OMPI_COMM_WORLD_*``, torch's ``MASTER_ADDR``…). Each module's
   docstring says what it reads; :func:`omnidist.runtime.platforms.modules` lists them in this
   order.
2. **Kubernetes** (``kubernetes``, 35) — a pod (``KUBERNETES_SERVICE_HOST``) with a training
   operator's variables (``PET_NNODES``, ``TF_CONFIG``, or torch's without torchrun's).
3. **A TPU slice's hosts** (``tpu``, 38) — ``TPU_WORKER_ID`` and ``TPU_WORKER_HOSTNAMES``, as
   a managed Kubernetes TPU webhook, LeaderWorkerSet and KubeRay set them (worker id 0 is the primary; id i is
   worker i-1 with node rank i; one process per host).
4. **A bare TF_CONFIG** (``tf_config``, 40) — with ``master`` or
   ``environment: cloud`` a managed platform's, otherwise written by hand or a local launcher (platform
   ``local``). Without a ``chief``/``master``, ``worker`` 0 is the primary.
5. **An MPI launcher** (``mpi``, 45) — ``OMPI_COMM_WORLD_*`` or ``PMI_RANK``/``PMI_SIZE`` (node
   rank = rank // local size; an MPI operator's ranks).
6. **torchrun** (``torchrun``, 50) — ``TORCHELASTIC_RUN_ID`` (node rank ``GROUP_RANK``,
   ``LOCAL_WORLD_SIZE``).
7. **none** (``none``, last) — a single process.

Then, whatever the source, these refine the result:

- ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` (set by torchrun and so by
  ``omnidist launch``, or by a platform per process) make ``rank``/``world_size``/
  ``local_rank``/``processes_per_node`` process-level; without them they are node-level.
- The ``OMNIDIST_*`` hints compilers add (:mod:`omnidist.runtime.hints`):
  ``OMNIDIST_POOL2_ROLE`` names what the third positional pool (or ``ps``) holds;
  ``OMNIDIST_ROLE`` must agree with the platform, except that it settles a parameter
  server / reduction server ambiguity; ``OMNIDIST_PROCESSES_PER_NODE`` gives
  ``processes_per_node`` before any launcher ran; ``OMNIDIST_JOB_NAME`` and
  ``OMNIDIST_FRAMEWORK`` fill ``job_name`` and ``framework``.

A variable that is present but malformed raises :class:`RuntimeEnvError` naming it (the
readers the platform modules share are in :mod:`omnidist.runtime.parsing`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import Any, Optional

from omnidist.runtime import hints, platforms
from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import AMBIGUOUS_POOL_ROLES, Env, integer
from omnidist.runtime.trials import trial_id
from omnidist.runtime.view import ROLES, RuntimeContext

# --- the job's data (SPEC §7) -------------------------------------------------------------------

def _with_data(ctx: RuntimeContext, env: Env, argv: Sequence[str]) -> RuntimeContext:
    """``inputs``, ``outputs`` and ``model_dir`` from the hints and each platform's own sources.

    ``inputs``: the detected platform's own (its module's ``inputs(env)``, such as
    per-channel variables), under the ``OMNIDIST_INPUT_*`` hints.

    ``model_dir``: the first folder a platform's own variable or argument names (its module's
    ``model_dir(env, argv)``, in detection order: a platform sets it only on its own machines),
    else ``OMNIDIST_MODEL_DIR``, else the output named ``model``, else the detected platform's
    ``default_model_dir()``.
    """
    detected = platforms.named(ctx.platform)
    own_inputs = detected.inputs(env) if hasattr(detected, "inputs") else {}
    inputs = {**own_inputs, **{k[len(hints.INPUT_PREFIX):]: v for k, v in env.items()
                               if k.startswith(hints.INPUT_PREFIX)}}
    outputs = {k[len(hints.OUTPUT_PREFIX):]: v for k, v in env.items() if k.startswith(hints.OUTPUT_PREFIX)}
    own = (m.model_dir(env, argv) for m in platforms.modules() if hasattr(m, "model_dir"))
    model_dir = next((d for d in own if d), None) or env.get(hints.MODEL_DIR) or outputs.get("model")
    if model_dir is None and hasattr(detected, "default_model_dir"):
        model_dir = detected.default_model_dir()
    return dataclasses.replace(ctx, inputs=dict(sorted(inputs.items())), outputs=dict(sorted(outputs.items())),
                               model_dir=model_dir)


# --- refinement ------------------------------------------------------------------------------

def _refine(ctx: RuntimeContext, env: Env) -> RuntimeContext:
    """Apply process-level launcher variables and the OMNIDIST_* hints (see the module doc)."""
    changes: dict[str, Any] = {
        "job_name": env.get(hints.JOB_NAME) or None,
        "framework": env.get(hints.FRAMEWORK) or None,
    }
    role = env.get(hints.ROLE)
    if role and ctx.platform != "none":
        if role not in ROLES:
            raise RuntimeEnvError(hints.ROLE, f"expected one of {', '.join(ROLES)}, got {role!r}")
        ambiguous = set(AMBIGUOUS_POOL_ROLES)
        if role != ctx.role and not (role in ambiguous and ctx.role in ambiguous):
            raise RuntimeEnvError(hints.ROLE, f"says {role}, but {ctx.source} says this replica is a {ctx.role}")
        changes["role"] = role
    hinted_ppn = integer(env, hints.PROCESSES_PER_NODE, minimum=1)
    launched_ppn = integer(env, "LOCAL_WORLD_SIZE", minimum=1)
    if launched_ppn:  # a launcher is running: what it started is the truth
        changes["processes_per_node"] = launched_ppn
    elif hinted_ppn and ctx.processes_per_node == 1:  # before launch: what the job asked for
        changes["processes_per_node"] = hinted_ppn
    if ctx.trains:
        for field, name in (("rank", "RANK"), ("world_size", "WORLD_SIZE"), ("local_rank", "LOCAL_RANK")):
            value = integer(env, name, minimum=1 if name == "WORLD_SIZE" else 0)
            if value is not None:
                changes[field] = value
    # Tuning: the trial id from wherever this platform puts it (see omnidist.runtime.reporting).
    changes["trial"] = trial_id(env, ctx.platform, ctx.trial)
    return dataclasses.replace(ctx, **changes)


def parse(env: Env) -> RuntimeContext:
    """The node-level context of the first platform present (no refinement, no data)."""
    for module in platforms.modules():
        if module.detect(env):
            return module.parse(env)
    raise AssertionError("unreachable: the last platform (none) is always present")  # pragma: no cover


def context(environ: Optional[Env] = None, argv: Optional[Sequence[str]] = None) -> RuntimeContext:
    """The normalized runtime context of this process (SPEC §5, with §7's data).

    Args:
        environ: the variables to read (default: ``os.environ``).
        argv: the command line, for a ``--job-dir`` argument (default: ``sys.argv``).

    Raises:
        RuntimeEnvError: a platform variable is present but malformed; it is named.
    """
    env = os.environ if environ is None else environ
    return _with_data(_refine(parse(env), env), env, sys.argv if argv is None else argv)
