"""Per-node launchers, both directions: ``processes_per_node`` means N processes on every backend
(SPEC §10).

A job's command is the program each process runs; how a node starts N of them is the platform's
business. Where the platform has its own per-node launcher (a processes-per-instance setting,
a PyTorchJob's ``nprocPerNode`` with torchrun, an MPIJob's slots) the compiler uses it; where the
platform starts the command once per node, :func:`start_processes` makes
the command start them, under ``omnidist launch --nproc-per-node=N`` (torchrun, wired from the
platform's variables), and says so in one note worded the same on every backend.

The other way, :func:`read_launcher` reads a launcher line a native job's command holds
(``torchrun …``, ``python -m torch.distributed.run …``, ``omnidist launch …``, ``deepspeed …``):
importing turns it back into the program and the processes it started, so the portable job never
carries one platform's launcher to another (a bare ``torchrun`` relies on a training operator's
``PET_*`` variables, which no other platform sets).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Optional

import attrs

from omnidist.backend.values import Note, NoteKind
from omnidist.errors import UnsupportedFeatureError
from omnidist.model.features import Feature
from omnidist.model.job import DistributedJob, Framework

PYTHON = frozenset({"python", "python3"})
"""Interpreter names a command may start with."""

TORCHRUN_PROGRAMS = frozenset({"torchrun"})
TORCHRUN_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch"})
"""torchrun as a program, and as the modules ``python -m`` runs it from."""

TORCHRUN_VALUES = frozenset({
    "--nproc_per_node", "--nproc-per-node", "--nnodes", "--node_rank", "--node-rank", "--master_addr",
    "--master-addr", "--master_port", "--master-port", "--rdzv_backend", "--rdzv-backend", "--rdzv_endpoint",
    "--rdzv-endpoint", "--rdzv_id", "--rdzv-id", "--rdzv_conf", "--rdzv-conf", "--max_restarts", "--max-restarts",
    "--monitor_interval", "--monitor-interval", "--start_method", "--start-method", "--role", "--log_dir",
    "--log-dir", "-r", "--redirects", "-t", "--tee", "--local_addr", "--local-addr", "--local-ranks-filter",
    "--logs_specs", "--logs-specs",
})
"""torchrun options that take a value (``--name=value`` or ``--name value``)."""

TORCHRUN_FLAGS = frozenset({"--standalone", "--no-python", "--no_python", "-m", "--module", "--run_path",
                            "--run-path", "--use_env", "--use-env"})
"""torchrun options that take none."""

WIRING = frozenset({"--nnodes", "--node_rank", "--node-rank", "--master_addr", "--master-addr", "--master_port",
                    "--master-port", "--rdzv_backend", "--rdzv-backend", "--rdzv_endpoint", "--rdzv-endpoint",
                    "--rdzv_id", "--rdzv-id", "--standalone"})
"""Options that say where the node's rendezvous is: each target's own launcher says it again."""

DEEPSPEED_VALUES = frozenset({"--num_gpus", "--num-gpus", "--num_nodes", "--num-nodes", "--hostfile", "-H",
                              "--master_addr", "--master_port", "--include", "--exclude", "--launcher",
                              "--node_rank"})
"""The ``deepspeed`` launcher's options that take a value."""

MPI_FRAMEWORKS = frozenset({Framework.HOROVOD})
"""Frameworks whose processes find each other through MPI: only an MPI launcher (mpirun,
horovodrun) starts them, on every node at once."""


@attrs.frozen(kw_only=True)
class Launcher:
    """A launcher line read from a command.

    Attributes:
        kind: ``torchrun``, ``omnidist`` or ``deepspeed``.
        program: what each process runs, as a portable command (``python train.py --lr 1``).
        processes: processes per node the line asks for; ``None`` when it leaves the count to its
            defaults or the platform (``--nproc_per_node gpu``, the operator's ``PET_NPROC_PER_NODE``).
        wiring: the rendezvous options it had (``--nnodes``, ``--master_addr``…), which the
            target's own launcher sets again.
        other: options with no portable meaning (``--max_restarts 3``), left behind.
    """

    kind: str
    program: tuple[str, ...]
    processes: Optional[int] = None
    wiring: tuple[str, ...] = ()
    other: tuple[str, ...] = ()


