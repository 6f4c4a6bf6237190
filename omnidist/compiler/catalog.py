"""Machines: one record type, the one "smallest machine that fits", the one check of a machine
a job names.

A backend describes what its cloud offers as a :class:`MachineCatalog` of :class:`Machine` records
(plus, for machines that take GPUs attached, such as N1, the GPUs that can be attached to a machine); everything that
decides whether a machine fits a role lives here, so every backend picks and checks the same
way. Facts come from the clouds' machine pages (see ``PLATFORMS.md``); values marked
*unconfirmed* are best knowledge, kept in one place so they are easy to correct. Pure data and
lookups: no SDK, no network.
"""

from __future__ import annotations

from typing import Literal, Optional

import attrs

from omnidist.errors import ValidationError
from omnidist.model.roles import Accelerator
from omnidist.model.spelling import close_matches

Link = Literal["infiniband", "rdma"]
"""A fast interconnect a role can demand: SR-IOV InfiniBand (what NCCL needs where a cloud
offers it), or any RDMA between machines (such as GPUDirect RDMA over RoCE)."""


@attrs.frozen(kw_only=True)
class Machine:
    """One machine type (a cloud's machine type or VM size).

    Attributes:
        name: the cloud's name for it (``a2-highgpu-8g``, ``Standard_ND96asr_v4``).
        vcpus: virtual CPUs.
        memory_gb: memory in GB.
        accelerator: the accelerator it comes with: a portable name, or the cloud's own name
            for one without a portable name (``NVIDIA_TESLA_K80``); ``None`` for a machine
            without GPUs of its own (N1 takes them attached, see :class:`Attachment`).
        gpus: how many of ``accelerator`` it comes with.
        egress_gbps: maximum egress bandwidth without attached GPUs, when the catalog knows it.
        infiniband: has the SR-IOV InfiniBand that NCCL can use.
        rdma: has RDMA between machines (every InfiniBand machine does; some have RDMA
            without what NCCL needs, such as GPUDirect RDMA over RoCE).
        retired: empty while the cloud sells it; else why it does not (shown in notes).
    """

    name: str
    vcpus: int
    memory_gb: float
    accelerator: Optional[str] = None
    gpus: int = 0
    egress_gbps: Optional[float] = None
    infiniband: bool = False
    rdma: bool = False
    retired: str = ""

    @property
    def family(self) -> str:
        """The part of the name before the first ``-`` (``n1``, ``a2``, ``g2``)."""
        return family_of(self.name)


def family_of(name: str) -> str:
    """``n1-standard-8`` -> ``n1``."""
    return name.split("-", 1)[0]


@attrs.frozen(kw_only=True)
class Attachment:
    """What a machine without GPUs of its own (such as N1) can take of one accelerator."""

    limits: dict[int, tuple[int, float]]
    """GPU count -> (max vCPUs, max memory GB) of a machine carrying that many."""
    egress_gbps: dict[int, tuple[int, float]] = attrs.field(factory=dict)
    """GPU count -> (vCPUs needed, max egress Gbps) with that count; below that vCPU count, or
    when empty, the machine's own rate applies."""

    @property
    def counts(self) -> tuple[int, ...]:
        """The GPU counts a machine accepts, ascending."""
        return tuple(sorted(self.limits))


