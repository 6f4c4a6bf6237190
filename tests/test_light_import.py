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


# What `omnidist compile` of a GPU job leaves unloaded: code for other commands and other jobs
# (importers, clients, TPU tables, command-line readers, every other runtime platform), and
# standard-library modules it has no use for. bench/run.py measures the start-up this keeps.
NOT_FOR_A_COMPILE = ("omnidist.cli.jobs", "omnidist.cli.placement", "omnidist.cli.migrate", "omnidist.migration",
                     "omnidist.placement", "omnidist.local", "omnidist.runtime.tf_setup", "omnidist_google.tpu",
                     "omnidist_google.gcloud", "importlib.metadata", "difflib", "decimal", "pkgutil", "logging")


def test_a_compile_loads_only_what_compiling_needs(tmp_path):
    import pytest

    from omnidist.backend import registry
    from omnidist.testing.harness import required_settings

    for backend in [b for b in registry.installed() if b != "local"]:
        job = tmp_path / f"{backend}.yaml"
        settings = required_settings(backend)
        job.write_text("name: a\nframework: pytorch\nimage: img:1\ncommand: [python, t.py]\n"
                       "primary: {accelerator: V100:8}\nworkers: {replicas: 2}\n"
                       + (f"backends: {{{backend}: {json.dumps(settings)}}}\n" if settings else ""))
        probe = ("import json, sys\nfrom omnidist.cli import main\n"
                 f"try:\n    main(['compile', {str(job)!r}, '--backend', {backend!r}])\n"
                 "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
                 "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120)
        if done.returncode:
            pytest.fail(f"{backend}: {done.stderr[-2000:]}")
        loaded = json.loads(done.stderr.strip().splitlines()[-1])
        unwanted = [m for m in loaded if m.startswith(NOT_FOR_A_COMPILE) or m.endswith((".importer", ".client"))]
        platforms = [m for m in loaded if m.startswith("omnidist.runtime.platforms.")
                     and m.rpartition(".")[2] not in (backend, "tf_config", "torchrun", "mpi")]
        assert (backend, unwanted, platforms) == (backend, [], [])
