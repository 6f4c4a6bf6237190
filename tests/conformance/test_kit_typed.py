"""The kit is typed: ``omnidist/kit.py``'s lazy ``_NAMES`` table is mirrored, name for name and group
for group, by its ``if TYPE_CHECKING:`` import block, so type checkers and editors see each name's
real type while a plugin still imports only what it uses.

The block is derived from the table, never written by hand: after changing ``_NAMES`` (adding a
name, removing a group), regenerate it with ``python tests/conformance/test_kit_typed.py --write``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parents[2] / "omnidist" / "kit.py"
OPEN = "if TYPE_CHECKING:"
HEADER = "    # The same names as _NAMES, for type checkers and editors; generated from it (tests/conformance/test_kit_typed.py)."


def table_lines(source: str) -> list[str]:
    """The lines inside the ``_NAMES = {...}`` literal: its group comments and its entries."""
    lines = source.splitlines()
    start = lines.index("_NAMES: dict[str, str] = {")
    end = lines.index("}", start)
    return [line.strip() for line in lines[start + 1:end] if line.strip()]


def render(source: str) -> str:
    """The ``if TYPE_CHECKING:`` block ``source``'s ``_NAMES`` table calls for: one import per name,
    in the table's order, under the table's group comments (so dropping a group drops one run of lines)."""
    out = [OPEN, HEADER]
    for line in table_lines(source):
        if line.startswith("#"):
            out.append(f"    {line}")
            continue
        entry = ast.literal_eval("{" + line + "}")
        ((name, where),) = entry.items()
        module, _, attribute = where.partition(":")
        renamed = f" as {name}" if attribute and attribute != name else ""
        out.append(f"    from {module} import {attribute or name}{renamed}")
    return "\n".join(out) + "\n"


def written_block(source: str) -> str:
    """The ``if TYPE_CHECKING:`` block as it stands in ``source`` (up to the first blank line)."""
    lines = source.splitlines()
    start = lines.index(OPEN)
    end = lines.index("", start)
    return "\n".join(lines[start:end]) + "\n"


def typed_names(source: str) -> dict[str, str]:
    """The names the block imports, read with :mod:`ast`, in ``_NAMES``'s own notation."""
    tree = ast.parse(source)
    (block,) = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module, ast.unparse(node)
        for alias in node.names:
            name = alias.asname or alias.name
            assert name not in found, f"{name} imported twice under TYPE_CHECKING"
            found[name] = node.module if name == alias.name else f"{node.module}:{alias.name}"
    return found


def test_the_type_checking_block_mirrors_the_table_exactly():
    source = KIT.read_text()
    assert written_block(source) == render(source), (
        "omnidist/kit.py: its TYPE_CHECKING block differs from _NAMES; regenerate it with "
        "`python tests/conformance/test_kit_typed.py --write`")


def test_the_block_imports_the_same_names_from_the_same_places():
    import omnidist.kit as kit

    names = typed_names(KIT.read_text())
    assert list(names) == list(kit._NAMES)
    assert names == kit._NAMES


def test_a_name_missing_or_renamed_in_the_block_is_found():
    source = KIT.read_text()
    block = written_block(source).splitlines()
    first = next(line for line in block if line.lstrip().startswith("from "))
    broken = source.replace(first + "\n", "", 1)
    assert written_block(broken) != render(broken)
    renamed = next(line for line in block if line.lstrip().startswith("from ") and " as " in line)
    changed = source.replace(renamed, renamed + "_elsewhere", 1)
    assert typed_names(changed) != typed_names(source)


def write() -> None:
    """Rewrite the kit's block from its table."""
    source = KIT.read_text()
    KIT.write_text(source.replace(written_block(source), render(source), 1))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/conformance/test_kit_typed.py --write")
    write()
