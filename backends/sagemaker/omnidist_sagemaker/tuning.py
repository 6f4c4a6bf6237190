"""Tuning on SageMaker: ``CreateHyperParameterTuningJob`` (pure: no network, no SDK).

Compile wraps the training request's parts in a ``TrainingJobDefinition`` (script mode's
hyperparameters become ``StaticHyperParameters``) and the search in a
``HyperParameterTuningJobConfig``: ``Strategy``, ``ResourceLimits``, ``ParameterRanges`` and the
objective, which SageMaker reads from the trials' log lines with the ``MetricDefinitions`` regex
that matches what :func:`omnidist.runtime.report` prints there. A tuning job's training definition
has no ``ContainerEntrypoint``: the trials run script mode (the toolkit passes each trial's values
as ``--NAME VALUE``) or the image's own entrypoint (which finds them in
``/opt/ml/input/config/hyperparameters.json``); a job whose command would need an entrypoint is
refused (exit 3). Import reads it back; a tuning job's trials are its training jobs
(:func:`trials_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.kit import (
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
from omnidist.runtime.trials import metric_regex
from omnidist_sagemaker import compiler
from omnidist_sagemaker.settings import SageMakerSettings
from omnidist_sagemaker.tables import (
    ALGORITHMS,
    LIMITS,
    NAME,
    SCALES,
    STRATEGIES,
    TRIAL_STATES,
    TUNING_JOB_NAME_MAX,
)

DEFINITION_KEYS = ("RoleArn", "InputDataConfig", "VpcConfig", "OutputDataConfig", "ResourceConfig",
                   "StoppingCondition", "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
                   "EnableManagedSpotTraining", "CheckpointConfig", "RetryStrategy", "Environment")
"""The training request's members a ``HyperParameterTrainingJobDefinition`` also has."""

RANGE_KEYS: dict[ParameterType, str] = {
    ParameterType.CATEGORICAL: "CategoricalParameterRanges",
    ParameterType.DISCRETE: "CategoricalParameterRanges",
    ParameterType.DOUBLE: "ContinuousParameterRanges",
    ParameterType.INTEGER: "IntegerParameterRanges",
}
"""Portable parameter type -> its list in ``ParameterRanges`` (a discrete list is categorical:
the program gets the value as text either way)."""

SCALE_NAMES: dict[str, Scale] = {v: Scale(k) for k, v in SCALES.items()}
"""``ScalingType`` -> portable scale (derived; ``Auto``, SageMaker's choice, reads as linear)."""


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def parameter_ranges(tuning: Tuning) -> dict[str, list[dict[str, Any]]]:
    """``ParameterRanges``: each parameter in its type's list, bounds and values as strings."""
    ranges: dict[str, list[dict[str, Any]]] = {}
    for name, param in tuning.parameters.items():
        key = RANGE_KEYS[param.type]
        if tuning.algorithm is Algorithm.GRID and key != "CategoricalParameterRanges":
            raise UnsupportedFeatureError(
                Feature.TUNING, NAME, f"SageMaker's grid search takes categorical parameters only; {name} is a "
                f"{param.type.value} range.", "Give it a list of values (type: discrete), or use algorithm: random.",
                subject=f"tuning.parameters.{name}")
        if key == "CategoricalParameterRanges":
            entry: dict[str, Any] = {"Name": name, "Values": [_text(v) for v in param.values]}
        else:
            if param.scale is Scale.REVERSE_LOG and not 0 <= param.min <= param.max < 1:
                raise UnsupportedFeatureError(
                    Feature.TUNING, NAME, f"SageMaker's ReverseLogarithmic scaling takes ranges within 0 <= x < 1; "
                    f"{name} is {param}.", "Use scale: log, or tune a value within [0, 1) and map it in the "
                    "program.", subject=f"tuning.parameters.{name}")
            entry = {"Name": name, "MinValue": _text(param.min), "MaxValue": _text(param.max),
                     "ScalingType": SCALES[param.scale.value]}
        ranges.setdefault(key, []).append(entry)
    for key, entries in ranges.items():
        if len(entries) > LIMITS["tuning_ranges"]:
            raise ValidationError(f"SageMaker takes at most {LIMITS['tuning_ranges']} {key}, got {len(entries)}",
                                  path="tuning.parameters")
    return ranges


def tuning_name(job: DistributedJob, notes: list[Note]) -> str:
    """The tuning job's name: at most 32 characters."""
    if len(job.name) <= TUNING_JOB_NAME_MAX:
        return job.name
    short = job.name[:TUNING_JOB_NAME_MAX].rstrip("-")
    notes.append(Note(kind=NoteKind.APPROXIMATED, field="name",
                      message=f"{short!r}: a SageMaker tuning job's name holds at most {TUNING_JOB_NAME_MAX} "
                              "characters"))
    return short


