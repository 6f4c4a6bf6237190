"""Portable accelerator names (SPEC §1, §13): the one vocabulary every backend maps from.

Names are case-insensitive; aliases cover the spellings users paste from cloud consoles. GPUs are
counted in devices per replica; TPUs are counted the way their maker counts them (SPEC §13): TPU v2 and
v3 in TensorCores (``v2-8`` is one board of 4 chips, 8 cores), TPU v4, v5e, v5p and v6e in chips, and a TPU
count is the whole slice the job trains on, which comes only in the sizes sold
(:attr:`AcceleratorInfo.sizes`).
"""

from __future__ import annotations

import attrs

from omnidist.model.spelling import close_matches


@attrs.frozen
class AcceleratorInfo:
    """A portable accelerator: its canonical name, vendor model and memory per unit counted.

    Attributes:
        unit: what a count counts: ``gpu`` (devices), ``core`` (TPU TensorCores: v2, v3) or
            ``chip`` (TPU chips: v4, v5e, v5p, v6e).
        sizes: the counts a TPU slice comes in (empty for GPUs, which any count of a machine takes).
    """

    name: str
    model: str
    memory_gb: int
    aliases: tuple[str, ...] = ()
    unit: str = "gpu"
    sizes: tuple[int, ...] = ()

    @property
    def tpu(self) -> bool:
        """True for a TPU (counted in cores or chips, one slice per job)."""
        return self.unit != "gpu"

    @property
    def topologies(self) -> bool:
        """True when a slice has a ``topology`` (chips laid out ``AxB`` or ``AxBxC``: TPU v4 and later)."""
        return self.unit == "chip"


ACCELERATORS: tuple[AcceleratorInfo, ...] = (
    AcceleratorInfo("A10", "NVIDIA A10", 24, ("NVIDIA_A10",)),
    AcceleratorInfo("A100", "NVIDIA A100", 40, ("A100-40GB", "NVIDIA_TESLA_A100")),
    AcceleratorInfo("A100-80GB", "NVIDIA A100", 80, ("NVIDIA_A100_80GB",)),
    AcceleratorInfo("A10G", "NVIDIA A10G", 24, ("NVIDIA_A10G",)),
    AcceleratorInfo("B200", "NVIDIA B200", 180, ("NVIDIA_B200",)),
    AcceleratorInfo("H100", "NVIDIA H100", 80, ("H100-80GB", "NVIDIA_H100_80GB")),
    AcceleratorInfo("H100-MEGA", "NVIDIA H100", 80, ("H100-MEGA-80GB", "NVIDIA_H100_MEGA_80GB")),
    AcceleratorInfo("H200", "NVIDIA H200", 141, ("H200-141GB", "NVIDIA_H200_141GB")),
    AcceleratorInfo("L4", "NVIDIA L4", 24, ("NVIDIA_L4",)),
    AcceleratorInfo("L40S", "NVIDIA L40S", 48, ("NVIDIA_L40S",)),
    AcceleratorInfo("P100", "NVIDIA P100", 16, ("NVIDIA_TESLA_P100",)),
    AcceleratorInfo("P4", "NVIDIA P4", 8, ("NVIDIA_TESLA_P4",)),
    AcceleratorInfo("T4", "NVIDIA T4", 16, ("NVIDIA_TESLA_T4",)),
    AcceleratorInfo("V100", "NVIDIA V100", 16, ("NVIDIA_TESLA_V100",)),
    # TPUs (SPEC §13). Memory is per unit counted: v2 and v3 have 16 and 32 GB of HBM per chip of
    # two cores, v4 32 GB, v5e 16 GB, v5p 95 GB and v6e 32 GB per chip (the maker's TPU
    # system-architecture pages).
    # Sizes: v2 and v3 come as one 8-core device or as Pod slices of a multiple of 32 cores
    # ("32 or multiple of 32"; v2 Pods reach 512 cores, v3 Pods 2048); v5e and v6e
    # slices are the topologies the TPU platforms list, 1 to 256 chips; v4 and v5p
    # slices are 3-D topologies of 4-chip hosts, 2x2x1 (4 chips) to 16x16x16 (4096).
    AcceleratorInfo("TPU-V2", "TPU v2", 8, ("TPU-V2-POD",), unit="core",
                    sizes=(8, *range(32, 513, 32))),
    AcceleratorInfo("TPU-V3", "TPU v3", 16, ("TPU-V3-POD",), unit="core",
                    sizes=(8, *range(32, 2049, 32))),
    AcceleratorInfo("TPU-V4", "TPU v4", 32, ("TPU-V4-PODSLICE",), unit="chip",
                    sizes=(4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)),
    AcceleratorInfo("TPU-V5E", "TPU v5e", 16, ("TPU-V5-LITE", "TPU-V5-LITEPOD", "V5LITEPOD"),
                    unit="chip", sizes=(1, 4, 8, 16, 32, 64, 128, 256)),
    AcceleratorInfo("TPU-V5P", "TPU v5p", 95, ("TPU-V5P-SLICE",), unit="chip",
                    sizes=(4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)),
    AcceleratorInfo("TPU-V6E", "TPU v6e", 32, ("TPU-V6E-SLICE",), unit="chip",
                    sizes=(1, 4, 8, 16, 32, 64, 128, 256)),
)
"""The portable accelerators: GPUs sorted by name, then TPUs."""

