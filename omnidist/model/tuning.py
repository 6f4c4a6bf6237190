"""Tuning: many trials of one job (SPEC §8), as frozen values the job holds in ``tuning``."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, Optional, Union

import attrs

from omnidist.errors import ValidationError
from omnidist.model import serde
from omnidist.model.fields import choice, fail
from omnidist.model.limits import MAX_TRIALS
from omnidist.patterns import lazy_pattern


class ParameterType(str, enum.Enum):
    """What a tuned parameter ranges over: a real or whole-number range, or a list of values."""

    DOUBLE = "double"
    INTEGER = "integer"
    DISCRETE = "discrete"
    CATEGORICAL = "categorical"


class Scale(str, enum.Enum):
    """How a range is searched: evenly (``linear``), evenly in its logarithm (``log``: more of the
    values tried near ``min``), or the mirror of that (``reverse_log``: more near ``max``; the clouds'
    reverse-log scales)."""

    LINEAR = "linear"
    LOG = "log"
    REVERSE_LOG = "reverse_log"


class Goal(str, enum.Enum):
    """Whether the tuned metric is better higher or lower."""

    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


class Algorithm(str, enum.Enum):
    """How trials pick their values; ``bayesian`` is each cloud's own default optimizer."""

    BAYESIAN = "bayesian"
    RANDOM = "random"
    GRID = "grid"


PARAMETER_NAME = lazy_pattern(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
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
        if self.scale is not Scale.LINEAR and low <= 0:
            raise ValidationError(f"scale: {self.scale.value} needs min > 0 (the logarithm of {low} does not "
                                  "exist); raise min or use scale: linear", path="min")
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
            scale = "" if self.scale is Scale.LINEAR else f", {self.scale.value.replace('_', ' ')} scale"
            return f"{self.type.value} in [{self.min:g}, {self.max:g}]{scale}"
        shown = ", ".join(v if isinstance(v, str) else f"{v:g}" for v in self.values)
        return f"{self.type.value} of {shown}"


@attrs.frozen(kw_only=True)
class Metric:
    """The metric trials report (``omnidist.runtime.reporting``) and whether higher or lower wins."""

    name: str = attrs.field()
    goal: Goal = attrs.field(converter=choice(Goal, "goal"))

    @name.validator
    def _name(self, attribute: attrs.Attribute, value: str) -> None:
        if not isinstance(value, str) or not value.strip():
            fail(attribute, f"expected the metric's name (e.g. accuracy), got {value!r}")


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
            fail(attribute, f"expected a whole number, got {value!r}")
        if value < minimum:
            fail(attribute, f"must be >= {minimum}, got {value}")
        if value > MAX_TRIALS:
            fail(attribute, f"{value} is more than the {MAX_TRIALS} trials omnidist allows (docs/security.md)")

    return check


@attrs.frozen(kw_only=True)
class Tuning:
    """Hyperparameter search: run the job as up to ``max_trials`` trials, ``parallel_trials`` at a
    time, each with values of ``parameters`` passed as ``--NAME=VALUE`` after ``args``, and keep
    the trial whose reported ``metric`` is best (docs/tuning.md).

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


def to_tuning(value: Any) -> Optional[Tuning]:
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


# --- reading and writing tuning blocks --------------------------------------------------------

# A parameter's bounds and values are checked and normalized by Parameter itself, which knows
# its type (numbers for ranges and discrete lists, text for categorical ones).
_structure_parameter_fields = serde.lazy(lambda: serde.fields_structure(
    Parameter, **{name: serde.override(struct_hook=lambda v, _: v) for name in ("min", "max", "values")}))


def _structure_parameter(value: Any, _: type) -> Parameter:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping such as {{type: double, min: 0.001, max: 0.1}}, got {serde.kind(value)}")
    return _structure_parameter_fields(value, Parameter)


_unstructure_tuning_fields = serde.lazy(lambda: serde.fields_unstructure(Tuning))

serde.register_enums(ParameterType, Scale, Goal, Algorithm)
serde.register_structure(Parameter, _structure_parameter)
serde.register_unstructure(Parameter, serde.lazy(lambda: serde.fields_unstructure(
    Parameter, type=serde.override(omit_if_default=False))))
serde.register_unstructure(Tuning, lambda t: dict(sorted(  # in the field order SPEC §8 writes them
    _unstructure_tuning_fields(t).items(), key=lambda kv: serde.field_names(Tuning).index(kv[0]))))
