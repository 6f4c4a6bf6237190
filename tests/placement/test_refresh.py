"""``omnidist catalog refresh``: the four public price lists, each served by a local server in the
shape its documentation gives (skypilot-catalog CSVs, the Azure Retail Prices API, the Cloud
Billing Catalog API, the AWS Price List bulk offer file), read into catalog rows."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

import pytest

from omnidist.placement import prices, refresh, vendors
from omnidist.testing import FakeServer, Recorded, Response
from omnidist.testing.cli import run_cli

GCP_CSV = """InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice
n1-standard-8,8.0,30.0,,,,us-central1,us-central1-a,0.379998,0.08
n1-standard-8,8.0,30.0,,,,us-central1,us-central1-b,0.379998,0.08
a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-a,0.73948,0.29576
,,,A100,1,A100,us-central1,us-central1-a,2.933908,1.1736
,,,A100,2,A100,us-central1,us-central1-a,5.867816,2.3472
,,,V100,1,V100,us-central1,us-central1-a,2.48,
,,,tpu-v6e-1,1,tpu-v6e-1,asia-east1,asia-east1-c,700.0,700.0
n4-standard-2,2.0,8.0,,,,asia-northeast2,asia-northeast2-a,,0.02
"""

AZURE_CSV = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,Generation
Standard_NC4as_T4_v3,T4,1,4,28,T4,0.526,0.1052,eastus,V2
Standard_D2_v3,,,2,8,,0.096,0.0192,eastus,V1
"""


def azure_item(sku: str, meter: str, price: float, product: str = "Virtual Machines NCasT4_v3 Series",
               region: str = "eastus") -> dict[str, Any]:
    """One Retail Prices API item, as the API documents it."""
    return {"currencyCode": "USD", "tierMinimumUnits": 0.0, "retailPrice": price, "unitPrice": price,
            "armRegionName": region, "location": "US East", "effectiveStartDate": "2026-06-01T00:00:00Z",
            "meterId": "m", "meterName": meter, "productId": "p", "skuId": "s", "productName": product,
            "skuName": meter, "serviceName": "Virtual Machines", "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute",
            "unitOfMeasure": "1 Hour", "type": "Consumption", "isPrimaryMeterRegion": True, "armSkuName": sku}


AZURE_PAGES = [
    [azure_item("Standard_NC4as_T4_v3", "NC4as T4 v3", 0.55),
     azure_item("Standard_NC4as_T4_v3", "NC4as T4 v3 Spot", 0.11),
     azure_item("Standard_NC4as_T4_v3", "NC4as T4 v3", 0.79, product="Virtual Machines NCasT4_v3 Series Windows")],
    [azure_item("Standard_NC4as_T4_v3", "NC4as T4 v3 Low Priority", 0.2),
     azure_item("Standard_ND96asr_v4", "ND96asr v4", 27.2, product="Virtual Machines NDasrA100_v4 Series")],
]


def gcp_sku(description: str, group: str, usage: str, units: int, nanos: int, regions: list[str],
            unit: str = "h") -> dict[str, Any]:
    """One Cloud Billing Catalog SKU, as ``services.skus.list`` documents it."""
    return {"name": f"services/6F81-5844-456A/skus/{abs(hash(description)) % 10**8}", "skuId": "X",
            "description": description,
            "category": {"serviceDisplayName": "Compute Engine", "resourceFamily": "Compute",
                         "resourceGroup": group, "usageType": usage},
            "serviceRegions": regions,
            "pricingInfo": [{"summary": "", "effectiveTime": "2026-05-04T12:00:00.000Z",
                             "pricingExpression": {"usageUnit": unit, "displayQuantity": 1, "baseUnit": "s",
                                                   "tieredRates": [{"startUsageAmount": 0,
                                                                    "unitPrice": {"currencyCode": "USD", "units": str(units),
                                                                                  "nanos": nanos}}]}}],
            "serviceProviderName": "Google"}


