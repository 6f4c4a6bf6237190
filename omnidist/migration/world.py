"""What the training program sees on a platform (SPEC §14): a :class:`World`, derived by each
backend from a native request alone (``backends/<name>/omnidist_<name>/world.py``), never from the
portable job, so that the comparison in :mod:`omnidist.migration.observed` is not our importers
agreeing with themselves.

A World holds, per group of nodes that see the same thing (a role): the argv the platform execs
(the image's own entrypoint written as :data:`ENTRYPOINT`), who starts the node's processes and
how many, what each process runs, the variables the platform and its launcher set and the job's
own; then each data location the program is given (a local path, read-only or writable, or a URI
only an SDK opens), how a search passes hyperparameters and reads its metric, and the image with
the registry it comes from and whether the platform can pull it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import attrs

from omnidist.model.fields import as_frozenset, as_tuple

ENTRYPOINT = "<image entrypoint>"
"""Stands for the image's own ``ENTRYPOINT`` in an argv (the platform runs it; the request does not say it)."""

ARGV = "argv"
"""A search's values reach the program as command-line words (flags the service appends,
a placeholder in the command it fills, a toolkit that passes hyperparameters as flags)."""

TORCH_VARIABLES = frozenset({"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"})
"""The node-level cluster variables torch's ``env://`` rendezvous reads (as a training operator or a
managed platform sets them for PyTorch)."""

PROCESS_VARIABLES = TORCH_VARIABLES | {"LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"}
"""What torchrun (and so ``omnidist launch``) sets for each process it starts."""

