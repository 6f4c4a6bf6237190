"""Reading and writing job files (omnidist/serde.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from omnidist.errors import ValidationError
from omnidist.model import serde
from omnidist.model.job import Interconnect, job_from_dict, job_from_yaml, job_to_dict, job_to_yaml, load
from omnidist.model.roles import Accelerator
from omnidist.testing import strategies

FULL = """
name: cassava-resnet
framework: pytorch
image: us-docker.pkg.dev/p/r/trainer:1.0
command: [python, -m, trainer.task]
args: [--epochs, "10"]
env: {NCCL_DEBUG: INFO}
primary:
  accelerator: V100:8
  cpus: 96
  memory_gb: 624
  disk_gb: 200
  image: us-docker.pkg.dev/p/r/primary:1.0
  command: python main.py
  args: [--primary]
  env: {ROLE_VAR: p}
workers: {replicas: 4}
parameter_servers: {replicas: 2, cpus: 8, memory_gb: 52}
evaluators: {replicas: 1, accelerator: {type: t4, count: 1}}
reduction_servers: {replicas: auto}
processes_per_node: 4
interconnect: infiniband
spot: true
timeout: 90m
labels: {team: vision}
backends:
  vertex: {region: us-central1, machine_types: {primary: n1-highmem-96}}
  azure_ml: {compute: gpu-cluster}
