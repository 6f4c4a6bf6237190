"""What the program saw on the source, kept where omnidist can instead of only reported (SPEC §14).

Each function reads the source's :class:`~omnidist.migration.world.World` (from the native request,
not the portable job) and changes the job so the target's program sees the same, saying so:

- the image's own argv: a platform may run ``IMAGE train`` when a request names no
  ``ContainerEntrypoint``; elsewhere the image runs with the args it is given, so a job that
  names neither command nor args carries ``args: [train]`` (before compiling);
- an MPI program: its framework becomes Horovod, so the target starts it with ``mpirun`` or its
  MPI distribution (and a target that cannot is refused, exit 3);
- the cluster variables: a program that got ``MASTER_ADDR``/``RANK``/``WORLD_SIZE`` keeps them
  under ``omnidist launch`` where the target sets none (after compiling, from the target's World).
"""

from __future__ import annotations

import attrs

from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.migration.world import ENTRYPOINT, MPI_VARIABLES, TORCH_VARIABLES, Launcher, World
from omnidist.model.job import DistributedJob


def keep_observed(job: DistributedJob, world: World) -> tuple[DistributedJob, list[ReportEntry]]:
    """``job`` changed so that the target's program sees what ``world`` says, and a line for each change."""
    job, args = keep_image_args(job, world)
    job, mpi = keep_mpi(job, world)
    return job, args + mpi


def keep_image_args(job: DistributedJob, world: World) -> tuple[DistributedJob, list[ReportEntry]]:
    """The args the source platform gave the image's own entrypoint (such as ``train``),
    written into a job that names no command and no args."""
    node = world.training
    if node is None or node.argv[:1] != (ENTRYPOINT,) or len(node.argv) < 2 or job.command or job.args:
        return job, []
    if any(r is not None and (r.command or r.args) for r in (job.primary, job.workers)):
        return job, []
    args = tuple(node.argv[1:])
    return attrs.evolve(job, args=args), [ReportEntry(
        fidelity=Fidelity.INFERRED, field="args",
        message=f"{' '.join(args)}: {world.platform} runs the image as `IMAGE {' '.join(args)}` (its own "
                "ENTRYPOINT with these args); the target runs the image with the args it is given, so they are "
                "written down")]


def keep_cluster(job: DistributedJob, before: World, after: World) -> tuple[DistributedJob, list[ReportEntry]]:
    """A job whose program read torch's cluster variables on the source (a training operator's,
    a managed PyTorch distribution's) and would get none on the target (a platform that starts the
    command once per node, with no launcher for one process a node) runs under ``omnidist launch``,
    which sets them from the target's own (SPEC §14). Jobs whose processes find each other another
    way (TensorFlow's ``TF_CONFIG``, MPI) and jobs whose roles run commands of their own are left as
    they are (the report says what they lose)."""
    from omnidist.compiler.launchers import MPI_FRAMEWORKS, omnidist_launch, read_launcher
    from omnidist.model.job import Framework
    from omnidist.model.roles import RoleName, processes_per_node

    source, target = before.training, after.training
    if source is None or target is None or not job.command or read_launcher(job.command) is not None:
        return job, []
    if not TORCH_VARIABLES <= source.sees or TORCH_VARIABLES <= target.sees or before.node_count < 2:
        return job, []
    if job.framework is Framework.TENSORFLOW or job.framework in MPI_FRAMEWORKS or target.launcher is not Launcher.NONE:
        return job, []
    if any((role := job.role(r)) is not None and role.command for r in RoleName):
        return job, []
    command = omnidist_launch(job.command, processes_per_node(job))
    return attrs.evolve(job, command=command), [ReportEntry(
        fidelity=Fidelity.APPROXIMATED, field="command",
        message=f"runs under `{' '.join(command[:4])} …`: on {before.platform} the program got the cluster variables "
                f"{', '.join(sorted(TORCH_VARIABLES))}; {after.platform} starts the command once per node and sets "
                "none, so omnidist launch sets them from its own (the image needs omnidist and torch)")]


def keep_mpi(job: DistributedJob, world: World) -> tuple[DistributedJob, list[ReportEntry]]:
    """A program whose ranks ran under ``mpirun`` on the source (an MPIJob's launcher, a managed
    service's MPI distribution) is an MPI program wherever it goes: its framework becomes the portable
    one an MPI launcher starts (Horovod), so the target runs ``mpirun`` or its MPI distribution."""
    from omnidist.compiler.launchers import MPI_FRAMEWORKS
    from omnidist.model.job import Framework

    node = world.training
    if node is None or node.launcher is not Launcher.MPIRUN or job.framework in MPI_FRAMEWORKS:
        return job, []
    was = job.framework.value
    return attrs.evolve(job, framework=Framework.HOROVOD), [ReportEntry(
        fidelity=Fidelity.APPROXIMATED, field="framework",
        message=f"horovod (was {was}): on {world.platform} the program's ranks found each other through mpirun "
                f"({node.processes} a node); horovod is the portable framework an MPI launcher starts")]


def refuse_lost_mpi(before: World, after: World) -> None:
    """An MPI program (its ranks started by ``mpirun`` across the nodes) on a target that starts
    independent copies instead cannot keep its meaning (exit 3).

    Raises:
        UnsupportedFeatureError: naming ``processes_per_node``.
    """
    from omnidist.errors import UnsupportedFeatureError
    from omnidist.model.features import Feature

    source, target = before.training, after.training
    if source is None or target is None or source.launcher is not Launcher.MPIRUN:
        return
    if MPI_VARIABLES <= target.sees or (before.node_count < 2 and source.processes < 2):
        return
    raise UnsupportedFeatureError(
        Feature.PROCESSES_PER_NODE, after.platform,
        f"on {before.platform} the program's ranks are started by mpirun ({source.processes} a node on "
        f"{before.node_count} node(s)) and find each other through MPI; {after.platform} starts "
        f"{target.processes} independent process(es) a node, with no MPI launcher across the nodes.",
        "Migrate to a backend that runs an MPI launcher (an MPI distribution or an MPI job kind), or "
        "start mpirun in the command yourself (--command).", subject="processes_per_node")
