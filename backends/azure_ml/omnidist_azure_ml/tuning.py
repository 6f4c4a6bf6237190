"""Tuning on Azure ML: a sweep job whose ``trial`` is the job's command job (pure: no SDK).

Compile moves the compiled command job's program (``command``, ``code``, ``environment``,
``environment_variables``, ``distribution``, ``resources``) into ``trial`` and its job-level keys
(names, compute, tags, inputs, queue) to the sweep, appends ``--NAME=${{search_space.KEY}}`` per
parameter to the command, and writes ``search_space``, ``objective``, ``limits``,
``sampling_algorithm`` and ``early_termination``. Azure's vocabulary differs from the portable
one in three ways that decide what is exact (PLATFORMS.md "Tuning"):

- ``loguniform`` bounds are natural logarithms of the range's bounds;
- ``randint`` has only an upper bound (values ``0 … upper-1``), so another integer range becomes a
  ``choice`` of its values (reported), up to :data:`MAX_CHOICE_VALUES`;
- grid sampling takes only ``choice``; Bayesian sampling takes ``choice``, ``uniform`` and
  ``quniform`` and no early termination.

Import reverses it and reports each distribution that changes on the way in. Following a
submitted sweep reads its child runs as portable :class:`~omnidist.backend.values.Trial` values
(:func:`trials_of`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import attrs

from omnidist.kit import (
    PARAMETER_NAME,
    PORTABLE,
    Algorithm,
    CompiledJob,
    DistributedJob,
    Feature,
    Goal,
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
    trials_at_once,
)
from omnidist_azure_ml.tables import NAME, native_state

SCHEMA = "https://azuremlschemas.azureedge.net/latest/sweepJob.schema.json"

TRIAL_KEYS = ("command", "code", "environment", "environment_variables", "distribution", "resources")
"""Command-job keys that describe one trial's program and nodes: they go under ``trial``."""

SWEEP_KEYS = ("display_name", "experiment_name", "description", "tags", "compute", "inputs", "queue_settings")
"""Command-job keys that stay on the sweep itself."""

ALGORITHMS: dict[Algorithm, str] = {Algorithm.BAYESIAN: "bayesian", Algorithm.GRID: "grid",
                                    Algorithm.RANDOM: "random"}
"""Portable algorithm -> ``sampling_algorithm``."""

ALGORITHM_NAMES: dict[str, Algorithm] = {v: k for k, v in ALGORITHMS.items()}
"""``sampling_algorithm`` -> portable algorithm (derived)."""

ALLOWED: dict[Algorithm, frozenset[str]] = {
    Algorithm.BAYESIAN: frozenset({"choice", "uniform", "quniform"}),
    Algorithm.GRID: frozenset({"choice"}),
    Algorithm.RANDOM: frozenset({"choice", "uniform", "loguniform", "randint"}),
}
"""Sampling algorithm -> the search-space expressions omnidist writes that it accepts."""

EARLY_TERMINATION = {"type": "median_stopping", "evaluation_interval": 1, "delay_evaluation": 0}
"""The portable ``early_stopping: true``: Azure's median stopping policy, checked at every interval."""

MAX_CHOICE_VALUES = 1000
"""The longest ``choice`` omnidist writes for an integer range that ``randint`` cannot express
(omnidist's limit, the same as Google's for discrete values; Azure documents none)."""

NATIVE_PATHS: dict[str, str] = {
    "max_trials": "limits.max_total_trials",
    "metric.name": "objective.primary_metric",
    "parallel_trials": "limits.max_concurrent_trials",
}
"""Portable tuning field -> where a sweep holds it (for error paths)."""

NATIVE_FIELDS: dict[str, str] = {"max": "max_value", "min": "min_value"}
"""Portable parameter field -> the search-space expression's (for error paths)."""

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLACEHOLDER = r"""(?P<quote>["']?)\$\{\{\s*search_space\.(?P<key>[A-Za-z0-9_]+)\s*\}\}(?P=quote)"""
_FLAG_EQUALS = re.compile(r"(?<!\S)--([A-Za-z_][A-Za-z0-9_-]*)=" + _PLACEHOLDER + r"(?!\S)")
_FLAG_SPACE = re.compile(r"(?<!\S)--([A-Za-z_][A-Za-z0-9_-]*)\s+" + _PLACEHOLDER + r"(?!\S)")
_ANY_PLACEHOLDER = re.compile(r"\$\{\{\s*search_space\.")


