"""Code, data and entrypoints on Azure ML (SPEC §7): compile (checked with ``azure.ai.ml.load_job``)
and submit's code upload through MLClient's own upload, at its transport (a local fake)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

import omnidist
from omnidist.kit import (
    DistributedJob,
    NoteKind,
    UnsupportedFeatureError,
    ValidationError,
    dump_yaml,
    parse_yaml,
)
from omnidist.testing.code import code_folder
from omnidist_azure_ml import AzureMLBackend, AzureMLSettings
from omnidist_azure_ml.testing_code import FakeAzureCode

GOLDEN = Path(__file__).parent / "golden"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "code-and-data"
RICH = {
    "name": "bert-mnli",
    "framework": "pytorch",
    "description": "Fine-tune BERT on MNLI",
    "code": "./src",
    "module": "trainer.task",
    "framework_version": "2.2",
    "inputs": {"train": "azureml://datastores/ws/paths/mnli/train/",
               "vocab": {"uri": "azureml://datastores/ws/paths/vocab.txt", "mode": "download"},
               "cached": "gs://bucket/cache/",
               "epochs": 10},
    "outputs": {"model": "default", "checkpoints": {"uri": "azureml://datastores/ws/paths/ckpt"}},
    "args": ["--data", "${{inputs.train}}", "--epochs", "${{inputs.epochs}}", "--model-dir", "${{outputs.model}}"],
    "env": {"VOCAB": "${{inputs.vocab}}", "MODE": "fast"},
    "primary": {"accelerator": "A100:8"},
    "workers": {"replicas": 1},
    "backends": {"azure_ml": {"data_map": {"gs://bucket/": "azureml://datastores/ws/paths/bucket/"}}},
}


def build(root: Path, data: dict, **overrides):
    from omnidist.kit import Target, settings_for

    job = DistributedJob.from_dict(data, source=str(root / "job.yaml"))
    settings = settings_for(AzureMLSettings, "azure_ml", Target(backend="azure_ml"), job, overrides)
    return AzureMLBackend().compile(job, settings)


def loaded(root: Path, request: dict):
    """The request through the SDK's own schemas (relative paths resolved against ``root``)."""
    from azure.ai.ml import load_job

    path = root / "compiled.yml"
    path.write_text(dump_yaml(request))
    return load_job(path)._to_job()._to_rest_object().as_dict()["properties"]


def container(data: dict) -> dict:
    return {"name": "demo", "framework": "pytorch", "image": "trainer.example/t:1", "command": ["python", "t.py"],
            "primary": {}, **data}


def test_golden_rich_job(tmp_path):
    code_folder(tmp_path)
    compiled = build(tmp_path, RICH)
    path = GOLDEN / "code_and_data.yaml"
    if os.environ.get("OMNIDIST_UPDATE_GOLDEN"):
        path.write_text(compiled.render("yaml"))
    assert compiled.request == parse_yaml(path.read_text())
    rest = loaded(tmp_path, compiled.request)
    assert rest["codeId"].endswith("src") and rest["description"] == "Fine-tune BERT on MNLI"
    assert rest["environmentId"] == \
        "azureml://registries/azureml/environments/acpt-pytorch-2.2-cuda12.1/labels/latest"
    inputs = rest["inputs"]
    assert inputs["train"] == {"jobInputType": "uri_folder", "uri": "azureml://datastores/ws/paths/mnli/train/"}
    assert inputs["vocab"]["jobInputType"] == "uri_file" and inputs["vocab"]["mode"] == "Download"
    assert inputs["cached"]["uri"] == "azureml://datastores/ws/paths/bucket/cache/"  # data_map
    assert inputs["epochs"] == {"jobInputType": "literal", "value": "10"}
    assert rest["outputs"]["model"] == {"jobOutputType": "uri_folder"}
    assert rest["outputs"]["checkpoints"]["mode"] == "ReadWriteMount"
    command = compiled.request["command"]
    assert command.endswith("python -m trainer.task --data ${{inputs.train}} --epochs ${{inputs.epochs}} "
                            "--model-dir ${{outputs.model}}")
    assert 'OMNIDIST_INPUT_train="${{inputs.train}}"' in command and 'VOCAB="${{inputs.vocab}}"' in command
    assert compiled.request["environment_variables"]["MODE"] == "fast"
    assert "VOCAB" not in compiled.request["environment_variables"]
    notes = {n.field: n for n in compiled.diagnostics}
    assert notes["inputs.cached"].kind is NoteKind.APPROXIMATED and notes["env.VOCAB"].kind is NoteKind.APPROXIMATED


