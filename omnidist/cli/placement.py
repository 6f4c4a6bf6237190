"""The commands about where jobs run and what ran where: ``plan``, ``catalog`` (``catalog refresh``)
and ``jobs`` (SPEC §12). Each imports the placement floor or the ledger when it runs, so
``omnidist compile`` loads neither."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import click

from omnidist.cli.common import BACKENDS, job_argument, one_off, one_off_options, table


@click.command()
@job_argument
@click.option("--profile", "-p", "profiles", multiple=True,
              help="A profile, a group or a,b,c (repeatable; default: every profile of the configuration, "
                   "else every installed backend's defaults).")
@click.option("--hours", type=click.FloatRange(min=0, min_open=True),
              help="Hours to estimate the cost for (default: the job's timeout, else 1).")
@click.option("--spot", is_flag=True, default=None, help="Estimate with spot prices (default: the job's spot).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", help="Output format.")
@one_off_options
def plan(job: tuple[str, ...], profiles: tuple[str, ...], hours: Optional[float], spot: Optional[bool], output: str,
         **one_off_flags: Any) -> None:
    """Where JOB_FILE (or a one-off job) could run: each profile's machines, accelerators, price per
    hour and estimated cost, or why its backend cannot express the job; cheapest first, marked *,
    among the rows with a price. No network.

    Prices are list prices from omnidist's price catalog (omnidist catalog), not quotes; a profile
    listing regions = [...] is priced in each and shows the cheapest. Exits 3 when no profile can
    express the job.

    \b
    Examples:
      omnidist plan job.yaml -p cloud-a -p cloud-b --hours 12
      omnidist plan job.yaml -p everywhere --spot -o json
      omnidist plan --nodes 2 --accelerator A100:8 --image IMG -- python train.py
    """
    from omnidist import api
    from omnidist.placement import plan as planning

    given = one_off(job, **one_off_flags)
    loaded = api.load(given) if isinstance(given, str) else given
    found = planning.plan(loaded, profiles, hours=hours, spot=spot)
    if output == "json":
        click.echo(json.dumps(found.to_json(), indent=2, allow_nan=False))
    else:
        click.echo(table(found.rows(), planning.HEADER))
    click.echo(found.summary(), err=True)
    for note in found.notes():
        click.echo(f"note: {note}", err=True)
    if all(row.blocked for row in found):
        sys.exit(max(row.exit_code for row in found))


@click.command()
@click.argument("name", required=False)
@click.option("--cloud", help="Only this cloud's price lists (a cloud of the installed vendor kits).")
@click.option("--region", help="Price in this region (default: each machine's cheapest region with a price).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", help="Output format.")
def gpus(name: Optional[str], cloud: Optional[str], region: Optional[str], output: str) -> None:
    """Every accelerator omnidist knows (or NAME): per backend, the machines that carry it, how
    many per node, the list price per accelerator-hour on demand and spot, and the regions priced.
    No configuration, no network (prices from omnidist catalog).

    \b
    Examples:
      omnidist gpus
      omnidist gpus A100 --cloud CLOUD   # one of the clouds in the table
      omnidist gpus H100 --region us-east-1 -o json
    """
    from omnidist.errors import ValidationError
    from omnidist.placement import gpus as listing
    from omnidist.placement import vendors

    clouds = sorted(v.name for v in vendors.installed().values())
    if cloud is not None and cloud not in clouds:
        raise click.BadParameter(f"{cloud!r} is not a cloud of an installed vendor kit: {', '.join(clouds)}",
                                 param_hint="--cloud")
    try:
        found = listing.offers(name, cloud=cloud, region=region)
    except ValueError as exc:
        raise ValidationError(f"NAME: {exc}", path="NAME") from None
    if output == "json":
        click.echo(json.dumps([offer.to_json() for offer in found], indent=2))
    else:
        click.echo(table([offer.cells() for offer in found], listing.HEADER))


@click.command()
@click.option("--profile", "-p", "profiles", multiple=True,
              help="A profile, a group or a,b,c (repeatable; default: every profile of the configuration).")
@click.option("--offline", is_flag=True, help="Only look for credentials where each cloud's client does; ask no cloud.")
def check(profiles: tuple[str, ...], offline: bool) -> None:
    """For each profile, whether its credentials are found and the cloud accepts them, or how to
    give them: one line each. Creates nothing. Exits 1 when some are missing or refused.

    \b
    Examples:
      omnidist check
      omnidist check -p cloud-a,cloud-b --offline
    """
    from omnidist.placement import credentials

    lines = credentials.check(profiles, online=not offline)
    for line in lines:
        click.echo(line.text())
    if any(line.status in ("missing", "refused") for line in lines):
        sys.exit(1)


@click.group(invoke_without_command=True)
@click.option("--rows", is_flag=True, help="Print every row (as CSV), not the summary by source.")
@click.pass_context
def catalog(ctx: click.Context, rows: bool) -> None:
    """The price catalog plan uses: each price list's sources and dates (list prices, not quotes).

    \b
    Examples:
      omnidist catalog
      omnidist catalog --rows > prices.csv
      omnidist catalog refresh --source skypilot --region us-east-1
    """
    if ctx.invoked_subcommand is not None:
        return
    import csv

    from omnidist.placement import prices, vendors

    found = prices.load()
    if rows:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(prices.COLUMNS)
        writer.writerows(row.as_csv() for row in found.rows)
        return
    for path in found.files:
        click.echo(f"catalog: {path}")
    summary: dict[tuple[str, str, str], list[int]] = {}
    for row in found.rows:
        if row.kind == "region":
            continue
        counts = summary.setdefault((row.service, row.source, row.date or "undated"), [0, 0])
        counts[0] += 1
        counts[1] += row.on_demand is not None
    lines = [(service, str(total), str(priced), date, source)
             for (service, source, date), (total, priced) in sorted(summary.items())]
    click.echo(table(lines, ("list", "rows", "priced", "date", "source")))
    click.echo("\nHow each service bills:")
    for name, service in vendors.billing().items():
        click.echo(f"  {name}: {service.rule}")
    click.echo("\nPrice lists `omnidist catalog refresh --source` reads (by vendor kit):")
    for vendor, source in vendors.sources():
        key = f"; needs --api-key {source.name}=KEY or {source.key_env}" if source.key_env else ""
        click.echo(f"  {source.name} ({vendor.name}): {source.title}{key}")


@catalog.command("refresh")
@click.option("--source", "sources", multiple=True,
              help="Only these price lists (repeatable; default: every one that can be read; `omnidist catalog` "
                   "lists the installed vendor kits' lists).")
@click.option("--region", "regions", multiple=True, help="Only these regions (repeatable; default: all).")
@click.option("--api-key", "api_keys", multiple=True, metavar="LIST=KEY",
              help="An API key for a list that needs one (repeatable; else the variable the list names); a list "
                   "without its key is skipped.")
@click.option("--output", type=click.Path(dir_okay=False), help="Write here (default: the state folder's prices.csv).")
def refresh(sources: tuple[str, ...], regions: tuple[str, ...], api_keys: tuple[str, ...],
            output: Optional[str]) -> None:
    """Rebuild the price catalog from the public price lists the installed vendor kits read."""
    from pathlib import Path

    from omnidist.errors import ValidationError
    from omnidist.placement import refresh as refreshing

    unknown = sorted(set(sources) - set(refreshing.source_names()))
    if unknown:
        raise ValidationError(f"no price list {', '.join(map(repr, unknown))}; the installed vendor kits read "
                              f"{', '.join(refreshing.source_names()) or 'none'}", path="--source")
    result = refreshing.refresh(sources or None, regions=regions or None, api_keys=refreshing.api_keys(api_keys),
                                output=Path(output) if output else None, say=lambda line: click.echo(line, err=True))
    click.echo(f"wrote {result.rows} rows to {result.path}")
    if result.failed:
        sys.exit(1)


JOBS_PAGE = 50
"""How many rows ``omnidist jobs`` lists unless told otherwise."""


@click.command("jobs")
@click.argument("name", required=False)
@click.option("--refresh", is_flag=True, help="Ask the clouds for each listed live job's state first (in parallel).")
@click.option("--backend", "-b", type=BACKENDS, help="Only this backend's jobs.")
@click.option("--state", "-s", help="Only jobs in this state (running, failed, refused…).")
@click.option("--limit", "-n", type=click.IntRange(min=1),
              help=f"At most this many, newest first (default {JOBS_PAGE}; --refresh asks about these only).")
@click.option("--all", "every", is_flag=True, help="Every row, however many.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", help="Output format.")
@click.option("--cost", "with_cost", is_flag=True,
              help="Estimate each attempt's spend: its billed time (submit to end, or now) at its recorded price.")
def jobs_command(name: Optional[str], refresh: bool, backend: Optional[str], state: Optional[str],
                 limit: Optional[int], every: bool, output: str, with_cost: bool) -> None:
    """The job ledger: every submit and placement attempt, newest first (the newest 50 unless
    -n or --all say otherwise; --refresh asks the clouds about the rows shown only); with NAME,
    that job's attempts (each placement attempt and each restart of its recovery) and how each ended.

    Refused and skipped placement attempts are listed too, with their reason. The ledger lives in
    $OMNIDIST_STATE_DIR/jobs.db (default ~/.local/state/omnidist); OMNIDIST_NO_LEDGER=1 turns it off.

    \b
    Examples:
      omnidist jobs --refresh
      omnidist jobs --backend BACKEND --state failed -n 5 -o json
      omnidist jobs cassava                    # every attempt of job cassava
      omnidist jobs cassava --cost             # and what each cost
    """
    from omnidist import api
    from omnidist.submission import ledger

    if every and limit:
        raise click.UsageError("give --limit or --all, not both")
    if name:
        found = api.jobs(refresh=refresh, backend=backend, state=state, limit=None)
        found = ledger.JobList(r for r in found if r.name == name or r.id == name)
        if limit:
            found = ledger.JobList(found[:limit])
        if output == "table" and found:
            rows, header = ledger.attempt_rows(found), ledger.ATTEMPT_HEADER
            if with_cost:
                rows, header = _with_cost(rows, sorted(found, key=lambda r: r.seq)), (*header, "cost $")
            click.echo(table(rows, header))
            return
    else:
        shown = None if every else limit or JOBS_PAGE
        found = api.jobs(refresh=refresh, backend=backend, state=state, limit=shown)
        if shown is not None and len(found) == shown:
            total = ledger.Ledger.default().count(backend=backend, state=state)  # type: ignore[union-attr]
            if total > shown:
                click.echo(f"showing the newest {shown} of {total:,} rows; -n N shows more, --all every one", err=True)
    if output == "json":
        listed = ledger.public(found)
        if with_cost:
            from omnidist.recovery import cost

            for item, record in zip(listed, found):
                item["cost"] = cost.attempt_cost(record)
        click.echo(json.dumps(listed, indent=2))
    elif not found:
        click.echo("no jobs recorded yet (omnidist submit records each one)", err=True)
    elif with_cost:
        click.echo(table(_with_cost(found.rows(), found), (*found.HEADER, "cost $")))
    else:
        click.echo(table(found.rows(), found.HEADER))


def _with_cost(rows: list[tuple[Any, ...]], records: Any) -> list[tuple[Any, ...]]:
    """Each row with its attempt's estimated spend (empty when its price is unknown)."""
    from omnidist.recovery import cost

    spent = [cost.attempt_cost(r) for r in records]
    return [(*row, "" if c is None else f"{c:.2f}") for row, c in zip(rows, spent)]