def _refuse(name: str, message: str, hint: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(Feature.TUNING, NAME, message, hint, subject=f"tuning.parameters.{name}")


def key_for(name: str) -> str:
    """The ``search_space`` key of a portable parameter: Azure keys take letters, digits and ``_``,
    so ``learning-rate`` is ``learning_rate`` there (its flag keeps the hyphen)."""
    return name.replace("-", "_")


# --- compile ------------------------------------------------------------------------------------


def _integer_to_native(name: str, parameter: Parameter, tuning: Tuning, notes: list[Note]) -> dict[str, Any]:
    low, high = parameter.min, parameter.max
    if low == 0 and parameter.scale is Scale.LINEAR and tuning.algorithm is Algorithm.RANDOM:
        return {"type": "randint", "upper": high + 1}
    count = high - low + 1
    if count > MAX_CHOICE_VALUES:
        raise _refuse(name, f"randint draws from 0 … upper-1 and only with random sampling, so {name} "
                      f"({low} … {high}) would be a choice of {count} values, more than omnidist writes "
                      f"({MAX_CHOICE_VALUES}).", "Start the range at 0 with algorithm: random, narrow it, or use "
                      "type: double and round in the program.")
    why = ("randint starts at 0" if tuning.algorithm is Algorithm.RANDOM
           else f"{ALGORITHMS[tuning.algorithm]} sampling takes no randint")
    if parameter.scale is not Scale.LINEAR:
        scale = parameter.scale.value.replace("_", " ")
        notes.append(Note(kind=NoteKind.CHANGED, field=f"tuning.parameters.{name}", message=(
            f"integer range {low} … {high} ({scale} scale) became a choice of its {count} values ({why}): they "
            f"are drawn evenly, not on a {scale} scale")))
    else:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"tuning.parameters.{name}", message=(
            f"integer range {low} … {high} became a choice of its {count} values ({why})")))
    return {"type": "choice", "values": list(range(int(low), int(high) + 1))}


def parameter_to_native(name: str, parameter: Parameter, tuning: Tuning, notes: list[Note]) -> dict[str, Any]:
    """One search-space expression, refused (exit 3) when the sampling algorithm cannot take it."""
    kind = parameter.type
    if kind is ParameterType.DOUBLE and parameter.scale is Scale.REVERSE_LOG:
        notes.append(Note(kind=NoteKind.CHANGED, field=f"tuning.parameters.{name}", message=(
            "scale: reverse_log became loguniform (Azure ML has no reverse log scale): values near min are now "
            "tried more often, not those near max")))
    if kind is ParameterType.DOUBLE and parameter.scale is not Scale.LINEAR:
        native: dict[str, Any] = {"type": "loguniform", "min_value": math.log(parameter.min),
                                  "max_value": math.log(parameter.max)}
    elif kind is ParameterType.DOUBLE:
        native = {"type": "uniform", "min_value": parameter.min, "max_value": parameter.max}
    elif kind is ParameterType.INTEGER:
        native = _integer_to_native(name, parameter, tuning, notes)
    else:
        native = {"type": "choice", "values": list(parameter.values)}
    algorithm = ALGORITHMS[tuning.algorithm]
    if native["type"] not in ALLOWED[tuning.algorithm]:
        takes = " and ".join(sorted(ALLOWED[tuning.algorithm]))
        raise _refuse(name, f"{algorithm} sampling takes only {takes}, and {name} ({parameter}) is a "
                      f"{native['type']}.", "Use algorithm: random, or list the values to try with type: discrete."
                      if tuning.algorithm is Algorithm.GRID else "Use algorithm: random, or scale: linear.")
    return native


def search_space(tuning: Tuning, notes: list[Note]) -> dict[str, Any]:
    """``search_space``, keyed by :func:`key_for`."""
    space: dict[str, Any] = {}
    for name, parameter in tuning.parameters.items():
        key = key_for(name)
        if key in space:
            raise _refuse(name, f"Azure search-space keys take letters, digits and '_', so {name} would share the "
                          f"key {key} with another parameter.", "Rename one of them.")
        space[key] = parameter_to_native(name, parameter, tuning, notes)
    return space


def command_with_flags(command: str, tuning: Tuning) -> str:
    """The trial command: the job's command and args, then ``--NAME=${{search_space.KEY}}`` each."""
    flags = [f"--{name}=${{{{search_space.{key_for(name)}}}}}" for name in tuning.parameters]
    return " ".join([command, *flags])