def _definition(training: Mapping[str, Any], tuning: Tuning, job: DistributedJob, notes: list[Note]) -> dict[str, Any]:
    algorithm = dict(training["AlgorithmSpecification"])
    if "ContainerEntrypoint" in algorithm or "ContainerArguments" in algorithm:
        raise UnsupportedFeatureError(
            Feature.TUNING, NAME, "a SageMaker tuning job runs the image's own entrypoint (its training definition "
            "has no ContainerEntrypoint or ContainerArguments), and this job runs a command.",
            "Run the search in script mode (framework_version and `python SCRIPT.py` with code), or drop command "
            "and args so the image's entrypoint runs.", subject="tuning with a command")
    if not training.get("HyperParameters"):
        notes.append(Note(kind=NoteKind.HINT, field="tuning",
                          message="the image's entrypoint finds each trial's values in "
                                  "/opt/ml/input/config/hyperparameters.json (an image built on SageMaker's training "
                                  "toolkit gets them as --NAME VALUE)"))
    algorithm.pop("EnableSageMakerMetricsTimeSeries", None)
    metric = tuning.metric.name
    others = [d for d in algorithm.get("MetricDefinitions") or [] if d.get("Name") != metric]
    algorithm["MetricDefinitions"] = [*others, {"Name": metric, "Regex": metric_regex(metric)}]
    definition: dict[str, Any] = {"AlgorithmSpecification": algorithm}
    if training.get("HyperParameters"):
        static = {k: v for k, v in training["HyperParameters"].items() if k not in tuning.parameters}
        definition["StaticHyperParameters"] = static
    definition.update({k: training[k] for k in DEFINITION_KEYS if k in training})
    return definition


def tuning_request(job: DistributedJob, settings: SageMakerSettings, notes: list[Note]) -> dict[str, Any]:
    """The ``CreateHyperParameterTuningJob`` request for a job with ``tuning``."""
    tuning = job.tuning
    training, _ = compiler.training_request(job, settings, notes)
    if tuning.max_failed_trials:
        notes.append(Note(kind=NoteKind.DROPPED, field="tuning.max_failed_trials",
                          message="SageMaker has no limit on failed trials: the search runs its max_trials"))
    config: dict[str, Any] = {
        "Strategy": STRATEGIES[tuning.algorithm.value],
        "HyperParameterTuningJobObjective": {"Type": tuning.metric.goal.value.capitalize(),
                                             "MetricName": tuning.metric.name},
        "ResourceLimits": {"MaxNumberOfTrainingJobs": tuning.max_trials,
                           "MaxParallelTrainingJobs": tuning.parallel_trials},
        "ParameterRanges": parameter_ranges(tuning),
        "TrainingJobEarlyStoppingType": "Auto" if tuning.early_stopping else "Off",
    }
    request: dict[str, Any] = {"HyperParameterTuningJobName": tuning_name(job, notes),
                               "HyperParameterTuningJobConfig": config,
                               "TrainingJobDefinition": _definition(training, tuning, job, notes)}
    if "Tags" in training:
        request["Tags"] = training["Tags"]
    return request


def compile_tuning(job: DistributedJob, settings: SageMakerSettings) -> CompiledJob:
    """The ``CreateHyperParameterTuningJob`` request, with diagnostics."""
    notes: list[Note] = []
    request = tuning_request(job, settings, notes)
    return CompiledJob(backend=NAME, request=request, diagnostics=notes, format="json", job=job)


# --- import ---------------------------------------------------------------------------------------

def _number(text: Any, whole: bool, path: str) -> Any:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValidationError(f"expected a number, got {text!r}", path=path) from None
    return int(value) if whole and value.is_integer() else value


