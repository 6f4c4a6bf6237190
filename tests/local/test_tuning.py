"""Local tuning (``omnidist run`` of a job with ``tuning``): trials are emulated jobs sampled by
Optuna, ``parallel_trials`` at a time, with their values as ``--NAME=VALUE`` and the emulated
platform's trial variables; failures count, early stopping prunes, Ctrl-C leaves nothing behind."""

from __future__ import annotations

import io
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from omnidist import api
from omnidist.errors import UnsupportedFeatureError
from omnidist.local import tuning as local_tuning
from omnidist.testing.cli import run_cli

from .conftest import process_gone

OMNIDIST = str(Path(sys.executable).with_name("omnidist"))

RECORDER = """
import argparse, json, os, sys
from omnidist.runtime import context, report
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float)
parser.add_argument("--layers", type=int)
parser.add_argument("--optimizer")
args, _ = parser.parse_known_args()
ctx = context()
keep = ("OMNIDIST_TRIAL", "CLOUD_ML_TRIAL_ID", "CLUSTER_SPEC", "TF_CONFIG", "AZUREML_RUN_ID", "AZUREML_SWEEP_lr",
        "AZUREML_SWEEP_optimizer")
record = {"argv": sys.argv[1:], "env": {k: os.environ[k] for k in keep if k in os.environ}, "trial": ctx.trial,
          "role": ctx.role, "platform": ctx.platform}
with open(f"record-{ctx.trial}-{ctx.role}.json", "w") as fh:
    json.dump(record, fh)
if ctx.role == "primary":
    report(accuracy=args.layers * 10 + (1 if args.optimizer == "adam" else 0) - abs(args.lr - 0.01), step=1)
"""

TUNING = {"metric": {"name": "accuracy", "goal": "maximize"},
          "parameters": {"lr": {"type": "double", "min": 1e-4, "max": 0.1, "scale": "log"},
                         "layers": {"type": "integer", "min": 1, "max": 4},
                         "optimizer": {"type": "categorical", "values": ["adam", "sgd"]}},
          "algorithm": "random", "max_trials": 5, "parallel_trials": 2}


def search(path: Path, emulate: str = "vertex", **kwargs) -> tuple[local_tuning.StudyResult, str, str]:
    job, _, settings = api.prepare(path, backend="local", settings={"emulate": emulate})
    out, err = io.StringIO(), io.StringIO()
    result = local_tuning.search(job, settings, out=out, err=err, **kwargs)
    return result, out.getvalue(), err.getvalue()


def records(folder: Path) -> dict[tuple[str, str], dict]:
    found = {}
    for path in folder.glob("record-*.json"):
        data = json.loads(path.read_text())
        found[(data["trial"], data["role"])] = data
    return found


def test_trials_run_as_emulated_jobs_with_their_values(job_dir, clean_env):
    path = job_dir({"train.py": RECORDER}, command=["python", "train.py", "--fixed", "1"],
                   workers={"replicas": 1}, tuning=TUNING)
    result, out, err = search(path)
    path_order = list(api.load(path).tuning.parameters)
    assert result.exit_code == 0 and len(result.trials) == 5
    assert [t.state for t in result.trials] == ["succeeded"] * 5
    seen = records(path.parent)
    assert set(seen) == {(str(n), role) for n in range(1, 6) for role in ("primary", "worker")}
    for trial in result.trials:
        primary = seen[(str(trial.number), "primary")]
        values = trial.params
        assert primary["argv"] == ["--fixed", "1", *(f"--{k}={values[k]}" for k in path_order)]  # after the args
        assert seen[(str(trial.number), "worker")]["argv"] == primary["argv"]  # every replica gets them
        assert 1e-4 <= values["lr"] <= 0.1 and values["layers"] in range(1, 5)
        assert values["optimizer"] in ("adam", "sgd")
        env = primary["env"]
        assert env["OMNIDIST_TRIAL"] == env["CLOUD_ML_TRIAL_ID"] == str(trial.number) == primary["trial"]
        assert json.loads(env["CLUSTER_SPEC"])["task"]["trial"] == str(trial.number)  # as Vertex sets it
        assert primary["platform"] == "vertex"
        assert trial.value == pytest.approx(values["layers"] * 10 + (values["optimizer"] == "adam")
                                            - abs(values["lr"] - 0.01))
    best = max(result.trials, key=lambda t: t.value)
    assert result.best == best
    lines = out.splitlines()
    assert lines[-8].split() == ["trial", "state", "accuracy", *path_order]
    assert lines[-1].startswith(f"best: trial {best.number}, accuracy=")
    assert f"--layers={best.params['layers']}" in lines[-1]
    assert "[trial-1] " not in out or "[trial-1] [primary-0]" in out
    assert "omnidist: 5 trials in" in err


