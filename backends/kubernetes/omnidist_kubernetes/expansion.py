"""Kubernetes' ``$(VAR)`` expansion in a container's ``command``, ``args`` and ``env`` values.

The kubelet replaces ``$(NAME)`` with the variable's value when the container defines it,
leaves it as written otherwise, and turns ``$$`` into ``$``. Other platforms expand nothing, so
the compiler escapes what Kubernetes would touch (a portable ``$(date)`` stays ``$(date)``) and
the importer reads it back, reporting the references the file relies on.
"""

from __future__ import annotations

import re

from omnidist.kit import lazy_pattern

_TOUCHED = re.compile(r"\$(?=[$(])")
_REFERENCE = lazy_pattern(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def escape(text: str) -> str:
    """``text`` written so that Kubernetes passes it on unchanged (``$(`` -> ``$$(``, ``$$`` -> ``$$$``)."""
    return _TOUCHED.sub("$$", text)


def unescape(text: str) -> tuple[str, tuple[str, ...]]:
    """What a container sees for ``text`` when none of its references is defined, and the names
    of the ``$(NAME)`` references (in order) that Kubernetes would expand if they were."""
    out, refs, i = [], [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        match = _REFERENCE.match(text, i)
        if match:
            refs.append(match[1])
            out.append(match[0])
            i = match.end()
            continue
        out.append(text[i])
        i += 1
    return "".join(out), tuple(refs)
