"""The settings every cloud backend shares (retries, timeouts, polling), and the checks their
settings classes use (:func:`at_least`, :func:`one_of`, :func:`role_keys`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from omnidist.errors import ValidationError
from omnidist.model.limits import clipped_repr
from omnidist.model.roles import RoleName
from omnidist.model.spelling import close_matches


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """How hard a client tries: at most ``attempts`` calls within ``deadline`` seconds,
    waiting an exponentially growing, randomly jittered time between them (capped at
    ``max_wait``), or the server's ``Retry-After`` when it sent one (capped the same)."""

    attempts: int = 5
    deadline: float = 120.0
    initial_wait: float = 0.5
    max_wait: float = 20.0


DEFAULT_POLICY = RetryPolicy()


Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]
"""An attrs validator (the settings classes' checks raise :class:`~omnidist.errors.ValidationError`)."""


def at_least(minimum: float, *, strictly: bool = False) -> Validator:
    """A settings check: a number ``>= minimum`` (``>`` with ``strictly``)."""

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValidationError(f"must be a number, got {value!r}", path=attribute.name)
        if value < minimum or (strictly and value == minimum):
            raise ValidationError(f"must be {'>' if strictly else '>='} {minimum:g}, got {value}", path=attribute.name)

    return check


def one_of(*choices: str, ignore_case: bool = False) -> Validator:
    """A settings check: unset, or one of ``choices`` (in any case with ``ignore_case``)."""

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and (value.lower() if ignore_case else value) not in choices:
            raise ValidationError(f"{value!r} is not one of {', '.join(choices)}", path=attribute.name)

    return check


def role_keys(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A settings check: a mapping keyed by role names (``machine_types``), with a suggestion."""
    roles = [r.value for r in RoleName]
    for key in value:
        if key not in roles:
            close = close_matches(key, roles, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            raise ValidationError(f"not a role{hint} Roles: {', '.join(roles)}", path=f"{attribute.name}.{key}")


_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
"""Line breaks (every kind YAML knows), control characters and lone surrogates: no name, id, URL
or path a setting holds has one."""


def check_one_line(value: Any, path: str) -> None:
    """A name, id, URL or path as one line of printable text (in a mapping or list, each item):
    a value such as ``gpu-cluster\\nenv: …`` is refused naming the character, so it cannot reach a
    request, a header or a comment as two lines.

    Raises:
        ValidationError: at ``path``.
    """
    if isinstance(value, str):
        found = _NOT_ONE_LINE.search(value)
        if found:
            raise ValidationError(f"{clipped_repr(value)} holds {found[0]!r} at character {found.start() + 1}; a name "
                                  "or setting is one line of printable text", path=path)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_one_line(key, path)
            check_one_line(item, f"{path}.{key}" if isinstance(key, str) else path)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_one_line(item, f"{path}[{i}]")


@attrs.frozen(kw_only=True)
class ClientSettings:
    """The client keys every cloud backend's settings share (their settings classes inherit
    them, so a profile spells retries and timeouts the same way for every cloud).

    Attributes:
        retry_attempts: calls per operation, the first one included (transient errors only are retried).
        retry_deadline_s: stop retrying once this many seconds have passed since the first call.
        retry_initial_wait_s: scale of the first backoff (exponential, jittered; ``Retry-After`` wins).
        retry_max_wait_s: longest single wait between two attempts.
        request_timeout_s: how long one HTTP request may take (connect and read) before it is
            abandoned and, being transient, retried.
        poll_interval_s: seconds between status polls (``wait``, ``logs --follow``).
    """

    retry_attempts: int = attrs.field(default=5, validator=at_least(1))
    retry_deadline_s: float = attrs.field(default=120.0, validator=at_least(0, strictly=True))
    retry_initial_wait_s: float = attrs.field(default=0.5, validator=at_least(0))
    retry_max_wait_s: float = attrs.field(default=20.0, validator=at_least(0))
    request_timeout_s: float = attrs.field(default=60.0, validator=at_least(0, strictly=True))
    poll_interval_s: float = attrs.field(default=15.0, validator=at_least(0))

    def __attrs_post_init__(self) -> None:
        # Every backend's settings: a setting is one line of text (names, ids, URLs, paths).
        for field in attrs.fields(type(self)):
            check_one_line(getattr(self, field.name), field.name)

    def retry_policy(self) -> RetryPolicy:
        """The :class:`RetryPolicy` these settings describe."""
        return RetryPolicy(attempts=self.retry_attempts, deadline=self.retry_deadline_s,
                           initial_wait=self.retry_initial_wait_s, max_wait=self.retry_max_wait_s)