def tuning_from(config: Mapping[str, Any], notes: list[Note]) -> Tuning:
    """A portable :class:`Tuning` from ``HyperParameterTuningJobConfig`` (keys as the API spells them)."""
    objective = config.get("HyperParameterTuningJobObjective") or {}
    limits = config.get("ResourceLimits") or {}
    strategy = config.get("Strategy", "Bayesian")
    algorithm = ALGORITHMS.get(strategy)
    if algorithm is None:
        algorithm = "bayesian"
        notes.append(Note(kind=NoteKind.CHANGED, field="HyperParameterTuningJobConfig.Strategy",
                          message=f"{strategy} became bayesian: the portable job has no {strategy} search"))
    parameters: dict[str, Parameter] = {}
    ranges = config.get("ParameterRanges") or {}
    for key, kind in (("IntegerParameterRanges", ParameterType.INTEGER),
                      ("ContinuousParameterRanges", ParameterType.DOUBLE),
                      ("CategoricalParameterRanges", ParameterType.CATEGORICAL)):
        for i, item in enumerate(ranges.get(key) or []):
            where = f"ParameterRanges.{key}[{i}]"
            missing = [m for m in ("Name", *(("Values",) if kind is ParameterType.CATEGORICAL else
                                               ("MinValue", "MaxValue"))) if m not in item]
            if missing:
                raise ValidationError(f"a parameter range needs {', '.join(missing)}", path=f"{where}.{missing[0]}")
            name = item["Name"]
            if kind is ParameterType.CATEGORICAL:
                parameters[name] = Parameter(type=kind, values=tuple(item["Values"]))
                continue
            scale = SCALE_NAMES.get(str(item.get("ScalingType", "Linear")), Scale.LINEAR)
            if item.get("ScalingType") not in (None, *SCALES.values()):
                notes.append(Note(kind=NoteKind.CHANGED, field=f"ParameterRanges.{key}.{name}.ScalingType",
                                  message=f"{item['ScalingType']} became linear"))
            whole = kind is ParameterType.INTEGER
            parameters[name] = Parameter(type=kind, min=_number(item["MinValue"], whole, f"{where}.MinValue"),
                                         max=_number(item["MaxValue"], whole, f"{where}.MaxValue"), scale=scale)
    total = int(limits.get("MaxNumberOfTrainingJobs") or limits.get("MaxParallelTrainingJobs") or 1)
    if "MaxNumberOfTrainingJobs" not in limits:
        notes.append(Note(kind=NoteKind.DEFAULTED, field="ResourceLimits.MaxNumberOfTrainingJobs",
                          message=f"the search runs {total} trials (SageMaker's own default depends on the strategy)"))
    if not parameters:
        raise ValidationError("a tuning job searches at least one parameter", path="ParameterRanges")
    goal = str(objective.get("Type", "Maximize")).lower()
    if goal not in {g.value for g in Goal}:
        raise ValidationError(f"expected Maximize or Minimize, got {objective.get('Type')!r}",
                              path="HyperParameterTuningJobConfig.HyperParameterTuningJobObjective.Type")
    return Tuning(metric={"name": objective.get("MetricName", "objective"), "goal": goal},
                  parameters=parameters, algorithm=algorithm, max_trials=total,
                  parallel_trials=trials_at_once(total, int(limits.get("MaxParallelTrainingJobs", 1)),
                                                 "ResourceLimits.MaxParallelTrainingJobs", notes),
                  early_stopping=config.get("TrainingJobEarlyStoppingType") == "Auto")


# --- trials -------------------------------------------------------------------------------------

def trial_of(summary: Mapping[str, Any], order: Sequence[str]) -> Trial:
    """One ``HyperParameterTrainingJobSummary`` as a :class:`Trial` (values in the search's order)."""
    tuned = summary.get("TunedHyperParameters") or {}
    parameters = [(name, _value(str(tuned[name]).strip('"'))) for name in order if name in tuned]
    metric = summary.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
    state = TRIAL_STATES.get(str(summary.get("TrainingJobStatus")), JobState.UNKNOWN)
    value = metric.get("Value")
    return Trial(id=str(summary.get("TrainingJobName", "")), state=state, parameters=parameters,
                 value=float(value) if value is not None and state is not JobState.FAILED else None,
                 message=str(summary.get("FailureReason") or ""))


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def trials_of(job: Mapping[str, Any], summaries: Sequence[Mapping[str, Any]]) -> tuple[str, tuple[Trial, ...],
                                                                                        Optional[Trial]]:
    """The metric, the trials (oldest first) and the best trial of a described tuning job."""
    config = job.get("HyperParameterTuningJobConfig") or {}
    objective = config.get("HyperParameterTuningJobObjective") or {}
    ranges = config.get("ParameterRanges") or {}
    order = [item["Name"] for key in ("ContinuousParameterRanges", "IntegerParameterRanges",
                                      "CategoricalParameterRanges") for item in ranges.get(key) or []]
    ordered = sorted(summaries, key=lambda s: (str(s.get("CreationTime", "")), str(s.get("TrainingJobName", ""))))
    trials = tuple(trial_of(s, order) for s in ordered)
    return (str(objective.get("MetricName", "")), trials,
            best_trial(trials, maximize=objective.get("Type") == "Maximize"))
