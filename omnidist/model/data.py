"""The job's data and entrypoint parts (SPEC §7) as values: inputs, outputs, references.

``inputs`` are data (a URI or a local path, mounted or downloaded) or literals (a number or
a string substituted as text); ``outputs`` go to the backend's own output place (``default``)
or to a URI. Command lines and environment values refer to them as ``${{inputs.NAME}}`` and
``${{outputs.NAME}}`` (the syntax one of the clouds' job files uses), which each backend
replaces with what its containers see (see :mod:`omnidist.compiler.code_data`).

This module holds the values and the pure text rules; :mod:`omnidist.model.job` uses them for
the fields, :mod:`omnidist.compiler.code_data` for what backends do with them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping
from typing import Any, Optional, Union

import attrs

from omnidist.errors import Problem, ValidationError
from omnidist.model import serde
from omnidist.model.spelling import close_matches
from omnidist.patterns import lazy_pattern

NO_ACCELERATOR = "none"
"""A role's ``accelerator: none``: no accelerator, instead of inheriting the primary's."""

REFERENCE = lazy_pattern(r"\$\{\{\s*(inputs|outputs)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""``${{inputs.NAME}}`` / ``${{outputs.NAME}}`` in command, args and env."""

DATA_NAME = lazy_pattern(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
"""Input and output names: identifiers (the strictest rule a backend has for them)."""

MODULE_NAME = lazy_pattern(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
"""A dotted Python module name (``trainer.task``)."""

URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
"""A URI (``scheme://…``): a string input that is one is data, not a literal; its scheme says
where (``file``: this machine; any other: a remote store or server)."""

LOCAL_PREFIXES = ("./", "../", "/", "~/", ".\\", "..\\")
"""A string input starting with one of these is a local path (data), not a literal."""

ASSET = lazy_pattern(r"^([A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9]):(?!//)"
                      r"(?:[A-Za-z0-9_][\w.-]*(?::\d+|@[A-Za-z][\w.-]*)|/\S+)$")
"""A reference to data registered with a service (``STORE:NAME:VERSION``, ``STORE:NAME@LABEL``,
or ``STORE:/…`` a resource id): data, not a literal (``cuda:0`` stays one); its ``STORE`` is its
scheme. Which service resolves it, and how to fetch it elsewhere, its vendor kit says
(:class:`omnidist.vendors.AssetReference`)."""


class InputMode(str, enum.Enum):
    """How a data input reaches the container: mounted read-only (default) or copied first."""

    RO_MOUNT = "ro_mount"
    DOWNLOAD = "download"


def scheme(uri: str) -> str:
    """The kind of a data location: a URI's scheme or a registered-data reference's store (lower
    case), or ``local`` for a path."""
    found = URI.match(uri) or ASSET.match(uri)
    return found.group(1).lower() if found else "local"


def is_data(text: str) -> bool:
    """True when a string input names data (a URI, a registered-data reference or a local path)
    rather than a literal."""
    return bool(URI.match(text) or ASSET.match(text)) or text.startswith(LOCAL_PREFIXES) or text in (".", "..")


def _literal(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValidationError(f"a literal input is a number or a string, got {value!r}", path=attribute.name)
    if isinstance(value, str) and is_data(value):
        raise ValidationError(f"{value!r} names data; write it as {{uri: {value}}}", path=attribute.name)


@attrs.frozen(kw_only=True)
class JobInput:
    """One input: data at ``uri`` (with a ``mode``), or a literal ``value``.

    Example:
        >>> JobInput.parse("scheme://bucket/train").uri
        'scheme://bucket/train'
        >>> JobInput.parse(10).value
        10
    """

    uri: Optional[str] = None
    mode: InputMode = attrs.field(default=InputMode.RO_MOUNT, converter=lambda v: _mode(v))
    value: Union[str, int, float, None] = attrs.field(default=None, validator=_literal)

    def __attrs_post_init__(self) -> None:
        if (self.uri is None) == (self.value is None):
            raise ValidationError("give either a uri (data) or a literal value", path="uri")
        if self.uri is not None and not (isinstance(self.uri, str) and self.uri.strip()):
            raise ValidationError(f"expected a URI or a path, got {self.uri!r}", path="uri")

    @property
    def literal(self) -> bool:
        """True for a number or string substituted as text."""
        return self.value is not None

    @property
    def scheme(self) -> Optional[str]:
        """The data location's kind (a URI's scheme such as ``https``, or ``local``); None for a literal."""
        return None if self.uri is None else scheme(self.uri)

    @property
    def text(self) -> str:
        """A literal as it is substituted into command lines."""
        return str(self.value)

    @classmethod
    def parse(cls, raw: Any) -> JobInput:
        """Read a job file's spelling: a URI or path string, ``{uri, mode}``, or a literal."""
        if isinstance(raw, JobInput):
            return raw
        if isinstance(raw, Mapping):
            unknown = sorted(set(map(str, raw)) - {"uri", "mode"})
            if unknown:
                close = close_matches(unknown[0], ["uri", "mode"], n=1)
                hint = f"; did you mean {close[0]!r}?" if close else "."
                raise ValidationError(f"unknown key{hint} Allowed here: uri, mode", path=unknown[0])
            if not isinstance(raw.get("uri"), str):
                raise ValidationError("required: the data's URI or path, e.g. uri: scheme://bucket/train or "
                                      "uri: ./data/train", path="uri")
            return cls(uri=raw["uri"], mode=raw.get("mode", InputMode.RO_MOUNT))
        if isinstance(raw, str):
            return cls(uri=raw) if is_data(raw) else cls(value=raw)
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return cls(value=raw)
        raise ValidationError(
            f"expected a URI or path, {{uri: …, mode: ro_mount|download}}, or a literal number or string, "
            f"got {raw!r}")

    def to_data(self) -> Any:
        """The shortest job-file spelling (the inverse of :meth:`parse`)."""
        if self.literal:
            return self.value
        if self.mode is InputMode.RO_MOUNT:
            return self.uri
        return {"uri": self.uri, "mode": self.mode.value}


def _mode(value: Any) -> InputMode:
    if isinstance(value, InputMode):
        return value
    if isinstance(value, str) and value.lower() in {m.value for m in InputMode}:
        return InputMode(value.lower())
    raise ValidationError(f"{value!r} is not one of {', '.join(m.value for m in InputMode)}", path="mode")


@attrs.frozen(kw_only=True)
class JobOutput:
    """One output: the backend's own output place (``uri`` None, written ``default``) or a URI."""

    uri: Optional[str] = None

    @property
    def default(self) -> bool:
        """True when the backend picks the place."""
        return self.uri is None

    @property
    def scheme(self) -> Optional[str]:
        """The location's kind; None for ``default``."""
        return None if self.uri is None else scheme(self.uri)

    @classmethod
    def parse(cls, raw: Any) -> JobOutput:
        """``default``, ``{uri: …}``, or a URI / path string."""
        if isinstance(raw, JobOutput):
            return raw
        if isinstance(raw, str) and raw.strip().lower() == "default":
            return cls()
        if isinstance(raw, str) and is_data(raw):
            return cls(uri=raw)
        if isinstance(raw, Mapping):
            unknown = sorted(set(map(str, raw)) - {"uri"})
            if unknown:
                raise ValidationError("unknown key. Allowed here: uri", path=unknown[0])
            if isinstance(raw.get("uri"), str) and raw["uri"].strip():
                return cls(uri=raw["uri"])
            raise ValidationError("required: where the output goes, e.g. uri: scheme://bucket/out", path="uri")
        raise ValidationError(f"expected default or {{uri: …}}, got {raw!r}")

    def to_data(self) -> Any:
        """``default`` or ``{uri: …}``."""
        return "default" if self.uri is None else {"uri": self.uri}


def _named(value: Optional[Mapping[str, Any]], parse: Any, field: str) -> dict[str, Any]:
    if value is not None and not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping of names, got {value!r}", path=field)
    problems: list[Problem] = []
    parsed: dict[str, Any] = {}
    for name, raw in (value or {}).items():
        path = f"{field}.{name}" if field else str(name)
        if not isinstance(name, str) or not DATA_NAME.match(name):
            problems.append(Problem(path, "names are letters, digits and '_', not starting with a digit"))
            continue
        try:
            parsed[name] = parse(raw)
        except ValidationError as exc:
            problems += [p.prefixed(path) for p in exc.problems]
    if problems:
        raise ValidationError(problems)
    return parsed


def to_inputs(value: Optional[Mapping[str, Any]], field: str = "inputs") -> dict[str, JobInput]:
    """The ``inputs`` converter: every value through :meth:`JobInput.parse` (errors under ``field``)."""
    return _named(value, JobInput.parse, field)


def to_outputs(value: Optional[Mapping[str, Any]], field: str = "outputs") -> dict[str, JobOutput]:
    """The ``outputs`` converter: every value through :meth:`JobOutput.parse` (errors under ``field``)."""
    return _named(value, JobOutput.parse, field)


def check_module(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    """``module`` is a dotted Python module name."""
    if value is not None and (not isinstance(value, str) or not MODULE_NAME.match(value)):
        raise ValidationError(f"{value!r} is not a Python module name such as trainer.task", path=attribute.name)


def check_framework_version(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """``framework_version`` is text: YAML would read 2.10 as the number 2.1."""
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise ValidationError(f'write the version as a string, e.g. framework_version: "2.12" (got {value!r})',
                              path=attribute.name)


# --- references -------------------------------------------------------------------------------

def structure_version(value: Any) -> Optional[str]:
    """``framework_version`` as a job file gives it. Not the lenient str hook: YAML reads 2.10 as the
    number 2.1, so a number is refused."""
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f'write the version as a string, e.g. "2.12" (YAML reads an unquoted {value!r} as a number)')


def references(text: str) -> Iterator[tuple[str, str]]:
    """``(inputs|outputs, NAME)`` for each reference in ``text``."""
    for match in REFERENCE.finditer(text):
        yield match.group(1), match.group(2)


def program_texts(job: Any) -> Iterator[tuple[str, str]]:
    """``(field path, text)`` of every command, args and env value of the job and its roles."""
    owners = [("", job)] + [(f"{name}.", role) for name, role in _roles(job)]
    for prefix, owner in owners:
        for field in ("command", "args"):
            for i, item in enumerate(getattr(owner, field) or ()):
                yield f"{prefix}{field}[{i}]", item
        for key, item in (owner.env or {}).items():
            yield f"{prefix}env.{key}", item


def _roles(job: Any) -> Iterator[tuple[str, Any]]:
    for name in ("primary", "workers", "parameter_servers", "evaluators", "reduction_servers"):
        role = getattr(job, name, None)
        if role is not None:
            yield name, role


def undeclared(job: Any, also_declared: Optional[Mapping[str, Any]] = None) -> list[Problem]:
    """A problem for each reference to an input or output the job does not declare.

    Args:
        also_declared: ``{"inputs": names, "outputs": names}`` declared elsewhere (a backend's own
            settings, ``backends.<name>.inputs``, which jobs imported from its files carry).
    """
    problems: list[Problem] = []
    extra = also_declared or {}
    declared = {kind: [*getattr(job, kind), *extra.get(kind, ())] for kind in ("inputs", "outputs")}
    for path, text in program_texts(job):
        if "${{" not in text:  # most texts hold no reference; the regex is the slow part
            continue
        for kind, name in references(text):
            if name not in declared[kind]:
                known = declared[kind]
                close = close_matches(name, known, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                listed = f" Declared: {', '.join(known)}." if known else ""
                problems.append(Problem(path, f"refers to ${{{{{kind}.{name}}}}}, but {kind} declares no "
                                              f"{name!r}.{hint}{listed} Declare it under {kind}."))
    return problems


def check_job(job: Any) -> None:
    """Job-wide rules of SPEC §7 that need no backend: ``module`` without ``command``, no
    ``accelerator: none`` on the primary. (References are checked when compiling, where a
    backend's own declarations count too: :func:`undeclared`.)

    Raises:
        ValidationError: naming the field path.
    """
    problems: list[Problem] = [Problem(path, "holds a NUL character, which no program, variable or file name can "
                                             "hold") for path in _nul_strings(job)]
    if job.module is not None:
        if job.command:
            problems.append(Problem("module", "module runs `python -m MODULE ARGS`; remove command (or module)"))
        for name, role in _roles(job):
            if role.command:
                problems.append(Problem(f"{name}.command", "the job runs module; a role cannot set its own command"))
    if job.primary.accelerator == NO_ACCELERATOR:
        problems.append(Problem("primary.accelerator", "the primary inherits nothing; leave accelerator out for a "
                                                       "CPU-only primary"))
    if problems:
        raise ValidationError(problems)


def _nul_strings(job: Any) -> list[str]:
    """The paths of the job's text that holds ``\\0`` (an argv, an env value or a path cannot:
    ``execve`` and ``open`` refuse it), found without recursion."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", job)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if "\0" in value:
                found.append(path)
        elif isinstance(value, Mapping):
            stack += [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
            stack += [(path or "(key)", k) for k in value]
        elif isinstance(value, (list, tuple)):
            stack += [(f"{path}[{i}]", v) for i, v in enumerate(value)]
        elif attrs.has(type(value)):
            stack += [(f"{path}.{f.name}" if path else f.name, getattr(value, f.name))
                      for f in attrs.fields(type(value)) if f.name != "source"]
    return sorted(found)


PACKAGE_SUFFIXES = (".tar.gz", ".tgz", ".whl", ".zip")
"""A code location ending in one of these is a built Python package, not a folder."""


def is_package(uri: str) -> bool:
    """True when ``uri`` names a built Python package (a source distribution or a wheel)."""
    return uri.endswith(PACKAGE_SUFFIXES)


serde.register_exact(dict[str, JobInput], lambda v, _: to_inputs(v, field=""))
serde.register_exact(dict[str, JobOutput], lambda v, _: to_outputs(v, field=""))
serde.register_unstructure(JobInput, JobInput.to_data)
serde.register_unstructure(JobOutput, JobOutput.to_data)
