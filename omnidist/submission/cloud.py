"""A backend that talks to a cloud: ``submit``/``status``/``logs``/``cancel`` through its client.

A cloud plugin's facade subclasses :class:`CloudBackend` and declares :attr:`~CloudBackend.client`
(a :class:`~omnidist.submission.clients.Client` subclass, or a
:class:`~omnidist.backend.contract.LazyClient` naming one so that compiling loads no client code).
Every call makes one client for the settings it is given, with the ids and waits this backend was
made with, and runs the client template (retries, exactly-once creates, masking).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Optional

from omnidist.backend.contract import Backend
from omnidist.backend.values import CompiledJob, JobStatus

if TYPE_CHECKING:
    from omnidist.submission.clients import Client
    from omnidist.submission.handle import JobHandle


class CloudBackend(Backend):
    """A backend whose jobs run on a cloud, reached through :attr:`client`.

    Args:
        request_id: makes the idempotency key each submit marks its create with (injectable for
            tests; ``compile`` never calls it, so compiling stays deterministic).
        suffix: makes the suffix that gives each submitted job a name of its own (injectable for
            tests; default: the client's own).
        sleep: how retries and log polls wait (injectable for tests; default: real time).
    """

    def __init__(self, *, request_id: Optional[Callable[[], str]] = None,
                 suffix: Optional[Callable[[], str]] = None,
                 sleep: Optional[Callable[[float], None]] = None) -> None:
        self.request_id, self.suffix, self.sleep = request_id, suffix, sleep

    def submit(self, compiled: CompiledJob, settings: Any) -> JobHandle:
        """Create the job on the cloud: retried on transient errors, never twice."""
        from omnidist.submission.handle import JobHandle  # compiling loads no client code: see connect

        job_id, url = self.connect(settings).submit(compiled)
        return JobHandle(backend=self.name, id=job_id, url=url or self.console_url(job_id, settings),
                         settings=settings, driver=self)

    def status(self, job_id: str, settings: Any) -> JobStatus:
        """The job's current state."""
        return self.connect(settings).status(job_id)

    def logs(self, job_id: str, settings: Any, follow: bool = False) -> Iterator[str]:
        """The job's log lines (following until it ends when ``follow``)."""
        return self.connect(settings).logs(job_id, follow=follow)

    def cancel(self, job_id: str, settings: Any) -> None:
        """Ask the cloud to cancel the job; a no-op on a finished job."""
        self.connect(settings).cancel(job_id)

    def connect(self, settings: Any) -> Client:
        """A :attr:`client` for ``settings``, with this backend's injected ids and waits.

        Raises:
            BackendError: the backend declares no client.
        """
        # Imported here, not at the top: a plugin's facade subclasses this class, and compiling
        # (which never connects) should not pay for the client template, its retries and logging.
        from omnidist.submission.clients import Injected

        if self.client is None:
            raise self._no_cloud()
        # getattr: a subclass with an __init__ of its own may not have called this one.
        given = {key: getattr(self, key, None) for key in ("request_id", "suffix", "sleep")}
        injected = Injected(**{key: value for key, value in given.items() if value is not None})
        return self.client(settings, backend=self, injected=injected)
