"""The tables: sorted, documented, inverses derived (DESIGN "Style" 2)."""

from __future__ import annotations

from omnidist.testing.tables import table_problems
from omnidist_azure_ml import catalog, tables


def test_every_table_is_sorted_and_documented():
    assert table_problems(tables) == []
    assert table_problems(catalog) == []


def test_derived_inverses():
    for kind, framework in tables.DISTRIBUTION_FRAMEWORKS.items():
        assert tables.FRAMEWORK_DISTRIBUTIONS[framework] == kind
    assert tables.DISTRIBUTION_FRAMEWORKS["tensorflow"].value == "tensorflow"  # the framework of the same name
