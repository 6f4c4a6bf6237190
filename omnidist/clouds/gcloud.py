"""A ``gcloud …`` command pasted into a file instead of a job file.

:class:`CommandLine` is the command split with :mod:`shlex`; :func:`parse_flags` reads its
``--flag=value`` options for the importer of the Google backend whose command it is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any, Optional

import attrs

from omnidist.errors import ValidationError

RELEASE_TRACKS = ("alpha", "beta")
"""``gcloud`` release tracks, which come before the command words (``gcloud beta ai …``)."""


@attrs.frozen(kw_only=True)
class CommandLine:
    """A ``gcloud …`` command found in a file instead of a job spec.

    Attributes:
        argv: the command split as a shell would (``gcloud``, ``ai``, ``custom-jobs``, …).
        config: the content of the file its ``--config`` flag names (``None`` without one).
        source: the file the command was read from, for messages.
    """

    argv: tuple[str, ...]
    config: Any = None
    source: Optional[str] = None

    def starts(self, *words: str) -> bool:
        """True when the command begins with ``words`` (``"gcloud", "ai", "custom-jobs"``)."""
        return self.argv[:len(words)] == words

    def creates(self, *words: str) -> bool:
        """True when the command is ``gcloud`` [a release track] ``words…`` (``"ai", "custom-jobs",
        "create"``): how a backend recognises the command that submits its jobs."""
        rest = tuple(w for w in self.argv[1:len(words) + 2] if w not in RELEASE_TRACKS)
        return self.starts("gcloud") and rest[:len(words)] == words

    def __str__(self) -> str:
        return shlex.join(self.argv)


def find_command_line(text: str) -> Optional[tuple[str, ...]]:
    """The first ``gcloud`` command in ``text`` (a file a user pasted it into), split with
    :mod:`shlex`: comments, blank lines, ``$ `` prompts and backslash line continuations are
    handled as a shell handles them. ``None`` when no line starts with ``gcloud``."""
    joined = re.sub(r"\\\r?\n", " ", text)
    for line in joined.splitlines():
        stripped = line.strip().removeprefix("$ ").strip()
        if not stripped.startswith("gcloud "):
            if stripped and not stripped.startswith("#"):
                return None  # a document, not a command line
            continue
        try:
            return tuple(shlex.split(stripped, comments=True))
        except ValueError as exc:
            raise ValidationError(f"cannot split the gcloud command like a shell would ({exc})") from None
    return None


@attrs.frozen(kw_only=True)
class Flags:
    """A command line's options: ``values[name]`` lists every value given to ``--name``
    (repeatable flags such as ``--worker-pool-spec``), ``positional`` the other words, ``rest``
    what follows ``--`` (the program's own arguments)."""

    values: dict[str, list[str]]
    positional: list[str]
    rest: list[str]

    def one(self, name: str) -> Optional[str]:
        """The last value given to ``--name`` (gcloud lets a later flag win), or ``None``."""
        found = self.values.get(name)
        return found[-1] if found else None


def parse_flags(argv: Iterable[str], *, switches: Iterable[str], known: Iterable[str],
                command: str) -> Flags:
    """Read ``--name=value``, ``--name value`` and ``--switch`` options after the command words.

    Args:
        argv: the words after the command itself (``jobs submit training JOB --region=…``).
        switches: flags that take no value (``--enable-web-access``, ``--async``); ``--no-NAME``
            turns one off.
        known: every other flag the command takes; anything else is an error naming it.
        command: the command, for messages (``gcloud ai custom-jobs create``).

    Raises:
        ValidationError: an unknown flag, or a flag without its value.
    """
    switches, known = set(switches), set(known)
    values: dict[str, list[str]] = {}
    positional: list[str] = []
    words = list(argv)
    while words:
        word = words.pop(0)
        if word == "--":
            return Flags(values=values, positional=positional, rest=words)
        if not word.startswith("--"):
            positional.append(word)
            continue
        name, sep, value = word[2:].partition("=")
        if name in switches or (name.startswith("no-") and name[3:] in switches):
            values.setdefault(name.removeprefix("no-"), []).append("false" if name.startswith("no-") else "true")
            continue
        if name not in known:
            raise ValidationError(f"{command} has no flag --{name} that omnidist knows; flags it reads: "
                                  f"{', '.join('--' + k for k in sorted(known | switches))}", path=f"--{name}")
        if not sep:
            if not words:
                raise ValidationError("expects a value", path=f"--{name}")
            value = words.pop(0)
        values.setdefault(name, []).append(value)
    return Flags(values=values, positional=positional, rest=[])


def key_values(text: str, path: str) -> dict[str, str]:
    """``"count=1,type=nvidia-tesla-t4"`` (gcloud's dict flags) -> ``{"count": "1", "type": …}``."""
    found: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValidationError(f"expected KEY=VALUE pairs separated by commas, got {item!r}", path=path)
        found[key.strip()] = value.strip()
    return found


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` laid on top, mapping by mapping (a flag overrides the --config file)."""
    result = dict(base)
    for key, value in over.items():
        both = isinstance(value, Mapping) and isinstance(result.get(key), Mapping)
        result[key] = merged(result[key], value) if both else value
    return result
