"""``omnidist catalog refresh``: rebuild price rows from the clouds' public price lists.

Four lists, each read in its documented shape:

- **skypilot** — the ``skypilot-org/skypilot-catalog`` CSVs (Compute Engine VMs and GPUs, Azure
  VMs; on-demand and spot, per region; refreshed by that project's scheduled jobs). No key.
- **azure** — the Azure Retail Prices API (``prices.azure.com/api/retail/prices``, OData
  ``$filter``, pages linked by ``NextPageLink``): Linux VM meters, spot from the ``Spot`` SKUs.
  Azure ML compute bills these VM meters. No key.
- **gcp** — the Cloud Billing Catalog API (``cloudbilling.googleapis.com/v1/services/…/skus``) for
  Compute Engine: per-family core and RAM rates multiplied out for each machine omnidist knows, GPUs
  per GPU. **Needs an API key** (``--gcp-api-key`` / ``OMNIDIST_GCP_API_KEY``); skipped without one.
- **aws** — the AWS Price List bulk offer file of Amazon SageMaker (``ML Instance`` products of the
  ``Training`` component, on-demand). No key.

A list that cannot be read is reported and leaves the rows it would have replaced as they were;
the others are still written. Every row says where it came from and the date the list states
(else the day it was read). Base URLs can be pointed elsewhere (mirrors, tests) with
``OMNIDIST_SKYPILOT_CATALOG_URL``, ``OMNIDIST_AZURE_PRICES_URL``, ``OMNIDIST_GCP_BILLING_URL`` and
``OMNIDIST_AWS_PRICING_URL``.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist.clouds.compute_engine import COMPUTE_ENGINE
from omnidist.errors import BackendError
from omnidist.model import accelerators
from omnidist.placement import fetching, prices
from omnidist.placement.prices import Row

TIMEOUT_S = fetching.REQUEST_TIMEOUT_S
"""How long one request to a price list may wait for an answer (a list's total time and size are
bounded too: :mod:`omnidist.placement.fetching`)."""

MAX_PAGES = 2000
"""The most pages one list is followed for (a guard against a link that loops)."""

SKYPILOT_FILES = {"gcp": "catalogs/v7/gcp/vms.csv", "azure": "catalogs/v7/azure/vms.csv"}
"""Cloud -> the skypilot-catalog file read."""

UNAVAILABLE_SENTINEL = 700.0
"""The price skypilot-catalog writes for an item a zone does not offer (not a price)."""

COMPUTE_ENGINE_SERVICE = "services/6F81-5844-456A"
"""Compute Engine's service in the Cloud Billing Catalog."""


@attrs.frozen(kw_only=True)
class Source:
    """One public price list.

    Attributes:
        name: how ``--source`` names it.
        title: what it is, in words.
        url: its default base URL.
        env: the variable that points it elsewhere.
        needs_key: it needs an API key.
    """

    name: str
    title: str
    url: str
    env: str
    needs_key: bool = False


SOURCES: dict[str, Source] = {
    "aws": Source(name="aws", title="AWS Price List (Amazon SageMaker bulk offer file)",
                  url="https://pricing.us-east-1.amazonaws.com", env="OMNIDIST_AWS_PRICING_URL"),
    "azure": Source(name="azure", title="Azure Retail Prices API", url="https://prices.azure.com",
                    env="OMNIDIST_AZURE_PRICES_URL"),
    "gcp": Source(name="gcp", title="GCP Cloud Billing Catalog API (Compute Engine)",
                  url="https://cloudbilling.googleapis.com", env="OMNIDIST_GCP_BILLING_URL", needs_key=True),
    "skypilot": Source(name="skypilot", title="skypilot-catalog CSVs (Compute Engine and Azure VMs)",
                       url="https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master",
                       env="OMNIDIST_SKYPILOT_CATALOG_URL"),
}
"""The lists, by name; read in the order of :data:`ORDER` (a later list's row wins for the same item)."""

ORDER = ("skypilot", "azure", "gcp", "aws")


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

    def base(self, source: str) -> str:
        """The base URL of ``source`` (its override, else its default)."""
        found = SOURCES[source]
        return (self.environ.get(found.env) or found.url).rstrip("/")

    def get(self, url: str) -> bytes:
        """The body at ``url``.

        Raises:
            BackendError: the request failed (naming the URL and what the server said).
        """
        return fetching.read(url, _shown(url), deadline=self.deadline, limit=self.limit,
                             headers={"User-Agent": "omnidist-catalog-refresh", "Accept": "application/json, text/csv"})

    def json(self, url: str) -> Any:
        """The JSON document at ``url``."""
        body = fetching.text(self.get(url), _shown(url))
        try:
            return json.loads(body)
        except ValueError as exc:
            raise BackendError(f"{_shown(url)}: not JSON ({exc})") from None


