"""What a vendor kit declares: the facts about one cloud vendor that every backend and the core
share, so that the core ships none of them (DESIGN "Vendors: what belongs to a cloud lives with it").

A vendor kit (``vendors/<vendor>/``, a distribution of its own) names a :class:`Vendor` under the
entry-point group :data:`GROUP`; the core finds the installed ones with the reader the backend
registry uses (:func:`omnidist.runtime.entrypoints.discover`), once per process:

- placement reads its price rows and price lists (:mod:`omnidist.placement.vendors`);
- what a program sees (:mod:`omnidist.migration.world`) reads its image registries' hosts and
  its object stores' URI schemes;
- a backend that cannot read a registered-data reference (:data:`omnidist.model.data.ASSET`)
  says what it is and how to download it in the words of the kit that declares its store
  (:class:`AssetReference`; :func:`omnidist.compiler.code_data.foreign_uri`);
- packing a code folder (:mod:`omnidist.submission.code_files`) leaves out its tools' credential
  files (:attr:`Vendor.secret_files`).

With no kit installed, every image registry is ``other`` (or Docker Hub), no argv word is an
object store's URI unless it is ``https://``, a registered-data reference is refused in general
words, and only the core's vendor-neutral secret patterns apply.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import attrs

from omnidist.backend.billing import Billing
from omnidist.errors import ConfigError
from omnidist.model.fields import as_dict

if TYPE_CHECKING:
    from omnidist.placement.prices import Row
    from omnidist.placement.refresh import Fetcher

GROUP = "omnidist.vendors"
"""The entry-point group a vendor kit declares its :class:`Vendor` under."""

Reader = Callable[["Fetcher", str, Optional[Sequence[str]], str], list["Row"]]
"""``(fetch, base URL, regions or None for all, API key or "")`` -> the rows a price list gives."""


@attrs.frozen(kw_only=True)
class PriceSource:
    """One public price list a vendor's rows are rebuilt from.

    Attributes:
        name: how ``--source`` names it (several vendors may read lists of one name: one
            ``--source`` then selects them all).
        title: what it is, in words.
        url: its default base URL.
        env: the variable that points it elsewhere (a mirror, a test's server).
        read: reads it (:data:`Reader`).
        key_env: the variable holding the API key it needs (empty: it needs none); ``--api-key
            NAME=KEY`` gives one too. Without a key the list is skipped, saying so.
        order: lists are read in this order (a later list's row wins for the same item).
    """

    name: str
    title: str
    url: str
    env: str
    read: Reader = attrs.field(eq=False, repr=False)
    key_env: str = ""
    order: int = 1


@attrs.frozen(kw_only=True)
class AssetReference:
    """A reference to data registered with a vendor's service (``PREFIX NAME:VERSION`` or ``PREFIX
    NAME@LABEL``): not a path nor a URI, so only that service reads it, and every other backend
    refuses it saying how to fetch the data.

    Attributes:
        prefix: how such a reference starts (``STORE:``, matched whatever its case); a URI
            (``scheme://``) never is one.
        scheme: the kind of location a reference is (:func:`omnidist.model.data.scheme`: its
            ``STORE``, lower case).
        title: what one is, in words, for messages (``a registered data asset of …``).
        fetch: the command that downloads one, with ``{name}`` for the asset's name.
    """

    prefix: str = attrs.field(validator=attrs.validators.min_len(1))
    scheme: str = attrs.field(validator=attrs.validators.min_len(1))
    title: str
    fetch: str

    def matches(self, text: str) -> bool:
        """True when ``text`` is such a reference (:data:`omnidist.model.data.ASSET` with this prefix)."""
        from omnidist.model.data import ASSET

        return text.lower().startswith(self.prefix.lower()) and ASSET.match(text) is not None

    def name(self, text: str) -> str:
        """The asset's name in a reference (``NAME`` of ``PREFIX NAME:1`` or ``PREFIX NAME@latest``)."""
        return text[len(self.prefix):].split(":")[0].split("@")[0]


def _patterns(instance: Any, attribute: attrs.Attribute, value: Sequence[tuple[str, str]]) -> None:
    for pattern, kind in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"vendor kit {instance.name!r}: {attribute.name}: {pattern!r} is not a regular "
                              f"expression ({exc}); fix the kit's declaration") from None
        if not kind:
            raise ConfigError(f"vendor kit {instance.name!r}: {attribute.name}: {pattern!r} names no kind")


@attrs.frozen(kw_only=True)
class Vendor:
    """What one vendor kit declares.

    Attributes:
        name: the vendor, as the price catalog's ``cloud`` column names it.
        rows: the catalog file the kit ships (package data), in :data:`omnidist.placement.prices.COLUMNS`.
        price_lists: where the public lists ``omnidist catalog refresh`` rebuilds its rows from
            are declared: ``module:attribute`` naming a tuple of :class:`PriceSource`, imported
            only when they are read (their readers need placement's code; the rest of this
            declaration is read while compiling, so the module that names it stays light).
        billing: services billed straight from the vendor's own lists (its plain VMs), as
            backends declare theirs.
        registries: ``(host pattern, kind)`` of the vendor's image registries: a regular
            expression searched in an image reference's host (lower case), and the registry's kind
            as a World names it (:func:`omnidist.migration.world.registry_of`).
        uri_schemes: the URI prefixes of the vendor's object stores (``scheme://``): an argv word
            or variable that starts with one names data (:func:`omnidist.migration.world.uris_in`).
        assets: the references to registered data its services resolve (:class:`AssetReference`).
        secret_files: the vendor's tools' credential files and folders, never packed into a code
            archive unless the job's ``ship_secrets`` names them (gitignore patterns, as
            :data:`omnidist.submission.code_files.SECRET_PATTERNS`).
    """

    name: str
    rows: Path
    price_lists: str = ""
    billing: Mapping[str, Billing] = attrs.field(factory=dict, converter=as_dict)
    registries: tuple[tuple[str, str], ...] = attrs.field(default=(), validator=_patterns)
    uri_schemes: tuple[str, ...] = attrs.field(default=())
    assets: tuple[AssetReference, ...] = ()
    secret_files: tuple[str, ...] = ()

    @uri_schemes.validator
    def _schemes(self, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
        bad = [s for s in value if not re.fullmatch(r"[a-z][a-z0-9+.-]*://", s)]
        if bad:
            raise ConfigError(f"vendor kit {self.name!r}: uri_schemes: {bad[0]!r} is not a lower-case "
                              "'scheme://' prefix; fix the kit's declaration")


@functools.lru_cache(maxsize=1)
def installed() -> dict[str, Vendor]:
    """The installed vendor kits' declarations, by entry-point name (sorted).

    Raises:
        ConfigError: an entry point that does not name a :class:`Vendor`.
    """
    from omnidist.runtime import entrypoints

    found = {}
    for name, plugin in sorted(entrypoints.discover(list(sys.path), GROUP).items()):
        vendor = plugin.load()
        if not isinstance(vendor, Vendor):
            raise ConfigError(f"entry point {name!r} in group {GROUP} ({plugin.value}, distribution "
                              f"{plugin.distribution}) does not name an omnidist.kit.Vendor; reinstall or fix it")
        found[name] = vendor
    return found


def registries() -> tuple[tuple[str, str], ...]:
    """Every installed kit's ``(host pattern, kind)`` of image registries, kit by kit."""
    return tuple(entry for vendor in installed().values() for entry in vendor.registries)


def uri_schemes() -> tuple[str, ...]:
    """Every installed kit's object-store URI prefixes (``scheme://``), without repeats."""
    return tuple(dict.fromkeys(s for vendor in installed().values() for s in vendor.uri_schemes))


def assets() -> tuple[AssetReference, ...]:
    """Every installed kit's kinds of registered-data reference."""
    return tuple(ref for vendor in installed().values() for ref in vendor.assets)


def asset_of(text: str) -> Optional[AssetReference]:
    """The kind of registered-data reference ``text`` is, or None (a URI, a path, a literal)."""
    return next((ref for ref in assets() if ref.matches(text)), None)


def secret_files() -> tuple[str, ...]:
    """Every installed kit's credential file patterns, without repeats."""
    return tuple(dict.fromkeys(p for vendor in installed().values() for p in vendor.secret_files))
