"""Google Cloud TPU slices (SPEC §13): the host machines and topologies Vertex AI and GKE run a
TPU v5e or v6e slice on (GKE also v4 and v5p), and how many hosts a slice takes. Pure data and
lookups (no SDK).

A portable TPU accelerator is one whole slice: ``TPU-V5E:16`` is sixteen v5e chips laid out
``4x4`` on four ``ct5lp-hightpu-4t`` hosts. Vertex writes the slice as one worker pool of
``replicaCount: 1`` (the machine type and ``tpuTopology`` say the rest); GKE as one pod per host,
each asking for the host's chips. TPU v2 and v3 (counted in cores) run on Vertex's ``cloud-tpu``
machine and legacy AI Platform's ``cloud_tpu`` workers, whose names each backend keeps in its own
tables; a v2/v3 host carries one 8-core board. TPU v4 and v5p slices are 3-D (``2x2x4`` is 16
chips on four 4-chip hosts); GKE runs them (``tpu-v4-podslice``, ``tpu-v5p-slice``), Vertex custom
training does not list them.

Sources: Vertex "Configure compute resources for custom training" (TPU section: machine types,
topologies allowed for custom training, host shapes) and GKE's TPU pages, as read into the
project's platform notes; values marked *unconfirmed* are best knowledge, kept here so they are
easy to correct.
"""

from __future__ import annotations

from typing import Optional

import attrs

from omnidist.kit import ACCELERATORS_BY_NAME, Accelerator, topology_chips


@attrs.frozen(kw_only=True)
class TpuHost:
    """One TPU VM machine type: the chips it carries and the slice topologies it runs in.

    Attributes:
        machine_type: Compute Engine's name (``ct5lp-hightpu-4t``), the same on Vertex and GKE.
        accelerator: the portable TPU (``TPU-V5E``).
        chips: TPU chips per host.
        vcpus: host vCPUs.
        memory_gb: host memory in GB.
        topologies: the slice topologies Vertex custom training lists for the machine.
    """

    machine_type: str
    accelerator: str
    chips: int
    vcpus: int
    memory_gb: float
    topologies: tuple[str, ...]


_MULTI_HOST = ("2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")

_CUBES = ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x16", "8x16x16", "16x16x16")
"""The 3-D slice topologies of TPU v4 and v5p omnidist lays out (GKE's TPU v4/v5p topology tables;
a topology GKE lists beyond these, such as ``4x4x12``, is not offered here)."""

TPU_HOSTS: tuple[TpuHost, ...] = (
    TpuHost(machine_type="ct5lp-hightpu-1t", accelerator="TPU-V5E", chips=1, vcpus=24, memory_gb=48,
            topologies=("1x1",)),
    TpuHost(machine_type="ct5lp-hightpu-4t", accelerator="TPU-V5E", chips=4, vcpus=112, memory_gb=192,
            topologies=_MULTI_HOST),
    TpuHost(machine_type="ct5lp-hightpu-8t", accelerator="TPU-V5E", chips=8, vcpus=224, memory_gb=384,
            topologies=("2x4",)),
    TpuHost(machine_type="ct6e-standard-1t", accelerator="TPU-V6E", chips=1, vcpus=44, memory_gb=48,
            topologies=("1x1",)),
    TpuHost(machine_type="ct6e-standard-4t", accelerator="TPU-V6E", chips=4, vcpus=180, memory_gb=720,
            topologies=_MULTI_HOST),
    TpuHost(machine_type="ct6e-standard-8t", accelerator="TPU-V6E", chips=8, vcpus=180, memory_gb=1440,
            topologies=("2x4",)),
    # TPU v4 and v5p: one 4-chip host shape each (GKE node pools; host vCPUs and memory from
    # Compute Engine's TPU VM machine table -- unconfirmed, kept here to correct).
    TpuHost(machine_type="ct4p-hightpu-4t", accelerator="TPU-V4", chips=4, vcpus=240, memory_gb=407,
            topologies=_CUBES),
    TpuHost(machine_type="ct5p-hightpu-4t", accelerator="TPU-V5P", chips=4, vcpus=208, memory_gb=448,
            topologies=_CUBES),
)
"""The TPU VM machine types, by name (Vertex's TPU table for v5e and v6e: 1t is one chip, a 1x1
slice; 8t one host of 8 chips, a 2x4 slice; 4t hosts of 4 chips make every slice from 2x2 to
16x16, 2x4 on two hosts. v4 and v5p: 4-chip hosts, 2x2x1 on one)."""

HOSTS_BY_NAME: dict[str, TpuHost] = {h.machine_type: h for h in TPU_HOSTS}
"""Machine type -> host (derived)."""

DEFAULT_TOPOLOGIES: dict[int, str] = {
    1: "1x1", 4: "2x2", 8: "2x4", 16: "4x4", 32: "4x8", 64: "8x8", 128: "8x16", 256: "16x16",
}
"""Chips -> the topology a slice of that many chips gets when the job names none (the 2-D shapes
Vertex and GKE list for v5e and v6e)."""

CUBE_TOPOLOGIES: dict[int, str] = {topology_chips(t): t for t in _CUBES}
"""Chips -> the default topology of a TPU v4 or v5p slice (the 3-D shapes of :data:`_CUBES`)."""

CUBE_TPUS = frozenset({"TPU-V4", "TPU-V5P"})
"""The TPUs whose slices are 3-D."""


