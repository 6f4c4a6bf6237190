"""The price catalog: list prices per machine, accelerator and fee, each row with its source and date.

Each vendor kit ships its rows of the catalog (:mod:`omnidist.placement.vendors`: a ``prices.csv``
in :data:`COLUMNS`) holding only figures its sources state, with their sources and dates; every
machine a backend can pick has a row, and where no source gives a figure its price is empty:
unknown, never guessed. ``omnidist catalog refresh`` rebuilds rows from the vendors' public price
lists into the user's state folder (:func:`user_catalog`); those rows win over the shipped ones
for the same item.

A backend says what a job runs on as a :class:`~omnidist.backend.values.Footprint` (a service, a
region, machines per role) and how each of its services bills
(:class:`~omnidist.backend.billing.Billing`: which price list, what it adds, as the vendor
publishes it); :func:`price` adds it up. These are list prices, not quotes.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist.backend.billing import Billing
from omnidist.backend.values import Footprint, Pool
from omnidist.errors import ConfigError
from omnidist.model import accelerators
from omnidist.placement import vendors


def shipped() -> list[Path]:
    """The catalog files the installed vendor kits ship, by vendor."""
    return [vendor.rows for vendor in vendors.installed().values()]


COLUMNS = ("cloud", "service", "region", "kind", "name", "on_demand", "spot", "source", "date")
"""The columns of a catalog file, in order."""

ANY_REGION = "*"
"""The region of a row whose source states none (used for any region, with a note), or of a row that
only says the item exists (no price)."""

KINDS = ("accelerator", "fee", "machine", "region")
"""What a row prices: a machine type, an accelerator (billed per GPU where the list bills GPUs
apart), a fee (per cluster and hour), or — ``region`` — a marker that the list named every item it
offers in that region (so an item missing there is not offered)."""


@attrs.frozen(kw_only=True)
class Row:
    """One catalog row: USD per hour of one item in one region, with where the figure comes from.

    Attributes:
        cloud: the vendor whose kit ships or refreshes the row (:attr:`omnidist.placement.vendors.Vendor.name`).
        service: the price list (a :attr:`~omnidist.backend.billing.Billing.prices`), or for a fee the
            service that adds it.
        region: the cloud's region, or :data:`ANY_REGION`.
        kind: one of :data:`KINDS`.
        name: the machine type, the portable accelerator name, or the fee's name.
        on_demand: the on-demand price (``None``: unknown).
        spot: the spot / preemptible / low-priority price (``None``: unknown).
        source: where the figure comes from.
        date: the date the source states (ISO ``YYYY-MM-DD`` or ``YYYY-MM``; empty: undated).
    """

    cloud: str
    service: str
    region: str
    kind: str
    name: str
    on_demand: Optional[float] = None
    spot: Optional[float] = None
    source: str = ""
    date: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What a later row for the same item replaces: service, region, kind, name."""
        return self.service, self.region, self.kind, self.name

    def as_csv(self) -> list[str]:
        """The row's cells, in :data:`COLUMNS` order."""
        return [self.cloud, self.service, self.region, self.kind, self.name, _number(self.on_demand),
                _number(self.spot), self.source, self.date]


def _number(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.10g}"


def _price(text: str, path: Path, line: int, column: str) -> Optional[float]:
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{path}: line {line}: {column}: {text!r} is not a price; write USD per hour, e.g. 3.67, "
                          "or leave it empty when unknown") from None
    if not math.isfinite(value):  # nan would sort as the cheapest, inf is no price; neither is JSON
        raise ConfigError(f"{path}: line {line}: {column}: {text.strip()!r} is not a price; write USD per hour, "
                          "e.g. 3.67, or leave it empty when unknown")
    if value < 0:
        raise ConfigError(f"{path}: line {line}: {column}: a price cannot be negative ({text})")
    return value


MAX_CATALOG_BYTES = 64 * 2**20
"""The largest catalog file read (the shipped one is ~20 kB; a refresh of every region a few MB)."""

