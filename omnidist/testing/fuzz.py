"""Mutation fuzzing of native job files: real files (a corpus, compiled requests) mutated as text
and as data, then imported and migrated the way ``omnidist import`` / ``migrate`` do. Every input
must end imported or in a clean :class:`~omnidist.errors.OmnidistError` (an exit code and a
message); anything else (a ``TypeError``, a ``RecursionError``) is a defect, recorded with the
input that caused it.

Derandomized: a campaign is a function of its seed, so a defect found once is found again. The
shared fuzz suite runs a short campaign per backend; ``bench/fuzz.py`` a long one, and reports the
counts.
"""

from __future__ import annotations

import copy
import json
import random
import tempfile
import time
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Optional

import attrs

FRAGMENTS: tuple[str, ...] = (
    "\x00", "\x07", "\t", "\r", "\u2028", "\x85", "\ufeff", "\\", "'", '"', "`", "#", "# x", "- ", ": ", "? ", ",",
    "[", "]", "{", "}", "[]", "{}", "&a ", "*a", "<<: *a", "!!binary ", "!!python/object:os.system ", "!!str ",
    "!!int ", "!!float ", "!!timestamp ", "---\n", "...\n", "%YAML 1.1\n", "\n  ", "\n- ", "|\n  x", ">\n  x",
    "~", "null", "true", "no", "0", "-1", "1.5", "1e999", "1.0e+999", ".nan", ".inf", "-.inf", "0x1F", "0o17",
    "99999999999999999999999", "9" * 5000, "2020-01-01", "12:30:00", "${{inputs.x}}", "$(rm -rf /)", "é", "😀",
    "a" * 300, "gs://", "azureml:", "http://user:pw@host/", "V100:8", "H100:0", "T4:x",
    "1: 2", "{1: 2}", "? [a]\n: b", "-1.0e+308", "1.0e+308", "-9223372036854775809", "5e-324",
)
"""Pieces a text mutation writes: YAML structure and tags, line breaks of every kind, control
characters, numbers past every limit (and at the edge of a float's), keys that are not strings,
values of the wrong shape."""

JUNK: tuple[Any, ...] = (
    None, True, False, 0, -1, 7, 2**70, 10**400, 1.5, float("nan"), float("inf"), -float("inf"), "", " ", "x",
    "a" * 1000, "\x00", "é", "1e999", "-5", "auto", "none", [], [None], [1, "a"], [[[]]], {}, {"": None},
    {"type": []}, {"mode": []}, {"path": 1}, {"a": {"b": {"c": {}}}},
    {1: 2}, {None: "x"}, {1.5: []}, -1.0e308, 1.0e308, 5e-324, -(2**63) - 1, 2**63,
)
"""Values a data mutation puts in place of another: every JSON type, mostly the wrong one; mappings
with keys that are not strings (YAML allows them) and floats at their extremes."""


@attrs.frozen
class Outcome:
    """How one input ended: ``imported`` (and migrated), ``clean`` (an OmnidistError, its exit
    code in ``detail``) or ``defect`` (any other exception, with its traceback)."""

    kind: str
    detail: str = ""
    source: str = ""
    """The mutated input, for a defect."""


@attrs.define
class Counts:
    """What a campaign did: inputs tried, how each ended, the defects found (their inputs kept)."""

    inputs: int = 0
    imported: int = 0
    clean: int = 0
    defects: list[Outcome] = attrs.Factory(list)
    seconds: float = 0.0

    def add(self, outcome: Outcome) -> None:
        """Count one input's outcome."""
        self.inputs += 1
        if outcome.kind == "imported":
            self.imported += 1
        elif outcome.kind == "clean":
            self.clean += 1
        else:
            self.defects.append(outcome)

    def merge(self, other: Counts) -> None:
        """Add another campaign's counts to these."""
        self.inputs += other.inputs
        self.imported += other.imported
        self.clean += other.clean
        self.defects += other.defects
        self.seconds += other.seconds


# --- mutations --------------------------------------------------------------------------------------

