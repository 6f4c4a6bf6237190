"""The runner: prefixed output, fail-fast, Ctrl-C, and no process left behind."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from omnidist import api
from omnidist.local.plan import ReplicaSpec
from omnidist.local.runner import exit_code, free_ports, group_alive, run

from .conftest import process_gone

OMNIDIST = str(Path(sys.executable).with_name("omnidist"))


def spec(label: str, code: str, cwd: Path, env: dict | None = None) -> ReplicaSpec:
    role, index = label.rsplit("-", 1)
    return ReplicaSpec(role=role, index=int(index), argv=[sys.executable, "-c", code], env=env or {}, cwd=str(cwd))


def test_output_is_prefixed_per_replica(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    result = run([spec("primary-0", "print('hello'); print('two', flush=True)", tmp_path),
                  spec("worker-1", "import sys; sys.stderr.write('oops\\n'); print('x', end='')", tmp_path)],
                 out=out, err=err, grace=1)
    assert (result.exit_code, result.failed) == (0, None)
    lines = out.getvalue().splitlines()
    assert [line for line in lines if line.startswith("[primary-0]")] == ["[primary-0] hello", "[primary-0] two"]
    assert sorted(line for line in lines if line.startswith("[worker-1]")) == ["[worker-1] oops", "[worker-1] x"]


def test_replicas_get_cwd_env_and_no_stray_platform_variables(tmp_path):
    out = io.StringIO()
    code = (
        "import os; print(os.getcwd(), os.environ.get('MINE'), os.environ.get('TF_CONFIG'), os.environ['PATH'] != '')"
    )
    run([spec("primary-0", code, tmp_path, {"MINE": "yes"})], out=out, err=io.StringIO(),
        environ={**os.environ, "TF_CONFIG": "{stray}"})
    assert out.getvalue().strip() == f"[primary-0] {tmp_path} yes None True"


STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)   # only SIGKILL after the grace period ends it
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # same process group
open("pids-" + sys.argv[1], "w").write(f"{os.getpid()} {child.pid}")
print("ready", flush=True)
time.sleep(60)
open("done-" + sys.argv[1], "w").close()   # only if it was waited out instead of stopped
"""


def test_first_failure_stops_everything_fast_with_its_code(tmp_path):
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    wait_then_fail = ("import os, sys, time\nwhile len([f for f in os.listdir('.') if f.startswith('pids-')]) < 2:"
                      " time.sleep(0.02)\nsys.exit(3)")
    specs = [
        ReplicaSpec(role="primary", index=0, argv=[sys.executable, "stubborn.py", "a"], env={}, cwd=str(tmp_path)),
        ReplicaSpec(role="worker", index=0, argv=[sys.executable, "stubborn.py", "b"], env={}, cwd=str(tmp_path)),
        spec("worker-1", wait_then_fail, tmp_path),
    ]
    started = []
    out, err = io.StringIO(), io.StringIO()
    result = run(specs, out=out, err=err, grace=0.5, on_start=lambda procs: started.extend(p.pid for p in procs))
    assert (result.exit_code, result.failed) == (3, "worker-1")
    assert not list(tmp_path.glob("done-*")), "the stubborn replicas were killed, not waited out"
    assert "worker-1 exited with code 3" in err.getvalue()
    pids = [int(p) for f in tmp_path.glob("pids-*") for p in f.read_text().split()]
    assert len(pids) == 4
    assert all(process_gone(pid) for pid in pids + started)
    assert not any(group_alive(pgid) for pgid in started)
    # worker-1 started no child, and the runner reaped it: its group no longer exists at all.
    # (The other groups' orphaned children are reaped by PID 1 — or linger as zombies in
    # containers whose PID 1 never reaps, which group_alive above counts as gone.)
    with pytest.raises(ProcessLookupError):
        os.killpg(started[2], 0)


