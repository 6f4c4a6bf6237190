"""The machine catalog (omnidist/catalog.py): the record, smallest_fit, check_named, Compute Engine data."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnidist.compiler import catalog
from omnidist.compiler.catalog import Attachment, Machine, MachineCatalog, check_named, smallest_fit
from omnidist.errors import ValidationError
from omnidist.model import accelerators
from omnidist.model.roles import Accelerator
from omnidist_google.compute_engine import (
    COMPUTE_ENGINE,
    COMPUTE_ENGINE_GPU_MACHINES,
    N1_EGRESS_GBPS,
    N1_GPUS,
    N1_MACHINES,
    N1_MEMORY_PER_VCPU,
    N1_SIZES,
    REDUCTION_SERVER_MACHINE,
)

V100 = Accelerator(type="V100", count=8)


def gpus(text: str) -> Accelerator:
    return Accelerator.parse(text)


# --- Compute Engine data ----------------------------------------------------------------------------


def test_compute_engine_tables_are_sorted_and_derived():
    for table in (N1_GPUS, N1_SIZES, N1_MEMORY_PER_VCPU, N1_EGRESS_GBPS):
        assert list(table) == sorted(table)
    names = [m.name for m in COMPUTE_ENGINE_GPU_MACHINES]
    assert names == sorted(names)
    assert len(N1_MACHINES) == sum(len(sizes) for sizes in N1_SIZES.values())
    assert all(m.egress_gbps == N1_EGRESS_GBPS[m.vcpus] for m in N1_MACHINES)


def test_compute_engine_facts_from_the_docs():
    assert COMPUTE_ENGINE.get("n1-highcpu-16").egress_gbps == 32
    assert COMPUTE_ENGINE.egress_gbps(COMPUTE_ENGINE.get("n1-highmem-96"), V100) == 100
    assert COMPUTE_ENGINE.egress_gbps(COMPUTE_ENGINE.get("n1-standard-8"), gpus("P100:2")) == 16  # the N1 rate
    mega = COMPUTE_ENGINE.get("a2-megagpu-16g")
    assert (mega.accelerator, mega.gpus, mega.egress_gbps) == ("A100", 16, 100)
    assert N1_GPUS["V100"].limits[8][0] == 96 and N1_GPUS["V100"].counts == (1, 2, 4, 8)
    assert {m.name for m in COMPUTE_ENGINE.machines if m.rdma} == {"a3-ultragpu-8g", "a4-highgpu-8g"}
    assert COMPUTE_ENGINE.get("n1-standard-3") is None and COMPUTE_ENGINE.get("n1-highmem-1") is None
    assert COMPUTE_ENGINE.get(REDUCTION_SERVER_MACHINE).egress_gbps == 32


NOT_ON_COMPUTE_ENGINE = {"A10", "A10G", "L40S"}
"""Portable GPUs Google's clouds do not offer (Azure's A10, AWS's A10G and L40S)."""


def test_every_portable_gpu_google_offers_can_be_had_on_compute_engine():
    for name in set(accelerators.GPUS) - NOT_ON_COMPUTE_ENGINE:  # the TPUs: omnidist_google.tpu
        assert COMPUTE_ENGINE.ways_to_get(name), name
    assert not any(COMPUTE_ENGINE.ways_to_get(name) for name in NOT_ON_COMPUTE_ENGINE)
    assert COMPUTE_ENGINE.ways_to_get("V100") == ("n1-* with 1/2/4/8",)
    assert "a2-highgpu-4g (4)" in COMPUTE_ENGINE.ways_to_get("A100")


def test_gpu_bandwidth_needs_the_vcpus_compute_engine_lists_with_it():
    small, big = COMPUTE_ENGINE.get("n1-standard-4"), COMPUTE_ENGINE.get("n1-standard-16")
    t4 = gpus("T4:1")
    assert COMPUTE_ENGINE.locked_gpu_egress(small, t4) == (24, 32)
    assert COMPUTE_ENGINE.egress_gbps(small, t4) == 10  # the plain N1 rate until 24 vCPUs
    assert COMPUTE_ENGINE.locked_gpu_egress(COMPUTE_ENGINE.get("n1-standard-32"), t4) is None
    assert COMPUTE_ENGINE.egress_gbps(COMPUTE_ENGINE.get("n1-standard-32"), t4) == 32
    assert COMPUTE_ENGINE.locked_gpu_egress(big, None) is None
    assert COMPUTE_ENGINE.egress_gbps(COMPUTE_ENGINE.get("a2-highgpu-8g"), gpus("A100:8")) == 100


