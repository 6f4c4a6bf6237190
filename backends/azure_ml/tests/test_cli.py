"""The backend through the ``omnidist`` command, as a user runs it, and the pure-compile guarantee."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

OMNIDIST = str(Path(sys.executable).with_name("omnidist"))
HEAVY = ("azure", "marshmallow", "msrest", "google", "torch", "tensorflow")

JOB = """
name: cassava
framework: pytorch
image: trainer.example/t:1
command: [python, train.py]
primary: {accelerator: H100:8}
workers: {replicas: 1}
"""


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNIDIST_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    return subprocess.run([OMNIDIST, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_compile_prints_the_job_yaml_and_notes(tmp_path):
    (tmp_path / "job.yaml").write_text(JOB)
    result = run(tmp_path, "compile", "job.yaml", "--backend", "azure_ml")
    assert result.returncode == 0, result.stderr
    request = yaml.safe_load(result.stdout)
    assert request["type"] == "command" and request["resources"]["instance_type"] == "Standard_ND96isr_H100_v5"
    assert "note: [defaulted] backends.azure_ml.instance_type" in result.stderr


@pytest.mark.parametrize("extra, code, words", [
    ("evaluators: {replicas: 1}\n", 3, "azure_ml cannot express evaluators: Azure ML command jobs have no evaluator role"),
    ("reduction_servers: {replicas: auto}\n", 3, "azure_ml cannot express reduction_servers"),
    ("workers: {replicas: 1, accelerator: H100:4}\n", 3, "azure_ml cannot express workers.accelerator"),
    ("interconnect: infiniband\nbackends: {azure_ml: {instance_type: Standard_ND96is_H100_v5}}\n", 2,
     "job.yaml: backends.azure_ml.instance_type: Standard_ND96is_H100_v5 has no SR-IOV InfiniBand"),
])
def test_refusals_exit_with_the_spec_codes(tmp_path, extra, code, words):
    text = JOB.replace("workers: {replicas: 1}\n", "") if extra.startswith("workers") else JOB
    (tmp_path / "job.yaml").write_text(text + extra)
    result = run(tmp_path, "compile", "job.yaml", "--backend", "azure_ml")
    assert result.returncode == code
    assert words in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_compile_imports_no_cloud_sdk(tmp_path):
    (tmp_path / "job.yaml").write_text(JOB)
    probe = (
        "import json, sys; before = set(sys.modules); import omnidist; "
        "omnidist.compile('job.yaml', backend='azure_ml'); "
        "from omnidist.backend import registry; registry.get('azure_ml').import_native(omnidist.compile('job.yaml', "
        "backend='azure_ml').request); print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path,
                         env={**os.environ, "HOME": str(tmp_path)})
    new = json.loads(out.stdout)
    assert "omnidist_azure_ml.compiler" in new and "omnidist_azure_ml.importer" in new
    assert [m for m in new if m.split(".")[0] in HEAVY] == []
    assert "omnidist_azure_ml.client" not in new
