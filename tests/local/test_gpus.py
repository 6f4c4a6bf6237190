"""GPUs for local replicas: the assignment is pure and tested with the GPU count injected; the
end-to-end runs on a real GPU skip without one."""

from __future__ import annotations

import io
import subprocess
import sys
from types import SimpleNamespace

import attrs
import pytest

from omnidist import api
from omnidist.local import plan
from omnidist.local.gpus import assign_gpus, visible_gpus
from omnidist.model.job import DistributedJob
from omnidist.model.roles import Role

from .test_backend import EXAMPLE


@pytest.mark.parametrize(("needs", "gpus", "visible"), [
    ([1, 1, 1], [], (None, None, None)),                         # a CPU machine: nothing is set
    ([1, 1, 1], ["0", "1", "2", "3"], ("0", "1", "2")),          # one GPU each
    ([2, 2, 0], ["0", "1", "2", "3"], ("0,1", "2,3", "")),       # two processes per node; a parameter server
    ([1, 1, 1], ["0"], ("0", "0", "0")),                         # replicas outnumber the GPUs: they share it
    ([1, 1, 1, 1], ["0", "1"], ("0", "1", "0", "1")),            # round robin
    ([2, 2, 0], ["0", "1", "2"], ("0,1", "2,0", "")),            # a replica's processes take the next GPUs
    ([3, 1], ["0", "1"], ("0,1", "1")),                          # more local processes than GPUs: each GPU once
    ([1, 1], ["GPU-a1", "GPU-b2"], ("GPU-a1", "GPU-b2")),        # the user's CUDA_VISIBLE_DEVICES entries
])
def test_assign_gpus(needs, gpus, visible):
    found = assign_gpus(needs, gpus)
    assert found.visible == visible
    assert (found.note is None) == (not gpus)
    assert found.shared == (sum(needs) > len(gpus) > 0)


def test_the_note_says_when_replicas_share_the_gpus_and_how_to_use_the_cpu():
    note = assign_gpus([1, 1, 1], ["0"]).note
    assert "3 training replica(s) run 3 process(es)" in note and "has 1 GPU(s)" in note
    assert "round robin" in note and "gloo over CUDA tensors" in note and "--cpu" in note
    assert "CPU" in assign_gpus([1, 0], ["0", "1"]).note  # the parameter server runs on the CPU


def test_the_cpu_is_a_choice():
    found = assign_gpus([1, 1, 1], ["0", "1", "2", "3"], cpu=True)
    assert found.visible == ("", "", "") and not found.shared and "as asked" in found.note
    assert assign_gpus([1], [], cpu=True).visible == (None,), "a machine without GPUs: nothing to say"


def _smi(stdout: str, returncode: int = 0):
    def run(argv, **kwargs):
        assert argv[0] == "nvidia-smi" and kwargs["timeout"]
        return subprocess.CompletedProcess(argv, returncode, stdout=stdout, stderr="")
    return run


