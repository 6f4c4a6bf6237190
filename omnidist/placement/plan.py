"""``omnidist plan``: what a job would run on and cost under each profile, cheapest first (SPEC §12).

For each profile the job is compiled as ``omnidist compile`` would (no network), the backend says
what the request runs on (:meth:`~omnidist.backend.contract.Backend.footprint`) and the price
catalog (:mod:`omnidist.placement.prices`) prices it. A profile whose backend cannot express the
job is a row too, ``blocked`` with the reason ``compile`` would exit with. The cheapest row that
can run (not blocked, its region not known to lack the accelerator, its cost known) is marked, and
the plan says among how many priced rows (SPEC §12a: unknown is never cheapest). A profile may
list ``regions = [...]``: each is priced and the cheapest that offers the job is shown. With no
profile configured, the job is planned on every installed backend's defaults.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist import config, notebook
from omnidist.backend import registry
from omnidist.backend.contract import Placement, footprint_of, region_of
from omnidist.errors import (
    BackendNotFoundError,
    ConfigError,
    UnsupportedFeatureError,
    ValidationError,
)
from omnidist.model.job import DistributedJob
from omnidist.placement import prices

JSON_KEYS = ("profile", "backend", "region", "machines", "accelerators", "price_per_hour", "spot_price_per_hour",
             "hours", "estimated_cost", "available", "blocked", "cheapest", "partial_price_per_hour", "idle",
             "credentials")
"""The keys of ``omnidist plan -o json`` (SPEC §12, then §12a's), in order."""

CREDENTIALS = ("ok", "missing", "refused", "unchecked")
"""What the ``credentials`` column says: found and accepted, none found, found and refused, or not
looked at (``plan`` is offline: it says ``missing`` when none are found where the cloud's client
looks, else ``unchecked``; ``omnidist check`` asks the cloud)."""

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
        partial_price_per_hour: when ``price_per_hour`` is unknown because a part has no price,
            what the priced parts add up to (a floor, shown as such).
        idle: what the machines hold beyond what the job uses (``"8 A100 idle of 16 billed"``),
            priced as billed; ``None`` when nothing is idle.
        credentials: one of :data:`CREDENTIALS`.
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
    partial_price_per_hour: Optional[float] = None
    idle: Optional[str] = None
    credentials: str = "unchecked"

    @property
    def runnable(self) -> bool:
        """Not blocked, and not in a region known to lack what it needs."""
        return self.blocked is None and self.available is not False

    def to_json(self) -> dict[str, Any]:
        """The object ``omnidist plan -o json`` prints for this row: a figure that is not finite
        (prices summed past a float's range) is ``null``, unknown, so the output stays JSON."""
        return {key: _finite(getattr(self, key)) for key in JSON_KEYS}


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


HEADER = ("", "profile", "backend", "region", "machines", "accelerators", "$/h", "spot $/h", "hours", "est. cost",
          "available", "credentials", "blocked")
"""The columns of the table."""


def _money(value: Optional[float]) -> str:
    return "unknown" if value is None else f"{value:,.2f}"


def _rate(row: PlanRow) -> str:
    """The on-demand price, or the floor of a partial one marked as such."""
    if row.price_per_hour is None and row.partial_price_per_hour is not None:
        return f">= {row.partial_price_per_hour:,.2f} (partial)"
    return _money(row.price_per_hour)


def _accelerators(row: PlanRow) -> str:
    return f"{row.accelerators} ({row.idle})" if row.accelerators and row.idle else row.accelerators or ""


def _yes_no(value: Optional[bool]) -> str:
    return "unknown" if value is None else "yes" if value else "no"


class Plan(tuple):
    """The rows, cheapest first; a table in notebooks."""

    def rows(self) -> list[tuple[str, ...]]:
        """One tuple of cells per row, in :data:`HEADER` order."""
        return [("*" if r.cheapest else "", r.profile, r.backend, r.region or "", _machines(r.machines),
                 _accelerators(r), "" if r.blocked else _rate(r),
                 "" if r.blocked else _money(r.spot_price_per_hour), f"{r.hours:g}",
                 "" if r.blocked else _money(r.estimated_cost) + (" (spot)" if r.spot else ""),
                 "" if r.blocked else _yes_no(r.available), r.credentials, r.blocked or "") for r in self]

    def summary(self) -> str:
        """Which row is cheapest, among how many priced (``cheapest of 3 priced; 2 unknown``)."""
        priced = [r for r in self if r.blocked is None and r.estimated_cost is not None]
        unknown = [r for r in self if r.blocked is None and r.estimated_cost is None]
        blocked = len(self) - len(priced) - len(unknown)
        cheapest = self.cheapest
        head = f"cheapest: {cheapest.profile}" if cheapest else "no row with a known price can run the job"
        tail = f" of {len(priced)} priced" + (f"; {len(unknown)} unknown" if unknown else "")
        return head + tail + (f"; {blocked} blocked" if blocked else "")

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
        return notebook.table(self.rows(), HEADER, caption=self.summary()) + notebook.notes(self.notes())


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
           cwd: Optional[Path] = None, environ: Mapping[str, str] = os.environ,
           target: Optional[config.Target] = None, region: Optional[str] = None) -> Assessed:
    """One profile (or ``target``, a backend's defaults), in ``region`` when given: the job compiled
    (no network), its footprint priced, or blocked with the reason."""
    target = target if target is not None else config.resolve(profile=name, cwd=cwd, environ=environ)
    target = _without_regions(target)
    region = region or (target.profile.settings.get("region") if target.profile else None)
    credentials = "unchecked"
    priced_in: tuple[str, ...] = ()
    try:
        driver = registry.get(target.backend)
        settings = config.settings_for(driver.settings_type, target.backend, target, job,
                                       {"region": region} if region else None)
        region = region_of(driver, settings)
        if region is None and isinstance(driver, Placement) and driver.pricing_region(settings):
            region = driver.pricing_region(settings)
            settings = config.settings_for(driver.settings_type, target.backend, target, job, {"region": region})
            priced_in = (f"the profile names no region: priced in {region}, its cloud's largest "
                         f"(set region in the profile)",)
        credentials = _credentials(driver, settings)
        compiled = driver.compile(job, settings)
    except (UnsupportedFeatureError, ValidationError, ConfigError, BackendNotFoundError) as exc:
        if isinstance(exc, ValidationError) and not exc.source:
            exc = exc.with_source(job.source)
        return Assessed(row=PlanRow(profile=name, backend=target.backend, region=region, hours=hours, spot=spot,
                                    blocked=str(exc).replace("\n", "; "), exit_code=exc.exit_code,
                                    credentials=credentials))
    try:
        footprint = footprint_of(driver, compiled, settings)
    except Exception as exc:  # noqa: BLE001 - a plugin's reading of its own request: a row, not a crash
        footprint, why = None, f"the {target.backend} backend could not say what the job runs on ({exc}): no price"
    else:
        why = f"the {target.backend} backend does not say what its jobs run on: no price"
    if footprint is None:
        row = PlanRow(profile=name, backend=target.backend, region=region, hours=hours, spot=spot,
                      notes=(why,), credentials=credentials)
        return _within_max_cost(job, Assessed(row=row, driver=driver, settings=settings, compiled=compiled), None)
    priced = prices.price(footprint, catalog)
    rate = priced.spot if spot else priced.on_demand
    idle = _idle(job, footprint)
    said = (f"{idle}: the machines hold more accelerators than the job uses, and the price is what is billed",)
    notes = priced_in + priced.notes + (said if idle else ())
    row = PlanRow(profile=name, backend=target.backend, region=footprint.region or region,
                  machines=footprint.machines, accelerators=footprint.accelerators,
                  price_per_hour=priced.on_demand, spot_price_per_hour=priced.spot, hours=hours,
                  estimated_cost=None if rate is None else round(rate * hours, 2), available=priced.available,
                  notes=notes, spot=spot, partial_price_per_hour=None if spot else priced.partial, idle=idle,
                  credentials=credentials)
    return _within_max_cost(job, Assessed(row=row, driver=driver, settings=settings, compiled=compiled), rate)


