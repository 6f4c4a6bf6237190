"""Machines: one record type, the one "smallest machine that fits", the one check of a machine
a job names, and the Compute Engine data that both Google backends read.

A backend describes what its cloud offers as a :class:`Catalog` of :class:`Machine` records
(plus, for Compute Engine's N1, the GPUs that can be attached to a machine); everything that
decides whether a machine fits a role lives here, so every backend picks and checks the same
way. Facts come from the clouds' machine pages (see ``PLATFORMS.md``); values marked
*unconfirmed* are best knowledge, kept in one place so they are easy to correct. Pure data and
lookups: no SDK, no network.
"""

from __future__ import annotations

import difflib
from typing import Literal, Optional

import attrs

from omnidist.errors import ValidationError
from omnidist.job import Accelerator

Link = Literal["infiniband", "rdma"]
"""A fast interconnect a role can demand: SR-IOV InfiniBand (what NCCL needs on Azure), or
any RDMA between machines (GPUDirect RDMA over RoCE on Google Cloud)."""


@attrs.frozen(kw_only=True)
class Machine:
    """One machine type (a Compute Engine machine type, an Azure VM size).

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
            without what NCCL needs, and Google's GPUDirect RDMA is RDMA over RoCE).
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
    """What a machine without GPUs of its own (Compute Engine N1) can take of one accelerator."""

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
class Catalog:
    """The machines one platform offers.

    Attributes:
        machines: what :func:`smallest_fit` picks from.
        attach_family: the family whose machines take :attr:`attachments` (``n1``).
        attachments: portable accelerator -> how machines of ``attach_family`` take it.
        named_only: machines accepted when a job names them, never picked (deprecated names).
        ignore_case: names compare case-insensitively (Azure VM sizes).
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
        close = difflib.get_close_matches(name, self.names(), n=1)
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
                where a node's GPUs are not named in the request, such as Azure ML).
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
        # The GPU rate needs the vCPU count Compute Engine lists with it ("based on the combination
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
    catalog: Catalog,
    accelerator: Optional[Accelerator],
    *,
    cpus: Optional[float] = None,
    memory_gb: Optional[float] = None,
    interconnect: Optional[Link] = None,
    more_gpus: bool = False,
    prefer_interconnect: Optional[Link] = None,
) -> Optional[Machine]:
    """The smallest machine of ``catalog`` that fits a role, or ``None`` when none does.

    A machine fits when it takes ``accelerator`` (see :meth:`Catalog.takes`; ``None`` means a
    machine without GPUs), has ``cpus`` and ``memory_gb``, and has ``interconnect``. Among those:
    machines still sold before retired ones, then the fewest GPUs (never idle GPUs for a faster
    network), then ``prefer_interconnect`` first, then the fewest vCPUs, the least memory, the name.
    """
    question = (accelerator, cpus, memory_gb, interconnect, more_gpus, prefer_interconnect)
    if question not in catalog._fits:
        catalog._fits[question] = _smallest_fit(catalog, accelerator, cpus, memory_gb, interconnect, more_gpus,
                                                prefer_interconnect)
    return catalog._fits[question]


