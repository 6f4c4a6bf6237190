"""Code, data and entrypoints on legacy AI Platform (SPEC §7): compile (every body checked
against the bundled ml v1 discovery document) and submit's code upload to a local Cloud Storage."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

import omnidist
from omnidist.kit import DistributedJob, NoteKind, UnsupportedFeatureError, ValidationError, structure
from omnidist.testing import FakeServer
from omnidist.testing.code import code_folder
from omnidist.testing.gcs import FakeStorage
from omnidist_ai_platform import AIPlatformBackend, AIPlatformSettings
from omnidist_ai_platform.testing import FakeMLService, schema_problems

GOLDEN = Path(__file__).parent / "golden"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "code-and-data"
RICH = {
    "name": "mnli-tf",
    "framework": "tensorflow",
    "code": "./src",
    "module": "trainer.task",
    "framework_version": "2.11",
    "inputs": {"train": "gs://bucket/mnli/train", "epochs": 10},
    "outputs": {"model": "default", "checkpoints": {"uri": "gs://bucket/ckpt"}},
    "args": ["--data", "${{inputs.train}}", "--epochs", "${{inputs.epochs}}", "--model-dir", "${{outputs.model}}",
             "--ckpt", "${{outputs.checkpoints}}"],
    "primary": {"accelerator": "T4:1"},
    "workers": {"replicas": 2},
    "parameter_servers": {"replicas": 1},
    "evaluators": {"replicas": 1, "accelerator": "none"},
}


def build(root: Path, data: dict, **settings):
    job = DistributedJob.from_dict(data, source=str(root / "job.yaml"))
    compiled = AIPlatformBackend().compile(job, structure(settings, AIPlatformSettings,
                                                                path="backends.ai_platform"))
    assert schema_problems(compiled.request) == []
    return compiled


def container(data: dict) -> dict:
    return {"name": "demo", "framework": "pytorch", "image": "gcr.io/p/t:1", "primary": {}, **data}


def test_golden_runtime_version_package_job(tmp_path):
    code_folder(tmp_path)
    compiled = build(tmp_path, RICH, staging_bucket="gs://stage", job_dir="gs://bucket/jobs/mnli")
    path = GOLDEN / "code_and_data.json"
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        path.write_text(compiled.render("json") + "\n")
    assert compiled.request == json.loads(path.read_text())
    ti = compiled.request["trainingInput"]
    assert (ti["runtimeVersion"], ti["pythonVersion"], ti["pythonModule"]) == ("2.11", "3.7", "trainer.task")
    assert ti["packageUris"] == ["gs://stage/omnidist/code/{content-sha256}.tar.gz"]
    assert ti["args"] == ["--data", "gs://bucket/mnli/train", "--epochs", "10", "--model-dir",
                          "gs://bucket/jobs/mnli/model", "--ckpt", "gs://bucket/ckpt"]
    assert ti["jobDir"] == "gs://bucket/jobs/mnli"
    assert "imageUri" not in ti["masterConfig"] and "acceleratorConfig" not in ti.get("evaluatorConfig", {})


def test_pytorch_runs_on_the_prebuilt_containers(tmp_path):
    code_folder(tmp_path)
    data = {**RICH, "framework": "pytorch", "framework_version": "1.10"}
    data.pop("parameter_servers")
    ti = build(tmp_path, data, staging_bucket="gs://stage", job_dir="gs://b/j").request["trainingInput"]
    assert ti["masterConfig"]["imageUri"] == "gcr.io/cloud-ml-public/training/pytorch-gpu.1-10"
    assert ti["evaluatorConfig"]["imageUri"] == "gcr.io/cloud-ml-public/training/pytorch-xla.1-10"
    assert "imageUri" not in ti["workerConfig"]  # the master's image: inherited
    assert "runtimeVersion" not in ti and ti["pythonModule"] == "trainer.task"


def test_a_job_without_a_command_runs_the_images_entrypoint():
    compiled = AIPlatformBackend().compile(DistributedJob.from_dict(container({"args": ["--epochs", "3"]})),
                                           AIPlatformSettings())
    assert schema_problems(compiled.request) == []
    master = compiled.request["trainingInput"]["masterConfig"]
    assert "containerCommand" not in master and master["containerArgs"] == ["--epochs", "3"]


def test_default_outputs_go_under_the_staging_bucket_as_job_dir():
    job = DistributedJob.from_dict(container({"outputs": {"model": "default"},
                                              "command": ["python", "t.py", "${{outputs.model}}"]}))
    compiled = AIPlatformBackend().compile(job, AIPlatformSettings(staging_bucket="gs://stage"))
    ti = compiled.request["trainingInput"]
    assert ti["jobDir"] == "gs://stage/omnidist/outputs/demo"
    assert ti["masterConfig"]["containerCommand"] == ["python", "t.py", "gs://stage/omnidist/outputs/demo/model"]
    assert any(n.kind is NoteKind.DEFAULTED and n.field == "backends.ai_platform.job_dir" for n in compiled.diagnostics)


@pytest.mark.parametrize("data, feature", [
    (container({"code": "./src", "command": ["python", "x.py"]}), "code"),
    (container({"inputs": {"d": "azureml://datastores/ws/paths/d"}, "command": ["x"]}), "inputs.d"),
    (container({"outputs": {"o": {"uri": "abfss://c@acct.dfs.core.windows.net/o"}}, "command": ["x"]}), "outputs.o"),
    (container({"image": None, "framework": "horovod", "framework_version": "1.0", "command": ["x"]}),
     "framework_version with framework horovod"),
])
def test_what_legacy_cannot_run_exits_3(tmp_path, data, feature):
    code_folder(tmp_path)
    with pytest.raises(UnsupportedFeatureError) as info:
        build(tmp_path, data)
    assert info.value.subject == feature


@pytest.mark.parametrize("data, path", [
    (container({"image": None, "framework": "tensorflow", "framework_version": "2.12", "command": ["x"]}),
     "framework_version"),
    (container({"image": None, "framework": "tensorflow", "framework_version": "2.11", "command": ["x"]}),
     "framework_version"),  # a runtime version runs a package: module and code
    (container({"module": "m", "code": "./src"}), "backends.ai_platform.staging_bucket"),
    (container({"outputs": {"m": "default"}, "command": ["x"]}), "backends.ai_platform.job_dir"),
])
def test_invalid_code_and_data_exit_2(tmp_path, data, path):
    code_folder(tmp_path)
    with pytest.raises(ValidationError) as info:
        build(tmp_path, data)
    assert info.value.problems[0].path == path


def test_an_unknown_runtime_version_lists_the_real_ones(tmp_path):
    with pytest.raises(ValidationError, match=r"no prebuilt tensorflow 2.12; versions: 1.15, 2.1, .*, 2.11$"):
        build(tmp_path, {**RICH, "framework_version": "2.12"}, job_dir="gs://b/j")


def test_data_map_makes_azure_data_readable(tmp_path):
    job = container({"inputs": {"d": "azureml://datastores/ws/paths/d/"}, "command": ["t", "${{inputs.d}}"]})
    compiled = build(tmp_path, job, data_map={"azureml://datastores/ws/paths/": "gs://bkt/"})
    assert compiled.request["trainingInput"]["masterConfig"]["containerCommand"] == ["t", "gs://bkt/d/"]


def test_the_example_compiles(monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    monkeypatch.delenv("OMNIDIST_PROFILE", raising=False)
    compiled = omnidist.compile(EXAMPLE / "job.yaml", profile="legacy")
    assert schema_problems(compiled.request) == []
    ti = compiled.request["trainingInput"]
    assert ti["args"][:2] == ["--train", "gs://my-bucket/mnli/"] and ti["jobDir"] == "gs://my-bucket/runs/mnli-probe"


def test_submit_uploads_the_package_once_per_content(tmp_path):
    code_folder(tmp_path)
    with FakeServer() as server:
        service, storage = FakeMLService(server), FakeStorage(server)
        settings = AIPlatformSettings(project="p", api_endpoint=server.url, storage_endpoint=server.url,
                                      credentials="anonymous", staging_bucket="gs://stage/pkgs", job_dir="gs://b/j")
        job = DistributedJob.from_dict(RICH, source=str(tmp_path / "job.yaml"))
        backends = [AIPlatformBackend(suffix=lambda n=n: f"s{n}", sleep=lambda s: None) for n in (1, 2)]
        for backend in backends:
            backend.submit(backend.compile(job, settings), settings)
        (key, archive), = storage.objects.items()
        sha = key[1].removeprefix("pkgs/omnidist/code/").removesuffix(".tar.gz")
        assert len(storage.uploads()) == 1 and len(sha) == 64
        for created in service.jobs.values():
            assert created["trainingInput"]["packageUris"] == [f"gs://stage/pkgs/omnidist/code/{sha}.tar.gz"]
        assert "omnidist_code-0.0.0/trainer/task.py" in tarfile.open(fileobj=io.BytesIO(archive)).getnames()
