"""What ``make gpu-check`` needs of the Python it runs on, standard library only (it runs before
anything is installed): which interpreter has a CUDA build of torch, and what a venv made from it
still lacks to install omnidist offline and run the GPU tests.

    python3 bench/gpu_env.py find PYTHON…     # the first of them whose torch sees a GPU (exit 1: none)
    .venv-gpu/bin/python bench/gpu_env.py missing   # requirement specs this interpreter lacks, one line
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

NEEDED: dict[str, str] = {
    "attrs": "attrs>=23.1",
    "cattrs": "cattrs>=23.2",
    "click": "click>=8.1",
    "hypothesis": "hypothesis>=6.100",
    "pathspec": "pathspec>=0.12",
    "pytest": "pytest>=8",
    "PyYAML": "PyYAML>=6.0",
    "setuptools": "setuptools>=77",
    "tenacity": "tenacity>=8.2",
    "tqdm": "tqdm>=4.66",
}
"""Distribution -> the requirement: omnidist's own (pyproject.toml), pytest and Hypothesis for the
tests, and the setuptools that builds omnidist (an editable install without build isolation)."""

PROBE = "import sys, torch; sys.exit(not torch.cuda.is_available())"


def missing() -> list[str]:
    """The requirements of :data:`NEEDED` this interpreter does not meet (absent, or older than the
    floor, comparing the numeric release parts)."""
    found = []
    for name, spec in NEEDED.items():
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            found.append(spec)
            continue
        if _release(version) < _release(spec.split(">=", 1)[1]):
            found.append(spec)
    return found


def _release(version: str) -> tuple[int, ...]:
    """``"8.1.7"`` -> ``(8, 1, 7)`` (a part that is not a number counts 0: ``6.0rc1`` -> ``(6, 0)``)."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split(".")[:3])


def find(candidates: list[str]) -> str | None:
    """The first interpreter whose torch is a CUDA build that sees a GPU."""
    for python in candidates:
        try:
            if subprocess.run([python, "-c", PROBE], capture_output=True, timeout=120).returncode == 0:
                return python
        except (OSError, subprocess.SubprocessError):
            continue
    return None


def main(argv: list[str]) -> int:
    if argv[:1] == ["find"]:
        python = find(argv[1:])
        if python is None:
            print("no Python here has a CUDA build of torch that sees a GPU; set GPU_PYTHON=/path/to/python",
                  file=sys.stderr)
            return 1
        print(python)
        return 0
    if argv[:1] == ["missing"]:
        print(" ".join(missing()))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
