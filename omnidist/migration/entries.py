"""Step 4 of a migration: what the report says of each part once the target has compiled it.
The machine the target chose for each role (its request read back with its importer tells the
GPUs the machine really has), the region, and what carried over exactly."""

from __future__ import annotations

import enum
import shlex
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist import api
from omnidist.backend.contract import Backend
from omnidist.backend.values import CompiledJob, Note
from omnidist.compiler.delowering import shorten
from omnidist.migration.move import machines_named
from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.model import serde
from omnidist.model.features import NoteCode
from omnidist.model.job import DistributedJob, Interconnect
from omnidist.model.roles import Accelerator, EffectiveRole, RoleName, effective_role, effective_roles
from omnidist.secrets import mask_env


def _chose(note: Note, role: str, machine: str) -> bool:
    """True for the target's note that it picked ``machine`` for ``role`` (or for every node)."""
    return (note.code is NoteCode.MACHINE_CHOSEN and note.data.get("machine") == machine
            and note.data.get("role", role) == role)


def _hardware(role: Optional[EffectiveRole]) -> str:
    if role is None:
        return "nothing"
    if role.accelerator:
        return str(role.accelerator)
    size = "".join(f", {v:g} {unit}" for v, unit in ((role.cpus, "vCPUs"), (role.memory_gb, "GB")) if v)
    return f"CPU-only{size}"


def _same_gpus(a: Optional[Accelerator], b: Optional[Accelerator]) -> bool:
    return (a.type, a.count) == (b.type, b.count) if a and b else a is b is None


def machine_entries(imported: DistributedJob, final: DistributedJob, compiled: CompiledJob, source: Backend,
                    target: Backend, readback: Optional[DistributedJob]) -> tuple[list[ReportEntry], set[Note]]:
    """One entry per role whose machine the target chose: the machine, what the source ran, and
    why (the target's own note, which is consumed). Reading the target's request back with its
    importer (``readback``) tells the GPUs the machine really has: another model or count is a change in meaning."""
    if readback is None:  # pragma: no cover - compilers write what their importers read
        return [], set()
    chosen, before, carried = (
        machines_named(readback, target),
        machines_named(imported, source),
        machines_named(final, target),
    )
    entries, consumed = [], set()
    for role in effective_roles(final):
        name = role.name.value
        machine = chosen.get(name)
        if machine is None or carried.get(name) == machine:
            continue  # no machine named (a named cluster), or carried as it was (reported with the block)
        got = effective_role(readback, name)
        why = [n for n in compiled.diagnostics if _chose(n, name, machine)]
        consumed.update(why)
        origin = f"{source.name} ran {before[name]}" if name in before else f"the {source.name} spec names no machine"
        role = _as_imported(role, imported)
        text = f"{machine} for {_hardware(role)} ({origin})"
        if got is not None and not _same_gpus(role.accelerator, got.accelerator):
            entries.append(ReportEntry(fidelity=Fidelity.CHANGED, field=f"{name}.machine",
                                       message=f"{text}: it has {_hardware(got)}, not {_hardware(role)}",
                                       **_traced(why, target)))
        else:
            reason = why[0].message if why else "the target's machine for it"
            basis = "accelerator equivalence" if role.accelerator else "vCPUs and memory"
            entries.append(ReportEntry(fidelity=Fidelity.APPROXIMATED, field=f"{name}.machine",
                                       message=f"{text}, chosen by {basis}: {reason}", **_traced(why, target)))
    return entries, consumed


def _traced(why: list[Note], target: Backend) -> dict[str, Any]:
    """A machine line's origin: the target compiler's note it consumed (its code), if any."""
    return {"origin": f"{target.name} compiler", "code": why[0].code} if why else {}


def region_entries(final: DistributedJob, source: Backend, target: Backend, profile: Optional[str],
                   settings: Optional[Mapping[str, Any]]) -> list[ReportEntry]:
    """The region a target with regions runs the job in, when neither the source spec nor the
    caller's settings named one: the profile's, or the target's default."""
    _, driver, resolved = api.prepare(final, target.name, profile, settings)
    region = getattr(resolved, "region", None)
    if not region or "region" in final.backends.get(target.name, {}) or "region" in (settings or {}):
        return []
    default = attrs.fields_dict(type(resolved))["region"].default
    if region != default:
        return [ReportEntry(fidelity=Fidelity.EXACT, field="region", message=f"{region} (from the profile)")]
    return [ReportEntry(fidelity=Fidelity.APPROXIMATED, field="region",
                        message=f"{region}: the {source.name} spec names no region, so {target.name} uses its "
                                f"default; set backends.{target.name}.region (or the profile's region) to choose")]


JOB_FIELDS = (
    "name",
    "framework",
    "image",
    "command",
    "args",
    "env",
    "processes_per_node",
    "interconnect",
    "spot",
    "timeout",
    "labels",
    "tuning",
    "description",
    "code",
    "module",
    "framework_version",
    "inputs",
    "outputs",
)
"""Job-wide fields listed as exact when set and no other entry speaks of them."""


def _as_imported(role: EffectiveRole, imported: Optional[DistributedJob]) -> EffectiveRole:
    """The role with the memory its source machine had (the target was asked for a little less,
    see :data:`MEMORY_SLACK`), for the report."""
    before = effective_role(imported, role.name) if imported is not None else None
    if before is None or role.accelerator or before.cpus != role.cpus:
        return role
    return attrs.evolve(role, memory_gb=before.memory_gb)


def exact_entries(job: DistributedJob, entries: list[ReportEntry],
                  imported: Optional[DistributedJob] = None) -> list[ReportEntry]:
    """What mapped exactly: each role that kept its replicas and hardware, and each job-wide
    field that no other entry mentions."""
    spoken = {part for e in entries for part in e.field.split(".")}
    changed = {e.field.split(".")[0] for e in entries
               if e.fidelity.breaks_strict or "." not in e.field or e.field.endswith((".cpus", ".memory_gb"))}
    found = [ReportEntry(fidelity=Fidelity.EXACT, field=r.name.value,
                         message=f"{r.replicas} replica(s), {_hardware(_as_imported(r, imported))}")
             for r in effective_roles(job) if r.name.value not in changed]
    found += own_program_entries(job, spoken | changed)
    for name in JOB_FIELDS:
        value = getattr(job, name)
        if name not in spoken and value not in (None, (), {}, False, "auto", Interconnect.ANY):
            found.append(ReportEntry(fidelity=Fidelity.EXACT, field=name, message=_shown(value, name)))
    return found


def own_program_entries(job: DistributedJob, spoken: set[str]) -> list[ReportEntry]:
    """Each role's own image, command and args (they differ from the job's), carried as written."""
    found = []
    for name in RoleName:
        role = job.role(name)
        for field in ("image", "command", "args"):
            value = getattr(role, field, None) if role is not None else None
            if value and name.value not in spoken:
                found.append(ReportEntry(fidelity=Fidelity.EXACT, field=f"{name.value}.{field}",
                                         message=_shown(value, field)))
    return found


def _shown(value: Any, name: str) -> str:
    if name == "timeout":
        return serde.format_duration(value)
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, tuple):
        return shorten(shlex.join(value))
    if name in ("inputs", "outputs"):
        return shorten(", ".join(f"{k}={v.to_data()}" for k, v in value.items()))
    if isinstance(value, Mapping):
        return shorten(" ".join(f"{k}={v}" for k, v in mask_env(value).items()))
    return shorten(str(value))