def test_azure_ml_and_ai_platform_trials_get_their_platforms_variables(job_dir, clean_env):
    path = job_dir({"train.py": RECORDER}, command=["python", "train.py"], workers={"replicas": 1},
                   tuning={**TUNING, "max_trials": 2, "parallel_trials": 1})
    search(path, emulate="azure_ml")
    azure = records(path.parent)
    runs = {azure[(str(n), "primary")]["env"]["AZUREML_RUN_ID"] for n in (1, 2)}
    assert runs == {"t_local_trial_1", "t_local_trial_2"}  # a child run per trial, as in an Azure sweep
    first = azure[("1", "primary")]  # locally, context().trial is the trial's number on every platform
    assert first["platform"] == "azure_ml" and first["env"]["AZUREML_SWEEP_optimizer"] in ("adam", "sgd")
    for item in path.parent.glob("record-*.json"):
        item.unlink()
    search(path, emulate="ai_platform")
    legacy = records(path.parent)
    assert json.loads(legacy[("2", "worker")]["env"]["TF_CONFIG"])["task"]["trial"] == "2"
    assert legacy[("2", "worker")]["platform"] == "ai_platform"


BARRIER = """
import os, sys, time
from omnidist.runtime import context, report
me = context().trial
open(f"running-{me}", "w").close()
deadline = time.monotonic() + 30
while len([f for f in os.listdir(".") if f.startswith("running-")]) < 2 and time.monotonic() < deadline:
    time.sleep(0.02)
now = len([f for f in os.listdir(".") if f.startswith("running-")])
open(f"seen-{me}", "w").write(str(now))
time.sleep(0.2)
os.remove(f"running-{me}")
report(accuracy=1.0)
"""


def test_parallel_trials_run_together_and_never_more(job_dir, clean_env):
    tuning = {**TUNING, "max_trials": 6, "parallel_trials": 3}
    path = job_dir({"train.py": BARRIER}, command=["python", "train.py"], tuning=tuning)
    result, _, _ = search(path)
    assert result.exit_code == 0 and len(result.trials) == 6
    seen = [int(p.read_text()) for p in path.parent.glob("seen-*")]
    assert len(seen) == 6 and max(seen) <= 3 and min(seen) >= 2  # each waited for a partner running alongside


def test_grid_search_tries_each_combination_once(job_dir, clean_env):
    tuning = {"metric": {"name": "accuracy", "goal": "minimize"}, "algorithm": "grid", "max_trials": 50,
              "parameters": {"layers": {"type": "integer", "min": 1, "max": 3},
                             "optimizer": {"type": "categorical", "values": ["adam", "sgd"]},
                             "lr": {"type": "discrete", "values": [0.01]}},
              "parallel_trials": 2}
    path = job_dir({"train.py": RECORDER}, command=["python", "train.py"], tuning=tuning)
    result, out, _ = search(path)
    assert len(result.trials) == 6  # the grid has 6 points, fewer than max_trials
    assert sorted((t.params["layers"], t.params["optimizer"]) for t in result.trials) == sorted(
        itertools.product([1, 2, 3], ["adam", "sgd"]))
    assert result.best.params["layers"] == 1 and result.best.params["optimizer"] == "sgd"  # minimize


FLAKY = """
import sys
from omnidist.runtime import context, report
trial = int(context().trial)
if trial % 2 == 0:
    sys.exit(3)      # a failed trial
if trial % 3 == 0:
    sys.exit(0)      # ends well but reports nothing: failed too
report(accuracy=trial)
"""


def test_failed_trials_are_counted_and_shown(job_dir, clean_env):
    path = job_dir({"train.py": FLAKY}, command=["python", "train.py"],
                   tuning={**TUNING, "max_trials": 5, "parallel_trials": 1})
    result, out, err = search(path)
    states = {t.number: (t.state, t.message) for t in result.trials}
    assert states[2] == ("failed", "exit code 3") and states[3] == ("failed", "reported no accuracy")
    assert states[1][0] == states[5][0] == "succeeded"
    assert result.exit_code == 0 and result.best.number == 5
    assert "omnidist: trial 2 failed: exit code 3" in err


def test_max_failed_trials_stops_the_search(job_dir, clean_env):
    path = job_dir({"train.py": "import sys; sys.exit(1)\n"}, command=["python", "train.py"],
                   tuning={**TUNING, "max_trials": 10, "parallel_trials": 1, "max_failed_trials": 2})
    result, _, err = search(path)
    assert result.exit_code == 1 and len(result.trials) == 2  # no third trial started
    assert "2 trials failed (max_failed_trials: 2); stopping the search" in err


def test_no_successful_trial_is_exit_1(job_dir, clean_env):
    path = job_dir({"train.py": "print('no report')\n"}, command=["python", "train.py"],
                   tuning={**TUNING, "max_trials": 2, "parallel_trials": 2})
    result, _, err = search(path)
    assert result.exit_code == 1 and result.best is None and "no trial reported accuracy" in err


HYPERTUNE = """
import argparse, hypertune
parser = argparse.ArgumentParser()
parser.add_argument("--layers", type=int)
args, _ = parser.parse_known_args()
hypertune.HyperTune().report_hyperparameter_tuning_metric(
    hyperparameter_metric_tag="accuracy", metric_value=args.layers / 10, global_step=5)
"""


