"""Commands written as text, read the way a shell reads them.

- :func:`shell_argv` turns one command string (a native spec's one-string ``command``, ``migrate --command``)
  into an argv list when that keeps its meaning, and into ``bash -c '…'`` when only a shell
  would run it the same way (several lines, ``&&``, ``$VAR``, globs, a builtin such as ``source``).

- :class:`CommandLine` is a command pasted into a file instead of a job spec (the command a
  cloud's own tool submitted the job with); :func:`find_command_line` finds it, for the programs
  the installed backends read (:attr:`omnidist.backend.contract.Backend.command_programs`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from typing import Any, Optional

import attrs

from omnidist.errors import ValidationError
from omnidist.patterns import lazy_pattern

SHELL_BUILTINS = frozenset({
    ".", "alias", "cd", "eval", "exec", "export", "pushd", "popd", "read", "set", "shopt", "source", "trap",
    "ulimit", "umask", "unset", "wait",
})
"""First words that only a shell can run: there is no program of that name to exec."""

_OPERATORS = "|&;<>()*?[\n"
_ASSIGNMENT = lazy_pattern(r"^[A-Za-z_][A-Za-z0-9_]*=")
_REFERENCE = "${{"  # a platform's own ${{inputs.x}} references, replaced before any shell sees the command


def needs_shell(command: str) -> bool:
    """True when running ``command`` as a plain argv would not do what a shell does with it.

    Outside quotes: operators (``&& || ; | < > ( )``), a newline, globs (``* ? [``), a comment or
    ``~`` at the start of a word, a backslash; outside single quotes: ``$`` expansions and
    backquotes (a platform's ``${{…}}`` references excepted); and a first word that is a shell
    builtin or a ``VAR=value`` assignment.
    """
    quote, previous = "", " "
    for i, char in enumerate(command):
        expands = char == "`" or (char == "$" and not command.startswith(_REFERENCE, i))
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\" or expands:
            return True
        elif quote == '"':
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char in _OPERATORS or (char in "#~" and previous.isspace()):
            return True
        previous = char
    words = command.split(None, 1)
    return bool(words) and (words[0] in SHELL_BUILTINS or bool(_ASSIGNMENT.match(words[0])))


def shell_argv(command: str, path: str = "command") -> tuple[tuple[str, ...], bool]:
    """The argv that runs ``command`` as a shell would, and whether it had to be ``bash -c``.

    A plain command (``python train.py --lr 0.1``) is split like a shell splits it; anything else
    is kept whole, lines intact, as ``("bash", "-c", command)`` so that every line and operator
    still runs.

    Raises:
        ValidationError: at ``path``, for a command a shell cannot split (an open quote).
    """
    text = command.strip()
    try:
        plain = tuple(shlex.split(text))
    except ValueError as exc:
        raise ValidationError(f"cannot split the command like a shell would ({exc})", path=path) from None
    if needs_shell(text):
        return ("bash", "-c", text), True
    return plain, False


@attrs.frozen(kw_only=True)
class CommandLine:
    """A command found in a file instead of a job spec.

    Attributes:
        argv: the command split as a shell would (the program, its command words, its flags).
        config: the content of the file its ``--config`` flag names (``None`` without one).
        source: the file the command was read from, for messages.
    """

    argv: tuple[str, ...]
    config: Any = None
    source: Optional[str] = None

    def starts(self, *words: str) -> bool:
        """True when the command begins with ``words``."""
        return self.argv[:len(words)] == words

    def __str__(self) -> str:
        return shlex.join(self.argv)


def find_command_line(text: str, programs: Collection[str]) -> Optional[tuple[str, ...]]:
    """The first command of one of ``programs`` in ``text`` (a file a user pasted it into), split
    with :mod:`shlex`: comments, blank lines, ``$ `` prompts and backslash line continuations are
    handled as a shell handles them. ``None`` when the first line that is not a comment starts
    with none of them (a document, not a command line)."""
    joined = re.sub(r"\\\r?\n", " ", text)
    for line in joined.splitlines():
        stripped = line.strip().removeprefix("$ ").strip()
        program = stripped.split(maxsplit=1)[0] if stripped else ""
        if program not in programs or stripped == program:
            if stripped and not stripped.startswith("#"):
                return None  # a document, not a command line
            continue
        try:
            return tuple(shlex.split(stripped, comments=True))
        except ValueError as exc:
            raise ValidationError(f"cannot split the {program} command like a shell would ({exc})") from None
    return None
