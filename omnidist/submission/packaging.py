"""A local ``code`` folder as one archive: which files go (:mod:`~omnidist.submission.code_files`:
ignore files, no link out of the folder, no secret file), a content hash, and a deterministic
source distribution that backends upload once per content.

The archive is a Python source distribution (``omnidist_code-0.0.0/…`` inside a ``.tar.gz``),
so the same file serves a platform's Python-package jobs (pip
installs it; a ``setup.py`` is added when the folder has neither ``setup.py`` nor
``pyproject.toml``) and command jobs (unpacked with ``--strip-components=1``). A cloud whose SDK uploads
a folder itself gets a folder: :func:`stage` gives it a copy holding exactly the files that ship.

The content hash covers each file's path, bytes and executable bit, not the archive, so it
names the content: two folders with the same files share one upload. Each file is read once,
for the hash and the archive together; a file that changes meanwhile is an error naming it, and
no temporary archive is left behind. A cloud whose containers unpack the archive themselves into
the working folder (a script mode) takes the :data:`FLAT` layout instead: the files at
the archive's root, nothing added.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import logging
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, Optional

import attrs

from omnidist.errors import ConflictError, ValidationError
from omnidist.submission.code_files import IGNORE_FILES, CodeFile, scan_folder

log = logging.getLogger("omnidist.submission.packaging")

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
class CodePackage:
    """A packed code folder.

    Attributes:
        folder: the folder that was packed.
        files: what ships, sorted by path.
        sha256: the content hash (hex), which names the upload.
        archive: the ``.tar.gz`` on disk (a temporary file; :meth:`remove` deletes it).
        size: the archive's size in bytes.
        md5: the archive's MD5, base64 (how Cloud Storage keeps an object's ``md5Hash``).
    """

    folder: Path
    files: tuple[CodeFile, ...]
    sha256: str
    archive: Path
    size: int
    md5: str = ""

    @property
    def total_bytes(self) -> int:
        """The shipped files' size before compression."""
        return sum(f.size for f in self.files)

    def remove(self) -> None:
        """Delete the temporary archive."""
        self.archive.unlink(missing_ok=True)


class ChangedWhilePacking(ValidationError):
    """A file of the code folder changed (or went) while it was being packed."""


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class _Source(io.RawIOBase):
    """One file of the folder, read once for the archive and the hash together: opened without
    following a link (the scan resolved links), checked through the descriptor before and after,
    and never read past the size the scan saw.

    Raises:
        ChangedWhilePacking: it went away, or its size, time or kind changed since the scan.
    """

    def __init__(self, folder: Path, item: CodeFile) -> None:
        super().__init__()
        self._folder, self._item, self._left = folder, item, item.size
        self.digest = hashlib.sha256()
        self._fd = -1  # nothing to close yet: the finalizer (IOBase's __del__) calls close() on a failed __init__
        try:
            self._fd = os.open(folder / item.read_from, _OPEN_FLAGS)
        except OSError:
            raise self._changed("went away") from None
        self._stat = os.fstat(self._fd)
        if not stat.S_ISREG(self._stat.st_mode) or (self._stat.st_size, self._stat.st_mtime_ns) != (
                item.size, item.mtime_ns):
            self.close()
            raise self._changed("changed")
        self.executable = bool(self._stat.st_mode & stat.S_IXUSR)

    def _changed(self, what: str) -> ChangedWhilePacking:
        return ChangedWhilePacking(f"{self._folder / self._item.read_from} {what} while the code folder was being "
                                   "packed; pack again once nothing writes to it (or list it in .gitignore)",
                                   path="code")

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = self._left if size is None or size < 0 else min(size, self._left)
        parts, got = [], 0
        while got < want:
            part = os.read(self._fd, want - got)
            if not part:
                raise self._changed("shrank")
            parts.append(part)
            got += len(part)
        block = b"".join(parts)
        self._left -= got
        self.digest.update(block)
        return block

    def finish(self) -> bytes:
        """Read to the end the scan saw and check nothing changed; the file's SHA-256."""
        while self._left:
            self.read(1 << 20)
        after = os.fstat(self._fd)
        if os.read(self._fd, 1) or (after.st_size, after.st_mtime_ns) != (self._stat.st_size, self._stat.st_mtime_ns):
            raise self._changed("changed")
        return self.digest.digest()

    def close(self) -> None:
        # Once only: a descriptor closed twice may by then be another file's or a socket's.
        if not self.closed and self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        super().close()


