"""Profiles and the backend switch (SPEC §2).

The profile name comes from, first hit wins: the ``--profile`` flag / ``profile=`` argument,
the session choice set by :func:`use` (notebooks), ``OMNIDIST_PROFILE``, then the ``default``
key of the configuration files. Configuration files are, nearest first: ``omnidist.toml``
(walking up from the current directory), ``[tool.omnidist]`` in the nearest
``pyproject.toml``, and ``$XDG_CONFIG_HOME/omnidist/config.toml`` (``~/.config/…``).
Profiles from all of them are available; a profile defined in a nearer file wins.

The backend is ``--backend`` / ``backend=``, :func:`use`, ``OMNIDIST_BACKEND``, else the
profile's, else ``local``. Settings precedence: the job's ``backends.<name>`` block > profile > defaults.

``data_map`` (SPEC §7: prefix rewrites from where a job's data is named to where a backend
finds it) is a profile setting every built-in backend reads (:mod:`omnidist.compiler.code_data`).

What the files say is cached for the process and checked again on every call, cheaply: the
folders from the working directory up and the user's configuration folder are looked at
(``stat``): a file created or deleted changes its folder's time, an edited file its own time
and size. A time within the last two seconds may not move again on the next edit, so such a
recently changed file is also compared byte for byte (git's "racily clean" rule). A sweep of
``compile`` calls parses nothing twice; an edit is seen on the next call. The backend settings
a profile gives are cached with it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist.errors import ConfigError, ValidationError
from omnidist.model import serde
from omnidist.model.job import DistributedJob
from omnidist.model.spelling import close_matches

DEFAULT_BACKEND = "local"

PORTABLE_SETTINGS = frozenset({"data_map"})
"""Profile settings about the job rather than the cloud: every built-in backend reads them, so
they follow an overridden backend; a plugin backend without them skips them instead of failing."""

_session: dict[str, Optional[str]] = {"profile": None, "backend": None}


@attrs.frozen(kw_only=True)
class Profile:
    """A named backend with its account settings, and the file that defined it."""

    name: str
    backend: str
    settings: dict[str, Any]
    source: str


@attrs.frozen(kw_only=True)
class Target:
    """Where a job goes: the backend's name and the profile that supplies its settings.

    Attributes:
        backend: the backend's name.
        profile: the profile supplying settings, if any.
        reason: why this backend, in words (``no profile and no --backend``), for a command to say
            when the user did not name it.
    """

    backend: str
    profile: Optional[Profile] = None
    reason: str = attrs.field(default="", eq=False)


def _read_toml(path: Path, table: Optional[str] = None) -> Optional[dict[str, Any]]:
    from omnidist.model.documents import check_shape, read_text

    try:
        text = read_text(path)  # a regular file within the size limit, UTF-8
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None
    if table and table not in text:  # a pyproject.toml without the table: nothing to parse
        return None
    import tomllib  # only when there is a file to read

    try:
        data = tomllib.loads(text)
        check_shape(data, source=str(path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML (nested too deep)") from None
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None
    if table:
        data = data.get("tool", {}).get(table)
    return data


def _nearest(name: str, start: Path) -> Optional[Path]:
    for folder in (start, *start.parents):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


_CONFIG_NAMES = ("omnidist.toml", "pyproject.toml")
_RACY_NS = 2_000_000_000
"""A time this recent may not change on the next edit (coarse file-system clocks)."""


@attrs.define
class _Found:
    """What the configuration files said, and how the folders and files they came from looked."""

    folders: tuple[tuple[str, tuple[str, ...]], ...]
    """Every folder that could hold a configuration file, with the files it could hold."""
    fingerprint: tuple = ()
    files: list[tuple[str, dict[str, Any]]] = attrs.Factory(list)
    profiles: Optional[dict[str, Profile]] = None


_found: dict[tuple[str, Optional[str], Optional[str]], _Found] = {}
"""(working directory, XDG_CONFIG_HOME, HOME) -> what the files there said."""


def _user_file(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", str(Path.home()))) / ".config")
    return Path(base) / "omnidist" / "config.toml"


def _stamp(path: str, now: int, read: bool = True) -> Optional[tuple]:
    """How a file or folder looks (time, size, inode), plus the bytes of a file changed just now;
    ``None`` when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp: tuple = (st.st_mtime_ns, st.st_size, st.st_ino)
    if read and now - st.st_mtime_ns < _RACY_NS:
        try:
            with open(path, "rb") as handle:
                stamp += (handle.read(),)
        except OSError:
            pass
    return stamp


