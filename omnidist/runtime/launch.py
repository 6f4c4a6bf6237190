"""``omnidist launch``: a node's processes through ``torch.distributed.run`` (torchrun).

torchrun does the process management (spawning, signals, restarts); omnidist only wires it
from the platform's variables. There is only ever one launcher: when the platform (a managed
PyTorch distribution with several processes per node, mpirun, or torchrun itself) already
started this process as one of many on its node, ``omnidist launch`` runs the command directly.
TensorFlow jobs also run directly, with a ``TF_CONFIG`` TensorFlow accepts. Standard library only.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Optional

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.view import RuntimeContext

NPROC_FLAG = "--nproc-per-node"
"""``omnidist launch``'s option for the processes of a node."""

PROGRAM_NAMES = frozenset({"omnidist"})
"""Names (or the last part of paths) of the program a launch command starts with."""


def is_launch_command(argv: Sequence[str]) -> bool:
    """True for ``omnidist launch …``, ``/path/to/omnidist launch …`` and ``python -m omnidist.cli launch …``."""
    argv = list(argv)
    if len(argv) >= 4 and argv[1] == "-m" and argv[2] in ("omnidist", "omnidist.cli"):
        argv = argv[2:]
    return len(argv) >= 2 and os.path.basename(argv[0]) in PROGRAM_NAMES | {"omnidist.cli"} and argv[1] == "launch"


def launch_options(argv: Sequence[str]) -> list[str]:
    """The options of a launch command: what comes between ``launch`` and ``--`` (or the command)."""
    start = list(argv).index("launch") + 1
    options = []
    for arg in argv[start:]:
        if arg == "--" or not arg.startswith("-"):
            break
        options.append(arg)
    return options


def with_nproc_per_node(argv: Sequence[str], nproc: int) -> tuple[str, ...]:
    """A launch command that starts ``nproc`` processes per node, unless it already says how many.

    Platforms that cannot carry ``processes_per_node`` (a request with no environment
    variables for the hint) get the count in the command instead.
    """
    options = launch_options(argv)
    if any(o == NPROC_FLAG or o.startswith(NPROC_FLAG + "=") for o in options):
        return tuple(argv)
    at = list(argv).index("launch") + 1
    return (*argv[:at], f"{NPROC_FLAG}={nproc}", *argv[at:])


def carry_processes_per_node(command: Sequence[str], processes: int) -> tuple[str, ...]:
    """``command`` for a platform that cannot carry the ``OMNIDIST_PROCESSES_PER_NODE`` hint.

    A launch command gets ``--nproc-per-node=N`` when ``N`` > 1 (and it names no count);
    anything else is returned unchanged. The compiler of a platform without environment
    variables and its local emulation both use this, so the cloud and the local run start the same processes.
    """
    if processes > 1 and is_launch_command(command):
        return with_nproc_per_node(command, processes)
    return tuple(command)


@dataclasses.dataclass(frozen=True)
class LaunchPlan:
    """What ``omnidist launch`` does on this replica.

    Attributes:
        argv: the command that replaces ``omnidist launch`` (exec).
        env: variables to set first (a ``TF_CONFIG`` TensorFlow accepts).
        notes: one line each on what was decided and why.
    """

    argv: tuple[str, ...]
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()


def torchrun_argv(ctx: RuntimeContext, command: Sequence[str], nproc_per_node: Optional[int] = None,
                  python: Optional[str] = None) -> list[str]:
    """The ``python -m torch.distributed.run …`` command line that starts this node's processes.

    Args:
        ctx: the node's context (``node_rank``, ``num_nodes``, master address and port).
        command: what each process runs, the way torchrun takes it: ``train.py --lr 1``,
            ``-m pkg.train``, or a program (``python train.py``, ``./run.sh``: anything not
            ``-m`` and not ending in ``.py``), which is passed with ``--no-python``.
        nproc_per_node: processes on this node (default: ``ctx.processes_per_node``).
        python: the interpreter that runs torchrun (default: this one).
    """
    nproc = nproc_per_node or ctx.processes_per_node
    argv = [
        python or sys.executable, "-m", "torch.distributed.run",
        f"--nnodes={ctx.num_nodes}",
        f"--node_rank={ctx.node_rank}",
        f"--master_addr={ctx.master_addr}",
        f"--master_port={ctx.master_port}",
        f"--nproc_per_node={nproc}",
    ]
    if command[0] != "-m" and not command[0].endswith(".py"):
        argv.append("--no-python")  # a program (python, a shell script…), not a script for torchrun's python
    return argv + list(command)


