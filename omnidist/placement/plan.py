"""``omnidist plan``: what a job would run on and cost under each profile, cheapest first (SPEC §12).

For each profile the job is compiled as ``omnidist compile`` would (no network), the backend says
what the request runs on (:meth:`~omnidist.backend.contract.Backend.footprint`) and the price
catalog (:mod:`omnidist.placement.prices`) prices it. A profile whose backend cannot express the
job is a row too, ``blocked`` with the reason ``compile`` would exit with. The cheapest row that
can run (not blocked, its region not known to lack the accelerator, its cost known) is marked.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist import config, notebook
from omnidist.backend import registry
from omnidist.errors import (
    BackendNotFoundError,
    ConfigError,
    UnsupportedFeatureError,
    ValidationError,
)
from omnidist.model.job import DistributedJob
from omnidist.placement import prices

JSON_KEYS = ("profile", "backend", "region", "machines", "accelerators", "price_per_hour", "spot_price_per_hour",
             "hours", "estimated_cost", "available", "blocked", "cheapest")
"""The keys of ``omnidist plan -o json`` (SPEC §12), in order."""

DEFAULT_HOURS = 1.0
"""The hours a cost is estimated for when neither ``--hours`` nor the job's ``timeout`` says."""


@attrs.frozen(kw_only=True)
class PlanRow:
    """One profile's answer: where, on what, for how much, or why not.

    Attributes:
        profile: the profile.
        backend: its backend.
        region: where the job would run (``None``: the settings do not say).
        machines: role -> machine type.
        accelerators: every accelerator the job holds at once (``"A100:16"``), or ``None``.
        price_per_hour: USD per hour on demand (``None``: unknown).
        spot_price_per_hour: USD per hour on spot capacity (``None``: unknown).
        hours: the hours the cost is estimated for.
        estimated_cost: ``hours`` times the price that applies (spot when planning for spot).
        available: the region offers what the job needs (``None``: unknown).
        blocked: why the backend cannot take the job, or ``None``.
        cheapest: the cheapest row that can run.
        notes: what the figures rest on or lack.
        exit_code: the exit code of ``blocked``'s error (3: cannot express; 2: invalid settings).
        spot: the cost is a spot cost.
    """

    profile: str
    backend: str
    region: Optional[str] = None
    machines: dict[str, str] = attrs.field(factory=dict)
    accelerators: Optional[str] = None
    price_per_hour: Optional[float] = None
    spot_price_per_hour: Optional[float] = None
    hours: float = DEFAULT_HOURS
    estimated_cost: Optional[float] = None
    available: Optional[bool] = None
    blocked: Optional[str] = None
    cheapest: bool = False
    notes: tuple[str, ...] = ()
    exit_code: int = 0
    spot: bool = False

    @property
    def runnable(self) -> bool:
        """Not blocked, and not in a region known to lack what it needs."""
        return self.blocked is None and self.available is not False

    def to_json(self) -> dict[str, Any]:
        """The object ``omnidist plan -o json`` prints for this row."""
        return {key: getattr(self, key) for key in JSON_KEYS}


HEADER = ("", "profile", "backend", "region", "machines", "accelerators", "$/h", "spot $/h", "hours", "est. cost",
          "available", "blocked")
"""The columns of the table."""


def _money(value: Optional[float]) -> str:
    return "unknown" if value is None else f"{value:,.2f}"


def _yes_no(value: Optional[bool]) -> str:
    return "unknown" if value is None else "yes" if value else "no"


class Plan(tuple):
    """The rows, cheapest first; a table in notebooks."""

    def rows(self) -> list[tuple[str, ...]]:
        """One tuple of cells per row, in :data:`HEADER` order."""
        return [("*" if r.cheapest else "", r.profile, r.backend, r.region or "", _machines(r.machines),
                 r.accelerators or "", "" if r.blocked else _money(r.price_per_hour),
                 "" if r.blocked else _money(r.spot_price_per_hour), f"{r.hours:g}",
                 "" if r.blocked else _money(r.estimated_cost) + (" (spot)" if r.spot else ""),
                 "" if r.blocked else _yes_no(r.available), r.blocked or "") for r in self]

    def to_json(self) -> list[dict[str, Any]]:
        """``omnidist plan -o json``."""
        return [row.to_json() for row in self]

    def notes(self) -> list[str]:
        """``profile: note`` for every row's notes."""
        return [f"{row.profile}: {note}" for row in self for note in row.notes]

    @property
    def cheapest(self) -> Optional[PlanRow]:
        """The marked row, if any."""
        return next((row for row in self if row.cheapest), None)

    def _repr_html_(self) -> str:
        cheapest = self.cheapest
        caption = f"cheapest: {cheapest.profile}" if cheapest else "no profile with a known price can run it"
        return notebook.table(self.rows(), HEADER, caption=caption) + notebook.notes(self.notes())


def _machines(machines: Mapping[str, str]) -> str:
    if len(set(machines.values())) == 1:
        return next(iter(machines.values()))
    return ", ".join(f"{role}={machine}" for role, machine in machines.items())


def profile_names(given: Iterable[str], *, cwd: Optional[Path] = None,
                  environ: Mapping[str, str] = os.environ) -> tuple[list[str], str]:
    """The profiles ``given`` names (``a,b`` lists and group names expanded, in order, each once)
    and how to order them (``cheapest`` when a group says so); every profile when none is given.

    Raises:
        ConfigError: a name that is neither a profile nor a group.
    """
    known = config.profiles(cwd=cwd, environ=environ)
    groups = config.groups(cwd=cwd, environ=environ)
    names: list[str] = []
    order = "listed"
    wanted = [part.strip() for text in given for part in text.split(",") if part.strip()]
    for name in wanted or list(known):
        if name in groups and name not in known:
            group = groups[name]
            order = "cheapest" if group.order == "cheapest" else order
            members = group.profiles
        else:
            members = (name,)
        for member in members:
            if member not in known:
                where = f" (in group {name!r}, {groups[name].source})" if member != name else ""
                config.resolve(profile=member, cwd=cwd, environ=environ)  # raises the lookup's own message
                raise ConfigError(f"profile {member!r} is not defined{where}")
            if member not in names:
                names.append(member)
    return names, order


