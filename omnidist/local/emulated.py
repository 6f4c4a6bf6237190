"""What the emulated platform's own compiler decides about a job, for the local emulation.

Emulating a platform means giving replicas what that platform would give them for the request
``omnidist compile`` sends it. So the emulation compiles the job with the emulated platform's
backend (when its plugin is installed) and follows the result: it refuses what compile refuses
(with the same error and exit code), and the platform's module (``follow`` in
:mod:`omnidist.runtime.platforms`) reads from the request what its environment shows — the
Reduction Server pool compile sized, the compiled job a platform writes as
``CLUSTER_SPEC``'s ``job``, ``useChiefInTfConfig``, the processes compile asks the
platform to start per node. Without the plugin, the module's ``assume`` stands in, the roles
the platform's environment cannot place are refused, and a note says compile's own checks
were not made.

The job is compiled as it is, except that a job without ``image`` gets :data:`PLACEHOLDER_IMAGE`
(a local run needs none; every cloud does), and that its data stays on this machine: inputs,
outputs and code are left out and their references read as :data:`LOCAL_DATA` (where the data
is locally is :mod:`omnidist.local.code_data`'s business, not the emulated cloud's).

The request compiled for the platform also gives its :class:`~omnidist.migration.world.World`
(``world(request)`` of the platform's backend, SPEC §14), the description ``migrate`` compares and
``omnidist explain`` prints: :func:`cluster` reads from it how many replicas of each role the
platform starts and how many processes it starts on each node, so the emulator starts what the
report describes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

import attrs

from omnidist import config
from omnidist.backend import registry
from omnidist.backend.values import CompiledJob, Note, NoteKind
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.model.data import REFERENCE
from omnidist.model.job import DistributedJob
from omnidist.model.roles import TRAINING_ROLES, RoleName, effective_roles, replica_count
from omnidist.runtime import platforms

if TYPE_CHECKING:  # a backend's world() builds it; the local run only reads it
    from omnidist.migration.world import World

PLACEHOLDER_IMAGE = "local/omnidist-run:latest"
"""The image a job without one is compiled with for the emulation (never pulled)."""

LOCAL_DATA = "<local data>"
"""What a ``${{inputs.X}}``/``${{outputs.X}}`` reference reads as in the emulation's compile."""

RUN_NOTE_FIELDS = frozenset({"framework", "processes_per_node", "useChiefInTfConfig",
                             "distribution.process_count_per_instance"})
"""Fields whose compile notes ``omnidist run`` repeats: they change how processes start or what they see."""


@attrs.frozen(kw_only=True)
class Native:
    """What the emulated platform's compiler decided that the emulation follows.

    Attributes:
        request: the compiled request (``None`` without the platform's plugin, or for ``none``).
        facts: the job as the platform's module sees it (``None`` for ``none``).
        decided: what the platform's module read from the request (or assumed without one).
        notes: compile notes that matter to a local run, and what the emulation could not check.
        world: what the program sees on the platform for ``request`` (its backend's ``world``;
            ``None`` without a request, or where the backend derives none).
    """

    request: Optional[dict[str, Any]] = None
    facts: Optional[platforms.JobFacts] = None
    decided: platforms.Decided = attrs.field(factory=platforms.Decided)
    notes: tuple[Note, ...] = ()
    world: Optional[World] = None

    @property
    def reducers(self) -> int:
        """Reduction Server replicas the platform lists in its cluster (never run locally)."""
        return self.decided.reducers

    @property
    def processes_per_node(self) -> int:
        """Processes the platform itself starts on each training node."""
        return self.decided.processes_per_node


DEFAULT_REASON = "the default"
"""Why :func:`chosen` picked the default emulation (the only reason its refusals are rewritten)."""


def chosen(job: DistributedJob, emulate: Optional[str]) -> tuple[str, str]:
    """The platform to emulate and why (``""``: it was asked for): ``emulate`` when set; else the
    cloud the job has a ``backends.<name>`` block for (the default first when it names several:
    the job is written for that cloud); else :data:`~omnidist.runtime.platforms.DEFAULT_EMULATION`."""
    if emulate:
        return emulate, ""
    order = sorted(platforms.emulations(), key=lambda name: name != platforms.DEFAULT_EMULATION)
    named = [name for name in order if name in job.backends and name != "none"]
    if named:
        return named[0], f"the job's backends.{named[0]} block"
    return platforms.DEFAULT_EMULATION, DEFAULT_REASON


