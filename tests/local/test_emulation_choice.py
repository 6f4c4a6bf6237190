"""Which cloud a local run emulates when nobody says (the profile's, the job's backends block, else
vertex), the advice it gives when that cloud cannot run the job, and the notes ``omnidist run``
prints (details only with --verbose, compile notes with their field, none's lone ranks)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from omnidist import api
from omnidist.backend.values import NoteKind
from omnidist.errors import UnsupportedFeatureError
from omnidist.local import LocalBackend, LocalSettings
from omnidist.model.features import Feature, NoteCode
from omnidist.model.job import DistributedJob
from omnidist.testing.cli import run_cli

INFINIBAND = {"name": "ib", "framework": "pytorch", "image": "img:1", "command": ["python", "-c", "print('hi')"],
              "primary": {"accelerator": "A100:8"}, "workers": {"replicas": 1}, "interconnect": "infiniband"}


def _job(**changes) -> DistributedJob:
    return DistributedJob.from_dict({**INFINIBAND, **changes})


def test_the_default_emulation_names_the_ones_that_can_run_the_job_not_its_cloud_advice(clean_env):
    with pytest.raises(UnsupportedFeatureError) as caught:
        LocalBackend().compile(_job(), LocalSettings())
    error = caught.value
    assert error.backend == "local" and error.feature is Feature.INFINIBAND and error.exit_code == 3
    assert str(error) == ("local cannot express interconnect: infiniband: omnidist run emulates vertex unless told "
                          "otherwise, and vertex cannot express it. Run it with --emulate azure_ml or --emulate "
                          "sagemaker, which can (or set backends.local.emulate).")


def test_this_machines_own_limit_is_said_as_it_is_not_as_the_default_clouds(clean_env):
    """No emulation starts more processes than this machine allows: the refusal is the local
    limit, never "vertex cannot express it" with other emulations offered."""
    job = DistributedJob.from_dict({**INFINIBAND, "interconnect": "any", "primary": {},
                                    "workers": {"replicas": 600}})
    with pytest.raises(UnsupportedFeatureError) as caught:
        LocalBackend().compile(job, LocalSettings())
    assert str(caught.value).startswith("local cannot express replicas: 601 processes on one machine; it starts at "
                                        "most 512.") and "--emulate" not in str(caught.value)


def test_a_job_written_for_one_cloud_emulates_that_cloud(clean_env):
    compiled = LocalBackend().compile(_job(backends={"azure_ml": {"compute": "gpu"}}), LocalSettings())
    assert compiled.request["emulate"] == "azure_ml"
    chosen = [n for n in compiled.diagnostics if n.field == "emulate"]
    assert [(n.kind, n.code) for n in chosen] == [(NoteKind.DEFAULTED, None)]
    assert "the job's backends.azure_ml block" in chosen[0].message


def test_several_clouds_named_take_the_default_first_and_an_explicit_emulate_wins(clean_env):
    plain = dict(INFINIBAND, interconnect="any")
    both = DistributedJob.from_dict({**plain, "backends": {"azure_ml": {}, "vertex": {}}})
    assert LocalBackend().compile(both, LocalSettings()).request["emulate"] == "vertex"
    asked = LocalBackend().compile(both, LocalSettings(emulate="kubernetes"))
    assert asked.request["emulate"] == "kubernetes" and not [n for n in asked.diagnostics if n.field == "emulate"]


def test_the_refusal_of_a_cloud_the_job_names_is_that_clouds_own(clean_env):
    job = _job(backends={"kubernetes": {}})
    with pytest.raises(UnsupportedFeatureError) as caught:
        LocalBackend().compile(job, LocalSettings())
    assert caught.value.backend == "kubernetes"  # the job's own cloud: its advice is the point


def test_a_profile_for_a_cloud_makes_a_local_run_emulate_it(clean_env, tmp_path, monkeypatch):
    (tmp_path / "omnidist.toml").write_text('default = "azure"\n[profiles.azure]\nbackend = "azure_ml"\n'
                                            'subscription_id = "s"\nresource_group = "rg"\nworkspace = "ws"\n')
    monkeypatch.chdir(tmp_path)
    job, driver, settings = api.prepare(_job(), backend="local")
    assert settings.emulate == "azure_ml"
    assert driver.compile(job, settings).request["emulate"] == "azure_ml"
    _, _, asked = api.prepare(_job(), backend="local", settings={"emulate": "vertex"})
    assert asked.emulate == "vertex"


def test_validate_shows_no_cloud_advice_in_the_local_row(clean_env, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(DistributedJob.from_dict(INFINIBAND).to_yaml())
    result = run_cli("validate", str(path), env={"HOME": str(tmp_path), "COLUMNS": ""})
    local = next(line for line in result.stdout.splitlines() if line.startswith("local "))
    assert "--emulate azure_ml" in local and "H200" not in local and "vertex cannot express it" in local


def test_run_shows_details_only_when_verbose(clean_env, job_dir):
    path = job_dir({}, command=["python", "-c", "print('ok')"])
    quiet = run_cli("run", str(path))
    loud = run_cli("run", str(path), "--verbose")
    assert quiet.returncode == loud.returncode == 0, quiet.stderr + loud.stderr
    assert "python runs as" not in quiet.stderr and "the default" not in quiet.stderr
    assert f"python runs as {Path(sys.executable)}" in loud.stderr
    assert "the replicas get vertex's environment (the default;" in loud.stderr


def test_the_python_note_is_a_detail(clean_env):
    compiled = LocalBackend().compile(DistributedJob.from_dict({**INFINIBAND, "interconnect": "any"}), LocalSettings())
    assert {n.field for n in compiled.diagnostics if n.code is NoteCode.DETAIL} >= {"command", "ports", "gpus"}


def test_a_compile_note_keeps_its_subject(clean_env):
    job = DistributedJob.from_dict({"name": "tf", "framework": "tensorflow", "image": "img:1", "command": ["python"],
                                    "primary": {}, "workers": {"replicas": 1}})
    compiled = LocalBackend().compile(job, LocalSettings(emulate="ai_platform"))
    messages = [n.message for n in compiled.diagnostics if n.field == "useChiefInTfConfig"]
    assert messages and messages[0].startswith("ai_platform compile: useChiefInTfConfig: true for a TensorFlow job")


def test_replicas_without_a_platform_are_warned_that_they_are_all_rank_0(clean_env):
    job = DistributedJob.from_dict({"name": "five", "framework": "pytorch", "command": ["python"], "primary": {},
                                    "workers": {"replicas": 4}})
    compiled = LocalBackend().compile(job, LocalSettings(emulate="none"))
    warned = [n for n in compiled.diagnostics if n.field == "emulate" and n.kind is NoteKind.CHANGED]
    assert len(warned) == 1 and warned[0].message.startswith("5 replicas run with no platform environment")
    single = DistributedJob.from_dict({"name": "one", "framework": "pytorch", "command": ["python"], "primary": {}})
    assert not [n for n in LocalBackend().compile(single, LocalSettings(emulate="none")).diagnostics
                if n.kind is NoteKind.CHANGED]


def test_run_prints_notes_through_the_callers_printer(clean_env, job_dir):
    path = job_dir({}, command=["python", "-c", "print('ok')"], workers={"replicas": 1})
    job, driver, settings = api.prepare(str(path), backend="local", settings={"emulate": "none"})
    seen, out = [], io.StringIO()
    result = driver.run(job, settings, out=out, err=io.StringIO(), show=seen.append)
    assert result.exit_code == 0
    assert [n.kind for n in seen if n.field == "emulate"] == [NoteKind.CHANGED]
    assert not [n for n in seen if n.code is NoteCode.DETAIL]
