"""omnidist: one portable distributed-training job, compiled for Vertex AI, legacy AI
Platform Training and Azure ML, run locally with any cloud's environment emulated.

Quick start::

    import omnidist
    job = omnidist.load("job.yaml")
    print(omnidist.compile(job, backend="vertex"))

Importing this package loads no cloud SDK, torch or TensorFlow, and defers even YAML,
cattrs and entry-point discovery until a call needs them (PEP 562 lazy attributes).
"""

from __future__ import annotations

import importlib
from typing import Any

from omnidist.backend import CompiledJob, JobHandle, JobState, JobStatus, Note, NoteKind
from omnidist.errors import OmnidistError
from omnidist.job import Accelerator, DistributedJob, Framework, Interconnect, Role, RoleName

_LAZY = {
    "attach": "omnidist.api",
    "compile": "omnidist.api",
    "import_native": "omnidist.api",
    "load": "omnidist.api",
    "submit": "omnidist.api",
    "use": "omnidist.config",
}

__all__ = [
    "Accelerator",
    "CompiledJob",
    "DistributedJob",
    "Framework",
    "Interconnect",
    "JobHandle",
    "JobState",
    "JobStatus",
    "Note",
    "NoteKind",
    "OmnidistError",
    "Role",
    "RoleName",
    *sorted(_LAZY),
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'omnidist' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