def test_a_replica_killed_by_a_signal_reports_128_plus_n(tmp_path):
    result = run([spec("primary-0", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", tmp_path)],
                 out=io.StringIO(), err=io.StringIO(), grace=0.5)
    assert (result.exit_code, result.failed) == (137, "primary-0")
    assert exit_code(-15) == 143 and exit_code(4) == 4


def test_a_program_that_cannot_start(tmp_path):
    err = io.StringIO()
    result = run([spec("primary-0", "import time; time.sleep(30)", tmp_path),
                  ReplicaSpec(role="worker", index=0, argv=["/no/such/program"], env={}, cwd=str(tmp_path))],
                 out=io.StringIO(), err=err, grace=0.5)
    assert (result.exit_code, result.failed) == (127, "worker-0") and "cannot start worker-0" in err.getvalue()


def test_free_ports_are_distinct():
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(0 < p < 65536 for p in ports)


READY = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("ready", os.getpid(), child.pid, flush=True)
time.sleep(60)
"""


def test_ctrl_c_stops_every_replica(job_dir, clean_env):
    job = job_dir({"ready.py": READY}, command=["python", "ready.py"], workers={"replicas": 2},
                  backends={"local": {"grace_period": 1}})
    runner = subprocess.Popen([OMNIDIST, "run", str(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    try:
        while len(pids) < 6:
            line = runner.stdout.readline()
            assert line, runner.stderr.read()
            if " ready " in line:
                pids += [int(p) for p in line.split()[2:]]
        runner.send_signal(signal.SIGINT)
        assert runner.wait(timeout=10) == 130
    finally:
        runner.kill()
    assert "interrupted" in runner.stderr.read()
    deadline = time.monotonic() + 30  # a guard against hanging, not a speed budget: reaping is asynchronous
    while not all(process_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(process_gone(p) for p in pids)


def test_run_cli_exit_code_is_the_failing_replicas(job_dir, clean_env):
    job = job_dir({"fail.py": "import sys\nfrom omnidist.runtime import context\n"
                              "sys.exit(7 if context().role == 'worker' else 0)\n"},
                  command=["python", "fail.py"], workers={"replicas": 1})
    out = subprocess.run([OMNIDIST, "run", str(job)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 7 and "worker-0 exited with code 7" in out.stderr
    assert api.load(job).name == "t"


def _started(runner: subprocess.Popen, count: int) -> list[int]:
    pids: list[int] = []
    while len(pids) < count:
        line = runner.stdout.readline()
        assert line, runner.stderr.read()
        if " ready " in line:
            pids += [int(p) for p in line.split()[2:]]
    return pids


def _all_gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 30  # a guard against hanging: reaping is asynchronous
    while not all(process_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return all(process_gone(p) for p in pids)


def test_the_terminal_closing_stops_every_replica(job_dir, clean_env):
    """SIGHUP (the terminal closed) stops the run like Ctrl-C: every replica and its children."""
    job = job_dir({"ready.py": READY}, command=["python", "ready.py"], workers={"replicas": 2},
                  backends={"local": {"grace_period": 1}})
    runner = subprocess.Popen([OMNIDIST, "run", str(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pids = _started(runner, 6)
        runner.send_signal(signal.SIGHUP)
        assert runner.wait(timeout=15) == 128 + signal.SIGHUP
    finally:
        runner.kill()
    assert "SIGHUP" in runner.stderr.read()
    assert _all_gone(pids)


def test_a_runner_killed_outright_leaves_no_replica_behind(job_dir, clean_env):
    """SIGKILL cannot be caught: the runner's watchdog sees its pipe end and stops the replicas,
    the processes they started included."""
    job = job_dir({"ready.py": READY}, command=["python", "ready.py"], workers={"replicas": 2},
                  backends={"local": {"grace_period": 1}})
    runner = subprocess.Popen([OMNIDIST, "run", str(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pids = _started(runner, 6)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
    finally:
        runner.kill()
    assert _all_gone(pids), [p for p in pids if not process_gone(p)]


def test_a_supervisor_killed_outright_leaves_no_replica_behind(tmp_path):
    from omnidist.local import watchdog

    guard = watchdog.start(0.5)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    guard.stdin.write(f"+{child.pid}\n")
    guard.stdin.flush()
    guard.stdin.close()  # what the kernel does when the runner dies
    assert child.wait(timeout=10) == -signal.SIGTERM
    assert guard.wait(timeout=10) == 0


def test_a_run_that_ends_well_tells_its_watchdog_to_leave(tmp_path):
    """After a clean stop the watchdog signals no group (a process group id may be reused)."""
    from omnidist.local import watchdog

    guard = watchdog.start(0.5)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        guard.stdin.write(f"+{child.pid}\ndone\n")
        guard.stdin.close()
        assert guard.wait(timeout=10) == 0
        assert child.poll() is None, "the watchdog left it alone"
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("repeat", range(10))
def test_the_first_of_two_failures_a_few_milliseconds_apart_is_named(tmp_path, repeat):
    """Two replicas fail 30 ms apart, the later one first in the list: the first to fail is named."""
    at = time.time() + 1.0  # both exit at a set moment, however long each took to start
    late = spec("primary-0", f"import time, sys; time.sleep({at + 0.03} - time.time()); sys.exit(3)", tmp_path)
    early = spec("worker-0", f"import time, sys; time.sleep({at} - time.time()); sys.exit(5)", tmp_path)
    result = run([late, early], out=io.StringIO(), err=io.StringIO(), grace=1)
    assert result.failed == "worker-0" and result.exit_code == 5


def test_the_jobs_timeout_stops_every_replica_and_says_so(job_dir, clean_env):
    job = job_dir({"ready.py": READY}, command=["python", "ready.py"], workers={"replicas": 1}, timeout="2s",
                  backends={"local": {"grace_period": 1}})
    began = time.monotonic()
    runner = subprocess.Popen([OMNIDIST, "run", str(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = runner.communicate(timeout=60)
    assert runner.returncode == 124, err
    assert "omnidist: the job's timeout (2s) passed with replicas still running; stopping every replica" in err
    assert time.monotonic() - began < 30  # a guard against the timeout being ignored (the replicas sleep 60 s)
    pids = [int(p) for line in out.splitlines() if " ready " in line for p in line.split()[2:]]
    assert len(pids) == 4
    deadline = time.monotonic() + 30
    while not all(process_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(process_gone(p) for p in pids)


def test_a_replica_killed_by_sigkill_is_named_with_its_likely_cause(job_dir, clean_env):
    job = job_dir({"die.py": "import os, signal\nfrom omnidist.runtime import context\n"
                             "if context().role == 'worker':\n    os.kill(os.getpid(), signal.SIGKILL)\n"
                             "import time; time.sleep(30)\n"},
                  command=["python", "die.py"], workers={"replicas": 1, "memory_gb": 6})
    out = subprocess.run([OMNIDIST, "run", str(job)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 137, out.stderr
    assert ("omnidist: worker-0 was killed by SIGKILL (exit code 137): most likely the kernel's out-of-memory "
            "killer") in out.stderr
    assert "the job sets memory_gb: 6 for it" in out.stderr


def test_other_signals_are_named_without_a_guess(tmp_path):
    err = io.StringIO()
    result = run([spec("worker-0", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", tmp_path)],
                 out=io.StringIO(), err=err, grace=0.5)
    assert result.signal == signal.SIGSEGV and result.reason == "worker-0 was killed by SIGSEGV (exit code 139)"
    assert "omnidist: worker-0 was killed by SIGSEGV (exit code 139); stopping the other replicas" in err.getvalue()


def test_a_submitted_run_is_held_to_its_timeout(job_dir, clean_env):
    from omnidist.backend.values import JobState

    job = job_dir({"sleep.py": "import time; time.sleep(60)\n"}, command=["python", "sleep.py"], timeout="1s",
                  backends={"local": {"grace_period": 1}})
    handle = api.submit(job, backend="local")
    final = handle.wait(poll_interval=0.1, timeout=60)
    assert final.state is JobState.FAILED
    assert final.message == "the job's timeout (1s) passed with replicas still running"
