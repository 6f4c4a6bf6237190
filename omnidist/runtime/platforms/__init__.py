"""Each platform's environment contract, one module per platform (standard library only).

A platform module holds everything omnidist knows about the variables one platform gives a
training process: its tables (pool index <-> role, task type <-> role, variable names, default
ports), how to recognise it, how to read it, and — for the platforms ``omnidist run`` emulates —
how to write it. The runtime reads with these modules, the compilers take their tables from
them (Vertex's pool indexes, Azure ML's distributions, AI Platform's task names), and the local
backend writes with them, so the contract is written once.

Every module of this package whose name does not start with ``_`` is a platform (found with
:mod:`pkgutil`: a new platform is one new file, with no edit elsewhere). So is every module an
installed distribution declares under the entry-point group :data:`GROUP`, ``omnidist.platforms``
(``tinycloud = "omnidist_tinycloud.platform"``: a backend plugin ships its platform in its own
folder), read with :mod:`omnidist.runtime.entrypoints` the first time the platforms are listed, not at
import. Such a module holds the same contract, with ``NAME`` its entry point's name; one that
fails to import or breaks the contract is skipped with a :class:`RuntimeWarning` saying why (a
plugin for one platform must not stop detection on the others), and a built-in platform wins
over an entry point of the same name (also with a warning). The trade-off: a plugin's platform
is recognised only in a container that has the plugin installed, where a built-in one needs
omnidist alone. A platform module defines:

===================  ======================================================================
``NAME``             the platform's name: its module's, or its entry point's
                     (``RuntimeContext.platform``, ``--emulate``, and the backend whose
                     compile the emulation follows)
``ORDER``            its place in the detection order: of the platforms present, the lowest
                     ``ORDER`` wins (Vertex 10, AI Platform 20, Azure ML 30, a bare
                     ``TF_CONFIG`` 40, an MPI launcher 45, torchrun 50, none last)
``VARIABLES``        names of the variables that describe its cluster, and ``PREFIXES`` of
                     those that come in families; ``omnidist run`` drops them from the
                     environment replicas inherit
``detect(env)``      is this platform's environment present?
``parse(env)``       the node-level :class:`~omnidist.runtime.view.RuntimeContext`
===================  ======================================================================

Optional hooks: ``model_dir(env, argv)`` (a model folder the platform's own variable or
argument names), ``default_model_dir()`` (where the model goes when nothing names a folder),
``inputs(env)`` (input name -> where it is, from the platform's own variables),
``launched_by(ctx, env)`` (the platform already started this process as one of several on its
node: why, else ``None``). For tuning: ``METRICS`` (where the platform's tuner reads a trial's
metrics: ``"hypertune"``, ``"mlflow"`` or ``"logs"``, see :mod:`omnidist.runtime.reporting`),
``MLFLOW_MISSING`` (what :func:`~omnidist.runtime.reporting.report` warns, with ``{metrics}``, when
its ``"mlflow"`` channel finds mlflow missing: the packages the platform's tuner needs), ``trial_id(env)``
(the trial this process belongs to, where the platform says it its own way) and
``emulate_trial(env, trial, params)`` (the variables a trial's process gets, for local tuning).
``PREEMPTION_GRACE_S``: the seconds a preempted replica has between SIGTERM and its machine's
end (:func:`preemption`; ``omnidist run --preempt`` sends the same).
``claims_tf_config(spec)``: a bare ``TF_CONFIG`` (parsed) is this platform's own.
``BOUND`` (a :class:`Bound`): what exists only inside this platform's containers (mount paths,
variables it sets), which ``omnidist migrate`` finds in a job's command, args and env and rewrites
for the target, or reports (SPEC §10); :func:`bound` collects every platform's.

A platform the local backend can emulate also defines:

==================================  ========================================================
``emulate(job, slots, decided)``    the variables of each process the platform starts, in
                                    slot order: ``slot.processes`` dicts per running slot,
                                    none for the others
``HINTS_PER_ROLE``                  whether its compiler adds the ``OMNIDIST_*`` hints:
                                    ``None`` no (no environment field), ``True`` in each
                                    role's environment, ``False`` in the one environment
                                    every node shares (the same hints either way)
``ENV_FIELD``                       whether its request has an environment field (without
                                    one, the data hints are absent and a launch command
                                    carries the process count)
==================================  ========================================================

and may define ``roles(decided)`` (the roles its environment can place; default all) and
``notes(job, decided)`` (``(field, message)`` hints for ``omnidist run``, or ``(field, message,
kind)`` with a note kind's value, ``"changed"`` for a run that will not do what the job means). When a backend of the
same name compiles for the platform, the emulation follows that compile, and the module says how:

==================================  ========================================================
``follow(request, job)``            what the compiled request decided (:class:`Decided`)
``assume(job)``                     the same, when the platform's backend is not installed
==================================  ========================================================
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Optional

DEFAULT_EMULATION = "vertex"
"""The platform ``omnidist run`` emulates unless told otherwise."""

REQUIRED = ("NAME", "ORDER", "VARIABLES", "PREFIXES", "detect", "parse")
"""What every platform module defines."""

EMULATION = ("emulate", "HINTS_PER_ROLE", "ENV_FIELD")
"""What a platform module defines to be emulated (``emulate`` present means all of them)."""

COMPILED = ("follow", "assume")
"""What a platform module a backend compiles for defines (one present means both)."""


class PlatformModuleError(ImportError):
    """A platform module (one of this package, or one an entry point names) does not hold a
    platform's contract."""


