"""Portable checkpoints: where to save, how to mark a save complete, which one to resume from (SPEC §15).

Standard library only. The job's output named ``checkpoints`` is the folder; each save is a
sub-folder ``step-<N>`` holding a completion marker (:data:`MARKER`). A save is written into a
hidden temporary folder first and renamed into place, and the marker is written last, so a
replica preempted in the middle of a save leaves either no ``step-<N>`` or one without the
marker: :func:`latest_checkpoint` ignores both and a resumed job never reads half a checkpoint.
(An object store's FUSE mount may not rename folders; there the save is copied into place instead, and
the marker written last is what keeps it safe.)

Where the folder is, per platform (:func:`checkpoint_dir`):

- ``OMNIDIST_OUTPUT_checkpoints`` names a path (a bucket mount, a datastore mount,
  a Kubernetes volume, a folder the platform syncs with its object store, the run folder's
  ``outputs/checkpoints`` under ``omnidist run``): that path.
- It names a URI that a platform mounts as a folder on this machine (a platform module's
  ``BOUND.mounts``: an object store mounted through FUSE, say): the mount's path.
- With no hint, inside a platform that syncs a checkpoint folder of its own (a job written
  natively for it; a platform module's ``CHECKPOINT_PATH``): that folder when it exists.
- Otherwise ``None``: the job declares no checkpoints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Optional

from omnidist.runtime import hints, platforms
from omnidist.runtime.errors import RuntimeEnvError

OUTPUT = "checkpoints"
"""The output a job declares for its checkpoints."""

VARIABLE = f"{hints.OUTPUT_PREFIX}{OUTPUT}"
"""Where the compilers (and ``omnidist run``) say the checkpoints output is."""

MARKER = ".omnidist-complete"
"""Written last into a save's folder: a folder without it is not a checkpoint."""

PREFIX = "step-"
"""A save of step N is the folder ``step-N`` (steps are integers >= 0)."""

_STEP = re.compile(rf"{PREFIX}(\d+)")

_RACES = 50
"""How many times a save tries again after another process's save of the same step took its place."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """One complete save.

    Attributes:
        step: the step it was saved at.
        path: its folder (read the files the program wrote there).
    """

    step: int
    path: Path


def checkpoint_dir(environ: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    """The local folder this job's checkpoints go to, created if missing; ``None`` when it declares none.

    Args:
        environ: the variables to read (default: ``os.environ``).

    Raises:
        RuntimeEnvError: the checkpoints output is a URI this machine has no folder for.
    """
    env = os.environ if environ is None else environ
    value = env.get(VARIABLE)
    if value is None:  # a job written natively for a platform that syncs a checkpoint folder of its own
        native = platforms.first(lambda m: bool(getattr(m, "CHECKPOINT_PATH", None)) and m.detect(env))
        if native is not None and os.path.isdir(native.CHECKPOINT_PATH):
            return Path(native.CHECKPOINT_PATH)
        return None
    folder = _local(value)
    if folder is None:
        raise RuntimeEnvError(VARIABLE, f"{value!r} is a URI with no local folder here: give the job's "
                                        "checkpoints output a path or a URI the platform mounts or syncs, "
                                        "so saves survive the machine")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _local(value: str) -> Optional[Path]:
    if "://" not in value:
        return Path(value)
    for bound in platforms.bound().values():  # a URI a platform mounts as a folder
        for root, scheme in bound.mounts.items():
            if value.startswith(scheme) and os.path.isdir(root):
                return Path(root) / value[len(scheme):]
    return None


def _required(environ: Optional[Mapping[str, str]]) -> Path:
    folder = checkpoint_dir(environ)
    if folder is None:
        raise RuntimeEnvError(VARIABLE, "the job declares no output named 'checkpoints': add "
                                        "outputs: {checkpoints: {uri: ...}} to the job")
    return folder


@contextlib.contextmanager
def checkpoint(step: int, environ: Optional[Mapping[str, str]] = None) -> Iterator[Path]:
    """A new folder to save step ``step`` in; it becomes the newest complete checkpoint when the block ends.

    An exception in the block discards the folder (the previous checkpoint stays the latest).
    Saving a step that exists replaces it.

    Example:
        >>> with runtime.checkpoint(step) as folder:         # doctest: +SKIP
        ...     torch.save(model.state_dict(), folder / "model.pt")

    Args:
        step: the training step (an integer >= 0).
        environ: the variables to read (default: ``os.environ``).

    Raises:
        RuntimeEnvError: the job declares no checkpoints output.
        ValueError: ``step`` is not an integer >= 0.
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"checkpoint step must be an integer >= 0, not {step!r}")
    root = _required(environ)
    final = root / f"{PREFIX}{step}"
    temp = root / f".{PREFIX}{step}.tmp-{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir()
    try:
        yield temp
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    _publish(temp, final, step)


def _publish(temp: Path, final: Path, step: int) -> None:
    """Put the finished ``temp`` in place as ``final``, then its marker.

    Several processes may save the same step into one folder they all see (every replica of a job
    whose checkpoints output is a shared mount, or a local run): a save already there is moved aside
    and removed, and a rename that loses the race to another process's save tries again, so the
    folder always ends up holding one whole save of the step, marked complete."""
    for _ in range(_RACES):
        _move_aside(final)
        try:
            os.rename(temp, final)
            break
        except OSError:
            if final.exists():
                continue  # another process put its save there between the two renames
            # a FUSE mount that cannot rename folders: copy, the marker below still comes last
            shutil.copytree(temp, final)
            shutil.rmtree(temp, ignore_errors=True)
            break
    else:  # others keep saving this step: theirs stands, and they mark it
        shutil.rmtree(temp, ignore_errors=True)
        return
    marker = final / f"{MARKER}.tmp-{os.getpid()}"
    try:
        marker.write_text(f"{step}\n")
        os.replace(marker, final / MARKER)
    except FileNotFoundError:  # another process is putting its own save of the step in place; it marks it
        return


def _move_aside(final: Path) -> None:
    """Remove the save at ``final``, if any, by first renaming it out of the way (atomic, so a reader
    never sees a half-deleted step folder and two writers never delete each other's)."""
    if not final.exists():
        return
    aside = final.with_name(f".{final.name}.old-{os.getpid()}")
    try:
        os.rename(final, aside)
    except OSError:  # another process moved it first
        return
    shutil.rmtree(aside, ignore_errors=True)


def checkpoints(environ: Optional[Mapping[str, str]] = None) -> list[Checkpoint]:
    """Every complete checkpoint, oldest step first (empty when the job declares none)."""
    root = checkpoint_dir(environ)
    if root is None or not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        match = _STEP.fullmatch(entry.name)
        if match and (entry / MARKER).is_file():
            found.append(Checkpoint(step=int(match.group(1)), path=entry))
    return sorted(found, key=lambda c: c.step)


def latest_checkpoint(environ: Optional[Mapping[str, str]] = None) -> Optional[Checkpoint]:
    """The newest complete checkpoint (``.step``, ``.path``), or ``None`` for a fresh start.

    Example:
        >>> last = runtime.latest_checkpoint()                 # doctest: +SKIP
        >>> start = last.step + 1 if last else 0
    """
    found = checkpoints(environ)
    return found[-1] if found else None
