"""Which files of a local ``code`` folder ship: the ignore files as git reads them, never ``.git``,
no link that leaves the folder, no well-known secret file unless the job lists it.

- Ignore files are read in every folder, as git reads ``.gitignore`` (a nested one's patterns
  are relative to its folder; deeper files win). A folder with a ``.amlignore`` is read through
  it instead of its ``.gitignore`` (the rule of the one cloud that reads that file, applied at
  every level and for every backend); the scan says so.
  A line git accepts but reads as matching nothing (``!`` alone, a trailing ``\\``, ``[z-a]``) matches
  nothing here too.
- A symbolic link is never followed out of the folder: a link whose target is outside (``ln -s
  /etc/passwd``, ``~/.ssh/id_rsa``) is left out and named in a warning. A link to a file inside
  ships that file's bytes under the link's name, unless that file is a secret; a link to a folder
  is not followed (its files ship from where they are).
- Well-known secret files (:func:`secret_patterns`: ``.env``, private keys, ``.netrc``, the
  credential files every installed vendor kit declares…) are left out and listed in a warning,
  unless the job's ``ship_secrets`` names them.
- A file whose name is not UTF-8 is left out and named (no cloud stores such a name).

Every other file ships, with its size and time recorded so that packing can tell if it changed.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Optional

import attrs

log = logging.getLogger("omnidist.submission.packaging")

IGNORE_FILES = (".amlignore", ".gitignore")
"""Ignore files read in each folder, the first found wins (one cloud's rule, kept for every backend so
that every cloud ships the same files)."""

NEVER_SHIPPED = ".git"
"""A folder of this name never ships, whatever the ignore files say."""

SECRET_PATTERNS: tuple[str, ...] = (
    # environment files and shell credentials
    ".env", ".env.*", "*.env", ".envrc", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass", ".my.cnf",
    ".git-credentials", ".htpasswd", ".vault-token",
    ".secrets", "secrets.yaml", "secrets.yml", "secrets.json", "secrets.toml", "secrets.env",
    # private keys and keystores (and their copies: id_rsa.bak, id_rsa.old)
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12",
    "*.pfx", "*.jks", "*.keystore", "*.ppk", "*.gpg",
    # cloud and tool credentials (each vendor kit adds its own tools' files: secret_patterns)
    "credentials.json", "credentials", "credentials.db", "client_secret*.json", "service-account*.json",
    "service_account*.json", "application_default_credentials.json", "adc.json", "access_tokens.db",
    "legacy_credentials/", ".s3cfg", ".dockercfg", ".terraformrc", "terraform.rc",
    "*.tfstate", "*.tfstate.backup", "*.tfvars", "*.tfvars.json", "kubeconfig", "kubeconfig.*", "*.kubeconfig",
    # credential folders, and a file of the same name (a copied-in .ssh, .kube…)
    ".ssh", ".gnupg", ".kube", ".docker/config.json",
)
"""Files left out of every code archive unless the job's ``ship_secrets`` names them, whatever
vendor kits are installed (gitignore patterns: a name without ``/`` matches at any depth, ``dir/``
everything under such a folder). They are matched whatever the case of the file's name (``.ENV``,
``ID_RSA``, ``server.PEM`` are secrets too, as on a file system that ignores case)."""

NOT_SECRETS: tuple[str, ...] = ("!.env.example", "!.env.sample", "!.env.template", "!*.pub", "!*.example.*")
"""Templates and public halves are not secrets, whoever's pattern they match (read last)."""


def secret_patterns() -> tuple[str, ...]:
    """What a scan leaves out as secrets: :data:`SECRET_PATTERNS`, the credential files of every
    installed vendor kit (:attr:`omnidist.vendors.Vendor.secret_files`), then :data:`NOT_SECRETS`."""
    from omnidist import vendors

    return (*SECRET_PATTERNS, *vendors.secret_files(), *NOT_SECRETS)


@attrs.frozen(kw_only=True)
class CodeFile:
    """One file that ships.

    Attributes:
        path: its path inside the folder (``/``-separated), as it ships.
        size: its size in bytes when the folder was scanned.
        source: where its bytes are read from, inside the folder (a link's target; else ``path``).
        mtime_ns: its modification time when scanned (packing refuses a file that changed).
    """

    path: str
    size: int
    source: str = ""
    mtime_ns: int = 0

    @property
    def read_from(self) -> str:
        """The path its bytes are read from."""
        return self.source or self.path


