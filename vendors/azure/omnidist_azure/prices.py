"""Where Azure's prices come from: the rows this kit ships (``prices.csv`` beside this module:
the Azure VM list) and the lists ``omnidist catalog refresh`` reads.

- **skypilot** — the ``skypilot-org/skypilot-catalog`` Azure VM file (on-demand and spot, per
  region). No key.
- **azure** — the Azure Retail Prices API (``prices.azure.com/api/retail/prices``, OData
  ``$filter``, pages linked by ``NextPageLink``): Linux VM meters, spot from the ``Spot`` SKUs. No
  key. ``OMNIDIST_AZURE_PRICES_URL`` points it elsewhere.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from omnidist.kit import (
    PRICE_LIST_MAX_PAGES,
    BackendError,
    PriceSource,
    price_value,
    shown_url,
    skypilot_source,
)
from omnidist.kit import (
    PriceRow as Row,
)
from omnidist_azure.vendor import CLOUD

if TYPE_CHECKING:
    from omnidist.kit import PriceFetcher

VM_PRICES = "azure_vm"
"""The price list of Azure VMs (the catalog's ``service``)."""

AZURE_FILTER = "serviceName eq 'Virtual Machines' and priceType eq 'Consumption'"
"""The OData filter of VM meters billed by the hour (``Consumption``: not reservations)."""


def _azure_pages(fetch: PriceFetcher, base: str, regions: Optional[Sequence[str]]) -> Iterator[Mapping[str, Any]]:
    for region in regions or (None,):
        where = AZURE_FILTER + (f" and armRegionName eq '{region}'" if region else "")
        url: Optional[str] = (f"{base}/api/retail/prices?"
                              + urllib.parse.urlencode({"$filter": where}, quote_via=urllib.parse.quote))
        for _ in range(PRICE_LIST_MAX_PAGES):
            if not url:
                break
            page = fetch.json(url)
            if not isinstance(page, Mapping) or not isinstance(page.get("Items"), list):
                raise BackendError(f"{shown_url(url)}: not a Retail Prices page (no Items list)")
            yield from page["Items"]
            url = page.get("NextPageLink") or None


def from_azure(fetch: PriceFetcher, base: str, regions: Optional[Sequence[str]], key: str) -> list[Row]:
    """Linux VM prices per region (``Windows`` products dropped), spot from the ``Spot`` SKUs;
    ``Low Priority`` meters (Azure ML's dedicated low-priority nodes) are left out."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for item in _azure_pages(fetch, base, regions):
        sku, region = item.get("armSkuName") or "", item.get("armRegionName") or ""
        product, meter = item.get("productName") or "", item.get("skuName") or ""
        if not sku.startswith("Standard_") or not region or "Windows" in product or "Low Priority" in meter:
            continue
        if (item.get("unitOfMeasure") or "1 Hour") != "1 Hour" or item.get("currencyCode", "USD") != "USD":
            continue
        price = price_value(item.get("retailPrice", item.get("unitPrice")))
        entry = found.setdefault((sku, region), {"date": ""})
        entry["spot" if meter.endswith(" Spot") else "on_demand"] = price
        entry["date"] = max(entry["date"], (item.get("effectiveStartDate") or "")[:10])
    source = "Azure Retail Prices API (prices.azure.com, Linux VM meters)"
    rows = [Row(cloud=CLOUD, service=VM_PRICES, region=region, kind="machine", name=sku,
                on_demand=entry.get("on_demand"), spot=entry.get("spot"), source=source,
                date=entry["date"] or fetch.today) for (sku, region), entry in found.items()]
    rows += [Row(cloud=CLOUD, service=VM_PRICES, region=r, kind="region", name=r, source=source, date=fetch.today)
             for r in sorted({region for _, region in found})]
    return rows


RETAIL_PRICES = PriceSource(name="azure", title="Azure Retail Prices API", url="https://prices.azure.com",
                            env="OMNIDIST_AZURE_PRICES_URL", read=from_azure)

PRICE_LISTS = (skypilot_source(CLOUD, VM_PRICES, "catalogs/v7/azure/vms.csv", "Azure VMs"), RETAIL_PRICES)
"""The lists ``omnidist catalog refresh`` reads for this kit (named by :data:`omnidist_azure.vendor.VENDOR`)."""
