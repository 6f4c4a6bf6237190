"""Regular expressions compiled when first used, not when their module is imported.

Compiling a pattern costs 0.1–0.7 ms; a module that holds a dozen for messages, imports and error
classification would charge every ``omnidist compile`` for all of them, though a compile uses few.
:func:`lazy_pattern` is ``re.compile`` deferred: the object answers every method and attribute of
the compiled pattern (``match``, ``search``, ``sub``, ``pattern``…), compiling it on the first.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Optional


class LazyPattern:
    """``re.compile(pattern, flags)``, compiled on first use."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = pattern
        self._flags = flags
        self._compiled: Optional[re.Pattern[str]] = None

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now, the first time)."""
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"lazy_pattern({self._source!r})"


if TYPE_CHECKING:
    def lazy_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
        """Type checkers see the compiled pattern the object stands for."""
else:
    def lazy_pattern(pattern: str, flags: int = 0) -> LazyPattern:
        """A pattern compiled on first use; use it as the result of ``re.compile(pattern, flags)``."""
        return LazyPattern(pattern, flags)
