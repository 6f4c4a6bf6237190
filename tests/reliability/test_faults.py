"""The cross-backend fault matrix: every cloud backend, through its real SDK client, against its
fake service misbehaving on the create call.

Transient faults must be retried into exactly one job; final ones must fail at once with the
server's own message. Each row bounds the create attempts and the retry waits asked for (the
sleep is injected, so nothing really waits); the wall time of the same rows is measured in
bench/budgets.py, not asserted here.
"""

from __future__ import annotations

import attrs
import pytest

from omnidist import errors
from omnidist.testing import Fault

SLOW_SERVER_S = 1.5
"""How long the server sits on a request in the timeout row."""

CLIENT_TIMEOUT_S = 0.3
"""The per-request timeout the timeout row sets, well below :data:`SLOW_SERVER_S`."""


@attrs.frozen
class Retried:
    """A transient fault: the submit must end with exactly one job."""

    fault: Fault
    waits: tuple[float, ...] | None = None
    """The exact waits the policy must ask for (``None``: one wait, any length)."""


@attrs.frozen
class Fails:
    """A final fault: the submit must raise ``error`` at once, carrying ``message``."""

    fault: Fault
    error: type[errors.BackendError]
    message: str


MATRIX = {
    "429-retry-after": Retried(Fault.http(429, "Quota exceeded: too many jobs", retry_after=3), waits=(3.0,)),
    "500": Retried(Fault.http(500, "Internal error encountered")),
    "503": Retried(Fault.http(503, "The service is currently unavailable")),
    "503-retry-after-0": Retried(Fault.http(503, "try again", retry_after=0), waits=(0.0,)),
    "connection-reset": Retried(Fault.reset()),
    "timeout": Retried(Fault.slow(SLOW_SERVER_S)),
    "response-lost-after-create": Retried(Fault.drop_after_create()),
    "400": Fails(Fault.http(400, "Invalid value at 'job.labels' (bad-label-7)"), errors.InvalidRequestError,
                 "bad-label-7"),
    "403": Fails(Fault.http(403, "Permission 'jobs.create' denied on project (perm-7)"),
                 errors.PermissionDeniedError, "perm-7"),
    "404": Fails(Fault.http(404, "Workspace or project not found (nf-7)"), errors.NotFoundError, "nf-7"),
}
"""Fault row name -> the expected outcome."""


KNOWN_GAPS: dict[tuple[str, str], str] = {}
"""Rows a backend is known to fail today, with why; strict, so a fix shows up as XPASS."""


@pytest.mark.parametrize("row", sorted(MATRIX))
def test_fault_matrix(cloud, row, request):
    expected = MATRIX[row]
    if (cloud.name, row) in KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[cloud.name, row]))
    overrides = {"request_timeout_s": CLIENT_TIMEOUT_S} if row == "timeout" else {}
    cloud.server.fail(*cloud.create, expected.fault)
    if isinstance(expected, Fails):
        with pytest.raises(expected.error) as caught:
            cloud.submit(**overrides)
        assert expected.message in str(caught.value), "the server's own message must reach the user"
        assert caught.value.status == expected.fault.status
        assert cloud.creates() == 1 and cloud.sleeps == [], "a final error is not retried"
        assert cloud.job_count() == 0
        return
    handle = cloud.submit(**overrides)
    # In the timeout row the abandoned attempt is still on the server (and one sleep below proves
    # the client gave up on it rather than waiting the answer out): let it finish before counting.
    assert cloud.server.wait_idle(), "the server finished every request"
    assert cloud.job_count() == 1, f"{row}: a retried create must leave exactly one job"
    assert handle.status().state.value in ("queued", "pending", "running"), "the handle names the created job"
    assert 1 <= cloud.creates() <= 2, "one failed attempt, at most one more create"
    assert len(cloud.sleeps) == 1
    if expected.waits is not None:
        assert tuple(cloud.sleeps) == expected.waits, "Retry-After decides the wait"


def test_persistent_outage_stops_at_retry_attempts(cloud):
    cloud.server.fail(*cloud.create, *[Fault.http(503, "backend unavailable (outage-7)")] * 10)
    with pytest.raises(errors.TransientBackendError, match="outage-7"):
        cloud.submit()
    assert cloud.creates() == 4, "exactly the configured number of attempts"
    assert len(cloud.sleeps) == 3
    assert cloud.job_count() == 0


def test_throttled_status_poll_is_retried(cloud):
    handle = cloud.submit()
    polls = len(cloud.server.calls(*cloud.poll))
    cloud.server.fail(*cloud.poll, Fault.http(429, "slow down", retry_after=0), Fault.reset())
    assert handle.status().state.value in ("queued", "pending", "running")
    assert len(cloud.server.calls(*cloud.poll)) - polls == 3, "two failed polls, then the answer"
    assert len(cloud.sleeps) == 2 and cloud.sleeps[0] == 0.0
