"""The portable job (SPEC §1) as frozen, keyword-only attrs values: omnidist's IR.

The IR keeps what the user wrote: a role's unset fields stay ``None`` so that ``to_dict``
round-trips losslessly. :mod:`omnidist.lowering` computes the effective values (inheritance
from the primary, env merging, ``auto`` sizes) that backends compile from.
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Callable, Mapping
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


# --- tuning: many trials of one job (SPEC §8) ---------------------------------------------------


class ParameterType(str, enum.Enum):
    """What a tuned parameter ranges over: a real or whole-number range, or a list of values."""

    DOUBLE = "double"
    INTEGER = "integer"
    DISCRETE = "discrete"
    CATEGORICAL = "categorical"


class Scale(str, enum.Enum):
    """How a range is searched: evenly (``linear``) or evenly in its logarithm (``log``)."""

    LINEAR = "linear"
    LOG = "log"


class Goal(str, enum.Enum):
    """Whether the tuned metric is better higher or lower."""

    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


class Algorithm(str, enum.Enum):
    """How trials pick their values; ``bayesian`` is each cloud's own default optimizer."""

    BAYESIAN = "bayesian"
    RANDOM = "random"
    GRID = "grid"


PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
"""A tuned parameter's name: it becomes the ``--NAME=VALUE`` flag every trial gets."""

RANGE_TYPES = frozenset({ParameterType.DOUBLE, ParameterType.INTEGER})
"""Parameter types given by ``min``/``max`` (the others by ``values``)."""

Number = Union[int, float]


