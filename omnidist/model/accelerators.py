"""Portable accelerator names (SPEC §1): the one vocabulary every backend maps from.

Names are case-insensitive; aliases cover the spellings users paste from cloud consoles.
"""

from __future__ import annotations

import difflib

import attrs


@attrs.frozen
class AcceleratorInfo:
    """A portable accelerator: its canonical name, vendor model and memory per device."""

    name: str
    model: str
    memory_gb: int
    aliases: tuple[str, ...] = ()


ACCELERATORS: tuple[AcceleratorInfo, ...] = (
    AcceleratorInfo("A100", "NVIDIA A100", 40, ("A100-40GB", "NVIDIA_TESLA_A100")),
    AcceleratorInfo("A100-80GB", "NVIDIA A100", 80, ("NVIDIA_A100_80GB",)),
    AcceleratorInfo("B200", "NVIDIA B200", 180, ("NVIDIA_B200",)),
    AcceleratorInfo("H100", "NVIDIA H100", 80, ("H100-80GB", "NVIDIA_H100_80GB")),
    AcceleratorInfo("H100-MEGA", "NVIDIA H100", 80, ("H100-MEGA-80GB", "NVIDIA_H100_MEGA_80GB")),
    AcceleratorInfo("H200", "NVIDIA H200", 141, ("H200-141GB", "NVIDIA_H200_141GB")),
    AcceleratorInfo("L4", "NVIDIA L4", 24, ("NVIDIA_L4",)),
    AcceleratorInfo("P100", "NVIDIA P100", 16, ("NVIDIA_TESLA_P100",)),
    AcceleratorInfo("P4", "NVIDIA P4", 8, ("NVIDIA_TESLA_P4",)),
    AcceleratorInfo("T4", "NVIDIA T4", 16, ("NVIDIA_TESLA_T4",)),
    AcceleratorInfo("V100", "NVIDIA V100", 16, ("NVIDIA_TESLA_V100",)),
)
"""The portable accelerators, sorted by name."""

BY_NAME: dict[str, AcceleratorInfo] = {a.name: a for a in ACCELERATORS}
"""Canonical name -> info."""

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
    close = difflib.get_close_matches(key, list(_LOOKUP), n=1, cutoff=0.6)
    hint = f"; did you mean {_LOOKUP[close[0]]!r}?" if close else ""
    raise ValueError(
        f"unknown accelerator {name!r}{hint} Portable names: {', '.join(BY_NAME)}"
    )
