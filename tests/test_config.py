"""Profiles and the backend switch (omnidist/config.py, SPEC §2)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import attrs
import pytest

from omnidist import config
from omnidist.errors import ConfigError, ValidationError
from omnidist.model.job import DistributedJob


@attrs.frozen(kw_only=True)
class Settings:
    project: Optional[str] = None
    region: str = "us-central1"
    machine: Optional[str] = None


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


PROFILES = """
default = "{default}"
[profiles.gcp]
backend = "vertex"
project = "{project}"
[profiles.azure]
backend = "azure_ml"
workspace = "ws"
"""


def test_no_profile_and_no_backend_means_local(isolated):
    assert config.resolve() == config.Target(backend="local")


def test_default_key_of_the_nearest_omnidist_toml_walking_up(isolated):
    _write(isolated / "omnidist.toml", PROFILES.format(default="gcp", project="near"))
    deep = isolated / "a" / "b"
    deep.mkdir(parents=True)
    target = config.resolve(cwd=deep)
    assert target.backend == "vertex" and target.profile.settings == {"project": "near"}
    assert target.profile.source.endswith("omnidist.toml")


def test_pyproject_tool_table_when_there_is_no_omnidist_toml(isolated):
    _write(isolated / "pyproject.toml", "[project]\nname='x'\n[tool.omnidist]\ndefault='azure'\n"
           "[tool.omnidist.profiles.azure]\nbackend='azure_ml'\nworkspace='ws'\n")
    target = config.resolve()
    assert target.backend == "azure_ml" and "[tool.omnidist]" in target.profile.source


def test_user_config_file_last(isolated, monkeypatch, tmp_path):
    _write(
        Path(tmp_path / "home" / ".config" / "omnidist" / "config.toml"), PROFILES.format(default="gcp", project="user")
    )
    assert config.resolve().profile.settings["project"] == "user"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config.resolve().backend == "local"  # XDG_CONFIG_HOME moves the user file


def test_nearer_files_win_and_farther_profiles_stay_available(isolated, tmp_path):
    _write(tmp_path / "home" / ".config" / "omnidist" / "config.toml",
           PROFILES.format(default="azure", project="user") + '[profiles.lab]\nbackend = "local"\n')
    _write(isolated / "omnidist.toml", PROFILES.format(default="gcp", project="project"))
    assert config.resolve().profile.settings["project"] == "project"
    assert config.resolve(profile="lab").backend == "local"


def test_precedence_argument_then_session_then_environment_then_default(isolated, monkeypatch):
    _write(isolated / "omnidist.toml", PROFILES.format(default="gcp", project="p"))
    monkeypatch.setenv("OMNIDIST_PROFILE", "azure")
    assert config.resolve().backend == "azure_ml"
    config.use(profile="gcp")
    try:
        assert config.resolve().backend == "vertex"
        assert config.resolve(profile="azure").backend == "azure_ml"
    finally:
        config.use()
    monkeypatch.setenv("OMNIDIST_BACKEND", "local")
    assert config.resolve() == config.Target(backend="local", profile=config.resolve().profile)
    assert config.resolve(backend="ai_platform").backend == "ai_platform"


def test_unknown_profile_suggests_and_names_the_files(isolated):
    _write(isolated / "omnidist.toml", PROFILES.format(default="gcp", project="p"))
    with pytest.raises(ConfigError, match=r"profile 'azur' is not defined\. Did you mean 'azure'\?.*omnidist\.toml"):
        config.resolve(profile="azur")


def test_broken_files_are_config_errors(isolated):
    _write(isolated / "omnidist.toml", "default = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config.resolve()
    _write(isolated / "omnidist.toml", "[profiles.x]\nproject='p'\n")
    with pytest.raises(ConfigError, match=r"profiles\.x\.backend: every profile names its backend"):
        config.resolve(profile="x")


def _target(settings: dict, backend="vertex") -> config.Target:
    return config.Target(
        backend=backend, profile=config.Profile(name="gcp", backend="vertex", settings=settings, source="omnidist.toml")
    )


def test_settings_precedence_job_block_over_profile_over_defaults():
    job = DistributedJob(
        name="j", framework="custom", backends={"vertex": {"region": "europe-west4"}}, source="job.yaml"
    )
    settings = config.settings_for(Settings, "vertex", _target({"project": "p", "region": "us-east1"}), job)
    assert settings == Settings(project="p", region="europe-west4")
    assert config.settings_for(Settings, "vertex", _target({}), None) == Settings()
    explicit = config.settings_for(Settings, "vertex", _target({}), job, {"region": "asia-east1"})
    assert explicit.region == "asia-east1"


def test_bad_settings_keys_are_reported_where_they_were_written():
    job = DistributedJob(name="j", framework="custom", backends={"vertex": {"regoin": "x"}}, source="job.yaml")
    with pytest.raises(ValidationError, match=r"^job\.yaml: backends\.vertex\.regoin: unknown key; did you mean 'region'\?"):
        config.settings_for(Settings, "vertex", _target({}), job)
    with pytest.raises(ValidationError, match=r"^omnidist\.toml: profiles\.gcp\.projekt: unknown key"):
        config.settings_for(Settings, "vertex", _target({"projekt": "p"}), None)


def test_overridden_backend_takes_only_the_profile_keys_it_understands():
    target = _target({"project": "p", "workspace": "azure-only"}, backend="ai_platform")
    assert config.settings_for(Settings, "ai_platform", target, None).project == "p"


def test_the_cache_sees_every_edit_at_once(isolated):
    """What the files said is cached; an edit of the same size, a new nearer file and a deleted
    one are seen on the next call (the cache is keyed on the files' bytes, not on times)."""
    outer = _write(isolated / "omnidist.toml", PROFILES.format(default="gcp", project="aaaa"))
    assert config.resolve().profile.settings == {"project": "aaaa"}
    _write(outer, PROFILES.format(default="gcp", project="bbbb"))  # same size, same second
    assert config.resolve().profile.settings == {"project": "bbbb"}
    deep = isolated / "deep"
    deep.mkdir()
    assert config.resolve(cwd=deep).profile.settings == {"project": "bbbb"}
    nearer = _write(deep / "omnidist.toml", PROFILES.format(default="azure", project="x"))
    assert config.resolve(cwd=deep).backend == "azure_ml"
    nearer.unlink()
    assert config.resolve(cwd=deep).backend == "vertex"
    outer.unlink()
    assert config.resolve(cwd=deep) == config.Target(backend="local")


def test_settings_are_merged_once_per_profile_and_again_when_it_changes(isolated):
    _write(isolated / "omnidist.toml", PROFILES.format(default="gcp", project="one"))
    first = config.settings_for(Settings, "vertex", config.resolve())
    assert first.project == "one" and config.settings_for(Settings, "vertex", config.resolve()) is first
    _write(isolated / "omnidist.toml", PROFILES.format(default="gcp", project="two"))
    assert config.settings_for(Settings, "vertex", config.resolve()).project == "two"
    job = DistributedJob(name="j", framework="custom", backends={"vertex": {"machine": "n1"}})
    assert config.settings_for(Settings, "vertex", config.resolve(), job).machine == "n1"
    assert config.settings_for(Settings, "vertex", config.resolve(), None, {"region": "eu"}).region == "eu"