def sweep_job(compiled: CompiledJob, tuning: Tuning) -> CompiledJob:
    """The sweep job whose ``trial`` is ``compiled``'s command job."""
    command = compiled.request
    notes = list(compiled.diagnostics)
    space = search_space(tuning, notes)
    if tuning.early_stopping and tuning.algorithm is Algorithm.BAYESIAN:
        raise UnsupportedFeatureError(Feature.TUNING, NAME, "Bayesian sampling does not support early "
                                      "termination policies.", "Use algorithm: random, or early_stopping: false.",
                                      subject="tuning.early_stopping")
    trial = {key: command[key] for key in TRIAL_KEYS if key in command}
    trial["command"] = command_with_flags(command["command"], tuning)
    limits: dict[str, Any] = {"max_total_trials": tuning.max_trials, "max_concurrent_trials": tuning.parallel_trials}
    if "limits" in command:  # the job's timeout holds for each of its runs: each trial
        limits["trial_timeout"] = command["limits"]["timeout"]
    request: dict[str, Any] = {"$schema": SCHEMA, "type": "sweep"}
    request.update({key: command[key] for key in SWEEP_KEYS if key in command})
    request.update({"trial": trial, "search_space": space,
                    "objective": {"goal": tuning.metric.goal.value, "primary_metric": tuning.metric.name},
                    "limits": limits, "sampling_algorithm": ALGORITHMS[tuning.algorithm]})
    if tuning.early_stopping:
        request["early_termination"] = dict(EARLY_TERMINATION)
    if tuning.max_failed_trials:
        notes.append(Note(kind=NoteKind.DROPPED, field="tuning.max_failed_trials", message=(
            f"{tuning.max_failed_trials}: Azure ML sweeps have no limit on failed trials; the sweep runs them all")))
    return attrs.evolve(compiled, request=request, diagnostics=notes)


# --- import -------------------------------------------------------------------------------------


def recognizes(native: Any) -> bool:
    """True for a sweep job file."""
    return isinstance(native, Mapping) and str(native.get("type", "")).lower() == "sweep"


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping, got {value!r}", path=path)
    return value


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"expected a number, got {clipped_repr(value, 80)}", path=path)
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer past every float
        finite = False
    if not finite:
        raise ValidationError(f"expected a finite number, got {clipped_repr(value, 80)}", path=path)
    return value


def _exp(value: float, path: str) -> float:
    # exp(log(x)) is x to about 15 digits; 12 give back every bound people write.
    try:
        return float(f"{math.exp(value):.12g}")
    except OverflowError:
        raise ValidationError(f"e^{value:g} is past the largest number", path=path) from None


def _choice_to_parameter(values: Any, path: str, field: str, notes: list[Note]) -> Parameter:
    if not isinstance(values, list) or not values:
        raise ValidationError("expected a non-empty list of values", path=f"{path}.values")
    if any(isinstance(v, (Mapping, list)) for v in values):
        raise UnsupportedFeatureError(
            Feature.TUNING,
            PORTABLE,
            "a choice of nested search spaces has no portable form.",
            "Flatten it into separate parameters.",
            subject=f"{path}.values",
        )
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) == len(values):
        return Parameter(type="discrete", values=values)
    if len(numbers) or any(isinstance(v, bool) for v in values):
        notes.append(Note(kind=NoteKind.APPROXIMATED, field=field,
                          message="a choice mixing numbers and text became a categorical parameter of text values"))
    return Parameter(type="categorical", values=[str(v).lower() if isinstance(v, bool) else v for v in values])


def _spread(mu: float, sigma: float) -> tuple[float, float]:
    return mu - 3 * sigma, mu + 3 * sigma


