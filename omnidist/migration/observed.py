"""Step 5b of a migration: what the program sees, compared (SPEC §14).

The source's native request and the target's each give a :class:`~omnidist.migration.world.World`
(each backend's ``world``, from the request alone). They are compared under the equivalences
omnidist provides, and every difference a program could observe that no ``changed`` or ``dropped``
line of the report already names becomes one:

- the image: one the source platform pulls and the target cannot (another cloud's private registry);
- the nodes, and the argv each process runs (the image's own entrypoint included: a platform may
  run ``IMAGE train``), data locations compared as locations;
- the processes each node starts, and the cluster variables the program reads (torch's
  ``MASTER_ADDR``/``RANK``/``WORLD_SIZE``, ``LOCAL_RANK``, ``TF_CONFIG``, ``OMPI_COMM_WORLD_*``). A
  launcher on the target that sets the same variables (``omnidist launch``, torchrun, the platform's
  own) is the same world: that is omnidist's equivalence. Platform-bound names (``CLUSTER_SPEC``,
  ``SM_*``, ``PET_*``) are each platform's own and are not compared;
- each data location the program is given: gone, or given another way (a local writable folder
  that became a URI string, a read-only mount where it wrote);
- how a search passes hyperparameters and reads its metric.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Optional

import attrs

from omnidist.migration.readback import PROGRAM_FIELDS
from omnidist.migration.readback import _program as placeheld
from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.migration.world import (
    CLUSTER_VARIABLES,
    ENTRYPOINT,
    MPI_VARIABLES,
    TF_VARIABLES,
    TORCH_VARIABLES,
    Access,
    DataPath,
    Given,
    Launcher,
    Node,
    World,
    shown,
)

QUIET = frozenset({"GROUP_RANK", "LOCAL_WORLD_SIZE"})
"""torchrun's own extras: no program written for another launcher reads them."""


@attrs.frozen(kw_only=True)
class Difference:
    """One thing the program sees differently on the target."""

    field: str
    fidelity: Fidelity = attrs.field(converter=Fidelity)
    message: str
    covered_by: tuple[str, ...]
    """Report fields whose ``changed``/``dropped`` line already says it."""

    def entry(self) -> ReportEntry:
        return ReportEntry(fidelity=self.fidelity, field=self.field, message=self.message)


def compare(before: World, after: World) -> list[Difference]:
    """What a program sees differently on ``after``'s platform than on ``before``'s."""
    found = _image(before, after)
    source, target = before.training, after.training
    if source is not None and target is not None:
        found += _nodes(before, after, source, target)
    found += _data(before, after)
    found += _search(before, after)
    return found


def unreported(before: Optional[World], after: Optional[World], entries: Iterable[ReportEntry]) -> list[ReportEntry]:
    """A line for each difference between the Worlds that no ``changed``/``dropped`` line covers."""
    if before is None or after is None:
        return []
    said = [e.field for e in entries if e.fidelity.breaks_strict]
    return [d.entry() for d in compare(before, after) if not _covered(d, said)]


def _covered(difference: Difference, fields: Sequence[str]) -> bool:
    return any(field == f or field.startswith(f + ".") or f.startswith(field + ".")
               for field in fields for f in (difference.field, *difference.covered_by))


def _image(before: World, after: World) -> list[Difference]:
    if before.image is None or after.image is None or not before.image.pullable or after.image.pullable:
        return []
    return [Difference(field="image", fidelity=Fidelity.CHANGED, covered_by=("environment",), message=(
        f"{after.image.uri} ({after.image.registry}): {after.image.why}; copy it to a registry "
        f"{after.platform} pulls from and pass --image"))]


def _same_program(a: Sequence[str], b: Sequence[str]) -> bool:
    """The same words, data locations read as locations; flags in another order are the same
    (a training toolkit may sort them), and a search's values are its own (compared as the channel)."""
    x, y = placeheld(_unsearched(a)), placeheld(_unsearched(b))
    return x == y or sorted(x) == sorted(y)


def _unsearched(words: Sequence[str]) -> list[str]:
    """``words`` without a service's ``${{search_space.x}}`` values and the flags naming them: a
    search elsewhere appends the same flags itself."""
    found: list[str] = []
    for word in words:
        if "${{search_space." in word.replace(" ", ""):
            if found and found[-1].startswith("-") and "=" not in word:
                found.pop()
            continue
        found.append(word)
    return found


