"""The commands that take a job to a backend and follow it: ``validate``, ``compile``,
``backends``, ``submit``, ``status``, ``logs``, ``cancel`` and ``run`` (SPEC §3)."""

from __future__ import annotations

import sys
from typing import Any, Optional

import click

from omnidist.cli import style
from omnidist.cli.common import (
    EMULATIONS,
    backend_option,
    job_argument,
    one_off,
    one_off_options,
    profile_option,
    shown,
    table,
    verbose_option,
    width,
)
from omnidist.errors import OmnidistError


@click.command()
@click.argument("job_file", type=click.Path(dir_okay=False))
@backend_option
@profile_option
def validate(job_file: str, backend: Optional[str], profile: Optional[str]) -> None:
    """Load JOB_FILE and check it against every installed backend (or only --backend).

    Settings come from --profile as compile takes them (e.g. SageMaker's role_arn): the profile's
    own backend gets all of them, the others what they understand.

    Exits 2 when the file itself is invalid or breaks a rule every backend shares; with
    --backend, exits with that backend's verdict (3 when it cannot express the job); when every
    backend rejects the job, exits with the first one's verdict. On a terminal, long reasons wrap
    to its width.

    \b
    Examples:
      omnidist validate job.yaml
      omnidist validate job.yaml --backend azure_ml   # exit code: that backend's verdict
      omnidist validate job.yaml -p aws -b sagemaker   # with the profile's settings
    """
    from omnidist import api, config
    from omnidist.backend import registry
    from omnidist.compiler import lowering

    job = api.load(job_file)
    if profile:  # an undefined profile is one error (exit 2), not a row per backend
        config.resolve(profile=profile)
    api.check_backend_blocks(job)
    lowering.check_portable_rules(job)  # a job no backend can run is invalid input, not a table row
    names = [backend] if backend else [n for n in registry.installed()]
    rows, worst = [], None
    for name in names:
        try:
            api.compile(job, backend=name, profile=profile)
            rows.append((name, "ok"))
        except OmnidistError as exc:
            rows.append((name, str(exc).replace("\n", "; ")))
            worst = worst or exc
        except Exception as exc:  # a broken plugin is that backend's verdict, not the whole table's
            rows.append((name, f"internal error in the backend: {type(exc).__name__}: {exc}"))
            worst = worst or OmnidistError(str(exc))
    click.echo(table(rows, ("backend", "result"), fit=width()))
    if worst is not None and (backend or all(result != "ok" for _, result in rows)):
        sys.exit(worst.exit_code)


@click.command("compile")
@job_argument
@backend_option
@profile_option
@click.option("-o", "--output", type=click.Choice(["json", "yaml"]), help="Output format (default: the backend's).")
@click.option("--notes/--no-notes", default=True, help="Print diagnostics on stderr.")
@verbose_option
@one_off_options
def compile_(job: tuple[str, ...], backend: Optional[str], profile: Optional[str], output: Optional[str],
             notes: bool, verbose: bool, **one_off_flags: Any) -> None:
    """Build the backend's native request for JOB_FILE (or a one-off job's); no network.

    Without --backend, the backend is the profile's, else local; a note on stderr says which and why.

    \b
    Examples:
      omnidist compile job.yaml --backend vertex > customjob.json
      omnidist compile job.yaml -b azure_ml -o json
      omnidist compile -b vertex --nodes 2 --accelerator A100:8 --image IMG -- python train.py
    """
    from omnidist import api, config
    from omnidist.model.features import NoteCode

    if backend is None and notes:
        target = config.resolve(profile=profile)
        choices = "|".join(BACKEND_NAMES())
        click.echo(f"{style.paint('note:', style.enabled(), dim=True)} backend {target.backend}: {target.reason} "
                   f"(--backend {choices} chooses)", err=True, color=style.enabled())
    compiled = api.compile(one_off(job, **one_off_flags), backend=backend, profile=profile)
    click.echo(compiled.render(output))
    if notes:
        for note in compiled.diagnostics:
            if verbose or note.code is not NoteCode.DETAIL:
                style.echo_note(note)


@click.command()
def backends() -> None:
    """List the installed backends, their versions and capabilities.

    \b
    Examples:
      omnidist backends
    """
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
    on = style.enabled(sys.stdout)
    click.echo(f"{style.state(status.state.value, on)}{shown(message)}", color=on)
    if status.trials:
        header, rows = notebook.trial_rows(status)
        click.echo(table(rows, header))
        best = notebook.best_line(status)
        click.echo(shown(best or f"best: none yet (no trial has reported {status.metric or 'the metric'})"))


