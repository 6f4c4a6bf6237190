"""Job -> the processes the local backend starts: one per replica, with its argv, env and cwd.

Pure: no process is started and no port is opened here. Ports come in as an argument
(:func:`omnidist.local.runner.free_ports` at run time, :data:`PREVIEW_PORT` onwards for
``compile``), so the same job and ports always give the same plan.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist import lowering
from omnidist.backend import Note, NoteKind
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.job import DistributedJob, RoleName
from omnidist.local import code_data, environments
from omnidist.local.environments import Slot

PREVIEW_PORT = 29500
"""First port shown by ``compile``; ``run`` and ``submit`` use free ports chosen by the OS."""

PYTHON_NAMES = frozenset({"python", "python3"})
"""Program names replaced by the interpreter running omnidist (or the ``python`` setting)."""

AZURE_ROLES = frozenset({RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS})
"""Roles an Azure ML command job has (parameter servers only with TensorFlow)."""


@attrs.frozen(kw_only=True)
class ReplicaSpec:
    """One process to start: which replica it is, and how to start it.

    ``env`` holds what the job and the emulated platform set; the runner adds it over the
    user's own environment (minus platform variables).
    """

    role: str
    index: int
    argv: tuple[str, ...] = attrs.field(converter=tuple)
    env: dict[str, str]
    cwd: str

    @property
    def label(self) -> str:
        """The output prefix: ``primary-0``, ``worker-1``…"""
        return f"{self.role}-{self.index}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the local backend's compiled request, the run directory's plan)."""
        return {"role": self.role, "index": self.index, "argv": list(self.argv), "env": dict(self.env),
                "cwd": self.cwd}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReplicaSpec:
        """The inverse of :meth:`to_dict`."""
        return cls(**data)


def _check_emulation(job: DistributedJob, emulate: str) -> None:
    """What the emulated platform cannot run is refused here, as that platform's compiler would."""
    if emulate != "azure_ml":
        return
    for role in lowering.effective_roles(job):
        if role.name is RoleName.REDUCTION_SERVERS:
            continue
        if role.name not in AZURE_ROLES:
            raise UnsupportedFeatureError(role.name.value, "local (azure_ml emulation)",
                                          "an Azure ML command job has no such role.",
                                          "Run it under --emulate vertex, or drop the role.")
        if role.name is RoleName.PARAMETER_SERVERS and job.framework.value != "tensorflow":
            raise UnsupportedFeatureError("parameter_servers", "local (azure_ml emulation)",
                                          "Azure ML has parameter servers only in TensorFlow distributions.",
                                          "Set framework: tensorflow, or run under --emulate vertex.")


def _local_roles(job: DistributedJob) -> list[lowering.EffectiveRole]:
    return [r for r in lowering.effective_roles(job) if r.name is not RoleName.REDUCTION_SERVERS]


def replica_count(job: DistributedJob) -> int:
    """How many processes the job runs locally (reduction servers are not run)."""
    return sum(int(r.replicas) for r in _local_roles(job))


def slots(job: DistributedJob, ports: Sequence[int]) -> list[Slot]:
    """Every replica that runs locally, in pool order, each on 127.0.0.1 with the next port."""
    wanted = [(r.name, i) for r in _local_roles(job) for i in range(int(r.replicas))]
    if len(ports) < len(wanted):
        raise ValueError(f"{len(wanted)} replicas need {len(wanted)} ports, got {len(ports)}")
    return [Slot(role=name, index=i, address=f"127.0.0.1:{port}") for (name, i), port in zip(wanted, ports)]


def _argv(command: tuple[str, ...], args: tuple[str, ...], python: Optional[str]) -> tuple[str, ...]:
    argv = (*command, *args)
    if argv and argv[0] in PYTHON_NAMES:
        argv = (python or sys.executable, *argv[1:])
    return argv


def workdir(job: DistributedJob, setting: Optional[str]) -> str:
    """Where the replicas run: the ``workdir`` setting, else the job file's folder, else here."""
    folder = setting or (os.path.dirname(job.source) if job.source else "") or "."
    return os.path.abspath(folder)


def preview_run_dir(job: DistributedJob, settings: Any) -> Path:
    """The run folder ``compile`` shows (``run`` and ``submit`` make a real one per run)."""
    from omnidist.local.runs import runs_root

    return runs_root(getattr(settings, "runs_dir", None)) / f"{job.name}-preview"


def build(job: DistributedJob, settings: Any, ports: Sequence[int],
          run_dir: Optional[Path] = None) -> list[ReplicaSpec]:
    """The processes to start for ``job`` under ``settings.emulate``, in pool order; outputs
    land in ``run_dir`` (default: :func:`preview_run_dir`).

    Raises:
        ValidationError: a role has no command to run.
        UnsupportedFeatureError: the emulated platform cannot run the job (Azure ML with
            evaluators, or parameter servers outside TensorFlow).
    """
    _check_emulation(job, settings.emulate)
    job, local = code_data.prepare(job, settings, run_dir or preview_run_dir(job, settings))  # SPEC §7
    placed = slots(job, ports)
    platform = environments.platform_env(job, settings.emulate, placed, use_chief=use_chief(job, settings))
    cwd = workdir(job, settings.workdir or local.cwd)
    specs = []
    for slot, platform_vars in zip(placed, platform):
        role = local.role(lowering.effective_role(job, slot.role))
        if not role.command:
            raise ValidationError(f"{slot.role.value} has no command; the local backend runs the job's command "
                                  "(e.g. command: [python, train.py])", source=job.source, path="command")
        env = {**environments.hint_env(job, settings.emulate, slot.role), **role.env, **platform_vars}
        specs.append(ReplicaSpec(role=slot.role.singular, index=slot.index, cwd=cwd, env=env,
                                 argv=_argv(role.command, role.args, settings.python)))
    return specs


def use_chief(job: DistributedJob, settings: Any) -> bool:
    """AI Platform's ``useChiefInTfConfig``: the setting, or the job's ``backends.ai_platform`` block."""
    block = job.backends.get("ai_platform", {})
    return bool(settings.use_chief_in_tf_config or block.get("use_chief_in_tf_config", False))


def notes(job: DistributedJob, settings: Any) -> list[Note]:
    """What running locally changes about the job, one note each."""
    found = list(code_data.prepare(job, settings, preview_run_dir(job, settings))[1].notes)
    images = sorted({r.image for r in lowering.effective_roles(job) if r.image})
    if images:
        found.append(Note(kind=NoteKind.DROPPED, field="image", message=f"image {', '.join(images)} is not used; "
                          "the local backend runs the command on this machine"))
    if any(r.name is RoleName.REDUCTION_SERVERS for r in lowering.effective_roles(job)):
        found.append(Note(kind=NoteKind.DROPPED, field="reduction_servers", message="reduction servers are "
                          "skipped locally (they only speed up NCCL all-reduce between GPU machines)"))
    gpus = sorted({str(r.accelerator) for r in lowering.effective_roles(job) if r.accelerator})
    if gpus:
        found.append(Note(kind=NoteKind.DROPPED, field="accelerator", message=f"{', '.join(gpus)} is not "
                          "attached; the replicas use this machine's devices"))
    commands = {r.command[0] for r in lowering.effective_roles(job) if r.command}
    if commands & PYTHON_NAMES:
        found.append(Note(kind=NoteKind.DEFAULTED, field="command", message=f"python runs as "
                          f"{settings.python or sys.executable} (the interpreter running omnidist; set "
                          "backends.local.python to change it)"))
    return found
