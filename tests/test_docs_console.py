"""The console examples in the documentation are what the program does: each ```console block
that shows a command's output is run and compared, and every ``omnidist`` command shown anywhere
parses with the real command line.

How a page's blocks run (one temporary folder per page, holding a copy of ``examples/`` and of
the migration inputs in ``tests/migration/golden/inputs/``, a private HOME, no ``OMNIDIST_*``,
no colour, no terminal width):

- a ```yaml or ```toml block whose first line is ``# NAME.yaml`` (``# NAME.toml``) is written
  there as that file, for the blocks after it (the job and the profiles a page shows are the ones
  its commands use);
- in a console block, ``$ cd DIR`` and ``$ export NAME=VALUE`` change the folder and the
  environment of the commands after them; ``$ cat FILE`` writes the lines shown as FILE;
  every other ``$`` line is run with bash, and the lines under it are its expected output (a
  command with none under it only has to succeed: its output is left out);
- the expected lines are matched against stdout and stderr together, in any order (replicas
  print in any order), each against a line of its own; ``…`` inside a line matches anything,
  and a line that is only ``…`` allows further lines the transcript leaves out. Without one,
  every line the command printed must be shown; with one, still every line omnidist prints about
  the job itself (``note:``, ``error:``, ``warning:``) must be shown, so a transcript cannot
  drop what the program tells the user.

A block that needs a cloud (a submit, a job's logs) is preceded by an HTML comment saying so,
``<!-- console: not run: REASON -->``; its commands are still parsed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import click
import pytest

from omnidist import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"])
BIN = Path(sys.executable).parent
NOT_RUN = re.compile(r"<!--\s*console:\s*not run:\s*(?P<why>[^>]+?)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>\S*)\n(?P<body>.*?)^```$", re.S | re.M)
FILES = {"yaml": "ya?ml", "toml": "toml"}
"""The blocks written as the file their first line names: language -> the file name's ending."""
OWN_LINES = ("note:", "error:", "warning:", "omnidist: note:", "omnidist: ")
"""Lines omnidist prints about the job: a transcript shows every one of them."""


@attrs.frozen
class Command:
    line: str
    expected: tuple[str, ...]


@attrs.frozen
class Block:
    page: Path
    lineno: int
    lang: str
    body: str
    not_run: str = ""

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.lineno}"

    @property
    def commands(self) -> list[Command]:
        found: list[Command] = []
        for line in self.body.splitlines():
            if line.startswith("$ "):
                found.append(Command(line[2:], ()))
            elif found:
                found[-1] = Command(found[-1].line, (*found[-1].expected, line))
        return found

    @property
    def shows_output(self) -> bool:
        return any(c.expected for c in self.commands if c.line.startswith("omnidist"))


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n").splitlines()
        marker = NOT_RUN.search(before[-1]) if before else None
        found.append(Block(page, text[:match.start()].count("\n") + 1, match["lang"], match["body"],
                           marker["why"] if marker else ""))
    return found


ALL = [b for page in PAGES for b in blocks(page)]
RUN = [b for b in ALL if b.lang == "console" and b.shows_output and not b.not_run]


def test_every_transcript_is_run_or_says_why_not():
    """A console block showing an omnidist command's output either runs here or says why not."""
    assert RUN, "no console transcript found"
    quiet = [b.name for b in ALL if b.lang == "console" and b.not_run and not b.shows_output]
    assert quiet == [], "a not-run marker on a block without output: drop the marker"


def _parses(words: list[str]) -> None:
    """``omnidist WORDS`` parses with the real command line (nothing runs)."""
    ctx = cli.main.make_context("omnidist", list(words), resilient_parsing=True)
    name = ctx.protected_args[0] if ctx.protected_args else (ctx.args[0] if ctx.args else None)
    if name is None:
        return
    command = cli.main.get_command(ctx, name)
    assert command is not None, f"no command {name!r}"
    rest = (ctx.protected_args + ctx.args)[1:]
    try:
        sub = command.make_context(name, list(rest), parent=ctx)
    except click.exceptions.Exit as exc:  # --help: the command prints its help and exits 0, as shown
        assert exc.exit_code == 0, f"{name} exits {exc.exit_code} while parsing"
        return
    with sub:
        for param in command.params:
            if isinstance(param, click.Option) and param.required:
                assert sub.params.get(param.name) is not None, f"{name}: {param.opts[0]} is required"


