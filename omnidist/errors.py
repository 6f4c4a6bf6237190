"""The one exception tree of omnidist.

Every error omnidist raises derives from :class:`OmnidistError`; each class carries the
process exit code the CLI uses for it (docs/cli.md)::

    OmnidistError                      exit 1
    ├── ValidationError (ValueError)   exit 2  bad job file, flag or native spec; names file + field path
    ├── ConfigError                    exit 2  profiles / omnidist.toml problems
    ├── BackendNotFoundError           exit 2  unknown or uninstalled backend
    ├── UnsupportedFeatureError        exit 3  the target cannot express the job
    │   ├── NotPortableError                   a native spec holds what the portable job cannot
    │   └── UnreadableLocationError            a data location the target's jobs cannot read
    ├── RuntimeEnvError (ValueError)   exit 2  a platform variable inside the container is malformed
    ├── LedgerError                    exit 1  the job ledger (SQLite) is locked, damaged or cannot be written
    ├── PlacementError                 exit 1  no profile of a placement took the job (every attempt's reason)
    └── BackendError                   exit 1  a call to a cloud failed (translated at the client boundary)
        ├── TransientBackendError              429, 5xx, resets, timeouts: the only retried kind
        ├── ShortageError                      the cloud refused for lack of quota or capacity (placement moves on)
        ├── AuthenticationError                401 / missing credentials
        ├── PermissionDeniedError              403
        ├── NotFoundError                      404
        ├── ConflictError                      409
        ├── InvalidRequestError                400 / 422: the cloud rejected the request
        └── JobFailedError                     a job ended in a failed state
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from omnidist.model.features import Feature
from omnidist.model.limits import clip

# The base class and the runtime's error are defined in a standard-library-only module so
# that ``omnidist.runtime`` (which runs inside training containers) can raise them without
# importing attrs; they are re-exported here, as part of the one tree above.
from omnidist.runtime.errors import OmnidistError, RuntimeEnvError  # noqa: F401 - re-exported

MESSAGE_CHARS = 2000
"""The most of one problem's message an error shows (the rest is left out, saying how much)."""

PATH_CHARS = 300
"""The most of a field path an error shows."""


@attrs.frozen
class Problem:
    """One thing wrong with an input: where (a dotted field path) and what, plus how to fix it."""

    path: str
    message: str

    def prefixed(self, prefix: str) -> Problem:
        """The same problem one level deeper: ``workers`` + ``replicas`` -> ``workers.replicas``."""
        if not prefix:
            return self
        if not self.path:
            return Problem(prefix, self.message)
        sep = "" if self.path.startswith("[") else "."
        return Problem(f"{prefix}{sep}{self.path}", self.message)

    def __str__(self) -> str:
        # A value quoted whole could be megabytes (a 10 MB name): messages and paths are clipped.
        message = clip(self.message, MESSAGE_CHARS)
        return f"{clip(self.path, PATH_CHARS)}: {message}" if self.path else message


class ValidationError(OmnidistError, ValueError):
    """Invalid user input. ``str()`` is ``file: field.path: what is wrong (fix)`` per problem."""

    exit_code = 2

    def __init__(self, problems: Iterable[Problem] | str, *, source: str | None = None, path: str = ""):
        if isinstance(problems, str):
            problems = [Problem(path, problems)]
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return "\n".join(prefix + str(p) for p in self.problems)

    def with_source(self, source: str | None) -> ValidationError:
        """A copy that names the file the input came from."""
        return type(self)(self.problems, source=source)

    def prefixed(self, prefix: str) -> ValidationError:
        """A copy whose field paths sit under ``prefix``."""
        return type(self)([p.prefixed(prefix) for p in self.problems], source=self.source)

    def __str__(self) -> str:
        return self._render()


class ConfigError(OmnidistError):
    """A profile or configuration file is missing, unknown or malformed."""

    exit_code = 2


class BackendNotFoundError(OmnidistError):
    """The named backend is unknown, or its package is not installed."""

    exit_code = 2


