"""A code folder for the code-and-data tests of every backend (a ``trainer`` package to run as
``python -m trainer.task``)."""

from __future__ import annotations

from pathlib import Path


def code_folder(root: Path) -> Path:
    """``root/src`` holding a ``trainer`` package whose ``task`` module prints ``training``."""
    src = root / "src" / "trainer"
    src.mkdir(parents=True, exist_ok=True)
    (src / "__init__.py").write_text("")
    (src / "task.py").write_text("print('training')\n")
    return root / "src"
