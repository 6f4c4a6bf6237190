"""Tuning on legacy AI Platform: ``trainingInput.hyperparameters`` (pure: no network, no SDK).

Compile adds a ``HyperparameterSpec`` to the compiled create body; the service runs the job's
replicas once per trial and appends ``--NAME=VALUE`` to the program's arguments, as the portable
job promises. Import reads the spec into frozen models through omnidist's converter (so a typo
names its path, ``trainingInput.hyperparameters.params[0].minValue``), imports the rest of the
body with :mod:`.importer`, and notes each distribution it had to change. A submitted tuning job
is an ordinary job; its ``trainingOutput.trials`` become portable :class:`~omnidist.backend.values.Trial`
values (:func:`trials_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import (
    RANGE_TYPES,
    Algorithm,
    CompiledJob,
    DistributedJob,
    Feature,
    Goal,
    JobState,
    Note,
    NoteKind,
    Parameter,
    ParameterType,
    Scale,
    Trial,
    Tuning,
    UnsupportedFeatureError,
    ValidationError,
    best_trial,
    clipped_repr,
    structure,
    trials_at_once,
)
from omnidist_ai_platform.tables import JOB_STATES, NAME

PATH = "trainingInput.hyperparameters"

GOALS: dict[Goal, str] = {Goal.MAXIMIZE: "MAXIMIZE", Goal.MINIMIZE: "MINIMIZE"}
"""Portable goal -> ``HyperparameterSpec.goal``."""

GOAL_NAMES: dict[str, Goal] = {v: k for k, v in GOALS.items()}
"""``goal`` -> portable goal (derived)."""

ALGORITHMS: dict[Algorithm, str] = {
    Algorithm.BAYESIAN: "ALGORITHM_UNSPECIFIED",
    Algorithm.GRID: "GRID_SEARCH",
    Algorithm.RANDOM: "RANDOM_SEARCH",
}
"""Portable algorithm -> ``algorithm`` (unspecified is the service's Bayesian optimization)."""

ALGORITHM_NAMES: dict[str, Algorithm] = {v: k for k, v in ALGORITHMS.items()}
"""``algorithm`` -> portable algorithm (derived)."""

TYPES: dict[ParameterType, str] = {
    ParameterType.CATEGORICAL: "CATEGORICAL",
    ParameterType.DISCRETE: "DISCRETE",
    ParameterType.DOUBLE: "DOUBLE",
    ParameterType.INTEGER: "INTEGER",
}
"""Portable parameter type -> ``ParameterSpec.type``."""

TYPE_NAMES: dict[str, ParameterType] = {v: k for k, v in TYPES.items()}
"""``ParameterSpec.type`` -> portable type (derived)."""

SCALES: dict[Scale, str] = {Scale.LINEAR: "UNIT_LINEAR_SCALE", Scale.LOG: "UNIT_LOG_SCALE",
                            Scale.REVERSE_LOG: "UNIT_REVERSE_LOG_SCALE"}
"""Portable scale of a range -> ``scaleType``."""

SCALE_NAMES: dict[str, Scale] = {"NONE": Scale.LINEAR, **{v: k for k, v in SCALES.items()}}
"""``scaleType`` -> portable scale (derived; ``NONE``, no scaling, is a linear range)."""

GRID_TYPES = frozenset({ParameterType.INTEGER, ParameterType.DISCRETE, ParameterType.CATEGORICAL})
"""What grid search takes (the ``algorithm`` enum's documentation)."""

MAX_DISCRETE_VALUES = 1000
"""The most ``discreteValues`` one parameter may list (the ``ParameterSpec`` documentation)."""

DEFAULT_METRIC_TAG = "training/hptuning/metric"
"""The metric the service reads when ``hyperparameterMetricTag`` is unset."""


def _enum(choices: tuple[str, ...]) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
        if value is not None and value not in choices:
            raise ValidationError(f"{value!r} is not one of {', '.join(choices)}", path=attribute.name)
    return check


@attrs.frozen(kw_only=True)
class NativeParameter:
    """``ParameterSpec`` (every field the ml v1 API defines)."""

    parameterName: str  # noqa: N815 - the API's spelling
    type: str = attrs.field(validator=_enum(("PARAMETER_TYPE_UNSPECIFIED", *TYPE_NAMES)))
    # Numbers are checked by the portable Parameter, which also reads the strings YAML 1.1 makes
    # of exponents without a sign or a dot (``50.e9``, ``1e-4``), as gcloud's loader reads numbers.
    minValue: Any = None  # noqa: N815
    maxValue: Any = None  # noqa: N815
    discreteValues: Any = None  # noqa: N815
    categoricalValues: Any = None  # noqa: N815
    scaleType: Optional[str] = attrs.field(  # noqa: N815
        default=None, validator=_enum(("NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE")))


@attrs.frozen(kw_only=True)
class NativeHyperparameters:
    """``HyperparameterSpec`` (every field the ml v1 API defines)."""

    params: tuple[NativeParameter, ...]
    goal: Optional[str] = attrs.field(default=None, validator=_enum(("GOAL_TYPE_UNSPECIFIED", *GOAL_NAMES)))
    hyperparameterMetricTag: Optional[str] = None  # noqa: N815
    maxTrials: Optional[int] = None  # noqa: N815
    maxParallelTrials: Optional[int] = None  # noqa: N815
    maxFailedTrials: Optional[int] = None  # noqa: N815
    enableTrialEarlyStopping: Optional[bool] = None  # noqa: N815
    algorithm: Optional[str] = attrs.field(default=None, validator=_enum(tuple(ALGORITHM_NAMES)))
    resumePreviousJobId: Optional[str] = None  # noqa: N815


# --- compile ------------------------------------------------------------------------------------


def check(tuning: Tuning) -> None:
    """Exit 3 for what the tuning service cannot hold."""
    for name, parameter in tuning.parameters.items():
        if tuning.algorithm is Algorithm.GRID and parameter.type not in GRID_TYPES:
            raise UnsupportedFeatureError(
                Feature.TUNING, NAME,
                f"grid search takes only INTEGER, CATEGORICAL and DISCRETE parameters, and {name} is a "
                f"{parameter.type.value} range.",
                "Use algorithm: random or bayesian, or list the values to try with type: discrete.",
                subject=f"tuning.parameters.{name}")
        if parameter.values is not None and len(parameter.values) > MAX_DISCRETE_VALUES:
            raise UnsupportedFeatureError(
                Feature.TUNING, NAME,
                f"a parameter lists at most {MAX_DISCRETE_VALUES} values, and {name} has {len(parameter.values)}.",
                "Use a range (type: double or integer) instead.", subject=f"tuning.parameters.{name}")


def parameter_to_native(name: str, parameter: Parameter) -> dict[str, Any]:
    """One ``ParameterSpec``."""
    spec: dict[str, Any] = {"parameterName": name, "type": TYPES[parameter.type]}
    if parameter.type in RANGE_TYPES:
        spec.update(minValue=parameter.min, maxValue=parameter.max, scaleType=SCALES[parameter.scale])
    elif parameter.type is ParameterType.DISCRETE:
        spec["discreteValues"] = list(parameter.values)
    else:
        spec["categoricalValues"] = list(parameter.values)
    return spec


def hyperparameters(tuning: Tuning) -> dict[str, Any]:
    """The ``HyperparameterSpec`` for a portable tuning block."""
    spec: dict[str, Any] = {
        "goal": GOALS[tuning.metric.goal],
        "hyperparameterMetricTag": tuning.metric.name,
        "maxTrials": tuning.max_trials,
        "maxParallelTrials": tuning.parallel_trials,
    }
    if tuning.max_failed_trials:  # 0: the service decides, as the API documents
        spec["maxFailedTrials"] = tuning.max_failed_trials
    if tuning.early_stopping:
        spec["enableTrialEarlyStopping"] = True
    if tuning.algorithm is not Algorithm.BAYESIAN:
        spec["algorithm"] = ALGORITHMS[tuning.algorithm]
    spec["params"] = [parameter_to_native(n, p) for n, p in tuning.parameters.items()]
    return spec


def with_hyperparameters(compiled: CompiledJob, tuning: Tuning) -> CompiledJob:
    """The compiled create body with ``trainingInput.hyperparameters`` added."""
    check(tuning)
    body = dict(compiled.request)
    body["trainingInput"] = {**body["trainingInput"], "hyperparameters": hyperparameters(tuning)}
    return attrs.evolve(compiled, request=body)


# --- import -------------------------------------------------------------------------------------


def split(request: Any) -> tuple[Any, Optional[Any]]:
    """``(the body without hyperparameters, the hyperparameters)``; ``None`` when it has none."""
    if not isinstance(request, Mapping):
        return request, None
    if isinstance(request.get("trainingInput"), Mapping) and "hyperparameters" in request["trainingInput"]:
        training = dict(request["trainingInput"])
        return {**request, "trainingInput": training}, training.pop("hyperparameters")
    if "hyperparameters" in request and "trainingInput" not in request:  # a bare TrainingInput
        bare = dict(request)
        return bare, bare.pop("hyperparameters")
    return request, None


def _native_path(portable: str, kind: ParameterType) -> str:
    """``min`` -> ``minValue``…: an error in an imported parameter names the native field."""
    head, sep, rest = portable.partition("[")
    values = "discreteValues" if kind is ParameterType.DISCRETE else "categoricalValues"
    return {"min": "minValue", "max": "maxValue", "values": values, "scale": "scaleType"}.get(head, head) + sep + rest


def native_to_parameter(native: NativeParameter, path: str, notes: list[Note]) -> Parameter:
    """One ``ParameterSpec`` -> a portable parameter."""
    if native.type not in TYPE_NAMES:
        raise ValidationError(f"say one of {', '.join(TYPE_NAMES)}", path=f"{path}.type")
    kind = TYPE_NAMES[native.type]
    field = f"tuning.parameters.{native.parameterName}"
    scale = SCALE_NAMES[native.scaleType or "NONE"]
    unused = {"minValue": native.minValue, "maxValue": native.maxValue, "discreteValues": native.discreteValues,
              "categoricalValues": native.categoricalValues}
    try:
        if kind in RANGE_TYPES:
            parameter = Parameter(type=kind, min=native.minValue, max=native.maxValue, scale=scale)
            unused = {k: v for k, v in unused.items() if k.endswith("Values")}
        else:
            key = "discreteValues" if kind is ParameterType.DISCRETE else "categoricalValues"
            values = unused.pop(key)
            if values is not None and not isinstance(values, (list, tuple)):
                raise ValidationError(f"expected a list of values, got {clipped_repr(values, 80)}", path=key)
            if native.scaleType not in (None, "NONE"):
                notes.append(Note(kind=NoteKind.DROPPED, field=field,
                                  message=f"scaleType {native.scaleType}: portable {kind.value} parameters have no "
                                          "scale"))
            whole: Any = [int(v) if isinstance(v, float) and v.is_integer() else v for v in values or ()]
            if kind is ParameterType.CATEGORICAL and values is not None:
                whole = values
            parameter = Parameter(type=kind, values=whole)
    except ValidationError as exc:
        raise ValidationError([attrs.evolve(p, path=_native_path(p.path, kind)) for p in exc.problems]
                              ).prefixed(path) from None
    for key, value in unused.items():
        if value is not None:  # the API ignores them for this type, and so does omnidist
            notes.append(Note(kind=NoteKind.DROPPED, field=field, message=f"{key} is not used by a {native.type} "
                                                                          "parameter"))
    return parameter


def native_to_tuning(raw: Any, notes: list[Note]) -> Tuning:
    """``trainingInput.hyperparameters`` -> the portable tuning block."""
    native = structure(raw, NativeHyperparameters, path=PATH)
    if native.resumePreviousJobId:
        notes.append(Note(kind=NoteKind.DROPPED, field="tuning", message=(
            f"resumePreviousJobId {native.resumePreviousJobId}: the study starts afresh")))
    if native.goal in (None, "GOAL_TYPE_UNSPECIFIED"):
        notes.append(Note(kind=NoteKind.DEFAULTED, field="tuning.metric.goal", message="maximize, the API's default"))
    metric = native.hyperparameterMetricTag or DEFAULT_METRIC_TAG
    if not native.hyperparameterMetricTag:
        notes.append(Note(kind=NoteKind.DEFAULTED, field="tuning.metric.name",
                          message=f"{DEFAULT_METRIC_TAG}, the tag the service reads when none is given"))
    for key, portable in (("maxTrials", "max_trials"), ("maxParallelTrials", "parallel_trials")):
        if getattr(native, key) is None:
            notes.append(Note(kind=NoteKind.DEFAULTED, field=f"tuning.{portable}", message="1, the API's default"))
    names = [p.parameterName for p in native.params]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValidationError(f"{', '.join(repeated)} named more than once", path=f"{PATH}.params")
    parameters = {p.parameterName: native_to_parameter(p, f"{PATH}.params[{i}]", notes)
                  for i, p in enumerate(native.params)}
    total = native.maxTrials if native.maxTrials is not None else 1
    parallel = native.maxParallelTrials if native.maxParallelTrials is not None else 1
    try:
        return Tuning(metric={"name": metric, "goal": GOAL_NAMES.get(native.goal or "MAXIMIZE", Goal.MAXIMIZE)},
                      parameters=parameters, algorithm=ALGORITHM_NAMES[native.algorithm or "ALGORITHM_UNSPECIFIED"],
                      max_trials=total,
                      parallel_trials=trials_at_once(total, parallel, "maxParallelTrials", notes),
                      max_failed_trials=native.maxFailedTrials or 0,
                      early_stopping=bool(native.enableTrialEarlyStopping))
    except ValidationError as exc:
        raise exc.prefixed(PATH) from None


def import_with_tuning(request: Any, import_rest: Callable[[Any], tuple[DistributedJob, tuple[Note, ...]]]
                       ) -> tuple[DistributedJob, tuple[Note, ...]]:
    """A body whose ``trainingInput`` has ``hyperparameters`` -> the portable job with ``tuning``.

    Args:
        request: the create body, a ``{trainingInput: …}`` config or a bare ``TrainingInput``.
        import_rest: imports the body without its hyperparameters (:func:`.importer.import_with_notes`).
    """
    rest, raw = split(request)
    notes: list[Note] = []
    tuning = native_to_tuning(raw, notes)
    job, rest_notes = import_rest(rest)
    return attrs.evolve(job, tuning=tuning), (*rest_notes, *notes)


# --- follow: the trials of a submitted tuning job ----------------------------------------------------


def _typed(value: Any, kind: Optional[str]) -> Any:
    """A trial's value (the API sends each as a string) as its parameter's type holds it."""
    if kind == "CATEGORICAL" or not isinstance(value, str):
        return value
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if kind in ("INTEGER", "DISCRETE") and number.is_integer() else number


def trials_of(job: Mapping[str, Any]) -> tuple[str, tuple[Trial, ...], Optional[Trial]]:
    """A job's metric, ``trainingOutput.trials`` and best trial (``("", (), None)`` for a job
    without ``trainingInput.hyperparameters``).

    A trial's value is its ``finalMetric.objectiveValue``, its state through the job state table;
    the best follows ``goal`` (the API's default: maximize)."""
    spec = (job.get("trainingInput") or {}).get("hyperparameters")
    if not isinstance(spec, Mapping):
        return "", (), None
    output = job.get("trainingOutput") or {}
    metric = str(spec.get("hyperparameterMetricTag") or output.get("hyperparameterMetricTag") or DEFAULT_METRIC_TAG)
    kinds = {p.get("parameterName"): p.get("type") for p in spec.get("params") or [] if isinstance(p, Mapping)}
    trials = []
    for raw in output.get("trials") or []:
        final = raw.get("finalMetric") or {}
        values = raw.get("hyperparameters") or {}
        ordered = [n for n in kinds if n in values] + [n for n in values if n not in kinds]
        value, step = final.get("objectiveValue"), final.get("trainingStep")
        trials.append(Trial(
            id=str(raw.get("trialId", "")), state=JOB_STATES.get(str(raw.get("state")), JobState.UNKNOWN),
            parameters=[(n, _typed(values[n], kinds.get(n))) for n in ordered],
            value=None if value is None else float(value), step=None if step is None else int(step),
            message="stopped early" if raw.get("isTrialStoppedEarly") else ""))
    return metric, tuple(trials), best_trial(trials, maximize=spec.get("goal") != "MINIMIZE")
