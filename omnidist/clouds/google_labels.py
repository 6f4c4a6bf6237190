"""Google Cloud's label rules, shared by the two Google backends (Vertex AI and AI Platform),
and the rewrite of free-form tags (Azure ML allows any) into valid labels for ``migrate``.

The rules (Google Cloud "labels" requirements): a key is 1-63 characters, starts with a lowercase
letter or an international (caseless) letter, then holds lowercase or international letters,
digits, ``_`` and ``-``; a value is 0-63 characters of the same set; at most 64 labels. A submit
adds one label of its own (:data:`REQUEST_ID_LABEL`), so a job may carry 63.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import attrs

from omnidist.backend.values import REQUEST_ID_LABEL
from omnidist.errors import Problem, ValidationError

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


@functools.lru_cache(maxsize=4096)  # a sweep checks the same few labels on every job
def valid_key(key: str) -> bool:
    """Whether ``key`` is a valid Google Cloud label key."""
    return 0 < len(key) <= MAX_LENGTH and _starts_key(key[0]) and all(map(_allowed, key))


@functools.lru_cache(maxsize=4096)
def valid_value(value: str) -> bool:
    """Whether ``value`` is a valid Google Cloud label value (empty is valid)."""
    return len(value) <= MAX_LENGTH and all(map(_allowed, value))


def _clean(text: str) -> str:
    return "".join(c if _allowed(c) else "_" for c in text.lower())


def to_key(tag: str) -> str:
    """The label key a free-form tag key becomes: lowercased, other characters as ``_``, a
    ``tag_`` prefix when it does not start with a letter, cut to 63 characters."""
    key = _clean(tag)
    if not key or not _starts_key(key[0]):
        key = "tag_" + key
    return key[:MAX_LENGTH]


def to_value(tag: str) -> str:
    """The label value a free-form tag value becomes: lowercased, other characters as ``_``, cut
    to 63 characters."""
    return _clean(tag)[:MAX_LENGTH]


def _key_problem(key: str) -> str:
    fix = f"; rename it, e.g. {to_key(key)!r}"
    if len(key) > MAX_LENGTH:
        return f"the key has {len(key)} characters, {KEY_RULE}{fix}"
    if not key or not _starts_key(key[0]):
        return f"the key does not start with a lowercase letter: {KEY_RULE}{fix}"
    bad = "".join(sorted({c for c in key if not _allowed(c)}))
    return f"the key holds {bad!r}: {KEY_RULE}{fix}"


def _value_problem(value: str) -> str:
    fix = f"; write it as {to_value(value)!r}"
    if len(value) > MAX_LENGTH:
        return f"the value has {len(value)} characters, {VALUE_RULE}{fix}"
    bad = "".join(sorted({c for c in value if not _allowed(c)}))
    return f"the value holds {bad!r}: {VALUE_RULE}{fix}"


def problems(labels: Mapping[str, str]) -> list[Problem]:
    """Every way ``labels`` breaks Google Cloud's label rules, each at ``labels.KEY`` (empty when valid)."""
    found: list[Problem] = []
    if len(labels) > MAX_JOB_LABELS:
        found.append(Problem("labels", f"{len(labels)} labels; a Google Cloud job carries at most {MAX_LABELS} and "
                                       f"omnidist adds {REQUEST_ID_LABEL}: keep at most {MAX_JOB_LABELS}"))
    for key, value in labels.items():
        where = f"labels.{key}"
        if key == REQUEST_ID_LABEL:
            found.append(Problem(where, "reserved: omnidist sets this label when it submits (to find the job a "
                                        "retried create made); use another key"))
        elif not valid_key(key):
            found.append(Problem(where, _key_problem(key)))
        if not valid_value(value):
            found.append(Problem(where, _value_problem(value)))
    return found


def check_labels(labels: Mapping[str, str]) -> None:
    """Refuse labels a Google Cloud API would reject (both Google compilers call this).

    Raises:
        ValidationError: naming ``labels.KEY``, the rule broken and a valid replacement.
    """
    found = problems(labels)
    if found:
        raise ValidationError(found)


@attrs.frozen
class Rewrite:
    """One tag that had to change to become a Google Cloud label (``key``/``value`` are ``None``
    when it was dropped: more tags than a job can carry)."""

    tag: str
    tag_value: str
    key: str | None
    value: str | None


def rewrite(tags: Mapping[str, str]) -> tuple[dict[str, str], list[Rewrite]]:
    """Free-form tags as valid Google Cloud labels, and each tag that changed on the way.

    Valid tags stay as they are; others become :func:`to_key`/:func:`to_value`. Two tags that
    would become one key are told apart by a short hash of the original key; tags beyond
    :data:`MAX_JOB_LABELS` are dropped (in the given order).
    """
    labels: dict[str, str] = {}
    changes: list[Rewrite] = []
    fine = {k for k, v in tags.items() if k != REQUEST_ID_LABEL and valid_key(k) and valid_value(v)}
    for tag, value in tags.items():
        key = tag if tag in fine else to_key(tag)
        if key == REQUEST_ID_LABEL or key in labels or (key != tag and key in fine):
            import hashlib  # only when a tag is rewritten: start-up does not pay for it

            digest = hashlib.sha1(tag.encode("utf-8")).hexdigest()[:6]
            key = f"{key[:MAX_LENGTH - 7]}_{digest}"
        new_value = value if tag in fine else to_value(value)
        if len(labels) >= MAX_JOB_LABELS:
            changes.append(Rewrite(tag, value, None, None))
            continue
        labels[key] = new_value
        if (key, new_value) != (tag, value):
            changes.append(Rewrite(tag, value, key, new_value))
    return labels, changes
