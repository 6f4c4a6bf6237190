"""The report is checked (SPEC §10): migrate reads the target's request back with the target's own
importer and compares it with the source job; what no report line covers becomes ``changed``."""

from __future__ import annotations

import copy

import attrs
import pytest

import omnidist
from omnidist.backend import registry
from omnidist.migration import StrictMigrationError
from omnidist.migration.readback import facets
from omnidist.model.job import job_from_dict

AZURE = {"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "type": "command",
         "command": "python train.py --epochs 10 --lr 0.1", "environment": {"image": "pytorch/pytorch:2.2"},
         "compute": "azureml:gpu", "resources": {"instance_count": 3, "instance_type": "Standard_NC24ads_A100_v4"},
         "distribution": {"type": "pytorch", "process_count_per_instance": 1},
         "environment_variables": {"NCCL_DEBUG": "INFO"}}


def breaking(monkeypatch, target, damage):
    """Make ``target``'s compiler return a request ``damage`` spoils after the fact: a translation
    that silently drops or changes something."""
    cls = type(registry.get(target))
    original = cls.compile

    def compile_(self, job, settings):
        compiled = original(self, job, settings)
        request = copy.deepcopy(compiled.request)
        damage(request)
        return attrs.evolve(compiled, request=request)

    monkeypatch.setattr(cls, "compile", compile_)


def changed(report):
    return {e.field: e.message for e in report.entries if e.fidelity.value == "changed"}


def test_a_faithful_migration_adds_no_line(isolated):
    _, report = omnidist.migrate(AZURE, source="azure_ml", target="vertex")
    assert [e for e in report.entries if "read back" in e.message] == []


def test_a_dropped_argument_is_caught(isolated, monkeypatch):
    def drop_last_arg(request):
        pool = request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
        pool["command"] = pool["command"][:-1]

    breaking(monkeypatch, "vertex", drop_last_arg)
    _, report = omnidist.migrate(AZURE, source="azure_ml", target="vertex")
    # the job's program ran under Azure ML's PyTorch distribution, so it runs under omnidist launch on
    # Vertex (an approximated `command` line); what each process runs is compared in the Worlds (SPEC §14)
    line = changed(report)["command"]
    assert "`python train.py --epochs 10 --lr` on vertex" in line and "`python train.py --epochs 10 --lr 0.1`" in line
    with pytest.raises(StrictMigrationError):
        omnidist.migrate(AZURE, source="azure_ml", target="vertex", strict=True)


def test_lost_workers_and_gpus_are_caught(isolated, monkeypatch):
    def fewer(request):
        pools = request["jobSpec"]["workerPoolSpecs"]
        pools[1]["replicaCount"] = "1"
        pools[0]["machineSpec"].pop("acceleratorType")
        pools[0]["machineSpec"].pop("acceleratorCount")

    breaking(monkeypatch, "vertex", fewer)
    _, report = omnidist.migrate(AZURE, source="azure_ml", target="vertex")
    found = changed(report)
    assert "workers.replicas" in found and "the source job has 2" in found["workers.replicas"]
    # the lost GPUs are said once: by the machine line, which reads the request back too
    assert "CPU-only" in found["primary.machine"] and "primary.gpus" not in found
    assert "nodes" in found


def test_a_lost_variable_is_caught_on_every_target(isolated, monkeypatch):
    def no_env(request):
        request.pop("environment_variables", None)

    breaking(monkeypatch, "azure_ml", no_env)
    vertex = {"displayName": "v", "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
        "containerSpec": {"imageUri": "gcr.io/p/t:1", "command": ["python", "t.py"],
                          "env": [{"name": "SEED", "value": "7"}]}}]}}
    _, report = omnidist.migrate(vertex, source="vertex", target="azure_ml", framework="pytorch")
    assert "SEED" in changed(report)["env"]


def test_facets_read_data_locations_alike_whatever_their_spelling():
    base = {"name": "j", "framework": "pytorch", "image": "i", "primary": {}}
    by_reference = job_from_dict({**base, "command": ["python", "t.py"], "args": ["--data", "${{inputs.d}}"],
                                  "inputs": {"d": "gs://b/x"}})
    by_uri = job_from_dict({**base, "command": ["python", "t.py"], "args": ["--data", "gs://b/x"]})
    assert facets(by_reference)["command"] == facets(by_uri)["command"]
    assert facets(by_reference)["data"] == facets(by_uri)["data"] == frozenset({"gs://b/x"})