def mutate_text(text: str, rng: random.Random) -> bytes:
    """One to three edits of a file's text (insert a fragment, delete or repeat a span, move or
    re-indent a line, truncate, break the encoding), as the bytes a file would hold."""
    for _ in range(rng.choice((1, 1, 2, 3))):
        at = rng.randrange(len(text) + 1)
        op = rng.randrange(8)
        if op in (0, 1):
            text = text[:at] + rng.choice(FRAGMENTS) + text[at:]
        elif op == 2:
            text = text[:at] + text[at + rng.randrange(1, 40):]
        elif op == 3:
            lines = text.splitlines(keepends=True)
            if lines:
                i = rng.randrange(len(lines))
                lines.insert(rng.randrange(len(lines) + 1), lines[i])
                text = "".join(lines)
        elif op == 4:
            lines = text.splitlines(keepends=True)
            if lines:
                i = rng.randrange(len(lines))
                lines[i] = " " * rng.choice((1, 2, 3, 4, 8)) + lines[i] if rng.random() < 0.7 else lines[i].lstrip()
                text = "".join(lines)
        elif op == 5:
            text = text[:at]
        elif op == 6:
            span = text[at:at + rng.randrange(1, 60)]
            text = text[:at] + span * rng.randrange(2, 5) + text[at + len(span):]
        else:
            data = text.encode()
            cut = rng.randrange(len(data) + 1)
            return data[:cut] + bytes([rng.choice((0xff, 0xfe, 0xc3, 0x80, 0xed))]) + data[cut:]
    return text.encode("utf-8", "surrogatepass")


def _places(doc: Any, at: tuple = ()) -> list[tuple]:
    found = [at]
    if isinstance(doc, dict):
        for key, item in doc.items():
            found += _places(item, (*at, key))
    elif isinstance(doc, list):
        for i, item in enumerate(doc):
            found += _places(item, (*at, i))
    return found


def _junk(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(JUNK))  # a copy: later edits of this input must not change JUNK


def mutate_data(doc: Any, rng: random.Random) -> Any:
    """One to three structural edits of parsed data (a value replaced by one of another type,
    a key deleted, added or renamed, a value wrapped in a list or a mapping)."""
    doc = json.loads(json.dumps(doc, default=str))
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        path = rng.choice(_places(doc))
        if not path:
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        op = rng.randrange(6)
        if op in (0, 1):
            parent[key] = _junk(rng)
        elif op == 2:
            del parent[key]
        elif op == 3 and isinstance(parent, dict):
            parent[rng.choice(("type", "mode", "name", "x", "", "image", "command", "resources", "replicas",
                               "env", "inputs", "labels"))] = _junk(rng)
        elif op == 4 and isinstance(parent, dict) and isinstance(key, str):
            parent[key.upper() if rng.random() < 0.5 else key + "s"] = parent.pop(key)
        else:
            parent[key] = rng.choice(([parent[key]], {"value": parent[key]}, str(parent[key])))
    return doc


def render(doc: Any, rng: random.Random) -> bytes:
    """Mutated data as a file holds it: JSON (NaN and infinity as Python writes them) or YAML."""
    if rng.random() < 0.5:
        return json.dumps(doc, allow_nan=True).encode()
    import yaml

    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode("utf-8", "surrogatepass")


# --- running one input ---------------------------------------------------------------------------

def attack(data: bytes, source: Optional[str], target: Optional[str], folder: Path) -> Outcome:
    """Import the file holding ``data`` (from ``source``, or detected) and migrate it to
    ``target``, in process, the way the CLI does; how it ended."""
    from omnidist import migration
    from omnidist.errors import OmnidistError
    from omnidist.migration.imports import import_job

    path = folder / "native.yaml"
    path.write_bytes(data)
    try:
        job, found, entries = import_job(path, migration.resolve(source))
        migration.job_yaml_with_comments(job, entries, found.name, str(path))
        if target is not None and target != found.name:
            compiled, report = migration.migrate(path, found, target)
            compiled.render()
            str(report)
    except OmnidistError as exc:
        return Outcome("clean", str(exc.exit_code))
    except Exception:  # noqa: BLE001 - anything else is the defect this looks for
        return Outcome("defect", traceback.format_exc(limit=-3), data.decode("utf-8", "replace")[:4000])
    return Outcome("imported")