@attrs.frozen(kw_only=True)
class Scan:
    """What a code folder ships, and what was left out that the user should hear about.

    Attributes:
        files: what ships, sorted by path.
        secrets: secret-looking files left out (``ship_secrets`` ships them).
        links: links whose target is outside the folder, left out (``path -> target``).
        unnamed: files whose names are not UTF-8, left out (escaped).
        replaced: folders whose ``.amlignore`` is read instead of their ``.gitignore``.
        unreadable_lines: ignore-file lines git reads as matching nothing (``file:line``).
        shipped_secrets: secret-looking files that ship because ``ship_secrets`` names them.
        hard_links: files that ship and have other names outside the folder (hard links: the same
            bytes, which a link to a secret elsewhere would ship).
    """

    files: tuple[CodeFile, ...]
    secrets: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    unnamed: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    unreadable_lines: tuple[str, ...] = ()
    shipped_secrets: tuple[str, ...] = ()
    hard_links: tuple[str, ...] = ()

    def warnings(self) -> list[str]:
        """One sentence per kind of thing left out (or shipped on request), naming them."""
        found = []
        if self.secrets:
            found.append(f"left out of the code archive as secrets: {', '.join(self.secrets)}; list a file in the "
                         "job's ship_secrets to ship it anyway")
        if self.links:
            found.append(f"left out of the code archive: links that leave the code folder ({', '.join(self.links)}); "
                         "copy the file into the folder to ship it")
        if self.unnamed:
            found.append(f"left out of the code archive: file names that are not UTF-8 ({', '.join(self.unnamed)}); "
                         "rename them")
        for folder in self.replaced:
            found.append(f"{folder}.amlignore decides what ships from {folder or 'the code folder'}; the .gitignore "
                         "beside it is not read (the rule of the cloud that reads .amlignore, kept everywhere)")
        if self.unreadable_lines:
            found.append(f"ignore-file lines that match nothing (git reads them so too): "
                         f"{', '.join(self.unreadable_lines)}")
        if self.shipped_secrets:
            found.append(f"shipping secret-looking files because ship_secrets names them: "
                         f"{', '.join(self.shipped_secrets)}")
        if self.hard_links:
            found.append(f"shipping files that are hard links to a file outside the code folder: "
                         f"{', '.join(self.hard_links)}; they ship the bytes the other name holds (check none is a "
                         "secret, or copy the file instead)")
        return found


def _spec(lines: Sequence[str]) -> Any:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _usable(lines: Iterable[str], name: str) -> tuple[list[str], list[str]]:
    """The lines of an ignore file pathspec can compile, and ``name:N`` of those it cannot (git
    reads those as matching nothing: ``!`` alone, a trailing backslash, ``[z-a]``)."""
    good, bad = [], []
    for number, line in enumerate(lines, 1):
        try:
            _spec([line])
        except Exception:  # noqa: BLE001 - pathspec raises its own errors, ValueError or re.error by line
            bad.append(f"{name}:{number}")
            continue
        good.append(line)
    return good, bad


def _rebased(line: str, prefix: str) -> str:
    """A pattern of the ignore file in folder ``prefix`` as a pattern of the root's: git reads a
    pattern with a ``/`` before its end relative to the file's folder, one without at any depth."""
    if not prefix or not line.strip() or line.startswith("#"):
        return line
    negate = line.startswith("!")
    body = line[1:] if negate else line
    anchored = "/" in body.rstrip("/")
    body = prefix + body.lstrip("/") if anchored else f"{prefix}**/{body}"
    return ("!" if negate else "") + body


def _ignore_lines(directory: str, rel: str, found: dict[str, list[str]]) -> list[str]:
    """The ignore file of one folder, its lines rebased to the root (``found`` collects the
    replaced ``.gitignore`` files and the lines that match nothing)."""
    present = [name for name in IGNORE_FILES if os.path.isfile(os.path.join(directory, name))
               and not os.path.islink(os.path.join(directory, name))]
    if not present:
        return []
    if len(present) > 1:
        found["replaced"].append(rel)
    name = present[0]
    try:
        with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 20)
    except OSError:
        return []
    good, bad = _usable(text.splitlines(), rel + name)
    found["bad"] += bad
    return [_rebased(line, rel) for line in good]