class UnsupportedFeatureError(OmnidistError):
    """The target backend cannot express a feature of the job.

    ``str()`` reads ``BACKEND cannot express SUBJECT: MESSAGE HINT``.

    Attributes:
        feature: the :class:`~omnidist.model.features.Feature` refused.
        subject: how the message names it (``evaluators``, ``parameter_servers.cpus``,
            ``accelerator H100``…): the feature's own name unless said otherwise.
        backend: the backend's name.
        message: why it cannot.
        hint: what to do instead.
    """

    exit_code = 3
    verb = "cannot express"
    unnamed = Feature.OTHER
    """The feature of a refusal named only in words."""

    def __init__(self, feature: Feature | str, backend: str, message: str, hint: str = "", *,
                 subject: str | None = None):
        if not isinstance(feature, Feature):  # named in words (see Feature.named)
            subject = subject or feature
            feature = Feature.named(feature, self.unnamed)
        self.feature, self.backend, self.message, self.hint = feature, backend, message, hint
        self.subject = subject or feature.value
        text = f"{backend} {self.verb} {clip(self.subject, PATH_CHARS)}: {message}"
        if hint:
            text += f" {hint}"
        super().__init__(clip(text, MESSAGE_CHARS))

    def __reduce__(self):  # pickled with its keyword argument (pytest-xdist, multiprocessing)
        return _unsupported, (type(self), self.feature, self.backend, self.message, self.hint, self.subject)


def _unsupported(cls: type[UnsupportedFeatureError], feature: Feature, backend: str, message: str, hint: str,
                 subject: str) -> UnsupportedFeatureError:
    return cls(feature, backend, message, hint, subject=subject)


class UnreadableLocationError(UnsupportedFeatureError):
    """A data location (``code``, ``inputs.NAME``, ``outputs.NAME``: the ``subject``) the target's
    jobs cannot read or write; the hint says how ``data_map`` moves it.

    Attributes:
        stand_in: a location of the kind the target does read (its scheme, ``bkt/data/NAME``), which a
            migration puts in its place to find the job's other blockers in the same pass;
            ``None`` when the target reads only local folders that must exist.
    """

    def __init__(self, feature: Feature | str, backend: str, message: str, hint: str = "", *,
                 subject: str | None = None, stand_in: str | None = None):
        super().__init__(feature, backend, message, hint, subject=subject)
        self.stand_in = stand_in

    def __reduce__(self):  # pickled with its keyword arguments (pytest-xdist, multiprocessing)
        return _unreadable, (self.feature, self.backend, self.message, self.hint, self.subject, self.stand_in)


def _unreadable(feature: Feature, backend: str, message: str, hint: str, subject: str,
                stand_in: str | None) -> UnreadableLocationError:
    return UnreadableLocationError(feature, backend, message, hint, subject=subject, stand_in=stand_in)


PORTABLE = "the portable job"
"""The side that cannot hold what a native spec has (the ``backend`` of a :class:`NotPortableError`,
and of an :class:`UnsupportedFeatureError` a backend's importer raises for the portable job)."""


class NotPortableError(UnsupportedFeatureError):
    """An importer met something in a native spec that the portable job cannot hold (a TPU, a
    Python package). ``str()`` reads ``the portable job cannot hold FEATURE: …``, naming the side
    that lacks it; the exit code is 3, like any gap between two formats."""

    verb = "cannot hold"
    side = PORTABLE
    unnamed = Feature.NATIVE

    def __init__(self, feature: Feature | str, message: str, hint: str = "", *, subject: str | None = None):
        super().__init__(feature, self.side, message, hint, subject=subject)

    def __reduce__(self):  # pickled with its own arguments (pytest-xdist, multiprocessing)
        return _not_portable, (type(self), self.feature, self.message, self.hint, self.subject)


def _not_portable(cls: type[NotPortableError], feature: Feature, message: str, hint: str,
                  subject: str) -> NotPortableError:
    return cls(feature, message, hint, subject=subject)


@attrs.frozen(kw_only=True)
class Refusal:
    """What a backend says when a job uses a feature it lacks: the sentence and the way out.

    ``message``, ``hint`` and ``subject`` are templates: ``{role}``, ``{field}``, ``{framework}``
    and the like are filled from the job where the backend refuses (:meth:`error`).

    Attributes:
        message: why the backend cannot express it.
        hint: what to do instead.
        subject: how the error names what it refuses (default: the feature's own name).
    """

    message: str
    hint: str = ""
    subject: str = ""

    def error(self, feature: Feature, backend: str, **context: Any) -> UnsupportedFeatureError:
        """The :class:`UnsupportedFeatureError` for ``feature``, filled from ``context``."""
        return UnsupportedFeatureError(feature, backend, self.message.format(**context), self.hint.format(**context),
                                       subject=self.subject.format(**context) or None)


