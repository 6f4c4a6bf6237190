"""Start every replica as a real process, prefix its output, and stop them all together.

Each replica runs in its own session, so it is the leader of its own process group and
whatever it starts (torchrun children, data loader workers) stays in that group. The first
replica to exit non-zero ends the run: every group gets SIGTERM, then SIGKILL after the
grace period, and the run's exit code is that replica's. Ctrl-C (SIGINT), SIGTERM and SIGHUP (the
terminal closing) to the runner stop every group the same way. A runner killed outright (SIGKILL)
cannot: a watchdog of its own (:mod:`omnidist.local.watchdog`) sees its pipe end and stops the
groups instead. Nothing is left behind.

``python -m omnidist.local.runner RUN_DIR`` is the detached supervisor behind the local
backend's ``submit``: it runs the plan saved in RUN_DIR and records state and logs there.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import IO, Optional

import attrs

from omnidist.local import watchdog
from omnidist.local.environments import inherited
from omnidist.local.plan import ReplicaSpec
from omnidist.local.preemption import Preempter, Preemption
from omnidist.secrets import mask_text, secret_values

POLL_SECONDS = 0.05
"""How often the runner looks at its replicas; bounds how late fail-fast reacts."""

TIMEOUT_EXIT = 124
"""The exit code of a run stopped by the job's ``timeout:`` (as timeout(1) exits)."""


@attrs.frozen
class RunResult:
    """How a local run ended: the exit code, and which replica decided it."""

    exit_code: int
    failed: Optional[str] = None
    """Label of the first replica that failed (``worker-1``), if one did."""
    interrupted: bool = False
    """True when Ctrl-C or SIGTERM stopped the run."""
    timed_out: bool = False
    """True when the job's ``timeout:`` passed with replicas still running."""
    signal: Optional[int] = None
    """The signal that killed the failed replica, when a signal did."""
    reason: str = ""
    """Why the run failed or was stopped, said for a person (``worker-0 exited with code 3``)."""
    preempted: bool = False
    """True when ``--preempt`` took a replica's machine away (SPEC §15)."""

    @property
    def ended(self) -> str:
        """How the run ended, as a cloud's job would (:class:`omnidist.model.recovery.Ending`)."""
        if self.preempted:
            return "preemption"
        if self.interrupted:
            return "cancelled"
        return "succeeded" if self.exit_code == 0 else "failure"