def _options(argv: Sequence[str], values: frozenset[str], flags: frozenset[str]) -> Optional[tuple[list[str], int]]:
    """The options before the program and where the program starts; ``None`` for an option the
    launcher does not have (the line is then not read: better left whole than misread)."""
    found, i = [], 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if not arg.startswith("-") or arg == "--":
            return found, i + (arg == "--")
        if name in values:
            if "=" in arg:
                found.append(arg)
                i += 1
            elif i + 1 < len(argv):
                found.append(f"{arg}={argv[i + 1]}")
                i += 2
            else:
                return None
        elif arg in flags:
            found.append(arg)
            i += 1
        else:
            return None
    return found, i


def _count(value: str) -> Optional[int]:
    return int(value) if value.isdigit() and int(value) >= 1 else None


def _value(options: Sequence[str], *names: str) -> Optional[str]:
    for option in reversed(options):
        name, _, value = option.partition("=")
        if name in names:
            return value
    return None


def _torchrun(argv: Sequence[str]) -> Optional[Launcher]:
    parsed = _options(argv, TORCHRUN_VALUES, TORCHRUN_FLAGS)
    if parsed is None:
        return None
    options, start = parsed
    rest = list(argv[start:])
    if not rest:
        return None
    if "-m" in options or "--module" in options:
        program = ("python", "-m", *rest)
    elif "--no-python" in options or "--no_python" in options:
        program = tuple(rest)
    else:
        program = ("python", *rest)
    shown = [o for o in options if o not in ("-m", "--module", "--no-python", "--no_python")]
    wiring = tuple(o for o in shown if o.split("=", 1)[0] in WIRING)
    other = tuple(o for o in shown if o not in wiring and not o.startswith(("--nproc_per_node", "--nproc-per-node")))
    processes = _count(_value(options, "--nproc_per_node", "--nproc-per-node") or "")
    return Launcher(kind="torchrun", program=program, processes=processes, wiring=wiring, other=other)


def _omnidist(argv: Sequence[str]) -> Optional[Launcher]:
    rest = list(argv[argv.index("launch") + 1:])
    parsed = _options(rest, frozenset({"--nproc-per-node"}), frozenset({"--dry-run"}))
    if parsed is None or not rest[parsed[1]:]:
        return None
    options, start = parsed
    program = tuple(rest[start:])
    if program[0].endswith(".py") or program[0] == "-m":  # omnidist launch runs these with python
        program = ("python", *program)
    return Launcher(kind="omnidist", program=program, processes=_count(_value(options, "--nproc-per-node") or ""))


def _deepspeed(argv: Sequence[str]) -> Optional[Launcher]:
    parsed = _options(argv, DEEPSPEED_VALUES, frozenset({"--no_python", "--no-python", "--module", "-m"}))
    if parsed is None or not argv[parsed[1]:]:
        return None
    options, start = parsed
    rest = tuple(argv[start:])
    program = ("python", "-m", *rest) if "--module" in options or "-m" in options else \
        rest if "--no_python" in options or "--no-python" in options else ("python", *rest)
    wiring = tuple(o for o in options if o.split("=", 1)[0] in {"--num_nodes", "--num-nodes", "--hostfile", "-H",
                                                               "--master_addr", "--master_port", "--node_rank"})
    other = tuple(o for o in options if o not in wiring and not o.startswith(("--num_gpus", "--num-gpus")))
    processes = _count(_value(options, "--num_gpus", "--num-gpus") or "")
    return Launcher(kind="deepspeed", program=program, processes=processes, wiring=wiring, other=other)