MAX_CATALOG_ROWS = 250_000
"""The most rows a catalog file may hold."""


def _open_catalog(path: Path) -> Any:
    """``path`` opened for reading as text, once it is known to be a regular file of a readable size
    (a FIFO or a device would block or never end).

    Raises:
        ConfigError: it is not a regular file, or it is larger than :data:`MAX_CATALOG_BYTES`.
    """
    import stat

    try:
        handle = open(path, "rb", buffering=0)  # noqa: SIM115 - returned wrapped, closed by the caller
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the price catalog ({exc.strerror or exc})") from None
    try:
        # O_NONBLOCK is not needed: opening a FIFO for reading blocks only until a writer opens it,
        # and fstat says what the opened file is before anything is read from it.
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a price catalog: not a regular file")
        if info.st_size > MAX_CATALOG_BYTES:
            raise ConfigError(f"{path}: the price catalog is {info.st_size:,} bytes, more than the "
                              f"{MAX_CATALOG_BYTES:,} read; keep the rows of the regions you use")
    except BaseException:
        handle.close()
        raise
    return io.TextIOWrapper(io.BufferedReader(handle), encoding="utf-8", newline="")


def read_rows(path: Path) -> list[Row]:
    """The rows of a catalog file.

    Raises:
        ConfigError: the file cannot be read or a row is malformed (naming the file and the line).
    """
    if path.exists() and not path.is_file():  # checked before opening: a FIFO would block the open
        raise ConfigError(f"{path}: not a price catalog: not a regular file")
    try:
        with _open_catalog(path) as handle:
            reader = csv.DictReader(handle)
            if tuple(reader.fieldnames or ()) != COLUMNS:
                raise ConfigError(f"{path}: not a price catalog: the header must be {','.join(COLUMNS)}")
            rows = []
            for line, cells in enumerate(reader, start=2):
                if line > MAX_CATALOG_ROWS + 1:
                    raise ConfigError(f"{path}: line {line}: the price catalog has more than {MAX_CATALOG_ROWS:,} "
                                      "rows; keep the rows of the regions you use")
                if None in cells.values() or None in cells:  # a row cut short, or one with cells to spare
                    raise ConfigError(f"{path}: line {line}: expected {len(COLUMNS)} cells ({','.join(COLUMNS)})")
                if cells["kind"] not in KINDS:
                    raise ConfigError(f"{path}: line {line}: kind: {cells['kind']!r} is not one of {', '.join(KINDS)}")
                rows.append(Row(cloud=cells["cloud"], service=cells["service"], region=cells["region"] or ANY_REGION,
                                kind=cells["kind"], name=cells["name"],
                                on_demand=_price(cells["on_demand"] or "", path, line, "on_demand"),
                                spot=_price(cells["spot"] or "", path, line, "spot"),
                                source=cells["source"] or "", date=cells["date"] or ""))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the price catalog ({exc.strerror or exc})") from None
    except csv.Error as exc:
        raise ConfigError(f"{path}: not a price catalog ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a price catalog: not UTF-8 text (byte {exc.start:,} of a read block)") from None
    return rows