def _shown(url: str) -> str:
    """``url`` without its ``key=`` query value."""
    return re.sub(r"([?&]key=)[^&]+", r"\1…", url)


def _float(text: Any) -> Optional[float]:
    """A price, or ``None`` (blank, not a number, negative, not finite)."""
    return fetching.price(text)


def _portable(name: str) -> Optional[str]:
    try:
        return accelerators.canonical_name(name)
    except ValueError:
        return None


# --- skypilot-catalog ------------------------------------------------------------------------------

def from_skypilot(fetch: Fetcher, regions: Optional[Sequence[str]]) -> list[Row]:
    """Compute Engine hosts and GPUs (per GPU: the price of the smallest count over the count) and
    Azure VMs, per region (the cheapest zone), with each region marked complete."""
    rows: list[Row] = []
    for cloud, path in SKYPILOT_FILES.items():
        source = f"skypilot-org/skypilot-catalog {path}"
        text = fetching.text(fetch.get(f"{fetch.base('skypilot')}/{path}"), source)
        needed = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "Price", "SpotPrice")
        _, reader = fetching.csv_rows(text, needed, f"{source}: not a skypilot-catalog VM file")
        service = "compute_engine" if cloud == "gcp" else "azure_vm"
        best: dict[tuple[str, str, str], tuple[int, Optional[float], Optional[float]]] = {}
        seen_regions: set[str] = set()
        for cells in reader:
            region = cells["Region"]
            if regions and region not in regions:
                continue
            seen_regions.add(region)
            price, spot = _float(cells["Price"]), _float(cells["SpotPrice"])
            if price == UNAVAILABLE_SENTINEL:
                continue  # not offered there
            spot = None if spot == UNAVAILABLE_SENTINEL else spot
            if cells["InstanceType"]:
                key, count = ("machine", cells["InstanceType"], region), 1
            else:
                portable = _portable(cells["AcceleratorName"] or "")
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


# --- Azure Retail Prices API -------------------------------------------------------------------------

AZURE_FILTER = "serviceName eq 'Virtual Machines' and priceType eq 'Consumption'"
"""The OData filter of VM meters billed by the hour (``Consumption``: not reservations)."""


def _azure_pages(fetch: Fetcher, regions: Optional[Sequence[str]]) -> Iterator[Mapping[str, Any]]:
    for region in regions or (None,):
        where = AZURE_FILTER + (f" and armRegionName eq '{region}'" if region else "")
        url: Optional[str] = (f"{fetch.base('azure')}/api/retail/prices?"
                              + urllib.parse.urlencode({"$filter": where}, quote_via=urllib.parse.quote))
        for _ in range(MAX_PAGES):
            if not url:
                break
            page = fetch.json(url)
            if not isinstance(page, Mapping) or not isinstance(page.get("Items"), list):
                raise BackendError(f"{_shown(url)}: not a Retail Prices page (no Items list)")
            yield from page["Items"]
            url = page.get("NextPageLink") or None


def from_azure(fetch: Fetcher, regions: Optional[Sequence[str]]) -> list[Row]:
    """Linux VM prices per region (``Windows`` products dropped), spot from the ``Spot`` SKUs;
    ``Low Priority`` meters (Azure ML's dedicated low-priority nodes) are left out."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for item in _azure_pages(fetch, regions):
        sku, region = item.get("armSkuName") or "", item.get("armRegionName") or ""
        product, meter = item.get("productName") or "", item.get("skuName") or ""
        if not sku.startswith("Standard_") or not region or "Windows" in product or "Low Priority" in meter:
            continue
        if (item.get("unitOfMeasure") or "1 Hour") != "1 Hour" or item.get("currencyCode", "USD") != "USD":
            continue
        price = _float(item.get("retailPrice", item.get("unitPrice")))
        entry = found.setdefault((sku, region), {"date": ""})
        entry["spot" if meter.endswith(" Spot") else "on_demand"] = price
        entry["date"] = max(entry["date"], (item.get("effectiveStartDate") or "")[:10])
    source = "Azure Retail Prices API (prices.azure.com, Linux VM meters)"
    rows = [Row(cloud="azure", service="azure_vm", region=region, kind="machine", name=sku,
                on_demand=entry.get("on_demand"), spot=entry.get("spot"), source=source,
                date=entry["date"] or fetch.today) for (sku, region), entry in found.items()]
    rows += [Row(cloud="azure", service="azure_vm", region=r, kind="region", name=r, source=source, date=fetch.today)
             for r in sorted({region for _, region in found})]
    return rows


# --- GCP Cloud Billing Catalog -----------------------------------------------------------------------

_GPU = re.compile(r"^Nvidia (?:Tesla )?(?P<model>[A-Z]\d+)(?: (?P<memory>\d+)GB)?(?P<mega> Mega)?(?: Plus)? GPU",
                  re.I)
_PART = re.compile(r"^(?P<series>.+?) Instance (?P<part>Core|Ram) running in ", re.I)
"""A per-vCPU or per-GB SKU: ``N1 Predefined Instance Core running in Americas``, ``A2 Instance Ram …``."""

_SERIES_OF_KIND = {"megagpu": " mega", "ultragpu": " ultra"}
"""Machine name part -> what a series' SKUs add to the family (A3 Mega, A2 Ultra, A3 Ultra)."""