SHOWN = sorted({(b.name, c.line) for b in ALL if b.lang == "console" for c in b.commands
                if c.line.startswith("omnidist") and "[" not in c.line and "…" not in c.line})


@pytest.mark.parametrize("where, line", SHOWN, ids=[f"{w} {li[:40]}" for w, li in SHOWN])
def test_every_command_shown_parses(where, line):
    words = shlex.split(line.split(" #")[0].split(" |")[0].split(" >")[0])
    try:
        _parses(words[1:])
    except click.UsageError as exc:
        pytest.fail(f"{where}: `{line}` does not parse: {exc.format_message()}")


def _workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    for native in (ROOT / "tests" / "migration" / "golden" / "inputs").iterdir():
        shutil.copy(native, work / native.name)
    (work / "home").mkdir()
    return work


def _env(work: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMNIDIST_", "COLUMNS", "FORCE_COLOR", "KUBECONFIG", "GOOGLE_", "AZURE_", "XDG_"))}
    return {**keep, "HOME": str(work / "home"), "NO_COLOR": "1", "PATH": f"{BIN}{os.pathsep}{keep.get('PATH', '')}"}


def _pattern(expected: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if part == "…" else re.escape(part) for part in re.split("(…)", expected.rstrip())))


def _normalized(text: str, work: Path) -> list[str]:
    text = text.replace(str(work / "home"), "~").replace(str(work) + os.sep, "").replace(str(work), ".")
    text = text.replace(str(BIN / "python"), "python").replace(sys.executable, "python")
    return [line.rstrip() for line in text.splitlines()]


def _compare(block: Block, command: Command, out: list[str], err: list[str]) -> list[str]:
    """What is wrong with the transcript of ``command`` (empty: it matches)."""
    problems = []
    actual = [*err, *out]
    used = [False] * len(actual)
    expected = [e for e in command.expected if e.strip() != "…"]
    for line in expected:
        pattern = _pattern(line)
        hit = next((i for i, a in enumerate(actual) if not used[i] and pattern.fullmatch(a.rstrip())), None)
        if hit is None:
            problems.append(f"shown but not printed: {line!r}")
        else:
            used[hit] = True
    elided = len(expected) < len(command.expected)
    for i, line in enumerate(actual):
        if used[i] or not line.strip():
            continue
        if not elided or line.lstrip().startswith(OWN_LINES):
            problems.append(f"printed but not shown: {line!r}")
    return problems


def _run_block(block: Block, work: Path, env: dict[str, str]) -> list[str]:
    cwd = work
    problems = []
    status = 0  # what `$?` says in the next command, as in one shell session
    for command in block.commands:
        words = shlex.split(command.line, comments=True)
        if words[:1] == ["cd"]:
            cwd = (cwd / words[1]).resolve()
            continue
        if words[:1] == ["export"]:
            env.update(word.partition("=")[::2] for word in words[1:])
            continue
        if words[:1] == ["cat"]:
            (cwd / words[1]).write_text("\n".join(command.expected) + "\n")
            continue
        result = subprocess.run(["bash", "-c", f"(exit {status}); {command.line}"], cwd=cwd, env=env,
                                capture_output=True, text=True, timeout=600)
        status = result.returncode
        if not command.expected:  # its output is left out: it only has to work
            found = [] if result.returncode == 0 else [f"exit {result.returncode}: {result.stderr.strip()[-300:]}"]
        else:
            found = _compare(block, command, _normalized(result.stdout, work), _normalized(result.stderr, work))
        shown = found[:12] + ([f"… {len(found) - 12} more"] if len(found) > 12 else [])
        problems += [f"$ {command.line}\n    {p}" for p in shown]
    return problems


@pytest.mark.parametrize("page", sorted({b.page for b in RUN}), ids=lambda p: str(p.relative_to(ROOT)))
def test_transcripts_are_what_the_program_prints(page, tmp_path):
    work = _workspace(tmp_path)
    env = _env(work)
    problems = []
    for block in blocks(page):
        first = block.body.splitlines()[:1]
        if block.lang in FILES and first and re.fullmatch(rf"# \S+\.{FILES[block.lang]}", first[0]):
            (work / first[0][2:]).parent.mkdir(parents=True, exist_ok=True)
            (work / first[0][2:]).write_text(block.body)
        if block in RUN:
            problems += [f"{block.name}: {p}" for p in _run_block(block, work, dict(env))]
    assert problems == [], "\n".join(problems)
