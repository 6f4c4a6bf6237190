"""What a code archive never ships, and how it picks the rest: links out of the folder are left out
and named (never followed), well-known secret files are left out and listed unless the job's
``ship_secrets`` names them, ignore files are read as git reads them (nested ones included, lines
git reads as matching nothing match nothing), a name that is not UTF-8 is left out, and a file that
changes while it is packed is an error naming it, with no temporary archive left behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omnidist.submission import code_files, packaging


def shipped(folder: Path, **kwargs) -> list[str]:
    return [f.path for f in code_files.scan(folder, **kwargs).files]


def archive_names(package: packaging.CodePackage) -> dict[str, bytes]:
    with tarfile.open(package.archive) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


@pytest.fixture
def src(tmp_path) -> Path:
    folder = tmp_path / "src"
    (folder / "trainer").mkdir(parents=True)
    (folder / "trainer" / "task.py").write_text("print('train')\n")
    return folder


# --- links -------------------------------------------------------------------------------------------

def test_a_link_out_of_the_folder_is_left_out_named_and_never_read(src, tmp_path):
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:secret\n")
    (src / "x").symlink_to(outside)
    (src / "keys").symlink_to(tmp_path, target_is_directory=True)
    (src / "etc").symlink_to("/etc/passwd")
    found = code_files.scan(src)
    assert [f.path for f in found.files] == ["trainer/task.py"]
    assert found.links == ("etc -> /etc/passwd", f"keys/ -> {tmp_path}", f"x -> {outside}")
    warnings: list[str] = []
    package = packaging.pack(src, warn=warnings.append)
    try:
        assert b"root:x" not in b"".join(archive_names(package).values())
    finally:
        package.remove()
    assert any("links that leave the code folder (etc -> /etc/passwd" in w for w in warnings), warnings


def test_a_link_inside_the_folder_ships_its_target_bytes_under_its_name(src):
    (src / "trainer" / "alias.py").symlink_to("task.py")
    (src / "up").symlink_to("trainer", target_is_directory=True)  # a folder link is not followed
    package = packaging.pack(src)
    try:
        assert archive_names(package)["trainer/alias.py"] == b"print('train')\n"
        assert "up/task.py" not in archive_names(package)
    finally:
        package.remove()


def test_a_link_to_a_secret_inside_is_a_secret(src):
    (src / ".env").write_text("TOKEN=abc\n")
    (src / "config.txt").symlink_to(".env")
    found = code_files.scan(src)
    assert found.secrets == (".env", "config.txt -> .env")
    assert "config.txt" not in [f.path for f in found.files]


# --- secrets ---------------------------------------------------------------------------------------

SECRETS = [".env", ".env.production", "prod.env", "id_rsa", "deploy/id_ed25519", "certs/server.pem", "tls.key",
           "credentials.json", "client_secret_123.json", ".aws/credentials", ".aws/config", ".ssh/id_rsa",
           ".ssh/known_hosts", ".netrc", ".npmrc", ".pypirc", ".git-credentials", ".docker/config.json",
           ".kube/config", "terraform.tfstate", "store.p12"]
NOT_SECRETS = [".env.example", "id_rsa.pub", "keys.py", "environment.yml", "credentials.py", "README.md"]


def test_well_known_secret_files_are_left_out_and_listed(src):
    for name in SECRETS + NOT_SECRETS:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("s3cr3t-value\n")
    found = code_files.scan(src)
    assert sorted(found.secrets) == sorted(SECRETS)
    assert sorted(f.path for f in found.files) == sorted([*NOT_SECRETS, "trainer/task.py"])
    (warning,) = [w for w in found.warnings() if "secrets" in w]
    assert all(name in warning for name in SECRETS) and "ship_secrets" in warning


def test_ship_secrets_ships_the_files_it_names_and_says_so(src):
    (src / ".env").write_text("A=1\n")
    (src / "certs").mkdir()
    (src / "certs" / "ca.pem").write_text("pem\n")
    (src / "id_rsa").write_text("key\n")
    found = code_files.scan(src, ship_secrets=[".env", "certs/*.pem"])
    assert [f.path for f in found.files] == [".env", "certs/ca.pem", "trainer/task.py"]
    assert found.secrets == ("id_rsa",)
    assert any("shipping secret-looking files because ship_secrets names them: .env, certs/ca.pem" in w
               for w in found.warnings())


def test_the_jobs_ship_secrets_reaches_the_archive(src, tmp_path):
    from omnidist.model.job import job_from_dict

    (src / ".env").write_text("A=1\n")
    job = job_from_dict({"name": "a", "framework": "pytorch", "code": "./src", "primary": {},
                         "ship_secrets": [".env"]}, source=str(tmp_path / "job.yaml"))
    assert job.ship_secrets == (".env",) and job.to_dict()["ship_secrets"] == [".env"]
    package = packaging.pack(src, ship_secrets=job.ship_secrets)
    try:
        assert ".env" in archive_names(package)
    finally:
        package.remove()
    package = packaging.pack(src)
    try:
        assert ".env" not in archive_names(package)
    finally:
        package.remove()


# --- ignore files as git reads them --------------------------------------------------------------------

def test_a_nested_gitignore_is_honoured(src):
    (src / "data").mkdir()
    for name in ("data/a.bin", "data/keep.bin", "data/raw.csv", "top.bin", "trainer/raw.csv", "trainer/out/x"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("x")
    (src / ".gitignore").write_text("*.bin\n")
    (src / "data" / ".gitignore").write_text("!keep.bin\n/raw.csv\n")
    (src / "trainer" / ".gitignore").write_text("out/\n")
    assert shipped(src) == [".gitignore", "data/.gitignore", "data/keep.bin", "trainer/.gitignore",
                            "trainer/raw.csv", "trainer/task.py"]


def test_an_amlignore_replacing_the_gitignore_is_said(src):
    (src / ".gitignore").write_text("*.py\n")
    (src / ".amlignore").write_text("nothing\n")
    found = code_files.scan(src)
    assert "trainer/task.py" in [f.path for f in found.files]
    assert any(".amlignore decides what ships from the code folder; the .gitignore beside it is not read" in w
               for w in found.warnings())


@pytest.mark.parametrize("line", ["!", "foo\\", "[z-a]", "a[", "\\", "!!x", "/"])
def test_ignore_lines_git_accepts_never_crash(src, line):
    (src / ".gitignore").write_text(f"{line}\n*.log\n")
    (src / "x.log").write_text("x")
    found = code_files.scan(src)
    assert "x.log" not in [f.path for f in found.files] and "trainer/task.py" in [f.path for f in found.files]
    packaging.pack(src).remove()


def test_a_name_that_is_not_utf8_is_left_out_and_named(src):
    bad = os.path.join(os.fsencode(src), b"caf\xe9.py")
    with open(bad, "wb") as fh:
        fh.write(b"x")
    found = code_files.scan(src)
    assert found.unnamed == ("caf\\xe9.py",)
    assert any("not UTF-8 (caf\\xe9.py)" in w for w in found.warnings())
    packaging.pack(src).remove()


def git_ships(folder: Path) -> list[str]:
    """What git would commit from ``folder``: its untracked, not ignored files (``.git`` aside)."""
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    out = subprocess.run(["git", "-C", str(folder), "ls-files", "--others", "--exclude-standard", "-z"],
                         check=True, capture_output=True).stdout
    shutil.rmtree(folder / ".git")
    return sorted(p for p in out.decode().split("\0") if p)


PATTERNS = ["*.log", "!keep.log", "build/", "/top.txt", "sub/*.txt", "**/deep.txt", "*.txt", "!sub/", "d?ta",
            "[ab].log", "x/**/y.txt", "# note", "", "!*.txt", "sub", "/sub/a.log"]
FILES = ["a.log", "b.log", "keep.log", "top.txt", "sub/top.txt", "sub/a.log", "sub/keep.log", "sub/deep.txt",
         "build/out.txt", "sub/build/o.log", "data", "x/y.txt", "x/z/y.txt", "sub/x/q/y.txt", "sub/sub/a.log"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(root=st.lists(st.sampled_from(PATTERNS), max_size=4), nested=st.lists(st.sampled_from(PATTERNS), max_size=4))
def test_the_files_that_ship_are_the_files_git_keeps(root, nested):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "code"
        for name in FILES:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("x")
        (folder / ".gitignore").write_text("\n".join(root) + "\n")
        (folder / "sub" / ".gitignore").write_text("\n".join(nested) + "\n")
        expected = git_ships(folder)
        assert shipped(folder) == expected, (root, nested)


# --- changes while packing ----------------------------------------------------------------------------

def leftovers() -> set[str]:
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("omnidist-code-")}


@pytest.mark.parametrize("change", ["grow", "shrink", "touch", "remove", "fifo"])
def test_a_file_that_changes_while_packed_is_an_error_naming_it(src, monkeypatch, change):
    scan = code_files.scan_folder

    def scan_then_change(folder, *args, **kwargs):
        target = src / "data.txt"
        if target.exists() and not target.is_file():
            target.unlink()
        target.write_text("0123456789")
        files = scan(folder, *args, **kwargs)
        if change == "grow":
            target.write_text("0123456789abc")
        elif change == "shrink":
            target.write_text("01")
        elif change == "touch":
            os.utime(target, ns=(1, 1))
        elif change == "remove":
            target.unlink()
        else:
            target.unlink()
            os.mkfifo(target)
        return files

    monkeypatch.setattr(packaging, "scan_folder", scan_then_change)
    before = leftovers()
    with pytest.raises(packaging.ChangedWhilePacking) as caught:
        packaging.pack(src)
    assert f"{src / 'data.txt'} " in str(caught.value) and caught.value.exit_code == 2
    assert leftovers() == before, "no temporary archive left behind"
    with pytest.raises(packaging.ChangedWhilePacking):
        packaging.stage(src)
    assert leftovers() == before, "no temporary copy left behind"


def test_a_file_that_grows_while_it_is_read_is_an_error(src, monkeypatch):
    target = src / "big.bin"
    target.write_bytes(b"x" * (3 << 20))
    real_read = os.read
    grown = []

    def read(fd, size):
        data = real_read(fd, size)
        if not grown:
            grown.append(True)
            with open(target, "ab") as fh:
                fh.write(b"more")
        return data

    monkeypatch.setattr(packaging.os, "read", read)
    with pytest.raises(packaging.ChangedWhilePacking, match="big.bin changed"):
        packaging.pack(src)


# --- the copy a folder-uploading SDK gets ----------------------------------------------------------------

def test_stage_copies_exactly_what_ships(src, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("outside")
    (src / "link").symlink_to(outside)
    (src / ".env").write_text("A=1\n")
    (src / ".gitignore").write_text("*.log\n")
    (src / "sub").mkdir()
    (src / "sub" / ".gitignore").write_text("!keep.log\n")
    (src / "sub" / "keep.log").write_text("kept")
    (src / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "run.sh", 0o755)
    staged = packaging.stage(src)
    try:
        copied = sorted(str(p.relative_to(staged.path)) for p in staged.path.rglob("*") if p.is_file())
        assert copied == [".amlignore", ".gitignore", "run.sh", "sub/.gitignore", "sub/keep.log", "trainer/task.py"]
        assert (staged.path / ".amlignore").read_bytes() == b"", "the SDK's root-only rule leaves nothing out"
        assert os.access(staged.path / "run.sh", os.X_OK)
        assert staged.path.name == "src"
        package = packaging.pack(src)
        package.remove()
        assert staged.sha256 == package.sha256, "the same content hash as the archive"
    finally:
        staged.remove()
    assert not staged.path.exists()


@pytest.mark.parametrize("change", ["touch", "remove"])
def test_a_file_refused_at_open_closes_its_descriptor_once(src, change):
    """A file found changed when it is opened is closed then and never again: a second close, when
    the object is collected, would close whatever took its number (a socket of the SDK's pool)."""
    import gc

    (target := src / "data.txt").write_text("0123456789")
    (item,) = [f for f in code_files.scan_folder(src) if f.read_from == "data.txt"]
    if change == "touch":
        os.utime(target, ns=(1, 1))
    else:
        target.unlink()
    with pytest.raises(packaging.ChangedWhilePacking) as caught:  # its traceback holds the refused object
        packaging._Source(src, item)
    reader, writer = os.pipe()  # the number the refused file had, when it had one
    try:
        del caught
        gc.collect()  # the refused object's finalizer runs
        os.fstat(reader), os.fstat(writer)
    finally:
        os.close(reader), os.close(writer)

@pytest.mark.parametrize("name", [
    ".ENV", "ID_RSA", "server.PEM", "Credentials.json", "Secrets.YAML",  # any case
    ".ssh", ".aws", ".boto", ".s3cfg", "kubeconfig.yaml", "id_rsa.bak", "prod.tfvars", "vars.tfvars.json",
    "secrets.yaml", "gcloud/legacy_credentials/me@example.com/adc.json", "conf/adc.json", "deploy/.kube",
])
def test_more_credential_files_are_secrets_whatever_their_case(src, name):
    path = src / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("secret")
    found = code_files.scan(src)
    assert name not in [f.path for f in found.files] and name in found.secrets


@pytest.mark.parametrize("name", ["id_rsa.pub", "ID_ED25519.PUB", ".env.example", "secrets_test.py", "keys.py"])
def test_public_halves_templates_and_code_still_ship(src, name):
    (src / name).write_text("x")
    assert name in [f.path for f in code_files.scan(src).files]


def test_a_hard_link_to_a_file_outside_the_folder_is_warned_about(src, tmp_path):
    outside = tmp_path / "elsewhere" / "token.txt"
    outside.parent.mkdir()
    outside.write_text("s3cret")
    os.link(outside, src / "notes.txt")
    os.link(src / "trainer" / "task.py", src / "task_copy.py")  # two names inside the folder: not a link out
    found = code_files.scan(src)
    assert found.hard_links == ("notes.txt",)
    assert any("hard links to a file outside the code folder: notes.txt" in w for w in found.warnings())
