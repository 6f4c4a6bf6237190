"""The one cattrs converter: plain data / YAML / JSON <-> the IR, with path-precise errors.

User input is read strictly: unknown keys are rejected with a "did you mean", scalars are
not coerced across kinds (``replicas: "4"`` and ``spot: "yes"`` are errors, numbers in
argv lists and env values become strings), and every problem names its field path.
Backends read their settings blocks through :func:`structure` so they get the same rules.

This module knows no class of the IR: each model module registers the hooks of its own classes
(:func:`register_structure`, :func:`register_exact`, :func:`register_enums`…) when it is imported,
so the converter is one, and the IR's modules import it rather than the other way round.
"""

from __future__ import annotations

import enum
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Optional, TypeVar

import attrs
import cattrs
import yaml
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn
from cattrs.gen import override as override  # re-exported: the model modules name field overrides with it

from omnidist import codecache
from omnidist.errors import Problem, ValidationError
from omnidist.model import documents as documents_
from omnidist.model.documents import parse_yaml as parse_yaml  # re-exported: one parser, read as serde.parse_yaml
from omnidist.model.limits import clipped_repr
from omnidist.model.spelling import close_matches
from omnidist.patterns import lazy_pattern

T = TypeVar("T")

codecache.install()  # cattrs' generated structure functions too, now that it is imported

_converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)


def lazy(build: Callable[[], Any]) -> Any:
    """A hook generated on its first call: cattrs compiles each generated function, and a
    process that reads a job but never writes one (``omnidist compile``) should not pay for
    the writers at start-up."""
    made: list[Any] = []

    def hook(*args: Any) -> Any:
        if not made:
            made.append(build())
        return made[0](*args)

    return hook


# --- strict scalars ---------------------------------------------------------------------------

def kind(value: Any) -> str:
    """How an error names what it got: ``a mapping``, ``a list``, ``int 4``…"""
    named = {dict: "a mapping", list: "a list", bool: "true/false", type(None): "empty (null)"}.get(type(value))
    return named or f"{type(value).__name__} {clipped_repr(value)}"


def structure_str(value: Any, _: type = str) -> str:
    """Text as the strict rules read it: a string, or a number written unquoted."""
    # Numbers become strings (argv and env values are often written unquoted); bools do
    # not, because "True" is rarely what the user meant.
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"expected a string, got {kind(value)}")


def _structure_int(value: Any, _: type) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError(f"expected a whole number, got {kind(value)}")


def _structure_float(value: Any, _: type) -> float:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise ValueError(f"expected a number, got {kind(value)}")


def _structure_bool(value: Any, _: type) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {kind(value)}")


def _structure_enum(value: Any, cls: type[enum.Enum]) -> enum.Enum:
    choices = [m.value for m in cls]
    if isinstance(value, str) and value.lower() in choices:
        return cls(value.lower())
    close = close_matches(str(value).lower(), choices, n=1) if len(str(value)) < 100 else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"{clipped_repr(value)} is not one of {', '.join(choices)}{hint}")


def structure_argv(value: Any, _: type = tuple) -> tuple[str, ...]:
    """An argv as written: a list of strings, or one string (the attrs converter splits it)."""
    if isinstance(value, str):
        return value  # the attrs converter splits it with shlex
    if isinstance(value, (list, tuple)):
        return tuple(structure_str(v, str) for v in value)
    raise ValueError(f"expected a list of strings or one string, got {kind(value)}")


# --- durations --------------------------------------------------------------------------------

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")


