"""The ``omnidist`` command (SPEC §3).

Every command runs inside :func:`main`, which turns omnidist's errors into a one-line
message on stderr and the SPEC's exit code (2 invalid input, 3 cannot express, 1 failed);
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import click

from omnidist.cli_migrate import import_command, migrate_command
from omnidist.errors import OmnidistError
from omnidist.runtime import platforms


class _Group(click.Group):
    """A command group that turns omnidist errors into messages and exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OmnidistError as exc:
            if ctx.meta.get("omnidist.debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:  # a bug in omnidist or a plugin: say so briefly, never a traceback
            if ctx.meta.get("omnidist.debug"):
                raise
            click.echo(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback "
                       "and report it)", err=True)
            ctx.exit(1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@click.version_option(package_name="omnidist", prog_name="omnidist")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """omnidist: one distributed training job for Vertex AI, AI Platform, Azure ML and your laptop."""
    ctx.meta["omnidist.debug"] = debug


backend_option = click.option("--backend", "-b", help="Target backend (overrides the profile's).")
profile_option = click.option("--profile", "-p", help="Profile from omnidist.toml / config.toml.")


def _table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False))
@backend_option
def validate(job_file: str, backend: Optional[str]) -> None:
    """Load JOB_FILE and check it against every installed backend (or only --backend).

    Exits 2 when the file itself is invalid or breaks a rule every backend shares; with
    --backend, exits with that backend's verdict (3 when it cannot express the job).
    """
    from omnidist import api, lowering, registry

    job = api.load(job_file)
    api.check_backend_blocks(job)
    lowering.check_portable_rules(job)  # a job no backend can run is invalid input, not a table row
    names = [backend] if backend else [n for n in registry.installed()]
    rows, worst = [], None
    for name in names:
        try:
            api.compile(job, backend=name, profile=None)
            rows.append((name, "ok"))
        except OmnidistError as exc:
            rows.append((name, str(exc).replace("\n", "; ")))
            worst = worst or exc
        except Exception as exc:  # a broken plugin is that backend's verdict, not the whole table's
            rows.append((name, f"internal error in the backend: {type(exc).__name__}: {exc}"))
            worst = worst or OmnidistError(str(exc))
    click.echo(_table(rows, ("backend", "result")))
    if backend and worst is not None:
        sys.exit(worst.exit_code)


@main.command("compile")
@click.argument("job_file", type=click.Path(dir_okay=False))
@backend_option
@profile_option
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), help="Output format (default: the backend's).")
@click.option("--notes/--no-notes", default=True, help="Print diagnostics on stderr.")
def compile_(job_file: str, backend: Optional[str], profile: Optional[str], output: Optional[str], notes: bool) -> None:
    """Build the backend's native request for JOB_FILE; no network."""
    from omnidist import api

    compiled = api.compile(job_file, backend=backend, profile=profile)
    click.echo(compiled.render(output))
    if notes:
        for note in compiled.diagnostics:
            click.echo(f"note: {note}", err=True)


@main.command()
def backends() -> None:
    """List the installed backends, their versions and capabilities."""
    from omnidist import registry

    rows = []
    for name in registry.installed():
        try:
            driver = registry.get(name)
        except OmnidistError as exc:
            rows.append((name, registry.distribution_version(name), f"broken: {exc}"))
            continue
        rows.append((name, registry.distribution_version(name), driver.capabilities.summary()))
    missing = registry.missing()
    click.echo(_table(rows, ("backend", "version", "capabilities")))
    for name in missing:
        click.echo(f"(not installed: {name} — pip install {registry.distribution(name)})")


