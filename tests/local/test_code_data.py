"""Code, data and entrypoints on this machine (SPEC §7): the code folder is the working
directory, local inputs work, remote ones need ``data_map``, outputs land in the run folder."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from omnidist import api
from omnidist.backend.values import JobState, NoteKind
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.local import LocalBackend, plan
from omnidist.model.job import DistributedJob

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "code-and-data"
PRINT = """
import json, os, sys
from omnidist.runtime import context
ctx = context()
print("CTX " + json.dumps({"cwd": os.getcwd(), "argv": sys.argv[1:], "inputs": ctx.inputs, "outputs": ctx.outputs,
                          "model_dir": ctx.model_dir}), flush=True)
"""


def settings(**kw):
    base = dict(emulate="vertex", workdir=None, python=None, use_chief_in_tf_config=False, data_map={}, runs_dir=None)
    return SimpleNamespace(**{**base, **kw})


def project(root: Path) -> Path:
    (root / "src" / "trainer").mkdir(parents=True)
    (root / "src" / "trainer" / "__init__.py").write_text("")
    (root / "src" / "trainer" / "task.py").write_text(PRINT)
    (root / "data" / "train").mkdir(parents=True)
    return root / "job.yaml"


def job(root: Path, **fields) -> DistributedJob:
    if not (root / "src").exists():
        project(root)
    body = {"name": "t", "framework": "pytorch", "primary": {}, "code": "./src", "module": "trainer.task",
            "inputs": {"train": "./data/train", "epochs": 2}, "outputs": {"model": "default"},
            "args": ["--data", "${{inputs.train}}", "--epochs", "${{inputs.epochs}}", "--out", "${{outputs.model}}"],
            **fields}
    return DistributedJob.from_dict(body, source=str(root / "job.yaml"))


def test_the_code_folder_is_the_working_directory_and_references_are_paths(tmp_path):
    specs = plan.build(job(tmp_path, workers={"replicas": 1}), settings(), [1, 2], run_dir=tmp_path / "run")
    primary = specs[0]
    assert primary.cwd == str(tmp_path / "src")
    assert primary.argv == (sys.executable, "-m", "trainer.task", "--data", str(tmp_path / "data" / "train"),
                            "--epochs", "2", "--out", str(tmp_path / "run" / "outputs" / "model"))
    assert primary.env["OMNIDIST_INPUT_train"] == str(tmp_path / "data" / "train")
    assert primary.env["OMNIDIST_MODEL_DIR"] == str(tmp_path / "run" / "outputs" / "model")
    assert specs[1].argv == primary.argv  # every replica runs the same module


def test_the_workdir_setting_still_wins_and_ai_platform_emulation_gets_no_hints(tmp_path):
    specs = plan.build(job(tmp_path), settings(workdir="/w", emulate="ai_platform"), [1], run_dir=tmp_path / "run")
    assert specs[0].cwd == "/w"
    assert not any(k.startswith("OMNIDIST_INPUT_") for k in specs[0].env)


def test_remote_inputs_need_a_data_map_to_a_local_folder(tmp_path):
    remote = job(tmp_path, inputs={"train": "gs://bkt/mnli/train", "epochs": 2})
    with pytest.raises(UnsupportedFeatureError) as info:
        plan.build(remote, settings(), [1], run_dir=tmp_path / "run")
    assert info.value.subject == "inputs.train" and "data_map" in str(info.value)
    (tmp_path / "mirror" / "mnli" / "train").mkdir(parents=True)
    mapped = settings(data_map={"gs://bkt/": str(tmp_path / "mirror") + "/"})
    assert plan.build(remote, mapped, [1], run_dir=tmp_path / "run")[0].argv[4] == str(tmp_path / "mirror/mnli/train")
    notes = plan.notes(remote, mapped)
    assert any(n.field == "inputs.train" and "data_map" in n.message for n in notes)


def test_a_missing_local_input_or_code_folder_is_exit_2(tmp_path):
    with pytest.raises(ValidationError) as info:
        plan.build(job(tmp_path, inputs={"train": "./nowhere", "epochs": 2}), settings(), [1], run_dir=tmp_path / "run")
    assert info.value.problems[0].path == "inputs.train"
    with pytest.raises(ValidationError) as info:
        plan.build(job(tmp_path, code="./missing"), settings(), [1], run_dir=tmp_path / "run")
    assert info.value.problems[0].path == "code"


def test_remote_outputs_land_in_the_run_folder_with_a_note(tmp_path):
    remote = job(tmp_path, outputs={"model": {"uri": "gs://bkt/model"}})
    spec = plan.build(remote, settings(), [1], run_dir=tmp_path / "run")[0]
    assert spec.argv[-1] == str(tmp_path / "run" / "outputs" / "model")
    note = next(n for n in plan.notes(remote, settings()) if n.field == "outputs.model")
    assert note.kind is NoteKind.APPROXIMATED and "gs://bkt/model" in note.message


def test_run_gives_the_program_its_data(tmp_path, clean_env):
    definition = job(tmp_path)
    out = io.StringIO()
    result = LocalBackend().run(definition, LocalBackend.settings_type(runs_dir=str(tmp_path / "runs")), out=out,
                                err=io.StringIO())
    assert result.exit_code == 0
    seen = json.loads(next(line for line in out.getvalue().splitlines() if "CTX " in line).split("CTX ", 1)[1])
    assert seen["cwd"] == str(tmp_path / "src") and seen["inputs"] == {"epochs": "2",
                                                                      "train": str(tmp_path / "data" / "train")}
    model = Path(seen["outputs"]["model"])
    assert model.is_dir() and model.parent.parent.parent == tmp_path / "runs" and seen["model_dir"] == str(model)


def test_submit_puts_outputs_in_the_runs_own_folder(tmp_path, clean_env):
    handle = api.submit(job(tmp_path), backend="local", settings={"runs_dir": str(tmp_path / "runs")})
    assert handle.wait(poll_interval=0.05, timeout=30).state is JobState.SUCCEEDED
    assert (tmp_path / "runs" / handle.id / "outputs" / "model").is_dir()
    assert any(f"runs/{handle.id}/outputs/model" in line for line in handle.logs())


def test_the_example_runs_on_this_machine(tmp_path, clean_env):
    ran = subprocess.run([str(Path(sys.executable).with_name("omnidist")), "run", "job.yaml"], cwd=EXAMPLE,
                         capture_output=True, text=True, timeout=120,
                         env={**clean_env, "XDG_STATE_HOME": str(tmp_path / "state")})
    assert ran.returncode == 0, ran.stderr
    assert "gs://my-bucket/mnli/ -> ./data/mnli/ (data_map)" in ran.stderr
    assert "[primary-0] trained on 8 examples for 3 epochs" in ran.stdout
    (probe,) = (tmp_path / "state").glob("omnidist/runs/mnli-probe-*/outputs/model/probe.json")
    assert set(json.loads(probe.read_text())) == {"contradiction", "entailment", "neutral"}
