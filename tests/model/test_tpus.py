"""TPUs in the portable job (SPEC §13): the accelerators and their units, slice sizes and
topologies, ``framework: jax``, the rules every backend shares, the slices laid out on hosts, the
backends without TPUs refusing them by name, and how a TPU host is priced."""

from __future__ import annotations

import pytest

import omnidist
from omnidist.backend import registry
from omnidist.backend.values import Footprint, Pool
from omnidist.compiler.lowering import check_portable_rules
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.model import accelerators
from omnidist.model.job import DistributedJob, Framework
from omnidist.model.roles import Accelerator, processes_per_node
from omnidist.placement import prices
from omnidist.placement.prices import Catalog, Row
from omnidist_google import tpu as tpus

BASE = {"name": "tpu-job", "framework": "jax", "image": "us-docker.pkg.dev/p/r/jax:1", "command": ["python", "t.py"]}


def load(primary: object, **fields) -> DistributedJob:
    return DistributedJob.from_dict({**BASE, "primary": {"accelerator": primary}, **fields}, source="job.yaml")


@pytest.mark.parametrize("written, name, unit", [
    ("tpu-v2:8", "TPU-V2", "core"), ("TPU_V3:32", "TPU-V3", "core"), ("TPU_V5_LITEPOD:16", "TPU-V5E", "chip"),
    ("tpu-v5e:4", "TPU-V5E", "chip"), ("TPU-V6E:256", "TPU-V6E", "chip"),
])
def test_tpus_are_portable_accelerators_counted_as_google_counts_them(written, name, unit):
    found = load(written).primary.accelerator
    assert found.type == name and found.tpu and accelerators.BY_NAME[name].unit == unit
    assert name in accelerators.TPUS and name not in accelerators.GPUS


def test_a_slice_with_a_topology_round_trips_as_a_mapping():
    job = load({"type": "TPU-V5E", "count": 16, "topology": "4x4"})
    assert job.to_dict()["primary"]["accelerator"] == {"type": "TPU-V5E", "count": 16, "topology": "4x4"}
    assert DistributedJob.from_yaml(job.to_yaml()) == job
    assert load("TPU-V5E:16").to_dict()["primary"]["accelerator"] == "TPU-V5E:16"


@pytest.mark.parametrize("written, path, words", [
    ("TPU-V2:16", "primary.accelerator.count", "TPU-V2 comes in slices of 8, 32, 64 … 512 cores"),
    ("TPU-V3:4096", "primary.accelerator.count", "… 2048 cores"),
    ("TPU-V5E:2", "primary.accelerator.count", "1, 4, 8, 16, 32, 64, 128, 256 chips, got 2"),
    ({"type": "TPU-V6E", "count": 16, "topology": "2x4"}, "primary.accelerator.topology", "lays out 8 chips"),
    ({"type": "TPU-V6E", "count": 16, "topology": "4by4"}, "primary.accelerator.topology", "such as 4x4"),
    ({"type": "TPU-V3", "count": 8, "topology": "2x2"}, "primary.accelerator.topology", "counted in chips"),
    ({"type": "A100", "count": 8, "topology": "2x4"}, "primary.accelerator.topology", "counted in chips"),
])
def test_a_slice_google_does_not_sell_is_exit_2_naming_the_field(written, path, words):
    with pytest.raises(ValidationError) as caught:
        load(written)
    assert caught.value.problems[0].path == path and words in str(caught.value)
    assert str(caught.value).startswith("job.yaml: ")


def test_jax_is_a_framework_that_runs_one_process_per_node():
    job = DistributedJob.from_dict({**BASE, "primary": {"accelerator": "A100:8"}})
    assert job.framework is Framework.JAX and processes_per_node(job) == 1
    assert processes_per_node(load("TPU-V5E:16", framework="pytorch")) == 1, "one process per TPU host"


@pytest.mark.parametrize("fields, path", [
    ({"processes_per_node": 4}, "processes_per_node"),
    ({"interconnect": "infiniband"}, "interconnect"),
])
def test_rules_every_backend_shares_for_tpus(fields, path):
    with pytest.raises(ValidationError) as caught:
        check_portable_rules(load("TPU-V5E:16", **fields))
    assert [p.path for p in caught.value.problems] == [path]


@pytest.mark.parametrize("accelerator, machine, hosts, per_host, topology", [
    (Accelerator(type="TPU-V5E", count=1), "ct5lp-hightpu-1t", 1, 1, "1x1"),
    (Accelerator(type="TPU-V5E", count=8), "ct5lp-hightpu-8t", 1, 8, "2x4"),
    (Accelerator(type="TPU-V5E", count=256), "ct5lp-hightpu-4t", 64, 4, "16x16"),
    (Accelerator(type="TPU-V6E", count=32, topology="4x8"), "ct6e-standard-4t", 8, 4, "4x8"),
    (Accelerator(type="TPU-V3", count=32), None, 4, 8, None),
])
def test_a_slice_is_laid_out_on_hosts(accelerator, machine, hosts, per_host, topology):
    laid = tpus.tpu_slice(accelerator)
    assert (laid.host.machine_type if laid.host else None, laid.hosts, laid.per_host, laid.topology) == (
        machine, hosts, per_host, topology)
    assert tpus.is_default_host(laid)


def test_a_named_host_must_run_the_topology():
    laid = tpus.tpu_slice(Accelerator(type="TPU-V5E", count=8), "ct5lp-hightpu-4t")
    assert (laid.hosts, laid.per_host) == (2, 4) and not tpus.is_default_host(laid)
    with pytest.raises(ValueError, match="runs the topologies 1x1, not 2x2"):
        tpus.tpu_slice(Accelerator(type="TPU-V6E", count=4), "ct6e-standard-1t")
    assert tpus.slice_from_host("ct6e-standard-4t", "8x8") == Accelerator(type="TPU-V6E", count=64)
    assert tpus.slice_from_host("ct5lp-hightpu-8t", None) == Accelerator(type="TPU-V5E", count=8)


