"""Code, data and entrypoints when the job runs on this machine (SPEC §7). Pure: it computes
paths; :func:`make_output_dirs` is the one function that touches the disk.

- ``code``: the local folder is the replicas' working directory (the ``workdir`` setting
  still wins); ``module`` runs ``python -m MODULE ARGS`` there.
- ``inputs``: local paths (relative to the job file) and plain ``http(s)`` URLs are used as
  they are; any other URI is exit 3 unless ``data_map`` maps it to a local folder
  (``data_map = {"store://bkt/" = "/data/bkt/"}``, with a cloud store's scheme for ``store``).
- ``outputs``: local paths are used as they are; ``default`` outputs, and remote ones no
  ``data_map`` entry maps, land in the run folder (``<run>/outputs/NAME``).
- References are replaced in argv and env; the runtime gets ``OMNIDIST_INPUT_*``,
  ``OMNIDIST_OUTPUT_*`` and, for an output named ``model``, ``OMNIDIST_MODEL_DIR`` (not under
  the emulation of a platform that has no environment variables to carry them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist.backend.values import Note, NoteKind
from omnidist.compiler import code_data
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.model.data import JobInput, JobOutput
from omnidist.model.features import Feature
from omnidist.model.job import DistributedJob
from omnidist.model.limits import clipped_repr
from omnidist.model.roles import EffectiveRole, RoleName
from omnidist.runtime import hints

BACKEND = "local"


@attrs.frozen(kw_only=True)
class LocalData:
    """Where the job's code runs and where each input and output is on this machine."""

    job: DistributedJob
    values: code_data.DataValues
    cwd: Optional[str]
    outputs: dict[str, str]
    model_dir: Optional[str]
    notes: tuple[Note, ...]
    hints: bool

    def role(self, role: EffectiveRole) -> EffectiveRole:
        """The role with its module entrypoint, references replaced, and the data hints."""
        if role.name is RoleName.REDUCTION_SERVERS:
            return role
        role = code_data.substituted(code_data.with_module(role, self.job), self.values)
        if not self.hints:
            return role
        extra = code_data.data_hints(self.values)
        if self.model_dir:
            extra[hints.MODEL_DIR] = self.model_dir
        return attrs.evolve(role, env={**extra, **role.env})


def prepare(job: DistributedJob, settings: Any, run_dir: Path) -> tuple[DistributedJob, LocalData]:
    """Apply ``data_map``, resolve the code folder, and place every input and output."""
    job, notes = code_data.apply_data_map(job, getattr(settings, "data_map", None) or {})
    cwd = _code(job)
    outputs: dict[str, str] = {}

    def output(name: str, out: JobOutput) -> str:
        if out.scheme == "local":
            path = str(code_data.local_path(job, out.uri))
        else:
            path = str(run_dir / "outputs" / name)
            if not out.default:
                notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"outputs.{name}",
                                  message=f"written to the run folder's outputs/{name}, not {out.uri} (map its "
                                          "prefix to a local folder with data_map to choose)"))
        outputs[name] = path
        return path

    values = code_data.resolve_data(job, lambda name, inp: _input(name, inp, job), output)
    model_dir = outputs.get("model")
    return job, LocalData(job=job, values=values, cwd=cwd, outputs=outputs, model_dir=model_dir,
                          notes=tuple(notes), hints=_carries_hints(settings.emulate))


def _carries_hints(emulate: str) -> bool:
    """Whether the emulated platform's request has an environment field for the data hints."""
    from omnidist.runtime import platforms

    return platforms.emulation(emulate).ENV_FIELD


def _code(job: DistributedJob) -> Optional[str]:
    if job.code is None:
        return None
    folder = code_data.code_folder(job)
    if folder is None:
        raise code_data.foreign_uri("code", BACKEND, job.code, "code from a local folder")
    return str(folder)


def _input(name: str, inp: JobInput, job: DistributedJob) -> str:
    if inp.scheme in ("http", "https"):
        return inp.uri
    if inp.scheme != "local":
        raise UnsupportedFeatureError(
            Feature.INPUTS, BACKEND, f"{inp.uri} is not on this machine.",
            f'Copy it here and map its prefix to the folder in the profile, e.g. data_map = '
            f'{{"{inp.uri.rsplit("/", 1)[0]}/" = "/data/"}}.', subject=f"inputs.{name}")
    path = code_data.local_path(job, inp.uri)
    kind = code_data.path_kind(path)
    if kind not in (code_data.FOLDER, code_data.FILE):
        what = "does not exist" if kind == code_data.MISSING else f"cannot be read ({kind})"
        raise ValidationError(f"{clipped_repr(inp.uri)[1:-1]} ({clipped_repr(str(path))[1:-1]}) {what}",
                              source=job.source, path=f"inputs.{name}")
    return str(path)


def make_output_dirs(job: DistributedJob, settings: Any, run_dir: Path) -> None:
    """Create every output folder (before the replicas start); nothing for a job without outputs."""
    for path in prepare(job, settings, run_dir)[1].outputs.values():
        Path(path).mkdir(parents=True, exist_ok=True)