GROUP = "omnidist.platforms"
"""The entry-point group where an installed distribution declares platform modules of its own:
``name = module`` (``tinycloud = "omnidist_tinycloud.platform"``), the name being the module's ``NAME``."""


def _check(module: ModuleType, name: Optional[str] = None, where: Optional[str] = None) -> ModuleType:
    """``module`` if it holds the contract with ``NAME == name`` (default: the module's own name).

    Args:
        module: the imported platform module.
        name: the name it must have (an entry point's name), else its module's name.
        where: how a message names the module (default: as one of the platforms package).
    """
    short = module.__name__.rpartition(".")[2]
    expected, origin = (short, "its module's name") if name is None else (name, "its entry point's name")
    where = where or f"{module.__name__} is in the platforms package but"
    wanted = (REQUIRED + (EMULATION if hasattr(module, "emulate") else ())
              + (COMPILED if any(hasattr(module, n) for n in COMPILED) else ()))
    missing = [n for n in wanted if not hasattr(module, n)]
    if missing:
        raise PlatformModuleError(f"{where} does not define {', '.join(missing)} (see omnidist.runtime.platforms)")
    if isinstance(module.ORDER, bool) or not isinstance(module.ORDER, (int, float)):
        raise PlatformModuleError(f"{module.__name__} says ORDER = {module.ORDER!r}; a platform's ORDER is a number")
    if module.NAME != expected:
        raise PlatformModuleError(f"{module.__name__} says NAME = {module.NAME!r}; a platform's NAME is "
                                  f"{origin}, {expected!r}")
    return module


def _warn(message: str) -> None:
    warnings.warn(f"omnidist.runtime.platforms: {message}", RuntimeWarning, stacklevel=4)


def _plugins(built_in: set[str]) -> list[ModuleType]:
    """The platform modules installed distributions declare under :data:`GROUP`, checked.

    One that fails to import or breaks the contract is skipped with a :class:`RuntimeWarning`
    that says why: a plugin for one platform must not stop detection on the others. A name in
    ``built_in``, or declared by two distributions, keeps the built-in (or the first) module;
    the other is skipped with a warning.
    """
    import sys

    from omnidist.runtime import entrypoints

    found: list[ModuleType] = []
    taken = set(built_in)
    hidden: list[entrypoints.Plugin] = []
    points = list(entrypoints.discover(list(sys.path), GROUP, hidden).values())
    for point in sorted(hidden, key=lambda p: p.name):
        _warn(f"entry point {point.name} = {point.value!r} of {point.distribution} (group {GROUP}) is skipped: the "
              f"platform {point.name!r} is already declared by another distribution, and that one wins")
    for point in points:
        where = f"entry point {point.name} = {point.value!r} of {point.distribution} (group {GROUP})"
        if point.name in taken:
            _warn(f"{where} is skipped: the platform {point.name!r} is already "
                  f"{'built in' if point.name in built_in else 'declared by another distribution'}, and that one wins")
            continue
        try:
            module = point.load()
            if not isinstance(module, ModuleType):
                raise PlatformModuleError(f"it names a {type(module).__name__}, not a module")
            found.append(_check(module, point.name, module.__name__))
        except Exception as exc:  # noqa: BLE001 - a broken plugin loses its platform, not the others
            _warn(f"{where} is skipped: {type(exc).__name__}: {exc}")
            continue
        taken.add(point.name)
    return found


