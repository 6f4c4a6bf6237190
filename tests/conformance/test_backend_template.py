"""A new backend is one folder: ``templates/backend`` generated under a new name into a temporary
folder, installed there (a real wheel build and ``*.dist-info`` entry point, no edit of the core),
and put through the shared suites it would meet as a plugin (``tests/conformance`` and the
harness-driven reliability, secrets and fuzz suites), plus its own tests.

The suites run in a subprocess whose ``PYTHONPATH`` holds the install, selected with ``-k NAME``:
the registry finds the backend by its entry point and every parametrized suite includes it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAME = "tinycloud"
SUITES = ["tests/conformance/test_conformance.py", "tests/conformance/test_plugin_layout.py",
          "tests/conformance/test_core_layout.py", "tests/reliability/test_faults.py",
          "tests/reliability/test_ambiguous_create.py", "tests/reliability/test_secrets.py",
          "tests/reliability/test_fuzz.py", "tests/reliability/test_tuning.py"]


def _generator():
    spec = importlib.util.spec_from_file_location("new_backend", ROOT / "templates" / "new_backend.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generator_renames_every_placeholder_and_refuses_bad_names(tmp_path):
    generator = _generator()
    dest = generator.generate("my_cloud", tmp_path / "my_cloud")
    texts = "\n".join(p.read_text() for p in dest.rglob("*") if p.is_file())
    names = [str(p.relative_to(dest)) for p in dest.rglob("*")]
    assert not re.search("skeleton", texts + "".join(names), re.I), "a placeholder is left"
    assert "class MyCloudBackend(" in texts and 'my_cloud = "omnidist_my_cloud:MyCloudBackend"' in texts
    assert "omnidist_my_cloud/backend.py" in names
    with pytest.raises(ValueError, match="lowercase identifier"):
        generator.generate("My-Cloud", tmp_path / "x")
    with pytest.raises(ValueError, match="exists"):
        generator.generate("other", dest)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The template generated as NAME and installed with ``pip install --target``: its source
    folder, and an environment whose ``PYTHONPATH`` holds the install."""
    tmp_path = tmp_path_factory.mktemp("template")
    source = _generator().generate(NAME, tmp_path / "src")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(source)], check=True, capture_output=True, text=True,
                   env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert (site / f"omnidist_{NAME}").is_dir() and list(site.glob(f"omnidist_{NAME}-*.dist-info"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return source, env


def test_a_backend_generated_from_the_template_passes_the_shared_suites(installed):
    source, env = installed
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-rs", "-k", NAME,
                           str(source / "tests"), *SUITES], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary)[1])
    assert passed >= 45, summary  # the contract, the fault matrix, secrets, fuzzing and its own tests
    assert f"{NAME} opts out of the tuning suite" in done.stdout, "the one suite it opts out of says why"


PLATFORM_PROBE = """
import json, os, sys
before = set(sys.modules)
from omnidist import runtime
from omnidist.runtime import platforms

module = platforms.named("%s")
ctx = runtime.context(argv=[])
light = sorted(m for m in set(sys.modules) - before if m.split(".")[0] not in sys.stdlib_module_names | {"omnidist", "omnidist_%s"})
print(json.dumps({"module": module.__name__, "context": ctx.to_dict(), "parsed": module.parse(os.environ).to_dict(),
                  "light": light}))
"""


def test_the_generated_plugins_platform_is_detected_from_its_variables(installed):
    """The template's optional platform module, declared under the entry-point group
    ``omnidist.platforms``: with the install on the path, a training process's runtime
    recognises the cloud's variables and gives the context the module parsed (the refinements
    of omnidist's hints on top), importing nothing beyond the standard library to do it."""
    _, env = installed
    upper = NAME.upper()
    variables = {f"{upper}_JOB_ID": "j-7", f"{upper}_POOL": "workers", f"{upper}_REPLICA": "0",
                 f"{upper}_WORKERS": "3", f"{upper}_PRIMARY": "10.0.0.2:29400", "OMNIDIST_JOB_NAME": "ddp"}
    clean = {k: v for k, v in env.items() if not k.startswith(("OMNIDIST_", "TF_CONFIG", "CLUSTER_SPEC", "TORCHELASTIC"))}
    done = subprocess.run([sys.executable, "-c", PLATFORM_PROBE % (NAME, NAME)], env={**clean, **variables},
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert found["module"] == f"omnidist_{NAME}.platform"
    ctx, parsed = found["context"], found["parsed"]
    assert (ctx["platform"], ctx["role"], ctx["index"], ctx["node_rank"], ctx["num_nodes"]) == (NAME, "worker", 0, 1, 4)
    assert (ctx["master_addr"], ctx["master_port"], ctx["job_name"]) == ("10.0.0.2", 29400, "ddp")
    assert {k: v for k, v in ctx.items() if k != "job_name"} == {k: v for k, v in parsed.items() if k != "job_name"}
    assert found["light"] == [], "detection imported more than the standard library"
