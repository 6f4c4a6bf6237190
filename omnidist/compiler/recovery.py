"""The recovery policy as compilers see it (SPEC §15): what a cloud does natively, what the watcher does.

Every backend compiles what it can of ``recovery`` into its native request and ends with
:func:`watcher_note`, one sentence built the same way everywhere, so that ``omnidist compile``
and ``migrate`` say, per cloud, which endings ``omnidist watch`` still has to handle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from omnidist.backend.values import Note, NoteKind
from omnidist.model.job import DistributedJob
from omnidist.model.recovery import Ending


def watcher_note(job: DistributedJob, native: str, handled: Iterable[Ending | str] = ()) -> Optional[Note]:
    """The note saying what ``omnidist watch`` does beyond the native fields (``None`` without recovery).

    Args:
        job: the job compiled.
        native: what the request does natively, as a sentence fragment (``"RetryStrategy retries
            internal errors"``), or ``""`` when nothing.
        handled: the endings the cloud restarts by itself, within the same job.
    """
    recovery = job.recovery
    if recovery is None:
        return None
    done = {Ending(e) for e in handled}
    left = [e.value for e in recovery.on if e not in done]
    parts = [f"natively: {native}" if native else "nothing natively"]
    if left and not recovery.max_restarts:
        parts.append("max_restarts is 0: `omnidist watch` records how it ends and restarts nothing")
    elif left:
        parts.append(f"`omnidist watch` (or `submit --recover`) restarts it after {', '.join(left)}, "
                     f"up to {recovery.max_restarts} times")
    if recovery.move:
        parts.append("moving it to the next profile of the placement with its latest checkpoint")
    return Note(kind=NoteKind.APPROXIMATED, field="recovery", message="; ".join(parts))