def _display(rel: str) -> str:
    """A path that may not be UTF-8, as it can be shown."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _inside(real: str, root: str) -> Optional[str]:
    """``real``'s path relative to ``root`` when it is inside it, else ``None``."""
    try:
        if os.path.commonpath([real, root]) != root:
            return None
    except ValueError:
        return None
    return os.path.relpath(real, root).replace(os.sep, "/")


def scan(folder: Path, ship_secrets: Sequence[str] = ()) -> Scan:
    """The files of ``folder`` that ship, sorted by path, and what was left out.

    Args:
        folder: the code folder.
        ship_secrets: gitignore patterns of secret-looking files that ship anyway (the job's
            ``ship_secrets``).
    """
    root = os.path.realpath(folder)
    secret = _spec(secret_patterns())
    allowed = _spec(list(ship_secrets))
    found: dict[str, list[str]] = {"replaced": [], "bad": []}
    rules: dict[str, tuple[list[str], Any]] = {}
    files: list[CodeFile] = []
    secrets, links, unnamed, shipped = [], [], [], []
    inodes: dict[tuple[int, int], tuple[int, set[str]]] = {}
    for directory, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(directory, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        parent = prefix[: prefix.rstrip("/").rfind("/") + 1] if prefix else None
        parent_lines, parent_spec = rules[parent] if parent is not None else ([], None)
        own = _ignore_lines(directory, prefix, found)
        lines = parent_lines + own
        spec = _spec(lines) if own or parent_spec is None else parent_spec
        rules[prefix] = (lines, spec)
        kept = []
        for name in sorted(dirs):
            rel = prefix + name
            full = os.path.join(directory, name)
            if not _utf8(name):
                unnamed.append(_display(rel) + "/")
            elif name == NEVER_SHIPPED or spec.match_file(rel + "/"):
                continue
            elif os.path.islink(full):  # never followed: its files ship from where they are, or not at all
                if _inside(os.path.realpath(full), root) is None:
                    links.append(f"{rel}/ -> {os.readlink(full)}")
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(names):
            rel = prefix + name
            full = os.path.join(directory, name)
            if not _utf8(name):
                unnamed.append(_display(rel))
                continue
            if spec.match_file(rel):
                continue
            source = rel
            if os.path.islink(full):
                target = _inside(os.path.realpath(full), root)
                if target is None:
                    links.append(f"{rel} -> {os.readlink(full)}")
                    continue
                source = target
            try:
                info = os.stat(os.path.join(root, source))
            except OSError:
                continue  # a link to nothing, or gone already
            if not stat.S_ISREG(info.st_mode):
                continue  # a FIFO, socket or device is not code
            flagged = [p for p in dict.fromkeys((rel, source)) if secret.match_file(p.lower())]
            if any(not allowed.match_file(p) for p in flagged):
                secrets.append(rel if source == rel else f"{rel} -> {source}")
                continue
            if flagged:
                shipped.append(rel)
            files.append(CodeFile(path=rel, size=info.st_size, source="" if source == rel else source,
                                  mtime_ns=info.st_mtime_ns))
            if info.st_nlink > 1:
                inodes.setdefault((info.st_dev, info.st_ino), (info.st_nlink, set()))[1].add(source)
    # a file with more names than the folder holds has a name outside it
    hard = sorted(min(names) for count, names in inodes.values() if count > len(names))
    return Scan(files=tuple(sorted(files, key=lambda f: f.path)), secrets=tuple(sorted(secrets)),
                links=tuple(sorted(links)), unnamed=tuple(sorted(unnamed)), replaced=tuple(found["replaced"]),
                unreadable_lines=tuple(found["bad"]), shipped_secrets=tuple(shipped), hard_links=tuple(hard))


def scan_folder(folder: Path, ship_secrets: Sequence[str] = (),
                warn: Optional[Callable[[str], None]] = None) -> tuple[CodeFile, ...]:
    """The files of ``folder`` that ship (see :func:`scan`), sorted by path; what was left out is
    told to ``warn`` when given."""
    found = scan(folder, ship_secrets)
    for message in found.warnings() if warn else ():
        warn(message)
    return found.files