def _fingerprint(found: _Found) -> tuple:
    """How every folder and file the configuration could come from looks now."""
    now = time.time_ns()
    before = found.fingerprint
    parts = []
    for i, (folder, names) in enumerate(found.folders):
        stamp = _stamp(folder, now, read=False)
        if stamp is None:
            parts.append((None, (None,) * len(names)))
            continue
        # A folder whose time has not moved (and is not too recent to trust) has the same
        # entries: a file that was not there is still not there, and needs no look.
        if before and before[i][0] == stamp and now - stamp[0] >= _RACY_NS:
            was = before[i][1]
            files = was if not any(was) else tuple(w and _stamp(name, now) for name, w in zip(names, was))
        else:
            files = tuple(_stamp(name, now) for name in names)
        parts.append((stamp, files))
    return tuple(parts)


def _lookup(cwd: Optional[Path], environ: Mapping[str, str]) -> _Found:
    # os.getcwd() is already absolute with symlinks resolved; an explicit cwd is resolved.
    here = os.getcwd() if cwd is None else str(Path(cwd).resolve())
    key = (here, environ.get("XDG_CONFIG_HOME"), environ.get("HOME"))
    found = _found.get(key)
    if found is None:
        start, user = Path(here), _user_file(environ)
        folders = [(str(f), tuple(str(f / n) for n in _CONFIG_NAMES)) for f in (start, *start.parents)]
        found = _found[key] = _Found(folders=(*folders, (str(user.parent), (str(user),))))
    fingerprint = _fingerprint(found)
    if fingerprint != found.fingerprint:
        found.files, found.profiles = _read_files(Path(here), _user_file(environ)), None
        found.fingerprint = fingerprint
    return found


def config_files(cwd: Optional[Path] = None,
                 environ: Mapping[str, str] = os.environ) -> list[tuple[str, dict[str, Any]]]:
    """The configuration sources that exist, nearest first, as ``(label, data)``."""
    return list(_lookup(cwd, environ).files)


def _read_files(start: Path, user: Path) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    toml = _nearest("omnidist.toml", start)
    if toml:
        found.append((str(toml), _read_toml(toml) or {}))
    pyproject = start
    while (pyproject := _nearest("pyproject.toml", pyproject)) is not None:
        table = _read_toml(pyproject, "omnidist")
        if table is not None:
            found.append((f"{pyproject} [tool.omnidist]", table))
            break
        pyproject = pyproject.parent.parent
    if user.is_file():
        found.append((str(user), _read_toml(user) or {}))
    return found


def _profiles(files: list[tuple[str, dict[str, Any]]]) -> dict[str, Profile]:
    profiles: dict[str, Profile] = {}
    for label, data in reversed(files):  # nearer files overwrite farther ones
        table = data.get("profiles", {})
        if not isinstance(table, Mapping):
            raise ConfigError(f"{label}: profiles: expected a table of profiles")
        for name, body in table.items():
            if not isinstance(body, Mapping) or not isinstance(body.get("backend"), str):
                raise ConfigError(
                    f"{label}: profiles.{name}.backend: every profile names its backend, "
                    f'e.g. backend = "local"'
                )
            settings = {k: v for k, v in body.items() if k != "backend"}
            profiles[name] = Profile(name=name, backend=body["backend"], settings=settings, source=label)
    return profiles