def series(machine: str) -> str:
    """The billing series of a Compute Engine machine, as its core and RAM SKUs name it
    (``n1-standard-8`` -> ``n1 predefined``, ``a3-megagpu-8g`` -> ``a3 mega``); a machine whose SKUs
    name it otherwise gets no price (unknown, never another series' rate)."""
    family, kind = (machine.split("-") + [""])[:2]
    if family == "n1":
        return "n1 predefined"
    extra = "" if (family, kind) == ("a2", "megagpu") else _SERIES_OF_KIND.get(kind, "")
    return family + extra


def _unit_price(sku: Mapping[str, Any]) -> tuple[Optional[float], str]:
    """The per-unit price of a SKU's current pricing (the first tier's), and its date."""
    info = (sku.get("pricingInfo") or [{}])[0]
    rates = (info.get("pricingExpression") or {}).get("tieredRates") or []
    if not rates:
        return None, ""
    price = rates[-1].get("unitPrice") or {}
    if price.get("currencyCode", "USD") != "USD":
        return None, ""
    value = int(price.get("units") or 0) + int(price.get("nanos") or 0) / 1e9
    return value, (info.get("effectiveTime") or "")[:10]


def _gcp_skus(fetch: Fetcher, key: str) -> Iterator[Mapping[str, Any]]:
    token = ""
    for _ in range(MAX_PAGES):
        query = {"key": key, **({"pageToken": token} if token else {})}
        url = f"{fetch.base('gcp')}/v1/{COMPUTE_ENGINE_SERVICE}/skus?{urllib.parse.urlencode(query)}"
        page = fetch.json(url)
        if not isinstance(page, Mapping) or not isinstance(page.get("skus", []), list):
            raise BackendError(f"{_shown(url)}: not a skus.list page")
        yield from page.get("skus", [])
        token = page.get("nextPageToken") or ""
        if not token:
            return


def _gpu_name(description: str) -> Optional[str]:
    match = _GPU.match(description.removeprefix("Spot Preemptible "))
    if not match:
        return None
    model = match["model"].upper()
    if match["mega"]:
        return _portable(f"{model}-MEGA")
    if match["memory"] and model == "A100" and match["memory"] == "80":
        return "A100-80GB"
    return _portable(model)


def from_gcp(fetch: Fetcher, regions: Optional[Sequence[str]], key: str) -> list[Row]:
    """Compute Engine from its billing SKUs: GPUs per GPU, and each machine of omnidist's catalog
    priced as its vCPUs times its family's core rate plus its memory times the RAM rate."""
    rates: dict[tuple[str, str, str, str], float] = {}  # (kind, name or family/part, region, usage)
    dates: dict[str, str] = {}
    for sku in _gcp_skus(fetch, key):
        category = sku.get("category") or {}
        usage = {"OnDemand": "on_demand", "Preemptible": "spot"}.get(category.get("usageType", ""))
        if usage is None or category.get("resourceFamily") != "Compute":
            continue
        description = sku.get("description") or ""
        price, date = _unit_price(sku)
        if price is None:
            continue
        gpu = _gpu_name(description) if category.get("resourceGroup") == "GPU" else None
        part = _PART.match(description.removeprefix("Spot Preemptible "))
        for region in sku.get("serviceRegions") or []:
            if regions and region not in regions:
                continue
            dates[region] = max(dates.get(region, ""), date)
            if gpu:
                rates[("accelerator", gpu, region, usage)] = price
            elif part:
                rates[("part", f"{part['series'].lower()}/{part['part'].lower()}", region, usage)] = price
    source = "GCP Cloud Billing Catalog API (Compute Engine SKUs; machines = vCPUs x core + GB x RAM rates)"
    rows = []
    for region in sorted(dates):
        for (kind, name, where, usage), _ in list(rates.items()):
            if kind == "accelerator" and where == region and usage == "on_demand":
                rows.append(Row(cloud="gcp", service="compute_engine", region=region, kind="accelerator", name=name,
                                on_demand=rates[(kind, name, region, "on_demand")],
                                spot=rates.get((kind, name, region, "spot")), source=source,
                                date=dates[region] or fetch.today))
        for machine in COMPUTE_ENGINE.machines:
            price = {usage: _machine_price(rates, series(machine.name), machine.vcpus, machine.memory_gb, region, usage)
                     for usage in ("on_demand", "spot")}
            if price["on_demand"] is not None:
                rows.append(Row(cloud="gcp", service="compute_engine", region=region, kind="machine",
                                name=machine.name, on_demand=price["on_demand"], spot=price["spot"], source=source,
                                date=dates[region] or fetch.today))
    return rows


