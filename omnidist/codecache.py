"""A bytecode cache for the code attrs and cattrs generate, kept between runs the way Python keeps
``.pyc`` files for modules.

attrs writes each class's ``__init__``, ``__eq__``, ``__repr__``… as source and compiles it when the
class is defined; cattrs does the same for every structure function. A process that starts, reads a
job and compiles it (``omnidist compile``) spends about a third of its own time in those ``compile()``
calls — work whose result is the same on every run. attrs leaves this open upstream
(python-attrs/attrs#575: "could we piggyback on Python's native caching technique"); this module does
it on omnidist's side, and only for the modules that generate code:

- :func:`install` gives ``attr._make`` and ``cattrs.gen`` a module-level ``compile``, and the standard
  library's ``dataclasses`` an ``exec`` (the runtime's values are dataclasses), that look the
  exact request up first — the source text, file name, mode and the flags the call would have used
  (compile inherits the caller's ``from __future__`` flags, so they are part of the key). A miss
  compiles as before and remembers the result. A hit is a request equal in every character (but for
  the one number attrs draws per process, :data:`_HASH_SALT`), so it returns what compiling would
  have returned; no digest stands in for the source, so none can collide. Only the classes of
  omnidist, its plugins and cattrs are kept (:data:`_OURS`, by module name); a program's own classes
  are compiled as before and never written to the cache.
- The code objects live in one :mod:`marshal` file per Python bytecode tag (``cpython-311``…)
  under :func:`cache_dir`, read once at the first generated class and written back, merged, when a
  process that compiled something new exits (a temporary file renamed over the old: concurrent
  writers leave one whole file). An unreadable or foreign file is ignored and replaced.
- Nothing is written where Python itself writes no bytecode (``PYTHONDONTWRITEBYTECODE``, ``-B``),
  and ``OMNIDIST_NO_CODE_CACHE=1`` turns the cache off, reads included.

The file is code the process executes, like a ``.pyc``: it lives in the user's own cache folder
(created ``0700``), where whoever could change it could change the user's site-packages too.
"""

from __future__ import annotations
import __future__

import atexit
import builtins
import marshal
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any, Optional

MAX_ENTRIES = 2048
"""The most code objects one cache file keeps (one per generated file name: a class's methods, a
structure function); past it, a writer keeps only what its own run used."""

_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

_HASH_SALT = re.compile(r"(return hash\(\(\n\s*)-?\d+,")
"""attrs salts a class's ``__hash__`` with ``hash()`` of the class's name, a number that changes
with every process's string-hash seed; the key reads it as a placeholder, and a hit keeps the salt
of the run that compiled it (the salt only has to stay the same for one class within one process)."""

Slot = tuple[str, str, int]
"""Where a request is kept: ``(file name, or the source when it has none of its own; mode; flags)``."""


class CodeCache:
    """The code objects of one cache file: looked up by request, new ones written back at exit.

    The file maps each :data:`Slot` to ``(source, marshalled code)``: a run unmarshals only the
    code objects it uses (a file holds every backend's classes; a compile uses a third of them)."""

    def __init__(self, path: Optional[Path], *, write: bool) -> None:
        self.path = path
        self.write = write and path is not None
        self.hits = 0
        self.misses = 0
        self._known: Optional[dict[Slot, tuple[str, bytes]]] = None
        self._used: dict[Slot, tuple[str, bytes]] = {}
        self._new = False

    def compile(self, source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
                optimize: int = -1, *, _caller_flags: int = 0) -> Any:
        """``builtins.compile`` for generated source: the cached code object of the same request
        (source, file name, mode and effective flags all equal), else a fresh one, remembered."""
        if not dont_inherit:
            flags |= _caller_flags
        if not (isinstance(source, str) and isinstance(filename, str) and optimize == -1):
            return builtins.compile(source, filename, mode, flags, True, optimize)
        if self._known is None:
            self._known = _read(self.path)
        named = filename if filename not in ("", "<string>") else source  # exec()'s code has no name of its own
        text = _HASH_SALT.sub(r"\1#,", source) if "return hash((" in source else source
        slot = (named, mode, flags)
        entry = self._known.get(slot)
        code = _code(entry[1]) if entry is not None and entry[0] == text else None
        if code is None:
            self.misses += 1
            code = builtins.compile(source, filename, mode, flags, True)
            entry = (text, marshal.dumps(code))
            self._known[slot] = entry
            self._new = True
        else:
            self.hits += 1
        self._used[slot] = entry
        return code

    def save(self) -> None:
        """Write what this run compiled into the cache file, merged with what another run wrote since
        (a newer source of the same file name replaces the older)."""
        if not (self._new and self.write and self.path is not None):
            return
        merged = _read(self.path)
        merged.update(self._used)
        if len(merged) > MAX_ENTRIES:
            merged = dict(self._used)
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            scratch = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            scratch.write_bytes(marshal.dumps(merged))
            os.replace(scratch, self.path)
        except (OSError, ValueError):  # a cache that cannot be written is only a slower next start
            return
        self._new = False


