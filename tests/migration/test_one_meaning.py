"""SPEC §10 by class, on jobs written for each class (not corpus files): an importer is no stricter
than its platform's own parser, several jobs in one file give several portable jobs, an older API
version is named, a wrong ``--from`` says whose spec it is, and the smaller truths (web access,
the reverse log scale, memory sizing, requests vs limits, a legacy TPU job moving to TPU VMs)."""

from __future__ import annotations

import json
import statistics

import pytest
import yaml
from click.testing import CliRunner

import omnidist
from omnidist.backend import registry
from omnidist.cli import main
from omnidist.errors import ValidationError
from omnidist.migration.imports import import_job
from omnidist.model.tuning import Scale, Tuning

VERTEX_TUNING = {
    "displayName": "sweep",
    "maxTrialCount": 2,
    "parallelTrialCount": 8,
    "studySpec": {
        "metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}],
        "parameters": [{"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.5},
                        "scaleType": "UNIT_REVERSE_LOG_SCALE"}],
    },
    "trialJobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
                                          "containerSpec": {"imageUri": "gcr.io/p/t", "command": ["python", "t.py"]}}]},
}

AI_PLATFORM_TUNING = {
    "jobId": "sweep",
    "trainingInput": {
        "scaleTier": "CUSTOM", "masterType": "n1-standard-4", "region": "us-central1",
        "masterConfig": {"imageUri": "gcr.io/p/t"},
        "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "acc", "maxTrials": 3,
                            "maxParallelTrials": 5,
                            "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": 0.5,
                                        "scaleType": "UNIT_REVERSE_LOG_SCALE"}]},
    },
}

AZURE_SWEEP = {
    "$schema": "https://azuremlschemas.azureedge.net/latest/sweepJob.schema.json", "type": "sweep",
    "trial": {"command": "python t.py --lr ${{search_space.lr}}", "environment": {"image": "pytorch/pytorch:2.2"}},
    "compute": "azureml:cpu", "sampling_algorithm": "random",
    "search_space": {"lr": {"type": "uniform", "min_value": 0.001, "max_value": 0.5}},
    "objective": {"goal": "maximize", "primary_metric": "acc"},
    "limits": {"max_total_trials": 2, "max_concurrent_trials": 6},
}

AZURE_TF = {
    "$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "type": "command",
    "command": "python t.py", "environment": {"image": "tensorflow/tensorflow:2.15.0"}, "compute": "azureml:cpu",
    "resources": {"instance_count": 1},
    "distribution": {"type": "tensorflow", "worker_count": 2, "parameter_server_count": 1},
}


def pytorch_job(name: str, env: list | None = None) -> dict:
    pod = {"spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.2", "command": ["python", "t.py"],
                                    "env": env or []}]}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": pod},
                                             "Worker": {"replicas": 1, "template": pod}}}}


CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "b"}}


def stream(*docs) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def notes(report_or_entries, fidelity: str) -> dict[str, str]:
    entries = getattr(report_or_entries, "entries", report_or_entries)
    return {e.field: e.message for e in entries if e.fidelity.value == fidelity}


# --- no stricter than the platform ---------------------------------------------------------------

@pytest.mark.parametrize("native, source, total", [(VERTEX_TUNING, "vertex", 2), (AI_PLATFORM_TUNING, "ai_platform", 3),
                                                   (AZURE_SWEEP, "azure_ml", 2)])
def test_more_trials_at_once_than_in_all_imports_as_all_at_once(isolated, native, source, total):
    job, _, entries = import_job(native, registry.get(source))
    assert job.tuning.parallel_trials == job.tuning.max_trials == total
    assert "starts them all at once" in notes(entries, "approximated")["tuning.parallel_trials"]


def test_azure_accepts_the_sweep_and_the_tensorflow_file_omnidist_imports(isolated, tmp_path):
    """The platform's own parser takes both files; so does the importer (exit 0, with notes)."""
    from azure.ai.ml import load_job

    for name, native in (("sweep.yaml", AZURE_SWEEP), ("tf.yaml", AZURE_TF)):
        path = tmp_path / name
        path.write_text(yaml.safe_dump(native))
        load_job(path)
        assert CliRunner().invoke(main, ["import", str(path)]).exit_code == 0


