"""The importing toolkit (omnidist/importing.py): delower, names, durations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnidist.backend.values import NoteKind
from omnidist.compiler import delowering as importing
from omnidist.compiler.delowering import delower
from omnidist.errors import PORTABLE, UnsupportedFeatureError, ValidationError
from omnidist.model.job import NAME_PATTERN, DistributedJob
from omnidist.model.roles import Accelerator, EffectiveRole, Role, RoleName, effective_roles
from omnidist.testing import strategies

P, W, PS, E, RS = (RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS, RoleName.EVALUATORS,
                   RoleName.REDUCTION_SERVERS)


def lower(job: DistributedJob) -> dict[RoleName, EffectiveRole]:
    return {role.name: role for role in effective_roles(job)}


def job_of(found: importing.Delowered) -> DistributedJob:
    return DistributedJob(name="j", framework="custom", **found.job_fields())


def full(name: RoleName, replicas=1, **values) -> EffectiveRole:
    """A role as a native file spells it out."""
    defaults = dict(accelerator=None, cpus=None, memory_gb=None, disk_gb=None, image="img:1",
                    command=("python", "t.py"), args=(), env={})
    return EffectiveRole(name=name, replicas=replicas, **{**defaults, **values})


# --- delower ----------------------------------------------------------------------------------------


def test_workers_keep_only_what_differs_from_the_primary():
    v100 = Accelerator(type="V100", count=8)
    roles = {P: full(P, accelerator=v100, cpus=96, env={"A": "1", "B": "2"}),
             W: full(W, replicas=4, accelerator=v100, cpus=96, disk_gb=200, env={"A": "1", "B": "2", "C": "3"}),
             PS: full(PS, replicas=2, cpus=8, image="ps:1", env={"A": "1"})}
    found = delower(roles)
    assert (found.image, found.command, found.env) == ("img:1", ("python", "t.py"), {"A": "1"})
    assert found.roles[P] == Role(accelerator=v100, cpus=96, env={"B": "2"})
    assert found.roles[W] == Role(replicas=4, disk_gb=200, env={"C": "3"})
    assert found.roles[PS] == Role(replicas=2, cpus=8, image="ps:1")
    assert lower(job_of(found)) == roles


def test_a_role_with_another_program_keeps_it():
    roles = {P: full(P), E: full(E, command=("python", "eval.py"), args=("--once",)),
             PS: full(PS, command=())}
    found = delower(roles)
    assert found.roles[E].command == ("python", "eval.py") and found.roles[E].args == ("--once",)
    assert found.roles[PS].command == ()  # an explicit empty command overrides the job's
    assert lower(job_of(found)) == roles


def test_an_imageless_role_keeps_the_image_on_the_primary():
    roles = {P: full(P, image="img:1"), W: full(W), PS: full(PS, image=None)}
    found = delower(roles)
    assert found.image is None and found.roles[P].image == "img:1" and found.roles[W].image is None
    assert lower(job_of(found)) == roles


def test_a_left_out_field_takes_the_platforms_value():
    roles = {P: full(P, disk_gb=500), W: full(W, disk_gb=None)}
    with pytest.raises(UnsupportedFeatureError) as err:
        delower(roles)
    assert err.value.subject == "workers without disk_gb" and err.value.exit_code == 3
    found = delower(roles, unset={"disk_gb": 100})
    assert found.roles[W].disk_gb == 100
    assert delower({P: full(P, disk_gb=100), W: full(W)}, unset={"disk_gb": 100}).roles[W].disk_gb is None


T4 = Accelerator(type="T4", count=1)


@pytest.mark.parametrize(("worker", "feature"), [
    (full(W, accelerator=T4), "workers env"),
    (full(W, accelerator=T4, env={"A": "1"}, image=None), "workers without image"),
])
def test_what_a_worker_cannot_take_away_from_the_primary(worker, feature):
    with pytest.raises(UnsupportedFeatureError) as err:
        delower({P: full(P, accelerator=T4, env={"A": "1"}), W: worker})
    assert err.value.subject == feature and err.value.backend == PORTABLE and err.value.hint


def test_a_cpu_only_worker_beside_a_gpu_primary_is_accelerator_none():
    found = delower({P: full(P, accelerator=T4, env={"A": "1"}), W: full(W, env={"A": "1"})})
    assert found.roles[W].accelerator == "none"
    assert lower(job_of(found))[W].accelerator is None


@settings(max_examples=300, deadline=None)
@given(strategies.jobs())
def test_lowering_what_delower_gives_is_what_it_was_given(job):
    roles = lower(job)
    assert lower(job_of(delower(roles))) == roles


@settings(max_examples=300, deadline=None)
@given(strategies.jobs())
def test_delower_gives_back_a_normalised_job(job):
    normal = job_of(delower(lower(job)))
    assert job_of(delower(lower(normal))) == normal


def test_a_job_already_written_as_differences_comes_back_as_written():
    job = DistributedJob(name="j", framework="custom", image="img:1", command=["python", "t.py"], env={"A": "1"},
                         primary=Role(accelerator="V100:8", env={"B": "2"}),
                         workers=Role(replicas=3, env={"C": "3"}),
                         parameter_servers=Role(replicas=1, cpus=8, image="ps:1"),
                         reduction_servers=Role(replicas="auto", cpus=16))
    assert job_of(delower(lower(job))) == job


# --- names ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "name"), [
    ("cassava-resnet", "cassava-resnet"),
    ("My Job - v2", "my-job-v2"),
    ("census_20190101", "census-20190101"),
    ("1st try", "st-try"),
    ("--", None),
    ("", None),
    (None, None),
    (7, None),
    ("x" * 62 + "_y", "x" * 62),
])
def test_portable_name(text, name):
    assert importing.portable_name(text) == name


@given(st.text(max_size=80))
def test_portable_names_are_valid_and_stable(text):
    name = importing.portable_name(text)
    assert name is None or (NAME_PATTERN.match(name) and importing.portable_name(name) == name)


def test_pick_name_says_what_it_did():
    notes: list = []
    assert importing.pick_name([None, "", "My Job"], fallback="x-job", missing="nothing", notes=notes) == "my-job"
    assert [(n.kind, n.field) for n in notes] == [(NoteKind.APPROXIMATED, "name")] and "'My Job'" in notes[0].message
    notes.clear()
    assert importing.pick_name(["ok-name"], fallback="x-job", missing="nothing", notes=notes) == "ok-name"
    assert notes == []
    assert importing.pick_name(["%%"], fallback="x-job", missing="nothing named it", notes=notes) == "x-job"
    assert [(n.kind, n.message) for n in notes] == [(NoteKind.DEFAULTED, "nothing named it")]
    assert importing.pick_name([], fallback="x-job", missing="m") == "x-job"  # no notes asked for


# --- durations --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "seconds"), [(3600, 3600), ("90m", 5400), ("7d", 604800), ("45s", 45), ("2h", 7200)])
def test_parse_duration(value, seconds):
    assert importing.native_duration(value, "limits.timeout") == seconds


@pytest.mark.parametrize(("value", "seconds"), [("86400s", 86400), ("3600.5s", 3601), ("0.5s", 1), ("1.000s", 1)])
def test_parse_proto_duration(value, seconds):
    assert importing.parse_proto_duration(value, "scheduling.timeout") == seconds


@pytest.mark.parametrize(("parse", "value", "fragment"), [
    (importing.native_duration, "soon", "not a duration"),
    (importing.native_duration, 0, "must be > 0"),
    (importing.native_duration, 1.5, "not a duration"),
    (importing.parse_proto_duration, "2h", "such as '3600s'"),
    (importing.parse_proto_duration, 3600, "such as '3600s'"),
    (importing.parse_proto_duration, "0s", "must be > 0"),
    (importing.parse_proto_duration, "-5s", "such as '3600s'"),
])
def test_bad_durations_name_their_field(parse, value, fragment):
    with pytest.raises(ValidationError) as err:
        parse(value, "a.timeout")
    assert err.value.problems[0].path == "a.timeout" and fragment in str(err.value)


@given(st.integers(1, 10**9))
def test_proto_durations_round_trip(seconds):
    assert importing.parse_proto_duration(importing.format_proto_duration(seconds), "t") == seconds
