"""Tuning trials inside the container (standard library only): which trial this process is, and
the metric channels each platform's tuner reads (a platform module's ``METRICS``).

:func:`trial_id` is how ``context().trial`` is found on every platform; :mod:`omnidist.runtime.reporting`
writes to the channels named here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Optional

from omnidist.runtime import platforms

METRICS_FILE = "OMNIDIST_METRICS_FILE"
"""Where a local trial's reports go (set by ``omnidist run`` for each trial)."""


TRIAL = "OMNIDIST_TRIAL"
"""The local trial's id (set by ``omnidist run`` for each trial)."""


HYPERTUNE_FILE = "CLOUD_ML_HP_METRIC_FILE"
"""The metrics file a hypertune-based tuning service reads (cloudml-hypertune's variable)."""


HYPERTUNE_DEFAULT_FILE = "/tmp/hypertune/output.metrics"
"""cloudml-hypertune's default metrics file."""


HYPERTUNE_TRIAL = "CLOUD_ML_TRIAL_ID"
"""The trial id variable of a hypertune-based tuning service (read by cloudml-hypertune; default ``0``)."""


HYPERTUNE_KEEP = 100
"""Entries cloudml-hypertune keeps in the file (the newest)."""


HYPERTUNE = "hypertune"
"""A platform whose tuner reads cloudml-hypertune's file (its module's ``METRICS``)."""


MLFLOW = "mlflow"
"""A platform whose tuner reads MLflow metrics (its module's ``METRICS``)."""


def trial_id(env: Mapping[str, str], platform: str, found: Optional[str] = None) -> Optional[str]:
    """The hyperparameter-tuning trial this process belongs to, or ``None``.

    Args:
        env: the environment.
        platform: the detected platform.
        found: ``task.trial`` of ``CLUSTER_SPEC`` / ``TF_CONFIG``, where the platform put one.

    Sources, in order: ``task.trial`` (platforms with a cluster spec), ``OMNIDIST_TRIAL`` (local trials),
    ``CLOUD_ML_TRIAL_ID``, and the platform module's own ``trial_id(env)`` hook (such as a
    run id, when the process is a sweep trial).
    """
    if found:
        return found
    for name in (TRIAL, HYPERTUNE_TRIAL):
        if env.get(name):
            return env[name]
    hook = getattr(platforms.named(platform), "trial_id", None)
    return hook(env) if hook is not None else None


def hypertune_trial_env(env: Mapping[str, str], trial: str) -> dict[str, str]:
    """What a platform whose tuner reads the hypertune file gives a trial's process (for local
    emulation): ``CLOUD_ML_TRIAL_ID``, and ``task.trial`` in ``CLUSTER_SPEC`` / ``TF_CONFIG``."""
    found = {**env, HYPERTUNE_TRIAL: trial}
    for name in ("CLUSTER_SPEC", "TF_CONFIG"):
        if name in found:
            spec = json.loads(found[name])
            spec.setdefault("task", {})["trial"] = trial
            found[name] = json.dumps(spec)
    return found


LOGS = "logs"
"""A platform whose tuner reads metrics from the job's log lines with regular expressions (its
module's ``METRICS``): :func:`omnidist.runtime.reporting.report` prints :func:`metric_line`, and the
platform's compiler asks its tuner to match :func:`metric_regex`."""


METRIC_LINE_PREFIX = "[omnidist] metric"
"""How a metric line starts (what a log-reading tuner's pattern anchors on)."""


def metric_line(name: str, value: float, step: Optional[int] = None) -> str:
    """The log line that reports one metric: ``[omnidist] metric accuracy=0.91 step=100``."""
    return f"{METRIC_LINE_PREFIX} {name}={value!r}" + (f" step={step}" if step is not None else "")


def metric_regex(name: str) -> str:
    """The regular expression whose one group captures ``name``'s value in a :func:`metric_line`
    (the value runs to the next space; ``re`` and Java syntax alike)."""
    import re

    return re.escape(f"{METRIC_LINE_PREFIX} {name}=") + r"(\S+)"
