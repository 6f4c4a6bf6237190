"""Local tuning: ``omnidist run`` of a job with a ``tuning`` block runs its trials on this machine.

Each trial is the job itself, emulated as :mod:`omnidist.local.runner` runs any job (one process
per replica, the chosen platform's environment), with the trial's values appended to every
replica's argv as ``--NAME=VALUE`` and its identity in the environment: ``OMNIDIST_TRIAL`` and
``OMNIDIST_METRICS_FILE`` (where :func:`omnidist.runtime.reporting` writes), plus what the emulated
platform would set (``task.trial`` in ``CLUSTER_SPEC``/``TF_CONFIG`` and ``CLOUD_ML_TRIAL_ID`` on
the platforms with a cluster spec, a per-parameter variable on others). A trial's ``cloudml-hypertune``
file (``CLOUD_ML_HP_METRIC_FILE``) is read too, so code that reports through ``hypertune``
directly tunes locally as well.

Optuna picks the values (imported lazily; ``pip install 'omnidist[tuning]'``): ``bayesian`` is
its TPE sampler, ``random`` and ``grid`` its samplers of those names; ``early_stopping`` is its
median pruner, fed with the steps trials report while they run. ``parallel_trials`` trials run at
a time; the trial's objective is the last value it reported for the metric. A failed trial (or
one that reported nothing) counts against ``max_failed_trials``; reaching it stops the search.
Ctrl-C (or SIGTERM) stops every trial's process groups and leaves nothing behind.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import IO, Any, Optional

import attrs

from omnidist.backend.values import Note, NoteKind
from omnidist.errors import ConfigError, UnsupportedFeatureError
from omnidist.local import plan, runner
from omnidist.local.plan import ReplicaSpec
from omnidist.model.features import Feature
from omnidist.model.job import DistributedJob
from omnidist.model.tuning import RANGE_TYPES, Algorithm, Goal, ParameterType, Scale, Tuning
from omnidist.runtime import platforms
from omnidist.runtime.trials import HYPERTUNE_FILE, METRICS_FILE, TRIAL

EXTRA = "omnidist[tuning]"
"""The optional extra that installs Optuna."""

SAMPLERS = {Algorithm.BAYESIAN: "TPESampler", Algorithm.GRID: "GridSampler", Algorithm.RANDOM: "RandomSampler"}
"""Portable algorithm -> the Optuna sampler that runs it locally."""

GRID_TYPES = frozenset({ParameterType.INTEGER, ParameterType.DISCRETE, ParameterType.CATEGORICAL})
"""Grid search needs finitely many values per parameter (as on the clouds that run grids)."""

POLL_SECONDS = 0.1
"""How often the search looks at running trials (their reports, Ctrl-C)."""


class _Terminated(Exception):
    """SIGTERM reached the search."""


@attrs.frozen(kw_only=True)
class TrialResult:
    """How one trial ended: its values, state (succeeded, failed, pruned, stopped), objective."""

    number: int
    params: dict[str, Any]
    state: str
    value: Optional[float] = None
    exit_code: Optional[int] = None
    message: str = ""


@attrs.frozen(kw_only=True)
class StudyResult:
    """How the search ended: every trial, the best, and the exit code ``omnidist run`` returns."""

    trials: tuple[TrialResult, ...]
    best: Optional[TrialResult]
    exit_code: int
    interrupted: bool = False
    message: str = ""


@attrs.define
class _Running:
    number: int
    trial: Any
    params: dict[str, Any]
    specs: list[ReplicaSpec]
    metrics: tuple[str, str]
    procs: list = attrs.field(factory=list)
    steps: set = attrs.field(factory=set)
    stopped: str = ""
    killed: bool = False


# --- what runs ------------------------------------------------------------------------------------


def optuna_module() -> Any:
    """Optuna, or a clear error naming the extra that installs it."""
    try:
        import optuna
    except ImportError:
        raise ConfigError(f"local tuning runs its trials with Optuna, which is not installed: "
                          f"pip install '{EXTRA}' (or pip install optuna)") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def check(tuning: Tuning) -> None:
    """Exit 3 for what the local search cannot run."""
    if tuning.algorithm is Algorithm.GRID:
        for name, parameter in tuning.parameters.items():
            if parameter.type not in GRID_TYPES:
                raise UnsupportedFeatureError(
                    Feature.TUNING, "local", f"grid search needs finitely many values, and {name} is "
                    f"a {parameter.type.value} range.", "Use algorithm: random or bayesian, or list the values "
                    "to try with type: discrete.", subject=f"tuning.parameters.{name}")


def grid(tuning: Tuning) -> dict[str, list[Any]]:
    """Every value of every parameter (grid search)."""
    return {name: list(range(p.min, p.max + 1)) if p.type is ParameterType.INTEGER else list(p.values)
            for name, p in tuning.parameters.items()}


def trial_count(tuning: Tuning) -> int:
    """``max_trials``, or fewer when a grid has fewer points."""
    if tuning.algorithm is not Algorithm.GRID:
        return tuning.max_trials
    return min(tuning.max_trials, math.prod(len(v) for v in grid(tuning).values()))


def make_study(optuna: Any, tuning: Tuning) -> Any:
    """An in-memory Optuna study with the sampler and pruner the tuning block asks for."""
    samplers = optuna.samplers
    if tuning.algorithm is Algorithm.GRID:
        sampler = samplers.GridSampler(grid(tuning))
    elif tuning.algorithm is Algorithm.RANDOM:
        sampler = samplers.RandomSampler()
    else:  # several trials at a time: TPE assumes the running ones did badly, so it spreads them out
        sampler = samplers.TPESampler(constant_liar=tuning.parallel_trials > 1)
    pruner = optuna.pruners.MedianPruner() if tuning.early_stopping else optuna.pruners.NopPruner()
    direction = "maximize" if tuning.metric.goal is Goal.MAXIMIZE else "minimize"
    return optuna.create_study(direction=direction, sampler=sampler, pruner=pruner)


def suggest(trial: Any, tuning: Tuning) -> dict[str, Any]:
    """The trial's values, one per parameter."""
    values: dict[str, Any] = {}
    for name, p in tuning.parameters.items():
        log = p.scale is not Scale.LINEAR
        if p.type in RANGE_TYPES and p.scale is Scale.REVERSE_LOG and tuning.algorithm is not Algorithm.GRID:
            # optuna has no reverse log scale: draw on a log scale, then mirror it (min + max - x), so
            # values near max come up as often as log puts them near min
            suggest_range = trial.suggest_float if p.type is ParameterType.DOUBLE else trial.suggest_int
            values[name] = p.min + p.max - suggest_range(f"{name} (mirrored)", p.min, p.max, log=True)
        elif p.type is ParameterType.DOUBLE:
            values[name] = trial.suggest_float(name, p.min, p.max, log=log)
        elif p.type is ParameterType.INTEGER:
            values[name] = trial.suggest_int(name, p.min, p.max, log=log)
        else:
            values[name] = trial.suggest_categorical(name, list(p.values))
    return values