def state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """omnidist's state folder (the job ledger, refreshed prices, local runs):
    ``$OMNIDIST_STATE_DIR``, else ``$XDG_STATE_HOME/omnidist``, else ``~/.local/state/omnidist``."""
    if environ.get("OMNIDIST_STATE_DIR"):
        return Path(environ["OMNIDIST_STATE_DIR"]).expanduser()
    base = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "omnidist"


def profiles(*, cwd: Optional[Path] = None, environ: Mapping[str, str] = os.environ) -> dict[str, Profile]:
    """Every profile the configuration files define, by name (nearer files win), in file order."""
    found = _lookup(cwd, environ)
    if found.profiles is None:
        found.profiles = _profiles(found.files)
    return dict(found.profiles)


GROUP_ORDERS = ("listed", "cheapest")
"""How a group (``[groups.NAME]``) orders its profiles: as listed, or cheapest first (``omnidist plan``)."""


@attrs.frozen(kw_only=True)
class Group:
    """A named list of profiles that a placement tries in turn (SPEC §12).

    Attributes:
        name: the group's name (chosen like a profile: ``--profile NAME``).
        profiles: the profiles, as listed.
        order: ``listed`` or ``cheapest``.
        source: the file that defined it.
    """

    name: str
    profiles: tuple[str, ...]
    order: str = "listed"
    source: str = ""


def groups(*, cwd: Optional[Path] = None, environ: Mapping[str, str] = os.environ) -> dict[str, Group]:
    """Every ``[groups.NAME]`` of the configuration files (nearer files win).

    Raises:
        ConfigError: a malformed group, naming the file and the key.
    """
    found: dict[str, Group] = {}
    for label, data in reversed(_lookup(cwd, environ).files):
        table = data.get("groups", {})
        if not isinstance(table, Mapping):
            raise ConfigError(f"{label}: groups: expected a table of groups, e.g. [groups.gpu] profiles = [\"a100\"]")
        for name, body in table.items():
            where = f"{label}: groups.{name}"
            if not isinstance(body, Mapping) or not isinstance(body.get("profiles"), list) or not body["profiles"] \
                    or not all(isinstance(p, str) for p in body["profiles"]):
                raise ConfigError(f"{where}.profiles: a group lists its profiles, e.g. profiles = [\"a100\", \"h100\"]")
            order = body.get("order", "listed")
            if order not in GROUP_ORDERS:
                raise ConfigError(f"{where}.order: {order!r} is not one of {', '.join(GROUP_ORDERS)}")
            unknown = sorted(set(body) - {"profiles", "order"})
            if unknown:
                raise ConfigError(f"{where}: unknown key {unknown[0]!r}; a group has profiles and order")
            found[name] = Group(name=name, profiles=tuple(body["profiles"]), order=order, source=label)
    return found


def use(profile: Optional[str] = None, backend: Optional[str] = None) -> None:
    """Set the profile and/or backend for the rest of this Python session (notebooks).

    The session choice ranks just below an explicit ``profile=``/``backend=`` argument and
    above ``OMNIDIST_PROFILE``/``OMNIDIST_BACKEND`` and the configuration files, the way
    setting a variable in a notebook cell overrides the shell it was started from.
    ``use()`` with no arguments clears it.
    """
    _session["profile"], _session["backend"] = profile, backend


