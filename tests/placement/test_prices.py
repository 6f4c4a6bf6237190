"""The price catalog: the rows the vendor kits ship name their sources, every machine a backend can
pick has a row, and a footprint is priced by the rules each backend declares for its service (SPEC §12)."""

from __future__ import annotations

import pytest

from omnidist.backend.values import Footprint, Pool
from omnidist.errors import ConfigError
from omnidist.placement import prices
from omnidist.placement.prices import Catalog, Row
from omnidist_google.compute_engine import COMPUTE_ENGINE, COMPUTE_ENGINE_ACCELERATORS

SHIPPED = [row for path in prices.shipped() for row in prices.read_rows(path)]


def test_every_shipped_price_names_its_source_and_no_price_is_made_up():
    priced = [r for r in SHIPPED if r.on_demand is not None or r.spot is not None]
    assert priced and all(r.source and "omnidist" not in r.source for r in priced)
    unpriced = [r for r in SHIPPED if r.on_demand is None and r.spot is None and r.kind != "region"]
    assert all(r.source.startswith("no list price") and r.region == prices.ANY_REGION for r in unpriced)
    # the research notes' figures, as they state them (docs/placement.md lists them)
    by_key = {(r.service, r.region, r.name): r for r in SHIPPED}
    assert by_key["vertex_ai", "*", "n1-standard-4"].on_demand == 0.21849885
    assert by_key["vertex_ai", "us-central1", "H100"].on_demand == 11.2660332  # Vertex's own SKU, Iowa
    assert by_key["vertex_ai", "us-central1", "H100"].date == "2025-08-15"
    assert by_key["azure_vm", "eastus", "Standard_NC24ads_A100_v4"].on_demand == 3.673
    assert by_key["compute_engine", "us-central1", "a2-highgpu-1g"].spot == 0.36975
    assert by_key["gke", "*", "cluster"].on_demand == 0.10
    # the figures that conflicted with the sources are gone: Compute Engine's H100 price shipped as
    # Vertex's, the Dec-2023 ND96isr_H100_v5 and westus's NC96ads_A100_v4 price shipped as eastus's
    assert by_key["vertex_ai", "*", "H100"].on_demand is None
    assert by_key["azure_vm", "*", "Standard_ND96isr_H100_v5"].on_demand is None
    assert by_key["azure_vm", "eastus", "Standard_ND96isr_H100_v5"].on_demand == 98.32
    assert by_key["azure_vm", "eastus", "Standard_NC96ads_A100_v4"].on_demand == 14.692


def test_the_catalogs_traps_are_not_shipped_as_prices():
    """DWS flex-start SKUs among on-demand rows, spot above on-demand, spot = on-demand for "no spot
    meter", 700.0 and 0.0 for "not offered" (shared/platforms/prices-sources.md)."""
    by_key = {(r.service, r.region, r.kind, r.name): r for r in SHIPPED}
    flex = by_key["compute_engine", "us-central1", "accelerator", "H100"]
    assert flex.on_demand is None and flex.spot == 2.9926 and "flex-start" in flex.source
    assert by_key["compute_engine", "us-east4", "accelerator", "H100"].on_demand == 9.79655
    for row in SHIPPED:
        if row.on_demand is not None and row.spot is not None and row.kind == "accelerator":
            assert row.spot < 0.7 * row.on_demand, row
        assert row.on_demand not in (0.0, 700.0) or row.service == "local", row
        assert row.spot is None or row.on_demand is None or row.spot < row.on_demand, row
    assert by_key["azure_vm", "eastus", "machine", "Standard_NC40ads_H100_v5"].spot is None


def test_a_derived_price_says_estimated_and_its_rule():
    derived = [r for r in SHIPPED if r.source.startswith("estimated:")]
    assert {r.service for r in derived} == {"vertex_ai", "amazon_sagemaker"}
    by_key = {(r.service, r.region, r.kind, r.name): r for r in SHIPPED}
    host = by_key["compute_engine", "us-central1", "machine", "a2-highgpu-8g"]
    vertex = by_key["vertex_ai", "us-central1", "machine", "a2-highgpu-8g"]
    assert vertex.on_demand == pytest.approx(host.on_demand * 1.15) and "1.15 x Compute Engine" in vertex.source
    ec2 = by_key["ec2", "us-east-1", "machine", "p4de.24xlarge"]
    ml = by_key["amazon_sagemaker", "us-east-1", "machine", "ml.p4de.24xlarge"]
    assert ml.on_demand == pytest.approx(ec2.on_demand * 1.40) and "1.40 x EC2" in ml.source