@pytest.mark.parametrize("data, feature", [
    (container({"command": [], "args": ["--epochs", "3"]}), "command"),
    (container({"inputs": {"d": "gs://bucket/d"}}), "inputs.d"),
    (container({"outputs": {"o": {"uri": "gs://bucket/o"}}}), "outputs.o"),
    (container({"code": "gs://bucket/src"}), "code"),
    (container({"image": None, "framework": "horovod", "framework_version": "0.28"}),
     "framework_version with framework horovod"),
    (container({"primary": {"accelerator": "A100:8"}, "workers": {"replicas": 1, "accelerator": "none"}}),
     "workers.accelerator"),  # accelerator: none on workers: another VM size than the primary's
])
def test_what_azure_cannot_run_exits_3(tmp_path, data, feature):
    with pytest.raises(UnsupportedFeatureError) as info:
        build(tmp_path, data)
    assert info.value.subject == feature and info.value.exit_code == 3


@pytest.mark.parametrize("data, path", [
    (container({"image": None, "framework_version": "1.13"}), "framework_version"),
    (container({"code": "./missing"}), "code"),
    (container({"code": "./src", "backends": {"azure_ml": {"code": "./other"}}}), "code"),
    (container({"inputs": {"x": 1}, "backends": {"azure_ml": {"inputs": {"x": 2}}}}), "inputs.x"),
    (container({"args": ["${{outputs.model}}"]}), "args[0]"),
])
def test_invalid_code_and_data_exit_2(tmp_path, data, path):
    code_folder(tmp_path)
    with pytest.raises(ValidationError) as info:
        build(tmp_path, data)
    assert info.value.problems[0].path == path


def test_an_unknown_framework_version_lists_the_curated_environments(tmp_path):
    with pytest.raises(ValidationError, match=r"versions: 2\.0, 2\.1, 2\.2, 2\.3, 2\.4, 2\.5, 2\.7, 2\.8$"):
        build(tmp_path, container({"image": None, "framework_version": "2.6"}))


def test_references_to_azures_own_inputs_still_compile(tmp_path):
    compiled = build(tmp_path, container({"command": "python t.py --data ${{inputs.data}}", "args": [],
                                          "backends": {"azure_ml": {"inputs": {"data": {"type": "uri_folder",
                                                                                        "path": "azureml:x:1"}}}}}))
    assert compiled.request["inputs"] == {"data": {"type": "uri_folder", "path": "azureml:x:1"}}


def test_local_input_paths_are_uploaded_by_the_sdk(tmp_path):
    (tmp_path / "data").mkdir()
    compiled = build(tmp_path, container({"inputs": {"d": "./data"}, "args": ["${{inputs.d}}"]}))
    assert compiled.request["inputs"]["d"] == {"type": "uri_folder", "path": "./data"}
    assert loaded(tmp_path, compiled.request)["inputs"]["d"]["jobInputType"] == "uri_folder"


def test_the_example_compiles(monkeypatch, tmp_path):
    monkeypatch.chdir(EXAMPLE)
    monkeypatch.delenv("OMNIDIST_PROFILE", raising=False)
    compiled = omnidist.compile(EXAMPLE / "job.yaml", profile="azure")
    rest = loaded(tmp_path, {**compiled.request, "code": str(EXAMPLE / "src")})  # nothing written into the example
    assert rest["inputs"]["train"]["uri"] == "azureml://datastores/workspaceblobstore/paths/my-bucket/mnli/"


