"""Label rules as data: what keys and values a cloud's job labels (tags) may hold, how free-form
tags are rewritten into valid ones, and the problems a compiler reports.

A backend whose cloud restricts labels declares a :class:`LabelRules` (its compiler checks job
labels with :meth:`LabelRules.check`; ``omnidist migrate`` rewrites the tags of a job moving to it
with :meth:`LabelRules.rewrite`, each rewrite a ``changed`` line). A vendor kit declares its
cloud's rules once for the backends that run there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Optional

import attrs

from omnidist.errors import Problem, ValidationError


@attrs.frozen
class Rewrite:
    """One tag that had to change to become a valid label (``key``/``value`` are ``None`` when it
    was dropped: more tags than a job can carry)."""

    tag: str
    tag_value: str
    key: Optional[str]
    value: Optional[str]


@attrs.frozen(kw_only=True)
class LabelRules:
    """One cloud's label rules.

    Attributes:
        name: what the cloud calls them, for messages (its ``labels`` or ``tags``).
        max_labels: labels one job can carry, omnidist's own :attr:`reserved` key included.
        max_key: characters in a key.
        max_value: characters in a value.
        allowed: whether a character may appear in a key or a value.
        starts_key: whether a character may start a key.
        lowercase: rewritten keys and values are lowercased.
        replacement: what a character that is not allowed becomes in a rewrite.
        key_prefix: put before a rewritten key that does not start with a :attr:`starts_key` character.
        reserved: the key omnidist sets itself when it submits (a job may not use it).
        reserved_prefixes: key prefixes the cloud keeps for itself (the vendor's own ``name:``).
        key_start: what a key starts with, in words.
        key_rule: the key rule in words.
        value_rule: the value rule in words.
        summary: both, for a migration report.
    """

    name: str
    max_labels: int
    max_key: int
    max_value: int
    allowed: Callable[[str], bool] = attrs.field(eq=False)
    starts_key: Callable[[str], bool] = attrs.field(eq=False)
    lowercase: bool = False
    replacement: str = "_"
    key_prefix: str = "tag_"
    reserved: str = ""
    reserved_prefixes: tuple[str, ...] = ()
    key_start: str = "a letter"
    key_rule: str = ""
    value_rule: str = ""
    summary: str = ""

    @property
    def max_job_labels(self) -> int:
        """Labels a job may set: one of :attr:`max_labels` is :attr:`reserved`."""
        return self.max_labels - (1 if self.reserved else 0)

    def valid_key(self, key: str) -> bool:
        """Whether ``key`` is a valid key."""
        return _valid_key(self, key)

    def valid_value(self, value: str) -> bool:
        """Whether ``value`` is a valid value (empty is valid)."""
        return _valid_value(self, value)

    def _clean(self, text: str) -> str:
        text = text.lower() if self.lowercase else text
        return "".join(c if self.allowed(c) else self.replacement for c in text)

    def to_key(self, tag: str) -> str:
        """The key a free-form tag key becomes."""
        key = self._clean(tag)
        if not key or not self.starts_key(key[0]) or key.startswith(self.reserved_prefixes):
            key = self.key_prefix + key
        return key[:self.max_key]

    def to_value(self, tag: str) -> str:
        """The value a free-form tag value becomes."""
        return self._clean(tag)[:self.max_value]

    def _key_problem(self, key: str) -> str:
        fix = f"; rename it, e.g. {self.to_key(key)!r}"
        if len(key) > self.max_key:
            return f"the key has {len(key)} characters, {self.key_rule}{fix}"
        if key.startswith(self.reserved_prefixes):
            return f"keys starting with {' or '.join(self.reserved_prefixes)} are the cloud's own{fix}"
        if not key or not self.starts_key(key[0]):
            return f"the key does not start with {self.key_start}: {self.key_rule}{fix}"
        bad = "".join(sorted({c for c in key if not self.allowed(c)}))
        return f"the key holds {bad!r}: {self.key_rule}{fix}"

    def _value_problem(self, value: str) -> str:
        fix = f"; write it as {self.to_value(value)!r}"
        if len(value) > self.max_value:
            return f"the value has {len(value)} characters, {self.value_rule}{fix}"
        bad = "".join(sorted({c for c in value if not self.allowed(c)}))
        return f"the value holds {bad!r}: {self.value_rule}{fix}"

    def problems(self, labels: Mapping[str, str]) -> list[Problem]:
        """Every way ``labels`` breaks the rules, each at ``labels.KEY`` (empty when valid)."""
        found: list[Problem] = []
        if len(labels) > self.max_job_labels:
            found.append(Problem("labels", f"{len(labels)} labels; a job carries at most {self.max_labels} "
                                           f"{self.name} and omnidist adds {self.reserved}: keep at most "
                                           f"{self.max_job_labels}"))
        for key, value in labels.items():
            where = f"labels.{key}"
            if self.reserved and key == self.reserved:
                found.append(Problem(where, "reserved: omnidist sets this label when it submits (to find the job a "
                                            "retried create made); use another key"))
            elif not self.valid_key(key):
                found.append(Problem(where, self._key_problem(key)))
            if not self.valid_value(value):
                found.append(Problem(where, self._value_problem(value)))
        return found

    def check(self, labels: Mapping[str, str]) -> None:
        """Refuse labels the cloud would reject.

        Raises:
            ValidationError: naming ``labels.KEY``, the rule broken and a valid replacement.
        """
        found = self.problems(labels)
        if found:
            raise ValidationError(found)

    def rewrite(self, tags: Mapping[str, str]) -> tuple[dict[str, str], list[Rewrite]]:
        """Free-form tags as valid labels, and each tag that changed on the way.

        Valid tags stay as they are; others become :meth:`to_key`/:meth:`to_value`. Two tags that
        would become one key are told apart by a short hash of the original key; tags beyond
        :attr:`max_job_labels` are dropped (in the given order).
        """
        labels: dict[str, str] = {}
        changes: list[Rewrite] = []
        fine = {k for k, v in tags.items() if k != self.reserved and self.valid_key(k) and self.valid_value(v)}
        for tag, value in tags.items():
            key = tag if tag in fine else self.to_key(tag)
            if key == self.reserved or key in labels or (key != tag and key in fine):
                import hashlib  # only when a tag is rewritten: start-up does not pay for it

                digest = hashlib.sha1(tag.encode("utf-8")).hexdigest()[:6]
                key = f"{key[:self.max_key - 7]}{self.replacement}{digest}"
            new_value = value if tag in fine else self.to_value(value)
            if len(labels) >= self.max_job_labels:
                changes.append(Rewrite(tag, value, None, None))
                continue
            labels[key] = new_value
            if (key, new_value) != (tag, value):
                changes.append(Rewrite(tag, value, key, new_value))
        return labels, changes


@functools.lru_cache(maxsize=4096)  # a sweep checks the same few labels on every job
def _valid_key(rules: LabelRules, key: str) -> bool:
    return (0 < len(key) <= rules.max_key and rules.starts_key(key[0]) and all(map(rules.allowed, key))
            and not key.startswith(rules.reserved_prefixes))


@functools.lru_cache(maxsize=4096)
def _valid_value(rules: LabelRules, value: str) -> bool:
    return len(value) <= rules.max_value and all(map(rules.allowed, value))