def native_to_parameter(raw: Any, path: str, field: str, notes: list[Note]) -> Parameter:
    """One search-space expression -> a portable parameter (changes in distribution are noted)."""
    raw = _mapping(raw, path)
    kind = str(raw.get("type", "")).lower()

    def num(key: str) -> float:
        return _number(raw.get(key), f"{path}.{key}")

    def changed(message: str) -> None:
        notes.append(Note(kind=NoteKind.CHANGED, field=field, message=message))

    if kind == "choice":
        return _choice_to_parameter(raw.get("values"), path, field, notes)
    if kind == "uniform":
        return Parameter(type="double", min=num("min_value"), max=num("max_value"))
    if kind == "loguniform":
        return Parameter(type="double", min=_exp(num("min_value"), path), max=_exp(num("max_value"), path),
                         scale="log")
    if kind == "randint":
        upper = raw.get("upper")
        if isinstance(upper, bool) or not isinstance(upper, int) or upper < 1:
            raise ValidationError(f"expected a whole number >= 1, got {upper!r}", path=f"{path}.upper")
        return Parameter(type="integer", min=0, max=upper - 1)
    if kind in ("quniform", "qloguniform"):
        low, high, q = num("min_value"), num("max_value"), num("q")
        if kind == "quniform" and q == 1:
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=field, message=(
                f"quniform({low:g}, {high:g}, q=1) became an integer range: trials get whole numbers (3, not 3.0)")))
            return Parameter(type="integer", min=math.ceil(low - 0.5), max=math.floor(high + 0.5))
        changed(f"{kind}(…, q={q:g}) became a {'log-scaled ' if kind == 'qloguniform' else ''}double range: "
                f"values are no longer rounded to multiples of {q:g}")
        if kind == "qloguniform":
            return Parameter(type="double", min=_exp(low, path), max=_exp(high, path), scale="log")
        return Parameter(type="double", min=low, max=high)
    if kind in ("normal", "qnormal", "lognormal", "qlognormal"):
        low, high = _spread(num("mu"), num("sigma"))
        log = "log" in kind
        changed(f"{kind}(mu={num('mu'):g}, sigma={num('sigma'):g}) became a {'log-scaled ' if log else ''}double "
                "range over mu ± 3 sigma, drawn evenly instead of bell-shaped"
                + (" and no longer rounded to multiples of q" if kind.startswith("q") else ""))
        return Parameter(type="double", min=_exp(low, path) if log else low, max=_exp(high, path) if log else high,
                         scale="log" if log else "linear")
    raise ValidationError(
        f"{raw.get('type')!r} is not a search-space expression (choice, uniform, loguniform, "
        "quniform, qloguniform, normal, qnormal, lognormal, qlognormal, randint)",
        path=f"{path}.type",
    )


def strip_flags(command: str, keys: list[str], notes: list[Note]) -> tuple[str, dict[str, str]]:
    """Take the ``--NAME=${{search_space.KEY}}`` (or ``--NAME ${{…}}``) flags out of the trial command.

    Returns the command without them and search-space key -> portable parameter name (the flag's
    name, which is how the program receives the value).
    """
    found = sorted((m.start(), m.end(), m[1], m["key"], spaced) for pattern, spaced in
                   ((_FLAG_EQUALS, False), (_FLAG_SPACE, True)) for m in pattern.finditer(command))
    names: dict[str, str] = {}
    for _, _, flag, key, _ in found:
        if key in names:
            raise UnsupportedFeatureError(Feature.TUNING, PORTABLE, (
                f"the command passes search_space.{key} twice; a portable trial gets each value once, as "
                "--NAME=VALUE."), "Pass it once.", subject=f"trial.command (search_space.{key})")
        names[key] = flag
    tail = 0
    for token in reversed(command.split()):
        if not _FLAG_EQUALS.fullmatch(token):
            break
        tail += 1
    exact = tail == len(found) and not any(spaced for *_, spaced in found)
    for start, end, *_ in reversed(found):
        command = f"{command[:start].rstrip()} {command[end:].lstrip()}".strip()
    if _ANY_PLACEHOLDER.search(command):
        raise UnsupportedFeatureError(Feature.TUNING, PORTABLE, (
            "the command uses a ${{search_space.…}} value other than as a --FLAG value; portable trials get their "
            "values as --NAME=VALUE after the args."), "Pass each value as --NAME=${{search_space.NAME}}.",
                                      subject="trial.command")
    if not exact:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="args", message=(
            "the command passed search-space values as --NAME VALUE or before other arguments; portable trials "
            "get them as --NAME=VALUE after the args, which argparse-style programs read the same way")))
    for key in keys:
        if key not in names:
            notes.append(Note(kind=NoteKind.CHANGED, field=f"tuning.parameters.{key}", message=(
                f"the command does not pass search_space.{key} (Azure also sets AZUREML_SWEEP_{key}); portable "
                f"trials pass it as --{key}=VALUE after the args, so the program must accept that flag")))
    return command, names


def _algorithm(raw: Any, notes: list[Note]) -> Algorithm:
    extra: dict[str, Any] = {}
    if isinstance(raw, Mapping):
        extra = {k: v for k, v in raw.items() if k != "type"}
        raw = raw.get("type")
    name = str(raw or "").lower()
    if name not in ALGORITHM_NAMES:
        raise ValidationError(f"{raw!r} is not one of {', '.join(ALGORITHM_NAMES)}", path="sampling_algorithm")
    for key, value in extra.items():
        notes.append(Note(kind=NoteKind.DROPPED, field="tuning.algorithm",
                          message=f"sampling_algorithm.{key} ({value}) has no portable form"))
    return ALGORITHM_NAMES[name]