def flags(params: dict[str, Any]) -> tuple[str, ...]:
    """``--NAME=VALUE`` for each value, as every cloud passes them."""
    return tuple(f"--{name}={value}" for name, value in params.items())


def trial_env(env: dict[str, str], emulate: str, trial_id: str, params: dict[str, Any],
              metrics: tuple[str, str]) -> dict[str, str]:
    """What a trial's replica gets on top of the job's environment: where to report, and the
    trial's identity as the emulated platform would give it (its module's ``emulate_trial``)."""
    env = {**env, TRIAL: trial_id, METRICS_FILE: metrics[0], HYPERTUNE_FILE: metrics[1]}
    hook = getattr(platforms.named(emulate), "emulate_trial", None)
    return hook(env, trial_id, params) if hook is not None else env


def trial_specs(job: DistributedJob, settings: Any, number: int, params: dict[str, Any],
                metrics: tuple[str, str]) -> list[ReplicaSpec]:
    """The processes of one trial: the job's replicas, with the values and the trial's variables."""
    specs = plan.build(job, settings, runner.free_ports(plan.replica_count(job)))
    trial_id = str(number)
    return [attrs.evolve(s, argv=(*s.argv, *flags(params)),
                         env=trial_env(s.env, settings.emulate, trial_id, params, metrics)) for s in specs]


