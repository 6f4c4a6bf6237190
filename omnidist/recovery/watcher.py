"""The watcher (SPEC §15): follow a job, and restart or move it when it ends for a reason its policy lists.

Everything it knows is in the ledger, so a watcher stopped and started again picks up where the
last one was: the job's attempts are the rows of one placement (``attempt`` 1, 2, …), each with
how it ended and the job document to resubmit. One loop:

1. take the placement's watch lock (:meth:`~omnidist.submission.ledger.Ledger.lock`); a second
   watcher of the same job waits while the first holds it, so two never both resubmit;
2. read the newest attempt from the ledger and ask its cloud for its status; while it runs,
   wait; once it ended, record how (``ended``, ``ended_at``);
3. an ending ``recovery.on`` does not list (a success, a cancellation, the program's own failure
   unless listed), or ``max_restarts`` restarts already made: stop;
4. otherwise create the next attempt on the same profile, or with ``move: true`` on the next
   profile of the placement, as a new row of the same placement. The previous attempt is
   terminal by then (its cloud said so), so there are never two live attempts. Before a move,
   the latest complete checkpoint is copied to where the next profile puts the job's
   ``checkpoints`` output (:mod:`omnidist.recovery.checkpoints`).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import attrs

from omnidist.errors import LedgerError, NotFoundError, OmnidistError, ValidationError
from omnidist.model.recovery import Ending, Recovery
from omnidist.submission import ledger as ledgers

DOCUMENT_VERSION = 1
"""The shape of a row's ``document``: ``{"version", "job", "profiles"}``."""


@attrs.frozen(kw_only=True)
class Waits:
    """How the watcher waits (tests pass a fast clock).

    Attributes:
        poll_s: seconds between looks at a running attempt.
        lock_ttl_s: how long a watch lock lasts unless renewed (each look renews it).
        sleep: sleeps.
    """

    poll_s: float = 30.0
    lock_ttl_s: float = 300.0
    sleep: Callable[[float], None] = time.sleep


@attrs.frozen(kw_only=True)
class Outcome:
    """How watching a job ended.

    Attributes:
        name: the job's name.
        attempts: the attempts it has now.
        ended: how the last one ended.
        restarted: restarts this watcher made.
        why: a sentence for the user.
    """

    name: str
    attempts: int
    ended: Optional[str]
    restarted: int
    why: str


def document(job: Any, profiles: Sequence[str]) -> str:
    """The ``document`` column: the job and the profiles it may run on, in order."""
    from omnidist.model.job import job_to_dict

    return json.dumps({"version": DOCUMENT_VERSION, "job": job_to_dict(job), "profiles": list(profiles)},
                      sort_keys=True)


def remember(book: ledgers.Ledger, job_id: str, job: Any, profiles: Sequence[str]) -> None:
    """Record the job document on the row of a just-created job (``submit --recover``)."""
    record = book.find(job_id)
    if record is None:
        raise LedgerError(f"job {job_id} is not in the ledger; the watcher cannot follow it")
    book.update(record.seq, document=document(job, profiles))


def _attempts(book: ledgers.Ledger, key: str) -> list[ledgers.JobRecord]:
    record = book.find(key)
    if record is None:
        raise NotFoundError(f"no job {key!r} in the ledger: omnidist jobs lists the jobs it knows")
    return list(book.placement(record.placement))


def _read(rows: Sequence[ledgers.JobRecord]) -> tuple[Any, Recovery, list[str]]:
    from omnidist.model.job import job_from_dict

    text = next((r.document for r in reversed(rows) if r.document), "")
    name = rows[-1].name
    if not text:
        raise ValidationError(f"job {name!r} was submitted without --recover: the ledger has no copy of it to "
                              "resubmit. Submit it with omnidist submit --recover", path="recovery")
    data = json.loads(text)
    job = job_from_dict(data["job"], source=f"the ledger's copy of {name}")
    if job.recovery is None:
        raise ValidationError(f"job {name!r} has no recovery policy: add recovery: {{max_restarts: 3}} to it",
                              path="recovery")
    return job, job.recovery, list(data.get("profiles") or [])


def _created(rows: Sequence[ledgers.JobRecord]) -> list[ledgers.JobRecord]:
    """The attempts that made a job (a refused or skipped placement attempt made none that ran)."""
    return [r for r in rows if r.id is not None and r.state not in (ledgers.REFUSED, ledgers.SKIPPED)]


def _next_profile(current: Optional[str], profiles: Sequence[str], move: bool) -> Optional[str]:
    if not move or not profiles or current not in profiles:
        return current
    return profiles[(profiles.index(current) + 1) % len(profiles)]


