"""Colour on a terminal: errors, notes by kind, job states, a migration's fidelity.

Colour is on only where a person reads it: the stream is a terminal, ``TERM`` is not ``dumb``,
and ``NO_COLOR`` (https://no-color.org) is unset or empty. ``FORCE_COLOR`` (non-empty) turns it on
for a stream that is not a terminal (a pager that shows colour, a test). Every helper takes the
text as it prints without colour and only adds ANSI sequences around words, so output piped
to a file or another program is byte for byte what it was.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, Any, Optional

import click

from omnidist.secrets import mask_shapes

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters a terminal acts on (escape sequences, carriage returns, bells) or breaks a line at,
but a tab and a newline."""


def shown(text: str) -> str:
    """Text from a job, a native file or a cloud as omnidist's own lines print it (errors, notes,
    reports, states): secrets masked by their shape, and every control character written as an
    escape, so that a value cannot move the cursor, clear the screen or fake a line of its own.
    Applied twice it changes nothing more, so every helper here applies it."""
    return _CONTROL.sub(lambda m: ascii(m[0])[1:-1], mask_shapes(text))

NOTE_COLOURS: dict[str, dict[str, Any]] = {
    "defaulted": {"fg": "cyan"},
    "approximated": {"fg": "yellow"},
    "inferred": {"fg": "cyan"},
    "changed": {"fg": "magenta", "bold": True},
    "dropped": {"fg": "red", "bold": True},
    "hint": {"fg": "blue"},
    "exact": {"fg": "green"},
}
"""A note kind (or a migration's fidelity) -> its colour: what changed or was lost stands out,
what was exact or only advice recedes."""

STATE_COLOURS: dict[str, dict[str, Any]] = {
    "succeeded": {"fg": "green", "bold": True},
    "failed": {"fg": "red", "bold": True},
    "cancelled": {"fg": "yellow"},
    "cancelling": {"fg": "yellow"},
    "running": {"fg": "blue", "bold": True},
    "queued": {"fg": "cyan"},
    "pending": {"fg": "cyan"},
    "paused": {"fg": "yellow"},
    "unknown": {"dim": True},
}
"""A portable job state -> its colour."""


def enabled(stream: Optional[IO[str]] = None, environ: Optional[dict[str, str]] = None) -> bool:
    """Whether ``stream`` (default stderr) gets colour (see the module docstring)."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and env.get("TERM") != "dumb"


def paint(text: str, on: bool, **style: Any) -> str:
    """``text`` with ``style`` (click's ``fg``, ``bold``…) when ``on``, else as it is."""
    return click.style(text, **style) if on and style else text


def note_kind(kind: str, on: bool) -> str:
    """A note kind or fidelity word in its colour."""
    return paint(kind, on, **NOTE_COLOURS.get(kind, {}))


def state(value: str, on: bool) -> str:
    """A job state in its colour."""
    return paint(value, on, **STATE_COLOURS.get(value, {}))


def echo_error(message: str, prefix: str = "error:") -> None:
    """``error: MESSAGE`` on stderr, the prefix red on a terminal. On a terminal each line longer
    than it is wide wraps at spaces (a path or a URI is never split) onto lines indented under the
    message; elsewhere (a file, a program reading it) the message stays as it is."""
    on = enabled(sys.stderr)
    text = shown(message)
    columns = _stderr_width()
    if columns:
        text = "\n".join(wrapped(line, columns, first=len(prefix) + 1) for line in text.split("\n"))
    click.echo(f"{paint(prefix, on, fg='red', bold=True)} {text}", err=True, color=on)


def wrapped(line: str, columns: int, first: int = 0, indent: str = "  ") -> str:
    """``line`` wrapped to ``columns`` at spaces, its first line ``first`` characters shorter (for a
    prefix), the others indented."""
    import textwrap

    if first + len(line) <= columns:
        return line
    parts = textwrap.wrap(" " * first + line, columns, subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False)
    return "\n".join(parts)[first:] if parts else line


def _stderr_width() -> Optional[int]:
    """The terminal's width when stderr is one, else ``None``."""
    import shutil

    if not sys.stderr.isatty():
        return None
    return max(shutil.get_terminal_size((100, 24)).columns, 40)


def echo_note(note: Any, prefix: str = "note:") -> None:
    """A compile note on stderr: ``note: [kind] field: message``, the kind in its colour."""
    on = enabled(sys.stderr)
    kind = note.kind.value
    click.echo(f"{paint(prefix, on, dim=True)} [{note_kind(kind, on)}] {shown(f'{note.field}: {note.message}')}",
               err=True,
               color=on)


def run_note(stream: IO[str]) -> Any:
    """A function printing ``omnidist run``'s notes on ``stream``: ``omnidist: note: message``,
    ``note`` in the colour of the note's kind."""
    on = enabled(stream)

    def show(note: Any) -> None:
        stream.write(f"omnidist: {note_kind_word('note:', note.kind.value, on)} {shown(note.message)}\n")

    return show


def note_kind_word(word: str, kind: str, on: bool) -> str:
    """``word`` in the colour of note kind ``kind``."""
    return paint(word, on, **NOTE_COLOURS.get(kind, {}))


def report(report: Any, on: bool, *, traced: bool = False) -> str:
    """A migration's fidelity report as ``str(report)`` prints it, each fidelity word in its colour;
    with ``traced`` (``--debug``), each line ends with where it came from (``report.traced()``)."""
    if not on:
        return shown(report.traced() if traced else str(report))
    lines = [f"migration {report.source} -> {report.target}"]
    for entry in report.entries:
        word = entry.fidelity.value
        text = shown(f"{entry.field}: {entry.message}" + (f"  [{entry.trace}]" if traced else ""))
        lines.append(f"  {note_kind(word, on)}{' ' * max(12 - len(word), 0)} {text}")
    if report.breaks_strict:
        lines.append(paint(f"  {len(report.breaks_strict)} change(s) in meaning: --strict would refuse this migration",
                           on, fg="red"))
    return "\n".join(lines)


def warning(message: str, on: bool) -> str:
    """``warning: MESSAGE``, the prefix yellow on a terminal."""
    return f"{paint('warning:', on, fg='yellow', bold=True)} {shown(message)}"