def _within_max_cost(job: DistributedJob, assessed: Assessed, rate: Optional[float]) -> Assessed:
    """A profile where the job's ``max_cost`` is exceeded or cannot be checked is blocked (exit 2), so
    ``plan`` says so and a placement skips it."""
    from omnidist.recovery import cost

    why = cost.over_max_cost(job, rate)
    if why is None:
        return assessed
    return Assessed(row=attrs.evolve(assessed.row, blocked=why, exit_code=2))


def _without_regions(target: config.Target) -> config.Target:
    """``target`` with its profile's ``regions`` list taken out (plan reads it; backends do not)."""
    if target.profile is None or "regions" not in target.profile.settings:
        return target
    settings = {k: v for k, v in target.profile.settings.items() if k != "regions"}
    return attrs.evolve(target, profile=attrs.evolve(target.profile, settings=settings))


def regions_of(target: config.Target) -> list[str]:
    """The profile's ``regions = [...]`` (empty when it lists none).

    Raises:
        ConfigError: ``regions`` is not a list of region names (naming the file and the profile).
    """
    if target.profile is None or "regions" not in target.profile.settings:
        return []
    listed = target.profile.settings["regions"]
    if not isinstance(listed, list) or not listed or not all(isinstance(r, str) and r for r in listed):
        raise ConfigError(f"{target.profile.source}: profiles.{target.profile.name}.regions: {listed!r} is not a "
                          'list of region names; write e.g. regions = ["us-central1", "us-east4"]')
    return list(dict.fromkeys(listed))