class _Hash:
    """The content hash: SHA-256 over each file's path, executable bit and bytes' SHA-256, in path order."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def add(self, item: CodeFile, source: _Source, file_digest: bytes) -> None:
        self._digest.update(item.path.encode() + b"\0" + (b"x" if source.executable else b"-") + b"\0")
        self._digest.update(file_digest)

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


def content_hash(folder: Path, files: tuple[CodeFile, ...]) -> str:
    """SHA-256 over each file's path, executable bit and bytes, in path order."""
    digest = _Hash()
    for item in files:
        with _Source(Path(folder), item) as source:
            digest.add(item, source, source.finish())
    return digest.hexdigest()


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(f"{SDIST_ROOT}/{name}")
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def _write_archive(folder: Path, files: tuple[CodeFile, ...], out: BinaryIO, layout: str = SDIST) -> str:
    """Write the archive, each file read once; the content hash of what it holds."""
    # mtime 0, owner 0, sorted entries and a fixed gzip header: the same files give the same bytes.
    digest = _Hash()
    root = f"{SDIST_ROOT}/" if layout == SDIST else ""
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            paths = {f.path for f in files}
            if layout == SDIST and not {"setup.py", "pyproject.toml"} & paths:
                _add(tar, "setup.py", SETUP_PY.encode())
            if layout == SDIST and "PKG-INFO" not in paths:
                _add(tar, "PKG-INFO", PKG_INFO.encode())
            for item in files:
                with _Source(folder, item) as source:
                    info = tarfile.TarInfo(f"{root}{item.path}")
                    info.size, info.mtime, info.mode = item.size, 0, 0o755 if source.executable else 0o644
                    tar.addfile(info, source)
                    digest.add(item, source, source.finish())
    return digest.hexdigest()


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