@attrs.frozen(kw_only=True)
class MachineCatalog:
    """The machines one platform offers.

    Attributes:
        machines: what :func:`smallest_fit` picks from.
        attach_family: the family whose machines take :attr:`attachments` (``n1``).
        attachments: portable accelerator -> how machines of ``attach_family`` take it.
        named_only: machines accepted when a job names them, never picked (deprecated names).
        ignore_case: names compare case-insensitively (for clouds whose VM size names ignore case).
    """

    machines: tuple[Machine, ...]
    attach_family: str = ""
    attachments: dict[str, Attachment] = attrs.field(factory=dict)
    named_only: tuple[Machine, ...] = ()
    ignore_case: bool = False
    _by_name: dict[str, Machine] = attrs.field(init=False, eq=False, repr=False)
    _fits: dict[tuple, Optional[Machine]] = attrs.field(init=False, eq=False, repr=False, factory=dict)
    """:func:`smallest_fit`'s answers (the catalog never changes; a sweep asks the same few questions)."""

    def __attrs_post_init__(self) -> None:
        by_name = {self._key(m.name): m for m in (*self.machines, *self.named_only)}
        object.__setattr__(self, "_by_name", by_name)

    def _key(self, name: str) -> str:
        return name.lower() if self.ignore_case else name

    def get(self, name: str) -> Optional[Machine]:
        """The machine called ``name`` (``None`` when the catalog does not know it)."""
        return self._by_name.get(self._key(name))

    def names(self) -> list[str]:
        """Every machine name the catalog knows, sorted."""
        return sorted(m.name for m in self._by_name.values())

    def suggest(self, name: str) -> str:
        """``"; did you mean 'n1-highmem-8'?"`` for a near miss, else ``""``."""
        close = close_matches(name, self.names(), n=1)
        return f"; did you mean {close[0]!r}?" if close else ""

    @property
    def families(self) -> frozenset[str]:
        """The families the catalog lists completely (a typo there is an error, not a new machine)."""
        return frozenset(m.family for m in self.machines)

    def attachment(self, machine: Machine, accelerator: str) -> Optional[Attachment]:
        """How ``machine`` takes ``accelerator`` attached; ``None`` when it cannot."""
        if machine.accelerator is not None or machine.family != self.attach_family:
            return None
        return self.attachments.get(accelerator)

    def takes(self, machine: Machine, accelerator: Optional[Accelerator], *, more_gpus: bool = False) -> bool:
        """True when ``machine`` can run a replica with ``accelerator`` (``None``: no GPUs).

        Args:
            machine: the machine.
            accelerator: the GPUs per replica.
            more_gpus: a machine with more of the same GPUs than asked for also fits (clouds
                where a node's GPUs are not named in the request).
        """
        if accelerator is None:
            return machine.accelerator is None
        if machine.accelerator is not None:
            return machine.accelerator == accelerator.type and (
                machine.gpus == accelerator.count or (more_gpus and machine.gpus > accelerator.count))
        rule = self.attachment(machine, accelerator.type)
        if rule is None or accelerator.count not in rule.limits:
            return False
        max_vcpus, max_memory = rule.limits[accelerator.count]
        return machine.vcpus <= max_vcpus and machine.memory_gb <= max_memory

    def locked_gpu_egress(self, machine: Machine,
                          accelerator: Optional[Accelerator]) -> Optional[tuple[int, float]]:
        """``(vCPUs needed, Gbps)`` when ``machine`` has too few vCPUs for the bandwidth its
        attached GPUs could unlock; ``None`` when it already has it or there is none."""
        rule = self.attachment(machine, accelerator.type) if accelerator else None
        if rule is None:
            return None
        needed, gbps = rule.egress_gbps.get(accelerator.count, (0, 0.0))
        return (needed, gbps) if gbps and machine.vcpus < needed else None

    def egress_gbps(self, machine: Machine, accelerator: Optional[Accelerator]) -> Optional[float]:
        """Maximum egress of ``machine`` carrying ``accelerator`` (``None`` when unknown)."""
        # The GPU rate needs the vCPU count the cloud lists with it ("based on the combination
        # of GPU and vCPU count"); with fewer vCPUs the plain rate is the safe estimate.
        rule = self.attachment(machine, accelerator.type) if accelerator else None
        if rule is None or machine.egress_gbps is None or self.locked_gpu_egress(machine, accelerator):
            return machine.egress_gbps
        return max(machine.egress_gbps, rule.egress_gbps.get(accelerator.count, (0, 0.0))[1])

    def ways_to_get(self, accelerator: str) -> tuple[str, ...]:
        """Human-readable ways to get ``accelerator`` here, for error messages."""
        found = [f"{m.name} ({m.gpus})" for m in self.machines if m.accelerator == accelerator]
        if accelerator in self.attachments:
            counts = "/".join(map(str, self.attachments[accelerator].counts))
            found.append(f"{self.attach_family}-* with {counts}")
        return tuple(found)


def big_enough(machine: Machine, cpus: Optional[float], memory_gb: Optional[float]) -> bool:
    """True when ``machine`` has at least ``cpus`` vCPUs and ``memory_gb`` GB (``None``: any)."""
    return (cpus is None or machine.vcpus >= cpus) and (memory_gb is None or machine.memory_gb >= memory_gb)


def _has(machine: Machine, link: Link) -> bool:
    return machine.infiniband if link == "infiniband" else machine.rdma


def smallest_fit(
    catalog: MachineCatalog,
    accelerator: Optional[Accelerator],
    *,
    cpus: Optional[float] = None,
    memory_gb: Optional[float] = None,
    interconnect: Optional[Link] = None,
    more_gpus: bool = False,
    prefer_interconnect: Optional[Link] = None,
) -> Optional[Machine]:
    """The smallest machine of ``catalog`` that fits a role, or ``None`` when none does.

    A machine fits when it takes ``accelerator`` (see :meth:`MachineCatalog.takes`; ``None`` means a
    machine without GPUs), has ``cpus`` and ``memory_gb``, and has ``interconnect``. Among those:
    machines still sold before retired ones, then the fewest GPUs (never idle GPUs for a faster
    network), then ``prefer_interconnect`` first, then the fewest vCPUs, the least memory, the name.
    """
    question = (accelerator, cpus, memory_gb, interconnect, more_gpus, prefer_interconnect)
    if question not in catalog._fits:
        catalog._fits[question] = _smallest_fit(catalog, accelerator, cpus, memory_gb, interconnect, more_gpus,
                                                prefer_interconnect)
    return catalog._fits[question]


