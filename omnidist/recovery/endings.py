"""How a job ended, from its status: the shared rules each backend's ``ending_of`` builds on (SPEC §15).

A backend knows its native facts (a secondary status, a preemption error,
an error code, a Kubernetes pod's eviction); it passes them as a small table of
patterns over the failure message, and everything else follows the portable state: a success is
``succeeded``, a cancellation ``cancelled``, any other failure the program's own ``failure``.
The rule of thumb of every platform holds: a preemption is read from the platform's status
fields, never from the program's exit code (a program sent SIGTERM exits 143 on every cloud).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Optional

from omnidist.backend.values import JobState, JobStatus
from omnidist.model.recovery import Ending

Patterns = Iterable[tuple["re.Pattern[str]", Ending]]
"""(a regex over the failure message, the ending it means), first match wins."""


def by_state(status: JobStatus) -> Optional[Ending]:
    """The ending the portable state alone gives: ``None`` for a job that has not ended."""
    if status.state is JobState.SUCCEEDED:
        return Ending.SUCCEEDED
    if status.state is JobState.CANCELLED:
        return Ending.CANCELLED
    if status.state is JobState.FAILED:
        return Ending.FAILURE
    return None


def classify(status: JobStatus, patterns: Patterns = (), text: Optional[str] = None) -> Optional[Ending]:
    """A failed job's ending from ``patterns`` over its message (or ``text``), else :func:`by_state`.

    Args:
        status: the job's status (its message filled in).
        patterns: the backend's native facts, first match wins.
        text: what to match instead of ``status.message`` (a native state and its reason together).
    """
    ended = by_state(status)
    if ended is not Ending.FAILURE:
        return ended
    subject = status.message if text is None else text
    return next((ending for pattern, ending in patterns if pattern.search(subject)), Ending.FAILURE)
