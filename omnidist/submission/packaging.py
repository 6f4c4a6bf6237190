"""A local ``code`` folder as one archive: which files go (ignore files honoured), a content
hash, and a deterministic source distribution that backends upload once per content.

The archive is a Python source distribution (``omnidist_code-0.0.0/…`` inside a ``.tar.gz``),
so the same file serves Vertex ``pythonPackageSpec`` / AI Platform ``packageUris`` (pip
installs it; a ``setup.py`` is added when the folder has neither ``setup.py`` nor
``pyproject.toml``) and command jobs (unpacked with ``--strip-components=1``). Files are
chosen like Azure ML chooses them: the folder's ``.amlignore`` when it has one, else its
``.gitignore`` (gitignore syntax, read with ``pathspec``); ``.git`` never goes.

The content hash covers each file's path, bytes and executable bit, not the archive, so it
names the content: two folders with the same files share one upload. A cloud whose containers
unpack the archive themselves into the working folder (SageMaker's script mode) takes the
:data:`FLAT` layout instead: the files at the archive's root, nothing added.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import stat
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Optional

import attrs

log = logging.getLogger("omnidist.submission.packaging")

IGNORE_FILES = (".amlignore", ".gitignore")
"""Ignore files read, first found wins (Azure ML's own rule, so every cloud ships the same files)."""

ALWAYS_LEFT_OUT = (".git/",)
"""Patterns never shipped, whatever the ignore files say."""

SDIST_ROOT = "omnidist_code-0.0.0"
"""The archive's top folder (a source distribution's ``NAME-VERSION``)."""

SDIST = "sdist"
"""The source-distribution layout (the files under :data:`SDIST_ROOT`, a ``setup.py`` added)."""

FLAT = "flat"
"""The files at the archive's root, as they are in the folder, nothing added."""

LAYOUTS = (FLAT, SDIST)

PROGRESS_ABOVE_BYTES = 4 * 1024 * 1024
"""Uploads bigger than this show a progress bar."""

LARGE_FOLDER_BYTES = 100 * 1024 * 1024
"""A code folder bigger than this gets a warning naming its biggest files."""

LARGEST_SHOWN = 5
"""How many of the biggest files the warning names."""

SETUP_PY = '''"""Written by omnidist: the code folder had neither setup.py nor pyproject.toml."""
import os
from setuptools import find_packages, setup

setup(
    name="omnidist-code",
    version="0.0.0",
    packages=find_packages(),
    py_modules=[name[:-3] for name in os.listdir(".") if name.endswith(".py") and name != "setup.py"],
    package_data={"": ["*"]},
)
'''
"""The ``setup.py`` added to a plain folder so pip can install it (packages and top-level modules)."""

PKG_INFO = "Metadata-Version: 2.1\nName: omnidist-code\nVersion: 0.0.0\n"


@attrs.frozen(kw_only=True)
class CodeFile:
    """One file that ships: its path inside the folder (``/``-separated) and its size."""

    path: str
    size: int


@attrs.frozen(kw_only=True)
class CodePackage:
    """A packed code folder.

    Attributes:
        folder: the folder that was packed.
        files: what ships, sorted by path.
        sha256: the content hash (hex), which names the upload.
        archive: the ``.tar.gz`` on disk (a temporary file; :meth:`remove` deletes it).
        size: the archive's size in bytes.
    """

    folder: Path
    files: tuple[CodeFile, ...]
    sha256: str
    archive: Path
    size: int

    @property
    def total_bytes(self) -> int:
        """The shipped files' size before compression."""
        return sum(f.size for f in self.files)

    def remove(self) -> None:
        """Delete the temporary archive."""
        self.archive.unlink(missing_ok=True)


def _spec(folder: Path):
    import pathspec

    lines = list(ALWAYS_LEFT_OUT)
    for name in IGNORE_FILES:
        ignore = folder / name
        if ignore.is_file():
            lines += ignore.read_text(encoding="utf-8", errors="replace").splitlines()
            break
    return pathspec.GitIgnoreSpec.from_lines(lines)


def scan_folder(folder: Path) -> tuple[CodeFile, ...]:
    """The files of ``folder`` that ship (ignore files honoured; symbolic links followed to
    files, never into folders), sorted by path."""
    spec = _spec(folder)
    found: list[CodeFile] = []
    for root, dirs, names in os.walk(folder):
        rel_root = Path(root).relative_to(folder).as_posix()
        prefix = "" if rel_root == "." else rel_root + "/"
        dirs[:] = sorted(d for d in dirs if not spec.match_file(prefix + d + "/")
                         and not os.path.islink(os.path.join(root, d)))
        for name in names:
            rel = prefix + name
            full = Path(root) / name
            if spec.match_file(rel) or not full.is_file():
                continue
            found.append(CodeFile(path=rel, size=full.stat().st_size))
    return tuple(sorted(found, key=lambda f: f.path))


def _executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR)


