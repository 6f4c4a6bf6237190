"""The ``omnidist`` command (SPEC §3).

Every command runs inside :func:`main`, whose group (:class:`~omnidist.cli.common.Group`) turns
omnidist's errors into a one-line message on stderr and the SPEC's exit code (2 invalid input, 3
cannot express, 1 failed); ``--debug`` shows the traceback instead. The commands live by what
they are for: :mod:`~omnidist.cli.compiling` (a job file to a request), :mod:`~omnidist.cli.jobs` (a job to a
backend and back), :mod:`~omnidist.cli.migrate`
(native files), :mod:`~omnidist.cli.container` (inside a training container),
:mod:`~omnidist.cli.placement` (where to run: ``plan``, ``catalog``, ``jobs``). Each imports what
it needs when it runs, and the group imports a command's module only when that command runs (or
``--help`` lists them all), so ``omnidist compile`` loads no client, migration, placement or
runtime code.
"""

from __future__ import annotations

import click

from omnidist.cli.common import Group, setup_logging

#: Every command, by name: the module (under ``omnidist.cli``) and the function that defines it.
COMMANDS = {
    "validate": "compiling:validate", "compile": "compiling:compile_", "backends": "jobs:backends",
    "submit": "jobs:submit", "status": "jobs:status", "logs": "jobs:logs", "cancel": "jobs:cancel", "run": "jobs:run",
    "watch": "jobs:watch",
    "import": "migrate:import_command", "migrate": "migrate:migrate_command", "explain": "explain:explain",
    "env": "container:env", "launch": "container:launch", "plan": "placement:plan", "catalog": "placement:catalog",
    "gpus": "placement:gpus", "check": "placement:check", "jobs": "placement:jobs_command",
}


@click.group(cls=Group, lazy_commands=COMMANDS, lists_backends=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@click.version_option(package_name="omnidist", prog_name="omnidist")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """omnidist: one distributed training job for the clouds' training services, Kubernetes and
    your laptop, through the installed backends (listed below).

    \b
    Examples:
      omnidist validate job.yaml
      omnidist compile job.yaml --backend BACKEND
      omnidist run job.yaml
      omnidist submit job.yaml --profile prod --wait

    `omnidist COMMAND --help` shows a command's options and examples. Tab completion: add
    `eval "$(_OMNIDIST_COMPLETE=bash_source omnidist)"` to ~/.bashrc (zsh_source, fish_source
    for zsh and fish).
    """
    ctx.meta["omnidist.debug"] = debug
    setup_logging(debug)


if __name__ == "__main__":  # pragma: no cover - `python -m omnidist.cli`, tested in a subprocess
    main()
