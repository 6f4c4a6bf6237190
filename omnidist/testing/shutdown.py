"""A pytest plugin (loaded by the repository's ``conftest.py``) that lets pytest-xdist workers
end quietly.

When the controller has every worker's results it tells the workers to stop, and execnet gives
each worker five seconds to finish before it sends the worker SIGINT. What a worker still does
then is pytest's last garbage collection (at unconfigure), which runs the finalizers of whatever
the tests left in reference cycles (sockets, streamed responses, SDK sessions, suspended
generators). On a busy machine that can pass five seconds; the SIGINT then lands inside a
finalizer and pytest prints its ``KeyboardInterrupt`` traceback just before the pass summary,
which reads like a failure. Collecting at session finish, before the worker reports that it is
done, runs those finalizers while nothing is timing the worker.
"""

from __future__ import annotations

import gc
import os


def pytest_sessionfinish(session: object) -> None:
    """Run the finalizers of what the tests left behind before the worker says it is finished
    (pytest-xdist sends that after every other ``pytest_sessionfinish``)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        gc.collect()
