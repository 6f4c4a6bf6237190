"""Submitting, with placement across profiles and the job ledger (SPEC §12).

``omnidist.submit(job, profile="a,b")`` (or a ``[groups.NAME]``) tries the profiles in turn:
a profile whose backend cannot express the job is skipped (saying why); the job is created on
the first that can; when the cloud refuses the create for quota or capacity (its client says so:
:meth:`omnidist.submission.clients.Client.shortage`), the next profile is tried. With
``max_queue``, a created job is watched until it starts: one that waits longer, or that the cloud
says lacks quota or capacity while it waits (:meth:`~omnidist.submission.clients.Client.queued_shortage`),
is cancelled, confirmed ended, and the next profile tried — so a placement never has two live jobs.
Any other error ends the placement at once (it would fail the same way elsewhere, or it is yours
to see). Each attempt is printed and written to the ledger before its create.

A plain submit (one profile, or ``--backend``) goes the same way: one attempt, recorded, and its
error raised as it is.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

import attrs

from omnidist import api, config
from omnidist import secrets as masking
from omnidist.backend.contract import footprint_of, region_of
from omnidist.backend.values import JobState, JobStatus
from omnidist.errors import (
    AuthenticationError,
    BackendError,
    ConfigError,
    InterruptedCreate,
    LedgerError,
    NotFoundError,
    OmnidistError,
    PlacementError,
    ShortageError,
    ValidationError,
)
from omnidist.model import serde
from omnidist.model.job import DistributedJob, job_to_dict
from omnidist.placement import plan as planning
from omnidist.placement import prices
from omnidist.submission import ledger as ledgers

if TYPE_CHECKING:
    from omnidist.submission.handle import JobHandle

CONFIRM_ENDED_S = 600.0
"""How long a placement waits for a cancelled job to end before it stops (rather than make a second)."""

QUEUE = "queue"
"""The shortage of a job a placement stopped waiting for (``--max-queue``): the cloud said nothing."""

Profiles = Union[str, Sequence[str], None]


@attrs.frozen(kw_only=True)
class Attempt:
    """One profile's turn in a placement.

    Attributes:
        profile: the profile.
        backend: its backend.
        outcome: ``created``, ``skipped`` (cannot express), ``refused`` (quota, capacity, or a queue
            too long) or ``failed`` (any other error: the placement stops).
        reason: why, in the cloud's or the compiler's words.
        job_id: the job it made, if any.
    """

    profile: str
    backend: str
    outcome: str
    reason: str = ""
    job_id: Optional[str] = None

    def line(self) -> str:
        """``PROFILE (BACKEND): OUTCOME [JOB_ID] — REASON`` (the id once created)."""
        made = f" {self.job_id}" if self.job_id and self.outcome == "created" else ""
        return f"{self.profile} ({self.backend}): {self.outcome}{made}" + (f" — {self.reason}" if self.reason else "")


@attrs.define
class Waits:
    """How a placement waits (tests replace them)."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    confirm_s: float = CONFIRM_ENDED_S


def _names(profile: Profiles) -> list[str]:
    if profile is None:
        return []
    return [profile] if isinstance(profile, str) else list(profile)


def _plain(names: list[str], backend: Optional[str], cwd: Optional[Path], environ: Mapping[str, str]) -> bool:
    """One target, as before placement: a backend override, no profile, or one profile (not a group)."""
    if backend is not None or not names:
        return True
    parts = [p.strip() for n in names for p in n.split(",") if p.strip()]
    if len(parts) != 1:
        return False
    groups = config.groups(cwd=cwd, environ=environ)
    return parts[0] not in groups or parts[0] in config.profiles(cwd=cwd, environ=environ)


