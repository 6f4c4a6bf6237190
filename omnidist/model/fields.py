"""The attrs converters and validators the IR's classes share: enum choices, argv, env names.

Each raises :class:`~omnidist.errors.ValidationError` with the field's path, so a bad value in a
job file, a notebook or an importer reads the same everywhere.
"""

from __future__ import annotations

import enum
import math
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional, Union

import attrs

from omnidist.errors import ValidationError
from omnidist.model.limits import clipped_repr
from omnidist.model.spelling import close_matches
from omnidist.secrets import mask_env, mask_shapes


def choice(enum_cls: type[enum.Enum], field: str):
    """An attrs converter to ``enum_cls`` (case-insensitive) whose error names ``field``,
    the allowed values and the closest one."""

    def convert(value: Any) -> enum.Enum:
        if isinstance(value, enum_cls):
            return value
        allowed = [m.value for m in enum_cls]
        if isinstance(value, str) and value.lower() in allowed:
            return enum_cls(value.lower())
        close = close_matches(str(value).lower(), allowed, n=1) if len(str(value)) < 100 else []
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValidationError(f"{clipped_repr(value)} is not one of {', '.join(allowed)}{hint}", path=field)

    return convert


def fail(attribute: attrs.Attribute, message: str) -> None:
    """Raise the error for ``attribute``, at its path."""
    raise ValidationError(message, path=attribute.name)


def non_negative(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """A validator: unset or ``>= 0``."""
    if value is not None and value < 0:
        fail(attribute, f"must be >= 0, got {value}")


def positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """A validator: unset or ``> 0`` (and finite: NaN and infinity are no size)."""
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        fail(attribute, f"must be a finite number, got {value}")
    if value <= 0:
        fail(attribute, f"must be > 0, got {value}")


def at_most(maximum: float, what: str = "") -> Callable[[Any, attrs.Attribute, Any], None]:
    """A validator: unset, or at most ``maximum`` (one of the bounds of
    :mod:`omnidist.model.limits`, named in the error)."""

    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > maximum:
            shown = clipped_repr(value, 40) if isinstance(value, int) else f"{value:g}"
            fail(attribute, f"{shown} is more than the {maximum:g}{what} omnidist allows (docs/security.md)")

    return check


def to_argv(value: Union[str, list, tuple, None]) -> Optional[tuple[str, ...]]:
    """A command or args: a list is kept, a string is split like a shell would (shlex)."""
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(shlex.split(value))
    return tuple(value)


def as_tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    """``converter=tuple`` that type checkers read: the class takes any iterable (a list of notes).

    Also cheaper at start-up: attrs reads a converter's signature, and a builtin's (``tuple``) is
    parsed from its text with :mod:`tokenize`, whose patterns compile on first use (~3 ms)."""
    return tuple(items)


def as_frozenset(items: Iterable[Any]) -> frozenset[Any]:
    """``converter=frozenset`` that type checkers read: the class takes any iterable (a set, a list)."""
    return frozenset(items)


def as_dict(items: Mapping[Any, Any]) -> dict[Any, Any]:
    """``converter=dict`` that type checkers read: the class takes any mapping, and keeps a copy."""
    return dict(items)


def to_str_map(value: Optional[Mapping[str, str]]) -> dict[str, str]:
    """A converter: a mapping (or nothing) as a plain dict."""
    return dict(value or {})


def masked_repr(env: Mapping[str, str]) -> str:
    """The repr of an env mapping, secret-looking values masked."""
    return repr(mask_env(env))


def masked_argv_repr(argv: Optional[tuple[str, ...]]) -> str:
    """The repr of a command or args, secrets held by their shape (a password in a URL) masked."""
    return repr(argv if argv is None else tuple(mask_shapes(a) for a in argv))


ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def env_names(instance: Any, attribute: attrs.Attribute, value: Mapping[str, str]) -> None:
    """A validator: every key is a valid environment variable name."""
    for key in value:
        if not ENV_NAME.match(key):
            raise ValidationError(
                f"{key!r} is not a valid environment variable name (letters, digits, _; not starting with a digit)",
                path=f"{attribute.name}.{key}",
            )
