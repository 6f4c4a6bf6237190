"""omnidist: one portable distributed-training job, compiled for each cloud's training
service, run locally with any cloud's environment emulated.

Quick start::

    import omnidist
    job = omnidist.load("job.yaml")
    print(omnidist.compile(job, profile="prod"))  # a profile names the backend (SPEC §2)

Importing this package loads no cloud SDK, torch or TensorFlow, and defers even attrs,
YAML, cattrs and entry-point discovery until a name is used (PEP 562 lazy attributes), so
``omnidist.runtime`` stays standard-library-only inside training containers.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Accelerator": "omnidist.model.roles",
    "CompiledJob": "omnidist.backend.values",
    "DistributedJob": "omnidist.model.job",
    "Framework": "omnidist.model.job",
    "Interconnect": "omnidist.model.job",
    "JobHandle": "omnidist.submission.handle",
    "JobState": "omnidist.backend.values",
    "JobStatus": "omnidist.backend.values",
    "Note": "omnidist.backend.values",
    "NoteKind": "omnidist.backend.values",
    "OmnidistError": "omnidist.errors",
    "Role": "omnidist.model.roles",
    "RoleName": "omnidist.model.roles",
    "Trial": "omnidist.backend.values",
    "attach": "omnidist.api",
    "compile": "omnidist.api",
    "import_all": "omnidist.migration",
    "import_native": "omnidist.migration",
    "jobs": "omnidist.api",
    "plan": "omnidist.placement.plan",
    "load": "omnidist.api",
    "migrate": "omnidist.migration",
    "migrate_all": "omnidist.migration",
    "submit": "omnidist.placement.failover",
    "use": "omnidist.config",
}

__all__ = sorted(_LAZY)

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'omnidist' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
