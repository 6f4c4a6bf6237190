"""The one cattrs converter: plain data / YAML / JSON <-> the IR, with path-precise errors.

User input is read strictly: unknown keys are rejected with a "did you mean", scalars are
not coerced across kinds (``replicas: "4"`` and ``spot: "yes"`` are errors, numbers in
argv lists and env values become strings), and every problem names its field path.
Backends read their settings blocks through :func:`structure` so they get the same rules.
"""

from __future__ import annotations

import difflib
import enum
import functools
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Optional, TypeVar, Union

import attrs
import cattrs
import yaml
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from omnidist import jobdata
from omnidist.errors import Problem, ValidationError
from omnidist.job import (
    AUTO, Accelerator, Algorithm, DistributedJob, Framework, Goal, Interconnect, Parameter, ParameterType, Replicas, Role,
    Scale, Tuning,
)
from omnidist.jobdata import NO_ACCELERATOR, JobInput, JobOutput

T = TypeVar("T")

_converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)


def _lazy(build: Any) -> Any:
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

def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", bool: "true/false", type(None): "empty (null)"}.get(
        type(value), f"{type(value).__name__} {value!r}"
    )


def _structure_str(value: Any, _: type) -> str:
    # Numbers become strings (argv and env values are often written unquoted); bools do
    # not, because "True" is rarely what the user meant.
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"expected a string, got {_kind(value)}")


def _structure_int(value: Any, _: type) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError(f"expected a whole number, got {_kind(value)}")


def _structure_float(value: Any, _: type) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise ValueError(f"expected a number, got {_kind(value)}")


def _structure_bool(value: Any, _: type) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {_kind(value)}")


def _structure_enum(value: Any, cls: type[enum.Enum]) -> enum.Enum:
    choices = [m.value for m in cls]
    if isinstance(value, str) and value.lower() in choices:
        return cls(value.lower())
    close = difflib.get_close_matches(str(value).lower(), choices, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"{value!r} is not one of {', '.join(choices)}{hint}")


def _structure_replicas(value: Any, _: type) -> Replicas:
    if value == AUTO:
        return AUTO
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"expected a whole number or 'auto', got {_kind(value)}")


def _structure_argv(value: Any, _: type) -> tuple[str, ...]:
    if isinstance(value, str):
        return value  # the attrs converter splits it with shlex
    if isinstance(value, (list, tuple)):
        return tuple(_structure_str(v, str) for v in value)
    raise ValueError(f"expected a list of strings or one string, got {_kind(value)}")


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


# --- the job's own shapes ---------------------------------------------------------------------

def _structure_accelerator(value: Any, _: type) -> Accelerator:
    if isinstance(value, str):
        return Accelerator.parse(value)
    if isinstance(value, Mapping):
        return _accelerator_fields()(value, Accelerator)
    raise ValueError(f"expected 'TYPE:COUNT' (e.g. V100:8) or {{type: V100, count: 8}}, got {_kind(value)}")


def _structure_mapping(value: Any, _: type) -> dict:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping, got {_kind(value)}")
    return {_structure_str(k, str): v for k, v in value.items()}


def _structure_str_map(value: Any, _: type) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of names to strings, got {_kind(value)}")
    errors = []
    result = {}
    for key, item in value.items():
        try:
            result[str(key)] = _structure_str(item, str)
        except ValueError as exc:
            errors.append(Problem(str(key), f"{exc}; quote the value"))
    if errors:
        raise ValidationError(errors)
    return result


_converter.register_structure_hook(str, _structure_str)
_converter.register_structure_hook(int, _structure_int)
_converter.register_structure_hook(float, _structure_float)
_converter.register_structure_hook(bool, _structure_bool)
_converter.register_structure_hook_func(
    lambda t: isinstance(t, type) and issubclass(t, enum.Enum), _structure_enum
)
# str-valued enums would otherwise dispatch to the str hook (singledispatch sees str first).
for _enum in (Framework, Interconnect, ParameterType, Scale, Goal, Algorithm):
    _converter.register_structure_hook(_enum, _structure_enum)
def _register_exact(type_: Any, hook: Any) -> None:
    # Generic aliases (tuple[str, ...], dict[str, str]) are not classes, so they are matched
    # by equality instead of singledispatch.
    _converter.register_structure_hook_func(lambda t: t == type_, hook)


_register_exact(Replicas, _structure_replicas)
_register_exact(Optional[tuple[str, ...]], lambda v, t: None if v is None else _structure_argv(v, t))
_register_exact(tuple[str, ...], _structure_argv)
_register_exact(dict[str, str], _structure_str_map)
_register_exact(dict[str, Any], _structure_mapping)
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


