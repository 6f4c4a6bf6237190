"""The local backend end to end: compile, run under each emulation, submit/status/logs/cancel."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

import omnidist
from omnidist import api
from omnidist.backend import registry
from omnidist.backend.values import JobState
from omnidist.errors import NotFoundError, ValidationError
from omnidist.local import LocalBackend, LocalSettings
from omnidist.migration import import_native

from .conftest import process_gone

OMNIDIST = str(Path(sys.executable).with_name("omnidist"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp" / "job.yaml"

PRINT_CONTEXT = """
import json
from omnidist.runtime import context
print("CTX " + json.dumps(context().to_dict()), flush=True)
"""


def test_registered_under_its_name():
    driver = registry.get("local")
    assert isinstance(driver, LocalBackend) and driver.output_format == "json"


def test_compile_is_pure_and_deterministic(job_dir, clean_env, monkeypatch):
    job = job_dir({}, command=["python", "t.py"], image="trainer:1", workers={"replicas": 2})
    probe = ("import json, sys; before = set(sys.modules); import omnidist; "
             f"c = omnidist.compile({str(job)!r}, backend='local'); "
             "print(json.dumps(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
             "('torch', 'google', 'azure', 'tensorflow'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []

    def touched(*args, **kwargs):
        raise AssertionError("compile started a process or opened a socket")

    monkeypatch.setattr(subprocess, "Popen", touched)
    monkeypatch.setattr(socket, "socket", touched)
    first, second = api.compile(job, backend="local"), api.compile(job, backend="local")
    assert first.request == second.request
    assert [r["role"] for r in first.request["replicas"]] == ["primary", "worker", "worker"]
    assert {n.field for n in first.diagnostics} >= {"image", "ports"}
    assert json.loads(first.render())["emulate"] == "vertex"


def test_settings_are_validated_with_their_path(job_dir, clean_env):
    job = job_dir({}, command=["python", "t.py"], backends={"local": {"emulate": "aws"}})
    with pytest.raises(ValidationError, match="backends.local.emulate: must be one of"):
        api.compile(job, backend="local")
    good = job_dir({}, command=["python", "t.py"])
    with pytest.raises(ValidationError, match="grace_period: must be >= 0"):
        api.compile(good, backend="local", settings={"grace_period": -1})


def test_import_native_round_trip(job_dir, clean_env):
    job = omnidist.DistributedJob(name="round", framework="tensorflow", command=["bash", "go.sh"], env={"K": "v"},
                                  workers=omnidist.Role(replicas=2), parameter_servers=omnidist.Role(replicas=1))
    back = import_native(api.compile(job, backend="local").request, backend="local")
    assert attrs.evolve(back, source=None) == job
    with pytest.raises(ValidationError, match="replicas"):
        import_native({"replicas": [{"role": "boss"}]}, backend="local")


def _contexts(stdout: str) -> dict[str, dict]:
    found = {}
    for line in stdout.splitlines():
        label, _, rest = line.partition(" ")
        if rest.startswith("CTX "):
            found[label.strip("[]")] = json.loads(rest[4:])
    return found


@pytest.mark.parametrize("emulate", ["vertex", "ai_platform", "azure_ml"])
def test_each_replica_sees_the_emulated_platform(job_dir, clean_env, emulate):
    job = job_dir({"ctx.py": PRINT_CONTEXT}, command=["python", "ctx.py"], workers={"replicas": 2})
    out = subprocess.run([OMNIDIST, "run", str(job), "--emulate", emulate], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    found = _contexts(out.stdout)
    assert sorted(found) == ["primary-0", "worker-0", "worker-1"]
    port = found["primary-0"]["master_port"]
    for label, (role, index, node) in {"primary-0": ("primary", 0, 0), "worker-0": ("worker", 0, 1),
                                       "worker-1": ("worker", 1, 2)}.items():
        ctx = found[label]
        assert (ctx["platform"], ctx["role"], ctx["index"], ctx["node_rank"], ctx["rank"]) == (
            emulate, role, index, node, node)
        assert (ctx["num_nodes"], ctx["world_size"], ctx["local_rank"]) == (3, 3, 0)
        assert (ctx["master_addr"], ctx["master_port"]) == ("127.0.0.1", port)
        assert len(set(ctx["cluster"]["worker"] + ctx["cluster"]["primary"])) == 3
        assert ctx["job_name"] == (None if emulate == "ai_platform" else "t")


ALL_REDUCE = """
import json, os, warnings
warnings.filterwarnings("ignore")
import torch, torch.distributed as dist
from omnidist.runtime import init_torch
ctx = init_torch()
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
print("SUM " + json.dumps({"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": value.item(),
                          "source": ctx.source}), flush=True)
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.parametrize(("emulate", "framework", "source"), [
    ("ai_platform", "pytorch", "CLUSTER_SPEC"),
    ("azure_ml", "pytorch", "MASTER_ADDR"),
    ("azure_ml", "horovod", "OMPI_COMM_WORLD_RANK"),
])
def test_replicas_form_one_gloo_world(job_dir, clean_env, emulate, framework, source):
    job = job_dir({"allreduce.py": ALL_REDUCE}, command=["python", "allreduce.py"], framework=framework,
                  workers={"replicas": 2}, env={"OMP_NUM_THREADS": "1"})
    out, err = io.StringIO(), io.StringIO()
    job_, driver, settings = api.prepare(job, backend="local", settings={"emulate": emulate})
    result = driver.run(job_, settings, out=out, err=err)
    assert result.exit_code == 0, out.getvalue() + err.getvalue()
    sums = [json.loads(line.split("SUM ", 1)[1]) for line in out.getvalue().splitlines() if "SUM " in line]
    assert sorted(s["rank"] for s in sums) == [0, 1, 2]
    assert {(s["world"], s["sum"], s["source"]) for s in sums} == {(3, 6.0, source)}


