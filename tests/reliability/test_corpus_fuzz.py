"""Mutation fuzzing of every backend's native importer over real job files: the corpus beside the
checkout (``../shared/corpus/<backend>/``, used in place when present) and each backend's own
compiled requests, mutated as text (hostile fragments, broken encodings, re-indented and repeated
lines) and as data (values of the wrong type, keys renamed), imported and migrated as ``omnidist
import`` / ``migrate`` do. Every input ends imported or in a clean error, never in an internal one.

Derandomized (a seeded campaign, :mod:`omnidist.testing.fuzz`) and bounded (a fixed number of
inputs, and a time guard); ``bench/fuzz.py`` runs a longer campaign and reports the counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from omnidist.backend import registry
from omnidist.testing import fuzz
from omnidist.testing.harness import Harness, suite_backends, suite_harness

pytestmark = pytest.mark.suite("fuzz")

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
FUZZED = suite_backends("fuzz")
BACKENDS = tuple(sorted(name for name, found in FUZZED.items() if isinstance(found, Harness) or found is None))

INPUTS = 300
"""Mutated inputs per backend and run (a few seconds each)."""

GUARD_S = 120.0
"""A campaign stops here whatever it has left (a guard against a slow machine, not a budget)."""



def seeds(backend: str) -> list[str]:
    corpus, compiled = fuzz.seeds(CORPUS, backend)
    return corpus + compiled


@pytest.mark.parametrize("backend", BACKENDS)
def test_mutated_native_files_end_imported_or_in_a_clean_error(isolated, backend):
    suite_harness("fuzz", backend)
    texts = seeds(backend)
    assert texts, f"{backend}: nothing to mutate"
    targets = [t for t in registry.installed() if t != backend]
    counts = fuzz.campaign(backend, texts, INPUTS, seed=0, targets=targets, budget_s=GUARD_S)
    assert counts.inputs >= min(INPUTS, 20), "the campaign ran"
    assert counts.clean and counts.imported, "the mutations reach both ends (else they test nothing deep)"
    assert not counts.defects, "\n\n".join(f"{d.detail}\ninput:\n{d.source}" for d in counts.defects[:3])


def test_the_corpus_is_used_when_it_is_there():
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    assert any(fuzz.corpus_seeds(CORPUS, backend) for backend in BACKENDS)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("hostile", [
    b"\xff\xfe{\x00}",                          # not UTF-8
    b"a: " + b"[" * 5000 + b"]" * 5000,         # nested far past any limit
    b"replicas: " + b"9" * 5000,                # past Python's digits limit
    b"resources: {cpu: .nan, memory: .inf}",     # no number
    b"a: &a [*a, *a]",                          # recursive
    b"{}", b"[]", b"null", b"42", b"", b"---\n---\n",
])
def test_hostile_native_files_are_clean_errors(tmp_path, backend, hostile):
    outcome = fuzz.attack(hostile, backend, None, tmp_path)
    assert outcome.kind != "defect", outcome.detail


# --- what the fuzz found, kept as cases of their own -------------------------------------------------

def _edited(backend: str, path: tuple, value) -> dict:
    """The first seed job compiled for ``backend``, with the value at ``path`` replaced."""
    import json

    doc = json.loads(fuzz.compiled_seeds(backend, fuzz.SEED_JOBS[2:])[0])
    parent = doc
    for step in path[:-1]:
        parent = parent.setdefault(step, {}) if isinstance(step, str) else parent[step]
    parent[path[-1]] = value
    return doc


MASTER = ("spec", "pytorchReplicaSpecs", "Master", "template", "spec", "containers", 0)
FOUND: list[tuple[str, object]] = [
    ("azure_ml", {"command": "x", "inputs": {"d": {"mode": []}}}),
    ("azure_ml", {"command": "x", "inputs": {"d": {"type": {"a": 1}}}}),
    ("azure_ml", {"command": "x", "inputs": {"d": {"path": "wasbs://c@a.blob.core.windows.net/d", "mode": None}}}),
    ("azure_ml", {"command": "x", "code": "\0", "environment": {"image": "python:3.11"}}),
    *[("azure_ml", {"type": "sweep", "sampling_algorithm": "random", "objective": {"goal": "maximize",
                                                                                     "primary_metric": "m"},
                    "trial": {"command": "python t.py --lr=${{search_space.lr}}", "environment": {"image": "i:1"}},
                    "limits": {"max_total_trials": 2},
                    "search_space": {"lr": {"type": "loguniform", "min_value": low, "max_value": 1.0}}})
      for low in (10 ** 400, 1000.0, float("nan"))],
    ("kubernetes", lambda: _edited("kubernetes", (*MASTER, "resources", "requests", "cpu"), float("inf"))),
    ("kubernetes", lambda: _edited("kubernetes", (*MASTER, "resources", "requests", "cpu"), float("nan"))),
    ("kubernetes", lambda: _edited("kubernetes", (*MASTER, "resources", "requests", "memory"), "1e999999999")),
    ("kubernetes", lambda: _edited("kubernetes", (*MASTER, "resources", "requests", "memory"), "9" * 30 + "Ei")),
    ("kubernetes", lambda: _edited("kubernetes", (*MASTER, "ports"), [{"name": {"a": 1}}])),
    ("kubernetes", lambda: _edited("kubernetes", (*MASTER[:-3], "metadata", "labels"), [{"a": 1}, 2])),
    ("kubernetes", lambda: _edited("kubernetes", (*MASTER[:-2], "tolerations"), [{"key": ["a"]}])),
    ("vertex", lambda: _edited("vertex", ("jobSpec", "baseOutputDirectory", "outputUriPrefix"), {"a": 1})),
    ("ai_platform", {"trainingInput": {"scaleTier": "BASIC", "hyperparameters": {
        "goal": "MAXIMIZE", "hyperparameterMetricTag": "m", "maxTrials": 2,
        "params": [{"parameterName": "m", "type": "DISCRETE", "discreteValues": 7}]}}}),
]


@pytest.mark.parametrize(("backend", "native"), FOUND, ids=[f"{b}-{i}" for i, (b, _) in enumerate(FOUND)])
def test_what_the_fuzz_found_ends_imported_or_in_a_clean_error(tmp_path, backend, native):
    import json

    import omnidist
    from omnidist.errors import OmnidistError

    if backend not in registry.installed():
        pytest.skip(f"{backend} is not installed")
    doc = native() if callable(native) else native
    try:
        omnidist.import_native(doc, backend=backend)
    except OmnidistError:
        pass
    outcome = fuzz.attack(json.dumps(doc, allow_nan=True).encode(), backend, None, tmp_path)
    assert outcome.kind != "defect", outcome.detail


UNUSABLE_PATHS = ["1" + "0" * 400, "d/" * 3000 + "x", "a" * 256]
"""Local paths the operating system refuses outright (a name or a path too long)."""


@pytest.mark.parametrize("path", UNUSABLE_PATHS, ids=["long-name", "long-path", "name-of-256"])
def test_a_path_the_system_refuses_is_a_clean_answer_everywhere(tmp_path, path):
    """A ``code`` folder or a local input whose name the system cannot even look up (ENAMETOOLONG,
    found by the fuzz as an Azure ML ``code`` of 400 digits) is said so: migrate leaves the code
    out with a line, compile and a local run exit 2 naming the field."""
    import json

    from omnidist.testing.cli import run_cli

    if "azure_ml" not in registry.installed():
        pytest.skip("azure_ml is not installed")
    native = {"command": "python t.py", "code": path, "environment": {"image": "python:3.11"},
              "compute": "azureml:cpu"}
    for target in ("vertex", "kubernetes", "local"):
        outcome = fuzz.attack(json.dumps(native).encode(), "azure_ml", target, tmp_path)
        assert outcome.kind != "defect", outcome.detail
    (tmp_path / "job.yaml").write_text(json.dumps({"name": "p", "framework": "custom", "image": "i:1",
                                                   "command": ["python", "t.py"], "code": path, "primary": {}}))
    done = run_cli("compile", "job.yaml", "-b", "azure_ml", cwd=tmp_path)
    assert done.returncode == 2 and "code" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr) < 2000, "the path is clipped in the message"
    (tmp_path / "job.yaml").write_text(json.dumps({"name": "p", "framework": "custom", "image": "i:1",
                                                   "command": ["python", "t.py", "${{inputs.d}}"],
                                                   "inputs": {"d": {"uri": "./" + path}}, "primary": {}}))
    done = run_cli("run", "job.yaml", cwd=tmp_path)
    assert done.returncode == 2 and "inputs.d" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("text", ["a: !!timestamp x", "a: !!int x", "a: !!float x", "a: !!bool x", "a: !!binary ?"])
def test_a_tagged_value_its_tag_cannot_hold_is_a_clean_error(text):
    from omnidist.errors import ValidationError
    from omnidist.model import serde

    with pytest.raises(ValidationError, match="not valid YAML|tag cannot hold"):
        serde.parse_yaml(text)
