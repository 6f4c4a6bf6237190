"""Step 5 of a migration: the report is checked (SPEC §10). The target's request is read back with
the target's own importer and compared with the job the source ran, facet by facet: the training
nodes, each role's replicas and GPUs, the processes per node, the image, the program (command and
args, data locations aside), the environment's names, the data it names, and the search.

A difference that no report line speaks of is a change the migration did not say: it becomes a
``changed`` line of its own (so ``--strict`` refuses it). The report may be terse; it is never silent.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any, Optional

from omnidist.backend.contract import Backend, Imports
from omnidist.backend.values import CompiledJob, NoteKind
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.migration.imports import unwrap_launchers
from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.model.data import REFERENCE, is_data
from omnidist.model.job import DistributedJob
from omnidist.model.roles import RoleName, effective_role, num_nodes, processes_per_node
from omnidist.runtime import hints

Facets = dict[str, Any]
"""Facet name (``workers.gpus``, ``command``…) -> a comparable value."""

_DATA = "<data>"
"""What a data location (a URI, a path, a ``${{…}}`` reference) reads as in a compared program."""


def read_back(compiled: CompiledJob, target: Backend) -> Optional[DistributedJob]:
    """The target's request as its importer reads it (launchers read back as processes per node);
    ``None`` where the importer cannot hold it (then there is nothing to compare)."""
    driver = target
    if not isinstance(driver, Imports):  # a target that reads no files back: nothing to compare
        return None
    try:
        job, _ = driver.import_with_notes(compiled.request)
    except (ValidationError, UnsupportedFeatureError):  # pragma: no cover - compilers write what importers read
        return None
    return unwrap_launchers(job)[0]


def unread(compiled: CompiledJob, target: Backend) -> frozenset[str]:
    """The facets the target's importer cannot read back from its own request, so a difference in
    them is no change: the GPUs of every role when its notes say the accelerator cannot be named (a
    request on a named compute cluster carries no VM size; compile chose one the cluster is
    assumed to have, and said so)."""
    if not isinstance(target, Imports):  # a target that reads no files back: nothing to compare
        return frozenset()
    try:
        _, notes = target.import_with_notes(compiled.request)
    except (ValidationError, UnsupportedFeatureError):  # pragma: no cover - as read_back
        return frozenset()
    if any(n.field.endswith(".accelerator") and n.kind in (NoteKind.CHANGED, NoteKind.HINT) for n in notes):
        return frozenset(f"{name.value}.gpus" for name in RoleName)
    return frozenset()


def _program(words: Iterable[str]) -> tuple[str, ...]:
    """A program's words with every data location as one placeholder (how each cloud shows a
    location differs: a mount path, a URI, a placeholder); ``env K=V`` prefixes and the
    runtime hints left out (a request without an env field carries variables that way)."""
    found = []
    words = list(words)
    if words[:1] == ["env"]:
        words = words[1:]
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
    for word in words:
        flag, eq, value = word.partition("=")
        if eq and flag.startswith("-"):
            found.append(f"{flag}={_location(value)}")
        else:
            found.append(_location(word))
    return tuple(found)


def _location(word: str) -> str:
    if REFERENCE.fullmatch(word.strip()) or (is_data(word) and not word.startswith(("./", "../"))):
        return _DATA
    return REFERENCE.sub(_DATA, word)


def _data(job: DistributedJob) -> frozenset[str]:
    """The data URIs the job names (its inputs and outputs with a URI, and URIs in its program)."""
    found = {i.uri for i in job.inputs.values() if i.uri and "://" in i.uri}
    found |= {o.uri for o in job.outputs.values() if o.uri and "://" in o.uri}
    primary = effective_role(job, RoleName.PRIMARY)
    words = [*primary.command, *primary.args, *primary.env.values()]
    found |= {w.partition("=")[2] if w.startswith("-") else w for w in words}
    return frozenset(u.rstrip("/") for u in found if "://" in u)


def facets(job: DistributedJob) -> Facets:
    """What the check compares of a job."""
    found: Facets = {"nodes": num_nodes(job), "processes_per_node": processes_per_node(job)}
    for name in RoleName:
        role = effective_role(job, name)
        if role is None or name is RoleName.REDUCTION_SERVERS:  # sized by each cloud; reported where it is
            continue
        replicas = 1 if name is RoleName.PRIMARY else int(role.replicas)
        if replicas:
            found[f"{name.value}.replicas"] = replicas
            found[f"{name.value}.gpus"] = str(role.accelerator) if role.accelerator else "none"
    primary = effective_role(job, RoleName.PRIMARY)
    found["image"] = primary.image
    found["command"] = _program((*primary.command, *primary.args))
    found["env"] = frozenset(k for k in primary.env if not hints.is_hint(k))
    found["data"] = _data(job)
    if job.tuning is not None:
        found["tuning"] = (job.tuning.metric.name, job.tuning.metric.goal.value, job.tuning.max_trials,
                           tuple(sorted((n, p.type.value) for n, p in job.tuning.parameters.items())))
    return found


PROGRAM_FIELDS = ("command", "args", "module", "code", "inputs", "outputs", "env", "framework")
"""Report fields that speak of what the program is or names."""


def _covered(facet: str, entries: Iterable[ReportEntry]) -> bool:
    """True when a report line speaks of ``facet`` (a line the user's own flag made, such as
    ``--image``, counts: the change was asked for).

    A role's replicas are covered by a line about the role or its replicas, its GPUs by one about
    the role, its accelerator or its machine; the program and the data it names by a line about
    anything the program names; the rest by a line of the same field.
    """
    role, _, part = facet.partition(".")
    accepted: tuple[str, ...]
    if part == "replicas":
        accepted = (role, facet)
    elif part == "gpus":
        accepted = (role, f"{role}.accelerator", f"{role}.machine", facet)
    elif facet == "nodes":
        accepted = ("nodes", "workers", "workers.replicas")
    elif facet == "processes_per_node":
        accepted = ("processes_per_node", "framework")
    elif facet == "image":
        accepted = ("image", "framework_version", "environment", "primary.image")
    else:
        accepted = ()
    for entry in entries:
        first, _, rest = entry.field.partition(".")
        second = rest.partition(".")[0]
        if entry.field in accepted or (accepted and first in accepted and not rest):
            return True
        if facet in ("command", "data") and (first in PROGRAM_FIELDS or second in ("command", "args", "env")):
            return True
        if facet == "env" and "env" in (first, second):
            return True
        if facet == "tuning" and first == "tuning":
            return True
    return False


def _shown(value: Any) -> str:
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return shlex.join(value) or "(none)"
    if isinstance(value, frozenset):
        return ", ".join(sorted(value)) or "(none)"
    return str(value)


def unreported(source: DistributedJob, readback: Optional[DistributedJob], target: Backend,
               entries: list[ReportEntry], unknown: frozenset[str] = frozenset()) -> list[ReportEntry]:
    """A ``changed`` line for each facet the target's request reads back differently from the
    source job, that no report line covers; ``unknown`` facets (:func:`unread`) read back as
    ``none`` are not compared."""
    if readback is None:
        return []
    before, after = facets(source), facets(readback)
    found = []
    for facet in sorted(set(before) | set(after)):
        was, now = before.get(facet), after.get(facet)
        if was == now or _covered(facet, entries) or (facet in unknown and now == "none"):
            continue
        if facet == "env" and was is not None and now is not None and was <= now:
            continue  # the target adds variables of its own (InfiniBand tuning): nothing of the job's is lost
        if facet == "data" and was is not None and now is not None and not (was - now):
            continue
        found.append(ReportEntry(
            fidelity=Fidelity.CHANGED, field=facet,
            message=f"read back from the {target.name} request: {_shown(now) if now is not None else 'none'}; "
                    f"the source job has {_shown(was) if was is not None else 'none'} (no other line of this "
                    "report says so)"))
    return found
