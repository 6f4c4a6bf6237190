"""``omnidist gpus``: every accelerator omnidist knows, and per backend the machines carrying it,
how many per node, and their list price per accelerator-hour (SPEC §12a). No configuration, no
network: the machines are those compile picks from (each backend's
:meth:`~omnidist.backend.contract.Backend.machine_offer`), the prices those of the catalog.

For each accelerator and each count a node of a backend can carry, the machine is the one compile
would pick (:func:`~omnidist.compiler.catalog.smallest_fit`); its price is the machine's (with
its GPUs where the list bills them apart) divided by the accelerators it carries, in the
cheapest region with a price (or the region asked for). A managed-service surcharge is included
as the catalog prices it; a managed cluster's fee is not, being per cluster rather than per node.
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from omnidist.backend import registry
from omnidist.backend.contract import Placement
from omnidist.backend.values import Footprint, Pool
from omnidist.model import accelerators
from omnidist.placement import prices, vendors

JSON_KEYS = ("accelerator", "backend", "cloud", "machine", "per_node", "on_demand_per_accelerator_hour",
             "spot_per_accelerator_hour", "region", "regions")
"""The keys of ``omnidist gpus -o json``, in order."""

HEADER = ("accelerator", "backend", "cloud", "machine", "per node", "$/accel-h", "spot $/accel-h", "region",
          "regions priced")
"""The table's columns."""


@attrs.frozen(kw_only=True)
class Offer:
    """One machine a backend runs an accelerator on, and its price per accelerator-hour.

    Attributes:
        accelerator: the portable name.
        backend: the backend (``None``: no installed backend offers the accelerator).
        cloud: whose price list (a vendor kit's cloud name, as ``omnidist gpus --cloud`` takes it),
            when the catalog knows it.
        machine: the machine compile picks for ``per_node`` of them.
        per_node: accelerators per machine.
        on_demand_per_accelerator_hour: USD, ``None`` when unknown.
        spot_per_accelerator_hour: USD, ``None`` when unknown.
        region: the region the prices are from (the cheapest, or the one asked for).
        regions: every region the catalog prices the machine in.
    """

    accelerator: str
    backend: Optional[str] = None
    cloud: Optional[str] = None
    machine: Optional[str] = None
    per_node: int = 0
    on_demand_per_accelerator_hour: Optional[float] = None
    spot_per_accelerator_hour: Optional[float] = None
    region: Optional[str] = None
    regions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The object ``omnidist gpus -o json`` prints."""
        return {key: list(value) if isinstance(value, tuple) else value
                for key, value in ((k, getattr(self, k)) for k in JSON_KEYS)}

    def cells(self) -> tuple[str, ...]:
        """The table row."""
        def money(value: Optional[float]) -> str:
            return "unknown" if value is None else f"{value:,.2f}"

        if self.backend is None:
            return (self.accelerator, "", "", "", "", "", "", "", "no installed backend offers it")
        shown = ", ".join(self.regions[:4]) + (f" +{len(self.regions) - 4}" if len(self.regions) > 4 else "")
        return (self.accelerator, self.backend, self.cloud or "", self.machine or "", str(self.per_node),
                money(self.on_demand_per_accelerator_hour), money(self.spot_per_accelerator_hour),
                self.region or "", shown)


def _picks(driver: Placement, name: str, catalog: Any) -> list[tuple[str, int]]:
    """``(machine, accelerators per node)`` compile picks for each count a node can carry."""
    from omnidist.compiler.catalog import smallest_fit
    from omnidist.model.roles import Accelerator

    if accelerators.is_tpu(name):
        return driver.tpu_hosts(name)
    counts = {m.gpus for m in catalog.machines if m.accelerator == name and m.gpus and not m.retired}
    attached = catalog.attachments.get(name)
    counts |= set(attached.limits) if attached is not None else set()
    picks = []
    for count in sorted(counts):
        machine = smallest_fit(catalog, Accelerator(type=name, count=count))
        if machine is not None and (machine.name, count) not in picks:
            picks.append((machine.name, count))
    return picks


def _price(service: str, machine: str, name: str, count: int, catalog: prices.Catalog,
           region: Optional[str]) -> Offer:
    """The machine's price per accelerator-hour in ``region`` (else the cheapest region with one)."""
    billing = vendors.billing().get(service)
    listed = billing.prices if billing else service
    names = {machine, name}
    regions = sorted({r.region for r in catalog.rows if r.service == listed and r.name in names
                      and r.region != prices.ANY_REGION and (r.on_demand is not None or r.spot is not None)})
    cloud = next((r.cloud for r in catalog.rows if r.service == listed), None)
    # a cluster fee is per cluster, not per node: priced as the nodes' own list
    service = listed if billing and billing.fees else service
    candidates = [region] if region else regions or [None]
    best: Optional[tuple[Optional[float], Optional[float], Optional[str]]] = None
    for where in candidates:
        priced = prices.price(Footprint(service=service, region=where, pools=[
            Pool(role="primary", replicas=1, machine=machine, accelerator=name, count=count)]), catalog)
        entry = (priced.on_demand, priced.spot, where)
        if best is None or _cheaper(entry, best):
            best = entry
    on_demand, spot, where = best if best else (None, None, region)
    per = (lambda v: None if v is None else round(v / count, 4))  # noqa: E731
    return Offer(accelerator=name, cloud=cloud, machine=machine, per_node=count,
                 on_demand_per_accelerator_hour=per(on_demand), spot_per_accelerator_hour=per(spot),
                 region=where, regions=tuple(regions))


def _cheaper(entry: tuple, best: tuple) -> bool:
    """Known on-demand beats unknown; then lower on-demand; then known spot."""
    if (entry[0] is None) != (best[0] is None):
        return entry[0] is not None
    if entry[0] is not None and entry[0] != best[0]:
        return entry[0] < best[0]
    return best[1] is None and entry[1] is not None


def offers(name: Optional[str] = None, *, cloud: Optional[str] = None, region: Optional[str] = None,
           catalog: Optional[prices.Catalog] = None) -> list[Offer]:
    """Every accelerator omnidist knows (or ``name``), per installed backend and machine.

    Raises:
        ValueError: ``name`` is not an accelerator omnidist knows (with the close name).
        ConfigError: a malformed price catalog.
    """
    wanted = accelerators.canonical_name(name) if name else None
    catalog = catalog if catalog is not None else prices.load()
    found: list[Offer] = []
    for backend in registry.installed():
        driver = registry.get(backend)
        if not isinstance(driver, Placement):
            continue
        offer = driver.machine_offer()
        if offer is None:
            continue
        service, machines = offer
        for accelerator in sorted(a for a in driver.capabilities.accelerators if a in accelerators.BY_NAME):
            if wanted and accelerator != wanted:
                continue
            for machine, count in _picks(driver, accelerator, machines):
                row = attrs.evolve(_price(service, machine, accelerator, count, catalog, region), backend=backend)
                if cloud is None or row.cloud == cloud:
                    found.append(row)
    offered = {o.accelerator for o in found}
    if cloud is None and region is None:
        found += [Offer(accelerator=a.name) for a in accelerators.ACCELERATORS
                  if a.name not in offered and (wanted is None or a.name == wanted)]
    order = {a.name: i for i, a in enumerate(accelerators.ACCELERATORS)}
    return sorted(found, key=lambda o: (order.get(o.accelerator, 0), o.backend or "~", o.per_node))
