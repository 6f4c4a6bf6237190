"""The commands that take a job to a backend and follow it: ``backends``, ``submit``, ``status``,
``logs``, ``cancel``, ``run`` and ``watch`` (SPEC §3); ``validate`` and ``compile`` are in
:mod:`omnidist.cli.compiling`."""

from __future__ import annotations

import sys
from collections.abc import Callable
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
)
from omnidist.errors import OmnidistError


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
              help="Seconds between status polls with --wait or --recover (default: the backend's; 30 s recovering).")
@click.option("--recover", is_flag=True,
              help="Follow the job and restart (or move) it as its recovery block says, until it ends for good "
                   "(omnidist watch NAME picks up from the ledger if this stops).")
@one_off_options
def submit(job: tuple[str, ...], backend: Optional[str], profile: Optional[str], max_queue: Optional[str], wait: bool,
           poll: Optional[float], recover: bool, **one_off_flags: Any) -> None:
    """Create JOB_FILE's job (or a one-off job's) on the backend; prints the job id and console URL.

    With several profiles (--profile a,b,c or a group), tries them in turn: skips those that cannot
    express the job, moves on when a cloud refuses for quota or capacity, and prints each attempt.
    Every submit is recorded in the job ledger (omnidist jobs).

    \b
    Examples:
      omnidist submit job.yaml --profile prod --wait
      omnidist submit job.yaml --backend BACKEND
      omnidist submit job.yaml --profile cloud-a,cloud-b --max-queue 30m
      omnidist submit -p prod --nodes 2 --accelerator A100:8 --image IMG -- python train.py
      omnidist submit spot.yaml --profile spot-a,spot-b --recover
    """
    from omnidist import api
    from omnidist.placement import failover

    found = api.as_job(one_off(job, **one_off_flags))
    if recover and found.recovery is None:
        raise click.UsageError("--recover needs the job's recovery block (recovery: {max_restarts: 3})")
    handle = failover.submit(found, backend=backend, profile=profile, max_queue=max_queue)
    click.echo(handle.id)
    if handle.url:
        click.echo(handle.url)
    if recover:
        from omnidist.recovery import watcher
        from omnidist.submission import ledger

        watcher.remember(ledger.Ledger.default(), handle.id, found, _profiles(profile))
        _watch_one(handle.id, poll)
    elif wait:
        _follow(handle, poll)


def _profiles(profile: Optional[str]) -> list[str]:
    """The profiles a job may move between, in order (a group's, or those listed)."""
    if not profile:
        return []
    from omnidist.placement import plan as planning

    return list(planning.profile_names([profile])[0])


def _watch_one(key: str, poll: Optional[float]) -> str:
    """Watch job ``key`` until it ends for good; print each step and the outcome; the last ending."""
    from omnidist.recovery import watcher

    waits = watcher.Waits() if poll is None else watcher.Waits(poll_s=poll)
    outcome = watcher.watch(key, waits=waits, say=lambda line: click.echo(f"omnidist: {line}", err=True))
    click.echo(f"omnidist: {outcome.name}: {outcome.attempts} attempt(s), the last ended by "
               f"{outcome.ended or 'nothing yet'}; stopped watching: {outcome.why}", err=True)
    return outcome.ended or ""


@click.command()
@click.argument("key", metavar="NAME_OR_ID", required=False)
@click.option("--all", "every", is_flag=True, help="Every job submitted with --recover that has not ended for good.")
@click.option("--poll", type=float, default=None, help="Seconds between status polls (default 30).")
def watch(key: Optional[str], every: bool, poll: Optional[float]) -> None:
    """Follow a job submitted with --recover and restart (or move) it as its recovery block says.

    Works from the job ledger, so it runs anywhere the credentials are and picks up where a
    stopped watcher left off; two watchers of one job never both restart it. Exits 0 when every
    job watched succeeded, 1 otherwise.

    \b
    Examples:
      omnidist watch cassava
      omnidist watch --all --poll 60
    """
    from concurrent.futures import ThreadPoolExecutor

    from omnidist.recovery import watcher

    if bool(key) == every:
        raise click.UsageError("name one job, or --all")
    keys = watcher.live_keys() if every else [key]
    if not keys:
        click.echo("omnidist: no job to watch (omnidist submit --recover records them)", err=True)
        return
    with ThreadPoolExecutor(max_workers=min(16, len(keys))) as pool:
        endings = list(pool.map(lambda k: _watch_one(k, poll), keys))
    sys.exit(0 if all(e == "succeeded" for e in endings) else 1)


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


