"""Code, data and entrypoints on Vertex AI (SPEC §7): compile (checked with the SDK's own
CustomJob type) and submit's code upload against a local Cloud Storage."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

import omnidist
from omnidist.kit import (
    DistributedJob,
    NoteKind,
    Target,
    TransientBackendError,
    UnsupportedFeatureError,
    ValidationError,
    settings_for,
    structure,
)
from omnidist.testing import FakeServer
from omnidist.testing.code import code_folder
from omnidist.testing.fakeserver import Fault
from omnidist.testing.gcs import FakeStorage
from omnidist_vertex import VertexBackend, VertexSettings
from omnidist_vertex.testing import FakeVertex

GOLDEN = Path(__file__).parent / "golden"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "code-and-data"
RICH = {
    "name": "bert-mnli",
    "framework": "pytorch",
    "description": "Fine-tune BERT on MNLI",
    "code": "./src",
    "module": "trainer.task",
    "framework_version": "2.2",
    "inputs": {"train": "gs://bucket/mnli/train", "vocab": {"uri": "gs://bucket/vocab.txt", "mode": "download"},
               "epochs": 10},
    "outputs": {"model": "default", "checkpoints": {"uri": "gs://bucket/ckpt"}},
    "args": ["--data", "${{inputs.train}}", "--epochs", "${{inputs.epochs}}", "--model-dir", "${{outputs.model}}"],
    "env": {"VOCAB": "${{inputs.vocab}}"},
    "primary": {"accelerator": "V100:2"},
    "workers": {"replicas": 2},
    "evaluators": {"replicas": 1, "accelerator": "none"},
    "processes_per_node": 1,  # the prebuilt container runs the module once per replica
}
SETTINGS = {"staging_bucket": "gs://stage/omni", "base_output_dir": "gs://bucket/out"}


def build(root: Path, data: dict, **settings):
    job = DistributedJob.from_dict(data, source=str(root / "job.yaml"))
    return VertexBackend().compile(job, structure(settings, VertexSettings, path="backends.vertex"))


def pools(compiled) -> list:
    return compiled.request["jobSpec"]["workerPoolSpecs"]


def container(data: dict) -> dict:
    return {"name": "demo", "framework": "pytorch", "image": "gcr.io/p/t:1", "primary": {}, **data}


# --- compile ---------------------------------------------------------------------------------------

def test_golden_rich_job(tmp_path, valid):
    code_folder(tmp_path)
    compiled = build(tmp_path, RICH, **SETTINGS)
    valid(compiled.request)
    path = GOLDEN / "code_and_data.json"
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        path.write_text(compiled.render("json") + "\n")
    assert compiled.request == json.loads(path.read_text())
    primary, workers, _, evaluators = pools(compiled)
    spec = primary["pythonPackageSpec"]
    assert spec["executorImageUri"] == "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-2.py310:latest"
    assert spec["packageUris"] == ["gs://stage/omni/omnidist/code/{content-sha256}.tar.gz"]
    assert spec["pythonModule"] == "trainer.task" and "containerSpec" not in primary
    assert spec["args"] == [
        "--data",
        "/gcs/bucket/mnli/train",
        "--epochs",
        "10",
        "--model-dir",
        "/gcs/bucket/out/model",
    ]
    env = {e["name"]: e.get("value") for e in spec["env"]}
    assert env["VOCAB"] == "/gcs/bucket/vocab.txt" and env["OMNIDIST_OUTPUT_checkpoints"] == "/gcs/bucket/ckpt"
    assert env["OMNIDIST_INPUT_epochs"] == "10"
    # accelerator: none stops the evaluators inheriting the primary's V100s: a CPU machine and image
    assert "acceleratorType" not in evaluators["machineSpec"]
    assert evaluators["pythonPackageSpec"]["executorImageUri"].endswith("/pytorch-xla.2-2.py310:latest")
    assert compiled.request["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://bucket/out"}
    notes = {n.field: n for n in compiled.diagnostics}
    assert notes["inputs.vocab"].kind is NoteKind.APPROXIMATED
    assert notes["description"].kind is NoteKind.DROPPED
    assert "uploaded once per content" in notes["code"].message


def test_a_job_without_a_command_runs_the_images_entrypoint(valid):
    compiled = VertexBackend().compile(DistributedJob.from_dict(container({"args": ["--epochs", "3"]})),
                                       VertexSettings())
    spec = valid(compiled.request)["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    assert "command" not in spec and spec["args"] == ["--epochs", "3"]


def test_code_with_a_command_is_unpacked_from_cloud_storage_first(tmp_path, valid):
    code_folder(tmp_path)
    compiled = build(tmp_path, container({"code": "./src", "command": ["python", "train.py"], "args": ["--x", "1"]}),
                     staging_bucket="gs://stage")
    spec = valid(compiled.request)["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    shell, flag, script, name, *rest = spec["command"]
    assert (shell, flag, name, rest) == ("sh", "-c", "omnidist-code", ["python", "train.py"])
    assert "tar -xzf '/gcs/stage/omnidist/code/{content-sha256}.tar.gz' -C /tmp/omnidist-code --strip-components=1" \
        in script and script.endswith('cd /tmp/omnidist-code; exec "$@"')
    assert spec["args"] == ["--x", "1"]


def test_a_code_folder_in_cloud_storage_is_copied_for_a_command(valid):
    compiled = VertexBackend().compile(
        DistributedJob.from_dict(container({"code": "gs://bkt/src", "command": ["python", "train.py"]})),
        VertexSettings(),
    )
    script = valid(compiled.request)["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["command"][2]
    assert "cp -R /gcs/bkt/src/. /tmp/omnidist-code" in script


@pytest.mark.parametrize("data, path", [
    (container({"module": "m", "code": "gs://bkt/src"}), "code"),  # a module installs a package, not a folder
    (container({"code": "./missing", "command": ["python", "x.py"]}), "code"),
    (container({"code": "./src", "command": ["python", "x.py"]}), "backends.vertex.staging_bucket"),
    (container({"outputs": {"model": "default"}, "command": ["x"]}), "backends.vertex.base_output_dir"),
    (container({"framework_version": "2.9", "image": None, "command": ["x"]}), "framework_version"),
    (container({"args": ["${{inputs.trian}}"], "inputs": {"train": "gs://b/t"}}), "args[0]"),
])
def test_invalid_code_and_data_exit_2_with_the_path(tmp_path, data, path):
    code_folder(tmp_path)
    with pytest.raises(ValidationError) as info:
        build(tmp_path, data)
    assert info.value.problems[0].path == path and info.value.exit_code == 2


def test_a_missing_code_folder_is_named(tmp_path):
    with pytest.raises(ValidationError, match=r"job.yaml: code: the code folder './src' .*does not exist"):
        build(tmp_path, container({"code": "./src", "command": ["x"]}), staging_bucket="gs://s")


def test_an_unknown_framework_version_lists_the_real_ones():
    with pytest.raises(ValidationError) as info:
        VertexBackend().compile(DistributedJob.from_dict(container({"image": None, "framework_version": "3.0",
                                                                    "command": ["x"]})), VertexSettings())
    assert "1.12, 1.13, 2.0, 2.1, 2.2, 2.3, 2.4" in str(info.value)


@pytest.mark.parametrize("uri", ["azureml://datastores/ws/paths/x", "https://acct.blob.core.windows.net/c/x",
                                 "./data", "s3://bkt/x"])
def test_locations_vertex_cannot_read_exit_3(uri):
    job = DistributedJob.from_dict(container({"inputs": {"train": {"uri": uri}}, "command": ["x"]}))
    with pytest.raises(UnsupportedFeatureError) as info:
        VertexBackend().compile(job, VertexSettings())
    assert info.value.subject == "inputs.train" and "data_map" in str(info.value)


def test_data_map_rewrites_foreign_uris_with_a_note(valid):
    job = DistributedJob.from_dict(container({
        "inputs": {"train": "azureml://datastores/ws/paths/mnli/train"},
        "outputs": {"ckpt": {"uri": "azureml://datastores/ws/paths/ckpt"}},
        "command": ["python", "t.py", "${{inputs.train}}", "${{outputs.ckpt}}"]}))
    settings = VertexSettings(data_map={"azureml://datastores/ws/paths/": "gs://bkt/",
                                        "azureml://datastores/ws/paths/mnli/": "gs://mnli/"})
    compiled = VertexBackend().compile(job, settings)
    spec = valid(compiled.request)["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    assert spec["command"] == ["python", "t.py", "/gcs/mnli/train", "/gcs/bkt/ckpt"]  # the longest prefix wins
    rewrites = [n for n in compiled.notes(NoteKind.APPROXIMATED) if "data_map" in n.message]
    assert [n.field for n in rewrites] == ["inputs.train", "outputs.ckpt"]


def test_plain_urls_are_passed_and_outputs_default_under_the_staging_bucket(valid):
    job = DistributedJob.from_dict(container({"inputs": {"csv": "https://example.com/iris.csv"},
                                              "outputs": {"model": "default"},
                                              "command": ["t", "${{inputs.csv}}", "${{outputs.model}}"]}))
    compiled = VertexBackend().compile(job, VertexSettings(staging_bucket="gs://stage"))
    spec = valid(compiled.request)["jobSpec"]
    assert spec["workerPoolSpecs"][0]["containerSpec"]["command"] == \
        ["t", "https://example.com/iris.csv", "/gcs/stage/omnidist/outputs/demo/model"]
    assert spec["baseOutputDirectory"] == {"outputUriPrefix": "gs://stage/omnidist/outputs/demo"}
    assert any(
        n.kind is NoteKind.DEFAULTED and n.field == "backends.vertex.base_output_dir" for n in compiled.diagnostics
    )


def test_prebuilt_images_follow_the_region_and_refuse_frameworks_without_one(valid):
    job = DistributedJob.from_dict(container({"image": None, "framework": "tensorflow", "framework_version": "2.15",
                                              "command": ["python", "t.py"]}))
    compiled = VertexBackend().compile(job, VertexSettings(region="europe-west4"))
    assert valid(compiled.request)["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] == \
        "europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest"
    with pytest.raises(UnsupportedFeatureError, match="horovod"):
        VertexBackend().compile(attrs_evolve(job, framework="horovod"), VertexSettings())
    hinted = VertexBackend().compile(attrs_evolve(job, image="gcr.io/p/t:1"), VertexSettings())
    assert any(n.field == "framework_version" and n.kind is NoteKind.HINT for n in hinted.diagnostics)


def attrs_evolve(job, **changes):
    import attrs

    return attrs.evolve(job, **changes)


def test_the_example_compiles(monkeypatch, valid):
    monkeypatch.chdir(EXAMPLE)
    monkeypatch.delenv("OMNIDIST_PROFILE", raising=False)
    compiled = omnidist.compile(EXAMPLE / "job.yaml", profile="gcp")
    spec = valid(compiled.request)["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    assert spec["args"] == ["--train", "/gcs/my-bucket/mnli/", "--epochs", "3", "--model-dir",
                            "/gcs/my-bucket/runs/mnli-probe/model"]


# --- submit: the code upload --------------------------------------------------------------------------

@pytest.fixture
def services():
    with FakeServer() as server:
        yield FakeVertex(server), FakeStorage(server)


def resolved(job, server_url, **extra):
    overrides = {"project": "p", "api_endpoint": server_url, "storage_endpoint": server_url,
                 "credentials": "anonymous", "staging_bucket": "gs://stage/omni", "retry_initial_wait_s": 0,
                 "retry_max_wait_s": 0, **extra}
    return settings_for(VertexSettings, "vertex", Target(backend="vertex"), job, overrides)


def submit(tmp_path, services, data=None, **extra):
    vertex, storage = services
    job = DistributedJob.from_dict(data or RICH, source=str(tmp_path / "job.yaml"))
    settings = resolved(job, vertex.url, **extra)
    backend = VertexBackend(sleep=lambda s: None)
    handle = backend.submit(backend.compile(job, settings), settings)
    return vertex.jobs[handle.id]


def archive_names(data: bytes) -> list[str]:
    return tarfile.open(fileobj=io.BytesIO(data)).getnames()


def test_submit_uploads_the_code_once_per_content(tmp_path, services, valid):
    _, storage = services
    src = code_folder(tmp_path)
    (src / "data").mkdir()
    (src / "data" / "big.bin").write_bytes(b"x" * 1000)
    (src / ".gitignore").write_text("data/\n")
    job = submit(tmp_path, services, base_output_dir="gs://bucket/out")
    (key, archive), = storage.objects.items()
    sha = key[1].removeprefix("omni/omnidist/code/").removesuffix(".tar.gz")
    assert key[0] == "stage" and len(sha) == 64
    uris = {tuple(p["pythonPackageSpec"]["packageUris"]) for p in job["jobSpec"]["workerPoolSpecs"] if p}
    assert uris == {(f"gs://stage/omni/omnidist/code/{sha}.tar.gz",)}
    names = archive_names(archive)
    assert "omnidist_code-0.0.0/trainer/task.py" in names and "omnidist_code-0.0.0/setup.py" in names
    assert not any("big.bin" in n for n in names)  # .gitignore honoured
    again = submit(tmp_path, services, base_output_dir="gs://bucket/out")
    assert len(storage.uploads()) == 1  # the same content is not uploaded twice
    assert again["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]["packageUris"] == list(uris.pop())
    (src / "trainer" / "task.py").write_text("print('changed')\n")
    submit(tmp_path, services, base_output_dir="gs://bucket/out")
    assert len(storage.uploads()) == 2 and len(storage.objects) == 2


def test_a_big_upload_is_resumable_with_a_progress_bar(tmp_path, services, capsys):
    _, storage = services
    src = code_folder(tmp_path)
    (src / "weights.bin").write_bytes(os.urandom(9 * 1024 * 1024))  # incompressible: > 8 MiB uploads resumably
    submit(tmp_path, services, base_output_dir="gs://bucket/out")
    assert "uploading code to gs://stage/omni/omnidist/code/" in capsys.readouterr().err
    starts = storage.uploads()
    assert [r.query["uploadType"] for r in starts] == [["resumable"]]
    (archive,) = storage.objects.values()
    assert "omnidist_code-0.0.0/weights.bin" in archive_names(archive)


def test_transient_upload_failures_are_retried_and_a_lost_race_is_fine(tmp_path, services):
    vertex, storage = services
    code_folder(tmp_path)
    vertex.server.fail("POST", r"^/upload/storage/", Fault.http(503))
    submit(tmp_path, services, base_output_dir="gs://bucket/out")
    assert len(storage.uploads()) == 2 and len(storage.objects) == 1
    # Another submit uploaded the same content between our lookup and our upload: 412, not an error.
    vertex.server.fail("GET", r"^/storage/v1/b/stage/o/", Fault.http(404, "No such object"))
    submit(tmp_path, services, base_output_dir="gs://bucket/out")
    assert len(storage.uploads()) == 3 and len(storage.objects) == 1
    assert storage.uploads()[-1].query["ifGenerationMatch"] == ["0"]


def test_upload_failures_that_persist_are_backend_errors(tmp_path, services):
    vertex, _ = services
    code_folder(tmp_path)
    vertex.server.fail("POST", r"^/upload/storage/", *[Fault.http(503)] * 3)
    with pytest.raises(TransientBackendError):
        submit(tmp_path, services, base_output_dir="gs://bucket/out", retry_attempts=2)
    assert vertex.jobs == {}  # no job without its code


def test_a_package_job_that_runs_several_processes_per_node_is_refused(tmp_path):
    """The prebuilt container runs `python -m MODULE` once per replica: 2 processes per node (auto on
    V100:2) cannot start there (SPEC §10), so compile says so rather than run one."""
    code_folder(tmp_path)
    with pytest.raises(UnsupportedFeatureError, match="processes_per_node: 2 processes per node") as caught:
        build(tmp_path, {k: v for k, v in RICH.items() if k != "processes_per_node"}, **SETTINGS)
    assert "processes_per_node: 1" in caught.value.hint
