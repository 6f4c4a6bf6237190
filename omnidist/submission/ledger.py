"""The job ledger: every submit and placement attempt, in a local SQLite database (SPEC §12).

The database is ``jobs.db`` in omnidist's state folder (:func:`state_dir`). Each submit writes a
row *before* its create (state ``creating``), so a database that is locked or damaged stops the
submit before any job exists, and a create whose process dies is still on record; the row then
gets the job's id and URL (``submitted``), or the reason no job was made (``refused``,
``skipped``, ``error``). ``omnidist jobs --refresh`` writes each live job's state as the cloud
reports it.

Several shells may submit at once: the database is in WAL mode (readers never block the writer)
and each connection waits up to :data:`BUSY_TIMEOUT_S` for another's write; every write is one
short transaction. A database still locked after that, damaged, or made by a newer omnidist is a
:class:`~omnidist.errors.LedgerError` naming the file and what to do; nothing is dropped or
rewritten silently. The schema is versioned (``PRAGMA user_version``) and upgraded in place by
:data:`MIGRATIONS`. ``OMNIDIST_NO_LEDGER=1`` turns the ledger off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist import notebook
from omnidist import secrets as masking
from omnidist.backend.values import JobState
from omnidist.config import state_dir
from omnidist.errors import LedgerError

DB_NAME = "jobs.db"
BUSY_TIMEOUT_S = 10.0
"""How long a connection waits for another process's write before the ledger counts as locked."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: the jobs table
        """CREATE TABLE jobs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            id TEXT,
            backend TEXT NOT NULL,
            profile TEXT,
            region TEXT,
            url TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            job_hash TEXT NOT NULL DEFAULT '',
            submitted_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            price_per_hour REAL
        )""",
    ),
    (  # 2: placements (attempts of one submit), where a profile is resolved, lookups by name and id
        "ALTER TABLE jobs ADD COLUMN placement TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE jobs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE jobs ADD COLUMN config_dir TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX jobs_by_name ON jobs (name, seq)",
        "CREATE INDEX jobs_by_id ON jobs (id)",
    ),
    (  # 3: recovery (SPEC §15): how each attempt ended, the job to resubmit, one watcher per placement
        "ALTER TABLE jobs ADD COLUMN ended TEXT",
        "ALTER TABLE jobs ADD COLUMN ended_at TEXT",
        "ALTER TABLE jobs ADD COLUMN document TEXT NOT NULL DEFAULT ''",
        """CREATE TABLE watch_locks (
            placement TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at REAL NOT NULL
        )""",
    ),
)
"""Schema version N is reached by running ``MIGRATIONS[N-1]``; a database is upgraded from its
``user_version`` to ``len(MIGRATIONS)`` in one transaction. Append; never edit a shipped step."""

SCHEMA_VERSION = len(MIGRATIONS)

CREATING, SUBMITTED, REFUSED, SKIPPED, ERROR = "creating", "submitted", "refused", "skipped", "error"
"""The ledger's own states, besides the portable :class:`~omnidist.backend.values.JobState` values:
a create under way (or whose process died: the job may exist), a job created and not looked at
since, a placement attempt the cloud refused (quota, capacity, a queue too long: its job, if any,
was confirmed ended), one skipped (the backend cannot express the job), a create that failed."""

NOT_LIVE = frozenset({REFUSED, SKIPPED, ERROR, *(s.value for s in JobState if s.terminal)})
"""States of a row with no job running (``jobs --refresh`` does not ask about them)."""

PUBLIC_KEYS = ("name", "id", "backend", "profile", "region", "url", "state", "submitted_at", "price_per_hour",
               "attempt", "ended", "reason")
"""The keys of ``omnidist jobs -o json`` (docs/placement.md); ``reason`` is there in full."""

REASON_WIDTH = 60
"""The characters of a reason the table shows (a refused attempt's can be a paragraph)."""


def disabled(environ: Mapping[str, str] = os.environ) -> bool:
    """``OMNIDIST_NO_LEDGER`` is set to something other than ``0``/empty."""
    return environ.get("OMNIDIST_NO_LEDGER", "").strip().lower() not in ("", "0", "false", "no")


def now() -> str:
    """The time as ISO 8601 in UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def job_hash(document: Mapping[str, Any]) -> str:
    """A short hash of a job's content (its canonical JSON), to tell submits of changed jobs apart."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@attrs.frozen(kw_only=True)
