"""``omnidist launch``: a node's processes through ``torch.distributed.run`` (torchrun).

torchrun does the process management (spawning, signals, restarts); omnidist only wires it
from the platform's variables. Standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Optional

from omnidist.runtime.context import RuntimeContext
from omnidist.runtime.errors import RuntimeEnvError


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


def launch_argv(ctx: RuntimeContext, command: Sequence[str], nproc_per_node: Optional[int] = None,
                environ: Optional[Mapping[str, str]] = None, python: Optional[str] = None) -> list[str]:
    """What ``omnidist launch -- CMD…`` executes on this replica.

    Training nodes (primary, workers) get torchrun; other roles (parameter servers,
    evaluators, reduction servers) do not join the training world, so they run ``command``
    directly (a ``.py`` script with this interpreter).

    Raises:
        RuntimeEnvError: already inside torchrun (launching again would nest worlds), or no
            command was given.
    """
    env = os.environ if environ is None else environ
    if not command:
        raise RuntimeEnvError("argv", "no command to launch; write `omnidist launch -- train.py …`")
    if "TORCHELASTIC_RUN_ID" in env:
        raise RuntimeEnvError("TORCHELASTIC_RUN_ID", "this process already runs under torchrun; run the "
                              "command directly instead of through `omnidist launch`")
    if nproc_per_node is not None and nproc_per_node < 1:
        raise RuntimeEnvError("--nproc-per-node", f"must be >= 1, got {nproc_per_node}")
    if ctx.trains:
        return torchrun_argv(ctx, command, nproc_per_node, python)
    if command[0] == "-m" or command[0].endswith(".py"):
        return [python or sys.executable, *command]
    return list(command)
