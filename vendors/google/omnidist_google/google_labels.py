"""Google Cloud's label rules, shared by the two Google backends (Vertex AI and AI Platform),
and the rewrite of free-form tags (Azure ML allows any) into valid labels for ``migrate``.

The rules (Google Cloud "labels" requirements): a key is 1-63 characters, starts with a lowercase
letter or an international (caseless) letter, then holds lowercase or international letters,
digits, ``_`` and ``-``; a value is 0-63 characters of the same set; at most 64 labels. A submit
adds one label of its own (:data:`REQUEST_ID_LABEL`), so a job may carry 63.
"""

from __future__ import annotations

from collections.abc import Mapping

from omnidist.kit import REQUEST_ID_LABEL, LabelRules, Rewrite

__all__ = ["GOOGLE", "MAX_JOB_LABELS", "RULES", "Rewrite", "check_labels", "problems", "rewrite", "to_key",
           "to_value", "valid_key", "valid_value"]

MAX_LABELS = 64
"""Labels one Google Cloud resource can carry."""

MAX_LENGTH = 63
"""Characters in a label key or value."""

MAX_JOB_LABELS = MAX_LABELS - 1
"""Labels a job may set: one of the 64 is :data:`REQUEST_ID_LABEL`."""

KEY_RULE = ("label keys are 1-63 lowercase letters, digits, '_' or '-' (international letters "
            "allowed), starting with a lowercase letter")
VALUE_RULE = "label values are 0-63 lowercase letters, digits, '_' or '-' (international letters allowed)"
RULES = ("Google Cloud labels hold lowercase letters, digits, '_' and '-' (international letters too), "
         "at most 63 each, and keys start with a letter")


def _allowed(char: str) -> bool:
    """A lowercase or caseless (international) letter, a digit, ``_`` or ``-``."""
    return char in "_-" or char.isdecimal() or (char.isalpha() and char.lower() == char)


def _starts_key(char: str) -> bool:
    return char.isalpha() and char.lower() == char


GOOGLE = LabelRules(name="Google Cloud labels", max_labels=MAX_LABELS, max_key=MAX_LENGTH, max_value=MAX_LENGTH,
                    allowed=_allowed, starts_key=_starts_key, lowercase=True, reserved=REQUEST_ID_LABEL,
                    key_start="a lowercase letter",
                    key_rule=KEY_RULE, value_rule=VALUE_RULE, summary=RULES)
"""Google Cloud's label rules, as data (the Google backends' ``MigrationPolicy.label_rules``)."""

valid_key = GOOGLE.valid_key
valid_value = GOOGLE.valid_value
to_key = GOOGLE.to_key
to_value = GOOGLE.to_value
problems = GOOGLE.problems
rewrite = GOOGLE.rewrite


def check_labels(labels: Mapping[str, str]) -> None:
    """Refuse labels a Google Cloud API would reject (both Google compilers call this).

    Raises:
        ValidationError: naming ``labels.KEY``, the rule broken and a valid replacement.
    """
    GOOGLE.check(labels)
