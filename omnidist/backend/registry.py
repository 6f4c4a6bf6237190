"""Backend discovery through the entry-point group ``omnidist.backends``.

Backends load lazily (the cloud SDKs they need are heavy) and are checked against the
contract when they load, so a broken plugin fails with a message, not deep inside compile.

Discovery reads only what it needs: the ``entry_points.txt`` of each distribution installed
in a folder on ``sys.path`` (``*.dist-info``, or ``*.egg-info`` for a source checkout), once
per process, and only the ``[omnidist.backends]`` section of it. ``importlib.metadata`` would
import a dozen modules and parse every distribution's metadata to answer the same question;
that was most of the time a short command such as ``omnidist compile`` took.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable
from typing import Optional, Union

import attrs

from omnidist.backend.contract import Backend, Capabilities, Imports
from omnidist.errors import BackendNotFoundError
from omnidist.model.spelling import close_matches
from omnidist.runtime import entrypoints
from omnidist.runtime.entrypoints import Plugin

GROUP = "omnidist.backends"

DISTRIBUTION_PREFIX = "omnidist-"
"""A backend plugin's distribution is ``omnidist-<name>``, with ``-`` for ``_`` (``omnidist-my-cloud`` for
``my_cloud``)."""


def discover(paths: Iterable[str], group: str = GROUP) -> dict[str, Plugin]:
    """The entry points of ``group`` (the backends') declared by the distributions installed in
    ``paths``: :func:`omnidist.runtime.entrypoints.discover`."""
    return entrypoints.discover(paths, group)


@functools.lru_cache(maxsize=1)
def _entry_points() -> dict[str, Plugin]:
    return discover(list(sys.path))


def refresh() -> None:
    """Forget discovered and loaded backends, and the runtime platforms listed (after installing a
    plugin in a running session)."""
    from omnidist.runtime import platforms

    _entry_points.cache_clear()
    get.cache_clear()
    platforms.modules.cache_clear()


def installed() -> list[str]:
    """Names of the installed backends, sorted."""
    return sorted(_entry_points())


def compiled_platforms() -> list[str]:
    """The runtime platforms a backend of the same name compiles for (those whose module says
    how to follow a compiled request: :mod:`omnidist.runtime.platforms`), sorted."""
    from omnidist.runtime import platforms

    return sorted(m.NAME for m in platforms.modules() if hasattr(m, "follow"))


def known() -> list[str]:
    """Every backend name omnidist knows of: the installed ones, and one per platform that a
    backend compiles for (installed or not)."""
    return sorted(set(compiled_platforms()) | set(_entry_points()))


def missing() -> list[str]:
    """Known backends that are not installed."""
    return [name for name in known() if name not in _entry_points()]


def distribution(name: str) -> str:
    """The distribution that provides backend ``name``: the installed one, else the plugin
    naming rule (:data:`DISTRIBUTION_PREFIX`)."""
    plugin = _entry_points().get(name)
    found = plugin.distribution if plugin is not None else DISTRIBUTION_PREFIX + name
    return re.sub(r"[-_.]+", "-", found).lower()


def distribution_version(name: str) -> str:
    """The installed version of the distribution providing backend ``name``."""
    plugin = _entry_points().get(name)
    return plugin.version if plugin is not None else ""


def _unknown(name: str) -> BackendNotFoundError:
    if name in known():
        return BackendNotFoundError(
            f"backend {name!r} is not installed; install it with `pip install {distribution(name)}`"
        )
    close = close_matches(name, known(), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return BackendNotFoundError(
        f"Unknown backend {name!r}.{hint} Installed: {', '.join(installed()) or 'none'}"
    )


def check_contract(name: str, cls: object) -> type[Backend]:
    """Make sure a loaded plugin is a usable backend; say what is wrong otherwise."""
    problems = []
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise BackendNotFoundError(f"entry point {name!r} in group {GROUP} does not name a Backend subclass")
    if getattr(cls, "name", None) != name:
        problems.append(f"its name is {getattr(cls, 'name', None)!r}, but the entry point is {name!r}")
    if not isinstance(getattr(cls, "capabilities", None), Capabilities):
        problems.append("it has no Capabilities")
    if not attrs.has(getattr(cls, "settings_type", None) or object):
        problems.append("its settings_type is not an attrs class")
    if getattr(cls, "__abstractmethods__", None):
        problems.append(f"it does not implement {', '.join(sorted(cls.__abstractmethods__))}")
    if issubclass(cls, Imports) and (cls.import_native is Imports.import_native
                                     and cls.import_with_notes is Imports.import_with_notes):
        problems.append("it implements neither import_native nor import_with_notes")
    if problems:
        raise BackendNotFoundError(f"backend {name!r} ({cls.__module__}) breaks the contract: " + "; ".join(problems))
    return cls


def importer(name: Union[str, Backend]) -> Imports:
    """Backend ``name`` (or the backend itself), which reads native files
    (:class:`~omnidist.backend.contract.Imports`).

    Raises:
        BackendNotFoundError: as :func:`get`, or the backend reads no native files.
    """
    found = get(name) if isinstance(name, str) else name
    if not isinstance(found, Imports):
        raise BackendNotFoundError(f"backend {found.name!r} reads no native files (it compiles and submits only); "
                                   "import from a backend that does")
    return found


@functools.cache
def get(name: str) -> Backend:
    """The backend instance for ``name``, loading its package on first use.

    Raises:
        BackendNotFoundError: unknown name (with a suggestion), package not installed (with
            the ``pip install`` line), or a plugin that breaks the contract.
    """
    ep: Optional[Plugin] = _entry_points().get(name)
    if ep is None:
        raise _unknown(name)
    try:
        cls = ep.load()
    except Exception as exc:  # a plugin that fails to import must not take the CLI down
        raise BackendNotFoundError(
            f"backend {name!r} failed to load {ep.value!r} ({exc}); "
            f"reinstall it with `pip install {distribution(name)}`"
        ) from exc
    return check_contract(name, cls)()
