"""The portable job (SPEC §1) as frozen, keyword-only attrs values: omnidist's IR.

The IR keeps what the user wrote: a role's unset fields stay ``None`` so that ``to_dict``
round-trips losslessly. :mod:`omnidist.lowering` computes the effective values (inheritance
from the primary, env merging, ``auto`` sizes) that backends compile from.
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Mapping
from typing import Any, Literal, Optional, Union

import attrs

from omnidist import accelerators, jobdata
from omnidist.errors import ValidationError
from omnidist.jobdata import NO_ACCELERATOR, JobInput, JobOutput

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
AUTO: Literal["auto"] = "auto"


class Framework(str, enum.Enum):
    """What the training code is written with; decides the distribution on each backend."""

    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"
    HOROVOD = "horovod"
    DEEPSPEED = "deepspeed"
    CUSTOM = "custom"


class Interconnect(str, enum.Enum):
    """``infiniband`` demands an RDMA/InfiniBand-capable machine; ``any`` takes what fits."""

    ANY = "any"
    INFINIBAND = "infiniband"


class RoleName(str, enum.Enum):
    """The five roles of a job, in the order the clouds number them."""

    PRIMARY = "primary"
    WORKERS = "workers"
    PARAMETER_SERVERS = "parameter_servers"
    EVALUATORS = "evaluators"
    REDUCTION_SERVERS = "reduction_servers"

    @property
    def singular(self) -> str:
        """The runtime's name for one replica of the role (SPEC §5 ``role``)."""
        return _SINGULAR[self]


_SINGULAR = {
    RoleName.PRIMARY: "primary",
    RoleName.WORKERS: "worker",
    RoleName.PARAMETER_SERVERS: "parameter_server",
    RoleName.EVALUATORS: "evaluator",
    RoleName.REDUCTION_SERVERS: "reduction_server",
}


