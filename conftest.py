"""Settings every test run shares (the core's tests and every plugin's): one Hypothesis profile.

The suite is deterministic: Hypothesis draws its examples from a seed derived from each test's
name (``derandomize``), so the same commit passes or fails the same way on every run and in CI;
``pytest`` prints the profile in its header. A failure prints the blob that reproduces it
(``print_blob``). Shrinking a failure stops after :data:`SHRINK_SECONDS`, so a failing property
reports within a minute rather than minutes later (the smallest example found so far is shown).

``HYPOTHESIS_PROFILE=explore pytest …`` draws fresh random examples instead (and keeps them in
the local example database), for hunting bugs rather than checking a change.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.internal.conjecture import engine

SHRINK_SECONDS = 30
"""How long a failing example is shrunk before it is reported (Hypothesis's own cap is 300 s)."""

settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", print_blob=True)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "deterministic")
settings.load_profile(PROFILE)
# Hypothesis has no public setting for it: the engine's module constant is the cap it reads.
engine.MAX_SHRINKING_SECONDS = SHRINK_SECONDS


def pytest_report_header(config) -> str:
    """Say which examples this run draws, so a CI log shows how to reproduce it."""
    how = "derandomized (seeded by each test's name)" if settings.default.derandomize else "random"
    return f"hypothesis: profile {PROFILE!r}, examples {how}, shrinking capped at {SHRINK_SECONDS} s"


import pytest  # noqa: E402 - the fixture below is the only pytest use here

pytest_plugins = ["omnidist.testing.shutdown"]  # xdist workers end without a KeyboardInterrupt traceback


@pytest.fixture(autouse=True)
def _private_state(tmp_path_factory, monkeypatch):
    """Every test writes omnidist's state (the job ledger, refreshed prices, local runs) into a
    folder of its own, never into the user's home: ``OMNIDIST_STATE_DIR`` for this process, and
    ``XDG_STATE_HOME`` for the commands tests start (which drop ``OMNIDIST_*`` variables)."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("OMNIDIST_STATE_DIR", str(state / "omnidist"))
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("OMNIDIST_NO_LEDGER", raising=False)
    monkeypatch.delenv("OMNIDIST_PRICES", raising=False)
