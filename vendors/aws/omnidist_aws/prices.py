"""Where AWS's prices come from: the rows this kit ships (``prices.csv`` beside this module: the
SageMaker ``ml.*`` instance list) and the list ``omnidist catalog refresh`` reads.

- **aws** — the AWS Price List bulk offer file of Amazon SageMaker (``ML Instance`` products of the
  ``Training`` component, on-demand). No key. ``OMNIDIST_AWS_PRICING_URL`` points it elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from omnidist.kit import BackendError, PriceSource, price_value
from omnidist.kit import PriceRow as Row
from omnidist_aws.vendor import CLOUD

if TYPE_CHECKING:
    from omnidist.kit import PriceFetcher

SAGEMAKER_PRICES = "amazon_sagemaker"
"""The price list of SageMaker's ``ml.*`` instances (the catalog's ``service``)."""

def from_aws(fetch: PriceFetcher, base: str, regions: Optional[Sequence[str]], key: str) -> list[Row]:
    """SageMaker training instances (``ML Instance`` products of the ``Training`` component), on demand."""
    base = f"{base}/offers/v1.0/aws/AmazonSageMaker/current"
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
            rows.append(Row(cloud=CLOUD, service=SAGEMAKER_PRICES, region=region, kind="machine", name=name,
                            on_demand=price, source="AWS Price List API (AmazonSageMaker offer file, Training)",
                            date=date))
    return rows


def _aws_price(terms: Mapping[str, Any]) -> Optional[float]:
    for term in terms.values():
        for dimension in (term.get("priceDimensions") or {}).values():
            if dimension.get("unit", "Hrs").lower().startswith("hr"):
                return price_value((dimension.get("pricePerUnit") or {}).get("USD"))
    return None


PRICE_LIST = PriceSource(name="aws", title="AWS Price List (Amazon SageMaker bulk offer file)",
                         url="https://pricing.us-east-1.amazonaws.com", env="OMNIDIST_AWS_PRICING_URL", read=from_aws)

PRICE_LISTS = (PRICE_LIST,)
"""The lists ``omnidist catalog refresh`` reads for this kit (named by :data:`omnidist_aws.vendor.VENDOR`)."""
