"""What every fake cloud service shares, on top of :class:`~omnidist.testing.FakeServer`: a jobs
table keyed by id, the states each job steps through, the request log and faults per operation.

A cloud's fake subclasses :class:`FakeService` with its routes and native shapes only::

    class FakeCloud(FakeService):
        ROUTES = {"create": ("POST", r"^/jobs$"), "get": ("GET", r"^/jobs/(?P<id>[^/]+)$")}
        TIMELINE = ("QUEUED", "RUNNING", "DONE")
        ...
        def on_create(self, record, match): ...   # one handler per route, named on_<operation>

    service = FakeCloud(server)
    service.fail("create", Fault.http(429, retry_after=3), Fault.drop_after_create())
    service.calls("get")          # the GETs of one job so far
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Optional

from omnidist.testing.fakeserver import REST, FakeServer, Fault, Protocol, Recorded
from omnidist.testing.study import DEFAULT_VALUES, FakeStudy


class FakeService:
    """One fake cloud on a started :class:`FakeServer`.

    Each job steps through :attr:`timeline` (copied when it is made), one state per
    :meth:`advance`: the routes decide when a job advances (most fakes: on every read, so a
    poll loop ends). A cancel of an unfinished job sends it to :attr:`CANCELLING`, then
    :attr:`CANCELLED`.

    Attributes:
        server: the server the routes live on (its ``requests`` are the request log).
        jobs: id -> the native job resource, as the cloud would return it.
        studies: id -> the trials of a tuning job (:class:`~omnidist.testing.study.FakeStudy`).
        trial_values: the final metric values the trials of new tuning jobs report, in trial
            order (cycled; ``None`` fails a trial).
        timeline: the states a new job steps through; it stays in the last one.
        error_message: what a failed job says went wrong.
    """

    ROUTES: ClassVar[Mapping[str, tuple[str, str]]] = {}
    """Operation -> (HTTP method, path regex, or operation regex under a :attr:`PROTOCOL` that names
    operations in a header); each is answered by the method ``on_<operation>``."""
    PROTOCOL: ClassVar[Protocol] = REST
    """How the cloud's API names operations and writes errors (the server is switched to it)."""
    TIMELINE: ClassVar[tuple[str, ...]] = ()
    """The native states a new job steps through by default."""
    STATE: ClassVar[tuple[str, ...]] = ("state",)
    """The key path of the native state inside a job resource."""
    RUNNING: ClassVar[str] = "RUNNING"
    FAILED: ClassVar[str] = "FAILED"
    CANCELLING: ClassVar[str] = "CANCELLING"
    CANCELLED: ClassVar[str] = "CANCELLED"
    TERMINAL: ClassVar[frozenset[str]] = frozenset()
    """The native states a job never leaves (cancelling one is refused)."""
    FAILURE: ClassVar[str] = "the job failed"
    """The default :attr:`error_message`."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        server.protocol = self.PROTOCOL
        self.jobs: dict[Hashable, dict[str, Any]] = {}
        self.studies: dict[Hashable, FakeStudy] = {}
        self.trial_values: list[Optional[float]] = list(DEFAULT_VALUES)
        self.timeline: list[str] = list(self.TIMELINE)
        self.error_message = self.FAILURE
        self.lock = threading.RLock()
        self._next: dict[Hashable, list[str]] = {}
        self._steps: dict[Hashable, int] = {}
        for operation, (method, pattern) in self.ROUTES.items():
            server.route(method, pattern, getattr(self, f"on_{operation}"))

    @property
    def url(self) -> str:
        """The fake's base URL (for an endpoint setting)."""
        return self.server.url

    # --- what tests do --------------------------------------------------------------------------

    def fail(self, operation: str, *faults: Fault) -> None:
        """Queue faults for the next requests of ``operation``, one each."""
        self.server.fail(*self.ROUTES[operation], *faults)

    def calls(self, operation: str) -> list[Recorded]:
        """The recorded requests of ``operation``."""
        return self.server.calls(*self.ROUTES[operation])

    def keep_running(self) -> None:
        """New jobs stop at running (until cancelled)."""
        self.timeline = self._until_running()

    def finish_running(self) -> None:
        """Every job now running (kept so by :meth:`keep_running`) moves to the last state of the
        default timeline (its success) and stays there."""
        with self.lock:
            for key, job in self.jobs.items():
                if self.state(job) == self.RUNNING:
                    self._set_state(job, self.TIMELINE[-1])
                    self._next[key] = []

    def fail_jobs(self, message: Optional[str] = None) -> None:
        """New jobs fail after running, saying ``message`` (default :attr:`FAILURE`)."""
        self.timeline = [*self._until_running(), self.FAILED]
        self.error_message = self.FAILURE if message is None else message

    def reset(self) -> None:
        """Forget every job and request, and restore the default timeline (to share one server)."""
        with self.lock:
            self.jobs.clear()
            self.studies.clear()
            self.trial_values = list(DEFAULT_VALUES)
            self._next.clear()
            self._steps.clear()
            self.server.requests.clear()
            self.timeline = list(self.TIMELINE)
            self.error_message = self.FAILURE

    def state(self, job: Mapping[str, Any]) -> str:
        """A job resource's native state."""
        for key in self.STATE:
            job = job[key]
        return job  # type: ignore[return-value]

    def steps(self, key: Hashable) -> int:
        """How many times the job has advanced."""
        return self._steps.get(key, 0)

    # --- what routes do --------------------------------------------------------------------------

    def add(self, key: Hashable, job: dict[str, Any], study: Optional[FakeStudy] = None) -> dict[str, Any]:
        """Store a new job in the first state of :attr:`timeline`; returns it.

        A tuning job comes with its ``study``: its timeline stays running until every trial has
        run (:meth:`FakeStudy.timeline`), and its trials move with its states."""
        with self.lock:
            timeline = self.timeline if study is None else study.timeline(self.timeline, self.RUNNING)
            if study is not None:
                self.studies[key] = study
            self._set_state(job, timeline[0])
            self.jobs[key] = job
            self._next[key], self._steps[key] = list(timeline[1:]), 0
            self._moved(key, job)
        return job

    def study(self, choices: Mapping[str, Any], total: int, parallel: int) -> FakeStudy:
        """A study for a new tuning job, its trials reporting :attr:`trial_values`."""
        return FakeStudy(choices=choices, total=total, parallel=parallel, values=list(self.trial_values))

    def advance(self, key: Hashable) -> None:
        """Move the job one state along its timeline (nothing once it is in the last)."""
        with self.lock:
            following = self._next.get(key)
            if following:
                job = self.jobs[key]
                self._set_state(job, following.pop(0))
                self._steps[key] = self._steps.get(key, 0) + 1
                self._moved(key, job)

    def cancelled(self, key: Hashable) -> bool:
        """Send an unfinished job to :attr:`CANCELLING` (then :attr:`CANCELLED`); ``False``
        when it had already ended."""
        with self.lock:
            job = self.jobs[key]
            if self.state(job) in self.TERMINAL:
                return False
            self._set_state(job, self.CANCELLING)
            self._next[key] = [self.CANCELLED]
            return True

    def stepped(self, key: Hashable, job: dict[str, Any]) -> None:
        """Called when a job is made and each time it advances (a fake writes its logs here)."""

    def _moved(self, key: Hashable, job: dict[str, Any]) -> None:
        study = self.studies.get(key)
        if study is not None:
            study.moved(self.state(job), running=self.RUNNING, cancelled=frozenset({self.CANCELLED}),
                        ended=self.TERMINAL)
        self.stepped(key, job)

    def _set_state(self, job: dict[str, Any], state: str) -> None:
        *path, last = self.STATE
        for key in path:
            job = job[key]
        job[last] = state

    def _until_running(self) -> list[str]:
        timeline = list(self.TIMELINE)
        return timeline[: timeline.index(self.RUNNING) + 1]
