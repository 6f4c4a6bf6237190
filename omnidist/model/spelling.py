"""The "did you mean" of every message: the closest known word to one a user wrote."""

from __future__ import annotations

from collections.abc import Iterable


def close_matches(word: str, known: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """:func:`difflib.get_close_matches`, imported on the first call: only a process that reports a
    misspelling pays for loading difflib."""
    import difflib

    return difflib.get_close_matches(word, list(known), n=n, cutoff=cutoff)