def refused(job: DistributedJob, emulate: str, exc: UnsupportedFeatureError) -> UnsupportedFeatureError:
    """The error for a job the default emulation cannot run: it names the emulations that can, not
    the default cloud's own advice (``Use accelerator H200:8`` means nothing on a laptop)."""
    able = []
    for other in platforms.emulations():
        if other in (emulate, "none"):
            continue
        try:
            native(job, other)
        except (UnsupportedFeatureError, ValidationError):
            continue
        able.append(other)
    way = (f"Run it with --emulate {' or --emulate '.join(able)}, which can" if able
           else "No emulated cloud can run it; --emulate none runs the replicas with no platform environment")
    return UnsupportedFeatureError(exc.feature, "local", f"omnidist run emulates {emulate} unless told otherwise, "
                                   f"and {emulate} {exc.verb} it.", f"{way} (or set backends.local.emulate).",
                                   subject=exc.subject)


def _data_kept_local(job: DistributedJob) -> DistributedJob:
    """The job without its inputs, outputs and code, references replaced by :data:`LOCAL_DATA`:
    a cloud's compiler would refuse local paths that the local run reads directly."""
    if not (job.inputs or job.outputs or job.code or job.module):
        return job

    def plain(argv: Optional[tuple[str, ...]]) -> Optional[tuple[str, ...]]:
        return None if argv is None else tuple(REFERENCE.sub(LOCAL_DATA, a) for a in argv)

    def plain_env(env: dict[str, str]) -> dict[str, str]:
        return {k: REFERENCE.sub(LOCAL_DATA, v) for k, v in env.items()}

    roles = {r.value: attrs.evolve(role, command=plain(role.command), args=plain(role.args), env=plain_env(role.env))
             for r in RoleName if (role := job.role(r)) is not None}
    command = job.command or (("python", "-m", job.module) if job.module else ())
    return attrs.evolve(job, inputs={}, outputs={}, code=None, module=None, command=plain(command),
                        args=plain(job.args), env=plain_env(job.env), **roles)


def _compiled(job: DistributedJob, emulate: str) -> CompiledJob:
    driver = registry.get(emulate)
    block = job.backends.get(emulate, {})
    stand_ins = {k: v for k, v in driver.emulation_settings.items() if k not in block}
    settings = config.settings_for(driver.settings_type, emulate, config.Target(backend=emulate), job, stand_ins)
    needs_image = any(not r.image for r in effective_roles(job) if r.name is not RoleName.REDUCTION_SERVERS)
    target = attrs.evolve(job, image=job.image or PLACEHOLDER_IMAGE) if needs_image else job
    target = _data_kept_local(target)
    try:
        return driver.compile(target, settings)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(job.source)) from None


def job_facts(job: DistributedJob, emulate: str, overrides: Optional[Mapping[str, Any]] = None) -> platforms.JobFacts:
    """The job as the emulated platform's module sees it: plain data, with the job's
    ``backends.<emulate>`` block and the local backend's ``overrides`` on top."""
    block = job.backends.get(emulate, {})
    return platforms.JobFacts(
        name=job.name, framework=job.framework.value,
        replicas={name.singular: replica_count(job, name) for name in RoleName if job.role(name) is not None},
        settings={**(block if isinstance(block, Mapping) else {}), **(overrides or {})})


def _check_places(job: DistributedJob, emulate: str, module: Any, decided: platforms.Decided) -> None:
    """Refuse roles the platform's environment cannot place (its ``roles(decided)``), the error
    compile would raise: without the plugin nothing else stops them."""
    if not hasattr(module, "roles"):
        return
    placed = module.roles(decided)
    for role in effective_roles(job):
        if role.name.singular not in placed:
            others = ", ".join(n for n in platforms.emulations() if n != emulate)
            # a role's name is its feature where the vocabulary has one (evaluators…), else it is named in words
            raise UnsupportedFeatureError(role.name.value, emulate, f"the {emulate} environment has "
                                          f"no place for {role.name.value}.", f"Run it under another --emulate "
                                          f"({others}), or drop the role.")