def read_launcher(argv: Sequence[str]) -> Optional[Launcher]:
    """The launcher ``argv`` starts with, read into the program each process runs; ``None`` when
    ``argv`` is no launcher line (or one with options omnidist does not know: kept whole)."""
    argv = list(argv)
    if not argv:
        return None
    program = os.path.basename(argv[0])
    if program in TORCHRUN_PROGRAMS:
        return _torchrun(argv[1:])
    if program in PYTHON and len(argv) > 2 and argv[1] == "-m" and argv[2] in TORCHRUN_MODULES:
        return _torchrun(argv[3:])
    if program == "deepspeed":
        return _deepspeed(argv[1:])
    if program == "omnidist" and len(argv) > 1 and argv[1] == "launch":
        return _omnidist(argv)
    if program in PYTHON and argv[1:3] in (["-m", "omnidist"], ["-m", "omnidist.cli"]) and "launch" in argv:
        return _omnidist(argv[2:])
    return None


def omnidist_launch(program: Sequence[str], processes: int) -> tuple[str, ...]:
    """``omnidist launch --nproc-per-node=N -- PROGRAM``: torchrun wired from the platform's variables."""
    return ("omnidist", "launch", f"--nproc-per-node={processes}", "--", *program)


def bare_torchrun(program: Sequence[str]) -> tuple[str, ...]:
    """``torchrun PROGRAM`` with nothing wired: for a platform that sets torchrun's own defaults
    (a training operator's ``PET_NNODES``, ``PET_NPROC_PER_NODE``…)."""
    program = list(program)
    if len(program) > 1 and program[0] in PYTHON:
        return ("torchrun", *program[1:])
    return ("torchrun", "--no-python", *program)


LAUNCH_NOTE = ("{n} processes per node: {platform} starts the command once per node, so it runs under "
               "`{launcher}` ({how}); the image needs {needs}")
"""The one wording of a launcher a compiler adds, on every backend."""


def start_processes(job: DistributedJob, command: Sequence[str], processes: int, backend: str,
                    launcher: str = "omnidist") -> tuple[tuple[str, ...], Optional[Note]]:
    """``command`` made to start ``processes`` processes on a node whose platform starts it once.

    Args:
        job: the job (its framework decides what can start its processes).
        command: the role's command (already a launcher: kept as it is).
        processes: processes per node.
        backend: the target's name, for the note and the refusal.
        launcher: ``omnidist`` (``omnidist launch``, wired from the platform's variables) or
            ``torchrun`` (bare, for a platform that sets torchrun's defaults itself).

    Returns:
        The command, and the note saying what starts the processes (``None`` when nothing changed).

    Raises:
        UnsupportedFeatureError: the framework's processes need an MPI launcher across the nodes,
            which the platform does not run (Horovod where nothing starts ``mpirun``).
    """
    if processes <= 1 or not command or read_launcher(command) is not None or os.path.basename(command[0]) in (
            "mpirun", "horovodrun", "mpiexec"):
        return tuple(command), None
    if job.framework in MPI_FRAMEWORKS:
        raise UnsupportedFeatureError(
            Feature.PROCESSES_PER_NODE, backend,
            f"{processes} {job.framework.value} processes per node need an MPI launcher across the nodes "
            f"(mpirun), and {backend} starts the command once per node with no way to reach the others.",
            "Use a backend that runs an MPI launcher itself (one whose native form has an MPI distribution "
            "or an MPI job kind), "
            "start mpirun in the command yourself, "
            "or set processes_per_node: 1.", subject="processes_per_node")
    if launcher == "torchrun":
        wrapped = bare_torchrun(command)
        how, needs = "the platform sets torchrun's defaults", "torch (torchrun)"
    else:
        wrapped = omnidist_launch(command, processes)
        how, needs = "torchrun, wired from the platform's variables", "omnidist and torch (pip install omnidist)"
    # the launcher's words, not the program's (a bare torchrun replaces the program's `python`)
    program = tuple(command)
    kept = next(k for k in range(len(program), -1, -1) if wrapped[len(wrapped) - k:] == program[len(program) - k:])
    shown = " ".join(wrapped[: len(wrapped) - kept]) + " …"
    return wrapped, Note(kind=NoteKind.APPROXIMATED, field="processes_per_node",
                         message=LAUNCH_NOTE.format(n=processes, platform=backend, launcher=shown, how=how,
                                                    needs=needs))
