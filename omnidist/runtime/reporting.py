"""``report()``: training code tells the platform's tuner how a trial is doing (SPEC §8).

Standard library only (``mlflow`` is imported where the platform's tuner reads it, when it is
there). Where the metrics go, the first that applies wins:

1. ``OMNIDIST_METRICS_FILE`` is set (``omnidist run`` sets it for each local trial): one JSON
   object per line, ``{"metrics": {...}, "step": …, "trial": …, "time": …}``, appended.
2. A platform whose module says ``METRICS = "hypertune"``, or
   ``CLOUD_ML_HP_METRIC_FILE`` / ``CLOUD_ML_TRIAL_ID`` is set: the file that platform's tuning
   service reads, written exactly as the ``cloudml-hypertune`` package writes it: ``$CLOUD_ML_HP_METRIC_FILE`` (default
   ``/tmp/hypertune/output.metrics``) is rewritten on every report with this process's last 100
   entries, one JSON object per line with sorted keys: ``{"<metric>": "0.91", "checkpoint_path": "",
   "global_step": "100", "timestamp": 1525851440.12, "trial": "3"}`` (values as strings, ``trial``
   from ``CLOUD_ML_TRIAL_ID``, default ``"0"``), one entry per metric (cloudml-hypertune 0.1.0.dev6).
3. A platform whose module says ``METRICS = "mlflow"``: ``mlflow.log_metric(name, value,
   step=step)``, which the sweep reads as its ``primary_metric``; without ``mlflow`` installed, a
   warning says so in the platform's words (its module's ``MLFLOW_MISSING``; nothing crashes).
4. A platform whose module says ``METRICS = "logs"``: one line per metric on standard
   output, ``[omnidist] metric accuracy=0.91 step=100``
   (:func:`omnidist.runtime.trials.metric_line`), which the tuner reads from the job's logs with the
   pattern the compiler gave it (:func:`omnidist.runtime.trials.metric_regex`).
5. Anywhere else nothing is listening: a warning, once.

The channels and the trial id are in :mod:`omnidist.runtime.trials`.
"""

from __future__ import annotations

import collections
import json
import os
import threading
import time
import warnings
from collections.abc import Mapping
from typing import Any, Optional

from omnidist.runtime import platforms
from omnidist.runtime.detect import context
from omnidist.runtime.trials import (
    HYPERTUNE,
    HYPERTUNE_DEFAULT_FILE,
    HYPERTUNE_FILE,
    HYPERTUNE_KEEP,
    HYPERTUNE_TRIAL,
    LOGS,
    METRICS_FILE,
    MLFLOW,
    metric_line,
)

_entries: dict[str, collections.deque] = {}
_lock = threading.Lock()


def _checked(step: Any, metrics: Mapping[str, Any]) -> dict[str, float]:
    if not metrics:
        raise ValueError("report() needs at least one metric, e.g. report(accuracy=0.91, step=100)")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
        raise ValueError(f"report(step=…) takes a whole number >= 0, got {step!r}")
    values = {}
    for name, value in metrics.items():
        if isinstance(value, bool):
            raise TypeError(f"report({name}=…) takes a number, got {value!r}")
        if not isinstance(value, (int, float)):
            try:  # numpy and torch scalars convert; text and containers do not
                value = float(value)
            except (TypeError, ValueError):
                raise TypeError(f"report({name}=…) takes a number, got {value!r}") from None
        values[name] = float(value)
    return values


def _warn(message: str) -> None:
    warnings.warn(f"omnidist.runtime.reporting: {message}", RuntimeWarning, stacklevel=3)


def write_local(path: str, metrics: dict[str, float], step: Optional[int], trial: Optional[str]) -> None:
    """Append one JSON line to a local trial's metrics file."""
    line = json.dumps({"metrics": metrics, "step": step, "trial": trial, "time": time.time()})
    with _lock, open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def write_hypertune(env: Mapping[str, str], metrics: dict[str, float], step: Optional[int]) -> str:
    """Write the metrics as cloudml-hypertune does; returns the file's path."""
    path = env.get(HYPERTUNE_FILE) or HYPERTUNE_DEFAULT_FILE
    trial = str(env.get(HYPERTUNE_TRIAL, 0))
    with _lock:
        entries = _entries.setdefault(path, collections.deque(maxlen=HYPERTUNE_KEEP))
        for name, value in metrics.items():
            entries.append({"timestamp": time.time(), "trial": trial, name: str(value),
                            "global_step": str(int(step) if step else 0), "checkpoint_path": ""})
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            for entry in entries:
                fh.write(json.dumps(entry, sort_keys=True) + "\n")
    return path


MLFLOW_MISSING = "the platform's tuner cannot see {metrics}; add mlflow to the job's environment"
"""What the warning says without mlflow, unless the platform's module says it its own way."""


def log_mlflow(metrics: dict[str, float], step: Optional[int], missing: str = MLFLOW_MISSING) -> bool:
    """``mlflow.log_metric`` each metric; False (and a warning, ``missing`` with ``{metrics}``
    filled in) when mlflow is not installed."""
    try:
        import mlflow
    except ImportError:
        _warn("mlflow is not installed, so " + missing.format(metrics=", ".join(metrics)))
        return False
    for name, value in metrics.items():
        mlflow.log_metric(name, value, step=step)
    return True


def print_metrics(metrics: dict[str, float], step: Optional[int]) -> None:
    """One :func:`~omnidist.runtime.trials.metric_line` per metric on standard output, flushed (a
    tuner reading the logs sees it while the trial runs)."""
    import sys

    with _lock:
        for name, value in metrics.items():
            sys.stdout.write(metric_line(name, value, step) + "\n")
        sys.stdout.flush()


def report(step: Optional[int] = None, **metrics: float) -> str:
    """Report metrics of this trial to the platform's tuner (see the module docstring for where).

    Args:
        step: the training step (or epoch) the values belong to.
        **metrics: name -> number, e.g. ``accuracy=0.91``; the tuning block's ``metric.name``
            is the one the tuner optimizes.

    Returns:
        Where the metrics went: ``local``, ``hypertune``, ``mlflow``, ``logs`` or ``none``.

    Raises:
        ValueError: no metric, or a bad ``step``.
        TypeError: a value is not a number.
        RuntimeEnvError: a platform variable is malformed (as :func:`omnidist.runtime.view`).

    Example:
        >>> from omnidist.runtime import report
        >>> report(accuracy=0.91, step=100)  # doctest: +SKIP
        'hypertune'
    """
    values = _checked(step, metrics)
    env = os.environ
    ctx = context(env)
    module = platforms.named(ctx.platform)
    channel = getattr(module, "METRICS", None)
    if env.get(METRICS_FILE):
        write_local(env[METRICS_FILE], values, step, ctx.trial)
        return "local"
    if channel == HYPERTUNE or env.get(HYPERTUNE_FILE) or env.get(HYPERTUNE_TRIAL):
        write_hypertune(env, values, step)
        return HYPERTUNE
    if channel == MLFLOW:
        return MLFLOW if log_mlflow(values, step, getattr(module, "MLFLOW_MISSING", MLFLOW_MISSING)) else "none"
    if channel == LOGS:
        print_metrics(values, step)
        return LOGS
    listening = ", ".join(m.NAME for m in platforms.modules() if getattr(m, "METRICS", None))
    _warn(f"no tuner is listening here (platform {ctx.platform}); {', '.join(values)} not recorded. "
          f"Inside omnidist run it is, and on these platforms: {listening}.")
    return "none"
