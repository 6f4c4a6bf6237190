"""Reading a public price list without trusting it: every body bounded in size and in time, every
text decoded or refused, every number checked, every short row skipped.

``omnidist catalog refresh`` reads lists it does not control (and mirrors of them). Whatever one
sends (an endless body, one byte a second, a body that is not UTF-8, a count of ``abc`` or
``1e999``, a price of ``nan``, a row cut short), reading it ends within :data:`SOURCE_DEADLINE_S`
and within :data:`MAX_BODY_BYTES` of memory, in rows or in a
:class:`~omnidist.errors.BackendError` that says why; the refresh then keeps that list's earlier
rows (:func:`guarded`).
"""

from __future__ import annotations

import csv
import io
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Optional, TypeVar

import attrs

from omnidist.errors import BackendError, OmnidistError

T = TypeVar("T")

MAX_BODY_BYTES = 512 * 2**20
"""The largest body read (the largest offer file a vendor publishes is well under it)."""

SOURCE_DEADLINE_S = 600.0
"""How long reading one list (all its pages) may take in all."""

REQUEST_TIMEOUT_S = 120.0
"""How long one request may wait for the server to say anything."""

CHUNK = 1 << 16

MAX_COUNT = 1024
"""The most accelerators one row may count (a count beyond is not a count)."""


@attrs.define
class Deadline:
    """When reading one list must have ended (a monotonic clock)."""

    seconds: float = SOURCE_DEADLINE_S
    clock: Callable[[], float] = time.monotonic
    ends: float = attrs.field(init=False, default=0.0)

    def __attrs_post_init__(self) -> None:
        self.ends = self.clock() + self.seconds

    def left(self, what: str) -> float:
        """Seconds left.

        Raises:
            BackendError: none are (naming ``what`` was being read).
        """
        left = self.ends - self.clock()
        if left <= 0:
            raise BackendError(f"{what}: still reading after {self.seconds:g} s; stopped")
        return left


def read(url: str, shown: str, *, deadline: Deadline, limit: int = MAX_BODY_BYTES,
         headers: Optional[dict[str, str]] = None) -> bytes:
    """The body at ``url``, read in chunks: at most ``limit`` bytes, before ``deadline``.

    Args:
        url: what is requested.
        shown: how errors name it (without a key).
        deadline: when reading this list must end.
        limit: the most bytes read.
        headers: request headers.

    Raises:
        BackendError: the request failed, the body is larger than ``limit``, or the deadline passed.
    """
    request = urllib.request.Request(url, headers=headers or {})
    parts: list[bytes] = []
    size = 0
    try:
        timeout = min(REQUEST_TIMEOUT_S, deadline.left(shown))
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - https or a mirror
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise BackendError(f"{shown}: the body is {int(declared):,} bytes, more than the {limit:,} read")
            while True:
                deadline.left(shown)
                chunk = response.read1(CHUNK) if hasattr(response, "read1") else response.read(CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise BackendError(f"{shown}: the body is larger than the {limit:,} bytes read; stopped")
                parts.append(chunk)
    except urllib.error.HTTPError as exc:
        detail = exc.read(300).decode("utf-8", "replace")
        raise BackendError(f"{shown}: HTTP {exc.code} {detail}".strip()) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:  # ValueError: a malformed URL or response
        raise BackendError(f"{shown}: {getattr(exc, 'reason', exc)}") from None
    return b"".join(parts)


def text(body: bytes, shown: str) -> str:
    """``body`` decoded as UTF-8 (a byte-order mark allowed).

    Raises:
        BackendError: it is not UTF-8 (naming the byte offset).
    """
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BackendError(f"{shown}: not UTF-8 text (byte {exc.start:,}: {body[exc.start:exc.start + 4]!r})") from None


def price(value: Any) -> Optional[float]:
    """A price from a list: a finite, non-negative number, else ``None`` (blank, not a number,
    negative, ``nan``, ``inf``, ``1e999``)."""
    if isinstance(value, bool):
        return None
    try:
        found = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return found if math.isfinite(found) and found >= 0 else None


def count(value: Any, default: int = 1) -> Optional[int]:
    """A count from a list (``"2"``, ``"2.0"``, blank for ``default``): a whole number from 1 to
    :data:`MAX_COUNT`, else ``None`` (``abc``, ``1e999``, ``0``, ``-1``, ``1.5``)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    number = price(value)
    if number is None or number != int(number) or not 1 <= number <= MAX_COUNT:
        return None
    return int(number)


def csv_rows(body: str, needed: Sequence[str], shown: str) -> tuple[list[str], Iterator[dict[str, str]]]:
    """The header and the rows of a CSV list that have every cell of ``needed`` (short rows are
    skipped: a cut-off download, a broken line).

    Raises:
        BackendError: a ``needed`` column is missing from the header.
    """
    reader = csv.DictReader(io.StringIO(body))
    try:
        header = list(reader.fieldnames or ())
    except csv.Error as exc:
        raise BackendError(f"{shown}: not CSV ({exc})") from None
    missing = sorted(set(needed) - set(header))
    if missing:
        raise BackendError(f"{shown}: no {', '.join(missing)} column")

    def rows() -> Iterator[dict[str, str]]:
        try:
            for cells in reader:
                if all(isinstance(cells.get(name), str) for name in needed):
                    yield cells
        except csv.Error as exc:
            raise BackendError(f"{shown}: not CSV at line {reader.line_num} ({exc})") from None

    return header, rows()


def guarded(shown: str, read_list: Callable[[], T]) -> T:
    """``read_list()``, with any error the list's data causes said as a :class:`BackendError`
    naming the list, so that the refresh keeps its earlier rows and goes on with the others.

    Raises:
        BackendError: the list could not be read, or its data is not in the shape documented.
    """
    try:
        return read_list()
    except OmnidistError as exc:
        if isinstance(exc, BackendError):
            raise
        raise BackendError(str(exc)) from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError, RecursionError,
            csv.Error) as exc:
        raise BackendError(f"{shown}: the data is not in the documented shape ({type(exc).__name__}: "
                           f"{str(exc)[:200]})") from None
    except MemoryError:
        raise BackendError(f"{shown}: the data is too large to read") from None
