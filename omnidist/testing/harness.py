"""What a cloud backend gives the suites and benchmarks that run every backend alike.

A plugin names its :class:`Harness` in :attr:`omnidist.backend.contract.Backend.testing`
(``"omnidist_mycloud.testing:HARNESS"``); :func:`suite_backends` finds every installed cloud
backend for a shared suite (:data:`SUITES`), so the reliability suite, the fuzzing and ``bench/``
cover a new backend without an edit. Coverage is opt-out, not opt-in: a backend that talks to a
cloud runs every suite unless its :attr:`~omnidist.backend.contract.Backend.opts_out` names the
suite with a reason, and one that declares no harness fails the conformance suite.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
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
        check_request: checks a compiled request with the SDK's own types or schema (raising
            ``AssertionError`` naming what the SDK refuses), given a scratch folder for files the
            SDK reads (the corpus suite checks every migration's output with it).
        required_settings: what compiling cannot go without (SageMaker's ``role_arn``), as a user's
            profile would give it: the suites that compile, import and migrate pass it
            (:func:`required_settings`).
        migration_settings: the profile a user migrating other clouds' files here would have
            (prefix rewrites for the data they copied, where code goes), for the corpus suite.
        trial_number: a tuning trial's number (from 1) from its id on this cloud (default: the id).
    """

    service: type[FakeService]
    settings: Callable[[str], dict[str, Any]]
    sample_settings: Mapping[str, Any] = attrs.field(factory=dict)
    key_file_setting: str = ""
    sdk_module: str = ""
    native_builder: Optional[Callable[[], Callable[[JobDocument], Any]]] = None
    direct_submit: Optional[Callable[[FakeService], Callable[[JobDocument], Any]]] = None
    check_request: Optional[Callable[[Mapping[str, Any], Path], None]] = None
    required_settings: Mapping[str, Any] = attrs.field(factory=dict)
    migration_settings: Mapping[str, Any] = attrs.field(factory=dict)
    trial_number: Callable[[str], int] = int


def hand_written(doc: JobDocument) -> tuple[str, int, dict[str, str]]:
    """What a hand-written request repeats from a job document: the primary's accelerator type,
    its count, and the variables omnidist would add (its runtime hints) with the job's own."""
    kind, count = doc["primary"]["accelerator"].split(":")
    hints = {"OMNIDIST_JOB_NAME": doc["name"], "OMNIDIST_FRAMEWORK": doc["framework"],
             "OMNIDIST_PROCESSES_PER_NODE": count}
    return kind, int(count), {**hints, **doc.get("env", {})}


def required_settings(name: str) -> dict[str, Any]:
    """The settings backend ``name`` cannot compile without (its harness's ``required_settings``;
    empty for a backend without a harness, or that needs none)."""
    found = harness(name) if name in _installed() else None
    return dict(found.required_settings) if found is not None else {}


def _installed() -> list[str]:
    from omnidist.backend import registry

    return registry.installed()


def harness(name: str) -> Optional[Harness]:
    """The harness of installed backend ``name`` (``None`` when it declares none)."""
    from omnidist.backend import registry

    path = registry.get(name).testing
    if not path:
        return None
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


SUITES = ("reliability", "tuning", "secrets", "fuzz", "corpus", "bench")
"""The shared suites a cloud backend's harness is driven by: the fault matrix and exactly-once
creates (``reliability``), tuning searches under faults (``tuning``), masking on every output
(``secrets``), mutation fuzzing of its settings and native files (``fuzz``), the real job files of
``../shared/corpus/<name>/`` imported and migrated to every other backend (``corpus``), and ``bench/``."""


def cloud_backends() -> list[str]:
    """The installed backends that talk to a cloud (they declare a client), by name."""
    from omnidist.backend import registry

    return [name for name in registry.installed() if registry.get(name).client is not None]


@attrs.frozen
class OptOut:
    """A backend's word that a shared suite does not apply to it, and why."""

    reason: str


def suite_backends(suite: str) -> dict[str, Optional[Harness | OptOut]]:
    """Every installed cloud backend -> its harness for ``suite``, its :class:`OptOut` of it, or
    ``None`` when it declares neither (a defect: the suites fail it, they do not skip it).

    Raises:
        ValueError: ``suite`` is not one of :data:`SUITES`.
    """
    from omnidist.backend import registry

    if suite not in SUITES:
        raise ValueError(f"{suite!r} is not a shared suite: {', '.join(SUITES)}")
    found: dict[str, Optional[Harness | OptOut]] = {}
    for name in cloud_backends():
        reason = registry.get(name).opts_out.get(suite)
        found[name] = OptOut(reason) if reason else harness(name)
    return found


def suite_harness(suite: str, name: str) -> Harness:
    """The harness of backend ``name`` for ``suite``, for a test parametrized over
    :func:`suite_backends`: skips (its opt-out reason) or fails (no harness) through pytest."""
    import pytest

    found = suite_backends(suite)[name]
    if isinstance(found, OptOut):
        pytest.skip(f"{name} opts out of the {suite} suite: {found.reason}")
    if found is None:
        pytest.fail(f"{name} talks to a cloud but declares no test harness (Backend.testing) and does not opt out "
                    f"of the {suite} suite (Backend.opts_out)")
    return found


def harnesses() -> dict[str, Harness]:
    """Installed backend -> its harness, for every backend that has one, by name."""
    from omnidist.backend import registry

    found = {name: harness(name) for name in registry.installed()}
    return {name: h for name, h in found.items() if h is not None}