def parse_duration(value: Any) -> int:
    """``"90m"`` -> 5400 seconds; a bare number is seconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _DURATION.match(value) if isinstance(value, str) else None
    if not match:
        raise ValueError(f"{value!r} is not a duration; write a whole number with s, m, h or d, e.g. 24h")
    return int(match[1]) * _UNITS[match[2] or "s"]


def format_duration(seconds: int) -> str:
    """5400 -> ``"90m"``: the largest unit that divides exactly."""
    for unit in ("d", "h", "m"):
        if seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


def _structure_mapping(value: Any, _: type) -> dict:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping, got {kind(value)}")
    return {structure_str(k, str): v for k, v in value.items()}


def _structure_str_map(value: Any, _: type) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of names to strings, got {kind(value)}")
    errors = []
    result = {}
    for key, item in value.items():
        try:
            result[str(key)] = structure_str(item, str)
        except ValueError as exc:
            errors.append(Problem(str(key), f"{exc}; quote the value"))
    if errors:
        raise ValidationError(errors)
    return result


def _structure_blocks(value: Any, _: type) -> dict[str, dict[str, Any]]:
    blocks, problems = {}, []
    for key, item in _structure_mapping(value, dict).items():
        try:
            blocks[key] = _structure_mapping(item, dict)
        except ValueError as exc:
            problems.append(Problem(key, str(exc)))
    if problems:
        raise ValidationError(problems)
    return blocks


def _attrs_structure_factory(cls: type) -> Any:
    # Every attrs class (settings blocks, native-spec models) says "expected a mapping" for a
    # non-mapping instead of failing inside the generated code.
    structure_fields = make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True)

    def hook(value: Any, _: type) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a mapping, got {kind(value)}")
        return structure_fields(value, cls)

    return hook


# --- registering hooks: the model modules call these for their own classes ---------------------

def register_structure(cls: type, hook: Callable[[Any, type], Any]) -> None:
    """Read ``cls`` from plain data with ``hook(value, cls)``."""
    _converter.register_structure_hook(cls, hook)


def register_unstructure(cls: type, hook: Callable[[Any], Any]) -> None:
    """Write ``cls`` as plain data with ``hook(value)``."""
    _converter.register_unstructure_hook(cls, hook)


def register_exact(type_: Any, hook: Callable[[Any, type], Any]) -> None:
    """Read the type ``type_`` (a generic alias such as ``dict[str, JobInput]`` or a ``Union``) with
    ``hook``: aliases are not classes, so they are matched by equality instead of singledispatch."""
    _converter.register_structure_hook_func(lambda t: t == type_, hook)


def register_enums(*classes: type[enum.Enum]) -> None:
    """Read each enum case-insensitively by value (with a "did you mean"), write it as its value.

    str-valued enums must be named: singledispatch would otherwise pick the ``str`` hook first."""
    for cls in classes:
        _converter.register_structure_hook(cls, _structure_enum)
        _converter.register_unstructure_hook(cls, lambda e: e.value)


def fields_structure(cls: type, **overrides: Any) -> Callable[[Any, type], Any]:
    """The generated hook that reads ``cls``'s fields strictly (unknown keys refused)."""
    return make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True, **overrides)


def fields_unstructure(cls: type, **overrides: Any) -> Callable[[Any], Any]:
    """The generated hook that writes ``cls``'s fields, leaving out those at their default."""
    return make_dict_unstructure_fn(cls, _converter, _cattrs_omit_if_default=True, **overrides)


_converter.register_structure_hook(str, structure_str)
_converter.register_structure_hook(int, _structure_int)
_converter.register_structure_hook(float, _structure_float)
_converter.register_structure_hook(bool, _structure_bool)
_converter.register_structure_hook_func(lambda t: isinstance(t, type) and issubclass(t, enum.Enum), _structure_enum)
register_exact(Optional[tuple[str, ...]], lambda v, t: None if v is None else structure_argv(v, t))
register_exact(tuple[str, ...], structure_argv)
register_exact(dict[str, str], _structure_str_map)
register_exact(dict[str, Any], _structure_mapping)
register_exact(dict[str, dict[str, Any]], _structure_blocks)
_converter.register_structure_hook_factory(attrs.has, _attrs_structure_factory)
_converter.register_unstructure_hook(tuple, list)


# --- errors: cattrs exception groups -> field paths ---------------------------------------------

INTERNAL = "omnidist.internal"
"""Field metadata key: the field is not read from input (``DistributedJob.source``), so it is
neither offered nor suggested among a mapping's allowed keys."""


def field_names(cls: type) -> list[str]:
    """The attrs field names of ``cls`` that input may set, in order."""
    return [a.name for a in attrs.fields(cls) if not a.metadata.get(INTERNAL)]


def _problems(exc: BaseException, path: str = "") -> list[Problem]:
    """Flatten a cattrs exception tree into problems with dotted paths."""
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        found: list[Problem] = []
        for sub in exc.exceptions:
            found += _problems(sub, _join(path, _note_step(sub)))
        return found
    if isinstance(exc, ForbiddenExtraKeysError):
        known = field_names(exc.cl)
        return [
            Problem(_join(path, _step(key)), f"unknown key{_suggest(key, known)} Allowed here: {', '.join(known)}")
            for key in sorted(exc.extra_fields, key=repr)  # keys of any type (YAML's ``1: 2``): ordered by repr
        ]
    if isinstance(exc, ValidationError):
        return [p.prefixed(path) for p in exc.problems]
    if isinstance(exc, KeyError):
        return [Problem(path, "required, but missing")]
    if isinstance(exc, (ValueError, TypeError)):
        return [Problem(path, str(exc))]
    raise exc


