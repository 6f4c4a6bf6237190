"""The environment each emulated platform gives a replica, for the local backend.

Every replica listens on ``127.0.0.1`` with its own port (chosen by the OS at run time), so
the variables are the platform's real ones with local addresses: the hosts (``127.0.0.1``) and
ports in them can only be local, which is why their values are written here and not read from the
platform's :class:`~omnidist.migration.world.World` (it names the variables, not their values). They are written by the
platform's own module, :mod:`omnidist.runtime.platforms` (``<name>.emulate``), the same module
the runtime reads them with and the platform's compiler takes its tables from; this module only
hands it the cluster's slots and what the platform's compiler decided
(:mod:`omnidist.local.emulated`). ``--emulate none`` gives no platform variables: every replica
sees a single-process world. What each platform writes is described in docs/runtime.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

import attrs

from omnidist.compiler import lowering
from omnidist.local.emulated import Native, job_facts
from omnidist.model.job import DistributedJob
from omnidist.model.roles import TRAINING_ROLES, RoleName
from omnidist.runtime import platforms

if TYPE_CHECKING:  # a backend's world() builds it; the local run only reads it
    from omnidist.migration.world import World

EMULATIONS = platforms.emulations()
"""Platforms the local backend can emulate: every platform module with ``emulate``."""

PLATFORM_VARIABLES, PLATFORM_PREFIXES = platforms.variables()
"""Variables (and prefixes of variables) dropped from the environment ``omnidist run`` inherits, so a
stray one in the user's shell cannot change what a replica detects: every platform's ``VARIABLES``
and ``PREFIXES``."""


@attrs.frozen(kw_only=True)
class Slot:
    """One replica of the emulated cluster: its role, index within the role, and ``host:port``.

    Attributes:
        runs: False for replicas the platform lists but the local backend does not start
            (reduction servers: they run the cloud's own image on real machines).
        processes: processes the platform itself starts for this replica (a
            processes-per-instance setting); 1 elsewhere.
    """

    role: RoleName
    index: int
    address: str
    runs: bool = True
    processes: int = 1


def inherited(environ: dict[str, str]) -> dict[str, str]:
    """The user's environment without platform variables and ``OMNIDIST_*`` hints."""
    from omnidist.runtime import hints

    return {k: v for k, v in environ.items()
            if k not in PLATFORM_VARIABLES and not hints.is_hint(k) and not k.startswith(PLATFORM_PREFIXES)}


def platform_env(job: DistributedJob, emulate: str, slots: Sequence[Slot],
                 native: Optional[Native] = None) -> list[dict[str, str]]:
    """The emulated platform's variables for each process it starts, in slot order.

    A running slot gives ``slot.processes`` dicts in a row (one, except where the platform starts
    several processes per node); slots that do not run give none.
    """
    native = native or Native()
    placed = [platforms.Slot(role=s.role.singular, index=s.index, address=s.address, runs=s.runs,
                             processes=s.processes) for s in slots]
    return platforms.emulation(emulate).emulate(native.facts or job_facts(job, emulate), placed, native.decided)


MACHINE_BOUND = frozenset({"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_TOPO_FILE"})
"""Variables a platform's compile sets that name its machines' network interface or a file on its
images (``eth0``, an InfiniBand topology file): they can only be the platform's, and on this machine
they would point NCCL at hardware it lacks, so the local run leaves them out."""


OMNIDIST_PREFIX = "OMNIDIST_"


def world_env(world: Optional[World], role: RoleName) -> dict[str, str]:
    """The variables the request compiled for the emulated platform sets for ``role``'s processes, as
    its World reads them (a compiler's own additions, such as its interconnect tuning), less what is
    local here: :data:`MACHINE_BOUND`, the ``OMNIDIST_*`` hints (:func:`hint_env` and the command
    carry them for the local run) and values that stood for the job's data (the local run gives the
    job's own variables with local paths). A World may count the training nodes as one group."""
    from omnidist.local.emulated import LOCAL_DATA
    from omnidist.runtime import hints

    if world is None:
        return {}
    node = world.node(role.value)
    if node is None and role in TRAINING_ROLES:
        node = world.training
    if node is None:
        return {}
    return {k: v for k, v in node.env.items()
            if k not in MACHINE_BOUND and not (hints.is_hint(k) or k.startswith(OMNIDIST_PREFIX))
            and LOCAL_DATA not in v}


def hint_env(job: DistributedJob, emulate: str, role: RoleName) -> dict[str, str]:
    """The ``OMNIDIST_*`` hints a replica of ``role`` gets under ``emulate`` (user env goes over them):
    the platform's ``HINTS_PER_ROLE`` says which its compiler adds."""
    per_role = platforms.emulation(emulate).HINTS_PER_ROLE
    return {} if per_role is None else lowering.runtime_hints(job, role, per_role=per_role)
