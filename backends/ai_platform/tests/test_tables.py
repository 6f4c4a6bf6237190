"""The tables: sorted, documented, inverses derived (DESIGN "Style" 2)."""

from __future__ import annotations

from omnidist.testing.tables import table_problems
from omnidist_ai_platform import catalog, tables


def test_every_table_is_sorted_and_documented():
    assert table_problems(tables) == []
    assert table_problems(catalog) == []


def test_derived_inverses():
    assert all(tables.ROLE_PREFIXES[role] == prefix for prefix, role in tables.ROLES_BY_PREFIX.items())
    assert all(catalog.ACCELERATOR_TYPES[catalog.PORTABLE_ACCELERATORS[v]] == v for v in catalog.PORTABLE_ACCELERATORS)