class JobRecord:
    """One row of the ledger: a submitted job or a placement attempt.

    Attributes:
        seq: the row's number (newest is highest).
        name: the job's name.
        id: the cloud's id for it (``None`` when no job was made).
        backend: the backend.
        profile: the profile it was submitted with (``None``: a ``--backend`` alone).
        region: where it runs, when the settings say.
        url: the console URL.
        state: the last known state (:class:`~omnidist.backend.values.JobState` or a ledger state).
        reason: why an attempt made no job, or what the last refresh could not learn.
        job_hash: the job's content hash.
        submitted_at: when (ISO 8601, UTC).
        updated_at: when the row last changed.
        price_per_hour: USD per hour when the catalog knew it.
        placement: the placement the attempt belongs to (one per submit).
        attempt: its position in the placement (1 for a plain submit).
        config_dir: the folder it was submitted from (its profiles are looked up there).
        ended: how the job ended (:class:`~omnidist.model.recovery.Ending`), ``None`` while live.
        ended_at: when omnidist saw it end (ISO 8601, UTC).
        document: the job as JSON, for the watcher to resubmit (``""``: not recorded).
    """

    seq: int
    name: str
    id: Optional[str]
    backend: str
    profile: Optional[str]
    region: Optional[str]
    url: str
    state: str
    reason: str
    job_hash: str
    submitted_at: str
    updated_at: str
    price_per_hour: Optional[float]
    placement: str
    attempt: int
    config_dir: str
    ended: Optional[str] = None
    ended_at: Optional[str] = None
    document: str = ""

    @property
    def live(self) -> bool:
        """A job that may still be running (its state is not final)."""
        return self.id is not None and self.state not in NOT_LIVE

    def to_json(self) -> dict[str, Any]:
        """The keys of ``omnidist jobs -o json``."""
        found = {key: getattr(self, key) for key in PUBLIC_KEYS}
        if isinstance(found.get("reason"), str):  # rows stored before reasons were masked
            found["reason"] = masking.mask_shapes(found["reason"])
        return found


def short(reason: str, limit: int = REASON_WIDTH) -> str:
    """A reason's first line, cut at ``limit`` characters with an ellipsis (the table's cell)."""
    line = reason.strip().splitlines()[0] if reason.strip() else ""
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"


class JobList(tuple):
    """Ledger rows, newest first; a table in notebooks."""

    HEADER = ("name", "id", "backend", "profile", "region", "state", "submitted", "$/h", "reason")

    def rows(self) -> list[tuple[Any, ...]]:
        """One tuple per record in :attr:`HEADER` order."""
        return [(r.name, r.id or "", r.backend, r.profile or "", r.region or "", r.state, r.submitted_at,
                 "" if r.price_per_hour is None else f"{r.price_per_hour:.2f}", short(masking.mask_shapes(r.reason)))
                for r in self]

    def _repr_html_(self) -> str:
        return notebook.table(self.rows(), self.HEADER, caption=f"omnidist jobs ({len(self)})")


ATTEMPT_HEADER = ("attempt", "id", "backend", "profile", "state", "ended", "submitted", "ended at", "$/h", "reason")
"""The columns of ``omnidist jobs NAME``: one job's attempts."""


def attempt_rows(records: Sequence[JobRecord]) -> list[tuple[Any, ...]]:
    """One job's attempts, oldest first, in :data:`ATTEMPT_HEADER` order."""
    ordered = sorted(records, key=lambda r: r.seq)
    return [(r.attempt, r.id or "", r.backend, r.profile or "", r.state, r.ended or "", r.submitted_at,
             r.ended_at or "", "" if r.price_per_hour is None else f"{r.price_per_hour:.2f}", r.reason)
            for r in ordered]


_COLUMNS = tuple(field.name for field in attrs.fields(JobRecord))
_WRITABLE = frozenset(_COLUMNS) - {"seq"}