def native(job: DistributedJob, emulate: str, overrides: Optional[Mapping[str, Any]] = None) -> Native:
    """The emulated platform's decisions for ``job`` (see the module docstring).

    Args:
        job: the job to run locally.
        emulate: the emulated platform (one without ``follow``, such as ``none``, compiles nothing).
        overrides: the local backend's settings that add to the platform block's
            (``use_chief_in_tf_config``), only those set.

    Raises:
        UnsupportedFeatureError: the emulated platform cannot run the job (compile's own error).
        ValidationError: the job is invalid for the emulated platform (compile's own error).
    """
    module = platforms.emulation(emulate)
    if not hasattr(module, "follow"):  # no backend compiles for it
        _check_places(job, emulate, module, platforms.Decided())
        return Native()
    if emulate not in registry.installed():
        return assumed(job, emulate, overrides)
    facts = job_facts(job, emulate, overrides)
    compiled = _compiled(job, emulate)
    decided = module.follow(compiled.request, facts)
    _check_places(job, emulate, module, decided)
    notes = tuple(n for n in compiled.diagnostics if n.field in RUN_NOTE_FIELDS)
    world = registry.get(emulate).world(compiled.request)
    return Native(request=compiled.request, facts=facts, decided=decided, notes=notes, world=world)


MPI_LAUNCHERS = frozenset({"mpirun", "mpiexec", "horovodrun"})


@attrs.frozen(kw_only=True)
class Group:
    """How many replicas of one role the emulated platform starts, and the processes it starts itself
    on each (a platform's per-node process count, a training toolkit's own ``mpirun``; else 1)."""

    count: int
    processes: int = 1


def cluster(job: DistributedJob, followed: Native) -> dict[RoleName, Group]:
    """Every role of ``job`` the platform starts, as its World says (the platform's module's
    decisions where the backend derives no World, or without the backend).

    A World may describe the training nodes as one group (where the nodes are alike and the primary
    is the first): the primary is then one of them and the workers the rest.
    Reduction servers are counted (the platform lists them) but never run here.
    """
    world = followed.world
    found: dict[RoleName, Group] = {}
    training = sum(n.count for n in world.nodes if n.role in {r.value for r in TRAINING_ROLES}) if world else 0
    for role in effective_roles(job):
        node = world.node(role.name.value) if world else None
        if role.name is RoleName.REDUCTION_SERVERS:
            found[role.name] = Group(count=node.count if node else followed.reducers)
        elif role.name in TRAINING_ROLES and world is not None and training:
            primary = (world.node(RoleName.PRIMARY.value) or world.nodes[0])
            count = min(training, 1) if role.name is RoleName.PRIMARY else training - min(training, 1)
            found[role.name] = Group(count=count, processes=_started_by_platform(node or primary))
        elif node is not None and not (role.name is RoleName.PARAMETER_SERVERS and followed.reducers
                                       and not world.node(RoleName.REDUCTION_SERVERS.value)):
            # (a platform that lists reduction servers in its parameter-server pool has a World that
            # counts them as parameter servers: that count is not the job's, the job's is used)
            found[role.name] = Group(count=node.count)
        else:
            processes = followed.processes_per_node if role.name in TRAINING_ROLES else 1
            found[role.name] = Group(count=int(role.replicas), processes=processes)
    return found


def _started_by_platform(node: Any) -> int:
    """Processes the platform itself starts on a node (each one a replica process here, with the
    variables the platform gives it); 1 where the node's argv starts them (``omnidist launch``,
    torchrun, ``mpirun`` in the command: the local replica runs that argv and it starts them)."""
    if node.launcher.value == "platform":
        return node.processes
    if node.launcher.value == "mpirun" and not any(MPI_LAUNCHERS & set(word.replace("/", " ").split())
                                                     for word in node.argv):
        return node.processes  # the platform's mpirun: the argv it execs names none
    return 1


def assumed(job: DistributedJob, emulate: str, overrides: Optional[Mapping[str, Any]] = None) -> Native:
    """What :func:`native` gives when the emulated platform's backend is not installed: the
    module's ``assume``, the roles its environment cannot place refused, and a note.

    Raises:
        UnsupportedFeatureError: a role the platform's environment has no place for.
    """
    module = platforms.emulation(emulate)
    facts = job_facts(job, emulate, overrides)
    decided = module.assume(facts)
    _check_places(job, emulate, module, decided)
    install = registry.distribution(emulate)
    note = Note(kind=NoteKind.HINT, field="emulate",
                message=f"the {emulate} backend is not installed (pip install {install}), so the emulation uses "
                        f"omnidist's core rules: it does not check the job the way compile for {emulate} would")
    return Native(facts=facts, decided=decided, notes=(note,))
