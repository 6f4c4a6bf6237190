"""The recovery block and max_cost (SPEC §15): read, written back, and refused with their field paths."""

from __future__ import annotations

import pytest

from omnidist.errors import ValidationError
from omnidist.model.job import DistributedJob, job_from_yaml
from omnidist.model.recovery import DEFAULT_ON, Ending, Recovery

BASE = "name: a\nframework: pytorch\nimage: i\ncommand: python t.py\nprimary: {}\n"


def test_a_recovery_block_round_trips_with_the_bare_yaml_on_key():
    job = job_from_yaml(BASE + "recovery: {max_restarts: 2, on: [preemption, failure], move: true}\nmax_cost: 12.5\n")
    assert job.recovery == Recovery(max_restarts=2, on=(Ending.PREEMPTION, Ending.FAILURE), move=True)
    assert job.max_cost == 12.5
    assert job_from_yaml(job.to_yaml()) == job
    assert job.to_dict()["recovery"] == {"max_restarts": 2, "on": ["preemption", "failure"], "move": True}


def test_defaults_restart_everything_but_the_programs_own_failure():
    recovery = job_from_yaml(BASE + "recovery: {}\n").recovery
    assert (recovery.max_restarts, recovery.on, recovery.move) == (3, DEFAULT_ON, False)
    assert recovery.restarts("preemption") and not recovery.restarts(Ending.FAILURE)
    assert job_from_yaml(BASE).recovery is None and "recovery" not in job_from_yaml(BASE).to_dict()


@pytest.mark.parametrize(("extra", "path", "words"), [
    ("recovery: {on: [succeeded]}", "recovery.on[0]", "never restarted"),
    ("recovery: {on: [preemption, preemptoin]}", "recovery.on[1]", "did you mean 'preemption'"),
    ("recovery: {on: []}", "recovery.on", "a list of endings"),
    ("recovery: {max_restarts: -1}", "recovery.max_restarts", "from 0 to 100"),
    ("recovery: {max_restarts: 101}", "recovery.max_restarts", "from 0 to 100"),
    ("recovery: {bogus: 1}", "recovery.bogus", "recovery takes max_restarts, on and move"),
    ("recovery: {move: 'yes'}", "recovery.move", "true or false"),
    ("recovery: 3", "recovery", "expected a mapping"),
    ("max_cost: -2", "max_cost", "US dollars > 0"),
    ("max_cost: .nan", "max_cost", "finite number"),
])
def test_bad_blocks_name_the_file_and_the_field(extra, path, words):
    with pytest.raises(ValidationError) as info:
        job_from_yaml(BASE + extra + "\n", source="job.yaml")
    assert f"job.yaml: {path}:" in str(info.value) and words in str(info.value)


def test_the_python_api_takes_the_file_spelling():
    job = DistributedJob(name="a", framework="pytorch", image="i", command="x", recovery={"on": "failure"})
    assert job.recovery.on == (Ending.FAILURE,)
    with pytest.raises(ValidationError, match=r"recovery\.on\[0\]"):
        DistributedJob(name="a", framework="pytorch", image="i", command="x", recovery={"on": ["x"]})
