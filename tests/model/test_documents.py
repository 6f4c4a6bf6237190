"""Bounded reading: every file omnidist reads (job files, native specs, configuration files) is a
regular UTF-8 file within the size limit, and every document it parses is checked before it is
built (duplicate keys, aliases expanded, nesting, integer digits). Each refusal is a clean exit 2
naming the file and the limit, and none takes long."""

from __future__ import annotations

import os
import threading
import time

import pytest
from click.testing import CliRunner

from omnidist.cli import main
from omnidist.errors import ConfigError, ValidationError
from omnidist.model import documents, limits
from omnidist.model.job import job_from_dict, job_from_yaml, load

JOB = "name: a\nframework: pytorch\nimage: i:1\ncommand: [python, t.py]\nprimary: {}\n"


def laughs(levels: int = 9) -> str:
    """The billion laughs: each level lists the previous one nine times."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def refused(text: str) -> str:
    with pytest.raises(ValidationError) as caught:
        documents.parse_yaml(text, source="f.yaml")
    return str(caught.value)


def test_the_billion_laughs_are_counted_not_built():
    started = time.monotonic()
    message = refused(laughs())
    assert time.monotonic() - started < 2.0
    assert f"more than {limits.MAX_VALUES} values once its aliases are expanded" in message
    assert message.startswith("f.yaml: line ")


def test_a_few_aliases_within_the_bound_are_read():
    assert documents.parse_yaml(laughs(3))["l2"][0][0] == ["lol"] * 9


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: *a}\n"])
def test_a_recursive_document_is_refused(text):
    assert "recursive" in refused(text)


def test_nesting_is_bounded():
    deep = "[" * (limits.MAX_DEPTH + 1) + "]" * (limits.MAX_DEPTH + 1)
    assert f"nested more than {limits.MAX_DEPTH} deep" in refused(deep)
    ok = "[" * limits.MAX_DEPTH + "]" * limits.MAX_DEPTH
    documents.parse_yaml(ok)


@pytest.mark.parametrize("depth", [2000, 200_000])
def test_nesting_far_past_any_recursion_limit_is_a_clean_error(depth):
    message = refused("[" * depth + "]" * depth)
    assert "not valid YAML/JSON" in message or "nested" in message


def test_block_nesting_is_bounded_too():
    text = "".join(" " * i + "-\n" for i in range(3000))
    refused(text)


def test_duplicate_keys_are_an_error_naming_the_key_and_both_lines():
    message = refused("name: a\nframework: pytorch\nname: b\n")
    assert "line 3, column 1: key 'name' appears twice in one mapping (first at line 1)" in message


def test_duplicate_keys_deep_inside_are_found():
    assert "'replicas' appears twice" in refused("workers: {replicas: 2, replicas: 3}\n")


def test_a_merge_key_overridden_by_an_explicit_key_is_not_a_duplicate():
    text = "base: &b {cpus: 2, memory_gb: 4}\nprimary:\n  <<: *b\n  cpus: 8\n"
    assert documents.parse_yaml(text)["primary"] == {"cpus": 8, "memory_gb": 4}


def test_the_same_text_under_different_tags_is_two_keys():
    assert documents.parse_yaml("1: a\n'1': b\n") == {1: "a", "1": "b"}


def test_integers_past_pythons_digit_limit_are_a_clean_error():
    message = refused(f"cpus: {'7' * 5000}\n")
    assert f"a number of 5000 digits; at most {limits.MAX_NUMBER_DIGITS}" in message


def test_a_document_bigger_than_the_limit_is_refused_unparsed():
    assert "a document may hold" in refused("a: " + "x" * (limits.MAX_DOCUMENT_BYTES + 1))


def test_several_documents_are_each_checked():
    with pytest.raises(ValidationError, match="appears twice"):
        documents.parse_yaml("a: 1\n---\nb: 1\nb: 2\n", documents=True)


# --- reading files --------------------------------------------------------------------------------

def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "job.yaml"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            documents.read_text(fifo)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO must not block"
    assert isinstance(outcome[0], ValidationError)
    assert "not a regular file" in str(outcome[0])


def test_dev_zero_is_refused_without_reading():
    with pytest.raises(ValidationError, match="not a regular file"):
        documents.read_text("/dev/zero")


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(ValidationError, match="a folder"):
        documents.read_text(tmp_path)


def test_a_file_bigger_than_the_limit_is_refused_by_its_size(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate(limits.MAX_DOCUMENT_BYTES * 100)  # sparse: nothing is really written
    started = time.monotonic()
    with pytest.raises(ValidationError, match="more than the 1.0 MiB a document may hold"):
        documents.read_text(big)
    assert time.monotonic() - started < 1.0


def test_a_file_that_is_not_utf8_names_the_line_and_offset(tmp_path):
    bad = tmp_path / "job.yaml"
    bad.write_bytes(b"name: a\nimage: \xff\xfe\n")
    with pytest.raises(ValidationError) as caught:
        documents.read_text(bad)
    assert str(caught.value) == f"{bad}: line 2: not UTF-8 text (byte 0xff at offset 15); save the file as UTF-8"


# --- the shapes the Python API hands over ---------------------------------------------------------

def test_check_shape_refuses_a_container_that_holds_itself():
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValidationError, match="holds itself"):
        documents.check_shape({"a": loop})


def test_check_shape_counts_shared_objects_each_time():
    level: list = ["x"] * 10
    for _ in range(6):
        level = [level] * 10
    with pytest.raises(ValidationError, match="more than"):
        documents.check_shape(level)


def test_check_shape_bounds_depth():
    deep: list = []
    for _ in range(limits.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(ValidationError, match="nested more than"):
        documents.check_shape(deep)


# --- the bounds of a job --------------------------------------------------------------------------

@pytest.mark.parametrize(("role", "limit"), [
    ({"workers": {"replicas": limits.MAX_REPLICAS + 1}}, "workers.replicas"),
    ({"workers": {"replicas": 10 ** 12}}, "workers.replicas"),
    ({"primary": {"accelerator": f"V100:{limits.MAX_ACCELERATORS + 1}"}}, "primary.accelerator.count"),
    ({"primary": {"cpus": limits.MAX_CPUS * 2}}, "primary.cpus"),
    ({"primary": {"memory_gb": 1e300}}, "primary.memory_gb"),
    ({"primary": {"disk_gb": limits.MAX_DISK_GB + 1}}, "primary.disk_gb"),
    ({"primary": {}, "timeout": "1000d"}, "timeout"),
    ({"primary": {}, "processes_per_node": limits.MAX_PROCESSES_PER_NODE + 1}, "processes_per_node"),
])
def test_a_job_saying_too_much_is_refused_naming_the_limit(role, limit):
    data = {"name": "a", "framework": "pytorch", "command": "python t.py", **role}
    data.setdefault("primary", {})
    with pytest.raises(ValidationError) as caught:
        job_from_dict(data)
    assert f"{limit}: " in str(caught.value)
    assert "omnidist allows (docs/security.md)" in str(caught.value)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1.0e+999"])
@pytest.mark.parametrize("field", ["cpus", "memory_gb"])
def test_nan_and_infinity_are_no_size(field, value):
    with pytest.raises(ValidationError, match=f"primary.{field}: expected a finite number"):
        job_from_yaml(JOB.replace("primary: {}", f"primary: {{{field}: {value}}}"))


def test_trials_are_bounded():
    data = {"name": "a", "framework": "pytorch", "command": "python t.py", "primary": {},
            "tuning": {"metric": {"name": "m", "goal": "maximize"}, "max_trials": limits.MAX_TRIALS + 1,
                       "parameters": {"lr": {"type": "double", "min": 0.1, "max": 0.2}}}}
    with pytest.raises(ValidationError, match="tuning.max_trials: .* trials omnidist allows"):
        job_from_dict(data)


def test_the_largest_job_allowed_validates_fast_and_the_local_backend_refuses_it(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(JOB.replace("primary: {}", f"primary: {{}}\nworkers: {{replicas: {limits.MAX_REPLICAS}}}"))
    started = time.monotonic()
    result = CliRunner().invoke(main, ["validate", str(job)])
    assert time.monotonic() - started < 30, "validating must not grow with the square of the replicas"
    shown = " ".join(result.output.split())  # a long reason may wrap onto lines of its own
    assert f"local local cannot express replicas: {limits.MAX_REPLICAS + 1} processes" in shown
    assert "internal error" not in result.output


@pytest.mark.parametrize("replicas", [100, 1000])
def test_compiled_requests_grow_linearly_with_the_replicas(replicas):
    from omnidist import api
    from omnidist.backend import registry

    def size(n: int, backend: str) -> int:
        data = {"name": "a", "framework": "tensorflow", "image": "i:1", "command": "python t.py",
                "primary": {}, "workers": {"replicas": n}, "evaluators": {"replicas": 1}}
        return len(api.compile(job_from_dict(data), backend=backend, profile=None).render())

    for backend in registry.installed():
        if backend == "local":
            continue
        try:
            small, large = size(replicas, backend), size(replicas * 10, backend)
        except Exception:  # noqa: BLE001 - a backend without evaluators: another row shows it
            continue
        assert large < small * 12, f"{backend}: {replicas} -> {small} bytes, 10x -> {large} bytes"


# --- every reader goes through the bounds ----------------------------------------------------------

@pytest.mark.parametrize("command", [["validate"], ["import", "--from", "vertex"],
                                     ["migrate", "--from", "vertex", "--to", "azure_ml"]])
@pytest.mark.parametrize("hostile", ["fifo", "zero", "laughs", "duplicate", "digits", "utf8", "deep"])
def test_every_command_refuses_hostile_files_cleanly(tmp_path, command, hostile):
    path = tmp_path / "f.yaml"
    if hostile == "fifo":
        os.mkfifo(path)
    elif hostile == "zero":
        path = "/dev/zero"
    else:
        text = {"laughs": laughs(), "duplicate": "a: 1\na: 2\n", "digits": f"a: {'1' * 5000}\n",
                "deep": "[" * 5000 + "]" * 5000}.get(hostile, "")
        path.write_bytes(text.encode() if text else b"a: \xc3\x28\n")
    started = time.monotonic()
    result = CliRunner().invoke(main, [*command, str(path)])
    assert time.monotonic() - started < 10
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {path}: "), result.output


def test_load_names_a_missing_file(tmp_path):
    with pytest.raises(ValidationError, match="no such file"):
        load(tmp_path / "absent.yaml")


@pytest.mark.parametrize("text", ["a = " + "[" * 5000 + "]" * 5000 + "\n", "a = 1\n" + "#" * (2 << 20)])
def test_config_files_are_bounded_too(tmp_path, text):
    from omnidist import config

    (tmp_path / "omnidist.toml").write_text(text)
    with pytest.raises(ConfigError, match="omnidist.toml"):
        config.config_files(tmp_path, environ={"HOME": str(tmp_path)})


@pytest.mark.parametrize("field", [{"code": "src\0"}, {"env": {"A": "a\0b"}}, {"command": ["python", "\0"]},
                                   {"labels": {"a\0": "b"}}, {"workers": {"replicas": 1, "image": "i\0"}}])
def test_no_text_of_a_job_holds_a_nul_character(field):
    with pytest.raises(ValidationError, match="holds a NUL character"):
        job_from_dict({"name": "a", "framework": "pytorch", "primary": {}, **field})