# --- smallest_fit -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("accelerator", "cpus", "memory", "expected"), [
    (None, None, None, "n1-standard-1"),
    (None, 10, None, "n1-highcpu-16"),
    (None, 8, 52, "n1-highmem-8"),
    ("V100:2", None, None, "n1-standard-1"),
    ("V100:1", 16, None, None),          # V100 x1 allows 12 vCPUs at most
    ("V100:8", 90, None, "n1-highcpu-96"),
    ("P100:4", None, 300, None),         # P100 x4 allows 208 GB at most
    ("L4:2", None, None, "g2-standard-24"),
    ("L4:1", 10, None, "g2-standard-12"),
    ("A100:3", None, None, None),
    ("A100-80GB:8", None, None, "a2-ultragpu-8g"),
])
def test_smallest_fit_on_compute_engine(accelerator, cpus, memory, expected):
    found = smallest_fit(COMPUTE_ENGINE, gpus(accelerator) if accelerator else None, cpus=cpus, memory_gb=memory)
    assert (found.name if found else None) == expected


def test_smallest_fit_demands_and_prefers_an_interconnect():
    assert smallest_fit(COMPUTE_ENGINE, gpus("H100:8"), interconnect="rdma") is None
    assert smallest_fit(COMPUTE_ENGINE, gpus("H200:8"), interconnect="rdma").name == "a3-ultragpu-8g"
    sold, retired = Machine(name="sold", vcpus=8, memory_gb=64, accelerator="T4", gpus=4), Machine(
        name="old", vcpus=4, memory_gb=32, accelerator="T4", gpus=1, retired="gone")
    fast = Machine(name="fast", vcpus=16, memory_gb=64, accelerator="T4", gpus=4, rdma=True, infiniband=True)
    small = Machine(name="small", vcpus=4, memory_gb=16, accelerator="T4", gpus=1)
    skus = MachineCatalog(machines=(sold, retired, fast, small))
    t4 = gpus("T4:1")
    assert smallest_fit(skus, t4) == small  # the exact count, or nothing, without more_gpus
    assert smallest_fit(skus, gpus("T4:2")) is None
    assert smallest_fit(skus, gpus("T4:2"), more_gpus=True) == sold  # fewest vCPUs among 4-GPU machines
    assert smallest_fit(skus, gpus("T4:2"), more_gpus=True, prefer_interconnect="infiniband") == fast
    assert smallest_fit(skus, gpus("T4:1"), more_gpus=True, prefer_interconnect="infiniband") == small  # GPUs first
    assert smallest_fit(skus, t4, more_gpus=True, interconnect="infiniband") == fast
    assert smallest_fit(MachineCatalog(machines=(retired, sold)), t4, more_gpus=True) == sold  # sold before retired
    assert smallest_fit(MachineCatalog(machines=(retired,)), t4) == retired  # retired only when nothing else fits


@st.composite
def machines(draw) -> Machine:
    accelerator = draw(st.none() | st.sampled_from(["T4", "V100"]))
    return Machine(name=draw(st.from_regex(r"m-[a-z0-9]{1,6}", fullmatch=True)), vcpus=draw(st.integers(1, 64)),
                   memory_gb=draw(st.integers(1, 512)), accelerator=accelerator,
                   gpus=draw(st.integers(1, 8)) if accelerator else 0, infiniband=draw(st.booleans()),
                   retired=draw(st.sampled_from(["", "", "gone"])))


MACHINE_SETS = st.lists(machines(), max_size=12, unique_by=lambda m: m.name).map(tuple)


@settings(max_examples=200, deadline=None)
@given(MACHINE_SETS, st.none() | st.builds(Accelerator, type=st.sampled_from(["T4", "V100"]), count=st.integers(1, 8)),
       st.none() | st.integers(1, 64), st.none() | st.integers(1, 512), st.booleans())
def test_smallest_fit_fits_and_nothing_fitting_is_smaller(machines, accelerator, cpus, memory, more):
    found = smallest_fit(MachineCatalog(machines=machines), accelerator, cpus=cpus, memory_gb=memory, more_gpus=more)
    fitting = [m for m in machines if MachineCatalog(machines=machines).takes(m, accelerator, more_gpus=more)
               and catalog.big_enough(m, cpus, memory)]
    assert (found is None) == (not fitting)
    if found is not None:
        assert found in fitting
        for other in fitting:  # what beats it is not retired, has fewer GPUs, or is no bigger
            assert (bool(found.retired), found.gpus, found.vcpus) <= (bool(other.retired), other.gpus, other.vcpus)


# --- the catalog's lookups ----------------------------------------------------------------------------


