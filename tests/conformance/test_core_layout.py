"""The core's layout holds (DESIGN "Layout"): floors that only import downward, no import circle,
and plugins that reach the core through its front door, :mod:`omnidist.kit`, alone.

Imports are read with :mod:`ast` at any depth (an import inside a function closes a circle as
surely as one at the top); only ``if TYPE_CHECKING:`` blocks, which never run, are left out.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
from pathlib import Path

import pytest

from omnidist.backend import registry
from omnidist.testing.harness import required_settings

from .test_plugin_layout import cycle

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "omnidist"

FLOORS: tuple[tuple[str, ...], ...] = (
    ("omnidist.runtime", "omnidist.secrets", "omnidist.notebook", "omnidist.model.features",
     "omnidist.model.accelerators", "omnidist.model.limits", "omnidist.model.spelling", "omnidist.patterns",
     "omnidist.codecache"),
    ("omnidist.errors",),
    ("omnidist.model",),
    ("omnidist.backend", "omnidist.config", "omnidist.vendors"),
    ("omnidist.compiler", "omnidist.recovery.endings"),
    ("omnidist.submission",),
    ("omnidist.api", "omnidist.local"),
    ("omnidist.migration", "omnidist.placement", "omnidist.recovery"),
    ("omnidist.cli", "omnidist.console", "omnidist.kit", "omnidist.testing"),
)
"""The floors, bottom first: a module imports from its own floor and the floors below it. A
module belongs to the floor of the longest prefix that names it (``omnidist.model.features`` is a
leaf vocabulary on the bottom floor; the rest of ``omnidist.model`` is above the errors)."""


def module_name(path: Path) -> str:
    """``omnidist/model/job.py`` -> ``omnidist.model.job`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    return skipped


def imported(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that the file imports (``from pkg import name`` counts as ``pkg.name``
    when that is a module, else as ``pkg``)."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in known and m != name}


def core_graph() -> dict[str, set[str]]:
    """Core module -> the core modules it imports."""
    files = {module_name(p): p for p in CORE.rglob("*.py")}
    known = set(files)
    return {name: imported(path, known) for name, path in files.items()}


def floor(module: str) -> int:
    """The floor of ``module`` (the longest matching prefix wins)."""
    best, level = "", None
    for index, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, level = prefix, index
    return -1 if level is None else level


def test_the_graph_reader_sees_lazy_imports_and_skips_type_checking(tmp_path):
    pkg = tmp_path / "omnidist"
    pkg.mkdir()
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from omnidist import b\n"
              "def f():\n    from omnidist.c import x\n")
    (pkg / "a.py").write_text(source)
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert imported(pkg / "a.py", {"omnidist.a", "omnidist.b", "omnidist.c"}) == {"omnidist.c"}
    finally:
        ROOT = saved


def test_every_core_module_has_a_floor():
    assert [m for m in core_graph() if m != "omnidist" and floor(m) < 0] == []


def test_the_core_has_no_import_circle():
    assert cycle(core_graph()) == []


def test_each_floor_imports_only_from_itself_and_below():
    upward = sorted(f"{module} ({floor(module)}) imports {target} ({floor(target)})"
                    for module, targets in core_graph().items() for target in targets
                    if module != "omnidist" and floor(target) > floor(module))
    assert upward == []


def test_the_floor_check_catches_an_upward_import():
    assert floor("omnidist.model.job") < floor("omnidist.submission.handle")
    assert floor("omnidist.model.features") < floor("omnidist.errors") < floor("omnidist.model.job")


# --- plugins reach the core through the kit ---------------------------------------------------------

PLUGIN_PACKAGES = sorted({type(registry.get(n)).__module__.split(".")[0] for n in registry.installed()} - {"omnidist"})
ALLOWED_IN_CODE = ("omnidist.kit", "omnidist.runtime")
"""What a plugin's own modules may import of omnidist (its harness module may add omnidist.testing)."""
ALLOWED_IN_TESTS = (*ALLOWED_IN_CODE, "omnidist.testing", "omnidist.migration")
"""What a plugin's tests may import besides: the harness helpers, and the public API (``omnidist``
itself, and :mod:`omnidist.migration` for the report's types)."""


def core_imports(path: Path) -> set[str]:
    """Every ``omnidist…`` module or name the file imports (``from omnidist import x`` as ``omnidist.x``)."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "omnidist":
            found.update(f"{node.module}.{a.name}" if node.module == "omnidist" else node.module for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "omnidist")
    return found


def outside_the_kit(path: Path, allowed: tuple[str, ...]) -> list[str]:
    """The core imports of ``path`` that go around the kit."""
    public = {"omnidist", *(f"omnidist.{name}" for name in __import__("omnidist").__all__)}
    return sorted(m for m in core_imports(path)
                  if m not in public and not any(m == a or m.startswith(a + ".") for a in allowed))


def test_the_kit_check_catches_a_core_import(tmp_path):
    plugin = tmp_path / "mod.py"
    plugin.write_text("from omnidist.kit import Note\nfrom omnidist.compiler.catalog import MachineCatalog\n"
                      "from omnidist import serde\nimport omnidist\nfrom omnidist import DistributedJob\n")
    assert outside_the_kit(plugin, ALLOWED_IN_CODE) == ["omnidist.compiler.catalog", "omnidist.serde"]


@pytest.mark.parametrize("package", PLUGIN_PACKAGES)
def test_a_plugin_imports_the_core_only_through_the_kit(package):
    root = Path(__import__(package).__file__).parent
    found = {}
    for path in sorted(root.glob("*.py")):
        allowed = (*ALLOWED_IN_CODE, "omnidist.testing") if path.stem.startswith("testing") else ALLOWED_IN_CODE
        if outside := outside_the_kit(path, allowed):
            found[path.name] = outside
    tests = root.parent / "tests"
    for path in sorted(tests.glob("*.py")) if tests.is_dir() else ():
        if outside := outside_the_kit(path, ALLOWED_IN_TESTS):
            found[f"tests/{path.name}"] = outside
    assert found == {}, f"{package} reaches around omnidist.kit: {found}"


def test_every_kit_name_resolves_to_one_core_object():
    import importlib

    import omnidist.kit as kit

    objects = {name: getattr(kit, name) for name in kit.__all__}
    for name, where in kit._NAMES.items():
        module, _, attribute = where.partition(":")
        assert module.startswith("omnidist.") and importlib.import_module(module)
        assert objects[name] is getattr(importlib.import_module(module), attribute or name)
    with pytest.raises(AttributeError, match="omnidist.kit offers no 'registry'"):
        kit.registry  # noqa: B018 - the lookup is the test


def test_compiling_through_the_kit_loads_no_client_code():
    import subprocess
    import sys

    client_code = ("omnidist.submission.clients", "omnidist.submission.handle", "omnidist.submission.retry",
                   "omnidist.submission.packaging", "tenacity", "tqdm", "pathspec", "logging",
                   "omnidist.submission.ledger", "omnidist.placement", "sqlite3")
    probe = ("import json, sys, omnidist; omnidist.compile({'name': 'a', 'framework': 'pytorch', 'image': 'i', "
             "'command': ['x'], 'primary': {}}, backend=sys.argv[1], settings=json.loads(sys.argv[2])); "
             f"print(' '.join(m for m in {client_code!r} if m in sys.modules))")
    for name in registry.installed():
        needs = json.dumps(required_settings(name))  # what a profile gives (SageMaker's role_arn)
        done = subprocess.run([sys.executable, "-c", probe, name, needs], capture_output=True, text=True, check=True)
        assert done.stdout.split() == [], f"compiling for {name} loads {done.stdout}"


def test_the_compile_command_loads_no_placement_ledger_or_sqlite(tmp_path):
    import subprocess
    import sys

    (tmp_path / "job.yaml").write_text("name: a\nframework: pytorch\nimage: i\ncommand: [x]\nprimary: {}\n")
    heavy = ("omnidist.placement", "omnidist.submission.ledger", "sqlite3", "omnidist.submission.clients")
    probe = ("import sys; from omnidist.cli import main\n"
             "try:\n    main(['compile', 'job.yaml', '--backend', 'local', '--no-notes'])\n"
             "except SystemExit:\n    pass\n"
             f"print('LOADED', ' '.join(m for m in sys.modules if m.startswith({heavy!r})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.rsplit("LOADED", 1)[1].split() == []


# --- vendor kits: the core through the kit, never a backend ------------------------------------------

VENDORS = ROOT / "vendors"
VENDOR_PACKAGES = sorted(p.parent.name for p in VENDORS.glob("*/omnidist_*/__init__.py"))
"""The vendor kits' packages (``vendors/<vendor>/omnidist_<vendor>/``)."""


def top_level_imports(path: Path) -> set[str]:
    """The top-level packages the file imports (``omnidist_vertex`` for ``from omnidist_vertex.x import y``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found


def vendor_problems(folder: Path) -> dict[str, list[str]]:
    """What the vendor kit in ``folder`` imports that it may not: core modules around the kit
    (its tests may add the harness helpers and the public API, as a backend's tests), and any backend."""
    found = {}
    backends = set(PLUGIN_PACKAGES)
    for path in sorted(folder.rglob("*.py")):
        allowed = ALLOWED_IN_TESTS if "tests" in path.relative_to(folder).parts else ALLOWED_IN_CODE
        wrong = outside_the_kit(path, allowed) + sorted(top_level_imports(path) & backends)
        if wrong:
            found[str(path.relative_to(folder))] = wrong
    return found


def test_the_vendor_check_catches_a_core_import_and_a_backend(tmp_path):
    (tmp_path / "omnidist_x").mkdir()
    (tmp_path / "omnidist_x" / "a.py").write_text("from omnidist.kit import Note\nfrom omnidist.compiler import catalog\n"
                                                  "from omnidist_vertex.tables import NAME\n")
    assert vendor_problems(tmp_path) == {"omnidist_x/a.py": ["omnidist.compiler", "omnidist_vertex"]}


def test_there_are_vendor_kits():
    assert {"omnidist_google", "omnidist_aws", "omnidist_azure", "omnidist_k8s"} <= set(VENDOR_PACKAGES)


@pytest.mark.parametrize("package", VENDOR_PACKAGES)
def test_a_vendor_kit_imports_the_core_only_through_the_kit_and_never_a_backend(package):
    folder = next(VENDORS.glob(f"*/{package}")).parent
    assert vendor_problems(folder) == {}


@pytest.mark.parametrize("package", PLUGIN_PACKAGES)
def test_a_backend_depends_on_every_vendor_kit_it_imports(package):
    import tomllib

    root = Path(__import__(package).__file__).parent
    used = set().union(*(top_level_imports(p) for p in root.glob("*.py"))) & set(VENDOR_PACKAGES)
    pyproject = root.parent / "pyproject.toml"
    if pyproject.is_file():  # a source folder
        requirements = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    else:  # an installed distribution (a backend generated from the template, installed elsewhere)
        (dist,) = importlib.metadata.packages_distributions()[package]
        requirements = importlib.metadata.requires(dist) or []
    declared = {re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0].strip() for dep in requirements}
    distributions = {pkg: tomllib.loads(next(VENDORS.glob(f"*/{pkg}")).parent.joinpath("pyproject.toml")
                                        .read_text())["project"]["name"] for pkg in used}
    assert sorted(d for d in distributions.values() if d not in declared) == [], \
        f"{package} imports vendor kits its pyproject.toml does not depend on"
