"""Reading a pod template (or any Kubernetes object) the way the API server reads it: each field
checked for its type with the field's path in the error, ``null`` (which the API server drops)
read as empty, YAML numbers refused where a string belongs. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omnidist.kit import ValidationError


def mapping(value: Any, path: str, required: bool = False) -> Mapping[str, Any]:
    """A mapping at ``path`` (``None`` reads as empty unless ``required``).

    Raises:
        ValidationError: anything else.
    """
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping, got {type(value).__name__}", path=path)
    for key in value:
        if not isinstance(key, str):  # YAML allows ``1: 2``; a Kubernetes object's keys are JSON's, strings
            raise ValidationError(f"the key {key!r} is not a string; quote it (\"{key}\")", path=path)
    return value


def items(value: Any, path: str) -> Sequence[Any]:
    """A list at ``path`` (``None``, which the API server drops, reads as empty)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValidationError(f"expected a list, got {type(value).__name__}", path=path)
    return value


def text(value: Any, path: str) -> str:
    """A non-empty string at ``path``."""
    if not isinstance(value, str) or not value:
        raise ValidationError(f"expected a non-empty string, got {value!r}", path=path)
    return value


def strings(value: Any, path: str) -> tuple[str, ...]:
    """A list of strings (YAML numbers are refused, as the API server refuses them)."""
    found = items(value, path)
    for i, item in enumerate(found):
        if not isinstance(item, str):
            raise ValidationError(f"expected a string, got {item!r}; quote it", path=f"{path}[{i}]")
    return tuple(found)


def string_map(value: Any, path: str) -> dict[str, str]:
    """A mapping of strings to strings (node selectors, labels)."""
    found = mapping(value, path)
    for key, item in found.items():
        if not isinstance(item, str):
            raise ValidationError(f"expected a string, got {item!r}; quote it", path=f"{path}.{key}")
    return dict(found)
