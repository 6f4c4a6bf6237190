"""Backend discovery through the entry-point group ``omnidist.backends``.

Backends load lazily (the cloud SDKs they need are heavy) and are checked against the
contract when they load, so a broken plugin fails with a message, not deep inside compile.
"""

from __future__ import annotations

import difflib
import functools
from importlib import metadata
from typing import Optional

import attrs

from omnidist.backend import Backend, Capabilities
from omnidist.errors import BackendNotFoundError

GROUP = "omnidist.backends"

DISTRIBUTION_PREFIX = "omnidist-"
"""A backend plugin's distribution is ``omnidist-<name>``, with ``-`` for ``_`` (``omnidist-azure-ml``)."""


@functools.lru_cache(maxsize=1)
def _entry_points() -> dict[str, metadata.EntryPoint]:
    # Scanning installed distributions costs tens of milliseconds; once per process is enough.
    return {ep.name: ep for ep in metadata.entry_points(group=GROUP)}


def refresh() -> None:
    """Forget discovered and loaded backends (after installing a plugin in a running session)."""
    _entry_points.cache_clear()
    get.cache_clear()


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
    dist = getattr(_entry_points().get(name), "dist", None)
    return dist.name if dist is not None else DISTRIBUTION_PREFIX + name.replace("_", "-")


def distribution_version(name: str) -> str:
    """The installed version of the distribution providing backend ``name``."""
    ep = _entry_points().get(name)
    dist = getattr(ep, "dist", None)
    return dist.version if dist is not None else ""


def _unknown(name: str) -> BackendNotFoundError:
    if name in known():
        return BackendNotFoundError(
            f"backend {name!r} is not installed; install it with `pip install {distribution(name)}`"
        )
    close = difflib.get_close_matches(name, known(), n=1)
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
    if problems:
        raise BackendNotFoundError(f"backend {name!r} ({cls.__module__}) breaks the contract: " + "; ".join(problems))
    return cls


@functools.lru_cache(maxsize=None)
def get(name: str) -> Backend:
    """The backend instance for ``name``, loading its package on first use.

    Raises:
        BackendNotFoundError: unknown name (with a suggestion), package not installed (with
            the ``pip install`` line), or a plugin that breaks the contract.
    """
    ep: Optional[metadata.EntryPoint] = _entry_points().get(name)
    if ep is None:
        raise _unknown(name)
    try:
        cls = ep.load()
    except Exception as exc:  # a plugin that fails to import must not take the CLI down
        raise BackendNotFoundError(
            f"backend {name!r} failed to load {ep.value!r} ({exc}); reinstall it with `pip install {distribution(name)}`"
        ) from exc
    return check_contract(name, cls)()
