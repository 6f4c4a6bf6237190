"""What vendor kits declare about prices: their rows of the shipped catalog and where ``omnidist
catalog refresh`` reads them again.

A vendor kit declares a :class:`omnidist.vendors.Vendor` (its ``rows`` and ``price_lists``,
among what else it declares); placement finds the installed ones through
:func:`omnidist.vendors.installed`, so the core ships no price row and names no price list. How
a service bills from those lists is the backend's to say (:class:`omnidist.backend.billing.Billing`).
"""

from __future__ import annotations

import importlib

from omnidist.backend.billing import Billing
from omnidist.errors import ConfigError
from omnidist.vendors import GROUP, PriceSource, Reader, Vendor, installed

__all__ = ["GROUP", "PriceSource", "Reader", "Vendor", "billing", "installed", "price_lists", "sources"]


def sources() -> list[tuple[Vendor, PriceSource]]:
    """Every installed vendor's price lists, in reading order.

    Raises:
        ConfigError: a kit's :attr:`~omnidist.vendors.Vendor.price_lists` that does not name a
            tuple of price lists.
    """
    found = [(vendor, source) for vendor in installed().values() for source in price_lists(vendor)]
    return sorted(found, key=lambda pair: (pair[1].order, pair[1].name, pair[0].name))


def price_lists(vendor: Vendor) -> tuple[PriceSource, ...]:
    """The price lists a vendor kit declares (:attr:`~omnidist.vendors.Vendor.price_lists`, imported now).

    Raises:
        ConfigError: the reference does not import, or names something else than price lists.
    """
    if not vendor.price_lists:
        return ()
    module, _, attribute = vendor.price_lists.partition(":")
    try:
        found = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"vendor kit {vendor.name!r}: price_lists {vendor.price_lists!r} cannot be loaded "
                          f"({exc}); reinstall or fix the kit") from None
    if not isinstance(found, tuple) or not all(isinstance(s, PriceSource) for s in found):
        raise ConfigError(f"vendor kit {vendor.name!r}: price_lists {vendor.price_lists!r} is not a tuple of "
                          "omnidist.kit.PriceSource; fix the kit")
    return found


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
