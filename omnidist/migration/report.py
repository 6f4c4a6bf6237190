"""The fidelity report of a migration: what carried over exactly, what was inferred,
approximated, changed or dropped, and the ``--strict`` verdict on it."""

from __future__ import annotations

import enum
from typing import Any

import attrs

from omnidist.backend.values import Note, NoteKind
from omnidist.errors import UnsupportedFeatureError


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


@attrs.frozen(kw_only=True, repr=False)
class MigrationReport:
    """What a migration did to each part of the job."""

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for entry in self.entries:
            counts[entry.fidelity.value] = counts.get(entry.fidelity.value, 0) + 1
        summary = ", ".join(f"{n} {kind}" for kind, n in counts.items())
        return f"MigrationReport({self.source} -> {self.target}: {summary})"

    source: str
    target: str
    entries: tuple[ReportEntry, ...] = attrs.field(converter=tuple)

    @property
    def breaks_strict(self) -> tuple[ReportEntry, ...]:
        """The entries that make ``--strict`` fail."""
        return tuple(e for e in self.entries if e.fidelity.breaks_strict)

    def to_dict(self) -> dict[str, Any]:
        """The report as data (``omnidist migrate -o json``)."""
        return {
            "source": self.source,
            "target": self.target,
            "strict_ok": not self.breaks_strict,
            "entries": [{"fidelity": e.fidelity.value, "field": e.field, "message": e.message} for e in self.entries],
        }

    def __str__(self) -> str:
        lines = [f"migration {self.source} -> {self.target}"]
        lines += [f"  {e}" for e in self.entries]
        if self.breaks_strict:
            lines.append(f"  {len(self.breaks_strict)} change(s) in meaning: --strict would refuse this migration")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        from omnidist import notebook

        summary = notebook.counts((e.fidelity.value for e in self.entries), [f.value for f in _ORDER])
        strict = ("<p style='color:#cf222e'><b>--strict would refuse this migration</b>: "
                  f"{len(self.breaks_strict)} change(s) in meaning</p>" if self.breaks_strict else "")
        rows = [(notebook.badge(e.fidelity.value), e.field, e.message) for e in self.entries]
        return (f"<p><b>{html.escape(self.source)} → {html.escape(self.target)}</b>: {summary}</p>{strict}"
                + notebook.table(rows, ("fidelity", "field", "message")))


class StrictMigrationError(UnsupportedFeatureError):
    """``--strict`` found a drop or a change in meaning; ``report`` says which."""

    def __init__(self, report: MigrationReport):
        self.report = report
        parts = "; ".join(f"{e.field} ({e.fidelity.value})" for e in report.breaks_strict)
        super().__init__(parts, report.target, "the migration would change the job's meaning.",
                         "Drop --strict to accept the report, or change the job first.")


def entry_for(note: Note) -> ReportEntry:
    """The report line for a compiler's or importer's note."""
    return ReportEntry(fidelity=_FROM_NOTE[note.kind], field=note.field, message=note.message)


# --- reading the source -------------------------------------------------------------------------


_ORDER = {f: i for i, f in enumerate([Fidelity.DROPPED, Fidelity.CHANGED, Fidelity.APPROXIMATED, Fidelity.INFERRED,
                                      Fidelity.EXACT, Fidelity.HINT])}


def order(entry: ReportEntry) -> tuple[int, str]:
    """Where ``entry`` goes in the report: drops and changes first, then by field."""
    return _ORDER[entry.fidelity], entry.field