def _note_step(exc: BaseException) -> str:
    for note in getattr(exc, "__notes__", []):
        if hasattr(note, "name"):
            return note.name
        if hasattr(note, "index"):
            index = note.index
            return str(index) if isinstance(index, str) else f"[{index}]"
    return ""


def _step(key: Any) -> str:
    """A mapping key as a path step: a string as it is, any other key (YAML's ``1: 2``) as its repr."""
    return key if isinstance(key, str) else repr(key)


def _join(path: str, step: Any) -> str:
    step = _step(step)
    if not step:
        return path
    if not path:
        return step
    return f"{path}{step}" if step.startswith("[") else f"{path}.{step}"


GPU_KEYS = frozenset({"gpu", "gpus", "num_gpus", "gpu_count", "gpu_type", "gpu_per_node", "gpus_per_node",
                      "accelerators", "accelerator_count", "accelerator_type", "tpu", "tpus"})
"""Keys users write for GPUs; where ``accelerator`` is allowed they get its form, not a near spelling
(``gpus`` is one letter from ``cpus``)."""


def _suggest(key: Any, known: list[str]) -> str:
    if isinstance(key, str) and key.lower() in GPU_KEYS and "accelerator" in known:
        return '; GPUs are set as accelerator, type and count per replica: accelerator: "T4:2".'
    close = close_matches(key, known, n=1) if isinstance(key, str) and len(key) < 100 else []
    return f"; did you mean {close[0]!r}?" if close else "."


def structure(data: Any, cls: type[T], *, source: str | None = None, path: str = "") -> T:
    """Structure plain data into an attrs class under omnidist's strict rules.

    Raises:
        ValidationError: listing every problem with its field path under ``path``.
    """
    if attrs.has(cls) and not isinstance(data, Mapping):
        raise ValidationError(f"expected a mapping, got {kind(data)}", source=source, path=path)
    try:
        return _converter.structure(data, cls)
    except (ClassValidationError, IterableValidationError, ValidationError, ValueError, TypeError, KeyError) as exc:
        raise ValidationError([p.prefixed(path) for p in _problems(exc)], source=source) from None


def unstructure(value: Any) -> Any:
    """Plain data for an attrs value (the inverse of :func:`structure`)."""
    return _converter.unstructure(value)


# --- documents ----------------------------------------------------------------------------------

def read_document(path: str | os.PathLike[str]) -> Any:
    """Read any YAML/JSON document (native specs, configs) with the same error rules: a regular
    UTF-8 file within the size limit (:func:`omnidist.model.documents.read_text`)."""
    return parse_yaml(documents_.read_text(path), source=str(path))


class _Dumper(yaml.SafeDumper):
    """Safe dumper that writes multi-line strings as blocks and never emits aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    # Text with a character a plain, single-quoted or block scalar cannot carry unchanged (a line
    # break other than \n, a control character) is double-quoted, where every one is escaped: the
    # emitter's own choice loses some (a lone NEL comes back as a space).
    style = '"' if _UNPRINTABLE.search(value.replace("\n", "")) else "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_presenter)


def dump_yaml(data: Any) -> str:
    """Render plain data as YAML, keeping key order."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


_UNPRINTABLE = lazy_pattern("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
"""What one YAML comment line cannot hold as it is: line breaks (``\\n``, ``\\r``, NEL, the Unicode line
and paragraph separators), control characters, surrogates and the byte-order mark. Written as the
characters it finds, not as the complement of those it allows: the same set (every code point is
checked in ``tests/model``), compiled in a tenth of the time at every start."""


def yaml_comment(text: str) -> str:
    """``text`` as one YAML comment line holds it: every line break and unprintable character
    written as an escape (``\\n``, ``\\u2028``…), so that text from a native file or a user cannot
    end the comment and start a key of its own."""
    return _UNPRINTABLE.sub(_escape_char, str(text))


def _escape_char(match: re.Match[str]) -> str:
    char = match[0]
    named = {"\n": "\\n", "\r": "\\r"}.get(char)
    if named:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def dump_json(data: Any) -> str:
    """Render plain data as indented JSON."""
    return json.dumps(data, indent=2, ensure_ascii=False)
