"""Job -> the processes the local backend starts: one per replica (or per process the emulated
platform starts itself), with its argv, env and cwd.

Pure: no process is started and no port is opened here. Ports come in as an argument
(:func:`omnidist.local.runner.free_ports` at run time, :data:`PREVIEW_PORT` onwards for
``compile``), and so do the machine's GPUs (:func:`omnidist.local.gpus.visible_gpus` at run
time, none for ``compile``), so the same job, ports and GPUs always give the same plan.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist.backend.values import Note, NoteKind
from omnidist.compiler.launchers import start_processes
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.local import code_data, environments
from omnidist.local.emulated import Native, cluster, job_facts, native
from omnidist.local.environments import Slot
from omnidist.local.gpus import VARIABLE as GPU_VARIABLE
from omnidist.local.gpus import GpuAssignment, assign_gpus
from omnidist.model.features import NoteCode
from omnidist.model.fields import as_tuple
from omnidist.model.job import DistributedJob
from omnidist.model.limits import MAX_LOCAL_PROCESSES
from omnidist.model.roles import TRAINING_ROLES, RoleName, effective_role, effective_roles, processes_per_node
from omnidist.runtime import hints, platforms
from omnidist.runtime.launch import carry_processes_per_node

PREVIEW_PORT = 29500
"""First port shown by ``compile``; ``run`` and ``submit`` use free ports chosen by the OS."""

PYTHON_NAMES = frozenset({"python", "python3"})
"""Program names replaced by the interpreter running omnidist (or the ``python`` setting)."""


@attrs.frozen(kw_only=True)
class ReplicaSpec:
    """One process to start: which replica it is, and how to start it.

    ``env`` holds what the job and the emulated platform set; the runner adds it over the
    user's own environment (minus platform variables). ``process`` is the process's local
    rank where the emulated platform starts several per node itself, else ``None``.
    """

    role: str
    index: int
    argv: tuple[str, ...] = attrs.field(converter=as_tuple)
    env: dict[str, str]
    cwd: str
    process: Optional[int] = None

    @property
    def label(self) -> str:
        """The output prefix: ``primary-0``, ``worker-1``… (``worker-1.3``: its process 3)."""
        return f"{self.role}-{self.index}" + (f".{self.process}" if self.process is not None else "")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the local backend's compiled request, the run directory's plan)."""
        data = {"role": self.role, "index": self.index, "argv": list(self.argv), "env": dict(self.env),
                "cwd": self.cwd}
        if self.process is not None:
            data["process"] = self.process
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReplicaSpec:
        """The inverse of :meth:`to_dict`."""
        return cls(**data)


@attrs.frozen(kw_only=True)
class Place:
    """One replica of the emulated cluster before it has an address.

    Attributes:
        role: its role.
        index: its index within the role.
        runs: False for replicas the platform lists but the local backend does not start
            (reduction servers run the cloud's own image on real machines).
        processes: processes the platform itself starts for it, else 1.
    """

    role: RoleName
    index: int
    runs: bool = True
    processes: int = 1


@attrs.frozen(kw_only=True)
class Layout:
    """Every replica of the emulated cluster, and what the platform's compiler decided (pure).

    Attributes:
        job: the job.
        emulate: the emulated platform.
        native: the emulated platform's compile decisions (:mod:`omnidist.local.emulated`).
        places: every replica, in pool order.
    """

    job: DistributedJob
    emulate: str
    native: Native
    places: tuple[Place, ...]

    @property
    def port_count(self) -> int:
        """Addresses the cluster needs: one per replica, running or not."""
        return len(self.places)


def layout(job: DistributedJob, settings: Any) -> Layout:
    """The emulated cluster: its replicas and the processes the platform starts for each.

    Raises:
        UnsupportedFeatureError: the emulated platform cannot run the job (compile's error).
        ValidationError: the job is invalid for the emulated platform (compile's error).
    """
    _check_size(replica_count(job))  # before the platform's compiler: it is the processes that cost
    overrides = {"use_chief_in_tf_config": True} if getattr(settings, "use_chief_in_tf_config", False) else {}
    followed = native(job, settings.emulate, overrides)
    places: list[Place] = []
    for role, group in cluster(job, followed).items():  # the World of the request compiled for the platform
        runs = role is not RoleName.REDUCTION_SERVERS
        places += [Place(role=role, index=i, runs=runs, processes=group.processes) for i in range(group.count)]
    _check_size(sum(p.processes for p in places if p.runs))
    return Layout(job=job, emulate=settings.emulate, native=followed, places=tuple(places))