@pytest.mark.parametrize("backend, words", [
    ("azure_ml", "Azure ML offers GPU virtual machines, no TPUs"),
    ("sagemaker", "SageMaker offers NVIDIA GPUs and AWS Trainium, no TPUs"),
    ("local", "this machine runs the replicas on its CPUs and NVIDIA GPUs"),
])
@pytest.mark.parametrize("accelerator, where", [("TPU-V5E:16", "kubernetes or vertex"),
                                                ("TPU-V3:8", "ai_platform or vertex")])
def test_backends_without_tpus_refuse_them_naming_the_accelerator(backend, words, accelerator, where):
    job = load(accelerator)
    with pytest.raises(UnsupportedFeatureError) as caught:
        omnidist.compile(job, backend=backend, settings={"role_arn": "arn:aws:iam::123456789012:role/r"}
                         if backend == "sagemaker" else None)
    kind = accelerator.split(":")[0]
    assert (caught.value.subject, caught.value.exit_code) == (f"accelerator {kind}", 3)
    assert words in caught.value.message and where in caught.value.hint
    assert kind not in registry.get(backend).capabilities.accelerators


def test_every_tpu_has_a_backend_that_offers_it():
    offered = {a for name in registry.installed() for a in registry.get(name).capabilities.accelerators}
    assert set(accelerators.TPUS) <= offered


def test_a_tpu_host_is_priced_as_its_machine_chips_included():
    catalog = Catalog([Row(cloud="gcp", service="compute_engine", region="us-central1", kind="machine",
                           name="ct6e-standard-4t", on_demand=10.0, source="test"),
                       Row(cloud="gcp", service="compute_engine", region="us-central1", kind="accelerator",
                           name="TPU-V6E", on_demand=99.0, source="test")])
    pool = Pool(role="primary", replicas=4, machine="ct6e-standard-4t", accelerator="TPU-V6E", count=4)
    priced = prices.price(Footprint(service="compute_engine", region="us-central1", pools=[pool]), catalog)
    assert priced.on_demand == 40.0, "the chips are in the TPU VM's price, never added per chip"


def test_the_shipped_catalog_has_a_row_for_every_tpu_machine():
    shipped = {(r.service, r.kind, r.name): r for path in prices.shipped() for r in prices.read_rows(path)}
    on_vertex = registry.get("vertex").capabilities.accelerators
    for host in tpus.TPU_HOSTS:
        for service in ("vertex_ai", "compute_engine") if host.accelerator in on_vertex else ("compute_engine",):
            assert (service, "machine", host.machine_type) in shipped
    assert ("vertex_ai", "machine", "cloud-tpu") in shipped
    v6e = [r for path in prices.shipped() for r in prices.read_rows(path) if r.name == "ct6e-standard-1t" and r.on_demand is not None]
    assert [(r.region, r.on_demand, r.spot) for r in v6e] == [("us-central1", 2.7, 0.648)]
    assert "skypilot-catalog" in v6e[0].source


def test_a_tpu_pod_slice_is_bounded_by_its_sizes_not_by_the_gpu_limit():
    assert load("TPU-V3:2048").primary.accelerator.count == 2048  # the largest v3 Pod slice
    with pytest.raises(ValidationError, match="more than the 1024 accelerators per replica"):
        load("A100:2048")


def test_tpu_v4_and_v5p_hosts_are_priced_per_chip_hour_with_their_source():
    rows = {(r.name, r.region): r for path in prices.shipped() for r in prices.read_rows(path)
            if r.service == "compute_engine" and r.name in ("ct4p-hightpu-4t", "ct5p-hightpu-4t")}
    assert rows["ct5p-hightpu-4t", "us-central1"].on_demand / 4 == pytest.approx(4.2)
    assert rows["ct4p-hightpu-4t", "us-central2"].on_demand / 4 == pytest.approx(3.22)
    assert all("skypilot-catalog" in r.source and r.date for r in rows.values())
    assert {r.region for (name, _), r in rows.items() if name == "ct5p-hightpu-4t"} >= {"us-central1", "europe-west4"}


@pytest.mark.parametrize("text, hosts, topology", [("TPU-V5P:16", 4, "2x2x4"), ("TPU-V4:4", 1, "2x2x1"),
                                                   ("TPU-V4:4096", 1024, "16x16x16")])
def test_a_v4_or_v5p_slice_is_a_cube_of_4_chip_hosts(text, hosts, topology):
    laid = tpus.tpu_slice(Accelerator.parse(text))
    assert (laid.hosts, laid.topology, laid.per_host) == (hosts, topology, 4)
    with pytest.raises(ValidationError, match="comes in slices of"):
        Accelerator.parse("TPU-V5P:2")


def test_a_v5p_slice_is_priced_as_its_hosts_from_the_shipped_catalog():
    pools = [Pool(role="primary", replicas=1, machine="ct5p-hightpu-4t", accelerator="TPU-V5P", count=4),
             Pool(role="workers", replicas=3, machine="ct5p-hightpu-4t", accelerator="TPU-V5P", count=4)]
    shipped = Catalog([r for path in prices.shipped() for r in prices.read_rows(path)])
    priced = prices.price(Footprint(service="compute_engine", region="us-central1", pools=pools), shipped)
    assert priced.on_demand == pytest.approx(4 * 16.8), "4 hosts of tpu-v5p-8 (4 chips at 4.20 per chip-hour)"
    assert priced.spot == pytest.approx(4 * 3.3428)
