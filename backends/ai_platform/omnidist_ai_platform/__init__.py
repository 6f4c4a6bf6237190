"""omnidist backend for legacy AI Platform Training (``ml.googleapis.com/v1``; shut down 2025-01-31).

Importing this package loads no Google SDK: the client is imported when a job is submitted.
``import_with_notes(request) -> (job, notes)`` is the importer with its fidelity notes (for migrate).
"""

from omnidist_ai_platform.backend import AIPlatformBackend
from omnidist_ai_platform.importer import import_with_notes
from omnidist_ai_platform.settings import AIPlatformSettings

__all__ = ["AIPlatformBackend", "AIPlatformSettings", "import_with_notes"]