def hours_for(job: DistributedJob, hours: Optional[float]) -> float:
    """``hours``, else the job's ``timeout``, else :data:`DEFAULT_HOURS`."""
    if hours is not None:
        return hours
    return job.timeout / 3600 if job.timeout else DEFAULT_HOURS


@attrs.frozen(kw_only=True)
class Assessed:
    """A profile's plan row, with what a submit there would send (``None`` when blocked)."""

    row: PlanRow
    driver: Any = None
    settings: Any = None
    compiled: Any = None


def assess(job: DistributedJob, name: str, *, hours: float, spot: bool, catalog: prices.Catalog,
           cwd: Optional[Path] = None, environ: Mapping[str, str] = os.environ) -> Assessed:
    """One profile: the job compiled (no network), its footprint priced, or blocked with the reason."""
    target = config.resolve(profile=name, cwd=cwd, environ=environ)
    region = target.profile.settings.get("region") if target.profile else None
    try:
        driver = registry.get(target.backend)
        settings = config.settings_for(driver.settings_type, target.backend, target, job)
        region = driver.region(settings)
        compiled = driver.compile(job, settings)
    except (UnsupportedFeatureError, ValidationError, ConfigError, BackendNotFoundError) as exc:
        if isinstance(exc, ValidationError) and not exc.source:
            exc = exc.with_source(job.source)
        return Assessed(row=PlanRow(profile=name, backend=target.backend, region=region, hours=hours, spot=spot,
                                    blocked=str(exc).replace("\n", "; "), exit_code=exc.exit_code))
    try:
        footprint = driver.footprint(compiled, settings)
    except Exception as exc:  # noqa: BLE001 - a plugin's reading of its own request: a row, not a crash
        footprint, why = None, f"the {target.backend} backend could not say what the job runs on ({exc}): no price"
    else:
        why = f"the {target.backend} backend does not say what its jobs run on: no price"
    if footprint is None:
        row = PlanRow(profile=name, backend=target.backend, region=region, hours=hours, spot=spot,
                      notes=(why,))
        return Assessed(row=row, driver=driver, settings=settings, compiled=compiled)
    priced = prices.price(footprint, catalog)
    rate = priced.spot if spot else priced.on_demand
    row = PlanRow(profile=name, backend=target.backend, region=footprint.region or region,
                  machines=footprint.machines, accelerators=footprint.accelerators,
                  price_per_hour=priced.on_demand, spot_price_per_hour=priced.spot, hours=hours,
                  estimated_cost=None if rate is None else round(rate * hours, 2), available=priced.available,
                  notes=priced.notes, spot=spot)
    return Assessed(row=row, driver=driver, settings=settings, compiled=compiled)


def check_job(job: DistributedJob) -> None:
    """What every compile checks first, once: ``backends.<name>`` blocks and the portable rules.

    Raises:
        ValidationError: the job itself is invalid (for every profile alike).
    """
    from omnidist import api
    from omnidist.compiler import lowering

    api.check_backend_blocks(job)
    lowering.check_portable_rules(job)


def ranked(rows: Sequence[PlanRow]) -> Plan:
    """Rows cheapest first (known costs ascending, then unknown ones as listed, then blocked ones),
    the cheapest runnable row marked."""
    costed = sorted((r for r in rows if r.blocked is None and r.estimated_cost is not None),
                    key=lambda r: (not r.runnable, r.estimated_cost))
    unknown = [r for r in rows if r.blocked is None and r.estimated_cost is None]
    blocked = [r for r in rows if r.blocked is not None]
    ordered = [*costed, *unknown, *blocked]
    best = next((r for r in costed if r.runnable), None)
    return Plan(attrs.evolve(r, cheapest=True) if r is best else r for r in ordered)


def plan(job: DistributedJob, profiles: Iterable[str] = (), *, hours: Optional[float] = None,
         spot: Optional[bool] = None, catalog: Optional[prices.Catalog] = None, cwd: Optional[Path] = None,
         environ: Mapping[str, str] = os.environ) -> Plan:
    """Plan ``job`` under each of ``profiles`` (every profile of the configuration when none).

    Args:
        job: the job (checked once against the portable rules: an invalid job is an error, not rows).
        profiles: profile or group names (``a,b`` lists allowed).
        hours: the hours to estimate the cost for (default: the job's ``timeout``, else 1).
        spot: estimate with spot prices (default: the job's ``spot``).
        catalog: the prices (default: :func:`omnidist.placement.prices.load`).
        cwd: where the configuration is looked up from.
        environ: the environment (profiles, state folder).

    Raises:
        ValidationError: the job itself is invalid.
        ConfigError: a profile or group that is not defined, or a malformed price catalog.
    """
    check_job(job)
    names, _ = profile_names(profiles, cwd=cwd, environ=environ)
    if not names:
        raise ConfigError("no profiles to plan: define [profiles.NAME] in omnidist.toml (see docs/profiles.md), "
                          "or name them with --profile")
    catalog = catalog if catalog is not None else prices.load(environ)
    spot = job.spot if spot is None else spot
    hours = hours_for(job, hours)
    return ranked([assess(job, name, hours=hours, spot=spot, catalog=catalog, cwd=cwd, environ=environ).row
                   for name in names])
