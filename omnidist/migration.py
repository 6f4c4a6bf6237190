"""Moving a job between clouds: import a native spec, compile it for another backend, and
report what carried over exactly, what was approximated, inferred, changed or dropped.

``--strict`` refuses any drop or change in meaning. A machine picked for the same
accelerator type and count is not a change in meaning; another GPU model or count is.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from typing import Any, Optional, Union

import attrs

from omnidist import api, registry, serde
from omnidist.backend import CompiledJob, Note, NoteKind
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.job import DistributedJob, Framework, RoleName

GOOGLE_BACKENDS = frozenset({"vertex", "ai_platform"})
"""Backends that share Compute Engine's vocabulary (machine types, regions, service accounts)."""

CARRIED_BETWEEN_GOOGLE = ("machine_types", "region", "service_account", "network")
"""Backend-block keys that mean the same on both Google backends, so they carry over."""

DROPPABLE_FEATURES = tuple(r.value for r in RoleName if r is not RoleName.PRIMARY)
"""Features a non-strict migration may drop (whole roles) when the target cannot express them."""


class Fidelity(str, enum.Enum):
    """How one part of the job fared in the migration."""

    EXACT = "exact"
    INFERRED = "inferred"
    APPROXIMATED = "approximated"
    CHANGED = "changed"
    DROPPED = "dropped"
    HINT = "hint"

    @property
    def breaks_strict(self) -> bool:
        """True for outcomes ``--strict`` refuses."""
        return self in (Fidelity.CHANGED, Fidelity.DROPPED)


_FROM_NOTE = {
    NoteKind.APPROXIMATED: Fidelity.APPROXIMATED,
    NoteKind.CHANGED: Fidelity.CHANGED,
    NoteKind.DEFAULTED: Fidelity.APPROXIMATED,
    NoteKind.DROPPED: Fidelity.DROPPED,
    NoteKind.HINT: Fidelity.HINT,
}
"""Diagnostic kind -> fidelity outcome."""


@attrs.frozen(kw_only=True)
class ReportEntry:
    """One line of the fidelity report."""

    fidelity: Fidelity = attrs.field(converter=Fidelity)
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.fidelity.value:<12} {self.field}: {self.message}"


@attrs.frozen(kw_only=True)
class MigrationReport:
    """What a migration did to each part of the job."""

    source: str
    target: str
    entries: tuple[ReportEntry, ...] = attrs.field(converter=tuple)

    @property
    def breaks_strict(self) -> tuple[ReportEntry, ...]:
        """The entries that make ``--strict`` fail."""
        return tuple(e for e in self.entries if e.fidelity.breaks_strict)

    def to_dict(self) -> dict[str, Any]:
        """The report as data (``omnidist migrate -o json``)."""
        return {"source": self.source, "target": self.target, "strict_ok": not self.breaks_strict,
                "entries": [{"fidelity": e.fidelity.value, "field": e.field, "message": e.message} for e in self.entries]}

    def __str__(self) -> str:
        lines = [f"migration {self.source} -> {self.target}"]
        lines += [f"  {e}" for e in self.entries]
        if self.breaks_strict:
            lines.append(f"  {len(self.breaks_strict)} change(s) in meaning: --strict would refuse this migration")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from omnidist import display

        return display.table([(e.fidelity.value, e.field, e.message) for e in self.entries],
                             ("fidelity", "field", "message"), caption=f"{self.source} → {self.target}")


class StrictMigrationError(UnsupportedFeatureError):
    """``--strict`` found a drop or a change in meaning; ``report`` says which."""

    def __init__(self, report: MigrationReport):
        self.report = report
        parts = "; ".join(f"{e.field} ({e.fidelity.value})" for e in report.breaks_strict)
        super().__init__(parts, report.target, "the migration would change the job's meaning.",
                         "Drop --strict to accept the report, or change the job first.")


# --- reading the source -------------------------------------------------------------------------

def detect_backend(native: Mapping[str, Any]) -> str:
    """Tell which backend a native spec belongs to from its content.

    Raises:
        ValidationError: when the content does not say; pass ``--from``.
    """
    keys = set(native)
    schema = str(native.get("$schema", ""))
    if "azureml" in schema or str(native.get("type", "")).lower() == "command" or "distribution" in keys:
        return "azure_ml"
    if keys & {"trainingInput", "masterType", "masterConfig", "scaleTier", "parameterServerType"}:
        return "ai_platform"
    if keys & {"jobSpec", "workerPoolSpecs", "worker_pool_specs"}:
        return "vertex"
    raise ValidationError("cannot tell which backend this spec is for; pass --from vertex|ai_platform|azure_ml")