VERTEX_A100 = {"displayName": "bert", "jobSpec": {"workerPoolSpecs": [
    {"machineSpec": {"machineType": "a2-highgpu-8g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 8},
     "replicaCount": str(replicas), "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/bert:1",
                                                       "command": ["python", "train.py"]}}
    for replicas in (1, 3)]}}
AZURE_CLUSTER = {"subscription_id": "00000000-0000-0000-0000-000000000000", "resource_group": "rg",
                 "workspace": "ws", "compute": "gpu-cluster"}


def test_gpus_a_named_cluster_hides_from_the_read_back_are_no_false_alarm():
    """An Azure ML request on a named compute cluster carries no VM size: its importer cannot name
    the GPUs, so the read-back's ``none`` is not a change (the SKU compile assumed is reported)."""
    compiled, report = omnidist.migrate(VERTEX_A100, "vertex", "azure_ml", framework="pytorch",
                                        settings=AZURE_CLUSTER, strict=True)
    assert "instance_type" not in compiled.request.get("resources", {})
    assert not changed(report)
    assert "backends.azure_ml.instance_type" in {e.field for e in report.entries}


def test_gpus_the_read_back_can_name_are_still_compared(monkeypatch):
    """A request whose VM size is known and has no GPUs is still a change."""

    def no_gpus(request):
        request["resources"]["instance_type"] = "Standard_D4s_v3"

    breaking(monkeypatch, "azure_ml", no_gpus)
    _, report = omnidist.migrate(VERTEX_A100, "vertex", "azure_ml", framework="pytorch")
    assert "it has CPU-only" in changed(report)["workers.machine"]


@pytest.mark.parametrize("command, framework", [
    (["torchrun", "--nproc_per_node=8", "train.py"], "pytorch"),
    (["python", "-m", "torch.distributed.run", "--nproc_per_node=8", "train.py"], "pytorch"),
    (["python", "train.py"], "custom"),
])
def test_a_job_started_with_torchrun_imports_as_pytorch(command, framework):
    native = copy.deepcopy(VERTEX_A100)
    for pool in native["jobSpec"]["workerPoolSpecs"]:
        pool["containerSpec"]["command"] = command
    _, report = omnidist.migrate(native, "vertex", "vertex")
    (line,) = [e for e in report.entries if e.field == "framework"]
    assert line.fidelity.value == "inferred" and line.message.startswith(f"{framework}:")


AZURE_ON_A_CLUSTER = {"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "type": "command",
                      "command": "python train.py", "environment": {"image": "pytorch/pytorch:2.2"},
                      "compute": "azureml:gpu-cluster", "resources": {"instance_count": 2},
                      "distribution": {"type": "pytorch", "process_count_per_instance": 1}}


def test_a_job_on_a_named_cluster_says_how_to_keep_its_gpus_and_accelerator_keeps_them():
    _, bare = omnidist.migrate(AZURE_ON_A_CLUSTER, "azure_ml", "vertex")
    assert "omnidist migrate --accelerator TYPE:COUNT" in changed(bare)["primary.accelerator"]
    compiled, given = omnidist.migrate(AZURE_ON_A_CLUSTER, "azure_ml", "vertex", accelerators={"primary": "V100:2"})
    pools = compiled.request["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"].get("acceleratorType") for p in pools] == ["NVIDIA_TESLA_V100"] * 2
    assert {e.field: e.message for e in given.entries}["primary.accelerator"] == "V100:2 (from --accelerator)"
    assert "primary.accelerator" not in changed(given) and "workers.gpus" not in changed(given)


def test_accelerator_per_role_and_its_errors():
    compiled, report = omnidist.migrate(AZURE_ON_A_CLUSTER, "azure_ml", "vertex", accelerators={"workers": "T4:1"})
    pools = compiled.request["jobSpec"]["workerPoolSpecs"]
    assert [p["machineSpec"].get("acceleratorType") for p in pools] == [None, "NVIDIA_TESLA_T4"]
    assert "primary.accelerator" in changed(report)  # the primary's GPUs are still unnamed: still said
    from omnidist.errors import ValidationError

    with pytest.raises(ValidationError, match="--accelerator: evaluators=T4:1: the job has no evaluators"):
        omnidist.migrate(AZURE_ON_A_CLUSTER, "azure_ml", "vertex", accelerators={"evaluators": "T4:1"})
    with pytest.raises(ValidationError, match="ROLE one of primary, workers"):
        omnidist.migrate(AZURE_ON_A_CLUSTER, "azure_ml", "vertex", accelerators={"gpus": "T4:1"})


