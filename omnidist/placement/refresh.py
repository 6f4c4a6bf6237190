"""``omnidist catalog refresh``: rebuild price rows from the vendors' public price lists.

The lists are the installed vendor kits' (:attr:`omnidist.vendors.Vendor.price_lists`), each
read in its documented shape by the kit's reader. This module is what they share: the HTTP
reading (:class:`Fetcher`), the reader of the ``skypilot-org/skypilot-catalog`` CSVs that several
vendors' machines are priced in (:func:`skypilot_rows`), and the driver (:func:`refresh`).

A list that cannot be read is reported and leaves the rows it would have replaced as they were;
the others are still written. Every row says where it came from and the date the list states
(else the day it was read). A list's base URL can be pointed elsewhere (mirrors, tests) with the
variable it declares (:attr:`~omnidist.placement.vendors.PriceSource.env`).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist.errors import BackendError, ValidationError
from omnidist.model import accelerators
from omnidist.placement import fetching, prices, vendors
from omnidist.placement.prices import Row

TIMEOUT_S = fetching.REQUEST_TIMEOUT_S
"""How long one request to a price list may wait for an answer (a list's total time and size are
bounded too: :mod:`omnidist.placement.fetching`)."""

MAX_PAGES = 2000
"""The most pages one list is followed for (a guard against a link that loops)."""

UNAVAILABLE_SENTINEL = 700.0
"""The price skypilot-catalog writes for an item a zone does not offer (not a price)."""

@attrs.frozen(kw_only=True)
class Refreshed:
    """What a refresh did: the file written, its row count, and whether some list failed."""

    path: Path
    rows: int
    failed: bool


class Fetcher:
    """Reads the lists over HTTP (``urllib``), with the base URLs from the environment.

    Args:
        environ: where the base URL overrides are read.
        today: the date rows are stamped with when a list states none.
    """

    def __init__(self, environ: Mapping[str, str] = os.environ, today: Optional[str] = None) -> None:
        self.environ = environ
        self.today = today or datetime.now(UTC).date().isoformat()
        self.limit, self.deadline_s = fetching.MAX_BODY_BYTES, fetching.SOURCE_DEADLINE_S
        self.deadline = fetching.Deadline(self.deadline_s)

    def start(self) -> None:
        """Start the clock of the next list (each has :attr:`deadline_s` for all its pages)."""
        self.deadline = fetching.Deadline(self.deadline_s)

    def base(self, source: vendors.PriceSource) -> str:
        """The base URL of ``source`` (its override, else its default)."""
        return (self.environ.get(source.env) or source.url).rstrip("/")

    def get(self, url: str) -> bytes:
        """The body at ``url``.

        Raises:
            BackendError: the request failed (naming the URL and what the server said).
        """
        return fetching.read(url, shown_url(url), deadline=self.deadline, limit=self.limit,
                             headers={"User-Agent": "omnidist-catalog-refresh", "Accept": "application/json, text/csv"})

    def json(self, url: str) -> Any:
        """The JSON document at ``url``."""
        body = fetching.text(self.get(url), shown_url(url))
        try:
            return json.loads(body)
        except ValueError as exc:
            raise BackendError(f"{shown_url(url)}: not JSON ({exc})") from None


def shown_url(url: str) -> str:
    """``url`` without its ``key=`` query value."""
    return re.sub(r"([?&]key=)[^&]+", r"\1…", url)


def price_value(text: Any) -> Optional[float]:
    """A price, or ``None`` (blank, not a number, negative, not finite)."""
    return fetching.price(text)


def portable_accelerator(name: str) -> Optional[str]:
    """The portable name of a list's accelerator name, or ``None`` when it has none."""
    try:
        return accelerators.canonical_name(name)
    except ValueError:
        return None


# --- skypilot-catalog ------------------------------------------------------------------------------

SKYPILOT_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master"
SKYPILOT_ENV = "OMNIDIST_SKYPILOT_CATALOG_URL"


def skypilot_source(vendor: str, service: str, path: str, title: str) -> vendors.PriceSource:
    """A vendor's VM file of the ``skypilot-org/skypilot-catalog`` CSVs (on-demand and spot, per
    region; refreshed by that project's scheduled jobs; no key), read first (``--source skypilot``)."""
    def read(fetch: Fetcher, base: str, regions: Optional[Sequence[str]], key: str) -> list[Row]:
        return skypilot_rows(fetch, base, path, vendor, service, regions)

    return vendors.PriceSource(name="skypilot", title=f"skypilot-catalog {path} ({title})", url=SKYPILOT_URL,
                               env=SKYPILOT_ENV, read=read, order=0)