@functools.lru_cache(maxsize=1)
def modules() -> tuple[ModuleType, ...]:
    """Every platform module, in detection order (``ORDER``, then ``NAME``): this package's, and
    those installed distributions declare under the entry-point group :data:`GROUP` (read on the
    first call; a built-in platform wins over an entry point of the same name).

    Raises:
        PlatformModuleError: a module of this package lacks part of the contract (a plugin's
            broken module is skipped with a :class:`RuntimeWarning` instead).
    """
    import pkgutil  # here, not at import: a backend reads its platform's tables without listing them all

    found = [_check(importlib.import_module(f"{__name__}.{info.name}"))
             for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    found += _plugins({m.NAME for m in found})
    return tuple(sorted(found, key=lambda m: (m.ORDER, m.NAME)))


def first(claims: Callable[[ModuleType], bool]) -> Optional[ModuleType]:
    """The first platform, in detection order, that ``claims`` says yes to (``None``: none does)."""
    return next((module for module in modules() if claims(module)), None)


def named(name: str) -> Optional[ModuleType]:
    """The platform module called ``name``, or ``None``."""
    return next((m for m in modules() if m.NAME == name), None)


def emulations() -> tuple[str, ...]:
    """Names of the platforms the local backend can emulate, sorted."""
    return tuple(sorted(m.NAME for m in modules() if hasattr(m, "emulate")))


def emulation(name: str) -> ModuleType:
    """The platform module ``omnidist run --emulate name`` writes with.

    Raises:
        KeyError: no platform of that name can be emulated.
    """
    module = named(name)
    if module is None or not hasattr(module, "emulate"):
        raise KeyError(f"no platform to emulate is called {name!r}; the choices are {', '.join(emulations())}")
    return module


def variables() -> tuple[frozenset[str], tuple[str, ...]]:
    """Every platform's cluster variables and variable prefixes (for a clean inherited environment)."""
    names = frozenset().union(*(m.VARIABLES for m in modules()))
    prefixes = tuple(sorted({p for m in modules() for p in m.PREFIXES}))
    return names, prefixes


# --- what an emulation is given, as plain data ---------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Slot:
    """One replica of the emulated cluster.

    Attributes:
        role: its runtime role (``primary``, ``worker``, ``parameter_server``…).
        index: its index within the role.
        address: ``host:port`` where it listens.
        runs: False for replicas the platform lists but the local backend does not start
            (reduction servers run Google's image on real machines).
        processes: processes the platform itself starts for it (Azure ML), else 1.
    """

    role: str
    index: int
    address: str
    runs: bool = True
    processes: int = 1


@dataclasses.dataclass(frozen=True)
class JobFacts:
    """What an emulation needs to know of the portable job.

    Attributes:
        name: the job's name.
        framework: ``pytorch``, ``tensorflow``, ``horovod``, ``deepspeed``, ``custom`` or ``jax``.
        replicas: runtime role -> replicas, for each role the job has (``auto`` counts 0).
        settings: the job's ``backends.<platform>`` block, with the local backend's settings of
            the same names on top where they are set.
    """

    name: str
    framework: str
    replicas: Mapping[str, int] = dataclasses.field(default_factory=dict)
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Decided:
    """What the platform's compiled request decided that its environment shows.

    Attributes:
        reducers: Reduction Server replicas the platform lists in its cluster (never run locally).
        processes_per_node: processes the platform itself starts on each training node.
        details: the rest, read back by the platform's own ``emulate`` (the compiled job the
            Google platforms write as ``CLUSTER_SPEC``'s ``job``, Azure's distribution…).
    """

    reducers: int = 0
    processes_per_node: int = 1
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Bound:
    """What exists only inside one platform's containers: a job that moves elsewhere and still
    names it reads an empty folder or an unset variable (SPEC §10, "platform-bound references").

    Attributes:
        mounts: a path prefix the platform mounts -> the URI prefix it shows there (Vertex's Cloud
            Storage FUSE: ``/gcs/`` -> ``gs://``); ``""`` for a mount with no portable URI.
        variables: variables only this platform sets; a name ending in ``*`` is a prefix.
        equivalents: such a variable -> the portable reference that means the same on every
            backend (``AIP_MODEL_DIR`` -> ``${{outputs.model}}``).
        paths: a path the platform itself defines -> the portable reference meaning the same
            (``/opt/ml/model`` -> ``${{outputs.model}}``).
    """

    mounts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    variables: tuple[str, ...] = ()
    equivalents: Mapping[str, str] = dataclasses.field(default_factory=dict)
    paths: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def declares(self, variable: str) -> bool:
        """True when ``variable`` is one of this platform's own."""
        return any(variable == v or (v.endswith("*") and variable.startswith(v[:-1])) for v in self.variables)


DEFAULT_PREEMPTION_GRACE_S = 30
"""What a preempted replica gets where its platform says nothing (a Kubernetes pod's default)."""


def preemption(name: str) -> tuple[int, float]:
    """The signal a preempted replica of platform ``name`` gets, and the seconds before SIGKILL.

    Every platform sends SIGTERM (a program it stops exits 143 everywhere); the grace differs.
    """
    import signal

    module = named(name)
    return signal.SIGTERM, float(getattr(module, "PREEMPTION_GRACE_S", DEFAULT_PREEMPTION_GRACE_S))


def bound() -> dict[str, Bound]:
    """Platform name -> what exists only inside its containers (the modules that declare ``BOUND``)."""
    return {m.NAME: m.BOUND for m in modules() if isinstance(getattr(m, "BOUND", None), Bound)}


def hosts(slots: Sequence[Slot], *roles: str) -> list[str]:
    """The addresses of the slots of ``roles``, in slot order."""
    return [s.address for s in slots if s.role in roles]
