"""A ``gcloud …`` command pasted into a file instead of a job file.

The core finds it (:class:`omnidist.kit.CommandLine`, for the programs backends declare in
``command_programs``: :data:`PROGRAM` here); :func:`creates` tells which command it is and
:func:`parse_flags` reads its ``--flag=value`` options for the importer of the Google backend
whose command it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import CommandLine, ValidationError
from omnidist_google import GCLOUD

PROGRAM = GCLOUD
"""The program whose command lines the Google backends read (their ``command_programs``)."""

RELEASE_TRACKS = ("alpha", "beta")
"""``gcloud`` release tracks, which come before the command words (``gcloud beta ai …``)."""


def creates(command: CommandLine, *words: str) -> bool:
    """True when ``command`` is ``gcloud`` [a release track] ``words…`` (``"ai", "custom-jobs",
    "create"``): how a backend recognises the command that submits its jobs."""
    rest = tuple(w for w in command.argv[1:len(words) + 2] if w not in RELEASE_TRACKS)
    return command.starts(PROGRAM) and rest[:len(words)] == words


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