def submit(job: Any, backend: Optional[str] = None, *, profile: Profiles = None,
           settings: Optional[Mapping[str, Any]] = None, max_queue: Union[str, float, None] = None,
           say: Optional[Callable[[str], None]] = None, waits: Optional[Waits] = None,
           environ: Mapping[str, str] = os.environ) -> JobHandle:
    """Compile ``job`` and create it, on one profile or the first of several that takes it (docs/placement.md).

    Args:
        job: a :class:`~omnidist.DistributedJob`, a job file path, or a mapping.
        backend: the target backend (overrides the profile's; no placement).
        profile: a profile, a group, ``"a,b,c"`` or a list of profiles: tried in turn (a group's
            ``order = "cheapest"`` tries them cheapest first, as ``omnidist plan`` prices them).
        settings: explicit settings that win over the job block and the profile.
        max_queue: move on when a created job has not started after this long (``"30m"`` or seconds).
        say: prints each attempt (default: stderr, when there are several profiles).
        waits: how watching and cancelling wait (tests).
        environ: the environment (profiles, the ledger).

    Returns:
        The created job's handle.

    Raises:
        PlacementError: no profile took the job (every attempt's reason).
        LedgerError: the ledger cannot record the submit (checked before anything is created).
        OmnidistError: the one profile's own error, or a placement's error that is not a refusal.
    """
    job = api.as_job(job)
    queue_s = _seconds(max_queue)
    names = _names(profile)
    if _plain(names, backend, None, environ):
        job, driver, resolved = api.prepare(job, backend, names[0] if names else None, settings)
        target = config.resolve(profile=names[0] if names else None, backend=backend, environ=environ)
        name = target.profile.name if target.profile else None
        try:
            compiled = driver.compile(job, resolved)
        except ValidationError as exc:
            raise (exc if exc.source else exc.with_source(job.source)) from None
        candidate = _Candidate(profile=name or target.backend, profile_name=name, backend=target.backend,
                               driver=driver, settings=resolved, compiled=compiled)
        if job.max_cost is not None:  # SPEC §15: exit 2 naming max_cost, before anything is created
            from omnidist.recovery import cost

            cost.check(job, _price(candidate, job, environ))
        return _place(job, [candidate], queue_s=queue_s, say=say or (lambda _: None), waits=waits or Waits(),
                      environ=environ)
    if settings:
        raise ConfigError("settings= applies to one profile; put each profile's settings in its profile")
    planning.check_job(job)
    ordered, order = planning.profile_names(names, environ=environ)
    catalog = prices.load(environ)
    hours = planning.hours_for(job, None)
    assessed = [planning.assess(job, n, hours=hours, spot=job.spot, catalog=catalog, environ=environ)
                for n in ordered]
    if order == "cheapest":
        ranks = {row.profile: i for i, row in enumerate(planning.ranked([a.row for a in assessed]))}
        assessed.sort(key=lambda a: ranks[a.row.profile])
    candidates = [_Candidate(profile=a.row.profile, profile_name=a.row.profile, backend=a.row.backend,
                             driver=a.driver, settings=a.settings, compiled=a.compiled, row=a.row) for a in assessed]
    return _place(job, candidates, queue_s=queue_s, say=say or _stderr, waits=waits or Waits(), environ=environ)


def _stderr(line: str) -> None:
    from omnidist.submission import progress

    progress.say(line)


def _seconds(value: Union[str, float, None]) -> Optional[float]:
    if value is None or isinstance(value, (int, float)):
        return None if value is None else float(value)
    try:
        return float(serde.parse_duration(value))
    except (ValueError, TypeError) as exc:
        raise ValidationError(str(exc), path="max_queue") from None


@attrs.frozen(kw_only=True)
class _Candidate:
    """A profile a placement may create on: what it would send, or why it cannot."""

    profile: str
    profile_name: Optional[str]
    backend: str
    driver: Any = None
    settings: Any = None
    compiled: Any = None
    row: Optional[planning.PlanRow] = None


