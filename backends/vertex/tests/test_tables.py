"""The tables: sorted, consistent with the SDK's enums, inverses derived correctly."""

from __future__ import annotations

from omnidist_vertex import backend, compiler

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
    ):
        assert list(table) == sorted(table)
    assert list(backend.POOL_INDEX) == sorted(backend.POOL_INDEX)


def test_every_portable_accelerator_has_a_vertex_name_and_a_machine():
    assert set(backend.ACCELERATOR_TYPES) == set(accelerators.BY_NAME)
    for name in accelerators.BY_NAME:
        assert compiler.MACHINES.ways_to_get(name), name


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


def test_reduction_server_image_by_region():
    assert backend.reduction_server_image("me-west1").startswith("europe-")
    assert backend.reduction_server_image("australia-southeast1").startswith("asia-")
    assert backend.reduction_server_image("mars-north1").startswith("us-")
