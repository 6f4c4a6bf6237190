"""The tables: sorted, consistent with the SDK's enums, inverses derived correctly."""

from __future__ import annotations

from omnidist.kit import ACCELERATORS_BY_NAME, GPUS_BY_NAME, TPUS_BY_NAME, JobState, RoleName
from omnidist.testing.tables import table_problems
from omnidist_google.tpu import TPU_HOSTS
from omnidist_vertex import backend, compiler, tables


def test_every_table_is_sorted_and_documented():
    assert table_problems(tables) == []


def test_tables_are_sorted():
    for table in (
        tables.ACCELERATOR_TYPES,
        tables.ACCELERATOR_ENUM,
        tables.JOB_STATES,
        tables.STRATEGY_ENUM,
        tables.REDUCTION_SERVER_IMAGES,
        tables.MULTI_REGION_BY_PREFIX,
    ):
        assert list(table) == sorted(table)
    assert list(tables.POOL_INDEX) == sorted(tables.POOL_INDEX)


NOT_ON_VERTEX = {"A10", "A10G", "L40S", "TPU-V4", "TPU-V5P"}
"""Portable accelerators Vertex AI does not offer (Azure's A10, AWS's A10G and L40S; TPU v4 and v5p run on GKE)."""


def test_every_portable_accelerator_vertex_offers_has_a_vertex_name_and_a_machine():
    assert set(tables.ACCELERATOR_TYPES) == set(GPUS_BY_NAME) - NOT_ON_VERTEX
    for name in set(GPUS_BY_NAME) - NOT_ON_VERTEX:
        assert compiler.MACHINES.ways_to_get(name), name
    # TPUs (SPEC §13): v2 and v3 on cloud-tpu by enum, v5e and v6e by their TPU VM machines
    assert set(tables.CLOUD_TPU_ACCELERATORS) | {h.accelerator for h in TPU_HOSTS} >= set(TPUS_BY_NAME) - NOT_ON_VERTEX
    assert set(tables.CLOUD_TPU_ACCELERATORS.values()) <= set(tables.NATIVE_ONLY_ACCELERATOR_ENUM)
    assert set(backend.VertexBackend.capabilities.accelerators) == set(ACCELERATORS_BY_NAME) - NOT_ON_VERTEX


def test_enum_numbers_match_the_sdk():
    from google.cloud import aiplatform_v1

    for name, number in tables.ACCELERATOR_ENUM.items():
        assert aiplatform_v1.AcceleratorType[name].value == number
    for name, number in tables.STRATEGY_ENUM.items():
        assert aiplatform_v1.Scheduling.Strategy[name].value == number
    assert set(tables.JOB_STATES) == {s.name for s in aiplatform_v1.JobState}
    assert set(tables.ACCELERATOR_ENUM) == set(tables.PORTABLE_ACCELERATORS)


def test_derived_inverses():
    assert all(
        tables.ACCELERATOR_TYPES[tables.PORTABLE_ACCELERATORS[v]] == v
        for v in tables.PORTABLE_ACCELERATORS
    )
    assert tables.ROLES_AT[2] == (RoleName.PARAMETER_SERVERS, RoleName.REDUCTION_SERVERS)
    assert tables.ROLES_AT[0] == (RoleName.PRIMARY,)
    assert JobState.UNKNOWN in tables.JOB_STATES.values()


def test_reduction_server_image_by_region():
    assert tables.reduction_server_image("me-west1").startswith("europe-")
    assert tables.reduction_server_image("australia-southeast1").startswith("asia-")
    assert tables.reduction_server_image("mars-north1").startswith("us-")
