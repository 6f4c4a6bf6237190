"""How a backend's service bills, declared by the backend (:attr:`~omnidist.backend.contract.Backend.billing`).

A backend says what a job runs on as a :class:`~omnidist.backend.values.Footprint` naming a
service; the backend that owns the service says, with a :class:`Billing`, which price list its
machines are billed from and what it adds. The price lists themselves (their rows and where a
refresh reads them) belong to the vendor kits (:mod:`omnidist.placement.vendors`); placement adds
the two up (:func:`omnidist.placement.prices.price`).
"""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class Billing:
    """How a service bills: from which price list, GPUs apart or in the machine's price, which fees.

    Attributes:
        prices: the price list (the catalog's ``service`` column) its machines are billed from.
        gpus_apart: accelerators are rows of their own, added per GPU to the machine's; else a
            machine's price includes its GPUs.
        fees: fee rows (kind ``fee`` of the service's own name) it adds per hour, once per job.
        free: nothing to pay (this machine).
        rule: what the vendor publishes about it, for ``omnidist catalog`` and the docs.
    """

    prices: str = ""
    gpus_apart: bool = False
    fees: tuple[str, ...] = ()
    free: bool = False
    rule: str = ""
