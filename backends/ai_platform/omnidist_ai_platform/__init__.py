"""omnidist backend for legacy AI Platform Training (``ml.googleapis.com/v1``; shut down 2025-01-31).

Importing this package loads no Google SDK: the client is imported when a job is submitted.
``import_with_notes(request) -> (job, notes)`` is the importer with its fidelity notes (for migrate).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from omnidist_ai_platform.backend import AIPlatformBackend
from omnidist_ai_platform.settings import AIPlatformSettings

if TYPE_CHECKING:
    from omnidist.kit import DistributedJob, Note


def import_with_notes(request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
    """:func:`omnidist_ai_platform.importer.import_with_notes`, imported when called: a compile
    does not load the importer."""
    from omnidist_ai_platform import importer

    return importer.import_with_notes(request)

__all__ = ["AIPlatformBackend", "AIPlatformSettings", "import_with_notes"]