def read_reports(paths: tuple[str, str], metric: str) -> list[tuple[Optional[int], float]]:
    """``(step, value)`` of every report of ``metric`` so far: the local JSON lines, then the
    hypertune file. A line being written (not yet whole) is skipped until it is."""
    found: list[tuple[Optional[int], float]] = []
    local, hypertune = paths
    for path, read in ((local, _local_entry), (hypertune, _hypertune_entry)):
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                entry = read(json.loads(line), metric)
            except (ValueError, TypeError, AttributeError):
                continue
            if entry is not None:
                found.append(entry)
    return found


def _local_entry(data: dict, metric: str) -> Optional[tuple[Optional[int], float]]:
    value = data["metrics"].get(metric)
    return None if value is None else (data.get("step"), float(value))


def _hypertune_entry(data: dict, metric: str) -> Optional[tuple[Optional[int], float]]:
    value = data.get(metric)
    return None if value is None else (int(data.get("global_step") or 0), float(value))


# --- output ---------------------------------------------------------------------------------------


class _Prefixed:
    """A text stream that prefixes each whole line with the trial and writes it through tqdm, so
    the progress bar stays intact."""

    def __init__(self, prefix: str, target: IO[str]):
        self.prefix, self.target, self.pending = prefix, target, ""
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        from tqdm import tqdm

        with self.lock:
            self.pending += text
            *lines, self.pending = self.pending.split("\n")
        for line in lines:
            tqdm.write(f"{self.prefix}{line}", file=self.target)
        return len(text)

    def flush(self) -> None:
        self.target.flush()


def _shown(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def table(tuning: Tuning, trials: tuple[TrialResult, ...]) -> str:
    """The trials as a text table: number, state, metric, values."""
    names = list(tuning.parameters)
    header = ("trial", "state", tuning.metric.name, *names)
    rows = [(str(t.number), t.state, "" if t.value is None else _shown(t.value),
             *(_shown(t.params[n]) for n in names)) for t in trials]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])


# --- the search -----------------------------------------------------------------------------------


def describe(job: DistributedJob) -> dict[str, Any]:
    """What ``omnidist compile --backend local`` shows of the search (no Optuna needed)."""
    tuning = job.tuning
    return {"sampler": f"optuna.samplers.{SAMPLERS[tuning.algorithm]}", "trials": trial_count(tuning),
            "parallel_trials": tuning.parallel_trials, "metric": tuning.metric.name,
            "goal": tuning.metric.goal.value, "early_stopping": tuning.early_stopping,
            "parameters": {n: str(p) for n, p in tuning.parameters.items()},
            "argv_appended": [f"--{n}=VALUE" for n in tuning.parameters]}