def _smallest_fit(catalog: MachineCatalog, accelerator: Optional[Accelerator], cpus: Optional[float],
                  memory_gb: Optional[float], interconnect: Optional[Link], more_gpus: bool,
                  prefer_interconnect: Optional[Link]) -> Optional[Machine]:
    fitting = [
        m for m in catalog.machines
        if catalog.takes(m, accelerator, more_gpus=more_gpus)
        and big_enough(m, cpus, memory_gb)
        and (interconnect is None or _has(m, interconnect))
    ]

    def size(m: Machine) -> tuple:
        gpus = m.gpus if m.accelerator else (accelerator.count if accelerator else 0)
        slower = prefer_interconnect is not None and not _has(m, prefer_interconnect)
        return (bool(m.retired), gpus, slower, m.vcpus, m.memory_gb, m.name)

    return min(fitting, key=size, default=None)


def _asked(accelerator: Optional[Accelerator]) -> str:
    return f"{accelerator.count}×{accelerator.type}" if accelerator else "no accelerator"


def check_named(
    catalog: MachineCatalog,
    name: str,
    *,
    role: str,
    accelerator: Optional[Accelerator],
    cpus: Optional[float],
    memory_gb: Optional[float],
    path: str,
) -> Optional[Machine]:
    """Check a machine a job names for ``role``: it exists, takes the role's GPUs, is big enough.

    Args:
        catalog: the platform's machines.
        name: the machine the job names.
        role: the role's name, for messages (``workers``).
        accelerator: the GPUs per replica the role asks for.
        cpus: the vCPUs it asks for.
        memory_gb: the memory it asks for.
        path: the field that names the machine, for errors.

    Returns:
        The machine; ``None`` for a CPU machine of a family the catalog does not list (passed
        through unchecked, for the caller to decide).

    Raises:
        ValidationError: naming ``path``, what does not fit and what to do instead.
    """
    machine = catalog.get(name)
    if machine is None:
        if family_of(name) in catalog.families:
            raise ValidationError(f"unknown machine type {name!r}{catalog.suggest(name)}", path=path)
        if accelerator is not None:
            raise ValidationError(
                f"omnidist does not know which GPUs {name} can take; for {accelerator} use one of: "
                f"{', '.join(catalog.ways_to_get(accelerator.type))}", path=path)
        return None
    problem = _gpu_problem(catalog, machine, role, accelerator)
    if problem is None and cpus is not None and cpus > machine.vcpus:
        problem = f"{name} has {machine.vcpus} vCPUs, but {role} asks for cpus: {cpus:g}"
    if problem is None and memory_gb is not None and memory_gb > machine.memory_gb:
        problem = f"{name} has {machine.memory_gb:g} GB, but {role} asks for memory_gb: {memory_gb:g}"
    if problem:
        raise ValidationError(problem, path=path)
    return machine


def _gpu_problem(catalog: MachineCatalog, machine: Machine, role: str,
                 wanted: Optional[Accelerator]) -> Optional[str]:
    """Why ``machine`` cannot carry ``wanted`` (``None`` when it can)."""
    name = machine.name
    if machine.accelerator is not None:
        if wanted is not None and (wanted.type, wanted.count) == (machine.accelerator, machine.gpus):
            return None
        from omnidist.model import accelerators

        fix = (f"set accelerator: {machine.accelerator}:{machine.gpus} or name another machine"
               if machine.accelerator in accelerators.BY_NAME else "name another machine")
        builtin = f"{machine.gpus}×{machine.accelerator}"
        return f"{name} comes with {builtin}, but {role} asks for {_asked(wanted)}; {fix}"
    if wanted is None:
        return None
    rule = catalog.attachment(machine, wanted.type)
    family = machine.family.upper()
    if rule is None:
        what = f"{family} machines" if machine.family in catalog.families else name
        return f"{what} cannot take {wanted.type}; it comes on: {', '.join(catalog.ways_to_get(wanted.type))}"
    counts = ", ".join(map(str, rule.counts))
    if wanted.count not in rule.limits:
        return f"{name} can take {wanted.type} in counts {counts}, not {wanted.count}"
    max_vcpus, max_memory = rule.limits[wanted.count]
    if machine.vcpus > max_vcpus or machine.memory_gb > max_memory:
        return (f"{name} ({machine.vcpus} vCPUs, {machine.memory_gb:g} GB) is too big for {_asked(wanted)}: "
                f"{family} allows at most {max_vcpus} vCPUs and {max_memory:g} GB with that many "
                f"(allowed counts: {counts})")
    return None
