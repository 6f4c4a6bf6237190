"""Entry-point discovery, suggestions, install hints, the contract check (omnidist/registry.py)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from omnidist import api
from omnidist.backend import registry
from omnidist.errors import BackendNotFoundError

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"


@pytest.fixture
def plugin_site(tmp_path, monkeypatch):
    """A site directory holding a real distribution that registers backends by entry point."""
    info = tmp_path / "omnidist_testplugin-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: omnidist-testplugin\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(
        "[omnidist.backends]\n"
        "echo = omnidist_testplugin:EchoBackend\n"
        "misnamed = omnidist_testplugin:Misnamed\n"
        "notabackend = omnidist_testplugin:NotABackend\n"
        "missing = omnidist_testplugin_gone:Backend\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(PLUGINS))
    registry.refresh()
    yield
    registry.refresh()


def test_a_plugin_is_discovered_and_loaded_lazily(plugin_site):
    assert "echo" in registry.installed()
    assert registry.distribution_version("echo") == "1.2.3"
    backend = registry.get("echo")
    assert backend.name == "echo" and registry.get("echo") is backend


def test_compile_goes_through_the_plugin_with_its_settings(plugin_site, isolated):
    compiled = api.compile(
        {"name": "j", "framework": "custom", "primary": {}, "backends": {"echo": {"greeting": "hi"}}}, backend="echo"
    )
    assert compiled.request == {"name": "j", "greeting": "hi"}


def test_unknown_backend_suggests_the_closest_name():
    with pytest.raises(BackendNotFoundError, match=r"Unknown backend 'vertx'\. Did you mean 'vertex'\?"):
        registry.get("vertx")


@pytest.fixture
def without_azure_ml(monkeypatch):
    """The registry as if ``omnidist-azure-ml`` were not installed."""
    present = registry._entry_points()
    monkeypatch.setattr(registry, "_entry_points", lambda: {k: v for k, v in present.items() if k != "azure_ml"})
    registry.get.cache_clear()
    yield
    registry.get.cache_clear()


def test_known_but_missing_backend_gives_the_install_line(without_azure_ml):
    """Known from the runtime platform a backend compiles for; the distribution by the naming rule."""
    assert "azure_ml" in registry.known() and registry.missing() == ["azure_ml"]
    with pytest.raises(BackendNotFoundError, match=r"not installed; install it with `pip install omnidist-azure-ml`"):
        registry.get("azure_ml")


def test_omnidist_backends_lists_what_is_missing(without_azure_ml):
    from click.testing import CliRunner

    from omnidist.cli import main

    result = CliRunner().invoke(main, ["backends"])
    assert "(not installed: azure_ml — pip install omnidist-azure-ml)" in result.output
    assert "\nazure_ml " not in result.output


def test_installed_distributions_are_named_by_their_metadata():
    assert registry.distribution("local") == "omnidist"
    assert registry.distribution("ai_platform") == "omnidist-ai-platform"
    assert registry.distribution("not_a_backend") == "omnidist-not-a-backend"


@pytest.mark.parametrize("name, message", [
    ("misnamed", "its name is 'something-else', but the entry point is 'misnamed'"),
    ("notabackend", "does not name a Backend subclass"),
    ("missing", "failed to load 'omnidist_testplugin_gone:Backend'"),
])
def test_broken_plugins_fail_with_a_message(plugin_site, name, message):
    with pytest.raises(BackendNotFoundError, match=message):
        registry.get(name)


def test_unknown_backend_block_in_a_job_is_rejected(isolated):
    with pytest.raises(Exception, match=r"backends\.vertx: no backend is called 'vertx'; did you mean 'vertex'\?"):
        api.check_backend_blocks(
            api.as_job({"name": "j", "framework": "custom", "primary": {}, "backends": {"vertx": {}}})
        )


def _dist(folder: Path, name: str, entry_points: str, metadata: str = "") -> None:
    folder.mkdir(parents=True)
    (folder / "entry_points.txt").write_text(entry_points)
    if metadata:
        (folder / ("PKG-INFO" if name.endswith(".egg-info") else "METADATA")).write_text(metadata)


def test_discovery_reads_only_the_group_and_the_first_distribution_of_a_name(tmp_path):
    near, far = tmp_path / "near", tmp_path / "far"
    _dist(near / "plug_a-2.0.dist-info", "a", "# comment\n[console_scripts]\nx = a:main\n\n[omnidist.backends]\n"
          "alpha = plug_a:Alpha [extra]\n; another comment\n[other]\nbeta = plug_a:Nope\n")
    _dist(near / "plug_b.egg-info", "plug_b.egg-info", "[omnidist.backends]\nbeta = plug_b.sub:Beta\n",
          "Metadata-Version: 2.1\nName: plug-b\nVersion: 0.3\n")
    _dist(far / "plug_a-1.0.dist-info", "a", "[omnidist.backends]\nalpha = old_a:Alpha\ngamma = old_a:Gamma\n")
    _dist(far / "plug_c-1.0.dist-info", "c", "[omnidist.backends]\nbeta = plug_c:Beta\n")
    found = registry.discover([str(near), str(tmp_path / "missing"), str(far)])
    assert {n: (p.value, p.distribution, p.version) for n, p in found.items()} == {
        "alpha": ("plug_a:Alpha [extra]", "plug_a", "2.0"),  # the nearer plug_a hides the farther one
        "beta": ("plug_b.sub:Beta", "plug_b", "0.3"),        # the first entry point of a name wins
    }


def test_a_plugin_loads_its_dotted_attribute(tmp_path, monkeypatch):
    (tmp_path / "plug_d.py").write_text("class Outer:\n    class Inner:\n        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = registry.Plugin(name="d", value="plug_d:Outer.Inner [gpu]", distribution="plug_d", version="1")
    assert plugin.load().__qualname__ == "Outer.Inner"


def test_discovery_finds_what_importlib_metadata_finds():
    import sys
    from importlib import metadata

    expected = {ep.name: (ep.value, ep.dist.version) for ep in metadata.entry_points(group=registry.GROUP)}
    found = registry.discover(sys.path)
    assert {name: (p.value, p.version) for name, p in found.items()} == expected


def test_a_backend_implements_one_of_the_two_import_methods(plugin_site):
    from omnidist.backend.contract import Capabilities, Imports
    from omnidist.model.roles import RoleName
    from omnidist_testplugin import EchoSettings

    class Silent(Imports):
        name = "silent"
        capabilities = Capabilities(roles=frozenset({RoleName.PRIMARY}))
        settings_type = EchoSettings

        def compile(self, job, settings):
            raise NotImplementedError

    with pytest.raises(BackendNotFoundError, match="implements neither import_native nor import_with_notes"):
        registry.check_contract("silent", Silent)
    Silent.import_with_notes = lambda self, request: (None, ())
    assert registry.check_contract("silent", Silent) is Silent
    assert Silent().import_native({}) is None, "import_native is import_with_notes' job"


def test_a_backend_that_reads_no_files_keeps_the_contract_and_import_says_so(plugin_site, monkeypatch):
    from omnidist.backend.contract import REQUIRED, Backend, Capabilities, Imports
    from omnidist.model.roles import RoleName
    from omnidist_testplugin import EchoSettings

    class CompilesOnly(Backend):
        name = "compiles_only"
        capabilities = Capabilities(roles=frozenset({RoleName.PRIMARY}))
        settings_type = EchoSettings

        def compile(self, job, settings):
            raise NotImplementedError

    assert set(REQUIRED) <= set(vars(CompilesOnly)), "the required protocol is all it defines"
    assert registry.check_contract("compiles_only", CompilesOnly) is CompilesOnly
    assert not isinstance(CompilesOnly(), Imports)
    monkeypatch.setattr(registry, "get", functools.cache(lambda name: CompilesOnly()))
    with pytest.raises(BackendNotFoundError, match="'compiles_only' reads no native files"):
        registry.importer("compiles_only")