def test_visible_gpus(tmp_path):
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}) == ["2", "3"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == [] and visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == []
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n")
    smi.chmod(0o755)
    assert visible_gpus({"PATH": str(tmp_path)}, run=_smi("0\n1\n")) == ["0", "1"]
    assert visible_gpus({"PATH": str(tmp_path)}, run=_smi("", 9)) == visible_gpus({"PATH": str(tmp_path / "none")})


def settings(**kw):
    return SimpleNamespace(**{"emulate": "vertex", "workdir": None, "python": None, "use_chief_in_tf_config": False,
                              **kw})


def job(**kw) -> DistributedJob:
    return DistributedJob(**{"name": "g", "framework": "pytorch", "command": ("python", "t.py"),
                             "workers": Role(replicas=2), **kw})


def test_each_replica_gets_its_own_gpus():
    specs = plan.build(job(parameter_servers=Role(replicas=1)), settings(), range(4), gpus=["0", "1", "2", "3"])
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["0", "1", "2", ""]
    launch = job(processes_per_node=2, command=("omnidist", "launch", "--", "t.py"))
    specs = plan.build(launch, settings(), range(3), gpus=[str(i) for i in range(8)])
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["0,1", "2,3", "4,5"]
    six = [str(i) for i in range(6)]
    azure = plan.build(job(processes_per_node=2), settings(emulate="azure_ml"), range(3), gpus=six)
    assert [(s.label, s.env["CUDA_VISIBLE_DEVICES"]) for s in azure] == [
        ("primary-0.0", "0"), ("primary-0.1", "1"), ("worker-0.0", "2"), ("worker-0.1", "3"), ("worker-1.0", "4"),
        ("worker-1.1", "5")]


def test_more_replicas_than_gpus_share_them_with_a_note():
    specs = plan.build(job(parameter_servers=Role(replicas=1)), settings(), range(4), gpus=["0"])
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["0", "0", "0", ""]
    assert [s.env.get("OMNIDIST_GPUS_SHARED") for s in specs] == ["1", "1", "1", None], "trainers only"
    (note,) = [n for n in plan.notes(job(), settings(), gpus=["0"]) if n.field == "gpus"]
    assert "this machine has 1 GPU(s)" in note.message and "round robin" in note.message


def test_the_cpu_setting_runs_every_replica_on_the_cpu():
    specs = plan.build(job(), settings(cpu=True), range(3), gpus=["0", "1", "2"])
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["", "", ""]
    assert not any("OMNIDIST_GPUS_SHARED" in s.env for s in specs)
    (note,) = [n for n in plan.notes(job(), settings(cpu=True), gpus=["0"]) if n.field == "gpus"]
    assert "as asked" in note.message


def test_the_cpu_flag_reaches_the_settings(tmp_path, monkeypatch):
    from omnidist.testing.cli import run_cli

    (tmp_path / "job.yaml").write_text("name: c\nframework: pytorch\ncommand: [python, -c, \"import os; "
                                       "print('VISIBLE=' + repr(os.environ.get('CUDA_VISIBLE_DEVICES')))\"]\n"
                                       "primary: {}\n")
    done = run_cli("run", "job.yaml", "--cpu", cwd=tmp_path, env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert done.returncode == 0, done.stderr
    assert "VISIBLE=''" in done.stdout and "as asked (--cpu" in done.stderr


def test_no_gpus_no_variable_and_the_users_value_wins():
    assert all("CUDA_VISIBLE_DEVICES" not in s.env for s in plan.build(job(), settings(), range(3)))
    mine = plan.build(job(env={"CUDA_VISIBLE_DEVICES": "7"}), settings(), range(3), gpus=["0", "1", "2"])
    assert {s.env["CUDA_VISIBLE_DEVICES"] for s in mine} == {"7"}


# --- on a real GPU ------------------------------------------------------------------------------

GPUS = visible_gpus()


def _torch_sees_cuda() -> bool:
    if not GPUS:  # no NVIDIA driver: do not pay for importing torch at collection
        return False
    probe = "import torch; print(torch.cuda.is_available())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    return out.stdout.strip() == "True"


@pytest.mark.skipif(not _torch_sees_cuda(), reason="needs an NVIDIA GPU and a CUDA build of torch")
@pytest.mark.parametrize("replicas", [1, len(GPUS) + 1])
def test_the_ddp_example_on_this_machines_gpus(clean_env, replicas):
    """Replicas that fit train with nccl, one GPU each; more replicas than GPUs share them with gloo."""
    base = api.load(EXAMPLE)
    example = attrs.evolve(base, args=("--steps", "25"), workers=Role(replicas=replicas - 1) if replicas > 1 else None)
    out, err = io.StringIO(), io.StringIO()
    _, driver, resolved = api.prepare(example, backend="local")
    result = driver.run(example, resolved, out=out, err=err)
    text = out.getvalue()
    assert result.exit_code == 0, text + err.getvalue()
    assert f"summary: world size {replicas}" in text and "replicas in sync: True" in text
    if replicas <= len(GPUS):
        assert "nccl on cuda:0" in text and "GPU(s) go to the training replicas" in err.getvalue()
    else:
        assert "gloo on cuda:0" in text and f"this machine has {len(GPUS)} GPU(s)" in err.getvalue()
        assert "round robin" in err.getvalue()
