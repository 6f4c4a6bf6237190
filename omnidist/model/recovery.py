"""Recovery: which endings restart a job, how often, and whether it may move clouds (SPEC §15)."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.errors import ValidationError
from omnidist.model import serde
from omnidist.model.fields import choice, fail

MAX_RESTARTS = 100
"""More restarts than this is a loop, not recovery (and spends without bound)."""


class Ending(str, enum.Enum):
    """How a job (one attempt of it) ended, as every backend classifies its native status.

    ``preemption``: the capacity was taken back (spot/low-priority). ``capacity``: the cloud had
    no capacity (or quota) to start or keep it. ``node_failure``: a machine was lost for another
    reason. ``failure``: the program itself failed (a non-zero exit from the user's code).
    ``succeeded`` and ``cancelled`` are what they say.
    """

    PREEMPTION = "preemption"
    CAPACITY = "capacity"
    NODE_FAILURE = "node_failure"
    FAILURE = "failure"
    SUCCEEDED = "succeeded"
    CANCELLED = "cancelled"


RESTARTABLE = frozenset({Ending.PREEMPTION, Ending.CAPACITY, Ending.NODE_FAILURE, Ending.FAILURE})
"""What ``on`` may list: a success or a cancellation is never restarted."""

DEFAULT_ON = (Ending.PREEMPTION, Ending.CAPACITY, Ending.NODE_FAILURE)
"""What restarts when ``on`` is not written: everything but the program's own failure."""


def _endings(value: Any) -> tuple[Ending, ...]:
    if isinstance(value, (str, Ending)):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise ValidationError(f"expected a list of endings ({', '.join(e.value for e in RESTARTABLE_ORDER)}), "
                              f"got {value!r}", path="on")
    out: list[Ending] = []
    for i, item in enumerate(value):
        ending = choice(Ending, f"on[{i}]")(item)
        if ending not in RESTARTABLE:
            raise ValidationError(f"a job that ended {ending.value!r} is never restarted; list only "
                                  f"{', '.join(e.value for e in RESTARTABLE_ORDER)}", path=f"on[{i}]")
        if ending not in out:
            out.append(ending)
    return tuple(out)


RESTARTABLE_ORDER = (Ending.PREEMPTION, Ending.CAPACITY, Ending.NODE_FAILURE, Ending.FAILURE)


@attrs.frozen(kw_only=True)
class Recovery:
    """Restart the job when it ends for a reason in ``on``, up to ``max_restarts`` times (SPEC §15).

    Attributes:
        max_restarts: restarts in all (attempts are at most ``max_restarts + 1``).
        on: the endings that restart it (default: preemption, capacity, node_failure; the
            program's own ``failure`` only when listed).
        move: restart on the next profile of the placement instead of the same one.
    """

    max_restarts: int = attrs.field(default=3)
    on: tuple[Ending, ...] = attrs.field(default=DEFAULT_ON, converter=_endings)
    move: bool = attrs.field(default=False)

    @max_restarts.validator
    def _max(self, attribute: attrs.Attribute, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RESTARTS:
            fail(attribute, f"must be a whole number from 0 to {MAX_RESTARTS}, got {value!r}")

    @move.validator
    def _move(self, attribute: attrs.Attribute, value: Any) -> None:
        if not isinstance(value, bool):
            fail(attribute, f"expected true or false, got {value!r}")

    def restarts(self, ending: Ending | str) -> bool:
        """Whether an attempt that ended so is restarted (restarts left aside)."""
        return Ending(ending) in self.on


def _structure(value: Any, _: type = Recovery) -> Recovery:
    """A ``recovery`` block as read from a job file; errors' paths are relative to the block."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping (max_restarts, on, move), got {serde.kind(value)}")
    # YAML 1.1 reads an unquoted `on:` key as true: it is this block's `on`
    data = {("on" if key is True else key): item for key, item in value.items()}
    unknown = sorted(set(map(str, data)) - {"max_restarts", "on", "move"})
    if unknown:
        raise ValidationError(f"unknown key {unknown[0]!r}; recovery takes max_restarts, on and move",
                              path=unknown[0])
    return Recovery(**data)


def to_recovery(value: Any) -> Optional[Recovery]:
    """The Python API takes the job file's spelling too: a mapping."""
    if value is None or isinstance(value, Recovery):
        return value
    try:
        return _structure(value)
    except ValidationError as exc:
        raise exc.prefixed("recovery") from None


def check_max_cost(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    """A validator: unset, or a finite number of US dollars > 0."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        fail(attribute, f"must be a number of US dollars > 0 (e.g. 250), got {value!r}")


serde.register_enums(Ending)
serde.register_structure(Recovery, _structure)
serde.register_unstructure(Recovery, lambda r: {"max_restarts": r.max_restarts, "on": [e.value for e in r.on],
                                                 "move": r.move})
