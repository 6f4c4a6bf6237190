"""The watchdog that ends a local run's replicas when the process running them dies without
stopping them (``kill -9``; the terminal closing is handled by the runner itself).

Standard library only, run as a script by :func:`start`: it reads the runner's pipe on stdin, one
line per event (``+PGID``: a replica's process group started; ``done``: the runner stopped its
replicas itself). When the pipe ends without ``done``, the runner is gone: every group it named
gets SIGTERM, then SIGKILL after the grace period. The watchdog runs in a session of its own, so
the signals a terminal sends its foreground processes do not reach it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import IO


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal(groups: set[int], sig: int) -> None:
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def watch(events: IO[str], grace: float) -> int:
    """Follow the runner's events; stop the groups it named when they end without ``done``."""
    groups: set[int] = set()
    for line in events:
        line = line.strip()
        if line == "done":
            return 0
        if line.startswith("+") and line[1:].isdigit():
            groups.add(int(line[1:]))
    _signal(groups, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(g) for g in groups):
        time.sleep(0.05)
    _signal(groups, signal.SIGKILL)
    return 0


def start(grace: float) -> subprocess.Popen:
    """Start a watchdog; write ``+PGID`` lines to its ``stdin`` as replicas start, and ``done``
    once they are stopped."""
    return subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), str(grace)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, text=True,
                            bufsize=1)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    sys.exit(watch(sys.stdin, float(sys.argv[1])))
