"""A platform module can live in a plugin: an installed distribution declares it under the
entry-point group ``omnidist.platforms``, and the runtime finds it next to the built-in ones.

The distributions here are real ones as the import system sees them: a ``*.dist-info`` folder
(``METADATA`` and ``entry_points.txt``) beside the package, in a temporary folder put on
``PYTHONPATH`` of a subprocess (``importlib.metadata`` reads ``sys.path`` as the process starts).
Next to a good platform they hold each way a plugin can go wrong — a module that breaks the
contract, one named after a built-in platform, one that fails to import, a name declared twice —
and the good one and the built-in ones are still detected.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TINY = textwrap.dedent('''
    """Tiny Cloud: TINY_NODES nodes, this is node TINY_NODE, rank 0 listens at TINY_MASTER (host:port)."""

    from omnidist.runtime.errors import RuntimeEnvError
    from omnidist.runtime.parsing import integer
    from omnidist.runtime.platforms import Bound, Decided, hosts
    from omnidist.runtime.view import RuntimeContext

    NAME = "tiny"
    ORDER = 15
    VARIABLES = frozenset({"TINY_NODES", "TINY_NODE", "TINY_MASTER"})
    PREFIXES = ("TINY_",)
    BOUND = Bound(mounts={"/tiny/data/": "tiny://"}, variables=("TINY_*",))
    HINTS_PER_ROLE = True
    ENV_FIELD = True


    def detect(env):
        return "TINY_NODES" in env


    def parse(env):
        nodes, node = integer(env, "TINY_NODES", minimum=1), integer(env, "TINY_NODE") or 0
        addr, _, port = env.get("TINY_MASTER", "").rpartition(":")
        if not addr or not port.isdigit():
            raise RuntimeEnvError("TINY_MASTER", f"expected host:port, got {env.get('TINY_MASTER')!r}")
        return RuntimeContext(platform=NAME, role="primary" if node == 0 else "worker", index=max(node - 1, 0),
                              node_rank=node, num_nodes=nodes, rank=node, world_size=nodes, master_addr=addr,
                              master_port=int(port), cluster={"primary": [f"{addr}:{port}"]}, source="TINY_NODES")


    def roles(decided):
        return frozenset({"primary", "worker"})


    def follow(request, job):
        return Decided()


    def assume(job):
        return Decided()


    def emulate(job, slots, decided):
        nodes = hosts(slots, "primary", "worker")
        return [{"TINY_NODES": str(len(nodes)), "TINY_NODE": str(rank), "TINY_MASTER": nodes[0]}
                for rank, _ in enumerate(s for s in slots if s.runs)]
''')

ALPHA = textwrap.dedent('''
    """A platform with Vertex AI's ORDER: the names break the tie."""

    from omnidist.runtime.view import RuntimeContext

    NAME, ORDER, VARIABLES, PREFIXES = "alpha", 10, frozenset({"ALPHA_JOB"}), ()


    def detect(env):
        return "ALPHA_JOB" in env


    def parse(env):
        return RuntimeContext(platform=NAME, source="ALPHA_JOB")
