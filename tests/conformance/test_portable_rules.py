"""Rules that do not depend on the cloud (omnidist/lowering.py ``check_portable_rules``): one
exit code and one message on every installed backend, through the API and the CLI."""

from __future__ import annotations

import pytest

from omnidist import api
from omnidist.backend import registry
from omnidist.compiler import lowering
from omnidist.errors import ValidationError
from omnidist.testing.cli import run_cli

BACKENDS = registry.installed()

BASE = {"name": "portable", "framework": "pytorch", "image": "us-docker.pkg.dev/p/r/t:1",
        "command": ["python", "train.py"]}

BROKEN = {
    "reducers-with-parameter-servers": (
        {"primary": {"accelerator": "V100:8"}, "workers": {"replicas": 2}, "parameter_servers": {"replicas": 1},
         "reduction_servers": {"replicas": 2}},
        "reduction_servers: a job trains either with parameter servers or with all-reduce"),
    "reducers-on-cpu-trainers": (
        {"primary": {}, "workers": {"replicas": 2}, "reduction_servers": {"replicas": "auto"}},
        "these training roles have no accelerator: primary, workers"),
    "reducers-with-a-cpu-primary": (
        {"primary": {}, "workers": {"replicas": 2, "accelerator": "V100:8"}, "reduction_servers": {"replicas": 4}},
        "these training roles have no accelerator: primary;"),
    "reducers-with-gpus": (
        {"primary": {"accelerator": "V100:8"}, "workers": {"replicas": 1},
         "reduction_servers": {"replicas": 1, "accelerator": "T4:1"}},
        "reduction_servers.accelerator: reduction servers are CPU machines"),
}
"""Jobs every backend must refuse alike -> a fragment of the one message."""


def _env(home) -> dict:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def _refusal(name: str, backend: str) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        api.compile({**BASE, **BROKEN[name][0]}, backend=backend)
    return caught.value


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_the_same_job_is_refused_alike_on_every_backend(isolated, name):
    refusals = {backend: _refusal(name, backend) for backend in BACKENDS}
    assert {e.exit_code for e in refusals.values()} == {2}
    assert len({str(e) for e in refusals.values()}) == 1, refusals
    assert BROKEN[name][1] in str(refusals[BACKENDS[0]])


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_the_cli_gives_one_exit_code_and_message(tmp_path, name):
    job = tmp_path / "job.yaml"
    job.write_text(api.as_job({**BASE, **BROKEN[name][0]}).to_yaml())
    answers = {}
    for backend in BACKENDS:
        result = run_cli("compile", str(job), "--backend", backend, cwd=tmp_path, env=_env(tmp_path))
        answers[backend] = (result.returncode, result.stderr)
    assert set(answers.values()) == {(2, f"error: {job}: " + str(_refusal(name, BACKENDS[0])) + "\n")}
    validated = run_cli("validate", str(job), cwd=tmp_path, env=_env(tmp_path))
    assert validated.returncode == 2 and BROKEN[name][1] in validated.stderr


def test_every_broken_rule_is_reported_at_once():
    job = api.as_job({**BASE, "primary": {}, "workers": {"replicas": 1}, "parameter_servers": {"replicas": 1},
                      "reduction_servers": {"replicas": 1, "accelerator": "T4:1"}})
    with pytest.raises(ValidationError) as caught:
        lowering.check_portable_rules(job)
    assert [p.path for p in caught.value.problems] == ["reduction_servers.accelerator", "reduction_servers",
                                                      "reduction_servers"]


@pytest.mark.parametrize("job", [
    {"primary": {"accelerator": "V100:8"}, "workers": {"replicas": 3}, "reduction_servers": {"replicas": "auto"}},
    {"primary": {"accelerator": "A100:8"}, "reduction_servers": {"replicas": 2}},
    {"primary": {}, "workers": {"replicas": 2}, "parameter_servers": {"replicas": 1}},
    {"primary": {}, "reduction_servers": {"replicas": 0}, "parameter_servers": {"replicas": 1}},
], ids=["gpu-trainers", "one-gpu-node", "parameter-servers", "zero-reducers"])
def test_what_some_cloud_can_run_passes_the_portable_rules(job):
    lowering.check_portable_rules(api.as_job({**BASE, **job}))
