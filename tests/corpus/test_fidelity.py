"""The corpus property checker (:mod:`.fidelity`) itself: it accounts for what an import maps or
reports, and it catches a field that is lost without a word. Runs without the corpus."""

from __future__ import annotations

import json

import attrs
import pytest

import omnidist
import omnidist.errors
from omnidist.backend import registry
from omnidist.migration.imports import import_job

from .fidelity import leaves, meaning_changes, spoken_of, unaccounted

SPEC = {
    "displayName": "demo",
    "labels": {"team": "ml"},
    "jobSpec": {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "n1-standard-8",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "replicaCount": "1",
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
                "containerSpec": {
                    "imageUri": "gcr.io/p/t:1",
                    "command": ["python", "t.py"],
                    "args": ["--lr", "0.1"],
                    "env": [{"name": "A", "value": "1"}],
                },
            },
            {
                "machineSpec": {
                    "machineType": "n1-standard-8",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "replicaCount": "3",
                "containerSpec": {
                    "imageUri": "gcr.io/p/t:1",
                    "command": ["python", "t.py"],
                    "args": ["--lr", "0.1"],
                    "env": [{"name": "A", "value": "1"}],
                },
            },
        ],
        "scheduling": {"timeout": "7200s", "strategy": "SPOT", "disableRetries": True},
        "serviceAccount": "sa@p.iam.gserviceaccount.com",
    },
}


def imported(native=SPEC):
    job, _, entries = import_job(native, registry.get("vertex"))
    return job, [e.field for e in entries]


def test_a_faithful_import_accounts_for_every_leaf():
    job, fields = imported()
    assert unaccounted(SPEC, "vertex", job, fields) == []


def test_a_field_lost_without_a_word_is_caught():
    job, fields = imported()
    vertex = {k: v for k, v in job.backends["vertex"].items() if k != "service_account"}
    lossy = attrs.evolve(job, backends={"vertex": vertex})
    assert unaccounted(SPEC, "vertex", lossy, fields) == [
        "jobSpec.serviceAccount = sa@p.iam.gserviceaccount.com"]
    lossy = attrs.evolve(job, workers=attrs.evolve(job.workers, replicas=2))
    assert unaccounted(SPEC, "vertex", lossy, fields) == ["jobSpec.workerPoolSpecs.1.replicaCount = 3"]


def test_a_drop_counts_only_when_a_note_names_it():
    job, fields = imported()
    assert "scheduling.disableRetries" in fields
    silent = [f for f in fields if f != "scheduling.disableRetries"]
    assert unaccounted(SPEC, "vertex", job, silent) == ["jobSpec.scheduling.disableRetries = true"]


def test_a_field_no_rule_knows_is_caught_unless_reported():
    native = {**SPEC, "jobSpec": {**SPEC["jobSpec"], "futureField": {"x": 1}}}
    job, fields = imported()  # (the importer would refuse the field; the checker is what is tested here)
    assert unaccounted(native, "vertex", job, fields) == ["jobSpec.futureField.x = 1"]
    assert unaccounted(native, "vertex", job, [*fields, "jobSpec.futureField"]) == []


def test_a_collapsed_multi_line_command_is_caught():
    native = {"type": "command", "command": "echo one\npython two.py", "environment": {"image": "i:1"}}
    job, _, entries = import_job(native, registry.get("azure_ml"))
    fields = [e.field for e in entries]
    assert unaccounted(native, "azure_ml", job, fields) == []
    collapsed = attrs.evolve(job, command=("echo", "one", "python", "two.py"))  # one argv, without a word
    silent = [f for f in fields if f != "command"]
    assert unaccounted(native, "azure_ml", collapsed, silent) == ["command = echo one python two.py"]


def test_a_setting_kept_for_the_source_must_be_reported_by_the_migration():
    job, fields = imported()
    _, report = omnidist.migrate(SPEC, "vertex", "azure_ml", framework="pytorch")
    said = [e.field for e in report.entries]
    assert unaccounted(SPEC, "vertex", job, fields + said, carried=said) == []
    unsaid = [f for f in said if "service_account" not in f]
    assert unaccounted(SPEC, "vertex", job, fields + unsaid, carried=unsaid) == [
        "jobSpec.serviceAccount = sa@p.iam.gserviceaccount.com (kept in backends.vertex, not reported)"]


def test_walking_and_naming():
    assert list(leaves({"a": [{"b": 1}, 2], "c": {}})) == [(("a", "0", "b"), 1), (("a", "1"), 2), (("c",), {})]
    assert spoken_of(("trainingInput", "hyperparameters", "params", "0", "type"), ["hyperparameters"])
    assert spoken_of(("jobSpec", "workerPoolSpecs", "0", "nfsMounts"), ["workerPoolSpecs[0].nfsMounts"])
    assert not spoken_of(("jobSpec", "network"), ["jobSpec.networkAttachment"])


