"""The commands that turn a job file into a backend's request without the network: ``validate`` and
``compile`` (SPEC §3). Apart from the commands that follow jobs (:mod:`omnidist.cli.jobs`), so the
commands a user runs most often, and scripts run in loops, build only their own options."""

from __future__ import annotations

import sys
from typing import Any, Optional

import click

from omnidist.cli import style
from omnidist.cli.common import (
    backend_option,
    job_argument,
    one_off,
    one_off_options,
    profile_option,
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

    Settings come from --profile as compile takes them (e.g. an execution role's ARN): the profile's
    own backend gets all of them, the others what they understand.

    Exits 2 when the file itself is invalid or breaks a rule every backend shares; with
    --backend, exits with that backend's verdict (3 when it cannot express the job); when every
    backend rejects the job, exits with the first one's verdict. On a terminal, long reasons wrap
    to its width.

    \b
    Examples:
      omnidist validate job.yaml
      omnidist validate job.yaml --backend BACKEND   # exit code: that backend's verdict
      omnidist validate job.yaml -p prod -b BACKEND  # with the profile's settings
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
      omnidist compile job.yaml --backend BACKEND > request.json
      omnidist compile job.yaml -b BACKEND -o json
      omnidist compile -b BACKEND --nodes 2 --accelerator A100:8 --image IMG -- python train.py
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


def BACKEND_NAMES() -> list[str]:  # noqa: N802 - reads like the constant it stands for
    """The installed backends (read when needed)."""
    from omnidist.backend import registry

    return registry.installed()
