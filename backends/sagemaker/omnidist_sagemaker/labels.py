"""SageMaker's tag rules, as the kit's label-rules data: what ``labels`` become in ``Tags``.

A tag key is 1-128 characters, a value 0-256, both of Unicode letters, digits, spaces and
``_ . : / = + - @``; keys starting with ``aws:`` are AWS's own; a resource carries at most 50 tags
(the model's ``TagKey``/``TagValue`` patterns and ``TagList`` maximum). A submit adds
``omnidist-request-id``, so a job may carry 49.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from omnidist.kit import REQUEST_ID_LABEL, LabelRules, ValidationError
from omnidist_sagemaker.tables import LIMITS

SYMBOLS = "_.:/=+-@"


def _allowed(char: str) -> bool:
    """``[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]``: a letter, a space separator, a number or one of the symbols."""
    import unicodedata

    return char in SYMBOLS or unicodedata.category(char)[0] in "LNZ"


TAGS = LabelRules(
    name="SageMaker tags", max_labels=LIMITS["tags"], max_key=128, max_value=256, allowed=_allowed,
    starts_key=_allowed, replacement="_", key_prefix="tag_", reserved=REQUEST_ID_LABEL, reserved_prefixes=("aws:",),
    key_start="a letter, digit or symbol",
    key_rule="tag keys are 1-128 letters, digits, spaces or _.:/=+-@, not starting with aws:",
    value_rule="tag values are 0-256 letters, digits, spaces or _.:/=+-@",
    summary="SageMaker tags hold letters, digits, spaces and _.:/=+-@ (keys 128, values 256 at most)")
"""SageMaker's tag rules (the backend's ``MigrationPolicy.label_rules``)."""


def tags(labels: Mapping[str, str], source: Optional[str] = None) -> list[dict[str, Any]]:
    """``Tags`` for the job's labels, checked against :data:`TAGS` (exit 2 naming the label)."""
    problems = TAGS.problems(labels)
    if problems:
        raise ValidationError(problems, source=source)
    return [{"Key": key, "Value": value} for key, value in labels.items()]