GCP_PAGES = [
    [gcp_sku("N1 Predefined Instance Core running in Americas", "N1Standard", "OnDemand", 0, 31611000,
             ["us-central1"]),
     gcp_sku("N1 Predefined Instance Ram running in Americas", "N1Standard", "OnDemand", 0, 4237000, ["us-central1"],
             unit="GiBy.h"),
     gcp_sku("Spot Preemptible N1 Predefined Instance Core running in Americas", "N1Standard", "Preemptible", 0,
             6655000, ["us-central1"])],
    [gcp_sku("Spot Preemptible N1 Predefined Instance Ram running in Americas", "N1Standard", "Preemptible", 0,
             892000, ["us-central1"], unit="GiBy.h"),
     gcp_sku("Nvidia Tesla V100 GPU running in Americas", "GPU", "OnDemand", 2, 480000000, ["us-central1"]),
     gcp_sku("Nvidia Tesla V100 GPU attached to Spot Preemptible VMs running in Americas", "GPU", "Preemptible", 0,
             992000000, ["us-central1"]),
     gcp_sku("Commitment v1: Nvidia Tesla V100 GPU in Americas for 1 Year", "GPU", "Commit1Yr", 1, 0,
             ["us-central1"]),
     gcp_sku("Nvidia A100 80GB GPU running in Americas", "GPU", "OnDemand", 3, 930000000, ["us-central1"])],
]

AWS_OFFER = {
    "formatVersion": "v1.0", "disclaimer": "…", "offerCode": "AmazonSageMaker", "version": "20260701000000",
    "publicationDate": "2026-07-01T00:00:00Z",
    "products": {
        "SKU1": {"sku": "SKU1", "productFamily": "ML Instance",
                 "attributes": {"servicecode": "AmazonSageMaker", "location": "US East (N. Virginia)",
                                "regionCode": "us-east-1", "instanceName": "ml.p4d.24xlarge", "component": "Training",
                                "usagetype": "USE1-Train:ml.p4d.24xlarge"}},
        "SKU2": {"sku": "SKU2", "productFamily": "ML Instance",
                 "attributes": {"regionCode": "us-east-1", "instanceName": "ml.p4d.24xlarge", "component": "Hosting"}},
        "SKU3": {"sku": "SKU3", "productFamily": "Storage", "attributes": {"regionCode": "us-east-1"}},
    },
    "terms": {"OnDemand": {
        "SKU1": {"SKU1.JRTCKXETXF": {"offerTermCode": "JRTCKXETXF", "sku": "SKU1",
                                      "effectiveDate": "2026-07-01T00:00:00Z",
                                      "priceDimensions": {"SKU1.JRTCKXETXF.6YS6EN2CT7": {
                                          "rateCode": "SKU1.JRTCKXETXF.6YS6EN2CT7", "unit": "Hrs",
                                          "pricePerUnit": {"USD": "25.2500000000"}, "description": "…"}}}},
        "SKU2": {"SKU2.JRTCKXETXF": {"priceDimensions": {"d": {"unit": "Hrs", "pricePerUnit": {"USD": "40.0"}}}}},
    }},
}