def _credentials(driver: Any, settings: Any) -> str:
    """What the backend finds of its credentials without the network (``unchecked`` when it cannot say)."""
    lookup = getattr(driver, "find_credentials", None)
    if lookup is None:
        return "unchecked"
    try:
        found = lookup(settings)
    except Exception:  # noqa: BLE001 - a plugin's local lookup: the column says it could not tell
        return "unchecked"
    return "unchecked" if found is None else found.status


def _idle(job: DistributedJob, footprint: Any) -> Optional[str]:
    """``"8 A100 idle of 16 billed"`` when the machines carry more accelerators than the job asks for."""
    used: dict[str, int] = {}
    primary = job.primary.accelerator if job.primary.accelerator != "none" else None
    roles = [(job.primary, primary), (job.workers, primary), (job.parameter_servers, None), (job.evaluators, None)]
    for role, inherited in roles:
        if role is None:
            continue
        wanted = role.accelerator if role.accelerator is not None else inherited
        if wanted is None or wanted == "none":
            continue
        if not isinstance(role.replicas, int):
            return None  # a count the cloud decides: nothing to compare
        used[wanted.type] = used.get(wanted.type, 0) + wanted.count * role.replicas
    billed: dict[str, int] = {}
    for pool in footprint.pools:
        if pool.accelerator and pool.count:
            billed[pool.accelerator] = billed.get(pool.accelerator, 0) + pool.count * pool.replicas
    idle = [f"{billed[a] - used[a]} {a} idle of {billed[a]} billed" for a in billed
            if a in used and billed[a] > used[a]]
    return "; ".join(idle) or None


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
    """Plan ``job`` under each of ``profiles`` (every profile of the configuration when none; every
    installed backend's defaults when the configuration has none either).

    Args:
        job: the job (checked once against the portable rules: an invalid job is an error, not rows).
        profiles: profile or group names (``a,b`` lists allowed).
        hours: the hours to estimate the cost for (default: the job's `timeout`, else 1).
        spot: estimate with spot prices (default: the job's ``spot``).
        catalog: the prices (default: :func:`omnidist.placement.prices.load`).
        cwd: where the configuration is looked up from.
        environ: the environment (profiles, state folder).

    Raises:
        ValidationError: the job itself is invalid.
        ConfigError: a profile or group that is not defined, a malformed ``regions`` list, or a
            malformed price catalog.
    """
    check_job(job)
    names, _ = profile_names(profiles, cwd=cwd, environ=environ)
    catalog = catalog if catalog is not None else prices.load(environ)
    spot = job.spot if spot is None else spot
    hours = hours_for(job, hours)
    if not names:  # nothing configured: each installed backend with its defaults
        targets = [(name, config.Target(backend=name, reason="no profile: the backend's defaults"))
                   for name in registry.installed()]
    else:
        targets = [(name, config.resolve(profile=name, cwd=cwd, environ=environ)) for name in names]
    rows = []
    for name, target in targets:
        regions = regions_of(target)
        if not regions:
            rows.append(assess(job, name, hours=hours, spot=spot, catalog=catalog, cwd=cwd, environ=environ,
                               target=target).row)
            continue
        rows.append(best_region([assess(job, name, hours=hours, spot=spot, catalog=catalog, cwd=cwd,
                                        environ=environ, target=target, region=region).row for region in regions]))
    return ranked(rows)


def best_region(rows: Sequence[PlanRow]) -> PlanRow:
    """Of one profile's rows, one per region it lists: the cheapest that can run, with a note
    pricing the others (the first row when none has a price)."""
    costed = sorted((r for r in rows if r.runnable and r.estimated_cost is not None), key=lambda r: r.estimated_cost)
    best = costed[0] if costed else rows[0]
    others = ", ".join(f"{r.region}: {'blocked' if r.blocked else _money(r.estimated_cost)}"
                       + (" (not offered)" if r.available is False else "") for r in rows if r is not best)
    if not others:
        return best
    return attrs.evolve(best, notes=(*best.notes, f"cheapest of the regions listed ({best.region}); the others: "
                                     f"{others}"))
