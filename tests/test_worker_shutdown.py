"""pytest-xdist workers end quietly: no ``KeyboardInterrupt`` traceback before the pass summary
when the tests leave garbage whose finalizers are slow (omnidist/testing/shutdown.py)."""

from __future__ import annotations

import subprocess
import sys

LEFT_BEHIND = '''
import time


class SlowToFinalize:
    def __del__(self):
        time.sleep(7)  # longer than the five seconds execnet waits before it interrupts a worker


def test_leaves_a_cycle_only_the_collector_frees():
    import gc
    gc.disable()  # the cycle waits for the last collection, as a busy worker's garbage may
    left = SlowToFinalize()
    left.me = left
'''


def test_a_worker_with_slow_finalizers_ends_without_a_keyboard_interrupt(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_left_behind.py").write_text(LEFT_BEHIND)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                           "-p", "omnidist.testing.shutdown", "test_left_behind.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "1 passed" in output and "KeyboardInterrupt" not in output and "Traceback" not in output, output
