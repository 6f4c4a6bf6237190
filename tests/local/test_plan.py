"""The plan: which processes run, with what argv, env and cwd (pure)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from omnidist.backend.values import NoteKind
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.local import plan
from omnidist.model.job import DistributedJob
from omnidist.model.roles import Accelerator, Role


def settings(**kw):
    base = dict(emulate="vertex", workdir=None, python=None, use_chief_in_tf_config=False)
    return SimpleNamespace(**{**base, **kw})


def demo(**kw) -> DistributedJob:
    fields = dict(name="demo", framework="pytorch", image="gcr.io/p/t:1", command=["python", "train.py"],
                  args=["--lr", "1"], env={"A": "1"}, workers=Role(replicas=2, env={"B": "2"}),
                  source="/jobs/demo/job.yaml")
    return DistributedJob(**{**fields, **kw})


def test_one_spec_per_replica_in_pool_order():
    job = demo(evaluators=Role(replicas=1, command=["python", "eval.py"], args=[]))
    specs = plan.build(job, settings(), [5000, 5001, 5002, 5003])
    assert [s.label for s in specs] == ["primary-0", "worker-0", "worker-1", "evaluator-0"]
    assert specs[0].argv == (sys.executable, "train.py", "--lr", "1")
    assert specs[3].argv == (sys.executable, "eval.py")
    assert {s.cwd for s in specs} == {"/jobs/demo"}
    assert specs[1].env["A"] == "1" and specs[1].env["B"] == "2" and "B" not in specs[0].env
    assert "OMNIDIST_ROLE" not in specs[2].env and '"workerpool1"' in specs[2].env["CLUSTER_SPEC"]  # the pool says it


def test_reduction_servers_get_addresses_but_no_process():
    job = demo(primary=Role(accelerator="V100:8"), reduction_servers=Role(replicas=2))
    layout = plan.layout(job, settings())
    assert layout.port_count == 5 and [p.runs for p in layout.places] == [True, True, True, False, False]
    specs = plan.build(job, settings(), [5000, 5001, 5002, 5003, 5004], plan=layout)
    assert [s.label for s in specs] == ["primary-0", "worker-0", "worker-1"]
    assert '"workerpool2": ["127.0.0.1:5003", "127.0.0.1:5004"]' in specs[0].env["CLUSTER_SPEC"]


def test_python_and_workdir_settings():
    specs = plan.build(demo(), settings(python="/opt/py", workdir="/w"), [1, 2, 3])
    assert specs[0].argv[0] == "/opt/py" and specs[0].cwd == "/w"
    other = plan.build(demo(command=["bash", "run.sh"]), settings(), [1, 2, 3])
    assert other[0].argv == ("bash", "run.sh", "--lr", "1")


def test_user_env_wins_over_hints_and_platform_wins_over_user():
    job = demo(env={"OMNIDIST_JOB_NAME": "mine", "CLUSTER_SPEC": "user"})
    spec = plan.build(job, settings(), [1, 2, 3])[0]
    assert spec.env["OMNIDIST_JOB_NAME"] == "mine" and spec.env["CLUSTER_SPEC"] != "user"


def test_same_input_same_plan_and_round_trip():
    a = plan.build(demo(), settings(), [7, 8, 9])
    assert a == plan.build(demo(), settings(), [7, 8, 9])
    assert [plan.ReplicaSpec.from_dict(s.to_dict()) for s in a] == a


def test_notes_say_what_running_locally_changes():
    job = demo(primary=Role(accelerator=Accelerator(type="V100", count=8)), reduction_servers=Role(replicas=2))
    notes = {n.field: n for n in plan.notes(job, settings())}
    assert notes["image"].kind is NoteKind.DROPPED and "gcr.io/p/t:1" in notes["image"].message
    assert notes["reduction_servers"].kind is NoteKind.DROPPED
    assert notes["accelerator"].kind is NoteKind.DROPPED and "V100:8" in notes["accelerator"].message
    assert notes["command"].kind is NoteKind.DEFAULTED
    assert plan.notes(demo(image=None, command=["bash", "x"]), settings()) == []


def test_a_role_without_command_is_invalid():
    with pytest.raises(ValidationError, match="command"):
        plan.build(demo(command=()), settings(), [1, 2, 3])


@pytest.mark.parametrize(("extra", "feature"), [
    ({"evaluators": Role(replicas=1)}, "evaluators"),
    ({"parameter_servers": Role(replicas=1)}, "parameter_servers"),
    ({"primary": Role(accelerator="V100:8"), "reduction_servers": Role(replicas=2)}, "reduction_servers"),
    ({"workers": Role(replicas=2, env={"B": "2"})}, "workers.env"),
])
def test_azure_emulation_refuses_what_compile_for_azure_refuses(extra, feature):
    """The same error (and exit code 3) as `omnidist compile --backend azure_ml`, not a silent skip."""
    import omnidist

    job = demo(**{"workers": Role(replicas=2), **extra})
    with pytest.raises(UnsupportedFeatureError) as compiled:
        omnidist.compile(job, backend="azure_ml")
    with pytest.raises(UnsupportedFeatureError) as info:
        plan.build(job, settings(emulate="azure_ml"), range(10))
    assert (info.value.subject, info.value.backend, str(info.value)) == (
        feature, "azure_ml", str(compiled.value))
    assert info.value.exit_code == compiled.value.exit_code == 3


@pytest.mark.parametrize(("extra", "feature"), [
    ({"reduction_servers": Role(replicas=2)}, "reduction_servers"),
    ({"evaluators": Role(replicas=1)}, "evaluators"),
    ({"parameter_servers": Role(replicas=1)}, "parameter_servers"),
])
def test_without_the_backend_the_platforms_environment_refuses_what_it_cannot_place(extra, feature):
    """Without the emulated platform's plugin, the roles its environment has no place for are
    refused with exit code 3 (runtime/platforms/azure_ml.py DISTRIBUTION_ROLES), and a note says
    compile's own checks were not made."""
    from omnidist.local import emulated as native_module

    with pytest.raises(UnsupportedFeatureError) as info:
        native_module.assumed(demo(workers=Role(replicas=1), **extra), "azure_ml")
    assert (info.value.subject, info.value.backend, info.value.exit_code) == (feature, "azure_ml", 3)
    fine = native_module.assumed(demo(workers=Role(replicas=1), framework="tensorflow",
                                      parameter_servers=Role(replicas=1)), "azure_ml")
    assert fine.request is None and fine.decided.details == {"distribution": "tensorflow"}
    assert [n.field for n in fine.notes] == ["emulate"] and "omnidist-azure-ml" in fine.notes[0].message
    assert native_module.assumed(demo(evaluators=Role(replicas=1)), "vertex").decided.reducers == 0
    assert native_module.native(demo(), "none") == native_module.Native()


