"""The cache of attrs' and cattrs' generated code (omnidist.codecache): a hit is what compiling would
have given, a warm start compiles no generated code, and a bad or unwritable cache only costs time."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

from omnidist import codecache
from omnidist.codecache import CodeCache

ROOT = Path(__file__).resolve().parents[1]

# A child process that counts the generated code of omnidist's own classes it compiles (builtins.compile
# with attrs' or cattrs' file names; attrs' own classes are built by `import attrs`, before omnidist),
# then compiles the example job for a backend through the CLI.
PROBE = textwrap.dedent("""
    import builtins, json, sys
    real = builtins.compile
    compiled = []
    def counting(source, filename, *args, **kwargs):
        if isinstance(filename, str) and "generated" in filename and "omnidist" in filename:
            compiled.append(filename)
        return real(source, filename, *args, **kwargs)
    builtins.compile = counting
    from omnidist import codecache
    from omnidist.cli import main
    try:
        main(["compile", sys.argv[1], "--backend", "vertex", "--no-notes"])
    except SystemExit as exc:
        assert not exc.code, exc.code
    cache = codecache.install()
    print(json.dumps({"compiled": len(compiled), "hits": cache and cache.hits, "misses": cache and cache.misses}),
          file=sys.stderr)
""")


def _probe(tmp_path: Path, **env: str) -> dict:
    job = ROOT / "examples" / "job.yaml"
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "OMNIDIST_NO_CODE_CACHE")}
    environ.update({"OMNIDIST_CACHE_DIR": str(tmp_path / "cache"), **env})
    done = subprocess.run([sys.executable, "-c", PROBE, str(job)], capture_output=True, text=True, env=environ,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_a_warm_start_compiles_no_generated_code(tmp_path):
    cold = _probe(tmp_path)
    assert cold["compiled"] > 20 and cold["misses"] >= cold["compiled"]  # misses count cattrs' own classes too
    assert cold["misses"] > cold["compiled"]
    assert list((tmp_path / "cache").glob("generated-*.marshal"))
    warm = _probe(tmp_path)
    assert warm == {"compiled": 0, "hits": cold["hits"] + cold["misses"], "misses": 0}


def test_nothing_is_written_where_python_writes_no_bytecode_and_the_switch_turns_it_off(tmp_path):
    assert _probe(tmp_path, PYTHONDONTWRITEBYTECODE="1")["compiled"] > 20
    assert not (tmp_path / "cache").exists()
    off = _probe(tmp_path, OMNIDIST_NO_CODE_CACHE="1")
    assert off["hits"] is None and off["compiled"] > 20
    assert not (tmp_path / "cache").exists()


def test_a_hit_is_the_code_compiling_gives(tmp_path):
    cache = CodeCache(tmp_path / "c.marshal", write=True)
    source = "def f(x):\n    return [x, 'a', 1.5]\n"
    first = cache.compile(source, "<gen f>", "exec")
    cache.save()
    again = CodeCache(tmp_path / "c.marshal", write=True).compile(source, "<gen f>", "exec")
    assert again == first == compile(source, "<gen f>", "exec", dont_inherit=True)
    assert again is not first  # read back from the file, not the same object


def test_the_key_is_the_whole_request_flags_included(tmp_path):
    cache = CodeCache(tmp_path / "c.marshal", write=True)
    source = "def f(x: int) -> int:\n    return x\n"
    import __future__

    plain = cache.compile(source, "<gen>", "exec")
    postponed = cache.compile(source, "<gen>", "exec", _caller_flags=__future__.annotations.compiler_flag)
    changed = cache.compile(source.replace("return x", "return -x"), "<gen>", "exec")
    assert cache.misses == 3 and cache.hits == 0
    namespaces: list[dict] = [{}, {}, {}]
    for code, namespace in zip((plain, postponed, changed), namespaces):
        exec(code, namespace)
    assert namespaces[0]["f"].__annotations__ == {"x": int, "return": int}
    assert namespaces[1]["f"].__annotations__ == {"x": "int", "return": "int"}
    assert namespaces[2]["f"](3) == -3


def _point_class(module: str) -> type:
    namespace = {"__module__": module, "__annotations__": {"x": "int", "y": "int"}, "y": attrs.field(default=0)}
    return attrs.frozen(type("Point", (), namespace))


def test_a_class_built_from_cached_code_behaves_the_same(tmp_path, monkeypatch):
    cache = CodeCache(tmp_path / "c.marshal", write=True)
    import attr._make

    monkeypatch.setattr(attr._make, "compile", codecache._CachedCompile(cache), raising=False)
    first, second = _point_class("omnidist_probe.values"), _point_class("omnidist_probe.values")
    assert (cache.misses, cache.hits) == (1, 1)  # the second class's methods came from the cache
    assert second(1, 2) == second(1, 2) and second(1) != second(2)
    assert hash(second(1, 2)) == hash(second(1, 2)) and repr(second(1)) == "Point(x=1, y=0)"
    assert repr(first(1)) == repr(second(1))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        second(1).x = 3  # type: ignore[attr-defined]


def test_only_omnidists_own_classes_are_kept(tmp_path, monkeypatch):
    cache = CodeCache(tmp_path / "c.marshal", write=True)
    import attr._make

    monkeypatch.setattr(attr._make, "compile", codecache._CachedCompile(cache), raising=False)
    user = _point_class("my_project.model")
    assert (cache.misses, cache.hits) == (0, 0)  # a user's class: compiled as before, not kept
    assert user(1) == user(1)


def test_dataclasses_of_omnidist_come_from_the_cache_and_behave_the_same(tmp_path, monkeypatch):
    import dataclasses

    cache = CodeCache(tmp_path / "c.marshal", write=True)
    monkeypatch.setattr(dataclasses, "exec", codecache._CachedExec(cache), raising=False)

    def build(module: str) -> type:
        namespace = {"__module__": module, "__annotations__": {"a": int, "b": dict},
                     "b": dataclasses.field(default_factory=dict)}
        monkeypatch.setitem(sys.modules, module, type(sys)(module))
        return dataclasses.dataclass(frozen=True)(type("Slot", (), namespace))

    first = build("omnidist_probe.runtime")
    misses = cache.misses
    second = build("omnidist_probe.runtime")
    assert misses > 0 and cache.misses == misses and cache.hits == misses
    assert second(1) == second(1, {}) and second(1) != second(2) and hash(second(1, ())) == hash(second(1, ()))
    assert repr(second(3)) == repr(first(3)) == "Slot(a=3, b={})"
    with pytest.raises(dataclasses.FrozenInstanceError):
        second(1).a = 2  # type: ignore[misc]
    build("my_project.values")
    assert cache.misses == misses  # a user's dataclass: not kept


@pytest.mark.parametrize("content", [b"", b"not marshal at all", marshal.dumps([1, 2]),
                                     marshal.dumps({("a", "exec", 0): ("src", b"\x00garbage")})])
def test_an_unreadable_or_foreign_file_is_ignored_and_replaced(tmp_path, content):
    path = tmp_path / "c.marshal"
    path.write_bytes(content)
    cache = CodeCache(path, write=True)
    code = cache.compile("x = 1\n", "a", "exec")
    assert cache.misses == 1
    cache.save()
    assert CodeCache(path, write=True).compile("x = 1\n", "a", "exec") == code


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = CodeCache(blocker / "sub" / "c.marshal", write=True)
    cache.compile("x = 1\n", "a", "exec")
    cache.save()  # no error: the folder cannot be made under a file
    assert not (blocker / "sub").exists()


def test_writers_merge_and_a_newer_source_replaces_the_older(tmp_path):
    path = tmp_path / "c.marshal"
    one, two = CodeCache(path, write=True), CodeCache(path, write=True)
    one.compile("a = 1\n", "<a>", "exec")
    two.compile("b = 1\n", "<b>", "exec")
    one.save()
    two.save()
    both = CodeCache(path, write=True)
    both.compile("a = 1\n", "<a>", "exec")
    both.compile("b = 2\n", "<b>", "exec")  # the class changed: a miss that replaces the old entry
    assert (both.hits, both.misses) == (1, 1)
    both.save()
    assert len(marshal.loads(path.read_bytes())) == 2


def test_the_salt_attrs_draws_per_process_does_not_defeat_the_cache(tmp_path):
    cache = CodeCache(tmp_path / "c.marshal", write=True)
    template = "def __hash__(self):\n        return hash((\n                {},\n                self.x,\n            ))\n"
    cache.compile(template.format(1234567), "<attrs generated methods m.C>", "exec")
    cache.compile(template.format(-987654), "<attrs generated methods m.C>", "exec")
    assert (cache.hits, cache.misses) == (1, 1)


def test_the_cache_folder_follows_the_environment(tmp_path):
    assert codecache.cache_dir({"OMNIDIST_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert codecache.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "omnidist"
    assert codecache.cache_dir({"XDG_CACHE_HOME": "relative"}) == Path.home() / ".cache" / "omnidist"
    assert codecache.cache_dir({}) == Path.home() / ".cache" / "omnidist"


def test_without_a_home_folder_nothing_is_cached(tmp_path):
    environ = {k: v for k, v in os.environ.items() if k not in ("HOME", "OMNIDIST_CACHE_DIR", "XDG_CACHE_HOME",
                                                                 "PYTHONDONTWRITEBYTECODE")}
    code = ("import os, pwd; pwd.getpwuid = lambda uid: (_ for _ in ()).throw(KeyError(uid))\n"
            "from omnidist import codecache\nimport omnidist.model.job\n"
            "cache = codecache.install(); print(cache.path, cache.misses > 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "True"]
    assert list(tmp_path.iterdir()) == []  # nothing written under a literal "~"
