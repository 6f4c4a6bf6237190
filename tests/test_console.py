"""The console script (omnidist.console): the CLI process's collector settings, and the library's untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from omnidist import console

ROOT = Path(__file__).resolve().parents[1]


def test_the_cli_collects_less_often_but_still_collects_and_freezes_at_exit(tmp_path):
    probe = (
        "import atexit, gc, sys\n"
        "from omnidist import console\n"
        "before = gc.get_threshold()\n"
        "sys.argv = ['omnidist', 'compile', sys.argv[1], '--backend', 'local', '--no-notes']\n"
        "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0, file=sys.stderr))\n"
        "try:\n    console.main()\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('thresholds:', before[0], gc.get_threshold()[0], gc.isenabled(), gc.get_freeze_count(), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(ROOT / "examples" / "job.yaml")], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    shown = next(line.split()[1:] for line in lines if line.startswith("thresholds:"))
    assert shown[1:] == [str(console.GEN0_THRESHOLD), "True", "0"]  # still collecting, nothing frozen yet
    assert int(shown[0]) < console.GEN0_THRESHOLD
    assert lines[-1] == "frozen at exit: True"  # atexit runs last-registered first: the freeze ran before
    assert done.stdout.strip()  # the command ran: its request is printed


def test_python_m_omnidist_cli_is_the_console_script(tmp_path):
    done = subprocess.run([sys.executable, "-m", "omnidist.cli", "--version"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and "omnidist" in done.stdout


def test_the_library_leaves_the_collector_as_it_is(tmp_path):
    probe = ("import gc, sys, omnidist\n"
             "before = gc.get_threshold()\n"
             "omnidist.compile(sys.argv[1], backend='local')\n"
             "assert gc.get_threshold() == before and gc.get_freeze_count() == 0, gc.get_threshold()\n")
    done = subprocess.run([sys.executable, "-c", probe, str(ROOT / "examples" / "job.yaml")], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
