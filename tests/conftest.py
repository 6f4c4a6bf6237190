"""Shared fixtures for the core tests."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A working directory with no omnidist configuration above it and a private HOME."""
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for var in ("OMNIDIST_PROFILE", "OMNIDIST_BACKEND"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(work)
    return work