def test_meaning_changes_catch_a_smaller_machine_and_a_lost_gpu_count():
    native = {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-highmem-32"}, "replicaCount": 1,
                                   "containerSpec": {"imageUri": "gcr.io/p/t:1", "command": ["python", "t.py"]}}]}
    job, _, _ = import_job(native, registry.get("vertex"))
    compiled, report = omnidist.migrate(native, "vertex", "azure_ml", framework="pytorch")
    assert meaning_changes(job, "vertex", compiled.request, "azure_ml", report.entries) == []
    small = {**compiled.request, "resources": {**compiled.request["resources"], "instance_type": "Standard_D4s_v3"}}
    assert meaning_changes(job, "vertex", small, "azure_ml", report.entries) == ["primary: 32 vCPUs became 4"]

    gpus = {"workerPoolSpecs": [{**native["workerPoolSpecs"][0], "machineSpec": {
        "machineType": "a2-highgpu-2g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 2}}]}
    job, _, _ = import_job(gpus, registry.get("vertex"))
    compiled, report = omnidist.migrate(gpus, "vertex", "azure_ml", framework="pytorch")  # Azure sells A100 in 8s
    assert meaning_changes(job, "vertex", compiled.request, "azure_ml", report.entries) == []  # said: changed
    unsaid = [e for e in report.entries if e.field != "primary.machine"]
    assert meaning_changes(job, "vertex", compiled.request, "azure_ml", unsaid) == ["primary: A100:2 became A100:8"]


def test_meaning_changes_catch_a_command_that_lost_its_lines_or_gained_one():
    native = {"type": "command", "command": "echo one\npython two.py", "environment": {"image": "i:1"}}
    job, _, _ = import_job(native, registry.get("azure_ml"))
    compiled, report = omnidist.migrate(native, "azure_ml", "vertex")
    assert meaning_changes(job, "azure_ml", compiled.request, "vertex", report.entries) == []
    flat = json.loads(json.dumps(compiled.request))
    flat["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"] = ["echo", "one", "python", "two.py"]
    assert meaning_changes(job, "azure_ml", flat, "vertex", report.entries) == ["command: its lines were not kept"]
    entrypoint = {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1,
                                       "containerSpec": {"imageUri": "i:1", "args": ["--epochs=3"]}}]}
    job, _, _ = import_job(entrypoint, registry.get("vertex"))
    with pytest.raises(omnidist.errors.UnsupportedFeatureError, match="command"):  # Azure ML needs a command
        omnidist.migrate(entrypoint, "vertex", "azure_ml", framework="pytorch")
    compiled, report = omnidist.migrate(entrypoint, "vertex", "vertex", framework="pytorch")
    azure = {"type": "command", "command": "--epochs=3", "environment": {"image": "i:1"}}  # the old, silent change
    assert meaning_changes(job, "vertex", azure, "azure_ml", report.entries) == [
        "command: the image's own entrypoint became the command '--epochs=3'"]


TUNING = {
    "displayName": "hp", "maxTrialCount": 8, "parallelTrialCount": 2,
    "studySpec": {"metrics": [{"metricId": "f1", "goal": "MAXIMIZE"}], "algorithm": "RANDOM_SEARCH", "parameters": [
        {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}, "scaleType": "UNIT_LOG_SCALE"},
        {"parameterId": "opt", "categoricalValueSpec": {"values": ["adam", "sgd"]}}]},
    "trialJobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"},
                                          "containerSpec": {"imageUri": "gcr.io/p/t:1"}}]},
}


def test_a_tuning_job_is_accounted_for_by_its_tuning_block_and_a_lost_search_is_caught():
    job, fields = imported(TUNING)
    assert unaccounted(TUNING, "vertex", job, fields) == []
    params = {k: v for k, v in job.tuning.parameters.items() if k != "opt"}
    lossy = attrs.evolve(job, tuning=attrs.evolve(job.tuning, parameters=params, max_trials=4))
    assert unaccounted(TUNING, "vertex", lossy, fields) == [
        "maxTrialCount = 8", "studySpec.parameters.1.parameterId = opt",
        "studySpec.parameters.1.categoricalValueSpec.values.0 = adam",
        "studySpec.parameters.1.categoricalValueSpec.values.1 = sgd"]
    assert unaccounted(TUNING, "vertex", attrs.evolve(job, tuning=None), fields)[:1] == ["maxTrialCount = 8"]
