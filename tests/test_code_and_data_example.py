"""The worked example of docs/code-and-data.md (examples/code-and-data): the page shows the
files as they are and what compile really makes of them; importers take the requests back
without crashing (refusing what they cannot hold is fine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import omnidist
from omnidist.errors import OmnidistError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "code-and-data"
PAGE = (ROOT / "docs" / "code-and-data.md").read_text()
PROFILES = {"gcp": "vertex", "legacy": "ai_platform", "azure": "azure_ml", "laptop": "local"}


@pytest.fixture
def in_example(monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    for var in ("OMNIDIST_PROFILE", "OMNIDIST_BACKEND"):
        monkeypatch.delenv(var, raising=False)


def test_the_page_shows_the_example_files_as_they_are():
    assert (EXAMPLE / "job.yaml").read_text() in PAGE
    lines = (EXAMPLE / "omnidist.toml").read_text().splitlines()[1:]  # below the file's own comment
    assert "\n".join(lines).strip() in PAGE


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_the_example_compiles_for_every_backend(in_example, profile):
    compiled = omnidist.compile("job.yaml", profile=profile)
    assert compiled.backend == PROFILES[profile]


def test_the_page_shows_what_compile_writes(in_example):
    vertex = omnidist.compile("job.yaml", profile="gcp").request
    spec = vertex["jobSpec"]["workerPoolSpecs"][0]["pythonPackageSpec"]
    assert f'"args": {json.dumps(spec["args"])},' in PAGE
    assert f'"packageUris": {json.dumps(spec["packageUris"])},' in PAGE
    assert vertex["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"] in PAGE
    azure = omnidist.compile("job.yaml", profile="azure").render("yaml")
    excerpt = PAGE.split("```yaml\ncommand: ", 1)[1].split("```", 1)[0]
    assert "command: " + excerpt.strip() in azure
    legacy = omnidist.compile("job.yaml", profile="legacy").request["trainingInput"]
    assert f"`jobDir: {legacy['jobDir']}`" in PAGE


@pytest.mark.parametrize("profile", ["gcp", "legacy", "azure"])
def test_importers_take_the_compiled_requests_back_or_refuse_cleanly(in_example, profile):
    compiled = omnidist.compile("job.yaml", profile=profile)
    try:
        job = omnidist.import_native(compiled.request, backend=PROFILES[profile])
    except OmnidistError:
        return  # reading code/data back from native formats is not supported yet: a clean refusal
    assert job.name == "mnli-probe"


@pytest.mark.parametrize("job, backend, code, message", [
    ({"args": ["${{inputs.trian}}"], "inputs": {"train": "gs://b/t"}}, "vertex", 2,
     "job.yaml: args[0]: refers to ${{inputs.trian}}, but inputs declares no 'trian'. Did you mean 'train'?"),
    ({"code": "./src", "command": ["python", "t.py"]}, "local", 2, "job.yaml: code: the code folder './src'"),
    ({"image": None, "framework_version": "9.9", "command": ["x"]}, "azure_ml", 2,
     "framework_version: Azure ML (curated environments) has no prebuilt pytorch 9.9; versions: 2.0"),
    ({"command": [], "args": ["--epochs", "3"]}, "azure_ml", 3, "azure_ml cannot express command"),
    ({"inputs": {"d": "gs://b/d"}, "command": ["x"]}, "azure_ml", 3, "azure_ml cannot express inputs.d"),
])
def test_the_cli_exits_with_the_code_and_names_the_field(tmp_path, job, backend, code, message):
    from omnidist.model import serde
    from omnidist.testing.cli import run_cli

    body = {"name": "t", "framework": "pytorch", "image": "trainer.example/t:1", "primary": {}, **job}
    (tmp_path / "job.yaml").write_text(serde.dump_yaml({k: v for k, v in body.items() if v is not None}))
    result = run_cli("compile", "job.yaml", "--backend", backend, cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert result.returncode == code and message in result.stderr and "Traceback" not in result.stderr