class PriceLists:
    """The four lists on one local server."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        server.route("GET", r"^/catalogs/v7/gcp/vms\.csv$", lambda r, m: Response(200, GCP_CSV))
        server.route("GET", r"^/catalogs/v7/azure/vms\.csv$", lambda r, m: Response(200, AZURE_CSV))
        server.route("GET", r"^/api/retail/prices$", self.azure)
        server.route("GET", r"^/v1/services/6F81-5844-456A/skus$", self.gcp)
        server.route("GET", r"^/offers/v1\.0/aws/AmazonSageMaker/current/index\.json$",
                     lambda r, m: Response(200, AWS_OFFER))

    def azure(self, record: Recorded, match: re.Match[str]) -> Response:
        page = int((record.query.get("$skip") or ["0"])[0])
        assert record.query["$filter"][0].startswith("serviceName eq 'Virtual Machines' and priceType eq 'Consumption'")
        following = page + 1 < len(AZURE_PAGES)
        query = urllib.parse.urlencode({"$filter": record.query["$filter"][0], "$skip": page + 1})
        link = f"{self.server.url}/api/retail/prices?{query}" if following else None
        return Response(200, {"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
                              "Items": AZURE_PAGES[page], "NextPageLink": link, "Count": len(AZURE_PAGES[page])})

    def gcp(self, record: Recorded, match: re.Match[str]) -> Response:
        if record.query.get("key") != ["test-key"]:
            return Response(403, {"error": {"code": 403, "message": "API key not valid"}})
        page = int((record.query.get("pageToken") or ["0"])[0])
        token = str(page + 1) if page + 1 < len(GCP_PAGES) else ""
        return Response(200, {"skus": GCP_PAGES[page], "nextPageToken": token})


@pytest.fixture
def lists(monkeypatch):
    with FakeServer() as server:
        for _, source in vendors.sources():
            monkeypatch.setenv(source.env, server.url)
        yield PriceLists(server)


def rows_of(path) -> dict[tuple[str, str, str, str], prices.Row]:
    return {r.key: r for r in prices.read_rows(path)}


def test_every_list_is_read_into_rows_with_its_source_and_date(lists, tmp_path):
    lines: list[str] = []
    done = refresh.refresh(api_keys={"gcp": "test-key"}, output=tmp_path / "prices.csv", say=lines.append)
    assert not done.failed and len(lines) == 5, lines  # skypilot's two files, then the vendors' own lists
    found = rows_of(done.path)
    # skypilot: hosts, GPUs per GPU (the smallest count), a region marked complete, the 700 sentinel skipped
    a100 = found["compute_engine", "us-central1", "accelerator", "A100"]
    assert (a100.on_demand, a100.spot) == (2.933908, 1.1736) and "skypilot-catalog" in a100.source
    assert ("compute_engine", "us-central1", "region", "us-central1") in found
    assert [k[2] for k in found if k[1] == "asia-east1"] == ["region"], "700.0 means not offered there"
    assert found["compute_engine", "asia-northeast2", "machine", "n4-standard-2"].on_demand is None
    # the Azure API wins over skypilot's Azure rows: Linux meters, spot from Spot SKUs, no Windows or Low Priority
    t4 = found["azure_vm", "eastus", "machine", "Standard_NC4as_T4_v3"]
    assert (t4.on_demand, t4.spot, t4.date) == (0.55, 0.11, "2026-06-01") and "Retail Prices API" in t4.source
    assert found["azure_vm", "eastus", "machine", "Standard_ND96asr_v4"].on_demand == 27.2
    # the billing catalog: machines from core and RAM rates, GPUs per GPU, commitments left out
    n1 = found["compute_engine", "us-central1", "machine", "n1-standard-8"]
    assert n1.on_demand == pytest.approx(8 * 0.031611 + 30 * 0.004237) and "Billing Catalog" in n1.source
    assert n1.spot == pytest.approx(8 * 0.006655 + 30 * 0.000892) and n1.date == "2026-05-04"
    v100 = found["compute_engine", "us-central1", "accelerator", "V100"]
    assert (v100.on_demand, v100.spot) == (2.48, 0.992)
    assert found["compute_engine", "us-central1", "accelerator", "A100-80GB"].on_demand == 3.93
    # the Price List: training instances only
    p4d = found["amazon_sagemaker", "us-east-1", "machine", "ml.p4d.24xlarge"]
    assert (p4d.on_demand, p4d.date) == (25.25, "2026-07-01") and "Price List" in p4d.source


def test_the_billing_catalog_needs_a_key_and_is_skipped_without_one(lists, tmp_path):
    lines: list[str] = []
    done = refresh.refresh(output=tmp_path / "prices.csv", say=lines.append)
    assert not done.failed
    assert [line.split(":")[0] for line in lines] == ["read skypilot (azure)", "read skypilot (gcp)", "read aws (aws)",
                                                      "read azure (azure)", "skipped gcp (gcp)"]
    assert "the GCP Cloud Billing Catalog API (Compute Engine) needs an API key (--api-key gcp=KEY" in lines[4]
    assert not lists.server.calls("GET", "/skus")


def test_a_list_that_fails_is_reported_and_leaves_its_old_rows(lists, tmp_path):
    path = tmp_path / "prices.csv"
    old = prices.Row(cloud="gcp", service="compute_engine", region="us-central1", kind="machine", name="n1-standard-8",
                     on_demand=0.1, source="earlier", date="2026-01-01")
    prices.write_rows(path, [old])
    lines: list[str] = []
    done = refresh.refresh(["gcp", "aws"], api_keys={"gcp": "wrong"}, output=path, say=lines.append)
    assert done.failed
    failed = next(line for line in lines if line.startswith("failed"))
    assert "failed gcp" in failed and "HTTP 403" in failed and "wrong" not in failed, "the key is not shown"
    found = rows_of(path)
    assert found[old.key] == old and ("amazon_sagemaker", "us-east-1", "machine", "ml.p4d.24xlarge") in found


def test_the_cli_refreshes_into_the_state_folder_and_the_catalog_command_lists_sources(lists, isolated):
    done = run_cli("catalog", "refresh", "--source", "skypilot", "--source", "aws", cwd=isolated,
                   env={source.env: lists.server.url for _, source in vendors.sources()})
    assert done.returncode == 0, done.stderr
    assert f"to {prices.user_catalog()}" in done.stdout
    done = run_cli("catalog", cwd=isolated)
    assert done.returncode == 0, done.stderr
    assert all(str(path) in done.stdout for path in prices.shipped()) and str(prices.user_catalog()) in done.stdout
    assert "gcp (gcp): GCP Cloud Billing Catalog API (Compute Engine); needs --api-key gcp=KEY" in done.stdout
    assert "skypilot-org/skypilot-catalog catalogs/v7/gcp/vms.csv" in done.stdout
    assert "2026-10-07" in done.stdout and "api-evangelist" in done.stdout, "the shipped rows' sources and dates"
    assert "azure_machine_learning: Azure ML compute bills the VM price, no surcharge" in done.stdout
    rows = run_cli("catalog", "--rows", cwd=isolated).stdout.splitlines()
    assert rows[0] == ",".join(prices.COLUMNS) and any("ml.p4d.24xlarge,25.25" in r for r in rows)


def test_the_cli_reads_api_keys_and_refuses_an_unknown_list(lists, isolated):
    env = {source.env: lists.server.url for _, source in vendors.sources()}
    done = run_cli("catalog", "refresh", "--source", "gcp", "--api-key", "gcp=test-key", cwd=isolated, env=env)
    assert done.returncode == 0, done.stderr
    assert "read gcp (gcp)" in done.stderr
    done = run_cli("catalog", "refresh", "--source", "nowhere", cwd=isolated, env=env)
    assert done.returncode == 2 and "no price list 'nowhere'" in done.stderr and "skypilot" in done.stderr
    done = run_cli("catalog", "refresh", "--api-key", "gcp", cwd=isolated, env=env)
    assert done.returncode == 2 and "--api-key" in done.stderr and "LIST=KEY" in done.stderr


def test_regions_narrow_every_list(lists, tmp_path):
    done = refresh.refresh(["skypilot", "azure"], regions=["eastus"], output=tmp_path / "p.csv")
    assert {r.region for r in prices.read_rows(done.path)} == {"eastus"}
    queries = [r.query["$filter"][0] for r in lists.server.calls("GET", "/api/retail/prices")]
    assert queries[0].endswith("and armRegionName eq 'eastus'")


@pytest.mark.parametrize("machine, series", [("n1-highmem-96", "n1 predefined"), ("a2-highgpu-8g", "a2"),
                                             ("a2-megagpu-16g", "a2"), ("a2-ultragpu-1g", "a2 ultra"),
                                             ("a3-megagpu-8g", "a3 mega"), ("g2-standard-4", "g2")])
def test_a_machine_is_priced_only_by_its_own_series_rates(machine, series):
    from omnidist_google import prices as google

    assert google.series(machine) == series