"""


def test_every_spec_field_is_read():
    job = job_from_yaml(FULL)
    assert job.primary.accelerator == Accelerator(type="V100", count=8)
    assert (job.primary.cpus, job.primary.memory_gb, job.primary.disk_gb) == (96, 624, 200)
    assert job.primary.command == ("python", "main.py")
    assert job.evaluators.accelerator == Accelerator(type="T4", count=1)
    assert job.reduction_servers.replicas == "auto"
    assert job.processes_per_node == 4 and job.interconnect is Interconnect.INFINIBAND and job.spot
    assert job.timeout == 5400
    assert job.backends["vertex"]["machine_types"] == {"primary": "n1-highmem-96"}


def test_every_field_round_trips_through_dict_yaml_and_json():
    job = job_from_yaml(FULL)
    assert job_from_dict(job_to_dict(job)) == job
    assert job_from_yaml(job_to_yaml(job)) == job
    assert job_from_yaml(json.dumps(job_to_dict(job))) == job
    assert job_to_dict(job)["timeout"] == "90m"


def test_json_files_are_accepted(tmp_path):
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"name": "a", "framework": "custom", "primary": {}}))
    assert load(path).name == "a"


def test_yaml_is_read_with_the_safe_loader():
    with pytest.raises(ValidationError):
        job_from_yaml("name: !!python/object/apply:os.system ['true']\nframework: custom\nprimary: {}")


@pytest.mark.parametrize("text, expected", [
    ("name: a\nframework: pytorch\nprimary: {}\nworkers: {replicas: -1}", "job.yaml: workers.replicas: must be >= 0, got -1"),
    ("name: a\nframework: pytorch\nprimary: {}\nworkrs: {replicas: 1}", "job.yaml: workrs: unknown key; did you mean 'workers'?"),
    ("name: a\nframework: pytorch\nprimary: {acelerator: V100}", "job.yaml: primary.acelerator: unknown key; did you mean 'accelerator'?"),
    ("name: a\nframework: pytorch\nprimary: {accelerator: V1000:8}", "job.yaml: primary.accelerator.type: unknown accelerator 'V1000'; did you mean 'V100'?"),
    ("name: a\nframework: pytorch\nprimary: {cpus: many}", "job.yaml: primary.cpus: expected a number, got str 'many'"),
    ("name: a\nframework: pytorch\nprimary: {}\nworkers: {replicas: '4'}", "job.yaml: workers.replicas: expected a whole number or 'auto'"),
    ("name: Bad_Name\nframework: pytorch\nprimary: {}", "job.yaml: name: 'Bad_Name' is not a valid job name"),
    ("name: a\nframework: pytorx\nprimary: {}", "job.yaml: framework: 'pytorx' is not one of pytorch"),
    ("name: a\nframework: pytorch\nprimary: {}\ntimeout: 1 week", "job.yaml: timeout: '1 week' is not a duration"),
    ("name: a\nframework: pytorch\nprimary: {}\nspot: maybe", "job.yaml: spot: expected true or false"),
    ("name: a\nframework: pytorch\nprimary: {}\nenv: {X: true}", "job.yaml: env.X: expected a string, got true/false; quote the value"),
    ("name: a\nframework: pytorch\nprimary: {}\nbackends: {vertex: 3}", "job.yaml: backends.vertex: expected a mapping"),
    ("name: a\nframework: pytorch", "job.yaml: primary: required"),
    ("name: a\nframework: [pytorch", "job.yaml: line 3, column 1: not valid YAML/JSON"),
    ("- just a list", "job.yaml: a job file holds a mapping of keys"),
    ("hello: 1\nfoo: [1]", "job.yaml: not a job file: none of its keys (foo, hello) is a job's"),
    ("name: a\nframework: pytorch\nprimary: {accelerator: v100x8}",
     "job.yaml: primary.accelerator: unknown accelerator 'v100x8'; did you mean 'V100:8'?"),
    ("name: a\nframework: pytorch\nprimary: {accelerator: 8 x A100-80GB}",
     "job.yaml: primary.accelerator: unknown accelerator '8 x A100-80GB'; did you mean 'A100-80GB:8'?"),
])
def test_bad_input_names_the_file_and_field_path(text, expected):
    with pytest.raises(ValidationError) as info:
        job_from_yaml(text, source="job.yaml")
    assert str(info.value).startswith(expected), str(info.value)


def test_several_problems_are_reported_together():
    with pytest.raises(ValidationError) as info:
        job_from_yaml("name: a\nframework: pytorch\nprimary: {cpus: x, memory_gb: y}", source="j.yaml")
    assert {p.path for p in info.value.problems} == {"primary.cpus", "primary.memory_gb"}


def test_durations():
    assert [serde.parse_duration(v) for v in ("45s", "90m", "24h", "7d", 30, "12")] == [45, 5400, 86400, 604800, 30, 12]
    assert [serde.format_duration(v) for v in (45, 5400, 86400, 90061)] == ["45s", "90m", "1d", "90061s"]


def test_missing_file_is_a_validation_error(tmp_path):
    with pytest.raises(ValidationError, match="no such file"):
        load(tmp_path / "nope.yaml")


@settings(max_examples=150, deadline=None)
@given(strategies.jobs())
def test_generated_jobs_round_trip(job):
    assert job_from_dict(job_to_dict(job)) == job
    assert job_from_yaml(job_to_yaml(job)) == job


def test_a_stream_of_documents_reads_as_a_list_only_when_asked():
    text = "---\n# a comment\nkind: A\n---\nkind: B\n"
    assert serde.parse_yaml(text, documents=True) == [{"kind": "A"}, {"kind": "B"}]
    assert serde.parse_yaml("---\nkind: A\n", documents=True) == {"kind": "A"}
    with pytest.raises(ValidationError, match="not valid YAML"):
        serde.parse_yaml(text)  # a job file is one document


def test_an_internal_field_is_neither_allowed_nor_suggested():
    """``source`` is where a job was read from, not a key a job file sets: refusing it while listing
    it as allowed (and suggesting it for itself) would contradict itself."""
    with pytest.raises(ValidationError) as info:
        job_from_yaml("name: a\nframework: pytorch\nprimary: {}\nsource: x.yaml", source="job.yaml")
    assert str(info.value).startswith("job.yaml: source: unknown key. Allowed here: name, "), str(info.value)
    assert "source" not in str(info.value).partition("Allowed here:")[2]


@pytest.mark.parametrize("name", ["A30", "a30", "L40", "K80"])
def test_another_gpu_is_not_offered_as_a_spelling_of_a_portable_one(name):
    from omnidist.model.accelerators import canonical_name

    with pytest.raises(ValueError) as raised:
        canonical_name(name)
    assert "did you mean" not in str(raised.value)
    assert "is a GPU omnidist does not know" in str(raised.value) and "Portable names: A10, A100" in str(raised.value)


def test_gpus_is_answered_with_the_accelerator_form_not_cpus(tmp_path):
    from omnidist import api

    path = tmp_path / "job.yaml"
    path.write_text("name: a\nframework: pytorch\nimage: i\ncommand: [python, t.py]\nprimary: {gpus: 2}\n")
    with pytest.raises(ValidationError) as raised:
        api.load(path)
    assert 'primary.gpus: unknown key; GPUs are set as accelerator, type and count per replica: accelerator: "T4:2".' \
        in str(raised.value)
    assert "cpus?" not in str(raised.value)

def test_the_unprintable_set_is_every_code_point_a_comment_line_cannot_hold():
    """Written as the characters it finds (it compiles fast): exactly those outside what a YAML
    comment line holds as it is, checked on every code point."""
    allowed = [(0x09, 0x09), (0x20, 0x7E), (0xA0, 0x2027), (0x202A, 0xD7FF), (0xE000, 0xFEFE), (0xFF00, 0xFFFD),
               (0x10000, 0x10FFFF)]
    text = "".join(map(chr, range(0x110000)))
    found = [m.start() for m in serde._UNPRINTABLE.finditer(text)]
    assert found == [c for c in range(0x110000) if not any(lo <= c <= hi for lo, hi in allowed)]