def _place(job: DistributedJob, candidates: Sequence[_Candidate], *, queue_s: Optional[float],
           say: Callable[[str], None], waits: Waits, environ: Mapping[str, str]) -> JobHandle:
    book = ledgers.Ledger.default(environ)
    placement = uuid.uuid4().hex[:12]
    common = {"name": job.name, "job_hash": ledgers.job_hash(job_to_dict(job)), "placement": placement,
              "config_dir": os.getcwd()}
    attempts: list[Attempt] = []
    errors: list[OmnidistError] = []

    def tried(candidate: _Candidate, outcome: str, reason: str = "", job_id: Optional[str] = None) -> None:
        """One turn's outcome, in the placement's list and said as it happens."""
        attempts.append(Attempt(profile=candidate.profile, backend=candidate.backend, outcome=outcome,
                                reason=reason, job_id=job_id))
        say(f"placement: {attempts[-1].line()}")

    for number, candidate in enumerate(candidates, start=1):
        row = candidate.row
        where = {**common, "backend": candidate.backend, "profile": candidate.profile_name, "attempt": number,
                 "region": row.region if row else _region(candidate),
                 "price_per_hour": _rate(row, job) if row else _price(candidate, job, environ)}
        if candidate.compiled is None:  # the backend cannot express the job (or its settings are wrong)
            reason = row.blocked if row else "cannot express the job"
            tried(candidate, "skipped", reason)
            _record(book, None, state=ledgers.SKIPPED, reason=reason, **where)
            continue
        missing = _credentials_missing(candidate) if len(candidates) > 1 else None
        if missing:  # no credentials where the cloud's client looks: skipped, as a refusal would be
            tried(candidate, "skipped", missing)
            _record(book, None, state=ledgers.SKIPPED, reason=missing, **where)
            continue
        seq = _record(book, None, state=ledgers.CREATING, **where)
        secrets = masking.secret_values(candidate.compiled.request)  # a cloud's refusal may quote the request
        try:
            handle = candidate.driver.submit(candidate.compiled, candidate.settings)
        except AuthenticationError as exc:  # refused credentials: the next profile may have its own
            if len(candidates) == 1:
                _record(book, seq, state=ledgers.ERROR, reason=str(exc))
                raise
            tried(candidate, "refused", f"credentials: {exc}")
            _record(book, seq, state=ledgers.REFUSED, reason=attempts[-1].reason)
            errors.append(exc)
            continue
        except ShortageError as exc:
            masking.mask_error(exc, secrets)
            tried(candidate, "refused", f"{exc.shortage}: {exc.detail}")
            _record(book, seq, state=ledgers.REFUSED, reason=attempts[-1].reason)
            errors.append(exc)
            continue
        except InterruptedCreate as stop:  # Ctrl-C: record what is known before stopping
            _interrupted(book, seq, stop)
            raise
        except Exception as exc:
            masking.mask_error(exc, secrets)
            try:
                _record(book, seq, state=ledgers.ERROR, reason=str(exc) or type(exc).__name__)
            except LedgerError as lost:  # the create's own error matters more; say what was not recorded
                logging.getLogger("omnidist.placement").warning("%s", lost)
            raise
        handle = handle if handle.job is not None else attrs.evolve(handle, job=job)
        _created(book, seq, handle)
        tried(candidate, "created", job_id=handle.id)
        if queue_s is None:
            return handle
        refused = _watch(candidate, handle, queue_s, waits)
        if refused is None:
            _record(book, seq, state=(handle.last_status or JobStatus(state=JobState.RUNNING)).state.value)
            return handle
        masking.mask_error(refused, secrets)
        reason = refused.detail if refused.shortage == QUEUE else f"{refused.shortage}: {refused.detail}"
        tried(candidate, "refused", reason, job_id=handle.id)
        _record(book, seq, state=ledgers.REFUSED, reason=reason)
        errors.append(refused)
    if len(candidates) == 1 and errors:
        raise errors[0]
    every = [a.line() for a in attempts if a.outcome != "created"]
    code = 3 if all(a.outcome == "skipped" for a in attempts) else 1  # nowhere can express it: as compile says
    raise PlacementError(f"no profile took job {job.name!r} ({len(candidates)} tried; no job is left running):",
                         every, exit_code=code)


def _credentials_missing(candidate: _Candidate) -> Optional[str]:
    """Why a placement skips ``candidate`` for its credentials (none found offline), or ``None``."""
    from omnidist.placement import credentials

    found = credentials.lookup(candidate.driver, candidate.settings)
    if found is None or found.found:
        return None
    return f"credentials missing: {found.fix}"

def _interrupted(book: Optional[ledgers.Ledger], seq: Optional[int], stop: InterruptedCreate) -> None:
    """The ledger row of a create cut short by Ctrl-C: the job, when a look-up found it; else it
    stays ``creating`` with how to find the job."""
    try:
        if stop.job_id is not None:
            _record(book, seq, id=stop.job_id, url=stop.url, state=ledgers.SUBMITTED,
                    reason="interrupted after the create made the job")
        else:
            _record(book, seq, reason=f"interrupted during the create; the job may exist: it carries {stop.marker}")
    except LedgerError as lost:  # the interrupt's own message says the same
        logging.getLogger("omnidist.placement").warning("%s", lost)


