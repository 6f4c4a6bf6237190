"""When the command's log handler is installed (:func:`omnidist.cli.common.setup_logging`).

Importing :mod:`logging` costs a command about 5 ms of CPU at start, and most runs of ``compile``
or ``validate`` never log. Until :mod:`logging` is imported nothing can emit a record, so the
handler (:mod:`omnidist.cli.records`) is installed when it is: by a finder that waits for the
first ``import logging`` and installs the handler once the module has run, before the importer
gets it back. A warning shown before then imports :mod:`logging` itself, so it is routed exactly
as if the handler had been installed at start. This module imports nothing that costs.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Optional


class _ThenInstall:
    """The real loader of :mod:`logging`, followed by the handler's installation."""

    def __init__(self, loader: Any, debug: bool) -> None:
        self.loader, self.debug = loader, debug

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        from omnidist.cli import records

        records.install(self.debug)


class _OnFirstImport:
    """A meta-path finder that answers only for :mod:`logging`, once, with the wrapped loader."""

    def __init__(self, debug: bool) -> None:
        self.debug = debug

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "logging":
            return None
        _disarm()
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenInstall(spec.loader, self.debug)
        return spec


_armed: Optional[_OnFirstImport] = None
_showwarning: Any = None
"""The finder waiting for :mod:`logging`, and the ``warnings.showwarning`` it replaced."""


def _show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    """A warning before anything imported :mod:`logging`: import it (the finder installs the
    handler and captures warnings), then show the warning the way that installed."""
    import logging  # noqa: F401 - the import is the point: it installs the handler

    show = warnings.showwarning if warnings.showwarning is not _show else _showwarning
    show(message, category, filename, lineno, file, line)


def _disarm() -> None:
    global _armed, _showwarning
    if _armed is not None:
        if _armed in sys.meta_path:
            sys.meta_path.remove(_armed)
        if warnings.showwarning is _show:
            warnings.showwarning = _showwarning
        _armed, _showwarning = None, None


def setup(debug: bool) -> None:
    """Install the handler now (``--debug``, or :mod:`logging` already loaded), or when
    :mod:`logging` is first imported; a second call replaces the first's choice."""
    global _armed, _showwarning
    _disarm()
    if debug or "logging" in sys.modules:
        from omnidist.cli import records

        records.install(debug)
        return
    _armed, _showwarning = _OnFirstImport(debug), warnings.showwarning
    sys.meta_path.insert(0, _armed)
    warnings.showwarning = _show