def _number(value: Any, path: str, whole: bool = False) -> Number:
    """A number as written; a numeric string counts, because YAML 1.1 (PyYAML) reads ``1e-5``
    without a dot as a string, and that is how people write learning rates."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or isinstance(number, bool) or not isinstance(number, (int, float)):
        raise ValidationError(f"expected a number, got {value!r}", path=path)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValidationError(f"expected a finite number, got {value!r}", path=path)
    if whole:
        if isinstance(number, float) and not number.is_integer():
            raise ValidationError(f"an integer parameter takes whole numbers, got {value!r}", path=path)
        return int(number)
    return number


def _value_list(value: Any) -> Optional[tuple[Any, ...]]:
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise ValidationError(f"expected a list of values, got {value!r}", path="values")
    return tuple(value)


@attrs.frozen(kw_only=True)
class Parameter:
    """One tuned parameter: a ``double``/``integer`` range (``min``, ``max``, ``scale``) or a
    ``discrete`` (numbers) / ``categorical`` (text) list of ``values``.

    Values are normalized: integer bounds become ``int``, discrete values are sorted, categorical
    values become text (a trial passes them to the program as ``--NAME=VALUE`` anyway).
    """

    type: ParameterType = attrs.field(converter=choice(ParameterType, "type"))
    min: Optional[Number] = None
    max: Optional[Number] = None
    values: Optional[tuple[Union[int, float, str], ...]] = attrs.field(default=None, converter=_value_list)
    scale: Scale = attrs.field(default=Scale.LINEAR, converter=choice(Scale, "scale"))

    def __attrs_post_init__(self) -> None:
        # Normalizing a frozen class in place, as attrs documents for __attrs_post_init__.
        if self.type in RANGE_TYPES:
            low, high = self._range()
            object.__setattr__(self, "min", low)
            object.__setattr__(self, "max", high)
        else:
            object.__setattr__(self, "values", self._list())

    def _range(self) -> tuple[Number, Number]:
        kind = self.type.value
        if self.values is not None:
            raise ValidationError(f"a {kind} parameter is a range: give min and max, not values "
                                  "(or use type: discrete / categorical)", path="values")
        for bound in ("min", "max"):
            if getattr(self, bound) is None:
                raise ValidationError(f"required for a {kind} parameter", path=bound)
        whole = self.type is ParameterType.INTEGER
        low, high = _number(self.min, "min", whole), _number(self.max, "max", whole)
        if low > high:  # min == max pins the value, as the clouds allow
            raise ValidationError(f"must be <= max ({high}), got {low}", path="min")
        if self.scale is Scale.LOG and low <= 0:
            raise ValidationError(f"scale: log needs min > 0 (the logarithm of {low} does not exist); "
                                  "raise min or use scale: linear", path="min")
        return low, high

    def _list(self) -> tuple[Union[int, float, str], ...]:
        kind = self.type.value
        for bound in ("min", "max"):
            if getattr(self, bound) is not None:
                raise ValidationError(f"a {kind} parameter lists its values; min and max are for double and "
                                      "integer ranges", path=bound)
        if self.scale is not Scale.LINEAR:
            raise ValidationError(f"scale is for double and integer ranges, not {kind}", path="scale")
        if not self.values:
            raise ValidationError(f"a {kind} parameter needs at least one value", path="values")
        if self.type is ParameterType.DISCRETE:
            values: tuple = tuple(sorted(_number(v, f"values[{i}]") for i, v in enumerate(self.values)))
        else:
            for i, v in enumerate(self.values):
                if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                    raise ValidationError(f"expected text (or a number), got {v!r}", path=f"values[{i}]")
            values = tuple(str(v) for v in self.values)
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise ValidationError(f"{', '.join(repeated)} listed more than once", path="values")
        return values

    def __str__(self) -> str:
        if self.type in RANGE_TYPES:
            scale = ", log scale" if self.scale is Scale.LOG else ""
            return f"{self.type.value} in [{self.min:g}, {self.max:g}]{scale}"
        shown = ", ".join(v if isinstance(v, str) else f"{v:g}" for v in self.values)
        return f"{self.type.value} of {shown}"


@attrs.frozen(kw_only=True)
class Metric:
    """The metric trials report (``omnidist.runtime.report``) and whether higher or lower wins."""

    name: str = attrs.field()
    goal: Goal = attrs.field(converter=choice(Goal, "goal"))

    @name.validator
    def _name(self, attribute: attrs.Attribute, value: str) -> None:
        if not isinstance(value, str) or not value.strip():
            _fail(attribute, f"expected the metric's name (e.g. accuracy), got {value!r}")


def _to_metric(value: Any) -> Metric:
    if isinstance(value, Metric):
        return value
    if isinstance(value, Mapping):
        try:
            return Metric(**value)
        except ValidationError as exc:
            raise exc.prefixed("metric") from None
        except TypeError as exc:
            raise ValidationError(f"{exc}; write {{name: accuracy, goal: maximize}}", path="metric") from None
    raise ValidationError(f"expected {{name: …, goal: maximize|minimize}}, got {value!r}", path="metric")


def _to_parameters(value: Any) -> dict[str, Parameter]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping of parameter names, got {value!r}", path="parameters")
    parameters = {}
    for name, item in value.items():
        path = f"parameters.{name}"
        if not isinstance(name, str) or not PARAMETER_NAME.match(name):
            raise ValidationError(f"{name!r} is not a parameter name: a letter or '_', then letters, digits, "
                                  "'_' or '-' (it becomes the --NAME=VALUE flag of each trial)", path=path)
        try:
            parameters[name] = item if isinstance(item, Parameter) else Parameter(**item)
        except ValidationError as exc:
            raise exc.prefixed(path) from None
        except TypeError as exc:
            raise ValidationError(f"{exc}; write {{type: double, min: 0.001, max: 0.1}}", path=path) from None
    if not parameters:
        raise ValidationError("list at least one parameter to tune", path="parameters")
    return parameters


def _count(minimum: int) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(attribute, f"expected a whole number, got {value!r}")
        if value < minimum:
            _fail(attribute, f"must be >= {minimum}, got {value}")

    return check


@attrs.frozen(kw_only=True)
class Tuning:
    """Hyperparameter search: run the job as up to ``max_trials`` trials, ``parallel_trials`` at a
    time, each with values of ``parameters`` passed as ``--NAME=VALUE`` after ``args``, and keep
    the trial whose reported ``metric`` is best (SPEC §8).

    Attributes:
        metric: what trials report and the goal.
        parameters: name -> :class:`Parameter`.
        algorithm: ``bayesian`` (each cloud's default optimizer), ``random`` or ``grid``.
        max_trials: trials in all.
        parallel_trials: trials at a time.
        max_failed_trials: failed trials that fail the whole search; 0 leaves it to the backend.
        early_stopping: stop unpromising trials early where the backend can (median-style).
    """

    metric: Metric = attrs.field(converter=_to_metric)
    parameters: dict[str, Parameter] = attrs.field(converter=_to_parameters)
    algorithm: Algorithm = attrs.field(default=Algorithm.BAYESIAN, converter=choice(Algorithm, "algorithm"))
    max_trials: int = attrs.field(validator=_count(1))
    parallel_trials: int = attrs.field(default=1, validator=_count(1))
    max_failed_trials: int = attrs.field(default=0, validator=_count(0))
    early_stopping: bool = attrs.field(default=False)

    def __attrs_post_init__(self) -> None:
        if self.parallel_trials > self.max_trials:
            raise ValidationError(f"{self.parallel_trials} trials at a time, but only {self.max_trials} in all; "
                                  "lower parallel_trials or raise max_trials", path="parallel_trials")
        if not isinstance(self.early_stopping, bool):
            raise ValidationError(f"expected true or false, got {self.early_stopping!r}", path="early_stopping")

    def __str__(self) -> str:
        names = ", ".join(self.parameters)
        return (f"{self.metric.goal.value} {self.metric.name} over {names} ({self.algorithm.value}, "
                f"{self.max_trials} trials, {self.parallel_trials} at a time)")


def _to_tuning(value: Any) -> Optional[Tuning]:
    """The Python API takes the job file's spelling too: a mapping."""
    if value is None or isinstance(value, Tuning):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping (metric, parameters, max_trials…), got {value!r}", path="tuning")
    try:
        return Tuning(**value)
    except ValidationError as exc:
        raise exc.prefixed("tuning") from None
    except TypeError as exc:
        raise ValidationError(f"{exc}; tuning needs metric, parameters and max_trials", path="tuning") from None


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
    tuning: Optional[Tuning] = attrs.field(default=None, converter=_to_tuning)
    """Hyperparameter search over trials of this job (SPEC §8); ``None``: one run."""
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