_IMAGE_HINTS = (
    ("deepspeed", Framework.DEEPSPEED),
    ("horovod", Framework.HOROVOD),
    ("pytorch", Framework.PYTORCH),
    ("torch", Framework.PYTORCH),
    ("tensorflow", Framework.TENSORFLOW),
    ("tf-", Framework.TENSORFLOW),
    ("tf2-", Framework.TENSORFLOW),
)
"""Substrings of prebuilt training-container names -> framework, checked in order."""


def infer_framework(job: DistributedJob) -> tuple[Framework, str]:
    """A framework for a job whose native spec did not say, and why."""
    if job.parameter_servers is not None and job.parameter_servers.replicas:
        return Framework.TENSORFLOW, "the job has parameter servers (a TF_CONFIG-style cluster)"
    image = (job.image or job.primary.image or "").lower()
    name = image.rsplit("/", 1)[-1]
    for needle, framework in _IMAGE_HINTS:
        if needle in name:
            return framework, f"the image {image!r} is a {framework.value} container"
    return Framework.CUSTOM, "nothing in the spec says; set it with --framework (pytorch, tensorflow, …)"


def read_native(native: Union[Mapping[str, Any], str, "os.PathLike[str]"]) -> tuple[Mapping[str, Any], Optional[str]]:
    """A native spec from a mapping or a YAML/JSON file, with its file name."""
    if isinstance(native, Mapping):
        return native, None
    source = str(native)
    data = serde.read_document(native)
    if not isinstance(data, Mapping):
        raise ValidationError("a native job spec is a mapping of keys", source=source)
    return data, source


def import_job(
    native: Union[Mapping[str, Any], str, "os.PathLike[str]"],
    source: Optional[str] = None,
    framework: Optional[Union[Framework, str]] = None,
) -> tuple[DistributedJob, str, list[ReportEntry]]:
    """Import a native spec: the job, the source backend's name, and what was inferred."""
    data, filename = read_native(native)
    try:
        source = source or detect_backend(data)
        job, notes = registry.get(source).import_with_notes(data)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(filename)) from None
    entries = [_entry(n) for n in notes]
    if framework is not None:
        job = attrs.evolve(job, framework=framework)
        entries.append(ReportEntry(fidelity="exact", field="framework", message=f"{job.framework.value} (from --framework)"))
    elif job.framework is Framework.CUSTOM:
        guessed, why = infer_framework(job)
        job = attrs.evolve(job, framework=guessed)
        entries.append(ReportEntry(fidelity="inferred", field="framework", message=f"{guessed.value}: {why}"))
    return job, source, entries


def _entry(note: Note) -> ReportEntry:
    return ReportEntry(fidelity=_FROM_NOTE[note.kind], field=note.field, message=note.message)


# --- moving it ----------------------------------------------------------------------------------

def carry_backend_block(job: DistributedJob, source: str, target: str) -> tuple[DistributedJob, list[ReportEntry]]:
    """Carry the source block's settings that mean the same on the target; list the rest."""
    block = dict(job.backends.get(source, {}))
    if not block or source == target:
        return job, []
    carried = {k: block[k] for k in CARRIED_BETWEEN_GOOGLE if k in block} if {source, target} <= GOOGLE_BACKENDS else {}
    entries = [ReportEntry(fidelity="exact", field=f"backends.{source}.{k}", message=f"carried to backends.{target}.{k} "
                           "(same Compute Engine vocabulary)") for k in carried]
    entries += [ReportEntry(fidelity="hint", field=f"backends.{source}.{k}",
                            message=f"{source}-only setting, not used by {target}") for k in block if k not in carried]
    target_block = {**carried, **job.backends.get(target, {})}
    backends = {k: v for k, v in job.backends.items() if k != source}
    if target_block:
        backends[target] = target_block
    return attrs.evolve(job, backends=backends), entries


def _drop(job: DistributedJob, feature: str) -> Optional[DistributedJob]:
    if feature in DROPPABLE_FEATURES and job.role(feature) is not None:
        return attrs.evolve(job, **{feature: None})
    return None


