"""Kubernetes resource quantities (``500m``, ``64Gi``, ``1e3``), read and written exactly.

The training CRDs type every quantity as ``x-kubernetes-int-or-string``: a whole number or a
string. omnidist writes strings; the importer reads both, and refuses a YAML float such as
``0.5`` the way the API server does. Pure; :class:`decimal.Decimal` keeps values exact.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from omnidist.kit import ValidationError, clipped_repr, lazy_pattern

if TYPE_CHECKING:
    from decimal import Decimal

_QUANTITY = lazy_pattern(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


@functools.cache
def suffixes() -> dict[str, Decimal]:
    """Quantity suffix -> multiplier (apimachinery ``resource.Quantity``: binary ``Ki``…``Ei``,
    decimal ``n u m k M G T P E``). Built on first use, with :mod:`decimal` (a compile that sets no
    quantity does not load it)."""
    from decimal import Decimal

    return {
        "": Decimal(1),
        "E": Decimal(10) ** 18, "Ei": Decimal(2) ** 60,
        "G": Decimal(10) ** 9, "Gi": Decimal(2) ** 30,
        "Ki": Decimal(2) ** 10,
        "M": Decimal(10) ** 6, "Mi": Decimal(2) ** 20,
        "P": Decimal(10) ** 15, "Pi": Decimal(2) ** 50,
        "T": Decimal(10) ** 12, "Ti": Decimal(2) ** 40,
        "k": Decimal(10) ** 3,
        "m": Decimal(10) ** -3,
        "n": Decimal(10) ** -9,
        "u": Decimal(10) ** -6,
    }


LARGEST_EXPONENT = 63
"""A quantity the API server stores is below 2**63 (an int64)."""


def parse(value: Any, path: str) -> Decimal:
    """The value of a quantity as the API server reads it.

    Raises:
        ValidationError: at ``path``, for a float (the CRDs take a whole number or a string), a
            string that is no quantity, or a negative one.
    """
    from decimal import Decimal

    if isinstance(value, bool) or not isinstance(value, (int, str)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(f"{value!r} is not a quantity; write e.g. \"4\", \"500m\" or \"64Gi\"", path=path)
        if isinstance(value, float) and value < 0:
            raise ValidationError(f"must not be negative, got {value!r}", path=path)
        if isinstance(value, float):  # finite, not negative: the hint is a finite quantity
            hint = f'"{value:g}"' if value >= 1 else f'"{round(value * 1000)}m"'
            raise ValidationError(f"{value!r} is a number with a fraction; the Kubeflow CRDs take a quantity as a "
                                  f"whole number or a string (the API server refuses it): write {hint}", path=path)
        raise ValidationError(f"expected a quantity such as \"4\", \"500m\" or \"64Gi\", got {value!r}", path=path)
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise ValidationError(f"{text!r} is not a quantity; write e.g. \"4\", \"500m\" or \"64Gi\"", path=path)
    number, exponent, suffix = match.groups()
    try:
        amount = Decimal(number) * (Decimal(10) ** int(exponent[1:]) if exponent else suffixes()[suffix or ""])
    except (ArithmeticError, ValueError):  # an exponent past the decimal context's (or int's) range
        amount = None
    if amount is None or abs(amount) >= Decimal(2) ** LARGEST_EXPONENT:
        raise ValidationError(f"{clipped_repr(text, 60)} is too large for a quantity (the API server takes "
                              "less than 2^63)", path=path)
    if amount < 0:
        raise ValidationError(f"must not be negative, got {text!r}", path=path)
    return amount


def cpu(cpus: float) -> str:
    """``4`` -> ``"4"``, ``0.5`` -> ``"500m"`` (whole millicores, rounded up)."""
    from decimal import Decimal

    millis = math.ceil(Decimal(str(cpus)) * 1000)
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def memory(gigabytes: float) -> str:
    """``64`` -> ``"64Gi"``, ``0.5`` -> ``"512Mi"`` (GB of the job file are GiB here, rounded to whole MiB)."""
    from decimal import Decimal

    mebibytes = max(1, int((Decimal(str(gigabytes)) * 1024).to_integral_value(rounding="ROUND_HALF_UP")))
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def disk(gigabytes: int) -> str:
    """``100`` -> ``"100Gi"``."""
    return f"{gigabytes}Gi"


def to_cpus(amount: Decimal) -> float:
    """A CPU quantity as the job's ``cpus`` (whole millicores)."""
    from decimal import Decimal

    return float(amount.quantize(Decimal("0.001"), rounding="ROUND_CEILING"))


def to_gigabytes(amount: Decimal) -> float:
    """A byte quantity as the job's ``memory_gb`` (GiB to four places: whole MiB round-trip)."""
    from decimal import Decimal

    return float((amount / suffixes()["Gi"]).quantize(Decimal("0.0001"), rounding="ROUND_HALF_UP"))


def to_whole_gigabytes(amount: Decimal) -> int:
    """A byte quantity as the job's ``disk_gb`` (whole GiB, rounded up)."""
    return max(1, math.ceil(amount / suffixes()["Gi"]))


def whole(amount: Decimal, path: str) -> int:
    """A device count (``nvidia.com/gpu``): a whole number.

    Raises:
        ValidationError: at ``path``, for a fraction.
    """
    if amount != amount.to_integral_value():
        raise ValidationError(f"a device count is a whole number, got {amount}", path=path)
    return int(amount)
