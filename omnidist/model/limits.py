"""The bounds on what a job, a native file or a configuration file may say (docs/security.md).

Every input omnidist reads is bounded before work grows with it: a file is read only when it is a
regular file no bigger than :data:`MAX_DOCUMENT_BYTES`; a parsed document may hold at most
:data:`MAX_VALUES` values once its aliases are expanded, nested at most :data:`MAX_DEPTH` deep;
a job's replica counts and sizes are bounded below. Each limit, when crossed, is a
:class:`~omnidist.errors.ValidationError` (exit 2) that names it.

The numbers are far above any real job (the largest training clusters run a few thousand
machines) and low enough that checking a job stays fast and small.
"""

from __future__ import annotations

MAX_DOCUMENT_BYTES = 1024 * 1024
"""A job file, a native spec or a configuration file: at most 1 MiB (real ones hold a few KB)."""

MAX_VALUES = 200_000
"""Values (scalars, lists and mappings) in one parsed document, every alias expanded: a YAML
file whose aliases expand to more (the "billion laughs") is refused before it is built."""

MAX_DEPTH = 64
"""Lists and mappings nested inside each other, at most."""

MAX_NUMBER_DIGITS = 4300
"""Digits in one integer (Python's own limit on turning text into an int)."""

MAX_REPLICAS = 10_000
"""Replicas of one role."""

MAX_ACCELERATORS = 1024
"""Accelerators per replica."""

MAX_CPUS = 16_384
"""vCPUs per replica."""

MAX_MEMORY_GB = 1_048_576
"""Memory per replica, in GB (1 PiB)."""

MAX_DISK_GB = 1_048_576
"""Boot disk per replica, in GB (1 PiB)."""

MAX_TIMEOUT_S = 366 * 86400
"""A job's timeout: at most a year."""

MAX_PROCESSES_PER_NODE = 1024
"""``processes_per_node``, at most."""

MAX_ITEMS = 10_000
"""Entries of one list or mapping of a job (argv words, env variables, labels, inputs, outputs)."""

MAX_TRIALS = 100_000
"""Trials of one hyperparameter search."""

MAX_LOCAL_PROCESSES = 512
"""Processes ``omnidist run`` starts on this machine for one job: every replica gets the whole
cluster's addresses, so a plan grows with the square of the replicas; beyond this the local
backend refuses the job (exit 3) instead of building it."""

SHOWN_CHARS = 200
"""How much of a value an error message quotes; the rest is left out (``…``)."""


def clip(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text``, or its first and last part with how much was left out between them."""
    if len(text) <= limit:
        return text
    keep = max(limit // 2 - 10, 1)
    return f"{text[:keep]}…[{len(text) - 2 * keep} characters left out]…{text[-keep:]}"


def clipped_repr(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` clipped to ``limit`` characters (a 10 MB value is not echoed whole, nor is
    its whole repr built)."""
    if isinstance(value, str) and len(value) > limit:
        keep = max(limit // 2 - 10, 1)
        return f"{value[:keep]!r}…[{len(value) - 2 * keep} characters left out]…{value[-keep:]!r}"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3 * MAX_NUMBER_DIGITS:
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"  # str() refuses so many
    return clip(repr(value), limit)