def watch(key: str, *, waits: Optional[Waits] = None, say: Optional[Callable[[str], None]] = None,
          owner: Optional[str] = None, environ: Mapping[str, str] = os.environ) -> Outcome:
    """Follow job ``key`` (a name or an id) until it ends for good; restart it as its policy says.

    Args:
        key: the job's name or id, as ``omnidist jobs`` lists it.
        waits: how to wait.
        say: prints what happens (default: nothing).
        owner: who holds the lock (default: a new id for this watcher).
        environ: the environment (the ledger, profiles).

    Raises:
        NotFoundError: no such job in the ledger.
        ValidationError: the ledger has no copy of the job, or the job has no recovery (exit 2).
        LedgerError: the ledger is off, locked or damaged.
    """
    from omnidist import api

    waits, say = waits or Waits(), say or (lambda _: None)
    owner = owner or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    book = ledgers.Ledger.default(environ)
    if book is None:
        raise LedgerError("the job ledger is off (OMNIDIST_NO_LEDGER is set): the watcher works from it")
    placement = _attempts(book, key)[-1].placement
    restarted = 0
    try:
        while True:
            if not book.lock(placement, owner, waits.lock_ttl_s):
                waits.sleep(waits.poll_s)  # another watcher follows it; take over if it stops
                continue
            rows = list(book.placement(placement))
            job, recovery, profiles = _read(rows)
            made = _created(rows)
            if not made:
                return Outcome(name=job.name, attempts=0, ended=None, restarted=restarted,
                               why="no attempt of it made a job")
            latest = made[-1]
            ended = latest.ended
            if ended is None:
                status = api.attach_record(latest).status()
                if status.ended is None:
                    book.update(latest.seq, state=status.state.value)
                    waits.sleep(waits.poll_s)
                    continue
                ended = status.ended.value
                book.update(latest.seq, state=status.state.value, ended=ended, ended_at=ledgers.now(),
                            **({"reason": status.message} if status.message else {}))
                say(f"recovery: attempt {latest.attempt} ({latest.id} on {latest.profile or latest.backend}) "
                    f"ended: {ended}")
            done = len(made) - 1
            if not recovery.restarts(ended):
                return Outcome(name=job.name, attempts=len(made), ended=ended, restarted=restarted,
                               why=f"it ended by {ended}, which recovery.on does not list")
            if done >= recovery.max_restarts:
                return Outcome(name=job.name, attempts=len(made), ended=ended, restarted=restarted,
                               why=f"it was restarted {done} times, recovery.max_restarts")
            profile = _next_profile(latest.profile, profiles, recovery.move)
            refused = _restart(book, job, rows, latest, profile, ended, say)
            if refused:
                return Outcome(name=job.name, attempts=len(made), ended=ended, restarted=restarted, why=refused)
            restarted += 1
    finally:
        try:
            book.unlock(placement, owner)
        except LedgerError:  # the lock expires by itself
            pass


def _restart(book: ledgers.Ledger, job: Any, rows: Sequence[ledgers.JobRecord], latest: ledgers.JobRecord,
             profile: Optional[str], ended: str, say: Callable[[str], None]) -> Optional[str]:
    """Create the next attempt (the previous one is terminal: its cloud said so) as a row of the
    placement; or why not: it would exceed the job's ``max_cost``."""
    from omnidist import api
    from omnidist.recovery import checkpoints, cost

    job, driver, settings = api.prepare(job, latest.backend if profile is None else None, profile)
    compiled = driver.compile(job, settings)
    same = profile == latest.profile and driver.name == latest.backend
    rate = latest.price_per_hour if same else cost.rate_of(driver, compiled, settings, job.spot)
    spent = sum(c for c in map(cost.attempt_cost, _created(book.placement(latest.placement))) if c is not None)
    refused = cost.over_max_cost(job, rate, spent)
    if refused:
        return refused
    if not same:  # a move: the latest complete checkpoint goes where the new job's checkpoints output is
        checkpoints.carry(job, api.prepare(job, latest.backend if latest.profile is None else None,
                                           latest.profile)[1:], (driver, settings), say)
    attempt = max(r.attempt for r in rows) + 1
    text = next(r.document for r in reversed(rows) if r.document)
    seq = book.add(name=job.name, backend=driver.name, profile=profile, placement=latest.placement,
                   attempt=attempt, state=ledgers.CREATING, job_hash=latest.job_hash, config_dir=os.getcwd(),
                   price_per_hour=rate, region=latest.region if same else None, document=text,
                   reason=f"restart after {ended}")
    try:
        handle = driver.submit(compiled, settings)
    except OmnidistError as exc:
        book.update(seq, state=ledgers.ERROR, reason=f"restart after {ended} failed: {exc}")
        raise
    book.update(seq, id=handle.id, url=handle.url, state=ledgers.SUBMITTED)
    say(f"recovery: attempt {attempt} created: {handle.id} on {profile or driver.name} (after {ended})")
    return None


def live_keys(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The newest attempt's id of every placement with a recorded job document (``watch --all``)."""
    book = ledgers.Ledger.default(environ)
    if book is None:
        return []
    seen: dict[str, ledgers.JobRecord] = {}
    for record in reversed(book.records()):
        if record.document and record.id:
            seen[record.placement] = record
    final = (Ending.SUCCEEDED.value, Ending.CANCELLED.value)
    return [r.id for r in seen.values() if r.id and r.ended not in final]