_register_exact(dict[str, dict[str, Any]], _structure_blocks)
def _attrs_structure_factory(cls: type) -> Any:
    # Every attrs class (settings blocks, native-spec models) says "expected a mapping" for a
    # non-mapping instead of failing inside the generated code.
    structure_fields = make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True)

    def hook(value: Any, _: type) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a mapping, got {_kind(value)}")
        return structure_fields(value, cls)

    return hook


_converter.register_structure_hook_factory(attrs.has, _attrs_structure_factory)


# The job's own hooks are generated on first use, not at import: generating one evaluates the
# classes' annotations, milliseconds that a command which never reads a job should not pay.

@functools.cache
def _accelerator_fields() -> Any:
    return make_dict_structure_fn(Accelerator, _converter, _cattrs_forbid_extra_keys=True)


def _exactly(cls: type) -> Any:
    return lambda t: t is cls


_converter.register_structure_hook(Accelerator, _structure_accelerator)


# --- SPEC §7 shapes: accelerator none, inputs, outputs, framework_version -----------------------

def _structure_role_accelerator(value: Any, _: type) -> Any:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == NO_ACCELERATOR:
        return NO_ACCELERATOR
    return _structure_accelerator(value, Accelerator)


def _structure_version(value: Any, _: type) -> Optional[str]:
    # Not the lenient str hook: YAML reads 2.10 as the number 2.1, so a number is refused.
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f'write the version as a string, e.g. "2.12" (YAML reads an unquoted {value!r} as a number)')


_register_exact(Optional[Union[Accelerator, Literal["none"]]], _structure_role_accelerator)
_register_exact(dict[str, JobInput], lambda v, _: jobdata.to_inputs(v, field=""))
_register_exact(dict[str, JobOutput], lambda v, _: jobdata.to_outputs(v, field=""))
_converter.register_unstructure_hook(JobInput, JobInput.to_data)
_converter.register_unstructure_hook(JobOutput, JobOutput.to_data)
_converter.register_structure_hook(
    DistributedJob,
    _lazy(lambda: make_dict_structure_fn(
        DistributedJob, _converter, _cattrs_forbid_extra_keys=True,
        source=override(omit=True),
        timeout=override(struct_hook=lambda v, _: None if v is None else parse_duration(v)),
        framework_version=override(struct_hook=_structure_version),
    )),
)

_converter.register_unstructure_hook(Accelerator, lambda a: f"{a.type}:{a.count}")
_converter.register_unstructure_hook(tuple, list)
for _enum in (Framework, Interconnect, ParameterType, Scale, Goal, Algorithm):
    _converter.register_unstructure_hook(_enum, lambda e: e.value)
_converter.register_unstructure_hook(
    Role, _lazy(lambda: make_dict_unstructure_fn(
        Role, _converter, _cattrs_omit_if_default=True, replicas=override(omit_if_default=False)
    ))
)
# Tuning: a parameter's bounds and values are checked and normalized by Parameter itself, which
# knows its type (numbers for ranges and discrete lists, text for categorical ones).
_structure_parameter_fields = _lazy(lambda: make_dict_structure_fn(
    Parameter, _converter, _cattrs_forbid_extra_keys=True,
    **{name: override(struct_hook=lambda v, _: v) for name in ("min", "max", "values")},
))


def _structure_parameter(value: Any, _: type) -> Parameter:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping such as {{type: double, min: 0.001, max: 0.1}}, got {_kind(value)}")
    return _structure_parameter_fields(value, Parameter)


_converter.register_structure_hook(Parameter, _structure_parameter)
_converter.register_unstructure_hook(
    Parameter, _lazy(lambda: make_dict_unstructure_fn(Parameter, _converter, _cattrs_omit_if_default=True,
                                                      type=override(omit_if_default=False)))
)
_unstructure_tuning_fields = _lazy(lambda: make_dict_unstructure_fn(Tuning, _converter, _cattrs_omit_if_default=True))
_converter.register_unstructure_hook(  # in the field order SPEC §8 writes them
    Tuning, lambda t: dict(sorted(_unstructure_tuning_fields(t).items(), key=lambda kv: _field_names(Tuning).index(kv[0])))
)
_converter.register_unstructure_hook(
    DistributedJob,
    _lazy(lambda: make_dict_unstructure_fn(
        DistributedJob, _converter, _cattrs_omit_if_default=True,
        name=override(omit_if_default=False),
        framework=override(omit_if_default=False),
        primary=override(omit_if_default=False),
        source=override(omit=True),
        timeout=override(unstruct_hook=lambda v: None if v is None else format_duration(v)),
    )),
)


