"""The fidelity report of a migration: what carried over exactly, what was inferred,
approximated, changed or dropped, and the ``--strict`` verdict on it."""

from __future__ import annotations

import enum
from typing import Any, Optional

import attrs

from omnidist.backend.values import Note, NoteKind
from omnidist.errors import UnsupportedFeatureError
from omnidist.model.features import NoteCode
from omnidist.model.fields import as_tuple


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
    """One line of the fidelity report.

    ``origin`` and ``code`` say where a line came from, so a wrong one can be traced to the code
    that wrote it (``omnidist migrate --debug`` shows them): the importer or compiler whose note
    it is (``<backend> compiler``) and that note's :class:`~omnidist.model.features.NoteCode`, or the
    migration step that wrote it (``migration move``: :func:`omnidist.migration.move.move_job`).
    They never change how a line prints, nor which lines are equal.
    """

    fidelity: Fidelity = attrs.field(validator=attrs.validators.instance_of(Fidelity))
    field: str
    message: str
    origin: str = attrs.field(default="", eq=False)
    code: Optional[NoteCode] = attrs.field(default=None, eq=False)

    def __str__(self) -> str:
        return f"{self.fidelity.value:<12} {self.field}: {self.message}"

    @property
    def trace(self) -> str:
        """Where the line came from: ``<backend> compiler machine.chosen`` (a note and its code),
        ``<backend> importer`` (a note without a code), ``migration move`` (a step's own line)."""
        origin = self.origin or "migration"
        return f"{origin} {self.code.value}" if self.code is not None else origin


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
    entries: tuple[ReportEntry, ...] = attrs.field(converter=as_tuple)

    @property
    def breaks_strict(self) -> tuple[ReportEntry, ...]:
        """The entries that make ``--strict`` fail."""
        return tuple(e for e in self.entries if e.fidelity.breaks_strict)

    def to_dict(self, *, traced: bool = False) -> dict[str, Any]:
        """The report as data (``omnidist migrate -o json``); with ``traced`` (``--debug``), each
        entry also says where it came from (its ``origin`` and ``code``, empty for the migration's own)."""
        def entry(e: ReportEntry) -> dict[str, Any]:
            found = {"fidelity": e.fidelity.value, "field": e.field, "message": e.message}
            if traced:
                found.update(origin=e.origin, code=e.code.value if e.code is not None else None)
            return found

        return {"source": self.source, "target": self.target, "strict_ok": not self.breaks_strict,
                "entries": [entry(e) for e in self.entries]}

    def traced(self) -> str:
        """``str(report)`` with each line followed by where it came from (``omnidist migrate --debug``)."""
        return self._text(traced=True)

    def __str__(self) -> str:
        return self._text()

    def _text(self, *, traced: bool = False) -> str:
        lines = [f"migration {self.source} -> {self.target}"]
        lines += [f"  {e}  [{e.trace}]" if traced else f"  {e}" for e in self.entries]
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


def entry_for(note: Note, origin: str) -> ReportEntry:
    """The report line for a compiler's or importer's note; ``origin`` says whose (``<backend>
    importer``), and the line keeps the note's code."""
    return ReportEntry(fidelity=_FROM_NOTE[note.kind], field=note.field, message=note.message, origin=origin,
                       code=note.code)


# --- reading the source -------------------------------------------------------------------------


_ORDER = {f: i for i, f in enumerate([Fidelity.DROPPED, Fidelity.CHANGED, Fidelity.APPROXIMATED, Fidelity.INFERRED,
                                      Fidelity.EXACT, Fidelity.HINT])}


def order(entry: ReportEntry) -> tuple[int, str]:
    """Where ``entry`` goes in the report: drops and changes first, then by field."""
    return _ORDER[entry.fidelity], entry.field
