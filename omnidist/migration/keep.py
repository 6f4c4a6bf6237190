"""What the program saw on the source, kept where omnidist can instead of only reported (SPEC §14).

Each function reads the source's :class:`~omnidist.migration.world.World` (from the native request,
not the portable job) and changes the job so the target's program sees the same, saying so:

- the image's own argv: SageMaker runs ``IMAGE train`` when a request names no
  ``ContainerEntrypoint``; elsewhere the image runs with the args it is given, so a job that
  names neither command nor args carries ``args: [train]``.
"""

from __future__ import annotations

import attrs

from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.migration.world import ENTRYPOINT, World
from omnidist.model.job import DistributedJob


def keep_observed(job: DistributedJob, world: World) -> tuple[DistributedJob, list[ReportEntry]]:
    """``job`` changed so that the target's program sees what ``world`` says, and a line for each change."""
    return keep_image_args(job, world)


def keep_image_args(job: DistributedJob, world: World) -> tuple[DistributedJob, list[ReportEntry]]:
    """The args the source platform gave the image's own entrypoint (SageMaker's ``train``),
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
