"""Run the installed ``omnidist`` command the way a user does, for end-to-end tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

OMNIDIST = str(Path(sys.executable).with_name("omnidist"))


def run_cli(*args: str, cwd: Optional[Path] = None, env: Optional[dict] = None, timeout: float = 120,
            input: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run ``omnidist ARGS`` in a subprocess with the caller's environment minus ``OMNIDIST_*``
    variables, plus ``env``; returns the completed process with text stdout/stderr."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIDIST_")}
    full_env.update(env or {})
    return subprocess.run([OMNIDIST, *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout, input=input)
