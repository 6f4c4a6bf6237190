"""Lazily compiled regular expressions (omnidist.patterns) answer as the compiled pattern does."""

from __future__ import annotations

import re

from omnidist.patterns import LazyPattern, lazy_pattern


def test_a_lazy_pattern_compiles_on_first_use_and_answers_as_re_compile():
    lazy = lazy_pattern(r"^(?P<n>\d+)([smhd]?)$", re.I)
    assert isinstance(lazy, LazyPattern) and lazy._compiled is None
    real = re.compile(r"^(?P<n>\d+)([smhd]?)$", re.I)
    for text in ("90M", "12", "x"):
        got, want = lazy.match(text), real.match(text)
        assert (got and got.groups()) == (want and want.groups())
    assert lazy._compiled is not None
    assert lazy.sub("<\\g<n>>", "7h") == real.sub("<\\g<n>>", "7h")
    assert (lazy.pattern, lazy.flags, lazy.groupindex) == (real.pattern, real.flags, real.groupindex)
    assert [m.group() for m in lazy_pattern(r"\d").finditer("a1b2")] == ["1", "2"]
    assert "lazy_pattern" in repr(lazy)