def test_submit_uploads_the_code_once_per_content(tmp_path, azure, settings):
    code = FakeAzureCode(azure.server)
    src = code_folder(tmp_path)
    (src / "scratch").mkdir()
    (src / "scratch" / "big.bin").write_bytes(b"x" * 100)
    (src / ".amlignore").write_text("scratch/\n")
    job = container({"code": "./src", "module": "trainer.task", "command": []})
    for suffix in ("s1", "s2"):
        backend = AzureMLBackend(suffix=lambda s=suffix: s, sleep=lambda s: None)
        backend.submit(build(tmp_path, job), settings)
    assert code.uploaded_files() == ["src/.amlignore", "src/trainer/__init__.py", "src/trainer/task.py"]
    assert len(code.versions) == 1  # the second submit found the same content and reused it
    (version_key,) = code.versions
    for name in ("demo-s1", "demo-s2"):
        props = azure.jobs[name]["properties"]
        assert props["codeId"].endswith(f"/codes/{version_key[0]}/versions/{version_key[1]}")
        assert props["command"] == "python -m trainer.task"
    assert len(azure.server.calls("POST", r"/startPendingUpload$")) == 1
    (src / "trainer" / "task.py").write_text("print('changed')\n")
    AzureMLBackend(suffix=lambda: "s3", sleep=lambda s: None).submit(build(tmp_path, job), settings)
    assert len(code.versions) == 2 and len(code.uploaded_files()) == 6


def test_a_large_code_folder_is_named_before_the_upload(tmp_path, monkeypatch):
    from omnidist_azure_ml import client

    src = code_folder(tmp_path)
    (src / "checkpoint.pt").write_bytes(b"\0" * 2048)
    compiled = build(tmp_path, container({"code": "./src"}))
    warnings: list[str] = []
    monkeypatch.setattr(client, "PROGRESS_ABOVE_BYTES", 1024)
    assert client.announce_upload(
        compiled, warn=warnings.append, large_above=1024
    )  # big enough for the SDK's progress bar
    assert "checkpoint.pt (2.0 KB)" in warnings[0]


@pytest.mark.parametrize("code", ["azureml://datastores/ds/paths/pkgs/trainer-0.1.tar.gz", "gs://b/trainer-0.1.whl"])
def test_a_built_python_package_is_not_code_azure_ml_can_run(code):
    job = DistributedJob.from_dict({"name": "pkg", "framework": "pytorch", "image": "i:1", "module": "trainer.task",
                                    "code": code, "primary": {}})
    with pytest.raises(UnsupportedFeatureError) as err:
        omnidist.compile(job, backend="azure_ml", settings={})
    assert err.value.subject == "code" and err.value.exit_code == 3
    assert "is a built Python package" in str(err.value) and "source folder" in str(err.value)


def test_the_sdk_uploads_exactly_what_omnidist_ships(tmp_path, azure, settings, caplog, monkeypatch):
    """The SDK follows links out of the folder and reads the root's ignore file only: it is given a
    copy of what ships, so a link to a file outside, a secret and a nested .gitignore's rules hold
    on Azure ML as on every other cloud."""
    code = FakeAzureCode(azure.server)
    src = code_folder(tmp_path)
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0\n")
    (src / "passwd").symlink_to(outside)
    (src / ".env").write_text("TOKEN=s3cr3t\n")
    (src / "trainer" / ".gitignore").write_text("*.ckpt\n")
    (src / "trainer" / "model.ckpt").write_bytes(b"weights")
    job = container({"code": "./src", "module": "trainer.task", "command": []})
    private = tmp_path / "tmp"  # this test's own temporary folder: other tests' copies come and go in /tmp
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    copies = lambda: {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("omnidist-code-")}  # noqa: E731
    before = copies()
    with caplog.at_level("WARNING"):
        AzureMLBackend(suffix=lambda: "s1", sleep=lambda s: None).submit(build(tmp_path, job), settings)
    assert code.uploaded_files() == ["src/.amlignore", "src/trainer/.gitignore", "src/trainer/__init__.py",
                                     "src/trainer/task.py"]
    assert all(b"root:x" not in data and b"s3cr3t" not in data for data in code.blobs.values())
    assert "left out of the code archive as secrets: .env" in caplog.text
    assert "links that leave the code folder (passwd -> " in caplog.text
    assert copies() == before, "the copy is removed"