def write_rows(path: Path, rows: Iterable[Row]) -> None:
    """Write a catalog file (sorted by cloud, service, kind, name, region), replacing it at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # a price that is not finite is never written (it would read as the cheapest, or refuse the file)
    finite = [r for r in rows if all(v is None or math.isfinite(v) for v in (r.on_demand, r.spot))]
    ordered = sorted(finite, key=lambda r: (r.cloud, r.service, r.kind, r.name, r.region))
    partial = path.with_name(path.name + ".partial")
    with open(partial, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(row.as_csv() for row in ordered)
    os.replace(partial, path)


def user_catalog(environ: Mapping[str, str] = os.environ) -> Path:
    """Where ``omnidist catalog refresh`` writes the rows it rebuilt (``prices.csv`` in omnidist's
    state folder, :func:`omnidist.config.state_dir`)."""
    from omnidist.config import state_dir

    return state_dir(environ) / "prices.csv"


@attrs.frozen(kw_only=True)
class Lookup:
    """What the catalog says of one item in one region.

    Attributes:
        row: the row found (``None``: the catalog does not know the item).
        offered: the region offers it (``True``: a row names the region; ``False``: the list named
            everything it offers there and not this; ``None``: unknown).
        regionless: the price comes from a row whose source states no region.
    """

    row: Optional[Row]
    offered: Optional[bool]
    regionless: bool = False


class Catalog:
    """Price rows by item, later rows (a refreshed catalog) replacing earlier ones (the shipped one).

    Args:
        rows: the rows, earliest source first.
        files: the files they came from (for ``omnidist catalog``).
    """

    def __init__(self, rows: Iterable[Row], files: Iterable[Path] = ()) -> None:
        self.files = tuple(files)
        self.by_key: dict[tuple[str, str, str, str], Row] = {}
        for row in rows:
            self.by_key[row.key] = row
        self.complete = {(r.service, r.name) for r in self.by_key.values() if r.kind == "region"}
        """(price list, region) pairs whose list names every item it offers there."""

    @property
    def rows(self) -> list[Row]:
        """Every row, sorted."""
        return sorted(self.by_key.values(), key=lambda r: (r.cloud, r.service, r.kind, r.name, r.region))

    def lookup(self, service: str, region: Optional[str], kind: str, name: str) -> Lookup:
        """The row for ``name`` in ``region`` (else a row whose source states no region)."""
        if region:
            row = self.by_key.get((service, region, kind, name))
            if row is not None:
                return Lookup(row=row, offered=True)
        fallback = self.by_key.get((service, ANY_REGION, kind, name))
        offered = False if region and (service, region) in self.complete else None
        return Lookup(row=fallback, offered=offered, regionless=fallback is not None and fallback.on_demand is not None)


def load(environ: Mapping[str, str] = os.environ) -> Catalog:
    """The vendor kits' shipped rows with the user's refreshed rows over them (``OMNIDIST_PRICES``
    names another file to lay over them instead of the refreshed one).

    Raises:
        ConfigError: a catalog file is malformed.
    """
    files = shipped()
    extra = Path(environ["OMNIDIST_PRICES"]) if environ.get("OMNIDIST_PRICES") else user_catalog(environ)
    if extra.is_file() or environ.get("OMNIDIST_PRICES"):
        files.append(extra)
    rows = [row for path in files for row in read_rows(path)]
    return Catalog(rows, files)


@attrs.frozen(kw_only=True)
class Priced:
    """What a footprint costs per hour.

    Attributes:
        on_demand: USD per hour on demand (``None``: some part's price is unknown).
        spot: USD per hour on spot capacity (``None``: unknown, or the service has none).
        available: the region offers every accelerator (or, without any, every machine) the job
            needs: ``True``, ``False``, or ``None`` for unknown.
        notes: what the figures rest on or lack, for people.
        sources: the rows the figures come from.
        partial: when ``on_demand`` is unknown, what the parts with a price add up to (a floor,
            ``None`` when no part has one).
    """

    on_demand: Optional[float]
    spot: Optional[float]
    available: Optional[bool]
    notes: tuple[str, ...] = ()
    sources: tuple[Row, ...] = ()
    partial: Optional[float] = None


def _pool_items(pool: Pool, service: Billing) -> list[tuple[str, str, int]]:
    """``(kind, name, how many per machine)`` rows one machine of ``pool`` is billed by. A TPU host
    is billed as its machine, chips included (Cloud TPU prices a TPU VM per slice-hour, host and
    all), never as GPUs apart."""
    items = [("machine", pool.machine, 1)]
    if service.gpus_apart and pool.accelerator and pool.count and not accelerators.is_tpu(pool.accelerator):
        items.append(("accelerator", pool.accelerator, pool.count))
    return items


def price(footprint: Footprint, catalog: Catalog, billing: Optional[Mapping[str, Billing]] = None) -> Priced:
    """The hourly price of ``footprint`` from ``catalog``, with whether its region offers what it needs.

    Every machine of every pool is priced (parameter servers, evaluators and reduction servers as
    the machines they run on), GPUs added per GPU where the service bills them apart, the service's
    fees added once; a tuning job's parallel trials multiply it. One unknown part makes the whole
    unknown (``None``), and a note says which. ``billing`` (default: what the installed backends and
    vendor kits declare, :func:`omnidist.placement.vendors.billing`) says how the service bills.
    """
    service = (vendors.billing() if billing is None else billing).get(footprint.service)
    if service is None:
        return Priced(on_demand=None, spot=None, available=None,
                      notes=(f"the price catalog knows no service {footprint.service!r}",))
    if service.free:
        return Priced(on_demand=0.0, spot=0.0, available=footprint.offered, notes=(service.rule,))
    region = footprint.region
    notes: list[str] = [] if region else ["the profile names no region: prices from rows that state none"]
    on_demand: Optional[float] = 0.0
    known = 0.0  # the parts with a price, for a partial price when another part has none
    spot: Optional[float] = 0.0
    offered: list[Optional[bool]] = []
    used: dict[tuple, Row] = {}
    missing: list[str] = []
    for pool in footprint.pools:
        for kind, name, per_machine in _pool_items(pool, service):
            found = catalog.lookup(service.prices, region, kind, name)
            gpu_item = kind == "accelerator" or (not service.gpus_apart and pool.accelerator is not None)
            if gpu_item or not any(p.accelerator for p in footprint.pools):
                offered.append(found.offered)
            row = found.row
            if row is not None:
                used[row.key] = row
                if found.regionless:
                    notes.append(f"{name}: the price's source states no region ({row.source})")
            times = per_machine * pool.replicas * footprint.parallel
            if row is None or row.on_demand is None:
                missing.append(name)
                on_demand = None
            else:
                known += row.on_demand * times
                on_demand = None if on_demand is None else on_demand + row.on_demand * times
            if row is None or row.spot is None:
                spot = None
            elif spot is not None:
                spot += row.spot * times
    fees: list[str] = []
    for fee in service.fees:
        found = catalog.lookup(footprint.service, region, "fee", fee)  # a fee is the service's own row
        row = found.row
        if row is None or row.on_demand is None:
            missing.append(f"the {footprint.service} {fee} fee")
            on_demand = spot = None
            continue
        used[row.key] = row
        known += row.on_demand
        fees.append(f"{footprint.service} {fee} fee {row.on_demand:g} USD/h included ({row.source})")
        on_demand = None if on_demand is None else on_demand + row.on_demand
        spot = None if spot is None else spot + row.on_demand
    if on_demand is not None:
        notes.extend(fees)
    if missing:
        where = f" in {region}" if region else ""
        notes.append(f"no {service.prices} list price{where} for {', '.join(dict.fromkeys(missing))}: "
                     "the cost is unknown (omnidist catalog refresh rebuilds prices from the public price lists)")
    notes.extend(f"{p.role}: {p.assumed}" for p in footprint.pools if p.assumed)
    partial = _cents(known) if on_demand is None and known else None
    return Priced(on_demand=_cents(on_demand), spot=_cents(spot), available=_all(offered),
                  notes=tuple(dict.fromkeys(notes)), sources=tuple(used.values()), partial=partial)


def _cents(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(value, 6)


def _all(values: list[Optional[bool]]) -> Optional[bool]:
    """``False`` when any is, else ``None`` when any is unknown, else ``True`` (``None`` for none)."""
    if any(v is False for v in values):
        return False
    if not values or any(v is None for v in values):
        return None
    return True