def skypilot_rows(fetch: Fetcher, base: str, path: str, cloud: str, service: str,
                  regions: Optional[Sequence[str]]) -> list[Row]:
    """Hosts and GPUs of the skypilot-catalog VM file at ``base/path`` (per GPU: the price of the
    smallest count over the count), per region (the cheapest zone), with each region marked complete."""
    rows: list[Row] = []
    source = f"skypilot-org/skypilot-catalog {path}"
    text = fetching.text(fetch.get(f"{base}/{path}"), source)
    needed = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "Price", "SpotPrice")
    _, reader = fetching.csv_rows(text, needed, f"{source}: not a skypilot-catalog VM file")
    best: dict[tuple[str, str, str], tuple[int, Optional[float], Optional[float]]] = {}
    seen_regions: set[str] = set()
    for cells in reader:
        region = cells["Region"]
        if regions and region not in regions:
            continue
        seen_regions.add(region)
        price, spot = price_value(cells["Price"]), price_value(cells["SpotPrice"])
        if price == UNAVAILABLE_SENTINEL:
            continue  # not offered there
        spot = None if spot == UNAVAILABLE_SENTINEL else spot
        if cells["InstanceType"]:
            key, count = ("machine", cells["InstanceType"], region), 1
        else:
            portable = portable_accelerator(cells["AcceleratorName"] or "")
            if portable is None:
                continue  # TPUs and GPUs without a portable name
            count = fetching.count(cells["AcceleratorCount"])
            if count is None:
                continue  # a count that is no count (abc, 1e999, 0)
            key = ("accelerator", portable, region)
            price = None if price is None else price / count
            spot = None if spot is None else spot / count
        known = best.get(key)
        if known is None or count < known[0] or (count == known[0] and _cheaper(price, known[1])):
            best[key] = (count, price, spot)
    rows += [Row(cloud=cloud, service=service, region=region, kind=kind, name=name, on_demand=price, spot=spot,
                 source=source, date=fetch.today) for (kind, name, region), (_, price, spot) in best.items()]
    rows += [Row(cloud=cloud, service=service, region=region, kind="region", name=region, source=source,
                 date=fetch.today) for region in sorted(seen_regions)]
    return rows


def _cheaper(price: Optional[float], than: Optional[float]) -> bool:
    return price is not None and (than is None or price < than)


# --- the refresh ------------------------------------------------------------------------------------------

def source_names() -> list[str]:
    """What ``--source`` may name: the installed vendors' lists, in reading order."""
    return list(dict.fromkeys(source.name for _, source in vendors.sources()))


def api_keys(given: Iterable[str]) -> dict[str, str]:
    """``--api-key NAME=KEY`` values -> ``{NAME: KEY}``.

    Raises:
        ValidationError: one without ``=``, or naming no list.
    """
    found = {}
    for item in given:
        name, sep, key = item.partition("=")
        if not sep or name not in source_names():
            raise ValidationError(f"expected LIST=KEY with LIST one of {', '.join(source_names())}, got "
                                  f"{name if sep else '(no =)'!r}", path="--api-key")
        found[name] = key
    return found


def refresh(sources: Optional[Iterable[str]] = None, *, regions: Optional[Sequence[str]] = None,
            api_keys: Optional[Mapping[str, str]] = None, output: Optional[Path] = None,
            say: Callable[[str], None] = lambda _: None, environ: Mapping[str, str] = os.environ,
            fetch: Optional[Fetcher] = None) -> Refreshed:
    """Read the price lists and write the rows to ``output`` (default: the user catalog).

    Rows of a price list (a ``service``) this refresh rebuilt replace that list's rows of the
    file; the file's other rows stay. A list that needs a key it was not given (``api_keys`` by
    list name, else its :attr:`~omnidist.placement.vendors.PriceSource.key_env`) is skipped, saying
    so; one that fails is reported and the rest still written.
    """
    fetch = fetch or Fetcher(environ)
    chosen = None if sources is None else set(sources)
    wanted = [(vendor, source) for vendor, source in vendors.sources() if chosen is None or source.name in chosen]
    path = output or prices.user_catalog(environ)
    fresh: list[Row] = []
    failed = False
    for vendor, source in wanted:
        label = f"{source.name} ({vendor.name})"
        key = (api_keys or {}).get(source.name) or (environ.get(source.key_env, "") if source.key_env else "")
        if source.key_env and not key:
            say(f"skipped {label}: the {source.title} needs an API key (--api-key {source.name}=KEY or "
                f"{source.key_env})")
            continue
        fetch.start()
        try:
            read = functools.partial(source.read, fetch, fetch.base(source), regions, key)
            found = fetching.guarded(source.title, read)
        except BackendError as exc:
            failed = True
            say(f"failed {label} ({source.title}): {exc}; its rows are left as they were")
            continue
        say(f"read {label}: {len(found)} rows from the {source.title}")
        fresh += found
    rebuilt = {row.service for row in fresh}
    kept = [row for row in (prices.read_rows(path) if path.is_file() else []) if row.service not in rebuilt]
    merged = prices.Catalog([*kept, *fresh]).rows
    prices.write_rows(path, merged)
    return Refreshed(path=path, rows=len(merged), failed=failed)
