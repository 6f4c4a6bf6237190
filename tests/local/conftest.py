"""Shared helpers for the local backend tests: job folders and process checks."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml

from omnidist.local.environments import inherited


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs. A zombie counts as gone: this container's PID 1 does
    not reap orphans, and a zombie holds nothing."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in (b"Z", b"X")


@pytest.fixture
def job_dir(tmp_path):
    """``make(scripts={name: source}, **job)`` writes the scripts and a job.yaml; returns its path."""

    def make(scripts: dict[str, str], **job) -> Path:
        for name, source in scripts.items():
            (tmp_path / name).write_text(textwrap.dedent(source))
        body = {"name": "t", "framework": "pytorch", "primary": {}, **job}
        path = tmp_path / "job.yaml"
        path.write_text(yaml.safe_dump(body))
        return path

    return make


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """An environment without platform variables, with a private HOME (no profiles)."""
    for key in list(os.environ):
        if key not in inherited({key: ""}):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    for var in ("OMNIDIST_PROFILE", "OMNIDIST_BACKEND"):
        monkeypatch.delenv(var, raising=False)
    return dict(os.environ)