def content_hash(folder: Path, files: tuple[CodeFile, ...]) -> str:
    """SHA-256 over each file's path, executable bit and bytes, in path order."""
    digest = hashlib.sha256()
    for item in files:
        full = folder / item.path
        digest.update(item.path.encode() + b"\0" + (b"x" if _executable(full) else b"-") + b"\0")
        file_digest = hashlib.sha256()
        with open(full, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                file_digest.update(block)
        digest.update(file_digest.digest())
    return digest.hexdigest()


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(f"{SDIST_ROOT}/{name}")
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def _write_archive(folder: Path, files: tuple[CodeFile, ...], out: BinaryIO, layout: str = SDIST) -> None:
    # mtime 0, owner 0, sorted entries and a fixed gzip header: the same files give the same bytes.
    root = f"{SDIST_ROOT}/" if layout == SDIST else ""
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            paths = {f.path for f in files}
            if layout == SDIST and not {"setup.py", "pyproject.toml"} & paths:
                _add(tar, "setup.py", SETUP_PY.encode())
            if layout == SDIST and "PKG-INFO" not in paths:
                _add(tar, "PKG-INFO", PKG_INFO.encode())
            for item in files:
                full = folder / item.path
                info = tarfile.TarInfo(f"{root}{item.path}")
                info.size, info.mtime = item.size, 0
                info.mode = 0o755 if _executable(full) else 0o644
                with open(full, "rb") as fh:
                    tar.addfile(info, fh)


def large_folder_warning(files: tuple[CodeFile, ...], limit: Optional[int] = None) -> Optional[str]:
    """A warning naming the biggest files when the folder ships more than ``limit`` bytes
    (default :data:`LARGE_FOLDER_BYTES`)."""
    limit = LARGE_FOLDER_BYTES if limit is None else limit
    total = sum(f.size for f in files)
    if total <= limit:
        return None
    biggest = sorted(files, key=lambda f: (-f.size, f.path))[:LARGEST_SHOWN]
    named = ", ".join(f"{f.path} ({_size(f.size)})" for f in biggest)
    return (f"the code folder ships {_size(total)} in {len(files)} files; the biggest: {named}. Data and "
            "checkpoints belong in inputs/outputs: list them in .amlignore or .gitignore to leave them out")


def _size(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def pack(folder: Path, warn: Callable[[str], None] = log.warning, layout: str = SDIST) -> CodePackage:
    """Pack ``folder`` into a temporary archive and hash its content.

    Args:
        folder: the code folder (it must exist).
        warn: called with a message when the folder is unusually large.
        layout: :data:`SDIST` (a source distribution) or :data:`FLAT` (the files at the root).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown archive layout {layout!r}: {', '.join(LAYOUTS)}")
    folder = Path(folder).resolve()
    files = scan_folder(folder)
    warning = large_folder_warning(files)
    if warning:
        warn(warning)
    sha = content_hash(folder, files)
    handle, name = tempfile.mkstemp(prefix="omnidist-code-", suffix=".tar.gz")
    with os.fdopen(handle, "wb") as out:
        _write_archive(folder, files, out, layout)
    archive = Path(name)
    return CodePackage(folder=folder, files=files, sha256=sha, archive=archive, size=archive.stat().st_size)


def upload_once(package: CodePackage, exists: Callable[[], bool],
                upload: Callable[[BinaryIO, int], None], *, what: str,
                progress_above: int = PROGRESS_ABOVE_BYTES) -> bool:
    """Upload ``package`` unless its content is already there; True when it was uploaded.

    Args:
        exists: asks the store whether the object named by the content hash is there.
        upload: sends the archive (a readable file, its size in bytes).
        what: the destination, for the progress bar.
        progress_above: show a tqdm progress bar for archives bigger than this.
    """
    if exists():
        log.info("code %s is already at %s", package.sha256[:12], what)
        return False
    with open(package.archive, "rb") as fh:
        if package.size <= progress_above:
            upload(fh, package.size)
        else:
            from tqdm.auto import tqdm

            with tqdm(total=package.size, unit="B", unit_scale=True, unit_divisor=1024,
                      desc=f"uploading code to {what}") as bar:
                upload(_Progress(fh, bar.update), package.size)
    return True


class _Progress(io.RawIOBase):
    """A read-only file that reports every read to a progress callback."""

    def __init__(self, raw: BinaryIO, report: Callable[[int], object]):
        super().__init__()
        self._raw, self._report = raw, report

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._report(len(data))
        return data

    def readinto(self, buffer) -> int:  # noqa: ANN001 - the io protocol's own signature
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)