def test_without_the_backend_the_job_block_and_setting_still_choose_chief():
    from omnidist.local import emulated as native_module

    job = demo(backends={"ai_platform": {"use_chief_in_tf_config": True}})
    assert native_module.assumed(job, "ai_platform").decided.details["use_chief"] is True
    assert native_module.assumed(demo(), "ai_platform").decided.details["use_chief"] is False
    overridden = native_module.assumed(demo(), "ai_platform", {"use_chief_in_tf_config": True})
    assert overridden.decided.details["use_chief"] is True
    assert native_module.assumed(demo(reduction_servers=Role(replicas=3)), "ai_platform").reducers == 3


def test_ports_must_cover_every_replica():
    layout = plan.layout(demo(), settings())
    with pytest.raises(ValueError, match="3 replicas need 3 ports"):
        plan.slots(layout, [1])
    assert plan.replica_count(demo(primary=Role(accelerator="V100:8"), reduction_servers=Role(replicas=4))) == 3


def test_ai_platform_emulation_carries_processes_per_node_as_compile_does():
    """Legacy AI Platform has no field (and no env field for the hint): a launch command carries
    the count, exactly as compile writes it, so the world is 2 nodes x 2 processes, not 2."""
    import omnidist

    job = demo(command=["omnidist", "launch", "--", "train.py"], args=[], processes_per_node=2, env={},
               workers=Role(replicas=2))
    specs = plan.build(job, settings(emulate="ai_platform"), range(3))
    compiled = omnidist.compile(job, backend="ai_platform").request["trainingInput"]
    local = (sys.executable, "-m", "omnidist.cli")  # this interpreter's omnidist, on PATH or not
    assert all(s.argv == (*local, *compiled["masterConfig"]["containerCommand"][1:]) for s in specs)
    assert specs[0].argv == (*local, "launch", "--nproc-per-node=2", "--", "train.py")
    assert "OMNIDIST_PROCESSES_PER_NODE" not in specs[0].env  # the platform has no env field for it
    found = [n for n in plan.notes(job, settings(emulate="ai_platform")) if n.field == "processes_per_node"]
    assert [n.kind for n in found] == [NoteKind.APPROXIMATED] and "ai_platform compile:" in found[0].message


@pytest.mark.parametrize("emulate", ["ai_platform", "vertex"])
def test_a_platform_that_starts_the_command_once_gets_a_launcher_as_compile_writes(emulate):
    """SPEC §10: 2 processes per node on every backend. Where the platform starts each replica's
    command once, compile runs it under `omnidist launch`, and so does the local run."""
    job = demo(processes_per_node=2)
    specs = plan.build(job, settings(emulate=emulate), range(3))
    assert specs[0].argv == (sys.executable, "-m", "omnidist.cli", "launch", "--nproc-per-node=2", "--",
                             sys.executable, "train.py", "--lr", "1")
    (note,) = [n for n in plan.notes(job, settings(emulate=emulate)) if n.field == "processes_per_node"]
    assert note.kind is NoteKind.APPROXIMATED and f"{emulate} starts the command once per node" in note.message


def test_azure_tensorflow_emulation_notes_the_empty_ps():
    job = demo(framework="tensorflow", workers=Role(replicas=2))
    (note,) = [n for n in plan.notes(job, settings(emulate="azure_ml")) if n.field == "TF_CONFIG"]
    assert '"ps": []' in note.message and "init_tensorflow()" in note.message
    with_ps = demo(framework="tensorflow", workers=Role(replicas=2), parameter_servers=Role(replicas=1))
    assert not [n for n in plan.notes(with_ps, settings(emulate="azure_ml")) if n.field == "TF_CONFIG"]
