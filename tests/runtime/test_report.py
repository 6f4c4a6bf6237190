"""``omnidist.runtime.report()`` writes where each platform's tuner reads, and ``context().trial``
comes from wherever each platform puts the trial id (SPEC §8)."""

from __future__ import annotations

import decimal
import json
import subprocess
import sys
import textwrap

import pytest

from omnidist.runtime import context, report

VERTEX = '{"cluster": {"workerpool0": ["h0:2222"]}, "task": {"type": "workerpool0", "index": 0, "trial": "7"}}'
AI_PLATFORM = '{"cluster": {"master": ["h0:2222"]}, "task": {"type": "master", "index": 0, "trial": "3"}}'
PLATFORM_VARIABLES = ("CLUSTER_SPEC", "TF_CONFIG", "OMNIDIST_METRICS_FILE", "OMNIDIST_TRIAL", "CLOUD_ML_TRIAL_ID",
                      "CLOUD_ML_HP_METRIC_FILE", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "RANK",
                      "WORLD_SIZE", "LOCAL_RANK")


@pytest.fixture
def clean_env(monkeypatch):
    """No platform variable from the test runner's own environment."""
    import os

    for name in list(os.environ):
        if name in PLATFORM_VARIABLES or name.startswith(("AZUREML_", "OMNIDIST_", "AZ_BATCH", "OMPI_")):
            monkeypatch.delenv(name)
    return monkeypatch


