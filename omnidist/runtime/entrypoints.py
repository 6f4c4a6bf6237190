"""Entry points of installed distributions, read with the standard library only.

Discovery reads only what it needs: the ``entry_points.txt`` of each distribution installed in a
folder on ``sys.path`` (``*.dist-info``, or ``*.egg-info`` for a source checkout), and only one
group's section of it. ``importlib.metadata`` would import a dozen modules (about 20 ms) and parse
every distribution's metadata to answer the same question. The backend registry
(``omnidist.backends``), the vendor kits (``omnidist.vendors``) and the runtime's platform
modules (``omnidist.platforms``, read inside training containers) all read their groups here.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any, Optional

_METADATA_SUFFIXES = (".dist-info", ".egg-info")


@dataclasses.dataclass(frozen=True)
class Plugin:
    """One entry point of a group: its name, where its object is (``module:Class``, or a module),
    and the distribution (and version) that declares it."""

    name: str
    value: str
    distribution: str
    version: str

    def load(self) -> Any:
        """Import the module and return the object the entry point names."""
        module, _, attribute = self.value.partition(":")
        found: Any = importlib.import_module(module.strip())
        for part in filter(None, attribute.split("[")[0].strip().split(".")):
            found = getattr(found, part)
        return found


def _section(text: str, group: str) -> Iterator[tuple[str, str]]:
    """The ``name = value`` lines of one ``[group]`` of an entry_points.txt (an INI file)."""
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[":
            inside = line.strip("[]").strip() == group
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            yield name.strip(), value.strip()


def _version(folder: str, meta: str, stem: str) -> str:
    """The version in the folder's name (``name-1.2.3.dist-info``), else in its metadata file."""
    parts = stem.split("-")
    if len(parts) > 1:
        return parts[1]
    for filename in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, meta, filename), encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("Version:"):
                        return line.partition(":")[2].strip()
        except OSError:
            continue
    return ""


def discover(paths: Iterable[str], group: str, hidden: Optional[list[Plugin]] = None) -> dict[str, Plugin]:
    """The entry points of ``group`` declared by the distributions installed in ``paths``.

    A distribution found in an earlier folder hides one of the same name in a later folder
    (as the import system does), and so does the first entry point of a given name: those
    entry points, hidden by another distribution's of the same name, are added to ``hidden``.
    """
    found: dict[str, Plugin] = {}
    seen: set[str] = set()
    for folder in paths:
        folder = folder or os.curdir
        try:
            with os.scandir(folder) as entries:
                metas = sorted(e.name for e in entries if e.name.endswith(_METADATA_SUFFIXES))
        except OSError:  # not a folder (a zip, a missing path)
            continue
        for meta in metas:
            stem = meta.rsplit(".", 1)[0]
            distribution = stem.split("-")[0]
            key = re.sub(r"[-_.]+", "-", distribution).lower()
            if key in seen:
                continue
            seen.add(key)
            try:
                with open(os.path.join(folder, meta, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except OSError:
                continue
            for name, value in _section(text, group):
                point = Plugin(name=name, value=value, distribution=distribution, version=_version(folder, meta, stem))
                if name not in found:
                    found[name] = point
                elif hidden is not None:
                    hidden.append(point)
    return found