def test_every_missing_setting_is_listed_at_once_with_its_fix():
    """SageMaker needs role_arn, and S3 for the model: one error says both, not the first alone."""
    from omnidist.errors import ValidationError

    native = {**AZURE_ON_A_CLUSTER, "compute": "azureml:cpu",
              "resources": {"instance_count": 2, "instance_type": "Standard_D4s_v3"},
              "outputs": {"model": {"type": "uri_folder", "path": "azureml://datastores/ds/paths/model/"}}}
    with pytest.raises(ValidationError) as raised:
        omnidist.migrate(native, "azure_ml", "sagemaker")
    lines = str(raised.value).splitlines()
    assert lines[0].startswith("backends.sagemaker.role_arn: SageMaker runs every job as an IAM role: set role_arn")
    assert "sagemaker cannot express outputs.model" in lines[1] and '"s3://bkt/data/"' in lines[1]
    compiled, _ = omnidist.migrate(native, "azure_ml", "sagemaker", settings={
        "role_arn": "arn:aws:iam::111122223333:role/Training",
        "data_map": {"azureml://datastores/ds/paths/model/": "s3://bkt/model/"}})
    assert compiled.request["RoleArn"] == "arn:aws:iam::111122223333:role/Training"
    assert compiled.request["OutputDataConfig"]["S3OutputPath"] == "s3://bkt/model/"


UNREADABLE = {"type": "command", "command": "python t.py --data ${{inputs.data}} --extra ${{inputs.extra}}",
              "environment": {"image": "p:1"},
              "inputs": {"data": {"type": "uri_folder", "path": "azureml://datastores/ws/paths/cifar"},
                         "extra": {"type": "uri_folder", "path": "azureml://datastores/ws/paths/extra"}},
              "outputs": {"model": {"type": "uri_folder", "path": "azureml://datastores/lake/paths/model/"}}}


def test_every_unreadable_data_location_is_listed_at_once_with_its_data_map_fix():
    """Three locations Vertex cannot read: one refusal (exit 3) names each with its rewrite."""
    from omnidist.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError) as raised:
        omnidist.migrate(UNREADABLE, "azure_ml", "vertex")
    text = str(raised.value)
    assert raised.value.exit_code == 3 and text.startswith("vertex cannot express 3 parts of the job")
    listed = [line.strip().split(":")[0] for line in text.splitlines()[1:]]
    assert listed == ["inputs.data", "inputs.extra", "outputs.model"]
    assert text.count("data_map = ") == 3 and '"azureml://datastores/lake/paths/model/" = "gs://bkt/data/"' in text
    assert "stand" not in text and "gs://bkt/data/extra" not in text  # the stand-ins are never shown
    compiled, report = omnidist.migrate(UNREADABLE, "azure_ml", "vertex", settings={"data_map": {
        "azureml://datastores/ws/paths/": "gs://bkt/in/", "azureml://datastores/lake/paths/": "gs://bkt/out/"}})
    assert compiled.request["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"][-3:] == [
        "/gcs/bkt/in/cifar", "--extra", "/gcs/bkt/in/extra"]


def test_unreadable_locations_and_missing_settings_come_in_one_error():
    """SageMaker: role_arn and every location it cannot read, each once, in one exit-2 error."""
    from omnidist.errors import ValidationError

    with pytest.raises(ValidationError) as raised:
        omnidist.migrate(UNREADABLE, "azure_ml", "sagemaker")
    lines = str(raised.value).splitlines()
    assert lines[0].startswith("backends.sagemaker.role_arn:")
    assert sorted(line.split(":")[0].removeprefix("sagemaker cannot express ") for line in lines[1:]) == [
        "inputs.data", "inputs.extra", "outputs.model"]
    assert all('"s3://bkt/data/"' in line for line in lines[1:])


def test_the_example_values_never_reach_a_request():
    from omnidist.errors import ValidationError

    native = {**AZURE_ON_A_CLUSTER, "compute": "azureml:cpu",
              "resources": {"instance_count": 2, "instance_type": "Standard_D4s_v3"}}
    with pytest.raises(ValidationError, match="role_arn"):
        omnidist.migrate(native, "azure_ml", "sagemaker")
