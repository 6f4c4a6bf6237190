"""The commands that run inside a training container: ``env`` and ``launch`` (SPEC §3, §5)."""

from __future__ import annotations

import sys
from typing import Optional

import click


@click.command()
def env() -> None:
    """Print this process's runtime context (inside a training container) as JSON.

    \b
    Examples:
      omnidist env
    """
    import json

    from omnidist import runtime

    click.echo(json.dumps(runtime.context().to_dict(), indent=2))


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--nproc-per-node", type=int, help="Processes on this node (default: the context's processes_per_node).")
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def launch(nproc_per_node: Optional[int], dry_run: bool, command: tuple[str, ...]) -> None:
    """Start this node's processes with torchrun, wired from the platform: omnidist launch -- train.py ARGS…

    Training nodes run `python -m torch.distributed.run --nnodes … --node_rank … --master_addr …
    --master_port … --nproc_per_node … COMMAND`; other roles, TensorFlow jobs, and processes the
    platform already launched (per process, mpirun, torchrun) run COMMAND directly,
    with TF_CONFIG made acceptable to TensorFlow. The command replaces this process (exec),
    so signals reach it unchanged.

    \b
    Examples:
      omnidist launch -- python train.py --epochs 10
      omnidist launch --nproc-per-node 4 --dry-run -- python -m trainer.task
    """
    import os
    import shlex

    from omnidist import runtime
    from omnidist.runtime.launch import plan_launch

    plan = plan_launch(runtime.context(), command, nproc_per_node)
    argv = list(plan.argv)
    for note in plan.notes:
        click.echo(f"omnidist launch: note: {note}", err=True)
    if dry_run:
        click.echo(" ".join(f"{k}={shlex.quote(v)}" for k, v in plan.env.items()) + " " * bool(plan.env)
                   + shlex.join(argv))
        return
    os.environ.update(plan.env)
    click.echo(f"omnidist launch: {shlex.join(argv)}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        click.echo(f"error: cannot run {argv[0]}: {exc}", err=True)
        sys.exit(127)