WORLD = """
import json, os, warnings
warnings.filterwarnings("ignore")
import torch, torch.distributed as dist
from omnidist.runtime import init_torch
ctx = init_torch()
value = torch.tensor([1.0])
dist.all_reduce(value)
line = "WORLD " + json.dumps({"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": value.item(),
                             "local_rank": ctx.local_rank}) + "\\n"
os.write(1, line.encode())  # one write: the processes of a node share one pipe
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.parametrize(("emulate", "launch"), [("ai_platform", True), ("azure_ml", True), ("azure_ml", False),
                                                 ("vertex", False)])
def test_processes_per_node_gives_the_world_the_platform_would(job_dir, clean_env, emulate, launch):
    """2 nodes x processes_per_node 2 is a world of 4 under every emulation: AI Platform through the
    command's --nproc-per-node (its compiler writes the same), Azure ML through one process per node
    and `omnidist launch`, or through the two processes per node Azure itself starts."""
    command = [OMNIDIST, "launch", "--", "world.py"] if launch else ["python", "world.py"]
    job = job_dir({"world.py": WORLD}, command=command, processes_per_node=2, workers={"replicas": 1},
                  env={"OMP_NUM_THREADS": "1"})
    out = subprocess.run([OMNIDIST, "run", str(job), "--emulate", emulate], capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    found = [json.loads(line.split("WORLD ", 1)[1]) for line in out.stdout.splitlines() if "WORLD " in line]
    assert sorted(r["rank"] for r in found) == [0, 1, 2, 3]
    assert {(r["world"], r["sum"]) for r in found} == {(4, 4.0)}
    assert sorted(r["local_rank"] for r in found) == [0, 0, 1, 1]
    if emulate == "ai_platform":
        assert "--nproc-per-node=2" in out.stdout + out.stderr
        assert "ai_platform compile: processes_per_node: 2 processes per node: carried as" in out.stderr
    elif emulate == "vertex":  # a plain program: the launcher compile adds starts the node's processes
        assert "vertex compile: processes_per_node: 2 processes per node: vertex starts the command once per node" \
            in out.stderr
    elif launch:
        assert "azure_ml compile: distribution.process_count_per_instance: 1: the command is `omnidist launch" in out.stderr
    else:
        assert {line.split("]")[0] for line in out.stdout.splitlines() if "WORLD " in line} == {
            "[primary-0.0", "[primary-0.1", "[worker-0.0", "[worker-0.1"}


def test_azure_emulation_notes_the_empty_ps_of_tensorflow(job_dir, clean_env):
    job = job_dir({"ctx.py": PRINT_CONTEXT}, command=["python", "ctx.py"], framework="tensorflow")
    out = subprocess.run([OMNIDIST, "run", str(job), "--emulate", "azure_ml"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert 'TF_CONFIG has "ps": [] as Azure ML writes it' in out.stderr and "init_tensorflow()" in out.stderr


def test_azure_emulation_refuses_reduction_servers_like_compile(job_dir, clean_env):
    job = job_dir({}, command=["python", "t.py"], image="x:1", primary={"accelerator": "V100:8"},
                  workers={"replicas": 1}, reduction_servers={"replicas": 2})
    compiled = subprocess.run([OMNIDIST, "compile", str(job), "--backend", "azure_ml"], capture_output=True,
                              text=True, timeout=60)
    ran = subprocess.run([OMNIDIST, "run", str(job), "--emulate", "azure_ml"], capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == compiled.returncode == 3
    assert ran.stderr == compiled.stderr and "reduction_servers" in ran.stderr


def test_the_ddp_example_trains_under_vertex_emulation(clean_env):
    job = attrs.evolve(api.load(EXAMPLE), args=("--steps", "25"))
    out, err = io.StringIO(), io.StringIO()
    _, driver, settings = api.prepare(job, backend="local")
    result = driver.run(job, settings, out=out, err=err)
    text = out.getvalue()
    assert result.exit_code == 0, text + err.getvalue()
    assert "[primary-0] summary: world size 3" in text and "replicas in sync: True" in text
    first, last = (float(x) for x in text.split("summary: ")[1].split("loss ")[1].split(",")[0].split(" -> "))
    assert last < first / 10
    assert "image us-docker.pkg.dev/my-project/trainers/ddp-synthetic:1.0 is not used" in err.getvalue()


# --- submit: a detached run recorded in a run directory ---------------------------------------

def _submit(job, tmp_path, **settings):
    return api.submit(
        job, backend="local", settings={"runs_dir": str(tmp_path / "runs"), "grace_period": 1, **settings}
    )


def _wait(handle, timeout=30):
    return handle.wait(poll_interval=0.05, timeout=timeout)


def test_submit_runs_detached_and_records_success(job_dir, clean_env, tmp_path):
    job = job_dir({"hi.py": "from omnidist.runtime import context\nprint('hello from', context().role)\n"},
                  command=["python", "hi.py"], workers={"replicas": 1}, image="x:1")
    handle = _submit(job, tmp_path)
    assert handle.id.startswith("t-") and handle.url.startswith("file://")
    assert _wait(handle).state is JobState.SUCCEEDED
    lines = list(handle.logs())
    assert "[primary-0] hello from primary" in lines and "[worker-0] hello from worker" in lines
    assert any("image x:1 is not used" in line for line in lines)
    handle.cancel()  # a no-op once it has ended
    assert handle.status().state is JobState.SUCCEEDED


def test_submit_records_the_first_failure(job_dir, clean_env, tmp_path):
    job = job_dir({"f.py": "import sys, time\nfrom omnidist.runtime import context\n"
                           "if context().role == 'worker': sys.exit(4)\n"
                           "time.sleep(30)\n"}, command=["python", "f.py"], workers={"replicas": 1})
    handle = _submit(job, tmp_path)
    final = _wait(handle)
    assert final.state is JobState.FAILED and final.message == "worker-0 exited with code 4"


def test_cancel_stops_a_running_submission(job_dir, clean_env, tmp_path):
    job = job_dir({"s.py": "import os, time\nprint('up', os.getpid(), flush=True)\ntime.sleep(60)\n"},
                  command=["python", "s.py"], workers={"replicas": 1})
    handle = _submit(job, tmp_path)
    follow = handle.logs(follow=True)
    pids = []
    while len(pids) < 2:
        line = next(follow)
        if " up " in line:
            pids.append(int(line.split()[-1]))
    assert handle.status().state is JobState.RUNNING
    handle.cancel()  # returns once the replicas are gone: they were stopped, not waited out (60 s)
    assert handle.status().state is JobState.CANCELLED
    assert all(process_gone(pid) for pid in pids)
    assert list(follow)[-1].startswith("omnidist: terminated")  # the follow ends with the run


def test_status_of_an_unknown_run(clean_env, tmp_path):
    handle = api.attach("nope", backend="local", settings={"runs_dir": str(tmp_path)})
    with pytest.raises(NotFoundError, match="no local run 'nope'"):
        handle.status()
    with pytest.raises(NotFoundError):
        api.attach("../etc", backend="local", settings={"runs_dir": str(tmp_path)}).status()


def test_default_runs_dir_is_the_users_state_directory(clean_env, tmp_path):
    from omnidist.local.runs import runs_root

    assert runs_root(None, {"HOME": "/h"}) == Path("/h/.local/state/omnidist/runs")
    assert runs_root(None, {"XDG_STATE_HOME": "/s"}) == Path("/s/omnidist/runs")
    assert runs_root("~/r", {}) == Path("~/r").expanduser()
    assert LocalSettings().emulate is None  # unset: chosen per job (tests/local/test_emulation_choice.py)


def test_a_missing_backend_of_the_default_emulation_is_a_detail_and_news_when_asked_for(job_dir, clean_env,
                                                                                          monkeypatch):
    """``make run`` installs no cloud backend: its example's default emulation (vertex) says that
    only with -v; an emulation the user names says it always."""
    from omnidist.local import emulated

    monkeypatch.setattr(emulated.registry, "installed", lambda: ["local"])
    job = api.load(job_dir({"ok.py": "pass\n"}, command=["python", "ok.py"]))
    said = {}
    for emulate in (None, "vertex"):
        err = io.StringIO()
        result = LocalBackend().run(job, LocalSettings(emulate=emulate), out=io.StringIO(), err=err)
        assert result.exit_code == 0, err.getvalue()
        said[emulate] = err.getvalue()
    assert "backend is not installed" not in said[None]
    assert "the vertex backend is not installed (pip install omnidist-vertex)" in said["vertex"]