def resolve(
    profile: Optional[str] = None,
    backend: Optional[str] = None,
    *,
    cwd: Optional[Path] = None,
    environ: Mapping[str, str] = os.environ,
) -> Target:
    """Decide the backend and profile per SPEC §2.

    Raises:
        ConfigError: a profile that no configuration file defines (with a suggestion).
    """
    found = _lookup(cwd, environ)
    files = found.files
    default = next(((label, d["default"]) for label, d in files if isinstance(d.get("default"), str)), None)
    chosen_by = [(profile, "--profile"), (_session["profile"], "omnidist.use(profile=…)"),
                 (environ.get("OMNIDIST_PROFILE"), "OMNIDIST_PROFILE"),
                 (default and default[1], default and f"the default in {default[0]}")]
    profile_name, profile_why = next(((name, why) for name, why in chosen_by if name), (None, ""))
    chosen: Optional[Profile] = None
    if profile_name:
        profiles = found.profiles
        if profiles is None:
            profiles = found.profiles = _profiles(files)
        if profile_name not in profiles:
            close = close_matches(profile_name, list(profiles), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            where = ", ".join(label for label, _ in files) or "no configuration file was found"
            raise ConfigError(
                f"profile {profile_name!r} is not defined.{hint} Looked in: {where}. "
                f"Define it as [profiles.{profile_name}] with a backend key in omnidist.toml."
            )
        chosen = profiles[profile_name]
    backends = [(backend, "--backend"), (_session["backend"], "omnidist.use(backend=…)"),
                (environ.get("OMNIDIST_BACKEND"), "OMNIDIST_BACKEND"),
                (chosen and chosen.backend, chosen and f"profile {chosen.name} ({profile_why})")]
    name, reason = next(((name, why) for name, why in backends if name),
                        (DEFAULT_BACKEND, "no profile and no --backend"))
    return Target(backend=name, profile=chosen, reason=reason)


def settings_for(
    settings_type: type,
    backend: str,
    target: Target,
    job: Optional[DistributedJob] = None,
    overrides: Optional[Mapping[str, Any]] = None,
) -> Any:
    """Merge defaults < profile < the job's ``backends.<name>`` block < explicit overrides,
    and structure the result into the backend's settings class.

    Each layer is checked on its own first, so an unknown key is reported against the file
    it came from (``omnidist.toml: profiles.prod.regoin: unknown key; did you mean 'region'?``).
    """
    profile = target.profile
    plain = not overrides and (job is None or backend not in job.backends)
    key = (settings_type, backend, id(profile))
    cached = _settings.get(key) if plain else None
    if cached is not None and cached[0] is profile:  # the same profile object: its files are unchanged
        return cached[1]
    resolved = _merge_settings(settings_type, backend, profile, job, overrides)
    if plain:
        _settings[key] = (profile, resolved)
    return resolved


_settings: dict[tuple[type, str, int], tuple[Optional[Profile], Any]] = {}
"""(settings type, backend, profile) -> the settings, for calls with no job block or overrides."""


def _merge_settings(settings_type: type, backend: str, profile: Optional[Profile], job: Optional[DistributedJob],
                    overrides: Optional[Mapping[str, Any]]) -> Any:
    known = {a.name for a in attrs.fields(settings_type)}
    layers: list[tuple[dict[str, Any], Optional[str], str]] = []
    if profile is not None:
        body = profile.settings
        if profile.backend != backend:
            # The backend was overridden: carry over what the other backend understands too
            # (project, region between backends of one vendor), leave the rest.
            body = {k: v for k, v in body.items() if k in known}
        body = {k: v for k, v in body.items() if k in known or k not in PORTABLE_SETTINGS}
        layers.append((body, profile.source, f"profiles.{profile.name}"))
    if job is not None and backend in job.backends:
        layers.append((job.backends[backend], job.source, f"backends.{backend}"))
    if overrides:
        layers.append((dict(overrides), None, "settings"))
    merged: dict[str, Any] = {}
    for body, source, path in layers:
        serde.structure(body, settings_type, source=source, path=path)  # report where a bad key is
        merged.update(body)
    try:
        return serde.structure(merged, settings_type)
    except ValidationError as exc:  # a cross-layer problem: say which layers were merged
        raise exc.with_source(" + ".join(s or p for _, s, p in layers) or None) from None
