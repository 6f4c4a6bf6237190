"""``import omnidist`` stays light: no cloud SDK, torch or TensorFlow (DESIGN performance budgets)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("google", "googleapiclient", "azure", "torch", "tensorflow", "grpc", "proto", "msrest", "marshmallow")

PROBE = """
import json, sys
before = set(sys.modules)
{statement}
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _new_modules(statement: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


def test_import_omnidist_loads_no_heavy_module():
    # Compared with the interpreter's own start-up: google's namespace .pth files pre-load the
    # empty `google` packages before any user code runs.
    assert _heavy(_new_modules("import omnidist")) == []


def test_loading_a_job_loads_no_heavy_module(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("name: a\nframework: pytorch\nprimary: {accelerator: V100:8}\n")
    assert _heavy(_new_modules(f"import omnidist; omnidist.load({str(job)!r})")) == []


def test_the_runtime_uses_only_the_standard_library():
    third_party = [m for m in _new_modules("import omnidist.runtime")
                   if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "omnidist"]
    assert third_party == []
