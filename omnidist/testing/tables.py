"""A plugin's tables module checked as DESIGN "Style" asks: each public table a sorted literal
with a one-line docstring (inverse tables are derived, so they are not literals)."""

from __future__ import annotations

import ast
import inspect
from types import ModuleType


def table_problems(module: ModuleType) -> list[str]:
    """What is wrong with ``module``'s public tables: an ``UPPER_CASE`` name assigned a literal
    dict that is not sorted by key, or any public ``UPPER_CASE`` name without a docstring."""
    body = ast.parse(inspect.getsource(module)).body
    problems = []
    for i, node in enumerate(body):
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        name = getattr(target, "id", "")
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or not name.isupper() or name.startswith("_"):
            continue
        documented = i + 1 < len(body) and isinstance(body[i + 1], ast.Expr) \
            and isinstance(getattr(body[i + 1], "value", None), ast.Constant)
        if not documented:
            problems.append(f"{name} has no docstring")
        value = getattr(module, name)
        if isinstance(node.value, ast.Dict) and list(value) != sorted(value):
            problems.append(f"{name} is not sorted by key")
    return problems
