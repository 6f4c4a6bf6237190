"""Run directories of detached local runs (the local backend's ``submit``).

One folder per run, ``<runs_dir>/<run id>/``, holding:

- ``plan.json``: the replicas to start, the notes, the grace period (written by ``submit``);
- ``state.json``: ``state`` (queued, running, succeeded, failed, cancelled), ``exit_code``,
  ``failed`` (the first failing replica), ``groups`` (process groups), timestamps;
- ``output.log``: every replica's prefixed output;
- ``supervisor.pid`` and ``supervisor.log``: the supervisor process and its own errors;
- ``cancel``: present once a cancel was requested.

``state.json`` is replaced atomically, so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

DEFAULT_RUNS_DIR = "omnidist/runs"
"""Under ``$XDG_STATE_HOME`` (``~/.local/state``) unless the ``runs_dir`` setting says otherwise."""


def runs_root(setting: Optional[str], environ: Optional[dict[str, str]] = None) -> Path:
    """Where run directories live: the ``runs_dir`` setting, else the user's state directory."""
    if setting:
        return Path(setting).expanduser()
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".local" / "state")
    return Path(base) / DEFAULT_RUNS_DIR


class RunDir:
    """One run's folder and the files in it."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    @property
    def log_path(self) -> Path:
        """The prefixed output of every replica."""
        return self.path / "output.log"

    def exists(self) -> bool:
        """True when the run was submitted (its state file exists)."""
        return (self.path / "state.json").is_file()

    def create(self, plan: dict[str, Any]) -> None:
        """Make the folder and write the plan and the initial ``queued`` state."""
        self.path.mkdir(parents=True, exist_ok=False)
        (self.path / "plan.json").write_text(json.dumps(plan, indent=2), encoding="utf-8")
        self.log_path.touch()
        self._write({"state": "queued"})

    def read_plan(self) -> dict[str, Any]:
        """The saved plan."""
        return json.loads((self.path / "plan.json").read_text(encoding="utf-8"))

    def read_state(self) -> dict[str, Any]:
        """The last recorded state."""
        return json.loads((self.path / "state.json").read_text(encoding="utf-8"))

    def update(self, **fields: Any) -> dict[str, Any]:
        """Merge ``fields`` into the state (only the supervisor writes after ``create``)."""
        state = {**self.read_state(), **fields}
        self._write(state)
        return state

    def _write(self, state: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".state-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(state, fh, indent=2)
        os.replace(tmp, self.path / "state.json")

    def write_supervisor_pid(self, pid: int) -> None:
        """Record the supervisor process (written by ``submit`` once it has started it)."""
        (self.path / "supervisor.pid").write_text(str(pid), encoding="utf-8")

    def supervisor_pid(self) -> Optional[int]:
        """The supervisor's pid, when recorded."""
        try:
            return int((self.path / "supervisor.pid").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def request_cancel(self) -> None:
        """Leave the cancel marker (the supervisor reports ``cancelled`` when it sees it)."""
        (self.path / "cancel").touch()

    def cancel_requested(self) -> bool:
        """True once a cancel was requested."""
        return (self.path / "cancel").exists()
