"""The retry policy every client uses: transient errors only, bounded, jittered,
honouring ``Retry-After``.

Clients translate SDK exceptions into omnidist's tree first (at the client boundary), so
the policy only has to look at :class:`~omnidist.errors.TransientBackendError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import tenacity

from omnidist.errors import TransientBackendError

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """How hard a client tries: at most ``attempts`` calls within ``deadline`` seconds,
    waiting an exponentially growing, randomly jittered time between them (capped at
    ``max_wait``), or the server's ``Retry-After`` when it sent one (capped the same)."""

    attempts: int = 5
    deadline: float = 120.0
    initial_wait: float = 0.5
    max_wait: float = 20.0


DEFAULT_POLICY = RetryPolicy()


class _WaitRetryAfter(tenacity.wait.wait_base):
    def __init__(self, fallback: tenacity.wait.wait_base, cap: float):
        self.fallback, self.cap = fallback, cap

    def __call__(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = getattr(exc, "retry_after", None)
        if after is not None:
            return min(float(after), self.cap)
        return self.fallback(state)


def retrying(policy: RetryPolicy = DEFAULT_POLICY, sleep: Callable[[float], None] | None = None) -> tenacity.Retrying:
    """A tenacity ``Retrying`` that retries :class:`TransientBackendError` only and then
    re-raises the last error unchanged."""
    kwargs: dict[str, Any] = {}
    if sleep is not None:
        kwargs["sleep"] = sleep
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TransientBackendError),
        stop=tenacity.stop_after_attempt(policy.attempts) | tenacity.stop_after_delay(policy.deadline),
        wait=_WaitRetryAfter(
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
    from email.utils import parsedate_to_datetime
    from datetime import datetime, timezone

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