def pack(folder: Path, warn: Callable[[str], None] = log.warning, ship_secrets: Sequence[str] = (),
         layout: str = SDIST) -> CodePackage:
    """Pack ``folder`` into a temporary archive and hash its content.

    Args:
        folder: the code folder (it must exist).
        warn: called with each message about what was left out, and when the folder is unusually large.
        ship_secrets: the job's ``ship_secrets`` (secret-looking files that ship anyway).
        layout: :data:`SDIST` (a source distribution) or :data:`FLAT` (the files at the root).

    Raises:
        ChangedWhilePacking: a file changed while it was packed (no archive is left behind).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown archive layout {layout!r}: {', '.join(LAYOUTS)}")
    folder = Path(folder).resolve()
    files = scan_folder(folder, ship_secrets, warn=warn)
    warning = large_folder_warning(files)
    if warning:
        warn(warning)
    handle, name = tempfile.mkstemp(prefix="omnidist-code-", suffix=".tar.gz")
    archive = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            sha = _write_archive(folder, files, out, layout)
    except BaseException:
        archive.unlink(missing_ok=True)
        raise
    return CodePackage(folder=folder, files=files, sha256=sha, archive=archive, size=archive.stat().st_size,
                       md5=_md5(archive))


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return base64.b64encode(digest.digest()).decode()


@attrs.frozen(kw_only=True)
class StagedCode:
    """A copy of a code folder holding exactly the files that ship (for a cloud whose SDK uploads a
    folder itself), under a temporary folder of its own.

    Attributes:
        path: the copy (named like the folder it copies).
        files: what it holds.
        sha256: the content hash, as :func:`pack` computes it.
    """

    path: Path
    files: tuple[CodeFile, ...]
    sha256: str

    def remove(self) -> None:
        """Delete the copy and its temporary folder."""
        shutil.rmtree(self.path.parent, ignore_errors=True)


def stage(folder: Path, warn: Callable[[str], None] = log.warning, ship_secrets: Sequence[str] = ()) -> StagedCode:
    """Copy the files of ``folder`` that ship into a new temporary folder: what an SDK that
    uploads a folder itself then uploads is what omnidist chose (no link out of the folder, no
    secret file, nested ignore files honoured), whatever rules the SDK has.

    Raises:
        ChangedWhilePacking: a file changed while it was copied (no copy is left behind).
    """
    folder = Path(folder).resolve()
    files = scan_folder(folder, ship_secrets, warn=warn)
    warning = large_folder_warning(files)
    if warning:
        warn(warning)
    parent = Path(tempfile.mkdtemp(prefix="omnidist-code-"))
    copy = parent / folder.name
    digest = _Hash()
    try:
        copy.mkdir()
        # An SDK reads the root's ignore file only, and applies it to every folder: an empty one
        # keeps it from leaving out what a nested .gitignore re-includes (nothing else is there).
        (copy / IGNORE_FILES[0]).write_bytes(b"")
        for item in files:
            if item.path == IGNORE_FILES[0]:
                continue
            target = copy / item.path
            target.parent.mkdir(parents=True, exist_ok=True)
            with _Source(folder, item) as source, open(target, "xb") as out:
                shutil.copyfileobj(source, out)
                digest.add(item, source, source.finish())
            if source.executable:
                os.chmod(target, 0o755)
    except BaseException:
        shutil.rmtree(parent, ignore_errors=True)
        raise
    return StagedCode(path=copy, files=files, sha256=digest.hexdigest())


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
            from omnidist.submission.progress import tqdm_class

            with tqdm_class()(total=package.size, unit="B", unit_scale=True, unit_divisor=1024,
                      desc=f"uploading code to {what}") as bar:
                upload(_Progress(fh, bar.update), package.size)
    return True


def upload_verified(package: CodePackage, names: Sequence[str], stored: Callable[[str], Optional[str]],
                    upload: Callable[[str, BinaryIO, int], None], *,
                    progress_above: int = PROGRESS_ABOVE_BYTES) -> tuple[str, bool]:
    """Upload ``package`` under the first of ``names`` that is free or already holds this very
    archive: a name is never trusted for what it says. An object whose stored MD5 is not the
    archive's (someone else's bytes, or another build of the same files) is left alone and named in
    a warning, and the next name is tried; what an upload left there is checked the same way (a
    lost race puts the winner's bytes there).

    Args:
        names: where the archive may go, best first (the content-hash name, then one with the
            archive's MD5 in it).
        stored: the MD5 (base64) the store keeps for a name, ``""`` when it keeps none, ``None``
            when nothing is there.
        upload: sends the archive to a name (a readable file, its size); a create that finds the
            name taken meanwhile returns quietly.

    Returns:
        The name the archive is at, and whether this call uploaded it.

    Raises:
        ConflictError: every name holds other bytes.
    """
    for name in names:
        found, uploaded = stored(name), False
        if found is None:
            upload_once(package, exists=lambda: False, upload=lambda fh, size: upload(name, fh, size),  # noqa: B023
                        what=name, progress_above=progress_above)
            found, uploaded = stored(name), True
        if found == package.md5:
            log.info("code %s is at %s", package.sha256[:12], name)
            return name, uploaded
        log.warning("%s holds other bytes than this code's archive (MD5 %s, not %s): not used", name, found or "none",
                    package.md5)
    raise ConflictError(f"{', '.join(names)} all hold other bytes than this code's archive (MD5 {package.md5}); "
                        "delete them (they are not this code) or use a staging bucket only you write to")


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
