"""Where Google Cloud's prices come from: the rows this kit ships (``prices.csv`` beside this
module: Compute Engine, Vertex AI and GKE lists) and the lists ``omnidist catalog refresh`` reads.

- **skypilot** — the ``skypilot-org/skypilot-catalog`` GCP VM file (Compute Engine VMs and GPUs,
  on-demand and spot, per region). No key.
- **gcp** — the Cloud Billing Catalog API (``cloudbilling.googleapis.com/v1/services/…/skus``) for
  Compute Engine: per-family core and RAM rates multiplied out for each machine of
  :data:`~omnidist_google.compute_engine.COMPUTE_ENGINE`, GPUs per GPU. **Needs an API key**
  (``--api-key gcp=KEY`` / ``OMNIDIST_GCP_API_KEY``); skipped without one. ``OMNIDIST_GCP_BILLING_URL``
  points it elsewhere.

How the services on Google Cloud bill from these lists is each backend's to say; this kit says
only how plain Compute Engine VMs bill (:data:`omnidist_google.vendor.COMPUTE_ENGINE_BILLING`).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from omnidist.kit import (
    PRICE_LIST_MAX_PAGES,
    BackendError,
    PriceSource,
    portable_accelerator,
    shown_url,
    skypilot_source,
)
from omnidist.kit import (
    PriceRow as Row,
)
from omnidist_google.compute_engine import COMPUTE_ENGINE
from omnidist_google.vendor import CLOUD, COMPUTE_ENGINE_PRICES

if TYPE_CHECKING:
    from omnidist.kit import PriceFetcher

COMPUTE_ENGINE_SERVICE = "services/6F81-5844-456A"
"""Compute Engine's service in the Cloud Billing Catalog."""

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


def _gcp_skus(fetch: PriceFetcher, base: str, key: str) -> Iterator[Mapping[str, Any]]:
    token = ""
    for _ in range(PRICE_LIST_MAX_PAGES):
        query = {"key": key, **({"pageToken": token} if token else {})}
        url = f"{base}/v1/{COMPUTE_ENGINE_SERVICE}/skus?{urllib.parse.urlencode(query)}"
        page = fetch.json(url)
        if not isinstance(page, Mapping) or not isinstance(page.get("skus", []), list):
            raise BackendError(f"{shown_url(url)}: not a skus.list page")
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
        return portable_accelerator(f"{model}-MEGA")
    if match["memory"] and model == "A100" and match["memory"] == "80":
        return "A100-80GB"
    return portable_accelerator(model)


def from_gcp(fetch: PriceFetcher, base: str, regions: Optional[Sequence[str]], key: str) -> list[Row]:
    """Compute Engine from its billing SKUs: GPUs per GPU, and each machine of omnidist's catalog
    priced as its vCPUs times its family's core rate plus its memory times the RAM rate."""
    rates: dict[tuple[str, str, str, str], float] = {}  # (kind, name or family/part, region, usage)
    dates: dict[str, str] = {}
    for sku in _gcp_skus(fetch, base, key):
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
                rows.append(Row(cloud=CLOUD, service=COMPUTE_ENGINE_PRICES, region=region, kind="accelerator",
                                name=name,
                                on_demand=rates[(kind, name, region, "on_demand")],
                                spot=rates.get((kind, name, region, "spot")), source=source,
                                date=dates[region] or fetch.today))
        for machine in COMPUTE_ENGINE.machines:
            per = {usage: _machine_price(rates, series(machine.name), machine.vcpus, machine.memory_gb, region, usage)
                   for usage in ("on_demand", "spot")}
            if per["on_demand"] is not None:
                rows.append(Row(cloud=CLOUD, service=COMPUTE_ENGINE_PRICES, region=region, kind="machine",
                                name=machine.name, on_demand=per["on_demand"], spot=per["spot"], source=source,
                                date=dates[region] or fetch.today))
    return rows


def _machine_price(rates: Mapping[tuple[str, str, str, str], float], kind: str, vcpus: int, memory_gb: float,
                   region: str, usage: str) -> Optional[float]:
    core, ram = rates.get(("part", f"{kind}/core", region, usage)), rates.get(("part", f"{kind}/ram", region, usage))
    if core is None or ram is None:
        return None
    return round(core * vcpus + ram * memory_gb, 6)


BILLING_CATALOG = PriceSource(
    name="gcp", title="GCP Cloud Billing Catalog API (Compute Engine)", url="https://cloudbilling.googleapis.com",
    env="OMNIDIST_GCP_BILLING_URL", key_env="OMNIDIST_GCP_API_KEY", read=from_gcp)

PRICE_LISTS = (skypilot_source(CLOUD, COMPUTE_ENGINE_PRICES, "catalogs/v7/gcp/vms.csv", "Compute Engine VMs"),
               BILLING_CATALOG)
"""The lists ``omnidist catalog refresh`` reads for this kit (named by :data:`omnidist_google.vendor.VENDOR`)."""