class _Search:
    """One local search: launches trials, watches their reports, ends them, keeps the results."""

    def __init__(self, job: DistributedJob, settings: Any, out: IO[str], err: IO[str], progress: Optional[bool]):
        self.job, self.settings, self.out, self.err = job, settings, out, err
        self.tuning: Tuning = job.tuning
        self.optuna = optuna_module()
        self.study = make_study(self.optuna, self.tuning)
        self.total = trial_count(self.tuning)
        self.folder = tempfile.mkdtemp(prefix=f"omnidist-{job.name}-")
        self.results: list[TrialResult] = []
        self.running: dict[Future, _Running] = {}
        self.failures = 0
        self.progress = progress

    def run(self) -> StudyResult:
        from omnidist.submission.progress import tqdm_class

        tqdm = tqdm_class()  # a notebook without ipywidgets gets text

        interrupted, code, message = False, 0, ""
        pool = ThreadPoolExecutor(max_workers=self.tuning.parallel_trials, thread_name_prefix="trial")
        previous = signal.signal(signal.SIGTERM, _on_sigterm) if _main_thread() else None
        bar = tqdm(total=self.total, desc=f"{self.job.name} trials", unit="trial", file=self.err,
                   disable=None if self.progress is None else not self.progress, leave=True)
        try:
            launched = 0
            while (launched < self.total and not message) or self.running:
                while launched < self.total and len(self.running) < self.tuning.parallel_trials and not message:
                    launched += 1
                    self._launch(pool, launched)
                done, _ = wait(list(self.running), timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                self._watch_reports()
                for future in done:
                    self._finish(future, self.running.pop(future))
                    bar.update(1)
                    best = self._best()
                    if best is not None:
                        bar.set_postfix_str(
                            f"best {self.tuning.metric.name}={_shown(best.value)} (trial {best.number})"
                        )
                limit = self.tuning.max_failed_trials
                if limit and self.failures >= limit and not message:
                    message = f"{self.failures} trials failed (max_failed_trials: {limit}); stopping the search"
                    code = 1
                if message:  # every pass: a trial that was still starting is stopped once it has started
                    self._stop_all("stopped")
        except (KeyboardInterrupt, _Terminated) as exc:
            interrupted, code = True, 143 if isinstance(exc, _Terminated) else 130
            message = "terminated" if code == 143 else "interrupted"
            message += "; stopping every trial"
            bar.clear()
            self.err.write(f"omnidist: {message}\n")
            self._drain()
        except BaseException:  # a bug or a broken machine: leave no trial running behind the error
            self._stop_all("stopped")
            raise
        finally:
            bar.close()
            pool.shutdown(wait=True)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            shutil.rmtree(self.folder, ignore_errors=True)
        best = self._best()
        if not interrupted and best is None:
            code, message = 1, message or f"no trial reported {self.tuning.metric.name}"
        trials = tuple(sorted(self.results, key=lambda t: t.number))
        return StudyResult(trials=trials, best=best, exit_code=code, interrupted=interrupted, message=message)

    def _launch(self, pool: ThreadPoolExecutor, number: int) -> None:
        trial = self.study.ask()
        params = suggest(trial, self.tuning)
        metrics = (os.path.join(self.folder, f"trial-{number}.jsonl"),
                   os.path.join(self.folder, f"trial-{number}.hypertune"))
        specs = trial_specs(self.job, self.settings, number, params, metrics)
        running = _Running(number=number, trial=trial, params=params, specs=specs, metrics=metrics)
        future = pool.submit(self._run_trial, running)
        self.running[future] = running

    def _run_trial(self, running: _Running) -> runner.RunResult:
        prefix = f"[trial-{running.number}] "
        return runner.run(running.specs, out=_Prefixed(prefix, self.out), err=_Prefixed(prefix, self.err),
                          grace=self.settings.grace_period, on_start=running.procs.extend, masked=True)

    def _watch_reports(self) -> None:
        """Feed the metric's intermediate values to the pruner; stop trials it prunes."""
        if not self.tuning.early_stopping:
            return
        for running in list(self.running.values()):
            if running.stopped:
                continue
            for index, (step, value) in enumerate(read_reports(running.metrics, self.tuning.metric.name)):
                step = index if step is None else step
                if step not in running.steps:
                    running.steps.add(step)
                    running.trial.report(value, step)
            if running.steps and running.trial.should_prune():
                running.stopped = "pruned"
                self._stop(running)

    def _finish(self, future: Future, running: _Running) -> None:
        """Record a finished trial and tell Optuna how it went."""
        state_of = self.optuna.trial.TrialState
        try:
            ended = future.result()
            code, error = ended.exit_code, ""
        except Exception as exc:  # a trial that could not even start is a failed trial
            code, error = 1, f"{type(exc).__name__}: {exc}"
        reports = read_reports(running.metrics, self.tuning.metric.name)
        value = reports[-1][1] if reports else None
        if running.stopped:
            state, message = running.stopped, ""
            self._tell(running.trial, state=state_of.PRUNED if state == "pruned" else state_of.FAIL)
        elif code == 0 and value is not None and math.isfinite(value):
            state, message = "succeeded", ""
            self._tell(running.trial, value)
        else:
            state = "failed"
            message = error or (f"exit code {code}" if code else f"reported no {self.tuning.metric.name}")
            self.failures += 1
            self._tell(running.trial, state=state_of.FAIL)
            from tqdm import tqdm

            tqdm.write(f"omnidist: trial {running.number} failed: {message}", file=self.err)
        self.results.append(TrialResult(number=running.number, params=running.params, state=state,
                                        value=value if state != "failed" else None,
                                        exit_code=code, message=message))

    def _tell(self, trial: Any, *values: float, **state: Any) -> None:
        try:
            self.study.tell(trial, *values, **state)
        except RuntimeError as exc:
            # GridSampler asks the study to stop once its grid is used up, which Optuna allows only
            # inside study.optimize; the trial is recorded either way, and this search stops on its
            # own count (trial_count).
            if "Study.stop" not in str(exc):
                raise

    def _best(self) -> Optional[TrialResult]:
        done = [t for t in self.results if t.state == "succeeded"]
        if not done:
            return None
        pick = max if self.tuning.metric.goal is Goal.MAXIMIZE else min
        return pick(done, key=lambda t: t.value)

    def _stop(self, running: _Running) -> None:
        """Stop a trial's replicas (once they have all started: the runner reports them together)."""
        if running.procs and not running.killed:
            running.killed = True
            runner.stop_all(running.procs, self.settings.grace_period)

    def _stop_all(self, why: str) -> None:
        for running in self.running.values():
            running.stopped = running.stopped or why
            self._stop(running)

    def _drain(self) -> None:
        """After Ctrl-C: stop every trial (including one that starts meanwhile) and wait for them."""
        ignore = _main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if ignore else None
        if ignore:  # a second Ctrl-C or SIGTERM must not cut the cleanup short
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            while self.running:
                self._stop_all("stopped")
                done, _ = wait(list(self.running), timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in done:
                    self._finish(future, self.running.pop(future))
        finally:
            if ignore:
                signal.signal(signal.SIGINT, previous)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


def search(job: DistributedJob, settings: Any, out: Optional[IO[str]] = None, err: Optional[IO[str]] = None,
           progress: Optional[bool] = None, *, show: Optional[Callable[[Note], None]] = None,
           notes: Sequence[Note] = ()) -> StudyResult:
    """Run the job's trials on this machine and return every trial and the best.

    Args:
        job: a job with a ``tuning`` block.
        settings: the local backend's settings (``emulate`` chosen, ``grace_period``…).
        out: where the trials' prefixed output and the final table go (default stdout).
        err: where the progress bar and omnidist's own lines go (default stderr).
        progress: show the progress bar (default: when ``err`` is a terminal).
        show: prints one note (default: ``omnidist: note: MESSAGE`` on ``err``).
        notes: notes to show before the run's own (the emulation chosen).

    Raises:
        ValidationError: the job cannot run locally (e.g. no command).
        UnsupportedFeatureError: grid search over a double range.
        ConfigError: Optuna is not installed.
    """
    out, err = out or sys.stdout, err or sys.stderr
    check(job.tuning)
    plan.build(job, settings, range(plan.PREVIEW_PORT, plan.PREVIEW_PORT + plan.replica_count(job)))  # fail early
    show = show or (lambda note: err.write(f"omnidist: note: {note.message}\n"))
    for note in [*notes, *plan.notes(job, settings)]:
        show(note)
    if job.tuning.algorithm is Algorithm.BAYESIAN:
        show(Note(kind=NoteKind.APPROXIMATED, field="tuning.algorithm",
                  message="bayesian search runs locally as Optuna's TPE sampler"))
    err.flush()
    started = time.monotonic()
    result = _Search(job, settings, out, err, progress).run()
    if result.trials:
        out.write(table(job.tuning, result.trials) + "\n")
    best = result.best
    if best is not None:
        values = " ".join(f"--{k}={v}" for k, v in best.params.items())
        out.write(f"best: trial {best.number}, {job.tuning.metric.name}={_shown(best.value)}: {values}\n")
    if result.message and not result.interrupted:  # an interruption was said when it happened
        err.write(f"omnidist: {result.message}\n")
    err.write(f"omnidist: {len(result.trials)} trials in {time.monotonic() - started:.1f}s\n")
    out.flush()
    err.flush()
    return result


def run(job: DistributedJob, settings: Any, out: Optional[IO[str]] = None,
        err: Optional[IO[str]] = None, *, show: Optional[Callable[[Note], None]] = None,
        notes: Sequence[Note] = ()) -> runner.RunResult:
    """:func:`search`, as ``omnidist run`` reports it: the exit code of the search."""
    result = search(job, settings, out, err, show=show, notes=notes)
    return runner.RunResult(result.exit_code, failed=None, interrupted=result.interrupted)