MPI_VARIABLES = frozenset({"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "OMPI_COMM_WORLD_LOCAL_SIZE"})
"""What Open MPI's ``mpirun`` sets for each rank."""

TF_VARIABLES = frozenset({"TF_CONFIG"})

CLUSTER_VARIABLES = PROCESS_VARIABLES | MPI_VARIABLES | TF_VARIABLES
"""The portable cluster variables: a program written for one platform reads these, and their loss
is a change it sees. Platform-bound names (``CLUSTER_SPEC``, ``SM_*``, ``PET_*``) are
each platform's own; a reference to one is rewritten or reported by
:mod:`omnidist.migration.references` (SPEC §10)."""


class Given(str, enum.Enum):
    """How a data location reaches the program."""

    PATH = "path"
    """A local path: a mount or a downloaded copy."""
    URI = "uri"
    """A URI string only an SDK can open."""


class Access(str, enum.Enum):
    READ = "ro"
    WRITE = "rw"


class Launcher(str, enum.Enum):
    """Who starts a node's processes."""

    NONE = "none"
    """The platform execs the argv once per node."""
    PLATFORM = "platform"
    """The platform's own per-node launcher (a managed distribution setting, a training toolkit)."""
    TORCHRUN = "torchrun"
    MPIRUN = "mpirun"
    OMNIDIST = "omnidist launch"
    """``omnidist launch``: torchrun wired from the platform's variables (one process per node for TensorFlow)."""
    DEEPSPEED = "deepspeed"


@attrs.frozen(kw_only=True)
class DataPath:
    """One data location the program is given."""

    location: str
    """What it stands for: a URI (an object-store or datastore URI) or a volume."""
    given: Given = attrs.field(converter=Given)
    access: Access = attrs.field(converter=Access)
    where: str
    """How the program finds it: ``argv``, ``env NAME``, a fixed path such as ``/opt/ml/input/data/train``."""
    implicit: bool = False
    """The platform's own place (a fixed model folder, a model-folder variable), there whether or
    not the program uses it: a program that names it is a platform-bound reference (SPEC §10)."""


@attrs.frozen(kw_only=True)
class Image:
    """The container image and whether the platform can pull it."""

    uri: str
    registry: str
    pullable: bool
    why: str = ""
    """When not pullable: what the platform needs."""


@attrs.frozen(kw_only=True)
class Node:
    """A group of nodes that see the same world (one role)."""

    role: str
    count: int
    argv: tuple[str, ...] = attrs.field(converter=as_tuple)
    """What the platform execs on each node (:data:`ENTRYPOINT` for the image's own)."""
    launcher: Launcher = attrs.field(converter=Launcher)
    processes: int
    """Processes each node starts."""
    program: tuple[str, ...] = attrs.field(converter=as_tuple)
    """What each process runs (the argv without its launcher)."""
    platform_env: frozenset[str] = attrs.field(converter=as_frozenset, factory=frozenset)
    """Names the platform or its launcher sets for each process (values differ by node and rank)."""
    env: Mapping[str, str] = attrs.field(factory=dict)
    """The job's own variables, as the request gives them."""

    @property
    def sees(self) -> frozenset[str]:
        """Every variable name the program sees."""
        return self.platform_env | frozenset(self.env)


@attrs.frozen(kw_only=True)
class World:
    """What a training program observes on one platform for one native request (SPEC §14)."""

    platform: str
    image: Optional[Image]
    nodes: tuple[Node, ...] = attrs.field(converter=as_tuple)
    data: tuple[DataPath, ...] = attrs.field(converter=as_tuple, factory=tuple)
    hyperparameters: str = ""
    """How a search passes each trial's values: :data:`ARGV`, a file, ``env PREFIX*`` (empty: no search)."""
    metric: str = ""
    """How a search reads the objective back, as the runtime platform module's ``METRICS`` says:
    ``hypertune``, ``mlflow``, ``logs`` (empty: no search)."""

    def node(self, role: str) -> Optional[Node]:
        return next((n for n in self.nodes if n.role == role), None)

    @property
    def training(self) -> Optional[Node]:
        """The node group that runs the program rank 0 runs (the primary, else the first)."""
        return self.node("primary") or (self.nodes[0] if self.nodes else None)

    @property
    def node_count(self) -> int:
        return sum(n.count for n in self.nodes if n.role in ("primary", "workers"))

    def to_dict(self) -> dict[str, Any]:
        """The World as data (``omnidist explain -o json``)."""
        def shown(_: Any, __: Any, value: Any) -> Any:
            if isinstance(value, enum.Enum):
                return value.value
            if isinstance(value, frozenset):
                return sorted(value)
            return value

        return attrs.asdict(self, value_serializer=shown)


def shown(words: Sequence[str]) -> str:
    """An argv as a shell line, :data:`ENTRYPOINT` unquoted."""
    import shlex

    return shlex.join(words).replace(shlex.quote(ENTRYPOINT), ENTRYPOINT) or "(nothing)"


# --- helpers the backends' derivations share ------------------------------------------------------------


_DOCKER_HUB = r"^(docker\.io|index\.docker\.io|registry-1\.docker\.io)$"
"""Docker Hub's hosts (where a reference with no host is pulled from)."""


def registry_of(image: str) -> str:
    """The kind of registry an image reference points at: ``docker-hub`` (also for a reference
    with no host), the kind an installed vendor kit declares for its host
    (:attr:`omnidist.vendors.Vendor.registries`), else ``other``."""
    from omnidist import vendors

    first, slash, _ = image.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        return "docker-hub"
    host = first.split(":", 1)[0].lower()
    if re.search(_DOCKER_HUB, host):
        return "docker-hub"
    return next((kind for pattern, kind in vendors.registries() if re.search(pattern, host)), "other")


def split_launcher(argv: Sequence[str]) -> tuple[Launcher, Optional[int], tuple[str, ...]]:
    """The launcher an argv starts with (``torchrun …``, ``omnidist launch …``, ``mpirun -np N …``),
    the processes per node it asks for (``None``: its default or the platform's) and what each
    process runs."""
    from omnidist.compiler.launchers import read_launcher

    words = tuple(argv)
    if words[:1] == ("env",):  # `env K=V … CMD`: the variables are the job's (see env_prefix)
        words = words[1 + len(env_prefix(words)):]
    words = _exec_wrapped(words)
    found = read_launcher(words)
    if found is not None:
        kind = {"torchrun": Launcher.TORCHRUN, "omnidist": Launcher.OMNIDIST, "deepspeed": Launcher.DEEPSPEED}
        return kind.get(found.kind, Launcher.TORCHRUN), found.processes, tuple(found.program)
    mpi = _mpirun(words)
    if mpi is not None:
        return Launcher.MPIRUN, mpi[0], mpi[1]
    return Launcher.NONE, None, words


def _exec_wrapped(words: tuple[str, ...]) -> tuple[str, ...]:
    """What ``sh -c 'SET-UP; exec "$@"' NAME CMD…`` runs in the end (how a compiler unpacks code
    before the program): ``CMD…``; any other argv as it is."""
    if (len(words) > 4 and words[0].rsplit("/", 1)[-1] in ("sh", "bash") and words[1] == "-c"
            and words[2].rstrip().endswith('exec "$@"')):
        return words[4:]
    return words


_MPI_FLAGS = frozenset({"--allow-run-as-root", "--oversubscribe", "-oversubscribe", "--nooversubscribe", "--tag-output",
                        "-tag-output", "--timestamp-output", "-v", "--verbose", "--report-bindings", "-report-bindings",
                        "--display-map", "-display-map", "--display-allocation", "--use-hwthread-cpus", "-q",
                        "--merge-stderr-to-stdout", "--quiet", "-prefix-output", "--prefix-output", "-l",
                        "--enable-recovery", "-print-rank-map"})
"""mpirun options that take no value (any other option takes the word after it)."""

_MPI_PAIRS = frozenset({"-mca", "--mca", "-gmca", "--gmca"})
"""mpirun options that take two words (``--mca btl tcp,self``)."""


def _mpirun(words: Sequence[str]) -> Optional[tuple[Optional[int], tuple[str, ...]]]:
    """``mpirun``/``mpiexec``/``horovodrun`` options read: (processes per node when the line says,
    else minus the total ranks, else ``None``; the program). A shell line (``bash -c "… mpirun
    …"``) is read inside its string."""
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("bash", "sh") and words[1] in ("-c", "-lc"):
        import shlex

        try:
            inner = shlex.split(words[2])
        except ValueError:
            return None
        for i, word in enumerate(inner):
            if word.rsplit("/", 1)[-1] in ("mpirun", "mpiexec", "horovodrun"):
                return _mpirun(inner[i:])
        return None
    if not words or words[0].rsplit("/", 1)[-1] not in ("mpirun", "mpiexec", "horovodrun"):
        return None
    i, per_node, total = 1, None, None
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        name, eq, value = words[i].partition("=")
        if name in _MPI_PAIRS:
            i += 3
            continue
        if not eq and name not in _MPI_FLAGS and i + 1 < len(words) and not words[i + 1].startswith("-"):
            value = words[i + 1]
            i += 1
        if name in ("-npernode", "--npernode", "-ppn", "-N", "--map-by") and value.split(":")[-1].isdigit():
            per_node = int(value.split(":")[-1]) if name != "--map-by" or "ppr" in value else per_node
        if name in ("-np", "-n", "-c", "--np") and value.isdigit():
            total = int(value)
        i += 1
    i += i < len(words) and words[i] == "--"
    return per_node or (None if total is None else -total), tuple(words[i:])


def env_prefix(argv: Sequence[str]) -> dict[str, str]:
    """The ``K=V`` words after a leading ``env`` (how a platform without an env field carries variables)."""
    found: dict[str, str] = {}
    if not argv or argv[0] != "env":
        return found
    for word in argv[1:]:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            break
        key, _, value = word.partition("=")
        found[key] = value
    return found


def launched(argv: Sequence[str], accelerators: int, nodes: int, framework: str = "",
             own: frozenset[str] = frozenset(), env: Optional[Mapping[str, str]] = None,
             role: str = "primary", default_processes: Optional[int] = None) -> Node:
    """The node an argv makes when the platform execs it once per node and sets ``own``: a
    launcher in it starts the processes (``omnidist launch`` and torchrun: one per GPU unless told,
    one for TensorFlow; ``mpirun -np N``: N over the nodes) and sets its variables.
    ``default_processes``: what a launcher line that names no count starts (the platform's
    defaults, such as a training operator's ``PET_NPROC_PER_NODE``)."""
    argv = tuple(argv)
    kind, processes, program = split_launcher(argv)
    env = {**env_prefix(argv), **(env or {})}
    platform_env = set(own)
    if kind in (Launcher.TORCHRUN, Launcher.OMNIDIST, Launcher.DEEPSPEED):
        if kind is Launcher.OMNIDIST and (framework or env.get("OMNIDIST_FRAMEWORK")) == "tensorflow":
            processes = 1
        else:
            platform_env |= PROCESS_VARIABLES
        if processes is None:
            processes = default_processes or _per_node(env, accelerators)
    elif kind is Launcher.MPIRUN:
        platform_env |= MPI_VARIABLES
        if processes is not None and processes < 0:  # -np N: the ranks over the job's nodes
            processes = max(-processes // max(nodes, 1), 1)
        processes = processes or max(accelerators, 1)
    return Node(role=role, count=nodes, argv=argv, launcher=kind, processes=processes or 1, program=program,
                platform_env=frozenset(platform_env), env=env)


def _per_node(env: Mapping[str, str], accelerators: int) -> int:
    told = env.get("OMNIDIST_PROCESSES_PER_NODE", "")
    return int(told) if told.isdigit() else max(accelerators, 1)


def env_list(items: Any) -> dict[str, str]:
    """A Kubernetes-style ``[{name, value}]`` list (or a mapping) as a mapping; values from
    elsewhere (``valueFrom``) read as empty."""
    if isinstance(items, Mapping):
        return {str(k): str(v) for k, v in items.items()}
    found = {}
    for item in items or ():
        if isinstance(item, Mapping) and "name" in item:
            found[str(item["name"])] = str(item.get("value", ""))
    return found


def uris_in(words: Sequence[str], schemes: Optional[tuple[str, ...]] = None) -> list[str]:
    """The data URIs an argv names (``--data=URI`` or a bare ``URI``): by default those of the
    installed vendor kits' object stores (:attr:`omnidist.vendors.Vendor.uri_schemes`) and
    ``https://`` downloads."""
    if schemes is None:
        from omnidist import vendors

        schemes = (*vendors.uri_schemes(), "https://")
    found = []
    for word in words:
        value = word.partition("=")[2] if word.startswith("-") and "=" in word else word
        if value.startswith(schemes):
            found.append(value)
    return found