def test_every_machine_and_accelerator_a_backend_can_pick_has_a_row():
    from omnidist_azure_ml import catalog as azure

    keys = {(r.service, r.kind, r.name) for r in SHIPPED}
    wanted = {(service, "machine", m.name) for service in ("compute_engine", "vertex_ai") for m in COMPUTE_ENGINE.machines}
    wanted |= {(service, "accelerator", a) for service in ("compute_engine", "vertex_ai")
               for a in COMPUTE_ENGINE_ACCELERATORS}
    wanted |= {("azure_vm", "machine", s.name) for s in azure.SKUS if not s.retired}
    assert sorted(wanted - keys) == []


def test_each_vendor_kit_ships_its_own_rows_sorted_and_round_tripping(tmp_path):
    from omnidist.placement import vendors

    installed = vendors.installed()
    assert {"google", "aws", "azure"} <= set(installed)
    for name, vendor in installed.items():
        rows = prices.read_rows(vendor.rows)
        assert rows and {r.cloud for r in rows} == {vendor.name}, f"{name} ships rows of another vendor"
        copy = tmp_path / f"{name}.csv"
        prices.write_rows(copy, rows)
        assert copy.read_text() == vendor.rows.read_text()
    assert sorted(prices.shipped()) == sorted(v.rows for v in installed.values())


def test_billing_is_what_the_backends_declare():
    from omnidist.backend import registry
    from omnidist.placement import vendors

    billing = vendors.billing()
    for name in registry.installed():
        for service, bills in registry.get(name).billing.items():
            assert billing[service] is bills
    assert billing["local"].free and billing["gke"].fees == ("cluster",)
    assert not any(service in billing for service in ("", "nothing"))


@pytest.mark.parametrize("text, words", [
    ("nope\n", "not a price catalog: the header must be"),
    (",".join(prices.COLUMNS) + "\ngcp,vertex_ai,*,machine,x,cheap,,s,\n", "line 2: on_demand: 'cheap' is not a price"),
    (",".join(prices.COLUMNS) + "\ngcp,vertex_ai,*,machine,x,-1,,s,\n", "line 2: on_demand: a price cannot be negative"),
    (",".join(prices.COLUMNS) + "\ngcp,vertex_ai,*,gadget,x,1,,s,\n", "line 2: kind: 'gadget' is not one of"),
])
def test_a_malformed_catalog_is_an_error_naming_the_file_and_line(tmp_path, text, words):
    path = tmp_path / "prices.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=str(path)) as caught:
        prices.read_rows(path)
    assert words in str(caught.value)


def row(service: str, region: str, kind: str, name: str, on_demand=None, spot=None) -> Row:
    return Row(cloud="gcp", service=service, region=region, kind=kind, name=name, on_demand=on_demand, spot=spot,
               source="test", date="2026-01-01")


CATALOG = Catalog([
    row("vertex_ai", "us-central1", "machine", "n1-standard-8", 0.5, 0.2),
    row("vertex_ai", "us-central1", "accelerator", "V100", 3.0, 1.0),
    row("vertex_ai", "us-central1", "machine", "n1-highcpu-16", 0.7),
    row("vertex_ai", "*", "machine", "n1-standard-4", 0.25),
    row("compute_engine", "us-central1", "machine", "n1-standard-8", 0.4, 0.1),
    row("compute_engine", "us-central1", "accelerator", "V100", 2.5, 0.9),
    row("compute_engine", "us-central1", "region", "us-central1"),
    row("gke", "*", "fee", "cluster", 0.1),
    Row(cloud="azure", service="azure_vm", region="eastus", kind="machine", name="Standard_ND40rs_v2", on_demand=22.0,
        spot=8.0, source="test", date="2026-01-01"),
])


def v100(role: str, replicas: int, machine: str = "n1-standard-8", count: int = 4) -> Pool:
    return Pool(role=role, replicas=replicas, machine=machine, accelerator="V100", count=count)


