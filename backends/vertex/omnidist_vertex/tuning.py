"""Tuning on Vertex AI: a ``HyperparameterTuningJob`` around the job's CustomJob (pure: no SDK).

Compile wraps the compiled CustomJob: its ``jobSpec`` becomes ``trialJobSpec`` unchanged, the
portable ``tuning`` block becomes the ``studySpec`` (one metric, the parameters, the algorithm,
median stopping) and the trial counts. Vertex passes each trial's values to every replica as
``--ID=VALUE`` after its args, exactly as the portable job promises. Import reads the same shape
back (the CustomJob part through :mod:`.importer`), with a note for each distribution it changes.
Following a submitted one reads its ``trials[]`` into portable :class:`~omnidist.backend.values.Trial`
values (:func:`trials_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import (
    PORTABLE,
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
    trials_at_once,
)

BACKEND = "vertex"

GOALS: dict[Goal, str] = {Goal.MAXIMIZE: "MAXIMIZE", Goal.MINIMIZE: "MINIMIZE"}
"""Portable goal -> ``MetricSpec.GoalType``."""

GOAL_NAMES: dict[str, Goal] = {v: k for k, v in GOALS.items()}
"""``GoalType`` -> portable goal (derived)."""

GOAL_NUMBERS: dict[int, str] = {1: "MAXIMIZE", 2: "MINIMIZE"}
"""``GoalType`` number -> name (the REST API's ``enum-encoding=int`` form)."""

ALGORITHMS: dict[Algorithm, str] = {
    Algorithm.BAYESIAN: "ALGORITHM_UNSPECIFIED",
    Algorithm.GRID: "GRID_SEARCH",
    Algorithm.RANDOM: "RANDOM_SEARCH",
}
"""Portable algorithm -> ``StudySpec.Algorithm`` (unspecified is Vertex's Bayesian optimization)."""

ALGORITHM_NAMES: dict[str, Algorithm] = {v: k for k, v in ALGORITHMS.items()}
"""``StudySpec.Algorithm`` -> portable algorithm (derived)."""

ALGORITHM_NUMBERS: dict[int, str] = {0: "ALGORITHM_UNSPECIFIED", 2: "GRID_SEARCH", 3: "RANDOM_SEARCH"}
"""``StudySpec.Algorithm`` number -> name."""

SCALES: dict[Scale, str] = {Scale.LINEAR: "UNIT_LINEAR_SCALE", Scale.LOG: "UNIT_LOG_SCALE",
                            Scale.REVERSE_LOG: "UNIT_REVERSE_LOG_SCALE"}
"""Portable scale of a range -> ``ParameterSpec.ScaleType``."""

SCALE_NAMES: dict[str, Scale] = {v: k for k, v in SCALES.items()}
"""``ScaleType`` -> portable scale (derived)."""

SCALE_NUMBERS: dict[int, str] = {0: "SCALE_TYPE_UNSPECIFIED", 1: "UNIT_LINEAR_SCALE", 2: "UNIT_LOG_SCALE",
                                 3: "UNIT_REVERSE_LOG_SCALE"}
"""``ScaleType`` number -> name."""

VALUE_SPECS: dict[ParameterType, str] = {
    ParameterType.CATEGORICAL: "categoricalValueSpec",
    ParameterType.DISCRETE: "discreteValueSpec",
    ParameterType.DOUBLE: "doubleValueSpec",
    ParameterType.INTEGER: "integerValueSpec",
}
"""Portable parameter type -> the ``ParameterSpec`` field that holds its values."""

TYPES_BY_SPEC: dict[str, ParameterType] = {v: k for k, v in VALUE_SPECS.items()}
"""``ParameterSpec`` value field -> portable type (derived)."""

GRID_TYPES = frozenset({ParameterType.INTEGER, ParameterType.DISCRETE, ParameterType.CATEGORICAL})
"""What Vertex grid search takes: every parameter must have finitely many values."""

STOPPING_SPECS: dict[str, str] = {
    "convexAutomatedStoppingSpec": "convex stopping",
    "decayCurveStoppingSpec": "decay-curve stopping",
    "medianAutomatedStoppingSpec": "",
}
"""``StudySpec`` early-stopping fields -> how they differ from portable median stopping ("" = they don't)."""

MAX_DISCRETE_VALUES = 1000
"""The most values a discrete parameter may list (the ``ParameterSpec`` documentation)."""

NATIVE_PATHS: dict[str, str] = {
    "max_failed_trials": "maxFailedTrialCount",
    "max_trials": "maxTrialCount",
    "metric.name": "studySpec.metrics[0].metricId",
    "parallel_trials": "parallelTrialCount",
}
"""Portable tuning field -> where an imported tuning job holds it (for error paths)."""

TRIAL_STATES: dict[str, JobState] = {
    "ACTIVE": JobState.RUNNING,
    "INFEASIBLE": JobState.FAILED,
    "REQUESTED": JobState.QUEUED,
    "STATE_UNSPECIFIED": JobState.UNKNOWN,
    "STOPPING": JobState.RUNNING,
    "SUCCEEDED": JobState.SUCCEEDED,
}
"""``Trial.State`` -> portable state (a trial whose CustomJob failed is INFEASIBLE; one stopped
early is STOPPING, then SUCCEEDED with the measurement it reached)."""

_TUNING_KEYS = ("studySpec", "trialJobSpec")


# --- compile ------------------------------------------------------------------------------------


def check(tuning: Tuning) -> None:
    """Exit 3 for what a Vertex study cannot hold."""
    for name, parameter in tuning.parameters.items():
        if tuning.algorithm is Algorithm.GRID and parameter.type not in GRID_TYPES:
            raise UnsupportedFeatureError(
                Feature.TUNING, BACKEND,
                f"grid search takes only integer, discrete and categorical parameters, and {name} is a "
                f"{parameter.type.value} range.",
                "Use algorithm: random or bayesian, or list the values to try with type: discrete.",
                subject=f"tuning.parameters.{name}")
        if parameter.values is not None and len(parameter.values) > MAX_DISCRETE_VALUES:
            raise UnsupportedFeatureError(
                Feature.TUNING, BACKEND,
                f"a parameter lists at most {MAX_DISCRETE_VALUES} values, and {name} has {len(parameter.values)}.",
                "Use a range (type: double or integer) instead.", subject=f"tuning.parameters.{name}")


def parameter_to_native(name: str, parameter: Parameter) -> dict[str, Any]:
    """One ``ParameterSpec`` (int64 bounds as JSON strings, as the REST API prints them)."""
    kind = parameter.type
    if kind is ParameterType.DOUBLE:
        values: dict[str, Any] = {"minValue": float(parameter.min), "maxValue": float(parameter.max)}
    elif kind is ParameterType.INTEGER:
        values = {"minValue": str(parameter.min), "maxValue": str(parameter.max)}
    elif kind is ParameterType.DISCRETE:
        values = {"values": [float(v) for v in parameter.values]}
    else:
        values = {"values": list(parameter.values)}
    # A zero bound is left out, as the API prints it (proto3 does not print defaults).
    values = {k: v for k, v in values.items() if v not in (0.0, "0")}
    spec: dict[str, Any] = {"parameterId": name, VALUE_SPECS[kind]: values}
    if kind in RANGE_TYPES:
        spec["scaleType"] = SCALES[parameter.scale]
    return spec


def study_to_native(tuning: Tuning) -> dict[str, Any]:
    """The ``StudySpec``: the metric, the parameters, the algorithm, median stopping when asked."""
    study: dict[str, Any] = {
        "metrics": [{"metricId": tuning.metric.name, "goal": GOALS[tuning.metric.goal]}],
        "parameters": [parameter_to_native(n, p) for n, p in tuning.parameters.items()],
    }
    if tuning.algorithm is not Algorithm.BAYESIAN:  # unspecified is Bayesian: the API leaves it out
        study["algorithm"] = ALGORITHMS[tuning.algorithm]
    if tuning.early_stopping:
        study["medianAutomatedStoppingSpec"] = {}
    return study


def tuning_job(compiled: CompiledJob, tuning: Tuning) -> CompiledJob:
    """The ``HyperparameterTuningJob`` whose ``trialJobSpec`` is ``compiled``'s ``jobSpec``."""
    check(tuning)
    custom = compiled.request
    request: dict[str, Any] = {"displayName": custom["displayName"], "studySpec": study_to_native(tuning),
                               "maxTrialCount": tuning.max_trials, "parallelTrialCount": tuning.parallel_trials}
    if tuning.max_failed_trials:  # 0: Vertex decides (the API leaves it out)
        request["maxFailedTrialCount"] = tuning.max_failed_trials
    request["trialJobSpec"] = custom["jobSpec"]
    for key in ("labels", "encryptionSpec"):
        if key in custom:
            request[key] = custom[key]
    return attrs.evolve(compiled, request=request)


# --- import -------------------------------------------------------------------------------------


def recognizes(native: Any) -> bool:
    """True for a ``HyperparameterTuningJob`` (it has a study or a trial job spec)."""
    return isinstance(native, Mapping) and any(key in native for key in _TUNING_KEYS)


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping, got {value!r}", path=path)
    return value


def _enum(value: Any, names: Mapping[str, Any], numbers: Mapping[int, str], path: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value in numbers:
        value = numbers[value]
    if not isinstance(value, str) or (value not in names and value not in numbers.values()):
        allowed = ", ".join(numbers.values())
        raise ValidationError(f"{value!r} is not one of {allowed}", path=path)
    return value


def _count(native: Mapping[str, Any], key: str, default: int, notes: list[Note], field: str) -> int:
    value = native.get(key)
    if value is None:
        if field:  # gcloud takes the trial counts as flags, so config files often leave them out
            notes.append(Note(kind=NoteKind.DEFAULTED, field=field, message=(
                f"the file sets no {key} (gcloud takes it as a flag); {default}: set {field} to what you ran")))
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        raise ValidationError(f"expected a whole number, got {value!r}", path=key)
    return int(value)


def _whole(values: Any) -> Any:
    """Discrete values travel as doubles; ``32.0`` reads back as the ``32`` people write."""
    if not isinstance(values, list):
        return values
    return [int(v) if isinstance(v, float) and v.is_integer() else v for v in values]


def native_to_parameter(spec: Any, path: str, notes: list[Note]) -> tuple[str, Parameter]:
    """One ``ParameterSpec`` -> (name, portable parameter)."""
    spec = _mapping(spec, path)
    name = spec.get("parameterId")
    if not isinstance(name, str) or not name:
        raise ValidationError("required: every parameter has a parameterId", path=f"{path}.parameterId")
    field = f"tuning.parameters.{name}"
    if spec.get("conditionalParameterSpecs"):
        raise UnsupportedFeatureError(Feature.TUNING, PORTABLE, "conditional parameters have no portable form.",
                                      "Tune the child parameters unconditionally, or in a study of their own.",
                                      subject=f"{path}.conditionalParameterSpecs")
    found = [key for key in TYPES_BY_SPEC if key in spec]
    if len(found) != 1:
        raise ValidationError(f"give exactly one of {', '.join(TYPES_BY_SPEC)}", path=path)
    kind = TYPES_BY_SPEC[found[0]]
    values = _mapping(spec[found[0]], f"{path}.{found[0]}")
    if "defaultValue" in values:
        notes.append(Note(kind=NoteKind.DROPPED, field=field,
                          message=f"defaultValue {values['defaultValue']!r}: portable parameters have no default"))
    raw_scale = _enum(spec.get("scaleType", "SCALE_TYPE_UNSPECIFIED"), SCALE_NAMES, SCALE_NUMBERS,
                      f"{path}.scaleType")
    try:
        if kind in RANGE_TYPES:
            scale = SCALE_NAMES.get(raw_scale, Scale.LINEAR)
            # An absent bound is 0 (proto3: the API does not print a zero).
            parameter = Parameter(type=kind, min=values.get("minValue", 0), max=values.get("maxValue", 0), scale=scale)
        else:
            if raw_scale != "SCALE_TYPE_UNSPECIFIED":
                notes.append(Note(kind=NoteKind.DROPPED, field=field,
                                  message=f"scaleType {raw_scale}: portable {kind.value} parameters have no scale"))
            parameter = Parameter(type=kind, values=_whole(values.get("values")))
    except ValidationError as exc:
        raise exc.prefixed(f"{path}.{found[0]}") from None
    return name, parameter


def native_to_tuning(native: Mapping[str, Any], notes: list[Note]) -> Tuning:
    """The ``studySpec`` and trial counts -> the portable tuning block."""
    study = _mapping(native.get("studySpec"), "studySpec")
    metrics = study.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        raise ValidationError("required: the metric the trials report", path="studySpec.metrics")
    if len(metrics) > 1:
        raise UnsupportedFeatureError(Feature.TUNING, PORTABLE,
                                      f"the study optimizes {len(metrics)} metrics; portable tuning has one.",
                                      "Keep the metric that matters most.", subject="studySpec.metrics")
    metric = _mapping(metrics[0], "studySpec.metrics[0]")
    goal = _enum(metric.get("goal"), GOAL_NAMES, GOAL_NUMBERS, "studySpec.metrics[0].goal")
    if goal not in GOAL_NAMES:
        raise ValidationError("say MAXIMIZE or MINIMIZE", path="studySpec.metrics[0].goal")
    if metric.get("safetyConfig"):
        notes.append(Note(kind=NoteKind.DROPPED, field="tuning.metric", message="safetyConfig has no portable form"))
    raw = study.get("parameters")
    if not isinstance(raw, list) or not raw:
        raise ValidationError("required: the parameters to tune", path="studySpec.parameters")
    parameters = dict(native_to_parameter(p, f"studySpec.parameters[{i}]", notes) for i, p in enumerate(raw))
    algorithm = _enum(study.get("algorithm", "ALGORITHM_UNSPECIFIED"), ALGORITHM_NAMES, ALGORITHM_NUMBERS,
                      "studySpec.algorithm")
    stopping = [key for key in STOPPING_SPECS if key in study]
    for key in stopping:
        if STOPPING_SPECS[key]:
            notes.append(Note(kind=NoteKind.APPROXIMATED, field="tuning.early_stopping",
                              message=f"{STOPPING_SPECS[key]} ({key}) became median-style early stopping"))
    for key in ("observationNoise", "measurementSelectionType", "studyStoppingConfig"):
        if study.get(key) not in (None, "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED", "OBSERVATION_NOISE_UNSPECIFIED"):
            notes.append(Note(kind=NoteKind.DROPPED, field="tuning",
                              message=f"studySpec.{key} ({study[key]}) has no portable form"))
    fields: dict[str, Any] = {
        "metric": {"name": metric.get("metricId"), "goal": GOAL_NAMES[goal]},
        "parameters": parameters,
        "algorithm": ALGORITHM_NAMES[algorithm],
        "max_trials": _count(native, "maxTrialCount", 1, notes, "tuning.max_trials"),
        "parallel_trials": _count(native, "parallelTrialCount", 1, notes, "tuning.parallel_trials"),
        "max_failed_trials": _count(native, "maxFailedTrialCount", 0, [], ""),
        "early_stopping": bool(stopping),
    }
    fields["parallel_trials"] = trials_at_once(fields["max_trials"], fields["parallel_trials"],
                                               "parallelTrialCount", notes)
    try:
        return Tuning(**fields)
    except ValidationError as exc:
        raise ValidationError([attrs.evolve(p, path=NATIVE_PATHS.get(p.path, "studySpec"),
                                            message=f"{p.message} (read as the portable tuning.{p.path})")
                               for p in exc.problems]) from None


def import_tuning_job(native: Mapping[str, Any], import_spec: Any) -> tuple[DistributedJob, list[Note]]:
    """A ``HyperparameterTuningJob`` -> the portable job with its ``tuning`` block.

    Args:
        native: the tuning job as the REST API takes or returns it.
        import_spec: reads a ``CustomJobSpec`` plus the outer fields (:func:`.importer.spec_to_job`).
    """
    notes: list[Note] = []
    spec = _mapping(native.get("trialJobSpec"), "trialJobSpec")
    tuning = native_to_tuning(native, notes)
    try:
        job = import_spec(spec, native, notes)
    except ValidationError as exc:
        raise exc.prefixed("trialJobSpec") from None
    return attrs.evolve(job, tuning=tuning), notes


# --- follow: the trials of a submitted tuning job ----------------------------------------------------


def _typed(value: Any, spec: Mapping[str, Any]) -> Any:
    """A trial's value as its parameter's type holds it (Vertex sends every number as a double)."""
    whole = isinstance(value, float) and value.is_integer()
    if "integerValueSpec" in spec or ("discreteValueSpec" in spec and whole):
        return int(value) if whole else value
    return value


def trials_of(native: Mapping[str, Any]) -> tuple[str, tuple[Trial, ...], Optional[Trial]]:
    """A ``HyperparameterTuningJob`` (REST form, enum names) -> its metric, trials and best trial.

    A trial's value is its ``finalMeasurement`` value of the study's metric; the best follows the
    metric's goal."""
    study = native.get("studySpec") or {}
    metric_spec = (study.get("metrics") or [{}])[0]
    metric = str(metric_spec.get("metricId", ""))
    specs = {p.get("parameterId"): p for p in study.get("parameters") or []}
    trials = []
    for raw in native.get("trials") or []:
        final = raw.get("finalMeasurement") or {}
        values = [m.get("value") for m in final.get("metrics") or [] if m.get("metricId") == metric]
        step = final.get("stepCount")
        trials.append(Trial(
            id=str(raw.get("id", "")), state=TRIAL_STATES.get(str(raw.get("state")), JobState.UNKNOWN),
            parameters=[(p.get("parameterId", ""), _typed(p.get("value"), specs.get(p.get("parameterId"), {})))
                        for p in raw.get("parameters") or []],
            value=float(values[0]) if values and values[0] is not None else None,
            step=int(step) if final and step is not None else None,
            message=str(raw.get("infeasibleReason") or "")))
    maximize = metric_spec.get("goal") != "MINIMIZE"
    return metric, tuple(trials), best_trial(trials, maximize)