BY_NAME: dict[str, AcceleratorInfo] = {a.name: a for a in ACCELERATORS}
"""Canonical name -> info."""

GPUS: dict[str, AcceleratorInfo] = {a.name: a for a in ACCELERATORS if not a.tpu}
"""The GPUs (what most backends offer, and what ``omnidist run`` uses)."""

TPUS: dict[str, AcceleratorInfo] = {a.name: a for a in ACCELERATORS if a.tpu}
"""The TPUs (SPEC §13): the backends with TPUs run them."""


def is_tpu(name: object) -> bool:
    """True for the canonical name of a TPU (``TPU-V5E``)."""
    return isinstance(name, str) and name in TPUS

_LOOKUP: dict[str, str] = {
    key.upper().replace("_", "-"): a.name for a in ACCELERATORS for key in (a.name, *a.aliases)
}


def canonical_name(name: str) -> str:
    """The canonical portable name for ``name`` (any case, ``_`` or ``-``).

    Raises:
        ValueError: for a name that is not a portable accelerator, with a suggestion.
    """
    key = name.strip().upper().replace("_", "-")
    if key in _LOOKUP:
        return _LOOKUP[key]
    if key in OTHER_PRODUCTS:
        raise ValueError(f"unknown accelerator {name!r}: {key} is a GPU omnidist does not know (it is not a spelling "
                         f"of another one). Portable names: {', '.join(BY_NAME)}")
    # A close spelling is offered only when its model number holds the name's, or the other way round
    # (V1000, H10): a name with other digits is another product, and suggesting it would move a job
    # to hardware it never asked for.
    close = [c for c in close_matches(key, list(_LOOKUP), n=3, cutoff=0.6) if _digits(key) in _digits(c)
             or _digits(c) in _digits(key)]
    hint = (f"; did you mean {_LOOKUP[close[0]]!r}?" if close
            else ": not a GPU or TPU omnidist knows, and no known name is a spelling of it.")
    raise ValueError(
        f"unknown accelerator {name!r}{hint} Portable names: {', '.join(BY_NAME)}"
    )


OTHER_PRODUCTS = frozenset({"A16", "A2", "A30", "A40", "K80", "L40", "M60", "P40", "RTX6000",
                            "T4G", "GH200", "MI300X", "TRAINIUM", "TRN1", "INFERENTIA"}) - set(BY_NAME)
"""GPUs and chips the clouds offer that are not portable names: never offered a close spelling (A10G
reads one letter away from A100; the portable ones are left out, so a GPU that becomes portable
is never refused as unknown)."""


def _digits(name: str) -> str:
    """The model number in an accelerator's name (``A100-80GB`` -> ``10080``)."""
    return "".join(ch for ch in name if ch.isdigit())