def _limits(raw: Any, notes: list[Note]) -> tuple[int, int, Optional[Any]]:
    limits = _mapping(raw, "limits")
    total = limits.get("max_total_trials")
    if isinstance(total, bool) or not isinstance(total, int):
        raise ValidationError(f"required: a whole number of trials, got {total!r}", path="limits.max_total_trials")
    parallel = limits.get("max_concurrent_trials")
    if parallel is None:
        parallel = 1
        notes.append(Note(kind=NoteKind.DEFAULTED, field="tuning.parallel_trials",
                          message="the sweep sets no max_concurrent_trials; 1 at a time"))
    if limits.get("timeout") is not None:
        notes.append(Note(kind=NoteKind.DROPPED, field="limits.timeout", message=(
            f"{limits['timeout']} for the whole sweep has no portable form (the job's timeout "
            "holds for each trial)")))
    return total, trials_at_once(total, parallel, "limits.max_concurrent_trials", notes), limits.get("trial_timeout")


def native_to_tuning(native: Mapping[str, Any], names: dict[str, str], notes: list[Note]) -> tuple[Tuning, Any]:
    """The sweep's search space, objective, limits, algorithm and early termination -> portable tuning,
    plus the per-trial timeout (the portable job's ``timeout``)."""
    space = _mapping(native.get("search_space"), "search_space")
    if not space:
        raise ValidationError("required: the parameters to sweep", path="search_space")
    parameters: dict[str, Parameter] = {}
    for key, raw in space.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValidationError("search-space keys take letters, digits and '_'", path=f"search_space.{key}")
        name = names.get(key, key)
        if not PARAMETER_NAME.match(name):
            raise UnsupportedFeatureError(Feature.TUNING, PORTABLE, "the flag is not a portable parameter "
                                          "name.", "Name the flag with letters, digits, '_' or '-'.",
                                          subject=f"trial.command --{name}")
        if name != key and key_for(name) != key:
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"tuning.parameters.{name}", message=(
                f"search_space.{key} became parameter {name}, the flag the command passes it as")))
        try:
            parameters[name] = native_to_parameter(raw, f"search_space.{key}", f"tuning.parameters.{name}", notes)
        except ValidationError as exc:
            raise ValidationError([p if p.path.startswith("search_space") else
                                   attrs.evolve(p, path=f"search_space.{key}.{NATIVE_FIELDS.get(p.path, p.path)}")
                                   for p in exc.problems]) from None
    objective = _mapping(native.get("objective"), "objective")
    goal = str(objective.get("goal", "")).lower()
    if goal not in {g.value for g in Goal}:
        raise ValidationError(f"{objective.get('goal')!r} is not maximize or minimize", path="objective.goal")
    algorithm = _algorithm(native.get("sampling_algorithm"), notes)
    total, parallel, trial_timeout = _limits(native.get("limits"), notes)
    stopping = native.get("early_termination")
    if stopping is not None:
        kind = str(_mapping(stopping, "early_termination").get("type", "")).lower()
        if kind != "median_stopping":
            notes.append(Note(kind=NoteKind.APPROXIMATED, field="tuning.early_stopping",
                              message=f"the {kind or 'unnamed'} policy became median-style early stopping"))
    try:
        tuning = Tuning(metric={"name": objective.get("primary_metric"), "goal": goal}, parameters=parameters,
                        algorithm=algorithm, max_trials=total, parallel_trials=parallel,
                        early_stopping=stopping is not None)
    except ValidationError as exc:
        raise ValidationError([attrs.evolve(p, path=NATIVE_PATHS.get(p.path, p.path),
                                            message=f"{p.message} (read as the portable tuning.{p.path})")
                               for p in exc.problems]) from None
    return tuning, trial_timeout