def _smallest_fit(catalog: Catalog, accelerator: Optional[Accelerator], cpus: Optional[float],
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
    catalog: Catalog,
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


def _gpu_problem(catalog: Catalog, machine: Machine, role: str,
                 wanted: Optional[Accelerator]) -> Optional[str]:
    """Why ``machine`` cannot carry ``wanted`` (``None`` when it can)."""
    name = machine.name
    if machine.accelerator is not None:
        if wanted is not None and (wanted.type, wanted.count) == (machine.accelerator, machine.gpus):
            return None
        from omnidist import accelerators

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


# --- Compute Engine: the machines Google Cloud's training services run on -------------------------


COMPUTE_ENGINE_ACCELERATORS: dict[str, str] = {
    "A100": "NVIDIA_TESLA_A100",
    "A100-80GB": "NVIDIA_A100_80GB",
    "B200": "NVIDIA_B200",
    "H100": "NVIDIA_H100_80GB",
    "H100-MEGA": "NVIDIA_H100_MEGA_80GB",
    "H200": "NVIDIA_H200_141GB",
    "L4": "NVIDIA_L4",
    "P100": "NVIDIA_TESLA_P100",
    "P4": "NVIDIA_TESLA_P4",
    "T4": "NVIDIA_TESLA_T4",
    "V100": "NVIDIA_TESLA_V100",
}
"""Portable accelerator -> Compute Engine's accelerator type name (the ``acceleratorType`` both
Google backends write; legacy AI Platform took a few of them)."""


def _gpu_machine(name: str, vcpus: int, memory_gb: float, egress: float, accelerator: str, gpus: int,
                 rdma: bool = False) -> Machine:
    return Machine(name=name, vcpus=vcpus, memory_gb=memory_gb, egress_gbps=egress, accelerator=accelerator,
                   gpus=gpus, rdma=rdma)


COMPUTE_ENGINE_GPU_MACHINES: tuple[Machine, ...] = (
    _gpu_machine("a2-highgpu-1g", 12, 85, 24, "A100", 1),
    _gpu_machine("a2-highgpu-2g", 24, 170, 32, "A100", 2),
    _gpu_machine("a2-highgpu-4g", 48, 340, 50, "A100", 4),
    _gpu_machine("a2-highgpu-8g", 96, 680, 100, "A100", 8),
    _gpu_machine("a2-megagpu-16g", 96, 1360, 100, "A100", 16),
    _gpu_machine("a2-ultragpu-1g", 12, 170, 24, "A100-80GB", 1),
    _gpu_machine("a2-ultragpu-2g", 24, 340, 32, "A100-80GB", 2),
    _gpu_machine("a2-ultragpu-4g", 48, 680, 50, "A100-80GB", 4),
    _gpu_machine("a2-ultragpu-8g", 96, 1360, 100, "A100-80GB", 8),
    _gpu_machine("a3-highgpu-1g", 26, 234, 25, "H100", 1),
    _gpu_machine("a3-highgpu-2g", 52, 468, 50, "H100", 2),
    _gpu_machine("a3-highgpu-4g", 104, 936, 100, "H100", 4),
    _gpu_machine("a3-highgpu-8g", 208, 1872, 1000, "H100", 8),
    _gpu_machine("a3-megagpu-8g", 208, 1872, 1800, "H100-MEGA", 8),
    _gpu_machine("a3-ultragpu-8g", 224, 2952, 3600, "H200", 8, rdma=True),
    _gpu_machine("a4-highgpu-8g", 224, 3968, 3600, "B200", 8, rdma=True),
    _gpu_machine("g2-standard-12", 12, 48, 16, "L4", 1),
    _gpu_machine("g2-standard-16", 16, 64, 32, "L4", 1),
    _gpu_machine("g2-standard-24", 24, 96, 32, "L4", 2),
    _gpu_machine("g2-standard-32", 32, 128, 32, "L4", 1),
    _gpu_machine("g2-standard-4", 4, 16, 10, "L4", 1),
    _gpu_machine("g2-standard-48", 48, 192, 50, "L4", 4),
    _gpu_machine("g2-standard-8", 8, 32, 16, "L4", 1),
    _gpu_machine("g2-standard-96", 96, 384, 100, "L4", 8),
)
"""A2, A2 ultra, A3, A4 and G2 machines with their built-in GPUs (vCPUs, GB, egress Gbps), by
name. Only A3 ultra and A4 have GPUDirect RDMA (what ``interconnect: infiniband`` gets on Google
Cloud, which has no InfiniBand)."""

N1_MEMORY_PER_VCPU: dict[str, float] = {"highcpu": 0.9, "highmem": 6.5, "standard": 3.75}
"""N1 sub-family -> GB of memory per vCPU."""

N1_SIZES: dict[str, tuple[int, ...]] = {
    "highcpu": (2, 4, 8, 16, 32, 64, 96),
    "highmem": (2, 4, 8, 16, 32, 64, 96),
    "standard": (1, 2, 4, 8, 16, 32, 64, 96),
}
"""N1 sub-family -> the vCPU counts it comes in."""

N1_EGRESS_GBPS: dict[int, float] = {1: 2, 2: 10, 4: 10, 8: 16, 16: 32, 32: 32, 64: 32, 96: 32}
"""N1 vCPUs -> max egress Gbps without GPUs (and with P100/P4). Confirmed: 16 vCPUs = 32 Gbps
(``n1-highcpu-16``, the Reduction Server page) and the 32 Gbps ceiling; *unconfirmed*: 1-8 vCPUs."""

N1_GPUS: dict[str, Attachment] = {
    "P100": Attachment(limits={1: (16, 104), 2: (32, 208), 4: (64, 208)}),
    "P4": Attachment(limits={1: (24, 156), 2: (48, 312), 4: (96, 624)}),
    "T4": Attachment(limits={1: (48, 312), 2: (48, 312), 4: (96, 624)},
                     egress_gbps={1: (24, 32), 2: (48, 50), 4: (96, 100)}),
    "V100": Attachment(limits={1: (12, 78), 2: (24, 156), 4: (48, 312), 8: (96, 624)},
                       egress_gbps={1: (12, 24), 2: (24, 32), 4: (48, 50), 8: (96, 100)}),
}
"""Portable GPU -> how N1 machines take it, sorted by GPU.

Confirmed: the V100 vCPU caps (12/24/48/96) and ``n1-highmem-96`` + 8×V100 = 100 Gbps (the
Reduction Server page); P100/P4 stay at the plain N1 rate (≤ 32 Gbps); T4/V100 reach
"up to 100 Gbps based on GPU and vCPU count" (Networking and GPU machines). *Unconfirmed*
(the per-count N1 table could not be retrieved; values from Compute Engine's GPU pages as
last read, easy to correct here): V100 1/2/4 = 24/32/50 Gbps, T4 1/2/4 = 32/50/100 Gbps, the
memory caps, and the T4/P4/P100 vCPU caps (P100 ×4 allows 96 vCPUs in some zones, 64 in others).
"""

REDUCTION_SERVER_MACHINE = "n1-highcpu-16"
"""The machine Google's Reduction Server documents recommend for reducers (32 Gbps for 16 vCPUs)."""


def _n1(sub_family: str, vcpus: int) -> Machine:
    return Machine(name=f"n1-{sub_family}-{vcpus}", vcpus=vcpus,
                   memory_gb=round(vcpus * N1_MEMORY_PER_VCPU[sub_family], 2),
                   egress_gbps=N1_EGRESS_GBPS[vcpus])


N1_MACHINES: tuple[Machine, ...] = tuple(
    sorted((_n1(kind, n) for kind, sizes in N1_SIZES.items() for n in sizes), key=lambda m: m.name))
"""Every N1 machine type, derived from :data:`N1_SIZES`."""

COMPUTE_ENGINE = Catalog(machines=(*COMPUTE_ENGINE_GPU_MACHINES, *N1_MACHINES), attach_family="n1",
                         attachments=N1_GPUS)
"""Every Compute Engine machine omnidist knows, with the GPUs N1 takes."""

GB_PER_VCPU_BY_NAME: dict[str, dict[str, float]] = {
    "c2": {"standard": 4},
    "c2d": {"highcpu": 2, "highmem": 8, "standard": 4},
    "c3": {"highcpu": 2, "highmem": 8, "standard": 4},
    "e2": {"highcpu": 1, "highmem": 8, "standard": 4},
    "n2": {"highcpu": 1, "highmem": 8, "standard": 4},
    "n2d": {"highcpu": 1, "highmem": 8, "standard": 4},
    "n4": {"highcpu": 2, "highmem": 8, "standard": 4},
}
"""Compute Engine families outside the catalog -> kind -> GB of memory per vCPU, so an importer
can read the size a job ran on from ``FAMILY-KIND-VCPUS`` (``n2-standard-4``: 4 vCPUs, 16 GB).
From Compute Engine's general-purpose and compute-optimized machine pages; the C2D, C3 and N4
``highcpu`` ratios are *unconfirmed*."""


def compute_engine_shape(name: str) -> Optional[tuple[int, float]]:
    """``(vCPUs, GB)`` of a Compute Engine machine type, from the catalog or, for the families in
    :data:`GB_PER_VCPU_BY_NAME`, from its name; ``None`` when neither says."""
    machine = COMPUTE_ENGINE.get(name)
    if machine is not None:
        return machine.vcpus, machine.memory_gb
    family, _, rest = name.partition("-")
    kind, _, vcpus = rest.rpartition("-")
    ratio = GB_PER_VCPU_BY_NAME.get(family, {}).get(kind)
    if ratio is None or not vcpus.isdigit():
        return None
    return int(vcpus), int(vcpus) * ratio
