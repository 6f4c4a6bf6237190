"""The tables: sorted, consistent with the SDK's enums, inverses derived correctly."""

from __future__ import annotations

from omnidist_vertex import backend, catalog

from omnidist import accelerators
from omnidist.backend import JobState
from omnidist.job import RoleName


def test_tables_are_sorted():
    for table in (
        backend.ACCELERATOR_TYPES,
        backend.ACCELERATOR_ENUM,
        backend.JOB_STATES,
        backend.STRATEGY_ENUM,
        backend.REDUCTION_SERVER_IMAGES,
        backend.MULTI_REGION_BY_PREFIX,
        catalog.N1_GPUS,
        catalog.N1_SIZES,
        catalog.N1_MEMORY_PER_VCPU,
    ):
        assert list(table) == sorted(table)
    assert [m.name for m in catalog.ACCELERATOR_OPTIMIZED] == sorted(
        m.name for m in catalog.ACCELERATOR_OPTIMIZED
    )
    assert list(backend.POOL_INDEX) == sorted(backend.POOL_INDEX)


def test_every_portable_accelerator_has_a_vertex_name_and_a_machine():
    assert set(backend.ACCELERATOR_TYPES) == set(accelerators.BY_NAME)
    for name in accelerators.BY_NAME:
        assert catalog.machines_for(name), name


def test_enum_numbers_match_the_sdk():
    from google.cloud import aiplatform_v1

    for name, number in backend.ACCELERATOR_ENUM.items():
        assert aiplatform_v1.AcceleratorType[name].value == number
    for name, number in backend.STRATEGY_ENUM.items():
        assert aiplatform_v1.Scheduling.Strategy[name].value == number
    assert set(backend.JOB_STATES) == {s.name for s in aiplatform_v1.JobState}
    assert set(backend.ACCELERATOR_ENUM) == set(backend.PORTABLE_ACCELERATORS)


def test_derived_inverses():
    assert all(
        backend.ACCELERATOR_TYPES[backend.PORTABLE_ACCELERATORS[v]] == v
        for v in backend.PORTABLE_ACCELERATORS
    )
    assert backend.ROLES_AT[2] == (RoleName.PARAMETER_SERVERS, RoleName.REDUCTION_SERVERS)
    assert backend.ROLES_AT[0] == (RoleName.PRIMARY,)
    assert JobState.UNKNOWN in backend.JOB_STATES.values()


def test_catalog_facts_from_the_docs():
    assert catalog.machine("n1-highcpu-16").egress_gbps == 32
    big = catalog.machine("n1-highmem-96")
    assert catalog.egress_gbps(big, "V100", 8) == 100
    assert catalog.egress_gbps(catalog.machine("n1-standard-8"), "P100", 2) == 16  # P100 keeps the N1 rate
    assert (
        catalog.machine("a2-megagpu-16g").gpus == 16 and catalog.machine("a2-megagpu-16g").egress_gbps == 100
    )
    assert catalog.N1_GPUS["V100"].caps[8][0] == 96 and catalog.N1_GPUS["V100"].counts == (1, 2, 4, 8)
    assert {m.name for m in catalog.ACCELERATOR_OPTIMIZED if m.rdma} == {"a3-ultragpu-8g", "a4-highgpu-8g"}
    assert catalog.machine("n1-standard-3") is None and catalog.machine("n1-highmem-1") is None


def test_candidates_smallest_first():
    found = catalog.candidates("V100", 2)
    assert found and all(m.vcpus <= 24 for m in found)
    assert [m.vcpus for m in found] == sorted(m.vcpus for m in found)
    assert catalog.candidates("A100", 3) == ()
    assert [m.name for m in catalog.candidates("L4", 2)] == ["g2-standard-24"]


def test_reduction_server_image_by_region():
    assert backend.reduction_server_image("me-west1").startswith("europe-")
    assert backend.reduction_server_image("australia-southeast1").startswith("asia-")
    assert backend.reduction_server_image("mars-north1").startswith("us-")
