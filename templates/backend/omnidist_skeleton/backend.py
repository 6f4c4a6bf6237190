"""The Skeleton Cloud backend: the facade joining the tables, the pure compiler and importer, and
the client (:class:`~omnidist_skeleton.client.SkeletonClient`, loaded only to submit or follow).

It is :class:`~omnidist.kit.CloudBackend` (submit, status, logs and cancel through its client) and
opts into :class:`~omnidist.kit.Imports` (its request files read back). A backend that prices its
jobs also opts into :class:`~omnidist.kit.Placement` (``footprint``, ``region``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnidist.kit import (
    Capabilities,
    CloudBackend,
    CompiledJob,
    DistributedJob,
    Framework,
    Imports,
    LazyClient,
    Note,
    RoleName,
)
from omnidist_skeleton.settings import SkeletonSettings
from omnidist_skeleton.tables import ACCELERATORS, CONSOLE_URL, NAME, NATIVE_FORMATS, NATIVE_KEYS, REFUSALS


class SkeletonBackend(Imports, CloudBackend):
    """Skeleton Cloud's training jobs: a primary and workers, NVIDIA GPUs, one program per pool."""

    name = NAME
    settings_type = SkeletonSettings
    capabilities = Capabilities(
        roles=frozenset({RoleName.PRIMARY, RoleName.WORKERS}),
        frameworks=frozenset(Framework), accelerators=frozenset(ACCELERATORS), refusals=REFUSALS)
    client = LazyClient("omnidist_skeleton.client:SkeletonClient")
    testing = "omnidist_skeleton.testing:HARNESS"
    opts_out = {
        "tuning": "the template runs no hyperparameter searches (a backend that does opts into ReadsTrials)",
        "corpus": "no real job files of this cloud are in the shared corpus yet",
        "bench": "no cloud SDK to compare start-up and requests with",
    }
    native_formats = NATIVE_FORMATS

    def compile(self, job: DistributedJob, settings: SkeletonSettings) -> CompiledJob:
        """Build the job request. Pure."""
        from omnidist_skeleton import compiler

        return compiler.compile_job(job)

    def import_with_notes(self, request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
        """Read a job request back. Pure."""
        from omnidist_skeleton import importer

        return importer.import_request(request)

    def recognizes(self, native: Any) -> bool:
        """A mapping with ``pools`` and only the request's own keys."""
        return isinstance(native, Mapping) and "pools" in native and set(native) <= NATIVE_KEYS

    def console_url(self, job_id: str, settings: SkeletonSettings) -> str:
        """The job's page."""
        return CONSOLE_URL.format(job_id=job_id)
