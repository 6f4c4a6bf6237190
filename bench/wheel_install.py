"""A throwaway environment with omnidist installed the way users install it: from wheels.

An editable install (what ``make setup`` makes for development) adds import hooks to every Python
start, the bare interpreter's included, so start-up ratios measured in ``.venv`` measure the hooks
too. This module builds wheels of the core, every vendor kit and every plugin in the checkout, makes a fresh venv,
installs them there without their SDKs (compiling needs none), and copies in the core's own
dependencies, transitively, file by file from the running environment (the files their wheels
installed there, listed in their ``RECORD``), so no package index is needed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
def _requirements(name: str) -> set[str]:
    """``name`` and what it needs to run, transitively (extras and other platforms' markers left out)."""
    from packaging.requirements import Requirement

    found, todo = set(), [name]
    while todo:
        dist = metadata.distribution(todo.pop())
        if dist.metadata["Name"].lower() in found:
            continue
        found.add(dist.metadata["Name"].lower())
        for line in dist.requires or ():
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def _plugins() -> list[Path]:
    """The vendor kits and the backends in the checkout (the backends depend on the kits)."""
    return [*sorted(p.parent for p in (ROOT / "vendors").glob("*/pyproject.toml")),
            *sorted(p.parent for p in (ROOT / "backends").glob("*/pyproject.toml"))]


def _copy_distribution(name: str, site: Path) -> None:
    """Copy an installed distribution's files (its RECORD) into ``site``."""
    dist = metadata.distribution(name)
    for file in dist.files or ():
        source = Path(dist.locate_file(file))
        if ".." in file.parts or not source.is_file():  # scripts outside site-packages are not needed
            continue
        target = site / file
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def build(workdir: Path | None = None) -> Path:
    """Make the environment; returns its ``bin`` folder (``python`` and the ``omnidist`` script)."""
    root = Path(workdir or tempfile.mkdtemp(prefix="omnidist-wheel-"))
    wheels, venv = root / "wheels", root / "venv"
    sources = [ROOT, *_plugins()]
    scratch = [s / "build" for s in sources if not (s / "build").exists()]  # setuptools builds in the tree
    try:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        "--wheel-dir", str(wheels), *map(str, sources)], check=True, stdout=subprocess.DEVNULL)
    finally:
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", *map(str, sorted(wheels.glob("*.whl")))], check=True, stdout=subprocess.DEVNULL)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    for name in sorted(_requirements("omnidist") - {"omnidist"}):
        _copy_distribution(name, site)
    assert sysconfig.get_paths()["purelib"] != str(site)
    return venv / "bin"


if __name__ == "__main__":  # pragma: no cover - a manual check: prints where the environment is
    print(build())