def run_python(code: str, env: dict[str, str], tmp_path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with exactly ``env`` (plus PATH): the runtime reads os.environ."""
    import os

    full = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


# --- context().trial on every platform -------------------------------------------------------------

@pytest.mark.parametrize("env, trial", [
    ({"CLUSTER_SPEC": VERTEX}, "7"),                                           # Vertex: CLUSTER_SPEC task.trial
    ({"CLUSTER_SPEC": AI_PLATFORM}, "3"),                                      # AI Platform: CLUSTER_SPEC task.trial
    ({"TF_CONFIG": AI_PLATFORM.replace('"3"', '"4"')}, "4"),                   # TF_CONFIG task.trial
    ({"CLOUD_ML_TRIAL_ID": "12"}, "12"),                                        # Google's trial variable alone
    ({"OMNIDIST_TRIAL": "5"}, "5"),                                             # omnidist run's local trials
    ({"AZUREML_RUN_ID": "sweep_1_trial_9", "AZUREML_SWEEP_lr": "0.1"}, "sweep_1_trial_9"),  # an Azure sweep trial
    ({"AZUREML_RUN_ID": "plain_job"}, None),                                    # a plain Azure job: no trial
    ({"CLUSTER_SPEC": VERTEX.replace(', "trial": "7"', "")}, None),            # a Vertex job that is not tuned
    ({}, None),
])
def test_trial_comes_from_the_platforms_own_variables(env, trial):
    assert context(env).trial == trial
    assert context(env).to_dict()["trial"] == trial


# --- where the metrics go ---------------------------------------------------------------------------

def test_local_trials_append_json_lines(clean_env, tmp_path):
    path = tmp_path / "trial.jsonl"
    clean_env.setenv("OMNIDIST_METRICS_FILE", str(path))
    clean_env.setenv("OMNIDIST_TRIAL", "4")
    clean_env.setenv("CLUSTER_SPEC", VERTEX)  # the local variable wins over an emulated platform's file
    assert report(accuracy=0.5, step=1) == "local"
    assert report(accuracy=decimal.Decimal("0.75"), loss=1, step=2) == "local"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["metrics"], e["step"], e["trial"]) for e in lines] == [
        ({"accuracy": 0.5}, 1, "7"), ({"accuracy": 0.75, "loss": 1.0}, 2, "7")]
    assert all(isinstance(e["time"], float) for e in lines)


def test_google_platforms_write_what_cloudml_hypertune_writes(tmp_path):
    """The same reports through report() and through the cloudml-hypertune package itself give the
    same file, but for the timestamps."""
    ours, theirs = tmp_path / "ours" / "output.metrics", tmp_path / "theirs" / "output.metrics"
    env = {"CLUSTER_SPEC": VERTEX, "CLOUD_ML_TRIAL_ID": "7"}
    calls = [
        ({"accuracy": 0.5}, 1),
        ({"accuracy": 0.75}, 20),
        ({"loss": 2}, None),
        ({"accuracy": 0.8, "loss": 1.5}, 30),
    ]
    with_report = run_python(f"""
        from omnidist.runtime import report
        for metrics, step in {calls!r}:
            assert report(step=step, **metrics) == "hypertune"
        """, {**env, "CLOUD_ML_HP_METRIC_FILE": str(ours)}, tmp_path)
    assert with_report.returncode == 0, with_report.stderr
    with_package = run_python(f"""
        import hypertune
        hpt = hypertune.HyperTune()
        for metrics, step in {calls!r}:
            for name, value in metrics.items():
                hpt.report_hyperparameter_tuning_metric(hyperparameter_metric_tag=name, metric_value=value,
                                                        global_step=step)
        """, {**env, "CLOUD_ML_HP_METRIC_FILE": str(theirs)}, tmp_path)
    assert with_package.returncode == 0, with_package.stderr

    def without_time(path):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert all(isinstance(e.pop("timestamp"), float) for e in lines)
        return lines

    assert without_time(ours) == without_time(theirs)
    assert without_time(ours)[0] == {"accuracy": "0.5", "checkpoint_path": "", "global_step": "1", "trial": "7"}
    first = ours.read_text().splitlines()[0]
    assert list(json.loads(first)) == ["accuracy", "checkpoint_path", "global_step", "timestamp", "trial"]  # sorted


def test_hypertune_defaults_and_its_100_entry_window(tmp_path):
    from hypertune import hypertune as package

    from omnidist.runtime.trials import HYPERTUNE_DEFAULT_FILE, HYPERTUNE_KEEP

    assert HYPERTUNE_DEFAULT_FILE == package._DEFAULT_METRIC_PATH
    assert HYPERTUNE_KEEP == package._MAX_NUM_METRIC_ENTRIES_TO_PRESERVE
    path = tmp_path / "out" / "m.metrics"
    result = run_python("""
        from omnidist.runtime import report
        for step in range(120):
            report(rmse=step / 10, step=step)
        """, {"CLOUD_ML_HP_METRIC_FILE": str(path)}, tmp_path)  # the variable alone means a Google trial
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 100 and lines[0]["global_step"] == "20" and lines[-1]["rmse"] == "11.9"
    assert {line["trial"] for line in lines} == {"0"}  # cloudml-hypertune's default trial


def test_azure_ml_logs_mlflow_metrics(tmp_path):
    store = tmp_path / "mlflow.db"
    result = run_python("""
        import mlflow
        from omnidist.runtime import report, context
        assert context().platform == "azure_ml" and context().trial == "sweep_trial_2"
        with mlflow.start_run() as run:
            assert report(val_accuracy=0.5, step=1) == "mlflow"
            assert report(val_accuracy=0.7, loss=0.3, step=2) == "mlflow"
        client = mlflow.tracking.MlflowClient()
        print([(m.value, m.step) for m in client.get_metric_history(run.info.run_id, "val_accuracy")])
        print([(m.value, m.step) for m in client.get_metric_history(run.info.run_id, "loss")])
        """, {"AZUREML_RUN_ID": "sweep_trial_2", "AZUREML_SWEEP_lr": "0.1",
              "MLFLOW_TRACKING_URI": f"sqlite:///{store}"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["[(0.5, 1), (0.7, 2)]", "[(0.3, 2)]"]


def test_azure_ml_without_mlflow_warns_and_goes_on(tmp_path):
    result = run_python("""
        import sys, warnings
        sys.modules["mlflow"] = None  # as if it were not installed
        from omnidist.runtime import report
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            print(report(val_accuracy=0.5))
        print(caught[0].category.__name__, caught[0].message)
        """, {"AZUREML_RUN_ID": "r1"}, tmp_path)
    assert result.returncode == 0, result.stderr
    went, warning = result.stdout.splitlines()
    assert went == "none"
    assert warning.startswith("RuntimeWarning omnidist.runtime.reporting: mlflow is not installed")
    assert "val_accuracy" in warning and "azureml-mlflow" in warning


def test_nowhere_to_report_warns(clean_env):
    with pytest.warns(RuntimeWarning, match="no tuner is listening here"):
        assert report(accuracy=1.0) == "none"


@pytest.mark.parametrize("args, kwargs, error, text", [
    ((), {}, ValueError, "at least one metric"),
    ((), {"accuracy": "high"}, TypeError, "report(accuracy=…) takes a number"),
    ((), {"accuracy": True}, TypeError, "takes a number"),
    ((-1,), {"accuracy": 1.0}, ValueError, "step=…) takes a whole number >= 0"),
    ((1.5,), {"accuracy": 1.0}, ValueError, "whole number"),
])
def test_bad_reports_say_what_is_wrong(clean_env, args, kwargs, error, text):
    with pytest.raises(error) as caught:
        report(*args, **kwargs)
    assert text in str(caught.value)


def test_reporting_loads_only_the_standard_library(tmp_path):
    result = run_python("""
        import json, sys
        before = set(sys.modules)
        from omnidist.runtime import report
        report(accuracy=0.9, step=1)
        print(json.dumps(sorted(set(sys.modules) - before)))
        """, {"OMNIDIST_METRICS_FILE": str(tmp_path / "m.jsonl")}, tmp_path)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert [m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "omnidist"] == []
