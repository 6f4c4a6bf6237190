"""The shape every plugin keeps, and the core's side of the boundary (DESIGN "Layout").

- Inside a plugin, imports flow one way (tables <- compiler/importer/client <- backend): the
  modules' own imports, read with :mod:`ast`, have no cycle.
- The core names no backend: no string in ``omnidist/**/*.py`` (outside
  ``omnidist/runtime/platforms/``, which reads the platforms inside containers) is a backend's
  name; docstrings and comments may show one as an example.
- A backend's hooks answer for its own native files only.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

from omnidist.backend import registry
from omnidist.backend.contract import Imports
from omnidist.runtime import platforms
from omnidist.testing.harness import SUITES, OptOut, cloud_backends, harnesses, required_settings, suite_backends

CORE = Path(__file__).resolve().parents[2] / "omnidist"
PLUGINS = [n for n in registry.installed() if type(registry.get(n)).__module__.split(".")[0] != "omnidist"]


def imports(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (at any depth: lazy imports too)."""
    root = importlib.import_module(package)
    found: dict[str, set[str]] = {}
    for info in pkgutil.iter_modules(root.__path__):
        name = f"{package}.{info.name}"
        tree = ast.parse(Path(importlib.util.find_spec(name).origin).read_text())
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == package:
                    edges |= {f"{package}.{a.name}" for a in node.names}
                elif node.module.startswith(package + "."):
                    edges.add(node.module)
            elif isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name.startswith(package + ".")}
        found[name] = edges - {name}
    return found


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (as the modules on it, first repeated), or ``[]``."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_cycle_finder_finds_one():
    assert cycle({"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}}) == ["p.a", "p.b", "p.c", "p.a"]
    assert cycle({"p.backend": {"p.tables", "p.compiler"}, "p.compiler": {"p.tables"}, "p.tables": set()}) == []


@pytest.mark.parametrize("name", PLUGINS)
def test_a_plugins_imports_have_no_cycle(name):
    package = type(registry.get(name)).__module__.split(".")[0]
    graph = imports(package)
    assert cycle(graph) == [], f"{package} imports in a circle"
    backend = f"{package}.backend"
    assert not any(backend in edges for module, edges in graph.items() if module != f"{package}"), \
        "only the package's __init__ imports the facade"


# --- the core names no backend ------------------------------------------------------------------

def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (of modules, classes, functions, and
    the attribute docstrings after an assignment)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            docstring = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                and isinstance(stmt.value.value, str)
            if docstring and (i == 0 or isinstance(body[i - 1], (ast.Assign, ast.AnnAssign))):
                found.add(id(stmt.value))
    return found


def quoted_names(source: str, names: set[str]) -> list[str]:
    """The string constants of ``source`` (docstrings aside) that name one of ``names``."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in skip and pattern.search(node.value)]


def test_the_name_finder_sees_code_and_skips_docstrings():
    source = (
        '"""For vertex."""\nX = 1\n"""Like vertex."""\nBACKENDS = ("vertex", "local")\nhint = f"use {a} azure_ml"\n'
    )
    assert quoted_names(source, {"vertex", "azure_ml"}) == ["vertex", " azure_ml"]


def test_the_core_names_no_backend():
    names = set(registry.known()) - {"local"}
    names |= {n.replace("_", "-") for n in names}
    found = {}
    for path in sorted(CORE.rglob("*.py")):
        if Path(platforms.__file__).parent in path.parents:
            continue
        hits = quoted_names(path.read_text(), names)
        if hits:
            found[str(path.relative_to(CORE.parent))] = hits
    assert found == {}, "backend names belong to the plugins (and runtime/platforms): " + repr(found)


# --- hooks a backend answers for its own files -------------------------------------------------

@pytest.mark.parametrize("name", PLUGINS)
def test_a_backend_recognizes_what_it_compiles(name, isolated):
    from omnidist import api

    job = {"name": "mine", "framework": "pytorch", "image": "gcr.io/p/t:1", "command": ["python", "t.py"],
           "primary": {"accelerator": "T4:1"}, "workers": {"replicas": 1}}
    request = api.compile(job, backend=name, settings=required_settings(name)).request
    claims = [other for other in registry.installed()
              if isinstance(driver := registry.get(other), Imports) and driver.recognizes(request)]
    assert claims == [name]


@pytest.mark.parametrize("name", cloud_backends())
def test_every_cloud_backend_declares_a_harness_or_opts_out_of_every_suite(name):
    for suite, found in ((suite, suite_backends(suite)[name]) for suite in SUITES):
        assert found is not None, f"{name} runs no {suite} suite: declare Backend.testing or opt out with a reason"
        assert not isinstance(found, OptOut) or found.reason.strip(), f"{name} opts out of {suite} without a reason"


def test_an_opt_out_needs_a_known_suite():
    with pytest.raises(ValueError, match="not a shared suite"):
        suite_backends("integration")


@pytest.mark.parametrize("name", sorted(harnesses()))
def test_a_declared_harness_wires_the_backend_to_its_fake(name):
    from omnidist.testing import FakeServer, FakeService

    harness = harnesses()[name]
    assert issubclass(harness.service, FakeService) and {"create", "get"} <= set(harness.service.ROUTES)
    driver = registry.get(name)
    with FakeServer() as server:
        harness.service(server)
        settings = driver.settings_type(**harness.settings(server.url))
    driver.settings_type(**harness.sample_settings)
    assert driver.client is not None and settings is not None