def _machine_price(rates: Mapping[tuple[str, str, str, str], float], kind: str, vcpus: int, memory_gb: float,
                   region: str, usage: str) -> Optional[float]:
    core, ram = rates.get(("part", f"{kind}/core", region, usage)), rates.get(("part", f"{kind}/ram", region, usage))
    if core is None or ram is None:
        return None
    return round(core * vcpus + ram * memory_gb, 6)


# --- AWS Price List ------------------------------------------------------------------------------------

def from_aws(fetch: Fetcher, regions: Optional[Sequence[str]]) -> list[Row]:
    """SageMaker training instances (``ML Instance`` products of the ``Training`` component), on demand."""
    base = f"{fetch.base('aws')}/offers/v1.0/aws/AmazonSageMaker/current"
    offers = [fetch.json(f"{base}/{region}/index.json") for region in regions] if regions else \
        [fetch.json(f"{base}/index.json")]
    rows = []
    for offer in offers:
        if not isinstance(offer, Mapping) or not isinstance(offer.get("products"), Mapping):
            raise BackendError(f"{base}: not a Price List offer file (no products)")
        date = (offer.get("publicationDate") or "")[:10] or fetch.today
        terms = (offer.get("terms") or {}).get("OnDemand") or {}
        for sku, product in offer["products"].items():
            attributes = product.get("attributes") or {}
            if product.get("productFamily") != "ML Instance" or "train" not in attributes.get("component", "").lower():
                continue
            name, region = attributes.get("instanceName", ""), attributes.get("regionCode", "")
            if not name.startswith("ml.") or not region or (regions and region not in regions):
                continue
            price = _aws_price(terms.get(sku) or {})
            rows.append(Row(cloud="aws", service="amazon_sagemaker", region=region, kind="machine", name=name,
                            on_demand=price, source="AWS Price List API (AmazonSageMaker offer file, Training)",
                            date=date))
    return rows


def _aws_price(terms: Mapping[str, Any]) -> Optional[float]:
    for term in terms.values():
        for dimension in (term.get("priceDimensions") or {}).values():
            if dimension.get("unit", "Hrs").lower().startswith("hr"):
                return _float((dimension.get("pricePerUnit") or {}).get("USD"))
    return None


# --- the refresh ------------------------------------------------------------------------------------------

def refresh(sources: Optional[Iterable[str]] = None, *, regions: Optional[Sequence[str]] = None,
            gcp_api_key: Optional[str] = None, output: Optional[Path] = None,
            say: Callable[[str], None] = lambda _: None, environ: Mapping[str, str] = os.environ,
            fetch: Optional[Fetcher] = None) -> Refreshed:
    """Read the price lists and write the rows to ``output`` (default: the user catalog).

    Rows of a price list (``compute_engine``, ``azure_vm``, ``amazon_sagemaker``) this refresh rebuilt
    replace that list's rows of the file; the file's other rows stay. A list that needs a key it
    was not given is skipped, saying so; one that fails is reported and the rest still written.
    """
    fetch = fetch or Fetcher(environ)
    wanted = [name for name in ORDER if sources is None or name in set(sources)]
    path = output or prices.user_catalog(environ)
    fresh: list[Row] = []
    failed = False
    for name in wanted:
        source = SOURCES[name]
        if source.needs_key and not gcp_api_key:
            say(f"skipped {name}: the {source.title} needs an API key (--gcp-api-key or OMNIDIST_GCP_API_KEY)")
            continue
        fetch.start()
        try:
            found = fetching.guarded(source.title, {
                "skypilot": lambda: from_skypilot(fetch, regions), "azure": lambda: from_azure(fetch, regions),
                "gcp": lambda: from_gcp(fetch, regions, gcp_api_key or ""),
                "aws": lambda: from_aws(fetch, regions)}[name])
        except BackendError as exc:
            failed = True
            say(f"failed {name} ({source.title}): {exc}; its rows are left as they were")
            continue
        say(f"read {name}: {len(found)} rows from the {source.title}")
        fresh += found
    rebuilt = {row.service for row in fresh}
    kept = [row for row in (prices.read_rows(path) if path.is_file() else []) if row.service not in rebuilt]
    merged = prices.Catalog([*kept, *fresh]).rows
    prices.write_rows(path, merged)
    return Refreshed(path=path, rows=len(merged), failed=failed)