def _without_machine(job: DistributedJob, target: str, exc: ValidationError) -> Optional[tuple[DistributedJob, str, str]]:
    """When the target rejects a machine type carried from the source, drop it so the target
    picks one for the role's accelerator; returns the new job, the role and the machine."""
    prefix = f"backends.{target}.machine_types."
    for problem in exc.problems:
        if problem.path.startswith(prefix):
            role = problem.path[len(prefix):].split(".")[0]
            machines = dict(job.backends.get(target, {}).get("machine_types", {}))
            if role in machines:
                machine = machines.pop(role)
                block = {**job.backends[target], "machine_types": machines}
                return attrs.evolve(job, backends={**job.backends, target: block}), role, machine
    return None


def compile_dropping(job: DistributedJob, target: str, strict: bool, profile: Optional[str] = None,
                     settings: Optional[Mapping[str, Any]] = None) -> tuple[CompiledJob, list[ReportEntry]]:
    """Compile for ``target``. A carried machine type the target does not offer is replaced by
    the target's own pick for the same accelerator; without ``strict``, whole roles the target
    refuses are dropped. Each such step is reported."""
    entries: list[ReportEntry] = []
    for _ in range(len(DROPPABLE_FEATURES) + len(RoleName) + 1):
        try:
            return api.compile(job, backend=target, profile=profile, settings=settings), entries
        except UnsupportedFeatureError as exc:
            smaller = None if strict else _drop(job, exc.feature)
            if smaller is None:
                raise
            entries.append(ReportEntry(fidelity="dropped", field=exc.feature, message=f"{exc.message} {exc.hint}".strip()))
            job = smaller
        except ValidationError as exc:
            fixed = _without_machine(job, target, exc)
            if fixed is None:
                raise
            job, role, machine = fixed
            entries.append(ReportEntry(fidelity="approximated", field=role,
                                       message=f"{target} does not offer machine {machine!r}; it picks one for the same accelerator"))
    raise AssertionError("unreachable: every droppable part was tried")  # pragma: no cover


def _role_entries(job: DistributedJob, compiled: CompiledJob) -> list[ReportEntry]:
    from omnidist import lowering

    touched = {n.field.split(".")[0] for n in compiled.diagnostics}
    return [
        ReportEntry(fidelity="exact", field=role.name.value,
                    message=f"{role.replicas} replica(s)" + (f", {role.accelerator}" if role.accelerator else ", CPU"))
        for role in lowering.effective_roles(job) if role.name.value not in touched
    ]


def migrate(
    native: Union[Mapping[str, Any], str, "os.PathLike[str]"],
    source: Optional[str] = None,
    target: str = "vertex",
    *,
    strict: bool = False,
    framework: Optional[Union[Framework, str]] = None,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> tuple[CompiledJob, MigrationReport]:
    """Import ``native`` from ``source`` (detected when omitted) and compile it for ``target``.

    Raises:
        StrictMigrationError: with ``strict``, when anything would be dropped or changed.
        UnsupportedFeatureError: when the target cannot express something that cannot be dropped.
        ValidationError: when the native spec is malformed.
    """
    job, source, entries = import_job(native, source, framework)
    job, carried = carry_backend_block(job, source, target)
    compiled, dropped = compile_dropping(job, target, strict, profile, settings)
    entries += carried + dropped + [_entry(n) for n in compiled.diagnostics] + _role_entries(job, compiled)
    report = MigrationReport(source=source, target=target, entries=sorted(entries, key=_order))
    if strict and report.breaks_strict:
        raise StrictMigrationError(report)
    return compiled, report


_ORDER = {f: i for i, f in enumerate([Fidelity.DROPPED, Fidelity.CHANGED, Fidelity.APPROXIMATED, Fidelity.INFERRED,
                                      Fidelity.EXACT, Fidelity.HINT])}


def _order(entry: ReportEntry) -> tuple[int, str]:
    return _ORDER[entry.fidelity], entry.field


def job_yaml_with_comments(job: DistributedJob, entries: list[ReportEntry], source: str, filename: Optional[str]) -> str:
    """The imported job as YAML, with a header saying where it came from and a comment on each
    top-level key whose value was inferred or approximated."""
    text = serde.job_to_yaml(job)
    remarks = {e.field.split(".")[0]: e for e in entries if e.fidelity in (Fidelity.INFERRED, Fidelity.APPROXIMATED)}
    lines = []
    for line in text.splitlines():
        key = line.split(":", 1)[0]
        entry = remarks.get(key) if line and not line[0].isspace() else None
        lines.append(f"{line}  # {entry.fidelity.value}: {entry.message}" if entry and ":" in line else line)
    header = [f"# imported from {filename or 'a'} {source} spec by omnidist"]
    header += [f"# {e}" for e in entries if e.fidelity not in (Fidelity.EXACT,)]
    return "\n".join(header + lines) + "\n"