def test_google_gpus_are_added_per_gpu_to_the_host_for_every_replica():
    footprint = Footprint(service="vertex_ai", region="us-central1",
                          pools=[v100("primary", 1), v100("workers", 2),
                                 Pool(role="reduction_servers", replicas=3, machine="n1-highcpu-16")])
    priced = prices.price(footprint, CATALOG)
    assert priced.on_demand == pytest.approx(3 * (0.5 + 4 * 3.0) + 3 * 0.7)
    assert priced.spot is None, "one part without a spot price makes the spot price unknown"
    assert priced.available is True


def test_a_tuning_job_costs_its_parallel_trials():
    footprint = Footprint(service="vertex_ai", region="us-central1", pools=[v100("primary", 1)], parallel=3)
    assert prices.price(footprint, CATALOG).on_demand == pytest.approx(3 * 12.5)


def test_ai_platform_bills_the_vertex_prices():
    footprint = Footprint(service="ai_platform_training", region="us-central1", pools=[v100("primary", 1)])
    assert prices.price(footprint, CATALOG).on_demand == pytest.approx(12.5)


def test_azure_machine_learning_bills_the_vm_price_gpus_included():
    pool = Pool(role="primary", replicas=2, machine="Standard_ND40rs_v2", accelerator="V100", count=8)
    priced = prices.price(Footprint(service="azure_machine_learning", region="eastus", pools=[pool]), CATALOG)
    assert (priced.on_demand, priced.spot, priced.available) == (44.0, 16.0, True)


def test_gke_adds_the_cluster_fee_once_to_compute_engine_nodes():
    footprint = Footprint(service="gke", region="us-central1", pools=[v100("primary", 2)])
    priced = prices.price(footprint, CATALOG)
    assert priced.on_demand == pytest.approx(2 * (0.4 + 4 * 2.5) + 0.1)
    assert any("cluster fee" in note for note in priced.notes)


def test_an_unknown_part_makes_the_price_unknown_and_a_note_says_which():
    footprint = Footprint(service="vertex_ai", region="us-central1", pools=[v100("primary", 1, "a2-highgpu-1g")])
    priced = prices.price(footprint, CATALOG)
    assert priced.on_demand is None and priced.spot is None
    assert "no vertex_ai list price in us-central1 for a2-highgpu-1g" in priced.notes[-1]


def test_a_price_whose_source_states_no_region_is_used_with_a_note():
    footprint = Footprint(service="vertex_ai", region="europe-west4",
                          pools=[Pool(role="primary", replicas=1, machine="n1-standard-4")])
    priced = prices.price(footprint, CATALOG)
    assert priced.on_demand == 0.25 and "source states no region" in priced.notes[0]
    assert priced.available is None


def test_a_region_whose_list_is_complete_does_not_offer_what_it_does_not_list():
    footprint = Footprint(service="gke", region="us-central1",
                          pools=[Pool(role="primary", replicas=1, machine="a3-highgpu-8g", accelerator="H100", count=8)])
    assert prices.price(footprint, CATALOG).available is False
    elsewhere = Footprint(service="gke", region="asia-east1", pools=footprint.pools)
    assert prices.price(elsewhere, CATALOG).available is None


def test_this_machine_is_free():
    footprint = Footprint(service="local", region=None, pools=[v100("primary", 1, "this machine")], offered=False)
    priced = prices.price(footprint, CATALOG)
    assert (priced.on_demand, priced.available) == (0.0, False)


def test_a_refreshed_catalog_lays_over_the_shipped_one(tmp_path, monkeypatch):
    extra = tmp_path / "mine.csv"
    prices.write_rows(extra, [row("vertex_ai", "*", "machine", "n1-standard-4", 9.0)])
    monkeypatch.setenv("OMNIDIST_PRICES", str(extra))
    loaded = prices.load()
    assert loaded.files == (*prices.shipped(), extra)
    assert loaded.lookup("vertex_ai", None, "machine", "n1-standard-4").row.on_demand == 9.0
    assert loaded.lookup("vertex_ai", "us-central1", "accelerator", "H100").row.on_demand == 11.2660332