class Ledger:
    """The ledger database at ``path``.

    Args:
        path: the ``jobs.db`` file.
        timeout: seconds a connection waits for another process's write.
    """

    def __init__(self, path: Path, *, timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path, self.timeout = Path(path), timeout
        self._ready = False

    @classmethod
    def default(cls, environ: Mapping[str, str] = os.environ) -> Optional[Ledger]:
        """The user's ledger, or ``None`` when ``OMNIDIST_NO_LEDGER`` turns it off."""
        if disabled(environ):
            return None
        return cls(state_dir(environ) / DB_NAME)

    # --- connections and errors -------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot make the ledger's folder ({exc.strerror or exc}); set "
                              "OMNIDIST_STATE_DIR to a folder you can write, or OMNIDIST_NO_LEDGER=1") from None
        if self.path.exists() and not self.path.is_file():  # /dev/null, a folder, a FIFO: SQLite's words mislead
            what = "a folder" if self.path.is_dir() else f"a link to {os.path.realpath(self.path)}" \
                if self.path.is_symlink() else "not a regular file"
            raise LedgerError(f"{self.path}: the job ledger is {what}, not a database file; nothing was recorded. "
                              f"Move it aside (mv {self.path} {self.path}.moved) and omnidist starts a new one, or set "
                              "OMNIDIST_STATE_DIR elsewhere, or OMNIDIST_NO_LEDGER=1")
        connection = None
        try:
            connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            if not self._ready:
                self._prepare(connection)
                self._ready = True
            yield connection
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            if connection is not None:
                connection.close()

    def _error(self, exc: sqlite3.Error) -> LedgerError:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return LedgerError(f"{self.path}: the job ledger is locked by another process (waited "
                               f"{self.timeout:g} s); nothing was recorded. Try again, or look for an omnidist "
                               "or sqlite3 process holding it")
        if isinstance(exc, sqlite3.OperationalError) and ("readonly" in text or "unable to open" in text):
            return LedgerError(f"{self.path}: cannot write the job ledger ({text}); set OMNIDIST_STATE_DIR to a "
                               "folder you can write, or OMNIDIST_NO_LEDGER=1")
        if isinstance(exc, sqlite3.OperationalError) and ("disk is full" in text or "disk I/O error" in text):
            return LedgerError(f"{self.path}: the job ledger cannot be written ({text}): the disk may be full, or "
                               "the file at its size limit; nothing was recorded. Free some space, or set "
                               "OMNIDIST_STATE_DIR to a folder on another disk, or OMNIDIST_NO_LEDGER=1")
        damaged = "malformed" in text or "not a database" in text
        if damaged or (isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)):
            return LedgerError(f"{self.path}: the job ledger is damaged ({text}). Your jobs are unaffected; move the "
                               f"file aside (mv {self.path} {self.path}.damaged) and omnidist starts a new one")
        return LedgerError(f"{self.path}: the job ledger failed: {text}")

    def _prepare(self, connection: sqlite3.Connection) -> None:
        """WAL mode and the schema, upgraded to :data:`SCHEMA_VERSION` in one transaction."""
        connection.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise LedgerError(f"{self.path}: the job ledger was written by a newer omnidist (schema {version}; this "
                              f"one reads {SCHEMA_VERSION}); upgrade omnidist, or set OMNIDIST_STATE_DIR elsewhere")
        if connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._retrying(lambda: connection.execute("PRAGMA journal_mode = WAL"))
        if version == SCHEMA_VERSION:
            return
        connection.execute("BEGIN IMMEDIATE")  # one process upgrades; the others wait, then find it done
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            for step in MIGRATIONS[version:]:
                for statement in step:
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _retrying(self, fn: Any) -> Any:
        """``fn()``, retried while another process holds the lock (switching to WAL takes no busy
        handler on every SQLite), up to the timeout."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    # --- reading and writing ------------------------------------------------------------------------

    def add(self, **fields: Any) -> int:
        """Write a new row; its ``seq``. ``submitted_at``/``updated_at`` default to now."""
        unknown = set(fields) - _WRITABLE
        if unknown:
            raise TypeError(f"not ledger columns: {sorted(unknown)}")
        stamp = now()
        _mask_reason(fields)
        fields.setdefault("submitted_at", stamp)
        fields.setdefault("updated_at", stamp)
        names = sorted(fields)
        with self._connection() as connection:
            cursor = connection.execute(
                f"INSERT INTO jobs ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
                [fields[n] for n in names])
            return int(cursor.lastrowid)

    def update(self, seq: int, **fields: Any) -> None:
        """Change a row's fields (and its ``updated_at``)."""
        unknown = set(fields) - _WRITABLE
        if unknown:
            raise TypeError(f"not ledger columns: {sorted(unknown)}")
        fields.setdefault("updated_at", now())
        _mask_reason(fields)
        names = sorted(fields)
        with self._connection() as connection:
            connection.execute(f"UPDATE jobs SET {', '.join(f'{n} = ?' for n in names)} WHERE seq = ?",
                               [*(fields[n] for n in names), seq])

    def records(self, *, backend: Optional[str] = None, state: Optional[str] = None,
                limit: Optional[int] = None) -> JobList:
        """The rows, newest first, filtered by backend and state."""
        where, values = [], []
        if backend:
            where.append("backend = ?")
            values.append(backend)
        if state:
            where.append("state = ?")
            values.append(state)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM jobs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with self._connection() as connection:
            return JobList(JobRecord(**dict(zip(_COLUMNS, row))) for row in connection.execute(sql, values))

    def count(self, *, backend: Optional[str] = None, state: Optional[str] = None) -> int:
        """How many rows :meth:`records` would list without a limit."""
        where = " AND ".join(f"{name} = ?" for name, value in (("backend", backend), ("state", state)) if value)
        values = [value for value in (backend, state) if value]
        with self._connection() as connection:
            return int(connection.execute("SELECT COUNT(*) FROM jobs" + (f" WHERE {where}" if where else ""),
                                          values).fetchone()[0])

    def find(self, key: str) -> Optional[JobRecord]:
        """The row of the job whose id is ``key``, else the newest job named ``key`` (jobs that were
        made before attempts that made none)."""
        with self._connection() as connection:
            sql = f"SELECT {', '.join(_COLUMNS)} FROM jobs WHERE {{}} ORDER BY (id IS NULL), seq DESC LIMIT 1"
            row = connection.execute(sql.format("id = ?"), [key]).fetchone()
            if row is None:
                row = connection.execute(sql.format("name = ?"), [key]).fetchone()
        return None if row is None else JobRecord(**dict(zip(_COLUMNS, row)))

    def lock(self, placement: str, owner: str, ttl_s: float) -> bool:
        """Take (or renew) the watch lock of a placement for ``ttl_s`` seconds: ``True`` when
        ``owner`` holds it now, ``False`` when another live owner does. One transaction, so two
        watchers never both hold it; a lock whose owner stopped renewing it expires."""
        def take() -> bool:
            with self._connection() as connection:
                connection.execute("BEGIN IMMEDIATE")
                row = connection.execute("SELECT owner, expires_at FROM watch_locks WHERE placement = ?",
                                         [placement]).fetchone()
                clock = time.time()
                if row is not None and row[0] != owner and row[1] > clock:
                    connection.execute("COMMIT")
                    return False
                connection.execute("INSERT OR REPLACE INTO watch_locks (placement, owner, expires_at) "
                                   "VALUES (?, ?, ?)", [placement, owner, clock + ttl_s])
                connection.execute("COMMIT")
                return True

        return bool(self._retrying(take))

    def unlock(self, placement: str, owner: str) -> None:
        """Give the watch lock back (only ``owner``'s)."""
        with self._connection() as connection:
            connection.execute("DELETE FROM watch_locks WHERE placement = ? AND owner = ?", [placement, owner])

    def placement(self, placement: str) -> JobList:
        """The attempts of one placement, in order."""
        return JobList(r for r in reversed(self.records()) if r.placement == placement)


def record_state(backend: str, job_id: str, state: str, reason: str = "",
                 environ: Mapping[str, str] = os.environ) -> None:
    """Write the state a wait saw to the job's ledger row, when the ledger has one, so ``omnidist
    jobs`` shows what ``submit --wait`` saw rather than ``submitted``.

    A ledger that is off, locked or damaged is passed over: it records the job, and must not end
    the wait on a job that runs."""
    book = Ledger.default(environ)
    if book is None:
        return
    try:
        record = book.find(job_id)
        if record is not None and record.id == job_id and record.backend == backend:
            book.update(record.seq, state=state, reason=reason)
    except LedgerError:
        return


def _mask_reason(fields: dict[str, Any]) -> None:
    """A reason is stored with the secrets it holds by their shape masked (a URL's password, a token
    of a well-known form, ``NAME_PASS=…``): a cloud's refusal may quote the job's environment."""
    if isinstance(fields.get("reason"), str):
        fields["reason"] = masking.mask_shapes(fields["reason"])


def public(records: Sequence[JobRecord]) -> list[dict[str, Any]]:
    """Records as ``omnidist jobs -o json`` prints them."""
    return [record.to_json() for record in records]