def _known(job_id: str, act: Callable[[Any], Any], backend: Optional[str], profile: Optional[str]) -> Any:
    """``act(handle)`` for the job ``job_id`` names. A job neither the ledger nor the cloud knows
    is the user's input, not the cloud's failure: exit 2, saying where it was looked for.

    Raises:
        ValidationError: no job has that id or name.
    """
    from omnidist import api
    from omnidist.errors import NotFoundError, ValidationError

    handle = api.attach(job_id, backend=backend, profile=profile)
    try:
        return act(handle)
    except NotFoundError as exc:
        if api.recorded(job_id) is not None:  # the ledger has it: the cloud no longer does (exit 1)
            raise
        raise ValidationError(f"no job {job_id!r}: the job ledger has none of that id or name, and {handle.backend} "
                              f"knows none ({exc.detail}); omnidist jobs lists the jobs submitted",
                              path="ID_OR_NAME") from None


@click.command()
@click.argument("job_id", metavar="ID_OR_NAME")
@backend_option
@profile_option
def status(job_id: str, backend: Optional[str], profile: Optional[str]) -> None:
    """Print a submitted job's state (a tuning job's trials too): by id, or by name (the job ledger
    knows its backend and profile).

    \b
    Examples:
      omnidist status JOB_ID --profile prod        # the id the backend gave it
      omnidist status cassava-resnet-3f9a1c2e      # by name: the ledger knows where it runs
    """
    _print_status(_known(job_id, lambda handle: handle.status(), backend, profile))


@click.command()
@click.argument("job_id", metavar="ID_OR_NAME")
@backend_option
@profile_option
@click.option("--follow", "-f", is_flag=True, help="Keep streaming until the job ends.")
def logs(job_id: str, backend: Optional[str], profile: Optional[str], follow: bool) -> None:
    """Print a submitted job's logs: by id, or by name (the job ledger knows its backend and profile).

    \b
    Examples:
      omnidist logs cassava-resnet-3f9a1c2e --follow
      omnidist logs JOB_ID --profile prod
    """
    for line in _known(job_id, lambda handle: handle.logs(follow=follow), backend, profile):
        click.echo(line)


@click.command()
@click.argument("job_id", metavar="ID_OR_NAME")
@backend_option
@profile_option
def cancel(job_id: str, backend: Optional[str], profile: Optional[str]) -> None:
    """Cancel a submitted job, by id or by name (nothing happens if it already ended).

    \b
    Examples:
      omnidist cancel JOB_ID --profile prod
      omnidist cancel cassava-resnet-3f9a1c2e
    """
    handle = _known(job_id, lambda handle: handle.cancel() or handle, backend, profile)
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
@click.option("--preempt", metavar="REPLICA@DURATION",
              help="Preempt a replica (primary-0, worker-1) after DURATION (30s, 2m) the way the emulated platform "
                   "does: SIGTERM, then SIGKILL after its grace period; the run ends by preemption, and restarts "
                   "from its checkpoints when the job's recovery lists preemption.")
@profile_option
@verbose_option
@one_off_options
def run(job: tuple[str, ...], emulate: Optional[str], cpu: bool, preempt: Optional[str], profile: Optional[str],
        verbose: bool, **one_off_flags: Any) -> None:
    """Run JOB_FILE (or a one-off job) on this machine: one process per replica, output prefixed
    [primary-0], [worker-0]…

    Exits with the first failing replica's exit code (130 after Ctrl-C).

    \b
    Examples:
      omnidist run job.yaml
      omnidist run job.yaml --emulate PLATFORM        # one of --emulate's choices
      omnidist run job.yaml --cpu                     # keep every replica off the GPUs
      omnidist run --nodes 2 -- python train.py
      omnidist run job.yaml --preempt worker-0@30s    # see the resume logic work before paying for spot
    """
    from omnidist import api

    given = {**({"emulate": emulate} if emulate else {}), **({"cpu": True} if cpu else {})}
    found, driver, settings = api.prepare(one_off(job, **one_off_flags), backend="local", profile=profile,
                                          settings=given or None)
    result = driver.run(found, settings, verbose=verbose, show=style.run_note(sys.stderr), preempt=preempt)
    sys.exit(result.exit_code)