def test_tensorflow_tasks_spread_over_fewer_nodes_import_with_a_change(isolated):
    job, _, entries = import_job(AZURE_TF, registry.get("azure_ml"))
    assert job.workers.replicas == 1 and job.parameter_servers.replicas == 1
    assert "instance_count 1 nodes" in notes(entries, "changed")["workers.replicas"]


@pytest.mark.parametrize("native, source, field", [
    (pytorch_job("dots", [{"name": "app.mode", "value": "x"}, {"name": "KEEP", "value": "y"}]), "kubernetes",
     "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].env.app.mode"),
    ({**AZURE_TF, "distribution": None, "environment_variables": {"app-mode": "x", "KEEP": "y"}}, "azure_ml",
     "environment_variables.app-mode"),
])
def test_a_variable_name_only_its_platform_takes_is_dropped_with_a_note(isolated, native, source, field):
    native = {k: v for k, v in native.items() if v is not None}
    job, _, entries = import_job(native, registry.get(source))
    assert job.env == {"KEEP": "y"}
    assert "rename it to move it" in notes(entries, "dropped")[field]


# --- several jobs in one file ----------------------------------------------------------------------

def test_each_training_job_of_a_stream_is_its_own_portable_job(isolated, tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(stream(CONFIG_MAP, pytorch_job("first"), pytorch_job("second")))
    assert [job.name for job in omnidist.import_all(str(path))] == ["first", "second"]
    assert omnidist.import_native(str(path)).name == "first"  # one job: the first, the other noted

    result = CliRunner().invoke(main, ["import", str(path)])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert [d["name"] for d in docs] == ["first", "second"]
    assert "[0]: v1 ConfigMap settings: not a training job" in result.output
    for doc in docs:  # each document is a portable job omnidist loads
        (tmp_path / "job.yaml").write_text(yaml.safe_dump(doc))
        omnidist.load(str(tmp_path / "job.yaml"))


def test_migrate_compiles_each_job_of_a_stream(isolated, tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(stream(pytorch_job("first"), CONFIG_MAP, pytorch_job("second")))
    results = omnidist.migrate_all(str(path), target="azure_ml")
    assert [compiled.request["display_name"] for compiled, _ in results] == ["first", "second"]

    result = CliRunner().invoke(main, ["migrate", str(path), "--to", "azure_ml", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    assert [d["display_name"] for d in yaml.safe_load_all(result.stdout)] == ["first", "second"]
    assert len(json.loads(result.stderr)) == 2


def test_an_older_api_version_is_named(isolated):
    old = {**pytorch_job("old"), "apiVersion": "kubeflow.org/v1alpha2", "kind": "MPIJob"}
    with pytest.raises(ValidationError) as err:
        omnidist.import_native(old)
    assert "kubeflow.org/v1alpha2 MPIJob old is an older API version" in str(err.value)
    assert "kubeflow.org/v2beta1" in str(err.value)


def test_detection_lists_every_backend(isolated):
    with pytest.raises(ValidationError) as err:
        omnidist.import_native({"foo": 1})
    for name in registry.installed():
        if registry.get(name).native_formats:
            assert f"{name}:" in str(err.value)
    assert "kubernetes" in str(err.value).rsplit("Pass --from", 1)[1]


def test_a_wrong_from_says_whose_spec_it_is(isolated):
    with pytest.raises(ValidationError) as err:
        omnidist.import_native(VERTEX_TUNING, "azure_ml")
    assert str(err.value).splitlines()[0].endswith(
        "--from: this looks like a vertex spec, not azure_ml: pass --from vertex (or leave --from out to detect it)")


# --- smaller truths ----------------------------------------------------------------------------------

def test_web_access_moves_between_the_google_backends(isolated):
    vertex = {"displayName": "w", "jobSpec": {**VERTEX_TUNING["trialJobSpec"], "enableWebAccess": True}}
    compiled, report = omnidist.migrate(vertex, "vertex", "ai_platform")
    assert compiled.request["trainingInput"]["enableWebAccess"] is True
    assert "backends.vertex.enable_web_access" in notes(report, "exact")


@pytest.mark.parametrize("native, source", [(VERTEX_TUNING, "vertex"), (AI_PLATFORM_TUNING, "ai_platform")])
def test_the_reverse_log_scale_is_carried(isolated, native, source):
    job = omnidist.import_native(native, source)
    assert job.tuning.parameters["lr"].scale is Scale.REVERSE_LOG
    for target in ("vertex", "ai_platform"):
        compiled, report = omnidist.migrate(native, source, target)
        assert "UNIT_REVERSE_LOG_SCALE" in json.dumps(compiled.request)
        assert "tuning.parameters.lr" not in notes(report, "changed")


def test_azure_says_it_has_no_reverse_log_scale(isolated):
    native = {**VERTEX_TUNING, "studySpec": {**VERTEX_TUNING["studySpec"], "algorithm": "RANDOM_SEARCH"}}
    compiled, report = omnidist.migrate(native, "vertex", "azure_ml")
    assert compiled.request["search_space"]["lr"]["type"] == "loguniform"
    assert "Azure ML has no reverse log scale" in notes(report, "changed")["tuning.parameters.lr"]


def test_local_trials_favour_the_top_of_a_reverse_log_range():
    optuna = pytest.importorskip("optuna")
    from omnidist.local.tuning import suggest

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    tuning = Tuning(metric={"name": "m", "goal": "maximize"}, max_trials=2, parameters={
        "lr": {"type": "double", "min": 0.001, "max": 1, "scale": "reverse_log"},
        "n": {"type": "integer", "min": 1, "max": 100, "scale": "reverse_log"}})
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    drawn = [suggest(study.ask(), tuning) for _ in range(400)]
    assert statistics.median(d["lr"] for d in drawn) > 0.9 and statistics.median(d["n"] for d in drawn) > 90
    assert all(0.001 <= d["lr"] <= 1 and 1 <= d["n"] <= 100 for d in drawn)


def test_a_reverse_log_range_needs_a_positive_min():
    with pytest.raises(ValidationError, match="reverse_log needs min > 0"):
        Tuning(metric={"name": "m", "goal": "maximize"}, max_trials=2, parameters={
            "lr": {"type": "double", "min": 0, "max": 1, "scale": "reverse_log"}})


def test_memory_sized_for_another_cloud_is_reported(isolated):
    vertex = {"displayName": "w", "jobSpec": VERTEX_TUNING["trialJobSpec"]}
    compiled, report = omnidist.migrate(vertex, "vertex", "kubernetes")
    pod = compiled.request["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert pod["resources"]["limits"]["memory"] == "13824Mi"
    assert "90% of the n1-standard-4's 15 GB" in notes(report, "approximated")["primary.memory_gb"]
    assert "15 GB" not in notes(report, "exact").get("primary", "")


def test_requests_and_limits_that_differ_are_read_with_a_line(isolated):
    job = pytorch_job("sized")
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["resources"] = {"requests": {"memory": "8Gi", "cpu": "2"},
                                                                   "limits": {"memory": "16Gi", "cpu": "2"}}
    imported, _, entries = import_job(job, registry.get("kubernetes"))
    assert imported.primary.memory_gb == 8
    lines = notes(entries, "approximated")
    assert any("requests 8Gi, limits 16Gi: the portable job holds the request" in m for m in lines.values())
    assert not any("cpu" in f for f in lines)


def test_a_basic_tpu_job_imports_as_its_tpu_and_moves_to_vertex_as_a_tpu_vm(isolated):
    body = {"jobId": "t", "trainingInput": {"scaleTier": "BASIC_TPU", "region": "us-central1",
                                            "masterConfig": {"imageUri": "gcr.io/p/t"}}}
    job = omnidist.import_native(body, "ai_platform")
    assert str(job.primary.accelerator) == "TPU-V2:8" and job.backends["ai_platform"]["scale_tier"] == "BASIC_TPU"
    compiled, report = omnidist.migrate(body, source="ai_platform", target="vertex")
    assert compiled.request["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "cloud-tpu"
    changed = [e for e in report.entries if e.fidelity == "changed"]
    assert [e.field for e in changed] == ["primary.accelerator"] and "TPU VMs" in changed[0].message