def test_names_compare_exactly_unless_the_catalog_ignores_case():
    machines = (Machine(name="Standard_D4s_v3", vcpus=4, memory_gb=16),)
    assert MachineCatalog(machines=machines).get("standard_d4s_v3") is None
    assert MachineCatalog(machines=machines, ignore_case=True).get("STANDARD_D4S_V3") == machines[0]
    assert COMPUTE_ENGINE.suggest("n1-standrd-4") == "; did you mean 'n1-standard-4'?"
    assert COMPUTE_ENGINE.suggest("zzz") == ""


def test_named_only_machines_are_found_but_never_picked():
    legacy = Machine(name="standard_v100", vcpus=8, memory_gb=30, accelerator="V100", gpus=1)
    machines = MachineCatalog(machines=COMPUTE_ENGINE.machines, attach_family="n1", attachments=N1_GPUS,
                       named_only=(legacy,))
    assert machines.get("standard_v100") == legacy and "standard_v100" in machines.names()
    assert smallest_fit(machines, gpus("V100:1"), cpus=8, memory_gb=30).name == "n1-standard-8"


def test_attachments_take_only_their_counts_and_sizes():
    rule = Attachment(limits={1: (12, 78), 2: (24, 156)})
    machines = MachineCatalog(machines=N1_MACHINES, attach_family="n1", attachments={"V100": rule})
    v1 = gpus("V100:1")
    assert machines.takes(machines.get("n1-standard-8"), v1)
    assert not machines.takes(machines.get("n1-standard-16"), v1)  # 16 vCPUs > 12
    assert not machines.takes(machines.get("n1-highmem-8"), gpus("V100:4"))  # no such count
    assert not machines.takes(machines.get("n1-standard-8"), gpus("T4:1"))  # not attachable
    assert rule.counts == (1, 2)


# --- check_named --------------------------------------------------------------------------------------


def named(name: str, accelerator: str | None = None, cpus: float | None = None, memory: float | None = None):
    return check_named(COMPUTE_ENGINE, name, role="workers", accelerator=gpus(accelerator) if accelerator else None,
                       cpus=cpus, memory_gb=memory, path="backends.x.machine_types.workers")


@pytest.mark.parametrize(("name", "accelerator", "cpus", "memory", "words"), [
    ("a2-highgpu-3g", "A100:4", None, None, ["unknown machine type 'a2-highgpu-3g'", "did you mean"]),
    ("n2-standard-8", "T4:1", None, None, ["does not know which GPUs n2-standard-8 can take", "T4:1", "n1-*"]),
    ("a2-highgpu-8g", "V100:8", None, None, ["comes with 8×A100", "asks for 8×V100", "set accelerator: A100:8"]),
    ("g2-standard-4", None, None, None, ["g2-standard-4 comes with 1×L4", "asks for no accelerator"]),
    ("n1-standard-8", "A100:1", None, None, ["N1 machines cannot take A100", "a2-highgpu-1g (1)"]),
    ("n1-standard-8", "V100:3", None, None, ["n1-standard-8 can take V100 in counts 1, 2, 4, 8, not 3"]),
    ("n1-highmem-96", "V100:4", None, None, ["too big for 4×V100", "at most 48 vCPUs and 312 GB"]),
    ("n1-standard-8", None, 16, None, ["n1-standard-8 has 8 vCPUs, but workers asks for cpus: 16"]),
    ("n1-standard-8", None, None, 40, ["n1-standard-8 has 30 GB, but workers asks for memory_gb: 40"]),
])
def test_check_named_rejects_with_the_field_and_the_fix(name, accelerator, cpus, memory, words):
    with pytest.raises(ValidationError) as err:
        named(name, accelerator, cpus, memory)
    assert err.value.problems[0].path == "backends.x.machine_types.workers"
    for word in words:
        assert word in str(err.value)


def test_check_named_returns_the_machine_or_none_outside_the_catalog():
    assert named("n1-highmem-8", "V100:1", cpus=8, memory=52) == COMPUTE_ENGINE.get("n1-highmem-8")
    assert named("a3-highgpu-8g", "H100:8") == COMPUTE_ENGINE.get("a3-highgpu-8g")
    assert named("n2-standard-8") is None  # a CPU family omnidist does not list: passed through


def test_check_named_gives_no_portable_advice_for_a_gpu_without_a_portable_name():
    k80 = Machine(name="standard_gpu", vcpus=8, memory_gb=30, accelerator="NVIDIA_TESLA_K80", gpus=1)
    with pytest.raises(ValidationError) as err:
        check_named(MachineCatalog(machines=(), named_only=(k80,)), "standard_gpu", role="primary", accelerator=None,
                    cpus=None, memory_gb=None, path="p")
    assert "name another machine" in str(err.value) and "set accelerator" not in str(err.value)