def sweep_to_command(native: Mapping[str, Any], trial_timeout: Any, command: str) -> dict[str, Any]:
    """The command job a sweep runs for each trial (its command without the search-space flags)."""
    trial = _mapping(native.get("trial"), "trial")
    unknown = sorted(set(trial) - set(TRIAL_KEYS) - {"queue_settings"})
    if unknown:
        raise ValidationError(f"unknown key; a trial has {', '.join(TRIAL_KEYS)}", path=f"trial.{unknown[0]}")
    job: dict[str, Any] = {"type": "command"}
    job.update({key: native[key] for key in (*SWEEP_KEYS, "name", "outputs", "identity", "services")
                if key in native})
    job.update({key: trial[key] for key in TRIAL_KEYS if key in trial})
    if "resources" in native and "resources" not in trial:
        job["resources"] = native["resources"]
    job["command"] = command
    if trial_timeout is not None:
        job["limits"] = {"timeout": trial_timeout}
    return job


def import_sweep(native: Mapping[str, Any], import_command: Callable[[Any], tuple[DistributedJob, tuple[Note, ...]]]
                 ) -> tuple[DistributedJob, tuple[Note, ...]]:
    """A sweep job file -> the portable job with ``tuning``.

    Args:
        native: the sweep job (as parsed from YAML).
        import_command: imports a command job file (:func:`.importer.import_command_job`).
    """
    notes: list[Note] = []
    trial = _mapping(native.get("trial"), "trial")
    command = trial.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ValidationError("required: the command each trial runs", path="trial.command")
    space = native.get("search_space")
    keys = list(space) if isinstance(space, Mapping) else []
    command, names = strip_flags(command, keys, notes)
    tuning, trial_timeout = native_to_tuning(native, names, notes)
    try:
        job, command_notes = import_command(sweep_to_command(native, trial_timeout, command))
    except ValidationError as exc:
        raise ValidationError([p.prefixed("trial") if p.path.split(".")[0] in TRIAL_KEYS else p
                               for p in exc.problems], source=exc.source) from None
    return attrs.evolve(job, tuning=tuning), (*command_notes, *notes)


# --- follow: the trials of a submitted sweep -----------------------------------------------------------


@attrs.frozen(kw_only=True)
class ChildRun:
    """What the run history says of one trial (a child run of the sweep)."""

    run_id: str
    status: str
    message: str = ""
    value: Optional[float] = None
    """The last value the trial logged for the primary metric."""
    step: Optional[int] = None


def flag_names(command: str) -> dict[str, str]:
    """Search-space key -> the flag that passes it (``learning_rate`` -> ``learning-rate``)."""
    return {m["key"]: m[1] for pattern in (_FLAG_EQUALS, _FLAG_SPACE) for m in pattern.finditer(command or "")}


def _child_order(parent: str, run_id: str) -> tuple[int, str]:
    """Child runs are ``<sweep>_<index>``: by index, others after them by id."""
    index = run_id[len(parent) + 1:] if run_id.startswith(parent + "_") else ""
    return (int(index), "") if index.isdigit() else (1 << 30, run_id)


def child_parameters(parent_tags: Mapping[str, Any], run_id: str, space: Sequence[str],
                     names: Mapping[str, str]) -> list[tuple[str, Any]]:
    """A child run's values, by portable name in the search space's order.

    The sweep records each child's values in its own tags as ``<child run id>: <JSON object>``
    (HyperDrive's convention, which its SDK reads them back by), keyed by search-space key or, in
    older sweeps, by ``--flag``."""
    try:
        raw = json.loads(parent_tags.get(run_id) or "{}")
    except (TypeError, ValueError):
        return []
    if not isinstance(raw, Mapping):
        return []
    values = {str(key).lstrip("-"): value for key, value in raw.items()}
    keys = [k for k in space if k in values] + [k for k in values if k not in space]
    return [(names.get(key, key), values[key]) for key in keys]


def trials_of(parent: str, tags: Mapping[str, Any], command: str, space: Sequence[str], goal: str,
              children: Sequence[ChildRun]) -> tuple[tuple[Trial, ...], Optional[Trial]]:
    """A sweep's child runs -> its trials (in the order the sweep made them) and the best one.

    Args:
        parent: the sweep's name.
        tags: the sweep's tags (where each child's values are).
        command: the trial command (its flags name the portable parameters).
        space: the search-space keys, in order.
        goal: the objective's goal (``maximize`` / ``minimize``, any case).
        children: the child runs.
    """
    names = flag_names(command)
    trials = tuple(Trial(id=child.run_id, state=native_state(child.status),
                         parameters=child_parameters(tags, child.run_id, space, names), value=child.value,
                         step=child.step, message=child.message)
                   for child in sorted(children, key=lambda c: _child_order(parent, c.run_id)))
    return trials, best_trial(trials, maximize=str(goal).lower() != "minimize")
