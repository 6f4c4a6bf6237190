"""What a vendor kit declares about prices: its rows of the shipped catalog and where ``omnidist
catalog refresh`` reads them again.

A vendor kit (``vendors/<vendor>/``, a distribution of its own) names a :class:`Vendor` under the
entry-point group :data:`GROUP`; placement finds the installed ones the way the backend registry
finds backends (:func:`omnidist.backend.registry.discover`), so the core ships no price row and
names no price list. How a service bills from those lists is the backend's to say
(:class:`omnidist.backend.billing.Billing`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional

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
class Vendor:
    """Where one vendor's prices come from.

    Attributes:
        name: the vendor, as the catalog's ``cloud`` column names it.
        rows: the catalog file the kit ships (package data), in :data:`omnidist.placement.prices.COLUMNS`.
        sources: the public lists ``omnidist catalog refresh`` rebuilds its rows from.
        billing: services billed straight from the vendor's own lists (its plain VMs), as
            backends declare theirs.
    """

    name: str
    rows: Path
    sources: tuple[PriceSource, ...] = ()
    billing: Mapping[str, Billing] = attrs.field(factory=dict, converter=as_dict)


@functools.lru_cache(maxsize=1)
def installed() -> dict[str, Vendor]:
    """The installed vendor kits' declarations, by entry-point name (sorted).

    Raises:
        ConfigError: an entry point that does not name a :class:`Vendor`.
    """
    from omnidist.backend import registry

    found = {}
    for name, plugin in sorted(registry.discover(list(sys.path), GROUP).items()):
        vendor = plugin.load()
        if not isinstance(vendor, Vendor):
            raise ConfigError(f"entry point {name!r} in group {GROUP} ({plugin.value}, distribution "
                              f"{plugin.distribution}) does not name an omnidist.kit.Vendor; reinstall or fix it")
        found[name] = vendor
    return found


def sources() -> list[tuple[Vendor, PriceSource]]:
    """Every installed vendor's price lists, in reading order."""
    found = [(vendor, source) for vendor in installed().values() for source in vendor.sources]
    return sorted(found, key=lambda pair: (pair[1].order, pair[1].name, pair[0].name))


def billing() -> dict[str, Billing]:
    """Service -> how it bills: what the installed backends and vendor kits declare, sorted.

    Raises:
        ConfigError: two declare the same service differently.
    """
    from omnidist.backend import registry

    found: dict[str, Billing] = {}
    owners: dict[str, str] = {}
    declared = [(f"vendor kit {n}", v.billing) for n, v in installed().items()]
    declared += [(f"backend {n}", registry.get(n).billing) for n in registry.installed()]
    for owner, services in declared:
        for service, bills in services.items():
            if service in found and found[service] != bills:
                raise ConfigError(f"{owner} and {owners[service]} both declare how service {service!r} bills, "
                                  "differently; one of them must rename its service")
            found[service], owners[service] = bills, owner
    return dict(sorted(found.items()))