@click.command()
@job_argument
@backend_option
@click.option("--profile", "-p", help="Profile, group, or profiles to try in turn (a,b,c): see docs/placement.md.")
@click.option("--max-queue", metavar="DURATION",
              help="With several profiles: move on when the job has not started after this long (30m, 2h).")
@click.option("--wait", is_flag=True, help="Follow state changes and logs until the job ends.")
@click.option("--poll", type=float, default=None,
              help="Seconds between status polls with --wait (default: the backend's).")
@one_off_options
def submit(job: tuple[str, ...], backend: Optional[str], profile: Optional[str], max_queue: Optional[str], wait: bool,
           poll: Optional[float], **one_off_flags: Any) -> None:
    """Create JOB_FILE's job (or a one-off job's) on the backend; prints the job id and console URL.

    With several profiles (--profile a,b,c or a group), tries them in turn: skips those that cannot
    express the job, moves on when a cloud refuses for quota or capacity, and prints each attempt.
    Every submit is recorded in the job ledger (omnidist jobs).

    \b
    Examples:
      omnidist submit job.yaml --profile gcp --wait
      omnidist submit job.yaml --backend azure_ml
      omnidist submit job.yaml --profile gcp,azure --max-queue 30m
      omnidist submit -p gcp --nodes 2 --accelerator A100:8 --image IMG -- python train.py
    """
    from omnidist.placement import failover

    handle = failover.submit(one_off(job, **one_off_flags), backend=backend, profile=profile, max_queue=max_queue)
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
    """Print a submitted job's state (a tuning job's trials too): by id, or by name (the job ledger
    knows its backend and profile).

    \b
    Examples:
      omnidist status projects/p/locations/us-central1/customJobs/123
      omnidist status cassava-resnet-3f9a1c2e --profile azure
    """
    from omnidist import api

    _print_status(api.attach(job_id, backend=backend, profile=profile).status())


@click.command()
@click.argument("job_id", metavar="ID_OR_NAME")
@backend_option
@profile_option
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the job ends.")
def logs(job_id: str, backend: Optional[str], profile: Optional[str], follow: bool) -> None:
    """Print a submitted job's logs: by id, or by name (the job ledger knows its backend and profile).

    \b
    Examples:
      omnidist logs cassava-resnet-3f9a1c2e --profile azure --follow
    """
    from omnidist import api

    for line in api.attach(job_id, backend=backend, profile=profile).logs(follow=follow):
        click.echo(line)


@click.command()
@click.argument("job_id", metavar="ID_OR_NAME")
@backend_option
@profile_option
def cancel(job_id: str, backend: Optional[str], profile: Optional[str]) -> None:
    """Cancel a submitted job, by id or by name (nothing happens if it already ended).

    \b
    Examples:
      omnidist cancel 1234567890 --profile gcp
    """
    from omnidist import api

    handle = api.attach(job_id, backend=backend, profile=profile)
    handle.cancel()
    click.echo(f"cancel requested for {handle.id}")


@click.command()
@job_argument
@click.option("--emulate", type=EMULATIONS,
              help="Platform environment to give the replicas (default: the local backend's setting, else the "
                   "profile's cloud, else the cloud of the job's backends block, else the first choice).")
@click.option("--cpu", is_flag=True,
              help="Run every replica on the CPU, even on a machine with GPUs (the local backend's cpu setting). "
                   "Without it, training replicas get a GPU per process, and share the GPUs round robin when they "
                   "outnumber them.")
@profile_option
@verbose_option
@one_off_options
def run(job: tuple[str, ...], emulate: Optional[str], cpu: bool, profile: Optional[str], verbose: bool,
        **one_off_flags: Any) -> None:
    """Run JOB_FILE (or a one-off job) on this machine: one process per replica, output prefixed
    [primary-0], [worker-0]…

    Exits with the first failing replica's exit code (130 after Ctrl-C).

    \b
    Examples:
      omnidist run job.yaml
      omnidist run job.yaml --emulate azure_ml
      omnidist run job.yaml --cpu                     # keep every replica off the GPUs
      omnidist run --nodes 2 -- python train.py
    """
    from omnidist import api

    given = {**({"emulate": emulate} if emulate else {}), **({"cpu": True} if cpu else {})}
    found, driver, settings = api.prepare(one_off(job, **one_off_flags), backend="local", profile=profile,
                                          settings=given or None)
    result = driver.run(found, settings, verbose=verbose, show=style.run_note(sys.stderr))
    sys.exit(result.exit_code)


def BACKEND_NAMES() -> list[str]:  # noqa: N802 - reads like the constant it stands for
    """The installed backends (read when needed)."""
    from omnidist.backend import registry

    return registry.installed()