def campaign(backend: str, seeds: Sequence[str], count: int, *, seed: int = 0, targets: Iterable[str] = (),
             budget_s: Optional[float] = None) -> Counts:
    """``count`` mutated inputs from ``seeds`` (file texts of ``backend``'s native format), each
    imported and migrated to the next of ``targets``; stops early after ``budget_s`` seconds.

    The same arguments give the same inputs (a seeded generator, in order)."""
    rng = random.Random(f"{backend}:{seed}")
    targets = list(targets) or [None]
    parsed: list[Any] = []
    for text in seeds:
        from omnidist.errors import OmnidistError
        from omnidist.model import serde

        try:
            parsed.append(serde.parse_yaml(text, documents=True))
        except OmnidistError:
            pass
    counts = Counts()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="omnidist-fuzz-") as tmp:
        for number in range(count):
            if budget_s is not None and time.monotonic() - started > budget_s:
                break
            if parsed and rng.random() < 0.5:
                data = render(mutate_data(rng.choice(parsed), rng), rng)
            else:
                data = mutate_text(rng.choice(seeds), rng)
            source = backend if rng.random() < 0.8 else None
            counts.add(attack(data, source, targets[number % len(targets)], Path(tmp)))
    counts.seconds = time.monotonic() - started
    return counts


SEED_JOBS: tuple[dict[str, Any], ...] = (
    {"name": "tf-ps", "framework": "tensorflow", "image": "gcr.io/p/tf:2", "command": ["python", "t.py"],
     "primary": {"cpus": 8}, "workers": {"replicas": 3, "accelerator": "T4:1"}, "parameter_servers": {"replicas": 2},
     "env": {"A": "1"}, "inputs": {"train": "gs://b/train"}, "labels": {"team": "ml"}},
    {"name": "hvd", "framework": "horovod", "image": "gcr.io/p/hvd:1", "command": ["python", "h.py"],
     "primary": {"accelerator": "V100:4", "memory_gb": 64}, "workers": {"replicas": 1}, "timeout": "2h",
     "spot": True},
    {"name": "ddp", "framework": "pytorch", "image": "gcr.io/p/pt:1", "command": "python -m trainer --lr 0.1",
     "primary": {"accelerator": "A100:8"}, "workers": {"replicas": 3}, "description": "a job"},
)
"""Jobs whose compiled requests seed every backend's campaign, corpus or not (:func:`seeds`)."""


def seeds(corpus: Path, backend: str) -> tuple[list[str], list[str]]:
    """A campaign's seed files for ``backend``: its native files in the corpus folder, and its
    compiled requests for :data:`SEED_JOBS`."""
    return corpus_seeds(corpus, backend), compiled_seeds(backend, SEED_JOBS)


def corpus_seeds(corpus: Path, backend: str) -> list[str]:
    """The texts of the native files of ``backend`` in a corpus folder (``corpus/<backend>/``);
    none when it is absent."""
    folder = corpus / backend
    if not folder.is_dir():
        return []
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.iterdir())
            if p.is_file() and p.suffix in (".yaml", ".yml", ".json", ".sh", ".txt")]


def compiled_seeds(backend: str, jobs: Iterable[dict[str, Any]]) -> list[str]:
    """``backend``'s compiled requests for ``jobs`` (those it can express, with the settings it
    cannot compile without), as file texts."""
    import omnidist
    from omnidist.errors import OmnidistError
    from omnidist.model import serde
    from omnidist.model.job import job_from_dict
    from omnidist.testing.harness import required_settings

    settings = required_settings(backend)

    found = []
    for data in jobs:
        try:
            found.append(serde.dump_json(omnidist.compile(job_from_dict(data), backend=backend,
                                                          settings=settings).request))
        except OmnidistError:
            continue
    return found