''')

FAKE_VERTEX = ALPHA.replace('"alpha"', '"vertex"').replace("ALPHA_JOB", "FAKE_VERTEX")
HALF = 'NAME = "half"\n\n\ndef detect(env):\n    return "HALF" in env\n'
BROKEN = 'import a_module_nobody_installed  # noqa: F401\n'
WORDY = ALPHA.replace('"alpha", 10', '"wordy", "early"').replace("ALPHA_JOB", "WORDY")

ACME = {"tiny": "acme_platforms.tiny", "alpha": "acme_platforms.alpha", "half": "acme_platforms.half",
        "misnamed": "acme_platforms.tiny", "vertex": "acme_platforms.vertex", "broken": "acme_platforms.broken",
        "notmodule": "acme_platforms.tiny:detect", "wordy": "acme_platforms.wordy"}
"""acme-platforms 1.0's entry points: two good platforms and each way a plugin can be wrong."""


def _distribution(folder: Path, name: str, points: dict[str, str], modules: dict[str, str]) -> None:
    """Install ``name`` 1.0 in ``folder`` as pip would: its package and its ``*.dist-info``."""
    package = folder / name.replace("-", "_")
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for module, source in modules.items():
        (package / f"{module}.py").write_text(source)
    meta = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text(
        "[omnidist.platforms]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> str:
    """Two folders for ``PYTHONPATH``: acme-platforms, then a second distribution that declares
    ``tiny`` again (the first one on the path keeps it)."""
    first, second = tmp_path_factory.mktemp("site1"), tmp_path_factory.mktemp("site2")
    _distribution(first, "acme-platforms", ACME, {"tiny": TINY, "alpha": ALPHA, "vertex": FAKE_VERTEX,
                                                  "half": HALF, "broken": BROKEN, "wordy": WORDY})
    _distribution(second, "late-platforms", {"tiny": "late_platforms.tiny"},
                  {"tiny": TINY.replace("ORDER = 15", "ORDER = 99")})
    return os.pathsep.join([str(first), str(second)])


CLI = "import sys; from omnidist.cli import main; sys.exit(main())"


def _python(site: str, code: str, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": site, "PYTHONWARNINGS": "always::RuntimeWarning"}
    for name in list(env):  # the test process may itself run on an emulated platform
        if name.startswith(("TINY_", "ALPHA_", "CLUSTER_SPEC", "TF_CONFIG", "OMNIDIST_")):
            env.pop(name)
    env.update(extra)
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=120)


PROBE = textwrap.dedent('''
    import json, sys, warnings

    import omnidist.runtime as runtime

    lazy = not {"importlib.metadata", "acme_platforms"} & set(sys.modules)
    from omnidist.runtime import platforms

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = platforms.modules()
    ENVS = {
        "tiny": {"TINY_NODES": "3", "TINY_NODE": "2", "TINY_MASTER": "h0:7000"},
        "tiny_and_tf_config": {"TINY_NODES": "2", "TINY_NODE": "0", "TINY_MASTER": "h0:7000",
                               "TF_CONFIG": json.dumps({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief"}})},
        "alpha_and_tiny": {"ALPHA_JOB": "1", "TINY_NODES": "2", "TINY_MASTER": "h0:7000"},
        "vertex": {"CLUSTER_SPEC": json.dumps({"cluster": {"workerpool0": ["m:2222"]},
                                               "task": {"type": "workerpool0", "index": 0}})},
        "fake_vertex": {"FAKE_VERTEX": "1"},
        "half": {"HALF": "1"},
    }
    from omnidist.backend import registry

    print(json.dumps({
        "lazy": lazy,
        "found": [[m.NAME, m.ORDER, m.__name__] for m in found],
        "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)],
        "contexts": {label: [getattr(runtime.context(env, argv=[]), f) for f in ("platform", "role", "index", "node_rank",
                                                                             "num_nodes", "master_addr", "source")]
                     for label, env in ENVS.items()},
        "emulations": platforms.emulations(),
        "variables": ["TINY_NODE" in platforms.variables()[0], "TINY_" in platforms.variables()[1]],
        "bound": platforms.bound().get("tiny").mounts if "tiny" in platforms.bound() else None,
        "named": [getattr(platforms.named(n), "__name__", None) for n in ("tiny", "vertex", "half", "late")],
        "known": registry.known(), "missing": registry.missing(),
    }, default=str))
''')


@pytest.fixture(scope="module")
def probe(site) -> dict:
    done = _python(site, PROBE)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _warning(probe: dict, name: str) -> str:
    found = [w for w in probe["warnings"] if w.startswith(f"omnidist.runtime.platforms: entry point {name} = ")]
    assert len(found) == 1, probe["warnings"]
    return found[0]


def test_a_plugin_platform_is_found_lazily_and_read_by_the_runtime(probe):
    assert probe["lazy"], "importing omnidist.runtime read the entry points"
    assert probe["named"][0] == "acme_platforms.tiny"
    assert probe["contexts"]["tiny"] == ["tiny", "worker", 1, 2, 3, "h0", "TINY_NODES"]
    assert "tiny" in probe["emulations"] and probe["variables"] == [True, True]
    assert probe["bound"] == {"/tiny/data/": "tiny://"}  # omnidist migrate reads its mounts too
    assert "tiny" in probe["known"] and "tiny" in probe["missing"]  # it follows a compile: a backend to install


def test_plugin_platforms_take_their_place_in_the_detection_order(probe):
    names = [name for name, _, _ in probe["found"]]
    assert names[:3] == ["alpha", "vertex", "tiny"]  # ORDER 10 (alpha < vertex by NAME), then 15
    assert names.index("tiny") < names.index("ai_platform") < names.index("tf_config") and names[-1] == "none"
    assert probe["contexts"]["tiny_and_tf_config"][0] == "tiny"  # 15 before a bare TF_CONFIG's 40
    assert probe["contexts"]["alpha_and_tiny"][0] == "alpha"


def test_a_plugin_module_that_breaks_the_contract_is_skipped_with_a_warning(probe):
    names = [name for name, _, _ in probe["found"]]
    assert not {"half", "misnamed", "notmodule", "wordy"} & set(names)
    assert "PlatformModuleError: acme_platforms.half does not define ORDER, VARIABLES, PREFIXES, parse" \
        in _warning(probe, "half")
    assert "says NAME = 'tiny'; a platform's NAME is its entry point's name, 'misnamed'" \
        in _warning(probe, "misnamed")
    assert "names a function, not a module" in _warning(probe, "notmodule")
    assert "says ORDER = 'early'; a platform's ORDER is a number" in _warning(probe, "wordy")
    assert probe["contexts"]["half"][0] == "none" and probe["named"][2] is None
    assert probe["contexts"]["tiny"][0] == "tiny"  # the others still detected


def test_a_built_in_platform_wins_over_a_plugin_of_the_same_name(probe):
    assert probe["named"][1] == "omnidist.runtime.platforms.vertex"
    assert [(n, m) for n, _, m in probe["found"] if n == "vertex"] == [("vertex", "omnidist.runtime.platforms.vertex")]
    assert "the platform 'vertex' is already built in, and that one wins" in _warning(probe, "vertex")
    assert probe["contexts"]["vertex"][:2] == ["vertex", "primary"]
    assert probe["contexts"]["fake_vertex"][0] == "none"  # the plugin's module is not asked


def test_a_name_two_distributions_declare_keeps_the_first_on_the_path(probe):
    assert [(n, o) for n, o, _ in probe["found"] if n == "tiny"] == [("tiny", 15)]
    assert "of late_platforms (group omnidist.platforms) is skipped: the platform 'tiny' is already declared by " \
           "another distribution" in _warning(probe, "tiny")


def test_a_plugin_module_that_fails_to_import_is_skipped_with_a_warning(probe):
    assert "broken" not in [name for name, _, _ in probe["found"]]
    assert ("acme_platforms.broken' of acme_platforms (group omnidist.platforms) is skipped: "
            "ModuleNotFoundError: No module named 'a_module_nobody_installed'") in _warning(probe, "broken")
    assert probe["contexts"]["vertex"][0] == "vertex" and probe["contexts"]["tiny"][0] == "tiny"


def test_omnidist_env_and_run_emulate_see_a_plugin_platform(site):
    done = _python(site, CLI, "env", TINY_NODES="2", TINY_NODE="1", TINY_MASTER="h0:7000")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["platform"], shown["role"], shown["node_rank"], shown["master_port"]) == ("tiny", "worker", 1, 7000)
    shown = "import json, omnidist.runtime as r; c = r.context(); print(json.dumps([c.platform, c.node_rank, c.num_nodes]))"
    done = _python(site, CLI, "run", "--emulate", "tiny", "--nodes", "2", "--cpu", "--",
                   sys.executable, "-c", shown)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = sorted(line.split("] ", 1)[1] for line in done.stdout.splitlines() if line.startswith("[") and "] [" in line)
    assert lines == ['["tiny", 0, 2]', '["tiny", 1, 2]'], done.stdout