def _print_status(status: Any) -> None:
    """The state line; for a tuning job, its trials table and the best trial so far."""
    from omnidist import display

    message = f" — {status.message}" if status.message else ""
    click.echo(f"{status.state.value}{message}")
    if status.trials:
        header, rows = display.trial_rows(status)
        click.echo(_table(rows, header))
        best = display.best_line(status)
        click.echo(best or f"best: none yet (no trial has reported {status.metric or 'the metric'})")


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False))
@backend_option
@profile_option
@click.option("--wait", is_flag=True, help="Follow state changes and logs until the job ends.")
@click.option("--poll", type=float, default=None, help="Seconds between status polls with --wait (default: the backend's).")
def submit(job_file: str, backend: Optional[str], profile: Optional[str], wait: bool, poll: Optional[float]) -> None:
    """Create JOB_FILE's job on the backend; prints the job id and console URL."""
    from omnidist import api

    handle = api.submit(job_file, backend=backend, profile=profile)
    click.echo(handle.id)
    if handle.url:
        click.echo(handle.url)
    if wait:
        _follow(handle, poll)


def _follow(handle: Any, poll: Optional[float]) -> None:
    """Show state changes (and logs) until the job ends; exit 1 unless it succeeded."""
    from omnidist.backend import JobState

    # stream_logs prints each state change once among the log lines (some backends' logs
    # report state changes too; they are not repeated).
    final = handle.wait(poll_interval=poll, progress=sys.stderr.isatty(), stream_logs=True)
    _print_status(final)
    if not final.state.terminal:  # Ctrl-C: wait() already said how to cancel
        sys.exit(130)
    if final.state is not JobState.SUCCEEDED:
        sys.exit(1)


@main.command()
@click.argument("job_id")
@backend_option
@profile_option
def status(job_id: str, backend: Optional[str], profile: Optional[str]) -> None:
    """Print a submitted job's state."""
    from omnidist import api

    _print_status(api.attach(job_id, backend=backend, profile=profile).status())


@main.command()
@click.argument("job_id")
@backend_option
@profile_option
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the job ends.")
def logs(job_id: str, backend: Optional[str], profile: Optional[str], follow: bool) -> None:
    """Print a submitted job's logs."""
    from omnidist import api

    for line in api.attach(job_id, backend=backend, profile=profile).logs(follow=follow):
        click.echo(line)


@main.command()
@click.argument("job_id")
@backend_option
@profile_option
def cancel(job_id: str, backend: Optional[str], profile: Optional[str]) -> None:
    """Cancel a submitted job (nothing happens if it already ended)."""
    from omnidist import api

    api.attach(job_id, backend=backend, profile=profile).cancel()
    click.echo(f"cancel requested for {job_id}")


@main.command()
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option("--emulate", type=click.Choice(sorted(platforms.emulations(),
                                                   key=lambda name: name != platforms.DEFAULT_EMULATION)),
              help="Platform environment to give the replicas (default: the local backend's setting, "
                   f"{platforms.DEFAULT_EMULATION}).")
@profile_option
def run(job_file: str, emulate: Optional[str], profile: Optional[str]) -> None:
    """Run JOB_FILE on this machine: one process per replica, output prefixed [primary-0], [worker-0]…

    Exits with the first failing replica's exit code (130 after Ctrl-C).
    """
    from omnidist import api

    job, driver, settings = api.prepare(job_file, backend="local", profile=profile,
                                        settings={"emulate": emulate} if emulate else None)
    result = driver.run(job, settings)
    sys.exit(result.exit_code)


@main.command()
def env() -> None:
    """Print this process's runtime context (inside a training container) as JSON."""
    import json

    from omnidist import runtime

    click.echo(json.dumps(runtime.context().to_dict(), indent=2))


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--nproc-per-node", type=int, help="Processes on this node (default: the context's processes_per_node).")
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def launch(nproc_per_node: Optional[int], dry_run: bool, command: tuple[str, ...]) -> None:
    """Start this node's processes with torchrun, wired from the platform: omnidist launch -- train.py ARGS…

    Training nodes run `python -m torch.distributed.run --nnodes … --node_rank … --master_addr …
    --master_port … --nproc_per_node … COMMAND`; other roles, TensorFlow jobs, and processes the
    platform already launched (Azure ML per-process, mpirun, torchrun) run COMMAND directly,
    with TF_CONFIG made acceptable to TensorFlow. The command replaces this process (exec),
    so signals reach it unchanged.
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


main.add_command(import_command)
main.add_command(migrate_command)


if __name__ == "__main__":  # pragma: no cover - `python -m omnidist.cli`, tested in a subprocess
    main()