def direct_argv(command: Sequence[str], python: Optional[str] = None) -> list[str]:
    """``command`` run as it is: a ``.py`` script or ``-m module`` with this interpreter."""
    if command[0] == "-m" or command[0].endswith(".py"):
        return [python or sys.executable, *command]
    return list(command)


def launched_by(ctx: RuntimeContext, env: Mapping[str, str]) -> Optional[str]:
    """Which launcher already started this process as one of several on its node, if any.

    - torchrun: ``TORCHELASTIC_RUN_ID``;
    - mpirun (a platform's MPI distribution, Horovod): ``OMPI_COMM_WORLD_*``;
    - the platform itself, on a training node, as its module's ``launched_by`` hook says
      (:mod:`omnidist.runtime.platforms`): a PyTorch distribution with several
      processes per instance sets ``RANK``/``LOCAL_RANK`` per process, so a process
      with ``LOCAL_RANK`` > 0, a ``RANK`` other than its ``NODE_RANK``, or more processes
      (``WORLD_SIZE``) than nodes (the platform's node count or host list) is one of
      several. With one process per node (``WORLD_SIZE`` = nodes, ``LOCAL_RANK`` 0), the
      launcher starts the rest.

    Platforms that start the command once per node set no process-level variables.
    """
    from omnidist.runtime import platforms

    if "TORCHELASTIC_RUN_ID" in env:
        return "torchrun (TORCHELASTIC_RUN_ID is set)"
    if any(k.startswith("OMPI_COMM_WORLD_") for k in env):
        return "mpirun (OMPI_COMM_WORLD_* are set)"
    platform = platforms.named(ctx.platform)
    if not ctx.trains or not hasattr(platform, "launched_by"):
        return None
    return platform.launched_by(ctx, env)


def plan_launch(ctx: RuntimeContext, command: Sequence[str], nproc_per_node: Optional[int] = None,
                environ: Optional[Mapping[str, str]] = None, python: Optional[str] = None) -> LaunchPlan:
    """What ``omnidist launch -- CMD…`` does on this replica (pure).

    Training nodes (primary, workers) get torchrun, unless the platform already launched this
    process (:func:`launched_by`) or the job is a TensorFlow one (``OMNIDIST_FRAMEWORK``):
    then, like the other roles (parameter servers, evaluators, reduction servers), the command
    runs directly (a ``.py`` script with this interpreter). Where ``TF_CONFIG`` is set, or the
    job is a TensorFlow one, ``TF_CONFIG`` is fixed first (:mod:`omnidist.runtime.tf_setup`).

    Raises:
        RuntimeEnvError: no command, a process count below 1, or a malformed variable.
    """
    env = os.environ if environ is None else environ
    if not command:
        raise RuntimeEnvError("argv", "no command to launch; write `omnidist launch -- train.py …`")
    if nproc_per_node is not None and nproc_per_node < 1:
        raise RuntimeEnvError(NPROC_FLAG, f"must be >= 1, got {nproc_per_node}")
    updates: dict[str, str] = {}
    notes: list[str] = []
    tensorflow = ctx.framework == "tensorflow"
    if tensorflow or "TF_CONFIG" in env:
        from omnidist.runtime.tf_setup import tf_config_fix  # a launch reads it, a compile's argv helpers do not

        fix = tf_config_fix(ctx, env)
        if fix.value is not None:
            updates["TF_CONFIG"] = fix.value
            notes += [f"TF_CONFIG: {change}" for change in fix.changes]
    launcher = launched_by(ctx, env)
    if launcher and ctx.trains:
        ignored = f"; --nproc-per-node {nproc_per_node} is ignored" if nproc_per_node else ""
        notes.append(f"{launcher} already started this node's processes: running the command directly, "
                     f"not a second launcher{ignored}")
        return LaunchPlan(tuple(direct_argv(command, python)), updates, tuple(notes))
    if tensorflow and ctx.trains:
        notes.append("a TensorFlow job: one process per node runs the command directly (tf.distribute "
                     "uses the node's GPUs itself)")
        return LaunchPlan(tuple(direct_argv(command, python)), updates, tuple(notes))
    if ctx.trains:
        return LaunchPlan(tuple(torchrun_argv(ctx, command, nproc_per_node, python)), updates, tuple(notes))
    return LaunchPlan(tuple(direct_argv(command, python)), updates, tuple(notes))


def launch_argv(ctx: RuntimeContext, command: Sequence[str], nproc_per_node: Optional[int] = None,
                environ: Optional[Mapping[str, str]] = None, python: Optional[str] = None) -> list[str]:
    """The command ``omnidist launch -- CMD…`` executes on this replica (:func:`plan_launch`'s argv)."""
    return list(plan_launch(ctx, command, nproc_per_node, environ, python).argv)
