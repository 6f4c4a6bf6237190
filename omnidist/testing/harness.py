"""What a cloud backend gives the suites and benchmarks that run every backend alike.

A plugin names its :class:`Harness` in :attr:`omnidist.backend.Backend.testing`
(``"omnidist_mycloud.testing:HARNESS"``); :func:`harnesses` finds every installed backend's, so
the reliability suite, the fuzzing and ``bench/`` cover a new backend without an edit.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Optional

import attrs

from omnidist.testing.fakeservice import FakeService

JobDocument = Mapping[str, Any]
"""A portable job as plain data (what ``job.yaml`` holds)."""


@attrs.frozen(kw_only=True)
class Harness:
    """One cloud backend wired to its fake service.

    Attributes:
        service: the fake service class (a :class:`~omnidist.testing.FakeService`), started on a
            :class:`~omnidist.testing.FakeServer` by the caller.
        settings: the settings (as keyword arguments) that point the backend's real SDK client at
            a fake on the given base URL, with credentials a fake accepts.
        sample_settings: a valid ``backends.<name>`` block that changes the compiled request
            (the fuzzing starts from it).
        key_file_setting: the settings key that takes a credentials key file, if any (the
            secrets suite proves compiling never reads it).
        sdk_module: the module a user of this cloud imports without omnidist (the cold-start
            benchmark compares ``omnidist compile`` with importing it).
        native_builder: returns a function that builds a job document's request by hand with the
            SDK's own objects, as a user without omnidist writes it (the compile benchmark).
        direct_submit: for a started fake, returns a function that creates a job document's job
            with the SDK called directly (the submission benchmark).
    """

    service: type[FakeService]
    settings: Callable[[str], dict[str, Any]]
    sample_settings: Mapping[str, Any] = attrs.field(factory=dict)
    key_file_setting: str = ""
    sdk_module: str = ""
    native_builder: Optional[Callable[[], Callable[[JobDocument], Any]]] = None
    direct_submit: Optional[Callable[[FakeService], Callable[[JobDocument], Any]]] = None


def hand_written(doc: JobDocument) -> tuple[str, int, dict[str, str]]:
    """What a hand-written request repeats from a job document: the primary's accelerator type,
    its count, and the variables omnidist would add (its runtime hints) with the job's own."""
    kind, count = doc["primary"]["accelerator"].split(":")
    hints = {"OMNIDIST_JOB_NAME": doc["name"], "OMNIDIST_FRAMEWORK": doc["framework"],
             "OMNIDIST_PROCESSES_PER_NODE": count}
    return kind, int(count), {**hints, **doc.get("env", {})}


def harness(name: str) -> Optional[Harness]:
    """The harness of installed backend ``name`` (``None`` when it declares none)."""
    from omnidist import registry

    path = registry.get(name).testing
    if not path:
        return None
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def harnesses() -> dict[str, Harness]:
    """Installed backend -> its harness, for every backend that has one, by name."""
    from omnidist import registry

    found = {name: harness(name) for name in registry.installed()}
    return {name: h for name, h in found.items() if h is not None}
