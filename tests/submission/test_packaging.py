"""Packing a code folder: which files go, the content hash, an archive pip installs, and
uploading once per content with a progress bar (omnidist/packaging.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from omnidist.submission import packaging


def folder(root: Path) -> Path:
    src = root / "src"
    (src / "trainer").mkdir(parents=True)
    (src / "trainer" / "__init__.py").write_text("")
    (src / "trainer" / "task.py").write_text("import json\nprint(json.dumps({'ran': __name__}))\n")
    (src / "trainer" / "vocab.txt").write_text("a b c\n")
    (src / "helpers.py").write_text("VALUE = 42\n")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return src


def paths(files) -> list[str]:
    return [f.path for f in files]


def test_ignore_files_are_honoured_amlignore_first(tmp_path):
    src = folder(tmp_path)
    (src / "data").mkdir()
    (src / "data" / "big.bin").write_bytes(b"0" * 10)
    (src / "notes.log").write_text("x")
    shipped = paths(packaging.scan_folder(src))
    assert ".git/HEAD" not in shipped and "data/big.bin" in shipped
    (src / ".gitignore").write_text("data/\n*.log\n")
    assert paths(packaging.scan_folder(src)) == [".gitignore", "helpers.py", "trainer/__init__.py", "trainer/task.py",
                                          "trainer/vocab.txt"]
    (src / ".amlignore").write_text("trainer/vocab.txt\n")  # Azure ML's rule: .amlignore wins over .gitignore
    assert paths(packaging.scan_folder(src)) == [".amlignore", ".gitignore", "data/big.bin", "helpers.py", "notes.log",
                                          "trainer/__init__.py", "trainer/task.py"]


def test_the_hash_names_the_content_and_the_archive_is_deterministic(tmp_path):
    src = folder(tmp_path)
    first, second = packaging.pack(src), packaging.pack(src)
    try:
        assert first.sha256 == second.sha256 and first.archive.read_bytes() == second.archive.read_bytes()
        (src / "helpers.py").write_text("VALUE = 43\n")
        assert packaging.pack(src).sha256 != first.sha256
        (src / "helpers.py").write_text("VALUE = 42\n")
        os.chmod(src / "helpers.py", 0o755)
        assert packaging.pack(src).sha256 != first.sha256  # the executable bit is content too
    finally:
        first.remove(), second.remove()
    assert not first.archive.exists()


def test_the_archive_is_a_source_distribution_pip_installs(tmp_path):
    package = packaging.pack(folder(tmp_path))
    names = tarfile.open(package.archive).getnames()
    assert names[:2] == ["omnidist_code-0.0.0/setup.py", "omnidist_code-0.0.0/PKG-INFO"]
    assert "omnidist_code-0.0.0/trainer/vocab.txt" in names
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(package.archive)], check=True, timeout=300)
    ran = subprocess.run([sys.executable, "-m", "trainer.task"], cwd=target, capture_output=True, text=True,
                         check=True, timeout=60)
    assert ran.stdout.strip() == '{"ran": "__main__"}'
    assert (target / "helpers.py").exists() and (target / "trainer" / "vocab.txt").exists()
    package.remove()


def test_a_folder_with_its_own_setup_keeps_it(tmp_path):
    src = folder(tmp_path)
    (src / "pyproject.toml").write_text("[project]\nname = 'mine'\nversion = '1.0'\n")
    package = packaging.pack(src)
    names = tarfile.open(package.archive).getnames()
    assert "omnidist_code-0.0.0/setup.py" not in names and "omnidist_code-0.0.0/pyproject.toml" in names
    package.remove()


def test_an_unusually_large_folder_is_warned_about_naming_the_biggest_files(tmp_path, monkeypatch):
    src = folder(tmp_path)
    (src / "checkpoint.pt").write_bytes(b"\0" * 5000)
    (src / "embeddings.npy").write_bytes(b"\0" * 3000)
    monkeypatch.setattr(packaging, "LARGE_FOLDER_BYTES", 4096)
    warnings: list[str] = []
    packaging.pack(src, warn=warnings.append).remove()
    (warning,) = warnings
    assert "checkpoint.pt (4.9 KB), embeddings.npy (2.9 KB)" in warning and ".amlignore" in warning
    assert packaging.large_folder_warning(packaging.scan_folder(src), limit=10**9) is None


def test_upload_once_skips_content_that_is_there_and_shows_progress_for_big_uploads(tmp_path, capsys):
    package = packaging.pack(folder(tmp_path))
    sent: list[bytes] = []

    def upload(stream, size):
        sent.append(stream.read())

    assert packaging.upload_once(package, exists=lambda: True, upload=upload, what="gs://b/x") is False
    assert sent == []
    assert packaging.upload_once(package, exists=lambda: False, upload=upload, what="gs://b/x") is True
    assert sent == [package.archive.read_bytes()] and "uploading code" not in capsys.readouterr().err
    assert packaging.upload_once(package, exists=lambda: False, upload=upload, what="gs://b/x", progress_above=10)
    assert sent[-1] == package.archive.read_bytes()
    assert "uploading code to gs://b/x" in capsys.readouterr().err
    package.remove()


@pytest.mark.parametrize("count, text", [(10, "10 B"), (2048, "2.0 KB"), (5 * 1024 ** 2, "5.0 MB")])
def test_sizes_read_well(count, text):
    assert packaging._size(count) == text
