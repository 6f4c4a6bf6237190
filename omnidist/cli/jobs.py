"""The commands that take a job to a backend and follow it: ``validate``, ``compile``,
``backends``, ``submit``, ``status``, ``logs``, ``cancel`` and ``run`` (SPEC §3)."""

from __future__ import annotations

import sys
from typing import Any, Optional

import click

from omnidist.cli.common import EMULATIONS, backend_option, profile_option, shown, table
from omnidist.errors import OmnidistError


@click.command()
@click.argument("job_file", type=click.Path(dir_okay=False))
@backend_option
def validate(job_file: str, backend: Optional[str]) -> None:
    """Load JOB_FILE and check it against every installed backend (or only --backend).

    Exits 2 when the file itself is invalid or breaks a rule every backend shares; with
    --backend, exits with that backend's verdict (3 when it cannot express the job); when every
    backend rejects the job, exits with the first one's verdict.
    """
    from omnidist import api
    from omnidist.backend import registry
    from omnidist.compiler import lowering

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
    click.echo(table(rows, ("backend", "result")))
    if worst is not None and (backend or all(result != "ok" for _, result in rows)):
        sys.exit(worst.exit_code)


@click.command("compile")
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
            click.echo(f"note: {shown(str(note))}", err=True)


@click.command()
def backends() -> None:
    """List the installed backends, their versions and capabilities."""
    from omnidist.backend import registry

    rows = []
    for name in registry.installed():
        try:
            driver = registry.get(name)
        except OmnidistError as exc:
            rows.append((name, registry.distribution_version(name), f"broken: {exc}"))
            continue
        rows.append((name, registry.distribution_version(name), driver.capabilities.summary()))
    missing = registry.missing()
    click.echo(table(rows, ("backend", "version", "capabilities")))
    for name in missing:
        click.echo(f"(not installed: {name} — pip install {registry.distribution(name)})")


def _print_status(status: Any) -> None:
    """The state line; for a tuning job, its trials table and the best trial so far."""
    from omnidist import notebook

    message = f" — {status.message}" if status.message else ""
    click.echo(shown(f"{status.state.value}{message}"))
    if status.trials:
        header, rows = notebook.trial_rows(status)
        click.echo(table(rows, header))
        best = notebook.best_line(status)
        click.echo(shown(best or f"best: none yet (no trial has reported {status.metric or 'the metric'})"))


@click.command()
@click.argument("job_file", type=click.Path(dir_okay=False))
@backend_option
@click.option("--profile", "-p", help="Profile, group, or profiles to try in turn (a,b,c): see docs/placement.md.")
@click.option("--max-queue", metavar="DURATION",
              help="With several profiles: move on when the job has not started after this long (30m, 2h).")
@click.option("--wait", is_flag=True, help="Follow state changes and logs until the job ends.")
@click.option("--poll", type=float, default=None,
              help="Seconds between status polls with --wait (default: the backend's).")
def submit(job_file: str, backend: Optional[str], profile: Optional[str], max_queue: Optional[str], wait: bool,
           poll: Optional[float]) -> None:
    """Create JOB_FILE's job on the backend; prints the job id and console URL.

    With several profiles (--profile a,b,c or a group), tries them in turn: skips those that cannot
    express the job, moves on when a cloud refuses for quota or capacity, and prints each attempt.
    Every submit is recorded in the job ledger (omnidist jobs).
    """
    from omnidist.placement import failover

    handle = failover.submit(job_file, backend=backend, profile=profile, max_queue=max_queue)
    click.echo(handle.id)
    if handle.url:
        click.echo(handle.url)
    if wait:
        _follow(handle, poll)


def _follow(handle: Any, poll: Optional[float]) -> None:
    """Show state changes (and logs) until the job ends; exit 1 unless it succeeded."""
    from omnidist.backend.values import JobState

    # stream_logs prints each state change once among the log lines (some backends' logs
    # report state changes too; they are not repeated).
    final = handle.wait(poll_interval=poll, progress=sys.stderr.isatty(), stream_logs=True)
    _print_status(final)
    if not final.state.terminal:  # Ctrl-C: wait() already said how to cancel
        sys.exit(130)
    if final.state is not JobState.SUCCEEDED:
        sys.exit(1)


@click.command()
@click.argument("job_id", metavar="ID_OR_NAME")
@backend_option
@profile_option
def status(job_id: str, backend: Optional[str], profile: Optional[str]) -> None:
    """Print a submitted job's state: by id, or by name (the job ledger knows its backend and profile)."""
    from omnidist import api

    _print_status(api.attach(job_id, backend=backend, profile=profile).status())


@click.command()
@click.argument("job_id", metavar="ID_OR_NAME")
@backend_option
@profile_option
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the job ends.")
def logs(job_id: str, backend: Optional[str], profile: Optional[str], follow: bool) -> None:
    """Print a submitted job's logs: by id, or by name (the job ledger knows its backend and profile)."""
    from omnidist import api

    for line in api.attach(job_id, backend=backend, profile=profile).logs(follow=follow):
        click.echo(line)


@click.command()
@click.argument("job_id", metavar="ID_OR_NAME")
@backend_option
@profile_option
def cancel(job_id: str, backend: Optional[str], profile: Optional[str]) -> None:
    """Cancel a submitted job, by id or by name (nothing happens if it already ended)."""
    from omnidist import api

    handle = api.attach(job_id, backend=backend, profile=profile)
    handle.cancel()
    click.echo(f"cancel requested for {handle.id}")


@click.command()
@click.argument("job_file", type=click.Path(dir_okay=False))
@click.option("--emulate", type=EMULATIONS,
              help="Platform environment to give the replicas (default: the local backend's setting; the first "
                   "of the choices listed).")
@click.option("--cpu", is_flag=True,
              help="Run every replica on the CPU, even on a machine with GPUs (the local backend's cpu setting). "
                   "Without it, training replicas get a GPU per process, and share the GPUs round robin when they "
                   "outnumber them.")
@profile_option
def run(job_file: str, emulate: Optional[str], cpu: bool, profile: Optional[str]) -> None:
    """Run JOB_FILE on this machine: one process per replica, output prefixed [primary-0], [worker-0]…

    Exits with the first failing replica's exit code (130 after Ctrl-C).
    """
    from omnidist import api

    given = {**({"emulate": emulate} if emulate else {}), **({"cpu": True} if cpu else {})}
    job, driver, settings = api.prepare(job_file, backend="local", profile=profile, settings=given or None)
    result = driver.run(job, settings)
    sys.exit(result.exit_code)