def _region(candidate: _Candidate) -> Optional[str]:
    try:
        return region_of(candidate.driver, candidate.settings)
    except Exception:  # a plugin's region hook is informational only
        return None


def _rate(row: planning.PlanRow, job: DistributedJob) -> Optional[float]:
    return row.spot_price_per_hour if job.spot else row.price_per_hour


def _price(candidate: _Candidate, job: DistributedJob, environ: Mapping[str, str]) -> Optional[float]:
    """The hourly price of a plain submit, for the ledger (``None`` when unknown). Informational: a
    price catalog or footprint that cannot be read never stops a submit (it is logged)."""
    try:
        footprint = footprint_of(candidate.driver, candidate.compiled, candidate.settings)
        if footprint is None:
            return None
        priced = prices.price(footprint, prices.load(environ))
    except Exception as exc:  # noqa: BLE001 - a price is never worth a failed submit
        logging.getLogger("omnidist.placement").warning("no price recorded for this submit: %s", exc)
        return None
    return priced.spot if job.spot else priced.on_demand


def _record(book: Optional[ledgers.Ledger], seq: Optional[int], **fields: Any) -> Optional[int]:
    """Add a ledger row (``seq`` None) or update one; nothing without a ledger."""
    if book is None:
        return None
    if seq is None:
        return book.add(**fields)
    book.update(seq, **fields)
    return seq


def _created(book: Optional[ledgers.Ledger], seq: Optional[int], handle: JobHandle) -> None:
    try:
        _record(book, seq, id=handle.id, url=handle.url, state=ledgers.SUBMITTED)
    except LedgerError as exc:  # the job exists: say which, never lose it silently
        raise LedgerError(f"{exc}. The job WAS created: {handle.id} {handle.url}".rstrip()) from None


def _watch(candidate: _Candidate, handle: JobHandle, queue_s: float, waits: Waits) -> Optional[ShortageError]:
    """Watch a created job until it starts (``None``), or why the placement moves on (the job then
    confirmed ended): the shortage its cloud reported, or a queue longer than ``queue_s`` (a lack of
    capacity, as far as a placement can tell)."""
    from omnidist.submission.clients import ReportsShortage  # placement's own client code, loaded when it watches

    client = candidate.driver.connect(candidate.settings) if candidate.driver.client is not None else None
    poll = float(getattr(candidate.settings, "poll_interval_s", 15.0) or 0.0)
    deadline = waits.clock() + queue_s
    while True:
        status = handle.status()
        if status.state in (JobState.RUNNING, JobState.SUCCEEDED):
            return None
        found = client.queued_shortage(handle.id, status) if isinstance(client, ReportsShortage) else None
        if found is not None:
            _end(handle, waits)
            return found
        if status.state.terminal:  # it ended for its own reasons: not the placement's to retry
            return None
        left = deadline - waits.clock()
        if left <= 0:
            _end(handle, waits)
            waited = serde.format_duration(int(queue_s))
            return ShortageError(f"still {status.state.value} after --max-queue {waited}; cancelled",
                                 shortage=QUEUE, backend=candidate.backend)
        waits.sleep(min(poll, left))


def _end(handle: JobHandle, waits: Waits) -> None:
    """Cancel the job and wait until the cloud says it ended (or it is gone).

    Raises:
        PlacementError: it has not ended after :attr:`Waits.confirm_s` (no second job is made).
    """
    try:
        handle.cancel()
    except NotFoundError:
        return
    deadline = waits.clock() + waits.confirm_s
    poll = float(getattr(handle.settings, "poll_interval_s", 15.0) or 1.0)
    while True:
        try:
            if handle.status().state.terminal:
                return
        except NotFoundError:  # deleted (Kubernetes): ended
            return
        except BackendError:
            pass
        if waits.clock() >= deadline:
            raise PlacementError(f"job {handle.id} did not end within {waits.confirm_s:g} s of its cancel; the "
                                 "placement stops rather than start a second job. Check it: omnidist status "
                                 f"{handle.id} --backend {handle.backend}")
        waits.sleep(poll)
