"""The Python API: load, compile, submit, follow (docs/api.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

import attrs

from omnidist import config
from omnidist.backend import registry
from omnidist.backend.contract import Backend, Imports
from omnidist.backend.values import CompiledJob
from omnidist.compiler import lowering
from omnidist.errors import Problem, ValidationError
from omnidist.model import job as job_file
from omnidist.model.job import DistributedJob
from omnidist.model.spelling import close_matches

if TYPE_CHECKING:  # compile and load never load the submission floor; submit and attach do
    from omnidist.submission.handle import JobHandle
    from omnidist.submission.ledger import JobList, JobRecord

JobLike = Union[DistributedJob, str, "os.PathLike[str]", Mapping[str, Any]]


def load(path: Union[str, os.PathLike[str]]) -> DistributedJob:
    """Read and validate a job file (YAML or JSON).

    Raises:
        ValidationError: naming the file and the field path of every problem; for a cloud's native
            spec, which backend's it is and how to import it.
    """
    try:
        return job_file.load(path)
    except job_file.NotAJobError as exc:
        raise _whose(exc) from None


def as_job(job: JobLike) -> DistributedJob:
    """Accept a job, a path to a job file, or a plain mapping."""
    if isinstance(job, DistributedJob):
        return job
    if isinstance(job, Mapping):
        try:
            return job_file.job_from_dict(job)
        except job_file.NotAJobError as exc:
            raise _whose(exc) from None
    return load(job)


def _whose(exc: job_file.NotAJobError) -> ValidationError:
    """A file that is not a job: when a backend recognizes it as its native spec, say whose and how
    to import it (backends are asked only on this error path)."""
    if not isinstance(exc.data, Mapping):
        return exc
    claims = []
    for name in registry.installed():
        try:
            driver = registry.get(name)
            if isinstance(driver, Imports) and driver.recognizes(exc.data):
                claims.append(name)
        except Exception:  # noqa: BLE001 - a broken plugin only loses its say in this message
            continue
    if not claims:
        return exc
    target = exc.source or "FILE"
    return ValidationError(f"not a job file: it reads as {' or '.join(claims)}'s native spec. `omnidist import "
                           f"{target}` turns it into a job file; `omnidist migrate {target} --to BACKEND` compiles "
                           "it for another backend", source=exc.source)


def check_backend_blocks(job: DistributedJob) -> None:
    """Reject a ``backends.<name>`` block for a backend nobody knows (a likely typo that
    would otherwise be ignored silently)."""
    installed = set(registry.installed())
    if all(name in installed for name in job.backends):  # the usual case lists no runtime platforms
        return
    known = registry.known()
    problems = []
    for name in job.backends:
        if name not in known:
            close = close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(
                Problem(f"backends.{name}", f"no backend is called {name!r}{hint} Known: {', '.join(known)}")
            )
    if problems:
        raise ValidationError(problems, source=job.source)


def prepare(
    job: JobLike,
    backend: Optional[str] = None,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> tuple[DistributedJob, Backend, Any]:
    """Resolve the job, the backend and its settings (the precedence of docs/profiles.md).

    The portable rules (:func:`omnidist.compiler.lowering.check_portable_rules`) are checked here, once,
    before any backend sees the job.
    """
    job = as_job(job)
    check_backend_blocks(job)
    lowering.check_portable_rules(job)
    target = config.resolve(profile=profile, backend=backend)
    driver = registry.get(target.backend)
    resolved = config.settings_for(driver.settings_type, target.backend, target, job, settings)
    if target.profile is not None and target.profile.backend != target.backend:
        resolved = driver.under_profile_of(target.profile.backend, resolved)
    return job, driver, resolved


def compile(  # noqa: A001 - the SPEC names it so
    job: JobLike,
    backend: Optional[str] = None,
    *,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> CompiledJob:
    """Build the backend's native request for ``job``; no network, no cloud SDK.

    Args:
        job: a :class:`DistributedJob`, a job file path, or a mapping.
        backend: the target (else the profile's, else ``local``).
        profile: the profile supplying settings.
        settings: explicit settings that win over the job block and the profile.

    Raises:
        ValidationError: the job (or a settings block) is invalid for this backend.
        UnsupportedFeatureError: the backend cannot express the job.
    """
    job, driver, resolved = prepare(job, backend, profile, settings)
    try:
        return driver.compile(job, resolved)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(job.source)) from None


def submit(
    job: JobLike,
    backend: Optional[str] = None,
    *,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> JobHandle:
    """Compile ``job`` and create it on one backend; returns a :class:`JobHandle`.

    This is the bare create, recorded nowhere: ``omnidist.submit``
    (:func:`omnidist.placement.failover.submit`) records it in the job ledger and can try several
    profiles."""
    job, driver, resolved = prepare(job, backend, profile, settings)
    try:
        compiled = driver.compile(job, resolved)
    except ValidationError as exc:
        raise (exc if exc.source else exc.with_source(job.source)) from None
    handle = driver.submit(compiled, resolved)
    return handle if handle.job is not None else attrs.evolve(handle, job=job)


def attach(
    job_id: str,
    backend: Optional[str] = None,
    *,
    profile: Optional[str] = None,
    settings: Optional[Mapping[str, Any]] = None,
) -> JobHandle:
    """A handle for a job submitted earlier, to follow or cancel it.

    ``job_id`` is the cloud's id, or a job's name: the job ledger is asked first (it knows the
    job's backend and profile, so none needs naming; one that is named must match the row's); a
    name means the newest job of that name.

    Raises:
        NotFoundError: a name the ledger holds only attempts of that made no job.
        LedgerError: the ledger cannot be read.
    """
    if not settings:
        record = _recorded(job_id, named=backend is not None or profile is not None)
        if record is not None and backend in (None, record.backend) and profile in (None, record.profile):
            return attach_record(record)
    from omnidist.submission.handle import JobHandle

    target = config.resolve(profile=profile, backend=backend)
    driver = registry.get(target.backend)
    resolved = config.settings_for(driver.settings_type, target.backend, target, None, settings)
    return JobHandle(backend=target.backend, id=job_id, url=driver.console_url(job_id, resolved),
                     settings=resolved, driver=driver)


def recorded(job_id: str) -> Optional[JobRecord]:
    """The job ledger's row for ``job_id`` (an id, or the newest job of that name), if it holds one
    and can be read."""
    from omnidist.errors import LedgerError

    try:
        return _recorded(job_id, named=False)
    except LedgerError:
        return None


def _recorded(job_id: str, *, named: bool) -> Optional[JobRecord]:
    """The ledger's row for ``job_id`` (an id or a name), if any. With a backend or profile named,
    a ledger that cannot be read is passed over (said in the log): the job can be reached without it."""
    import logging

    from omnidist.errors import LedgerError
    from omnidist.submission import ledger

    book = ledger.Ledger.default()
    if book is None or not book.path.exists():
        return None
    try:
        return book.find(job_id)
    except LedgerError as exc:
        if not named:
            raise
        logging.getLogger("omnidist").warning("%s", exc)
        return None


def attach_record(record: JobRecord) -> JobHandle:
    """A handle for a job of the ledger, its settings from the profile it was submitted with (looked up
    from the folder it was submitted from).

    Raises:
        NotFoundError: the record is an attempt that made no job.
    """
    from pathlib import Path

    from omnidist.errors import NotFoundError
    from omnidist.submission.handle import JobHandle

    if record.id is None:
        raise NotFoundError(f"job {record.name!r} was never created: its last attempt was {record.state} "
                            f"on {record.profile or record.backend} ({record.reason or 'no reason recorded'}); "
                            "omnidist jobs lists every attempt", backend=record.backend)
    folder = Path(record.config_dir) if record.config_dir and os.path.isdir(record.config_dir) else None
    target = config.resolve(profile=record.profile, backend=record.backend, cwd=folder)
    driver = registry.get(target.backend)
    resolved = config.settings_for(driver.settings_type, target.backend, target, None, None)
    return JobHandle(backend=target.backend, id=record.id, url=record.url or driver.console_url(record.id, resolved),
                     settings=resolved, driver=driver)


REFRESH_WORKERS = 16
"""How many clouds ``jobs(refresh=True)`` asks at once."""


def jobs(*, refresh: bool = False, backend: Optional[str] = None, state: Optional[str] = None,
         limit: Optional[int] = None) -> JobList:
    """The job ledger: every submit and placement attempt, newest first (a table in notebooks).

    Args:
        refresh: ask the clouds for the state of each live job listed (at most ``limit``), in
            parallel, and record it.
        backend: only this backend's jobs.
        state: only jobs in this state (``running``, ``refused``…).
        limit: at most this many.

    Raises:
        LedgerError: the ledger is off (``OMNIDIST_NO_LEDGER``), locked or damaged.
    """
    from omnidist.errors import LedgerError
    from omnidist.submission import ledger

    book = ledger.Ledger.default()
    if book is None:
        raise LedgerError("the job ledger is off (OMNIDIST_NO_LEDGER is set): no submit was recorded")
    if refresh:  # only the rows shown are asked about: a ledger of many jobs costs no more than its page
        refresh_states(book, [r for r in book.records(backend=backend, state=state, limit=limit) if r.live])
    return book.records(backend=backend, state=state, limit=limit)


def refresh_states(book: Any, records: list[JobRecord]) -> None:
    """Ask each record's cloud for its job's state, all at once (threads), and write what they say;
    a job a cloud cannot report keeps its state, with the reason recorded."""
    from concurrent.futures import ThreadPoolExecutor

    from omnidist.errors import NotFoundError, OmnidistError
    from omnidist.submission import ledger

    def ask(record: JobRecord, handle: Any) -> tuple[JobRecord, dict[str, Any]]:
        try:
            if isinstance(handle, OmnidistError):
                raise handle
            status = handle.status()
        except NotFoundError as exc:
            return record, {"state": "unknown", "reason": f"the cloud no longer knows it ({exc})"}
        except OmnidistError as exc:
            return record, {"reason": f"refresh failed: {exc}"}
        fields = {"state": status.state.value, "reason": status.message}
        if status.ended is not None and record.ended is None:  # how it ended, once (SPEC §15)
            fields.update(ended=status.ended.value, ended_at=ledger.now())
        return record, fields

    if not records:
        return
    handles: list[Any] = []
    for record in records:  # the configuration is read here, once; the clouds are asked at once below
        try:
            handles.append(attach_record(record))
        except OmnidistError as exc:
            handles.append(exc)
    with ThreadPoolExecutor(max_workers=min(REFRESH_WORKERS, len(records))) as pool:
        answers = list(pool.map(ask, records, handles))
    for record, fields in answers:
        book.update(record.seq, **fields)