def choice(enum_cls: type[enum.Enum], field: str):
    """An attrs converter to ``enum_cls`` (case-insensitive) whose error names ``field``,
    the allowed values and the closest one."""
    import difflib

    def convert(value: Any) -> enum.Enum:
        if isinstance(value, enum_cls):
            return value
        allowed = [m.value for m in enum_cls]
        if isinstance(value, str) and value.lower() in allowed:
            return enum_cls(value.lower())
        close = difflib.get_close_matches(str(value).lower(), allowed, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValidationError(f"{value!r} is not one of {', '.join(allowed)}{hint}", path=field)

    return convert


def _fail(attribute: attrs.Attribute, message: str) -> None:
    raise ValidationError(message, path=attribute.name)


def _non_negative(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and value < 0:
        _fail(attribute, f"must be >= 0, got {value}")


def _positive(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and value <= 0:
        _fail(attribute, f"must be > 0, got {value}")


def _to_argv(value: Union[str, list, tuple, None]) -> Optional[tuple[str, ...]]:
    """A command or args: a list is kept, a string is split like a shell would (shlex)."""
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(shlex.split(value))
    return tuple(value)


def _to_str_map(value: Optional[Mapping[str, str]]) -> dict[str, str]:
    return dict(value or {})


def _masked_repr(env: Mapping[str, str]) -> str:
    from omnidist.display import mask_env

    return repr(mask_env(env))


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_names(instance: Any, attribute: attrs.Attribute, value: Mapping[str, str]) -> None:
    for key in value:
        if not _ENV_NAME.match(key):
            raise ValidationError(
                f"{key!r} is not a valid environment variable name (letters, digits, _; not starting with a digit)",
                path=f"{attribute.name}.{key}",
            )


def _canonical_accelerator(value: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"must be an accelerator name such as 'V100', got {value!r}", path="type")
    try:
        return accelerators.canonical_name(value)
    except ValueError as exc:
        raise ValidationError(str(exc), path="type") from None


@attrs.frozen(kw_only=True)
class Accelerator:
    """``count`` devices of one portable accelerator ``type`` per replica.

    Accepts the ``"V100:8"`` shorthand through :meth:`parse`; ``type`` is normalized to the
    canonical portable name (case-insensitive, aliases allowed).
    """

    type: str = attrs.field(converter=lambda v: _canonical_accelerator(v))
    count: int = attrs.field(default=1, validator=_positive)

    @classmethod
    def parse(cls, text: str) -> Accelerator:
        """Parse ``"TYPE:COUNT"`` (``"V100:8"``) or a bare ``"TYPE"`` (one device)."""
        kind, sep, count = text.partition(":")
        if not sep:
            return cls(type=kind)
        try:
            number = int(count)
        except ValueError:
            raise ValidationError(
                f"count {count!r} in {text!r} is not a whole number; write TYPE:COUNT, e.g. V100:8"
            ) from None
        return cls(type=kind, count=number)

    def __str__(self) -> str:
        return f"{self.type}:{self.count}"


Replicas = Union[int, Literal["auto"]]


def _to_accelerator(value: Union[Accelerator, str, Mapping[str, Any], None]) -> Union[Accelerator, str, None]:
    """The Python API takes the job file's spellings too: ``"V100:8"``, ``{type, count}``, or
    ``none`` (no accelerator, instead of inheriting the primary's)."""
    if value is None or isinstance(value, Accelerator):
        return value
    if isinstance(value, str) and value.strip().lower() == NO_ACCELERATOR:
        return NO_ACCELERATOR
    try:
        if isinstance(value, str):
            return Accelerator.parse(value)
        if isinstance(value, Mapping):
            return Accelerator(**value)
    except ValidationError as exc:
        raise exc.prefixed("accelerator") from None
    except TypeError as exc:
        raise ValidationError(f"{exc}; write {{type: V100, count: 8}}", path="accelerator") from None
    raise ValidationError(f"expected 'TYPE:COUNT' (e.g. V100:8), got {value!r}", path="accelerator")


@attrs.frozen(kw_only=True)
class Role:
    """One role's replicas and what each replica runs on.

    Unset fields (``None``) inherit: workers and evaluators from the primary, every role's
    image/command/args from the job. ``env`` is merged over the job's ``env``.
    """

    replicas: Replicas = attrs.field(default=1)
    accelerator: Optional[Union[Accelerator, Literal["none"]]] = attrs.field(default=None, converter=_to_accelerator)
    """``none`` means no accelerator even where the role would inherit the primary's."""
    cpus: Optional[float] = attrs.field(default=None, validator=_positive)
    memory_gb: Optional[float] = attrs.field(default=None, validator=_positive)
    disk_gb: Optional[int] = attrs.field(default=None, validator=_positive)
    image: Optional[str] = None
    command: Optional[tuple[str, ...]] = attrs.field(default=None, converter=_to_argv)
    args: Optional[tuple[str, ...]] = attrs.field(default=None, converter=_to_argv)
    env: dict[str, str] = attrs.field(factory=dict, converter=_to_str_map, validator=_env_names, repr=_masked_repr)

    @replicas.validator
    def _replicas(self, attribute: attrs.Attribute, value: Replicas) -> None:
        if value == AUTO:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(attribute, f"must be a whole number or 'auto', got {value!r}")
        _non_negative(self, attribute, value)


def _role_auto_only_for_reducers(job: DistributedJob) -> None:
    for name in RoleName:
        role = getattr(job, name.value)
        if role is not None and role.replicas == AUTO and name is not RoleName.REDUCTION_SERVERS:
            raise ValidationError(
                "'auto' is only for reduction_servers; give a whole number",
                path=f"{name.value}.replicas",
            )
    if job.primary.replicas != 1:
        raise ValidationError(
            f"the primary is always exactly 1 replica, got {job.primary.replicas}; "
            "put the other replicas under workers",
            path="primary.replicas",
        )


@attrs.frozen(kw_only=True, repr=False)
class DistributedJob:
    """One distributed training job, portable across backends (SPEC §1).

    Example:
        >>> job = DistributedJob(name="demo", framework="pytorch", image="trainer:1",
        ...                      command="python train.py", workers=Role(replicas=2))
        >>> job.workers.replicas
        2
    """

    name: str = attrs.field()
    framework: Framework = attrs.field(converter=choice(Framework, "framework"))
    image: Optional[str] = None
    command: tuple[str, ...] = attrs.field(default=(), converter=lambda v: _to_argv(v) or ())
    args: tuple[str, ...] = attrs.field(default=(), converter=lambda v: _to_argv(v) or ())
    env: dict[str, str] = attrs.field(factory=dict, converter=_to_str_map, validator=_env_names)
    # SPEC §7: description, code, entrypoint and data (omnidist.jobdata holds the rules).
    description: Optional[str] = None
    code: Optional[str] = None
    """A folder shipped with the job: a local path (relative to the job file) or a gs:// / azureml: URI."""
    module: Optional[str] = attrs.field(default=None, validator=jobdata.check_module)
    """Instead of ``command``: ``python -m MODULE ARGS``, run from ``code``."""
    framework_version: Optional[str] = attrs.field(default=None, validator=jobdata.check_framework_version)
    """With no ``image``: the cloud's prebuilt training container for framework + version."""
    inputs: dict[str, JobInput] = attrs.field(factory=dict, converter=jobdata.to_inputs)
    outputs: dict[str, JobOutput] = attrs.field(factory=dict, converter=jobdata.to_outputs)
    primary: Role = attrs.field(factory=Role)
    workers: Optional[Role] = None
    parameter_servers: Optional[Role] = None
    evaluators: Optional[Role] = None
    reduction_servers: Optional[Role] = None
    processes_per_node: Replicas = attrs.field(default=AUTO)
    interconnect: Interconnect = attrs.field(default=Interconnect.ANY, converter=choice(Interconnect, "interconnect"))
    spot: bool = False
    timeout: Optional[int] = attrs.field(default=None, validator=_positive)
    """Seconds; written in job files with an s/m/h/d suffix."""
    labels: dict[str, str] = attrs.field(factory=dict, converter=_to_str_map)
    backends: dict[str, dict[str, Any]] = attrs.field(factory=dict, converter=dict)
    """Backend-specific settings by backend name; each backend validates its own block."""
    source: Optional[str] = attrs.field(default=None, eq=False, repr=False)
    """The file the job was read from, for error messages; not part of the job format."""

    @name.validator
    def _name(self, attribute: attrs.Attribute, value: str) -> None:
        if not isinstance(value, str) or not NAME_PATTERN.match(value):
            _fail(
                attribute,
                f"{value!r} is not a valid job name: start with a lowercase letter, then up to 62 "
                "lowercase letters, digits or '-' (e.g. 'cassava-resnet')",
            )

    @processes_per_node.validator
    def _ppn(self, attribute: attrs.Attribute, value: Replicas) -> None:
        if value != AUTO and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            _fail(attribute, f"must be a whole number >= 1 or 'auto', got {value!r}")

    def __attrs_post_init__(self) -> None:
        _role_auto_only_for_reducers(self)
        jobdata.check_job(self)

    def __repr__(self) -> str:
        from omnidist import display

        return display.short_job_repr(self)

    def _repr_html_(self) -> str:
        from omnidist import display

        return display.job_html(self)

    def role(self, name: RoleName | str) -> Optional[Role]:
        """The role as written (``None`` when absent)."""
        return getattr(self, RoleName(name).value)

    # Serialization lives in serde; these are the spellings SPEC §4 promises.
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> DistributedJob:
        """Build a job from plain data (as parsed from YAML/JSON); errors name ``source``."""
        from omnidist import serde

        return serde.job_from_dict(data, source=source)

    @classmethod
    def from_yaml(cls, text: str, *, source: str | None = None) -> DistributedJob:
        """Parse YAML (or JSON, a subset of YAML) text into a job."""
        from omnidist import serde

        return serde.job_from_yaml(text, source=source)

    def to_dict(self) -> dict[str, Any]:
        """Plain data as a job file would hold it; ``from_dict(to_dict())`` equals ``self``."""
        from omnidist import serde

        return serde.job_to_dict(self)

    def to_yaml(self) -> str:
        """The job as a YAML job file."""
        from omnidist import serde

        return serde.job_to_yaml(self)