def test_code_that_reports_through_cloudml_hypertune_tunes_locally(job_dir, clean_env):
    path = job_dir({"train.py": HYPERTUNE}, command=["python", "train.py"],
                   tuning={**TUNING, "max_trials": 3, "parallel_trials": 3})
    result, _, _ = search(path)
    assert result.exit_code == 0
    assert [t.value for t in result.trials] == [pytest.approx(t.params["layers"] / 10) for t in result.trials]


GETTING_WORSE = """
import time
from omnidist.runtime import context, report
trial = int(context().trial)
for step in range(3):
    report(accuracy=-trial, step=step)
    time.sleep(0.05)
if trial > 5:
    time.sleep(60)   # a trial the pruner should stop long before this
"""


def test_early_stopping_prunes_trials_worse_than_the_median(job_dir, clean_env):
    path = job_dir({"train.py": GETTING_WORSE}, command=["python", "train.py"],
                   tuning={**TUNING, "max_trials": 7, "parallel_trials": 1, "early_stopping": True})
    started = time.monotonic()
    result, out, _ = search(path)
    assert [t.state for t in result.trials] == ["succeeded"] * 5 + ["pruned"] * 2
    assert result.best.number == 1 and result.exit_code == 0
    assert time.monotonic() - started < 60  # pruned, not waited out (a bound, not a speed goal)
    assert "pruned" in out


SLOW = """
import os, time
open(f"pid-{os.getpid()}", "w").close()
time.sleep(120)
"""


@pytest.mark.parametrize("sig, code, said", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_stops_every_trial(job_dir, clean_env, sig, code, said):
    path = job_dir({"train.py": SLOW}, command=["python", "train.py"], workers={"replicas": 1},
                   tuning={**TUNING, "max_trials": 9, "parallel_trials": 3})
    proc = subprocess.Popen([OMNIDIST, "run", str(path)], cwd=path.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(list(path.parent.glob("pid-*"))) < 6 and time.monotonic() < deadline:  # 3 trials × 2 replicas
        time.sleep(0.05)
    pids = [int(p.name.split("-")[1]) for p in path.parent.glob("pid-*")]
    assert len(pids) == 6
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert f"omnidist: {said}; stopping every trial" in err
    assert all(process_gone(pid) for pid in pids)
    assert len(list(path.parent.glob("pid-*"))) == 6  # no trial started after the signal
    assert out.count("stopped") == 3


def test_without_optuna_the_error_names_the_extra(job_dir, clean_env, tmp_path):
    path = job_dir({"train.py": RECORDER}, command=["python", "train.py"], tuning=TUNING)
    code = ("import sys; sys.modules['optuna'] = None\nfrom omnidist.cli import main\n"
            f"main(['run', {str(path)!r}])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "pip install 'omnidist[tuning]'" in result.stderr and "Traceback" not in result.stderr


def test_grid_over_a_double_is_exit_3_before_any_trial(job_dir, clean_env):
    path = job_dir({"train.py": RECORDER}, command=["python", "train.py"], tuning={**TUNING, "algorithm": "grid"})
    result = run_cli("run", str(path))
    assert result.returncode == 3 and "tuning.parameters.lr" in result.stderr
    assert not list(path.parent.glob("record-*"))


def test_a_job_without_a_command_fails_before_any_trial(job_dir, clean_env):
    path = job_dir({}, image="x:1", tuning=TUNING)
    result = run_cli("run", str(path))
    assert result.returncode == 2 and "has no command" in result.stderr


def test_compile_describes_the_search_and_submit_refuses_it(job_dir, clean_env):
    path = job_dir({"train.py": RECORDER}, command=["python", "train.py"], tuning=TUNING)
    compiled = api.compile(path, backend="local")
    assert compiled.request["tuning"] == {
        "sampler": "optuna.samplers.RandomSampler", "trials": 5, "parallel_trials": 2, "metric": "accuracy",
        "goal": "maximize", "early_stopping": False,
        "parameters": {"layers": "integer in [1, 4]", "lr": "double in [0.0001, 0.1], log scale",
                       "optimizer": "categorical of adam, sgd"},
        "argv_appended": ["--layers=VALUE", "--lr=VALUE", "--optimizer=VALUE"]}  # job_dir writes sorted keys
    job, driver, settings = api.prepare(path, backend="local")
    with pytest.raises(UnsupportedFeatureError, match="omnidist run"):
        driver.submit(compiled, settings)


def test_progress_bar_shows_the_best_so_far(job_dir, clean_env):
    path = job_dir({"train.py": RECORDER}, command=["python", "train.py"],
                   tuning={**TUNING, "max_trials": 2, "parallel_trials": 1})
    _, _, err = search(path, progress=True)
    assert "t trials" in err and "best accuracy=" in err and "2/2" in err


def test_cli_run_prints_the_table_and_exits_0(job_dir, clean_env):
    path = job_dir({"train.py": RECORDER}, command=["python", "train.py"],
                   tuning={**TUNING, "max_trials": 3, "parallel_trials": 3})
    result = run_cli("run", str(path), "--emulate", "none")
    assert result.returncode == 0, result.stderr
    assert "best: trial" in result.stdout and result.stdout.count("succeeded") == 3
    assert os.path.exists(path.parent / "record-1-primary.json")