def default_topology(accelerator: str, chips: int) -> Optional[str]:
    """The topology a slice of ``chips`` chips of ``accelerator`` gets when the job names none
    (``None``: no slice of that size)."""
    return (CUBE_TOPOLOGIES if accelerator in CUBE_TPUS else DEFAULT_TOPOLOGIES).get(chips)

CORES_PER_BOARD = 8
"""TPU v2 and v3: cores per host (one board of four dual-core chips; ``v2-8``)."""


@attrs.frozen(kw_only=True)
class TpuSlice:
    """A portable TPU accelerator, laid out on hosts.

    Attributes:
        accelerator: the portable slice (``TPU-V5E:16``).
        topology: the slice's topology (``4x4``); ``None`` for TPU v2 and v3.
        host: the TPU VM machine of each host; ``None`` for TPU v2 and v3.
        hosts: how many hosts run the slice (one process each).
    """

    accelerator: Accelerator
    topology: Optional[str]
    host: Optional[TpuHost]
    hosts: int

    @property
    def per_host(self) -> int:
        """Chips (v5e, v6e) or cores (v2, v3) on each host."""
        return self.host.chips if self.host else CORES_PER_BOARD


def host_for(accelerator: str, topology: str) -> TpuHost:
    """The machine a slice of ``topology`` runs on when the job names none: a single host when one
    carries the whole slice (1x1 on 1t, 2x4 on 8t), else 4-chip hosts.

    Raises:
        ValueError: no host of ``accelerator`` runs ``topology``; the message lists those that run.
    """
    chips = topology_chips(topology)
    fitting = [h for h in TPU_HOSTS if h.accelerator == accelerator and topology in h.topologies]
    if not fitting:
        runs = sorted({t for h in TPU_HOSTS if h.accelerator == accelerator for t in h.topologies}, key=topology_chips)
        raise ValueError(f"{accelerator} runs the topologies {', '.join(runs)}, not {topology}")
    whole = [h for h in fitting if h.chips == chips]
    return (whole or sorted(fitting, key=lambda h: h.chips))[0]


def tpu_slice(accelerator: Accelerator, machine_type: Optional[str] = None) -> TpuSlice:
    """Lay out a portable TPU accelerator on hosts.

    Args:
        accelerator: a TPU accelerator (its count is the whole slice).
        machine_type: the TPU VM machine the job names (``None``: the default for the slice).

    Raises:
        ValueError: the machine is not a TPU VM of that TPU, or does not run that topology; the
            message says which machines and topologies do.
    """
    info = ACCELERATORS_BY_NAME[accelerator.type]
    if not info.topologies:  # v2 / v3: 8-core boards
        if machine_type is not None:
            raise ValueError(f"{accelerator.type} runs on its service's own TPU machine; remove {machine_type}")
        return TpuSlice(accelerator=accelerator, topology=None, host=None,
                        hosts=max(accelerator.count // CORES_PER_BOARD, 1))
    topology = accelerator.topology or default_topology(accelerator.type, accelerator.count)
    if topology is None:
        raise ValueError(f"{accelerator.type} has no slice of {accelerator.count} chips")
    if machine_type is None:
        host = host_for(accelerator.type, topology)
    else:
        host = HOSTS_BY_NAME.get(machine_type)
        offered = [h.machine_type for h in TPU_HOSTS if h.accelerator == accelerator.type]
        if host is None or host.accelerator != accelerator.type:
            raise ValueError(f"{machine_type} is not a {accelerator.type} machine; {accelerator.type} runs on "
                             f"{', '.join(offered)}")
        if topology not in host.topologies:
            runs = [h.machine_type for h in TPU_HOSTS if h.accelerator == accelerator.type and topology in h.topologies]
            raise ValueError(f"{machine_type} runs the topologies {', '.join(host.topologies)}, not {topology}; "
                             f"a {topology} slice runs on {', '.join(runs) or 'no machine'}")
    return TpuSlice(accelerator=accelerator, topology=topology, host=host,
                    hosts=topology_chips(topology) // host.chips)


def slice_from_host(machine_type: str, topology: Optional[str]) -> Accelerator:
    """The portable accelerator a native TPU VM pool runs (the importers' way back): the host's TPU,
    the topology's chips (one host's chips with no topology); the topology kept only when it is not
    the default for that many chips.

    Raises:
        ValueError: a machine that is not a TPU VM omnidist knows, or a topology it does not run.
    """
    host = HOSTS_BY_NAME.get(machine_type)
    if host is None:
        raise ValueError(f"{machine_type} is not a TPU VM machine omnidist knows ({', '.join(HOSTS_BY_NAME)})")
    chosen = topology or default_topology(host.accelerator, host.chips)
    if chosen not in host.topologies:
        raise ValueError(f"{machine_type} runs the topologies {', '.join(host.topologies)}, not {chosen}")
    chips = topology_chips(chosen)
    kept = None if default_topology(host.accelerator, chips) == chosen else chosen
    return Accelerator(type=host.accelerator, count=chips, topology=kept)


def is_default_host(tpu: TpuSlice) -> bool:
    """True when the slice's host is the one :func:`host_for` picks (so a job need not name it)."""
    return tpu.host is None or tpu.topology is None or host_for(tpu.accelerator.type, tpu.topology) == tpu.host


def host_picks(accelerator: str) -> list[tuple[str, int]]:
    """``(machine type, chips)`` of each TPU VM host of ``accelerator`` (what ``omnidist gpus`` lists
    for a backend that runs Google's TPUs)."""
    return [(h.machine_type, h.chips) for h in TPU_HOSTS if h.accelerator == accelerator]