def _check_size(processes: int) -> None:
    """Refuse a run of more processes than :data:`~omnidist.model.limits.MAX_LOCAL_PROCESSES`:
    each gets every address of the cluster, so the plan grows with the square of the replicas."""
    if processes > MAX_LOCAL_PROCESSES:
        raise UnsupportedFeatureError(
            "replicas", "local", f"{processes} processes on one machine; it starts at most {MAX_LOCAL_PROCESSES}.",
            "Run the job with fewer replicas locally (a smaller copy of the job), or on a cloud backend.")


def replica_count(job: DistributedJob) -> int:
    """How many replicas of the job run locally (reduction servers are not run)."""
    return sum(int(r.replicas) for r in effective_roles(job) if r.name is not RoleName.REDUCTION_SERVERS)


def slots(plan: Layout, ports: Sequence[int]) -> list[Slot]:
    """Every replica of the emulated cluster, in pool order, each on 127.0.0.1 with the next port."""
    if len(ports) < plan.port_count:
        raise ValueError(f"{plan.port_count} replicas need {plan.port_count} ports, got {len(ports)}")
    return [Slot(role=p.role, index=p.index, address=f"127.0.0.1:{port}", runs=p.runs, processes=p.processes)
            for p, port in zip(plan.places, ports)]


def gpu_assignment(plan: Layout, gpus: Sequence[str], cpu: bool = False) -> GpuAssignment:
    """``CUDA_VISIBLE_DEVICES`` for each process :func:`build` starts (see :mod:`omnidist.local.gpus`).

    A training replica needs one GPU per process it runs: ``processes_per_node`` when the
    replica starts its processes itself (``omnidist launch``), one for each process the
    platform starts for it.
    """
    per_node = processes_per_node(plan.job)
    needs = []
    for place in plan.places:
        if not place.runs:
            continue
        need = max(per_node // place.processes, 1) if place.role in TRAINING_ROLES else 0
        needs += [need] * place.processes
    return assign_gpus(needs, gpus, cpu)


def _argv(command: tuple[str, ...], args: tuple[str, ...], python: Optional[str]) -> tuple[str, ...]:
    argv = (*command, *args)
    if argv and argv[0] in PYTHON_NAMES:
        argv = (python or sys.executable, *argv[1:])
    elif argv and argv[0] == "omnidist":  # this interpreter's omnidist, whether or not it is on PATH
        argv = (python or sys.executable, "-m", "omnidist.cli", *argv[1:])
    return argv


def workdir(job: DistributedJob, setting: Optional[str]) -> str:
    """Where the replicas run: the ``workdir`` setting, else the job file's folder, else here."""
    folder = setting or (os.path.dirname(job.source) if job.source else "") or "."
    return os.path.abspath(folder)


def preview_run_dir(job: DistributedJob, settings: Any) -> Path:
    """The run folder ``compile`` shows (``run`` and ``submit`` make a real one per run)."""
    from omnidist.local.runs import runs_root

    return runs_root(getattr(settings, "runs_dir", None)) / f"{job.name}-preview"


def build(job: DistributedJob, settings: Any, ports: Sequence[int], gpus: Sequence[str] = (),
          plan: Optional[Layout] = None, run_dir: Optional[Path] = None) -> list[ReplicaSpec]:
    """The processes to start for ``job`` under ``settings.emulate``, in pool order; outputs
    land in ``run_dir`` (default: :func:`preview_run_dir`).

    Args:
        job: the job.
        settings: the local backend's settings (``emulate``, ``workdir``, ``python``…).
        ports: one free port per replica of the cluster (:attr:`Layout.port_count`).
        gpus: the GPU ids replicas may use (none: leave ``CUDA_VISIBLE_DEVICES`` alone).
        plan: the job's :func:`layout`, when the caller already made it.
        run_dir: the run folder, where ``default`` outputs land (SPEC §7).

    Raises:
        ValidationError: a role has no command to run, or the job is invalid for the
            emulated platform.
        UnsupportedFeatureError: the emulated platform cannot run the job (one with
            evaluators or a Reduction Server, or parameter servers outside TensorFlow).
    """
    plan = plan or layout(job, settings)
    job, local = code_data.prepare(job, settings, run_dir or preview_run_dir(job, settings))  # SPEC §7
    placed = slots(plan, ports)
    platform = environments.platform_env(job, settings.emulate, placed, plan.native)
    devices = gpu_assignment(plan, gpus, getattr(settings, "cpu", False))
    cwd = workdir(job, settings.workdir or local.cwd)
    processes = [(slot, rank) for slot in placed if slot.runs for rank in range(slot.processes)]
    specs = []
    for (slot, rank), platform_vars, visible in zip(processes, platform, devices.visible):
        role = local.role(effective_role(job, slot.role))
        if not role.command:
            raise ValidationError(f"{slot.role.value} has no command; the local backend runs the job's command "
                                  "(e.g. command: [python, train.py])", source=job.source, path="command")
        command = role.command
        if not platforms.emulation(settings.emulate).ENV_FIELD:  # no field for the hint: the command carries it
            command = carry_processes_per_node(command, processes_per_node(job))
        if slot.role in TRAINING_ROLES and slot.processes == 1:  # the platform starts one: as compile, a launcher
            program = _argv(command, (), settings.python)  # the launcher's processes run this interpreter too
            command = start_processes(job, program, processes_per_node(job), settings.emulate)[0]
        gpu = {} if visible is None else {GPU_VARIABLE: visible}
        if devices.shared and slot.role in TRAINING_ROLES:
            gpu[hints.GPUS_SHARED] = "1"
        compiled = environments.world_env(plan.native.world, slot.role)  # what the request sets beyond the job's
        env = {**environments.hint_env(job, settings.emulate, slot.role), **compiled, **gpu, **role.env,
               **platform_vars}
        specs.append(ReplicaSpec(role=slot.role.singular, index=slot.index, cwd=cwd, env=env,
                                 argv=_argv(command, role.args, settings.python),
                                 process=rank if slot.processes > 1 else None))
    return specs


def notes(job: DistributedJob, settings: Any, plan: Optional[Layout] = None,
          gpus: Sequence[str] = ()) -> list[Note]:
    """What running locally changes about the job, one note each."""
    plan = plan or layout(job, settings)
    found = list(code_data.prepare(job, settings, preview_run_dir(job, settings))[1].notes)
    images = sorted({r.image for r in effective_roles(job) if r.image})
    if images:
        found.append(Note(kind=NoteKind.DROPPED, field="image", message=f"image {', '.join(images)} is not used; "
                          "the local backend runs the command on this machine"))
    if any(r.name is RoleName.REDUCTION_SERVERS for r in effective_roles(job)):
        listed = (f"; the platform's cluster lists {plan.native.reducers} of them, at addresses nothing listens on"
                  if plan.native.reducers else "")
        found.append(Note(kind=NoteKind.DROPPED, field="reduction_servers", message="reduction servers are "
                          f"not run locally (they only speed up NCCL all-reduce between GPU machines){listed}"))
    accelerators = sorted({str(r.accelerator) for r in effective_roles(job) if r.accelerator})
    if accelerators:
        found.append(Note(kind=NoteKind.DROPPED, field="accelerator", message=f"{', '.join(accelerators)} is not "
                          "attached; the replicas use this machine's devices"))
    devices = gpu_assignment(plan, gpus, getattr(settings, "cpu", False))
    if devices.note:
        found.append(Note(kind=NoteKind.DEFAULTED, field="gpus", message=devices.note))
    commands = {r.command[0] for r in effective_roles(job) if r.command}
    if commands & PYTHON_NAMES:
        found.append(Note(kind=NoteKind.DEFAULTED, field="command", code=NoteCode.DETAIL, message=f"python runs as "
                          f"{settings.python or sys.executable} (the interpreter running omnidist; set "
                          "backends.local.python to change it)"))
    module = platforms.emulation(settings.emulate)
    if hasattr(module, "notes"):
        facts = plan.native.facts or job_facts(job, settings.emulate)
        found += [Note(kind=NoteKind(kind[0]) if kind else NoteKind.HINT, field=field, message=message)
                  for field, message, *kind in module.notes(facts, plan.native.decided)]
    # A compile note's message follows its field ("useChiefInTfConfig: true for a TensorFlow job"):
    # run prints messages alone, so the field goes into the sentence.
    found += [Note(kind=n.kind, field=n.field, message=f"{settings.emulate} compile: {n.field}: {n.message}")
              for n in plan.native.notes]
    return found