# --- errors: cattrs exception groups -> field paths ---------------------------------------------

def _field_names(cls: type) -> list[str]:
    return [a.name for a in attrs.fields(cls)]


def _problems(exc: BaseException, path: str = "") -> list[Problem]:
    """Flatten a cattrs exception tree into problems with dotted paths."""
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        found: list[Problem] = []
        for sub in exc.exceptions:
            found += _problems(sub, _join(path, _note_step(sub)))
        return found
    if isinstance(exc, ForbiddenExtraKeysError):
        known = _field_names(exc.cl)
        return [
            Problem(_join(path, key), f"unknown key{_suggest(key, known)} Allowed here: {', '.join(known)}")
            for key in sorted(exc.extra_fields)
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


def _join(path: str, step: str) -> str:
    if not step:
        return path
    if not path:
        return step
    return f"{path}{step}" if step.startswith("[") else f"{path}.{step}"


def _suggest(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else "."


def structure(data: Any, cls: type[T], *, source: str | None = None, path: str = "") -> T:
    """Structure plain data into an attrs class under omnidist's strict rules.

    Raises:
        ValidationError: listing every problem with its field path under ``path``.
    """
    if attrs.has(cls) and not isinstance(data, Mapping):
        raise ValidationError(f"expected a mapping, got {_kind(data)}", source=source, path=path)
    try:
        return _converter.structure(data, cls)
    except (ClassValidationError, IterableValidationError, ValidationError, ValueError, TypeError, KeyError) as exc:
        raise ValidationError([p.prefixed(path) for p in _problems(exc)], source=source) from None


def unstructure(value: Any) -> Any:
    """Plain data for an attrs value (the inverse of :func:`structure`)."""
    return _converter.unstructure(value)


# --- the job ----------------------------------------------------------------------------------

def job_from_dict(data: Any, *, source: str | None = None) -> DistributedJob:
    """Build a :class:`DistributedJob` from parsed job-file data."""
    if isinstance(data, Mapping) and "primary" not in data:
        raise ValidationError(
            "required: every job has one primary replica; write `primary: {}` for a CPU-only one",
            source=source, path="primary",
        )
    if isinstance(data, Mapping) and data.get("primary") is None and "primary" in data:
        data = {**data, "primary": {}}
    job = structure(data, DistributedJob, source=source)
    return attrs.evolve(job, source=source) if source else job


def job_to_dict(job: DistributedJob) -> dict[str, Any]:
    """Plain data for a job, omitting what is left at its default (replicas always shown)."""
    data = _converter.unstructure(job)
    data["primary"].pop("replicas", None)  # always 1; saying so is noise
    return data


def parse_yaml(text: str, *, source: str | None = None, documents: bool = False) -> Any:
    """Parse YAML (JSON is a subset) with the safe loader; syntax errors name line and column.

    With ``documents``, a stream of several documents (``---`` between them, as in Kubernetes
    manifests) is read as the list of its non-empty documents; one document is read as itself.
    """
    try:
        if not documents:
            return yaml.safe_load(text)
        found = [d for d in yaml.safe_load_all(text) if d is not None]
        return found[0] if len(found) == 1 else (found or None)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ValidationError(f"{where}not valid YAML/JSON ({problem})", source=source) from None


def job_from_yaml(text: str, *, source: str | None = None) -> DistributedJob:
    """Parse a job file's text."""
    data = parse_yaml(text, source=source)
    if not isinstance(data, Mapping):
        raise ValidationError(f"a job file holds a mapping of keys, got {_kind(data)}", source=source)
    return job_from_dict(data, source=source)


def job_to_yaml(job: DistributedJob) -> str:
    """A job as YAML, keys in the order of SPEC §1."""
    return dump_yaml(job_to_dict(job))


def load(path: str | os.PathLike[str]) -> DistributedJob:
    """Read a job file (YAML or JSON)."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError("no such file", source=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read the file ({exc})", source=source) from None
    return job_from_yaml(text, source=source)


def read_document(path: str | os.PathLike[str]) -> Any:
    """Read any YAML/JSON document (native specs, configs) with the same error rules."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"cannot read the file ({exc.strerror or exc})", source=source) from None
    return parse_yaml(text, source=source)


class _Dumper(yaml.SafeDumper):
    """Safe dumper that writes multi-line strings as blocks and never emits aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_presenter)


def dump_yaml(data: Any) -> str:
    """Render plain data as YAML, keeping key order."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def dump_json(data: Any) -> str:
    """Render plain data as indented JSON."""
    return json.dumps(data, indent=2, ensure_ascii=False)
