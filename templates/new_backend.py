"""Make a new backend plugin from ``templates/backend``: ``python templates/new_backend.py NAME DEST``.

Copies the template's folder to ``DEST`` with its placeholder names replaced: ``skeleton`` (the
backend's name, its package ``omnidist_skeleton``, its distribution ``omnidist-skeleton``) by
``NAME``, ``Skeleton`` (class names, the cloud's display name) by ``NAME`` in CamelCase, and
``SKELETON`` (variable names) by ``NAME`` in capitals. Install the result with
``pip install -e DEST`` and the registry finds it by its entry point.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "backend"
PLACEHOLDER = "skeleton"
NAME = re.compile(r"^[a-z][a-z0-9_]{1,30}$")
SKIPPED = ("__pycache__", "*.egg-info", "build", ".mypy_cache")


def spellings(name: str) -> dict[str, str]:
    """Placeholder spelling -> the new backend's."""
    camel = "".join(part.capitalize() for part in name.split("_"))
    return {PLACEHOLDER.upper(): name.upper(), PLACEHOLDER.capitalize(): camel, PLACEHOLDER: name}


def generate(name: str, dest: Path) -> Path:
    """Write the backend ``name`` into ``dest`` (which must not exist); returns ``dest``.

    Raises:
        ValueError: ``name`` is not a lowercase identifier, or ``dest`` exists.
    """
    if not NAME.match(name):
        raise ValueError(f"{name!r}: a backend's name is a lowercase identifier (letters, digits, _), 2-31 long")
    if dest.exists():
        raise ValueError(f"{dest} exists: pick a new folder")
    renames = spellings(name)
    pattern = re.compile("|".join(map(re.escape, renames)))
    shutil.copytree(TEMPLATE, dest, ignore=shutil.ignore_patterns(*SKIPPED))
    for path in sorted(dest.rglob("*"), key=lambda p: len(p.parts), reverse=True):  # files before their folders
        if path.is_file():
            path.write_text(pattern.sub(lambda m: renames[m[0]], path.read_text(encoding="utf-8")), encoding="utf-8")
        if PLACEHOLDER in path.name:
            path.rename(path.with_name(pattern.sub(lambda m: renames[m[0]], path.name)))
    return dest


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the backend's name (a lowercase identifier: mycloud)")
    parser.add_argument("dest", type=Path, help="the folder to create (backends/mycloud)")
    args = parser.parse_args(argv)
    try:
        generate(args.name, args.dest)
    except ValueError as exc:
        print(f"new_backend: {exc}", file=sys.stderr)
        return 2
    print(f"{args.dest}: backend {args.name!r}; install it with `pip install -e {args.dest}`")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
