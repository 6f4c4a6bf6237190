"""The retry policy every client uses: transient errors only, bounded, jittered,
honouring ``Retry-After`` (the policy's numbers are settings: :mod:`omnidist.backend.settings`).

Clients translate SDK exceptions into omnidist's tree first (at the client boundary), so
the policy only has to look at :class:`~omnidist.errors.TransientBackendError`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
from typing import TYPE_CHECKING, Any, TypeVar

from omnidist.backend.settings import DEFAULT_POLICY, RetryPolicy
from omnidist.errors import TransientBackendError

if TYPE_CHECKING:  # tenacity imports asyncio and tornado helpers: ~45 ms a CLI start should not pay
    import tenacity

T = TypeVar("T")


def _wait_retry_after(fallback: Callable[[Any], float], cap: float) -> Callable[[Any], float]:
    """Wait the server's ``Retry-After`` (capped) when the error carries one, else ``fallback``."""

    def wait(state: Any) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        return min(float(after), cap) if after is not None else fallback(state)

    return wait


def retrying(policy: RetryPolicy = DEFAULT_POLICY, sleep: Callable[[float], None] | None = None) -> tenacity.Retrying:
    """A tenacity ``Retrying`` that retries :class:`TransientBackendError` only and then
    re-raises the last error unchanged."""
    import tenacity

    kwargs: dict[str, Any] = {}
    if sleep is not None:
        kwargs["sleep"] = sleep
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TransientBackendError),
        stop=tenacity.stop_after_attempt(policy.attempts) | tenacity.stop_after_delay(policy.deadline),
        wait=_wait_retry_after(
            tenacity.wait_random_exponential(multiplier=policy.initial_wait, max=policy.max_wait),
            policy.max_wait,
        ),
        reraise=True,
        **kwargs,
    )


def call(fn: Callable[[], T], policy: RetryPolicy = DEFAULT_POLICY, sleep: Callable[[float], None] | None = None) -> T:
    """Call ``fn`` under the policy."""
    return retrying(policy, sleep)(fn)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from datetime import datetime
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
