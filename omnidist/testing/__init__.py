"""Test helpers that ship with omnidist: a local fake cloud HTTP server with fault
injection, for driving the real cloud SDKs end to end (backends' tests, the benchmarks,
and plugin authors' own tests)."""

from omnidist.testing.fakeserver import Fault, FakeServer, Recorded, Response

__all__ = ["FakeServer", "Fault", "Recorded", "Response"]
