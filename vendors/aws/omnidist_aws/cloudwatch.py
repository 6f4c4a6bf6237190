"""CloudWatch Logs read page by page: the streams under a prefix, and each stream's new events
from a cursor of ``nextForwardToken`` per stream. Every call goes through the backend client's
retrying ``call`` (its first argument here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, TypeVar

from omnidist.kit import NotFoundError

T = TypeVar("T")
Call = Callable[[Callable[[], T]], T]
"""The backend client's :meth:`omnidist.kit.Client.call`: runs a request under its retry policy."""


def streams(call: Call, logs: Any, group: str, prefix: str) -> list[str]:
    """The names of the streams of ``group`` that start with ``prefix``, sorted (none while the
    group does not exist yet: nothing has logged)."""
    found: list[str] = []
    token: Optional[str] = None
    while True:
        extra = {"nextToken": token} if token else {}
        try:
            page = call(lambda: logs.describe_log_streams(  # noqa: B023
                logGroupName=group, logStreamNamePrefix=prefix, **extra))  # noqa: B023
        except NotFoundError:  # no log group until a container has logged
            return []
        found += [s["logStreamName"] for s in page.get("logStreams") or []]
        token = page.get("nextToken")
        if not token:
            return sorted(found)


def events(call: Call, logs: Any, group: str, stream: str, tokens: dict[str, str]) -> list[str]:
    """The lines of ``stream`` after the cursor ``tokens[stream]`` (which moves on)."""
    lines: list[str] = []
    while True:
        token = tokens.get(stream)
        extra = {"nextToken": token} if token else {}
        page = call(lambda: logs.get_log_events(  # noqa: B023
            logGroupName=group, logStreamName=stream, startFromHead=True, **extra))  # noqa: B023
        found = page.get("events") or []
        lines += [str(e.get("message", "")).rstrip("\n") for e in found]
        following = page.get("nextForwardToken")
        if not found or not following or following == token:
            if following:
                tokens[stream] = following
            return lines
        tokens[stream] = following