class BackendError(OmnidistError):
    """A call to a cloud service failed. ``status`` is the HTTP status when there was one."""

    exit_code = 1

    def __init__(self, message: str, *, backend: str = "", status: int | None = None,
                 retry_after: float | None = None):
        self.backend, self.status, self.retry_after = backend, status, retry_after
        self.detail = message
        """The message without the backend's name and the status."""
        prefix = f"{backend}: " if backend else ""
        code = f" (HTTP {status})" if status else ""
        super().__init__(f"{prefix}{clip(str(message), MESSAGE_CHARS)}{code}")


class TransientBackendError(BackendError):
    """A failure worth retrying: throttling, a server error, a dropped connection, a timeout."""


class ShortageError(BackendError):
    """The cloud refused the job for lack of quota or capacity: not retried in place (the same
    request meets the same limit), and a placement moves on to its next profile.

    Attributes:
        shortage: ``"quota"`` (an account limit: GPUs, cores), ``"capacity"`` (the cloud has no
            machines of that kind left there), or ``"queue"`` (a placement stopped waiting for the
            job to start: ``--max-queue``).
    """

    def __init__(self, message: str, *, shortage: str, backend: str = "", status: int | None = None):
        self.shortage = shortage
        super().__init__(message, backend=backend, status=status)

    def __reduce__(self):  # pickled with its keyword arguments (pytest-xdist, multiprocessing)
        return _shortage, (self.detail, self.shortage, self.backend, self.status)


def _shortage(message: str, shortage: str, backend: str, status: int | None) -> ShortageError:
    return ShortageError(message, shortage=shortage, backend=backend, status=status)


class AuthenticationError(BackendError):
    """Credentials are missing or were refused."""


class PermissionDeniedError(BackendError):
    """The credentials lack a permission."""


class NotFoundError(BackendError):
    """The job, project or workspace does not exist."""


class ConflictError(BackendError):
    """The resource already exists (a create that raced or was retried)."""


class InvalidRequestError(BackendError):
    """The cloud rejected the request as invalid."""


class JobFailedError(BackendError):
    """A job reached a failed terminal state."""


class LedgerError(OmnidistError):
    """The job ledger cannot be read or written: locked by another process for too long, damaged,
    or in a place that cannot be written. The message names the file and what to do."""

    exit_code = 1


class PlacementError(OmnidistError):
    """A placement found no profile to run the job: each was skipped (it cannot express the job)
    or refused it (quota, capacity, a queue too long). ``attempts`` holds each one's line; the exit
    code is 3 when every profile was skipped (no backend can express the job), else 1."""

    exit_code = 1

    def __init__(self, message: str, attempts: Sequence[str] = (), *, exit_code: int = 1):
        self.attempts, self.summary, self.exit_code = tuple(attempts), message, exit_code
        super().__init__(message + "".join(f"\n  {line}" for line in self.attempts))

    def __reduce__(self):  # pickled with its keyword argument (pytest-xdist, multiprocessing)
        return _placement_error, (self.summary, self.attempts, self.exit_code)


def _placement_error(message: str, attempts: Sequence[str], exit_code: int) -> PlacementError:
    return PlacementError(message, attempts, exit_code=exit_code)


_BY_STATUS: dict[int, type[BackendError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: InvalidRequestError,
    408: TransientBackendError,
    429: TransientBackendError,
}


def error_for_status(status: int | None) -> type[BackendError]:
    """The exception class for an HTTP status: 5xx and 429 are transient, the rest are final."""
    if status is None:
        return BackendError
    if status >= 500:
        return TransientBackendError
    return _BY_STATUS.get(status, BackendError)


def join_problems(errors: Sequence[ValidationError]) -> ValidationError:
    """Merge several validation errors into one that lists every problem."""
    problems = [p for e in errors for p in e.problems]
    source = next((e.source for e in errors if e.source), None)
    return ValidationError(problems, source=source)


class InterruptedCreate(KeyboardInterrupt):
    """Ctrl-C while a job was being created: the create may have made the job. Still a
    ``KeyboardInterrupt`` (the program stops, exit 130), carrying what is known: the job's id when
    a look-up found it, else how to find it.

    Attributes:
        message: what is known, for people.
        backend: the backend.
        job_id: the job the create made, if a look-up found it.
        url: its console URL, if found.
        marker: how the job can be found (its ``omnidist-request-id`` label, or the id or name it
            was created with).
    """

    def __init__(self, message: str, *, backend: str, job_id: str | None = None, url: str = "",
                 marker: str = "") -> None:
        super().__init__(message)
        self.message, self.backend, self.job_id, self.url, self.marker = message, backend, job_id, url, marker
