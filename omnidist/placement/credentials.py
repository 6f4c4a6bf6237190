"""``omnidist check``: for each profile, whether its backend's credentials are found (where the
cloud's client looks, without the network) and accepted by the cloud (a call that creates
nothing: a token refreshed, the caller's identity, the cluster's version), or how to give them
(SPEC §12a). A placement skips a profile whose credentials are missing (:func:`lookup`) as it
skips one that cannot express the job.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist import config
from omnidist.backend import registry
from omnidist.backend.values import Credentials
from omnidist.errors import BackendNotFoundError, ConfigError, OmnidistError


@attrs.frozen(kw_only=True)
class Line:
    """One profile's answer.

    Attributes:
        profile: the profile.
        backend: its backend.
        status: ``ok``, ``missing``, ``refused``, ``unchecked`` (found, the cloud not asked) or
            ``unknown`` (the backend does not say, or its settings are wrong).
        detail: where the credentials are, what the cloud said, or what is wrong.
        fix: how to give them (for ``missing`` and ``refused``).
    """

    profile: str
    backend: str
    status: str
    detail: str = ""
    fix: str = ""

    def text(self) -> str:
        """``PROFILE (BACKEND): STATUS — DETAIL; FIX``: the fix (the cloud CLI's login command, say)
        only when missing or refused."""
        said = "; ".join(part for part in (self.detail, self.fix if self.status in ("missing", "refused") else "")
                         if part)
        return f"{self.profile} ({self.backend}): {self.status}" + (f" — {said}" if said else "")


def lookup(driver: Any, settings: Any, *, online: bool = False) -> Optional[Credentials]:
    """The backend's answer (``None`` when it does not say); a backend's own failure to look is
    ``None`` too, never a crash."""
    try:
        return driver.check_credentials(settings) if online else driver.find_credentials(settings)
    except Exception:  # noqa: BLE001 - a plugin's lookup: the line says it could not tell
        return None


def check(profiles: Iterable[str] = (), *, online: bool = True, cwd: Optional[Path] = None,
          environ: Mapping[str, str] = os.environ) -> list[Line]:
    """One :class:`Line` per profile named (a group or ``a,b`` lists allowed; every profile of
    the configuration when none).

    Raises:
        ConfigError: a profile that is not defined, or no profile at all.
    """
    from omnidist.placement.plan import profile_names

    names, _ = profile_names(profiles, cwd=cwd, environ=environ)
    if not names:
        raise ConfigError("no profiles to check: define [profiles.NAME] in omnidist.toml (see docs/profiles.md)")
    lines = []
    for name in names:
        target = config.resolve(profile=name, cwd=cwd, environ=environ)
        try:
            driver = registry.get(target.backend)
            settings = config.settings_for(driver.settings_type, target.backend, _without_regions(target))
        except (ConfigError, BackendNotFoundError, OmnidistError) as exc:
            lines.append(Line(profile=name, backend=target.backend, status="unknown",
                              detail=str(exc).replace("\n", "; ")))
            continue
        found = lookup(driver, settings, online=online)
        if found is None:
            lines.append(Line(profile=name, backend=target.backend, status="unknown",
                              detail="the backend does not say where its credentials are"))
            continue
        lines.append(Line(profile=name, backend=target.backend, status=found.status,
                          detail=found.detail or found.where, fix=found.fix))
    return lines


def _without_regions(target: config.Target) -> config.Target:
    from omnidist.placement.plan import _without_regions as strip

    return strip(target)
