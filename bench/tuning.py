"""Local tuning overhead per trial: ``omnidist run`` of a tuning job against plain local runs of
the same job, measured side by side in one process.

Each trial of a local search is the job run as ``omnidist run`` runs any job (same runner, same
emulated environment), so what the search adds is Optuna's sampling, the trial's variables,
reading its metrics file and the bookkeeping. This script runs the same two-replica job
``--trials`` times plainly (through ``LocalBackend.run``) and as a search of ``--trials`` trials
one at a time (through ``omnidist.local.tuning.search``), alternating in ``--rounds`` rounds, and
prints the median per-run and per-trial wall times, their difference (the overhead) and ratio,
plus a search with ``parallel_trials: 4`` and the one-off cost of importing Optuna.

    .venv/bin/python bench/tuning.py [--trials 12] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

from omnidist import api
from omnidist.local import tuning

TRAIN = """\
import argparse
from omnidist.runtime import context, report
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--layers", type=int, default=2)
args, _ = parser.parse_known_args()
if context().role == "primary":
    report(accuracy=args.layers - abs(args.lr - 0.01), step=1)
"""

JOB = """\
name: bench-tune
framework: pytorch
command: [python, train.py]
primary: {}
workers: {replicas: 1}
tuning:
  metric: {name: accuracy, goal: maximize}
  parameters:
    lr: {type: double, min: 1.0e-4, max: 0.1, scale: log}
    layers: {type: integer, min: 1, max: 8}
  algorithm: bayesian
  max_trials: 12
  parallel_trials: 1
"""


def plain_runs(job, driver, settings, count: int) -> float:
    """Seconds per run of ``count`` plain local runs (the job without its tuning block)."""
    plain = attrs.evolve(job, tuning=None)
    started = time.perf_counter()
    for _ in range(count):
        result = driver.run(plain, settings, out=io.StringIO(), err=io.StringIO())
        assert result.exit_code == 0
    return (time.perf_counter() - started) / count


def search(job, settings, count: int, parallel: int) -> float:
    """Seconds per trial of one search of ``count`` trials, ``parallel`` at a time."""
    tuned = attrs.evolve(job, tuning=attrs.evolve(job.tuning, max_trials=count, parallel_trials=parallel))
    started = time.perf_counter()
    result = tuning.search(tuned, settings, out=io.StringIO(), err=io.StringIO(), progress=False)
    assert result.exit_code == 0 and len(result.trials) == count, result.message
    return (time.perf_counter() - started) / count


def optuna_import_seconds() -> float:
    """A fresh interpreter's ``import optuna`` (the search pays it once)."""
    code = "import time; t = time.perf_counter(); import optuna; print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12, help="runs and trials per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (the median is reported)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "train.py").write_text(TRAIN)
        (Path(folder) / "job.yaml").write_text(JOB)
        job, driver, settings = api.prepare(Path(folder) / "job.yaml", backend="local", settings={"emulate": "vertex"})
        tuning.optuna_module()  # imported once, as in a real search, outside the timed loops
        plain, tuned, parallel = [], [], []
        for _ in range(args.rounds):
            plain.append(plain_runs(job, driver, settings, args.trials))
            tuned.append(search(job, settings, args.trials, 1))
            parallel.append(search(job, settings, args.trials, 4))
    run_s, trial_s, parallel_s = (statistics.median(x) for x in (plain, tuned, parallel))
    rows = [
        ("plain local run of the job (primary + 1 worker)", f"{run_s * 1000:.0f} ms/run"),
        ("one trial of a local search, 1 at a time", f"{trial_s * 1000:.0f} ms/trial"),
        ("overhead per trial (trial - run)", f"{(trial_s - run_s) * 1000:+.0f} ms"),
        ("trial / run", f"{trial_s / run_s:.2f}"),
        ("one trial of a local search, 4 at a time (wall / trials)", f"{parallel_s * 1000:.0f} ms/trial"),
        ("import optuna (once per search, fresh interpreter)", f"{optuna_import_seconds() * 1000:.0f} ms"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{args.trials} runs / trials per round, median of {args.rounds} rounds, vertex emulation")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