def _nodes(before: World, after: World, source: Node, target: Node) -> list[Difference]:
    found = []
    if before.node_count != after.node_count and before.node_count and after.node_count:
        found.append(Difference(field="nodes", fidelity=Fidelity.CHANGED, covered_by=("workers", "primary"),
                                message=f"{after.node_count} node(s) run the program on {after.platform}; "
                                        f"{before.node_count} on {before.platform}"))
    if not _same_program(source.program, target.program):
        entry = ENTRYPOINT in (source.program[:1] + target.program[:1])
        found.append(Difference(
            field="args" if entry else "command", fidelity=Fidelity.CHANGED,
            covered_by=(*PROGRAM_FIELDS, "primary"),
            message=f"each process runs `{shown(target.program)}` on {after.platform}; on {before.platform} it ran "
                    f"`{shown(source.program)}`" + (
                        f" ({ENTRYPOINT} is the image's own ENTRYPOINT)" if entry else "")))
    if source.processes != target.processes:
        found.append(Difference(
            field="processes_per_node", fidelity=Fidelity.CHANGED, covered_by=("framework",),
            message=f"{target.processes} process(es) start on each node on {after.platform} "
                    f"({_launcher(target)}); {source.processes} on {before.platform} ({_launcher(source)})"))
    lost = (source.sees & CLUSTER_VARIABLES) - target.sees - QUIET
    if TORCH_VARIABLES <= target.sees or MPI_VARIABLES <= target.sees:
        lost -= TF_VARIABLES  # the cluster, described torch's or MPI's way (omnidist.runtime reads any)
    if source.processes == 1 and target.processes == 1:
        lost -= {"LOCAL_RANK"}
    if lost and (before.node_count > 1 or source.processes > 1):
        found.append(Difference(
            field="env", fidelity=Fidelity.CHANGED, covered_by=("processes_per_node",),
            message=f"{', '.join(sorted(lost))}: set on {before.platform} ({_launcher(source)}), not on "
                    f"{after.platform} ({_launcher(target)}); a program that reads them runs as separate copies"))
    return found


def _launcher(node: Node) -> str:
    return {Launcher.NONE: "the platform starts the command once per node",
            Launcher.PLATFORM: "the platform's own launcher"}.get(node.launcher, node.launcher.value)


def _where_field(data: DataPath) -> str:
    """The report field a data location is named by: its input or output, else the args."""
    where = data.where
    for kind in ("inputs", "outputs"):
        if where.startswith(f"${{{{{kind}."):
            return f"{kind}.{where[len(kind) + 4:-2]}"
    if where.startswith("/opt/ml/input/data/"):
        return f"inputs.{where.rsplit('/', 1)[-1]}"
    if where.startswith("/opt/ml/input/config/"):
        return "hyperparameters"
    return "args" if where == "argv" else "data"


def _key(location: str) -> str:
    return location.rstrip("/")


def _tail(location: str) -> tuple[str, ...]:
    """A location's last two path parts: the same data moved under another prefix (``data_map``
    rewrites prefixes, ``A://b/data/x`` -> ``B://c/a/b/data/x``) keeps them."""
    parts = tuple(p for p in _key(location).split("://", 1)[-1].split("/") if p)
    return parts[-2:] if len(parts) >= 2 else (location,)


def _data(before: World, after: World) -> list[Difference]:
    found = []
    for data in before.data:
        if data.implicit:
            continue
        field = _where_field(data)
        covered = ("data",)
        same = [d for d in after.data if _key(d.location) == _key(data.location)] or [
            d for d in after.data if _tail(d.location) == _tail(data.location)]
        if not same:
            found.append(Difference(field=field, fidelity=Fidelity.DROPPED, covered_by=covered, message=(
                f"{data.location}: the program got it as a {_form(data)} ({data.where}) on {before.platform}; "
                f"on {after.platform} it is not given")))
            continue
        match = next((d for d in same if d.given is data.given and d.access is data.access), same[0])
        written = field.startswith("outputs.")  # a folder declared for writing (a bucket mount is writable throughout)
        if match.given is not data.given or (written and data.given is Given.PATH and data.access is Access.WRITE
                                             and match.access is Access.READ):
            found.append(Difference(field=field, fidelity=Fidelity.CHANGED, covered_by=covered, message=(
                f"{data.location}: a {_form(data)} ({data.where}) on {before.platform}; a {_form(match)} "
                f"({match.where}) on {after.platform}")))
    return found


def _form(data: DataPath) -> str:
    if data.given is Given.URI:
        return "URI string only an SDK opens"
    return "local writable folder" if data.access is Access.WRITE else "local read-only path"


def _search(before: World, after: World) -> list[Difference]:
    if not before.hyperparameters:
        return []
    if not after.hyperparameters:
        return [Difference(field="tuning", fidelity=Fidelity.DROPPED, covered_by=(), message=(
            f"the search ({before.hyperparameters}) does not run on {after.platform}"))]
    found = []
    if before.hyperparameters != after.hyperparameters:
        found.append(Difference(field="tuning", fidelity=Fidelity.CHANGED, covered_by=(), message=(
            f"each trial's values reach the program by {after.hyperparameters} on {after.platform}; by "
            f"{before.hyperparameters} on {before.platform}: the program must read them there")))
    if before.metric != after.metric:
        found.append(Difference(field="tuning.metric", fidelity=Fidelity.CHANGED, covered_by=(), message=(
            f"the objective is read back through {after.metric} on {after.platform}; through {before.metric} on "
            f"{before.platform}: the program must report it there")))
    return found


def world_of(backend: Any, native: Any) -> Optional[World]:
    """``backend``'s World of ``native``; ``None`` where it cannot tell (a shape it does not
    derive a World for: the comparison is then skipped, never guessed)."""
    from omnidist.backend import registry

    try:
        return registry.importer(backend).world(native)
    except Exception:  # noqa: BLE001 - a World is a check; a native shape it misreads must not fail the migration
        return None
