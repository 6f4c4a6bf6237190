"""Test helpers that ship with omnidist: a local fake cloud HTTP server with fault
injection, the base class of every fake cloud service, and the :class:`Harness` a backend
declares so the shared suites and benchmarks drive it, for driving the real cloud SDKs end to
end (backends' tests, the benchmarks, and plugin authors' own tests)."""

from omnidist.testing.fakeserver import AWS_JSON, REST, FakeServer, Fault, Protocol, Recorded, Response
from omnidist.testing.fakeservice import FakeService
from omnidist.testing.harness import Harness
from omnidist.testing.study import FakeStudy, FakeTrial


class SleepRecorder(list):
    """An injectable ``sleep`` that records the requested seconds instead of waiting, so retry
    tests run instantly and can assert on the waits."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


__all__ = ["AWS_JSON", "REST", "FakeServer", "FakeService", "FakeStudy", "FakeTrial", "Fault", "Harness", "Protocol",
           "Recorded", "Response", "SleepRecorder"]
