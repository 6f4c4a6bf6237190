"""What vendor kits declare about prices: their rows of the shipped catalog and where ``omnidist
catalog refresh`` reads them again.

A vendor kit declares a :class:`omnidist.vendors.Vendor` (its ``rows`` and price ``sources``,
among what else it declares); placement finds the installed ones through
:func:`omnidist.vendors.installed`, so the core ships no price row and names no price list. How
a service bills from those lists is the backend's to say (:class:`omnidist.backend.billing.Billing`).
"""

from __future__ import annotations

from omnidist.backend.billing import Billing
from omnidist.errors import ConfigError
from omnidist.vendors import GROUP, PriceSource, Reader, Vendor, installed

__all__ = ["GROUP", "PriceSource", "Reader", "Vendor", "billing", "installed", "sources"]


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
