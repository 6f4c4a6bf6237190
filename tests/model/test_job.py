"""The IR: construction, normalization, validation (omnidist/job.py)."""

from __future__ import annotations

import attrs
import pytest

from omnidist.errors import ValidationError
from omnidist.model.job import DistributedJob, Framework, Interconnect
from omnidist.model.roles import Accelerator, Role, RoleName


def test_accelerator_shorthand_and_case_insensitive_names():
    assert Accelerator.parse("v100:8") == Accelerator(type="V100", count=8)
    assert Accelerator.parse("a100-80gb") == Accelerator(type="A100-80GB", count=1)
    assert Accelerator(type="nvidia_tesla_t4").type == "T4"
    assert str(Accelerator(type="H100", count=8)) == "H100:8"


@pytest.mark.parametrize("text, message", [
    ("V1000:8", "did you mean 'V100'"),
    ("V100:x", "not a whole number"),
    ("V100:0", "must be > 0"),
])
def test_accelerator_errors_name_the_problem(text, message):
    with pytest.raises(ValidationError, match=message):
        Accelerator.parse(text)


def test_command_string_is_split_like_a_shell():
    job = DistributedJob(name="a", framework="pytorch", command="python -m 'my pkg.task' --x=1")
    assert job.command == ("python", "-m", "my pkg.task", "--x=1")
    assert Role(args="--lr 0.1").args == ("--lr", "0.1")


def test_enums_and_defaults():
    job = DistributedJob(name="a", framework="tensorflow")
    assert job.framework is Framework.TENSORFLOW
    assert job.interconnect is Interconnect.ANY
    assert job.primary == Role()
    assert job.processes_per_node == "auto"


@pytest.mark.parametrize("kwargs, path", [
    ({"name": "Bad_Name"}, "name"),
    ({"primary": Role(replicas=2)}, "primary.replicas"),
    ({"workers": Role(replicas="auto")}, "workers.replicas"),
    ({"processes_per_node": 0}, "processes_per_node"),
    ({"timeout": 0}, "timeout"),
    ({"env": {"1BAD": "x"}}, "env.1BAD"),
])
def test_invalid_values_raise_with_the_field_path(kwargs, path):
    with pytest.raises(ValidationError) as info:
        DistributedJob(**{"name": "ok", "framework": "pytorch", **kwargs})
    assert info.value.problems[0].path == path


def test_role_replicas_must_be_non_negative():
    with pytest.raises(ValidationError, match="must be >= 0, got -1"):
        Role(replicas=-1)


def test_values_are_frozen_and_evolve_makes_variants():
    job = DistributedJob(name="a", framework="pytorch", workers=Role(replicas=2))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        job.name = "b"  # type: ignore[misc]
    bigger = attrs.evolve(job, workers=Role(replicas=8))
    assert bigger.workers.replicas == 8 and job.workers.replicas == 2
    assert job.role(RoleName.WORKERS) is job.workers and job.role("evaluators") is None


def test_python_api_takes_the_job_file_spellings_for_accelerators():
    assert Role(accelerator="v100:8").accelerator == Accelerator(type="V100", count=8)
    assert Role(accelerator={"type": "t4", "count": 2}).accelerator == Accelerator(type="T4", count=2)
    with pytest.raises(ValidationError) as info:
        Role(accelerator="Z100:8")
    assert info.value.problems[0].path == "accelerator.type"


def test_python_api_framework_error_names_the_field():
    with pytest.raises(ValidationError, match=r"framework: 'pytorx' is not one of .*did you mean 'pytorch'"):
        DistributedJob(name="a", framework="pytorx")