class _Terminated(Exception):
    """SIGTERM or SIGHUP reached the runner."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports on 127.0.0.1 that the OS says are free right now."""
    with ExitStack() as stack:  # hold every socket until all are chosen, so none repeats
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def exit_code(returncode: int) -> int:
    """A shell-style exit code: killed by signal N -> 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def _failed(code: int, spec: ReplicaSpec) -> RunResult:
    return RunResult(exit_code(code), failed=spec.label, signal=-code if code < 0 else None)


def _timed_out(deadline: Optional[float]) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def ended(result: RunResult, memory_gb: Optional[float] = None) -> str:
    """How the failed replica ended, said for a person: its exit code, or the signal that killed it
    and the likely sender (SIGKILL that nobody here sent is most often the kernel's out-of-memory
    killer)."""
    if result.signal is None:
        return f"{result.failed} exited with code {result.exit_code}"
    try:
        name = signal.Signals(result.signal).name
    except ValueError:
        name = f"signal {result.signal}"
    said = f"{result.failed} was killed by {name} (exit code {result.exit_code})"
    if result.signal == signal.SIGKILL:
        asked = (f"the job sets memory_gb: {memory_gb:g} for it, which a local run does not hold it to"
                 if memory_gb else "the job sets no memory_gb")
        said += (f": most likely the kernel's out-of-memory killer, the replica wanting more memory than this "
                 f"machine had free ({asked}; `dmesg` or `journalctl -k` names the kill)")
    return said


def group_alive(pgid: int) -> bool:
    """True while any non-zombie process is in process group ``pgid``.

    Zombies count as gone: a container's PID 1 often never reaps orphans, and a zombie
    holds no resources but would keep ``killpg(pgid, 0)`` succeeding.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _signal_groups(procs: Sequence[subprocess.Popen], sig: int) -> None:
    for proc in procs:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_all(procs: Sequence[subprocess.Popen], grace: float) -> None:
    """SIGTERM every replica's process group, SIGKILL what is left after ``grace`` seconds."""
    _signal_groups(procs, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        for proc in procs:
            proc.poll()  # reap the leaders, so their groups can empty
        if not any(group_alive(p.pid) for p in procs):
            break
        time.sleep(POLL_SECONDS)
    _signal_groups(procs, signal.SIGKILL)
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail
            pass
    # SIGKILL is delivered asynchronously: return only once the groups are really empty.
    deadline = time.monotonic() + 2.0
    while any(group_alive(p.pid) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.01)


def _pump(stream: IO[bytes], prefix: str, out: IO[str], lock: threading.Lock,
          secrets: Optional[frozenset[str]] = None) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if secrets is not None:
            line = mask_text(line, secrets)
        with lock:
            out.write(f"{prefix}{line}\n")
            out.flush()
    stream.close()


def _watch(procs: Sequence[subprocess.Popen], specs: Sequence[ReplicaSpec],
           deadline: Optional[float] = None) -> RunResult:
    """Wait until all replicas succeed, the first one fails, or ``deadline`` (a monotonic time) passes.

    On Linux each replica's end is a process file descriptor in one epoll set, which reports them
    in the order they ended: of two replicas failing a few milliseconds apart, the first is named
    (polling in list order would name whichever comes first in the list). Elsewhere, a poll."""
    try:
        fds = [os.pidfd_open(proc.pid) for proc in procs]
    except (AttributeError, OSError):  # no pidfd here (macOS, an old kernel): poll
        return _poll(procs, specs, deadline)
    selector = selectors.DefaultSelector()
    try:
        for fd, proc, spec in zip(fds, procs, specs):
            selector.register(fd, selectors.EVENT_READ, (proc, spec))
        running = len(procs)
        while running:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            events = selector.select(wait)
            if not events and _timed_out(deadline):
                return RunResult(TIMEOUT_EXIT, timed_out=True)
            for key, _ in events:
                proc, spec = key.data
                selector.unregister(key.fd)
                running -= 1
                code = proc.wait()
                if code != 0:
                    return _failed(code, spec)
        return RunResult(0)
    finally:
        selector.close()
        for fd in fds:
            os.close(fd)


def _poll(procs: Sequence[subprocess.Popen], specs: Sequence[ReplicaSpec],
          deadline: Optional[float] = None) -> RunResult:
    """:func:`_watch` without process file descriptors: look at each replica every :data:`POLL_SECONDS`."""
    while True:
        running = False
        for proc, spec in zip(procs, specs):
            code = proc.poll()
            if code is None:
                running = True
            elif code != 0:
                return _failed(code, spec)
        if not running:
            return RunResult(0)
        if _timed_out(deadline):
            return RunResult(TIMEOUT_EXIT, timed_out=True)
        time.sleep(POLL_SECONDS)


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated(signum)


_STOPPING = (signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a run like Ctrl-C does (SIGHUP: the terminal closed)."""


def run(
    specs: Sequence[ReplicaSpec],
    *,
    out: Optional[IO[str]] = None,
    err: Optional[IO[str]] = None,
    grace: float = 5.0,
    environ: Optional[dict[str, str]] = None,
    on_start: Optional[Callable[[list[subprocess.Popen]], None]] = None,
    masked: bool = False,
    timeout: Optional[float] = None,
    memory_gb: Optional[dict[str, float]] = None,
    preempt: Optional[Preemption] = None,
) -> RunResult:
    """Run every replica to the end (or to the first failure) and return how it ended.

    Args:
        specs: the processes to start (:func:`omnidist.local.plan.build`).
        out: where prefixed replica output goes (default stdout).
        err: where the runner's own lines go (default stderr).
        grace: seconds between SIGTERM and SIGKILL when stopping replicas.
        environ: the environment replicas inherit (default ``os.environ``), minus platform variables.
        on_start: called with the started processes (the supervisor records their groups).
        masked: mask the replicas' secrets in their output (the values of their secret-looking
            variables, and secrets by their shape), as every display of a job's output does; the
            supervisor's run log keeps the output as it was written.
        timeout: seconds the run may take (the job's ``timeout:``); then every replica is stopped
            and the run exits with :data:`TIMEOUT_EXIT`.
        memory_gb: each role's (``ReplicaSpec.role``) memory_gb, said when a replica is SIGKILLed.
        preempt: preempt one replica as its platform would (:mod:`omnidist.local.preemption`).
    """
    out, err = out or sys.stdout, err or sys.stderr
    base = inherited(dict(os.environ if environ is None else environ))
    lock = threading.Lock()
    procs: list[subprocess.Popen] = []
    pumps: list[threading.Thread] = []
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, _on_sigterm) for sig in _STOPPING} if main_thread else {}
    result = RunResult(0)
    secrets = secret_values([spec.env for spec in specs]) if masked else None
    guard = watchdog.start(grace)
    started = time.monotonic()
    preempter: Optional[Preempter] = None
    try:
        for spec in specs:
            env = {**base, **spec.env, "PYTHONUNBUFFERED": "1"}
            try:
                proc = subprocess.Popen(spec.argv, cwd=spec.cwd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as exc:
                err.write(f"omnidist: cannot start {spec.label} ({' '.join(spec.argv)}): {exc}\n")
                result = RunResult(127, failed=spec.label)
                return result
            procs.append(proc)
            _tell(guard, f"+{proc.pid}")
            pump = threading.Thread(target=_pump, args=(proc.stdout, f"[{spec.label}] ", out, lock, secrets),
                                    daemon=True)
            pump.start()
            pumps.append(pump)
        if on_start:
            on_start(procs)
        if preempt is not None:
            preempter = Preempter(preempt, procs, specs).start()
        deadline = None if timeout is None else started + timeout
        result = _watch(procs, specs, deadline)
        if preempter is not None and preempter.fired.is_set():
            preempter.cancel()
            _say(err, f"omnidist: {preempter.describe()}; the run ended by preemption\n")
            return RunResult(128 + preempt.signum, failed=preempt.replica, preempted=True)
        if result.failed:
            role = next(spec.role for spec in specs if spec.label == result.failed)
            result = attrs.evolve(result, reason=ended(result, (memory_gb or {}).get(role)))
            err.write(f"omnidist: {result.reason}; stopping the other replicas\n")
        elif result.timed_out:
            result = attrs.evolve(result, reason=f"the job's timeout ({_duration(timeout)}) passed with replicas "
                                                 "still running")
            err.write(f"omnidist: {result.reason}; stopping every replica (exit code {TIMEOUT_EXIT})\n")
        return result
    except KeyboardInterrupt:
        err.write("omnidist: interrupted; stopping every replica\n")
        result = RunResult(130, interrupted=True)
        return result
    except _Terminated as exc:
        what = "the terminal closed (SIGHUP)" if exc.signum == signal.SIGHUP else "terminated"
        _say(err, f"omnidist: {what}; stopping every replica\n")
        result = RunResult(128 + exc.signum, interrupted=True)
        return result
    finally:
        # A second Ctrl-C, SIGTERM or SIGHUP must not cut the cleanup short and leave processes behind.
        previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        if preempter is not None:
            preempter.cancel()
        try:
            stop_all(procs, grace)
            _tell(guard, "done")
            for pump in pumps:
                pump.join(timeout=2)
        finally:
            _close(guard)
            if main_thread:
                signal.signal(signal.SIGINT, previous_int)
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        _flush(err)


def _duration(seconds: float) -> str:
    from omnidist.model.serde import format_duration

    return format_duration(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}s"


def _tell(guard: subprocess.Popen, line: str) -> None:
    """Tell the watchdog one event (it may be gone already: then there is no one to tell)."""
    try:
        guard.stdin.write(line + "\n")
        guard.stdin.flush()
    except (OSError, ValueError):
        pass


def _close(guard: subprocess.Popen) -> None:
    try:
        guard.stdin.close()
    except OSError:
        pass
    try:
        guard.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - it exits on "done" at once
        guard.kill()


def _flush(stream: IO[str]) -> None:
    try:
        stream.flush()
    except (OSError, ValueError):  # the terminal it wrote to is gone (SIGHUP)
        pass


def _say(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
    except (OSError, ValueError):  # the terminal is gone: the replicas are stopped all the same
        pass


def supervise(run_dir: str) -> int:
    """Run the plan saved in ``run_dir`` and record its state and output there (``submit``)."""
    from omnidist.local.runs import RunDir

    store = RunDir(run_dir)
    plan = store.read_plan()
    specs = [ReplicaSpec.from_dict(r) for r in plan["replicas"]]
    with open(store.log_path, "a", encoding="utf-8") as log:
        for note in plan.get("notes", []):
            log.write(f"omnidist: note: {note}\n")
        log.flush()
        store.update(state="running", started=time.time(), supervisor_pid=os.getpid())
        result = run(specs, out=log, err=log, grace=plan.get("grace_period", 5.0), timeout=plan.get("timeout"),
                     memory_gb=plan.get("memory_gb"),
                     on_start=lambda procs: store.update(groups=[p.pid for p in procs]))
    if store.cancel_requested():
        state = "cancelled"
    else:
        state = "succeeded" if result.exit_code == 0 else "failed"
    store.update(state=state, exit_code=result.exit_code, failed=result.failed, reason=result.reason,
                 finished=time.time())
    return 0


if __name__ == "__main__":
    sys.exit(supervise(sys.argv[1]))