def _code(data: bytes) -> Optional[CodeType]:
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def _read(path: Optional[Path]) -> dict[Slot, tuple[str, bytes]]:
    """The cache file's entries; an absent, unreadable or foreign file holds none."""
    if path is None:
        return {}
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {slot: entry for slot, entry in data.items()
            if isinstance(slot, tuple) and len(slot) == 3 and isinstance(entry, tuple) and len(entry) == 2
            and isinstance(entry[0], str) and isinstance(entry[1], bytes)}


def cache_dir(environ: Optional[Mapping[str, str]] = None) -> Path:
    """``$OMNIDIST_CACHE_DIR``, else ``$XDG_CACHE_HOME/omnidist``, else ``~/.cache/omnidist``.

    Raises:
        RuntimeError: no home folder to keep a cache in (and neither variable set).
    """
    env = os.environ if environ is None else environ
    if env.get("OMNIDIST_CACHE_DIR"):
        return Path(env["OMNIDIST_CACHE_DIR"]).expanduser()
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the XDG rule: a relative value is ignored
        return Path(xdg) / "omnidist"
    home = Path.home()
    if not home.is_absolute():  # "~" left unexpanded: no HOME and no password entry
        raise RuntimeError("no home folder")
    return home / ".cache" / "omnidist"


_installed: Optional[CodeCache] = None

COMPILERS = ("attr._make", "cattrs.gen", "cattrs.gen.typeddicts")
"""The modules whose ``compile()`` calls build generated code (each calls the builtin by name)."""

EXECUTORS = ("dataclasses",)
"""The modules that build generated code with ``exec()`` of source text (the standard library's
dataclasses: :mod:`omnidist.runtime` is standard-library only, so its values are dataclasses)."""

_OURS = re.compile(r"(^|[ .])(omnidist(_\w+)?|cattrs)[.]")
"""A generated file name (``<attrs generated methods omnidist_mycloud.settings.MyCloudSettings>``)
or module name of omnidist's, a plugin's, or of cattrs (whose own classes are built when omnidist
imports it): only their code is kept, never a user's own classes."""


def install() -> Optional[CodeCache]:
    """Route the code generation of attrs (imported here), dataclasses and cattrs (once imported)
    through the cache, for omnidist's own classes; idempotent, so :mod:`omnidist.model` calls it
    first and :mod:`omnidist.model.serde` again once it has imported cattrs.

    Returns the process's cache, or ``None`` when ``OMNIDIST_NO_CODE_CACHE`` is set."""
    global _installed
    if os.environ.get("OMNIDIST_NO_CODE_CACHE", "").strip() not in ("", "0"):
        return None
    import dataclasses  # noqa: F401 - the runtime's values

    import attr._make  # noqa: F401 - the generator every model module uses

    if _installed is None:
        try:
            path: Optional[Path] = cache_dir() / f"generated-{sys.implementation.cache_tag or 'python'}.marshal"
        except RuntimeError:  # no home folder to keep a cache in: compile as before
            path = None
        _installed = CodeCache(path, write=not sys.dont_write_bytecode)
        atexit.register(_installed.save)
    for names, hook, attribute in ((COMPILERS, _CachedCompile, "compile"), (EXECUTORS, _CachedExec, "exec")):
        for name in names:
            module = sys.modules.get(name)
            if module is not None and not isinstance(getattr(module, attribute, None), hook):
                setattr(module, attribute, hook(_installed))  # shadows the builtin in that module only
    return _installed


class _CachedCompile:
    """The ``compile`` a generator module calls: for omnidist's classes the cache's, with the future
    flags the builtin would have inherited from that module's calling code; else the builtin."""

    def __init__(self, cache: CodeCache) -> None:
        self.cache = cache

    def __call__(self, source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
                 optimize: int = -1) -> Any:
        caller = sys._getframe(1).f_code.co_flags & _FUTURE_FLAGS
        if not (isinstance(filename, str) and _OURS.search(filename)):
            return builtins.compile(source, filename, mode, flags | (0 if dont_inherit else caller), True, optimize)
        return self.cache.compile(source, filename, mode, flags, dont_inherit, optimize, _caller_flags=caller)


class _CachedExec:
    """The ``exec`` a generator module calls with source text: compiled through the cache (as the
    builtin would compile it, inheriting the caller's future flags) when the code is for one of
    omnidist's modules (the ``globals`` it runs in say whose)."""

    def __init__(self, cache: CodeCache) -> None:
        self.cache = cache

    def __call__(self, source: Any, globals: Optional[dict[str, Any]] = None,  # noqa: A002 - exec's names
                 locals: Optional[Mapping[str, Any]] = None) -> None:  # noqa: A002
        caller_frame = sys._getframe(1)
        if globals is None:  # exec() without namespaces runs in the caller's, as the builtin would
            globals, locals = caller_frame.f_globals, caller_frame.f_locals if locals is None else locals
        if isinstance(source, str) and _OURS.search(str(globals.get("__name__", "")) + "."):
            source = self.cache.compile(source, "<string>", "exec",
                                        _caller_flags=caller_frame.f_code.co_flags & _FUTURE_FLAGS)
        builtins.exec(source, globals, locals)
