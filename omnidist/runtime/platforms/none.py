"""No platform: a single process, rank 0 of 1 (``MASTER_ADDR``/``MASTER_PORT`` honoured when set).

Always present, so it comes last in the detection order. ``omnidist run --emulate none``
gives replicas no platform variables at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

from omnidist.runtime.parsing import Env, integer
from omnidist.runtime.platforms import Decided, JobFacts, Slot, torchrun
from omnidist.runtime.view import RuntimeContext

NAME = "none"
ORDER = math.inf

VARIABLES = frozenset({"MASTER_ADDR", "MASTER_PORT"})
PREFIXES = ()

HINTS_PER_ROLE: Optional[bool] = None
"""No hints: there is no platform whose vagueness they would settle."""

ENV_FIELD = True
"""Replicas run with the job's own environment (and the data hints)."""


def detect(env: Env) -> bool:
    """Always: what is left when no platform is present."""
    return True


def parse(env: Env) -> RuntimeContext:
    """A single process."""
    return RuntimeContext(master_addr=env.get("MASTER_ADDR") or "127.0.0.1",
                          master_port=integer(env, "MASTER_PORT", minimum=1) or torchrun.DEFAULT_PORT)


def notes(job: JobFacts, decided: Decided) -> list[tuple[str, ...]]:
    """Several replicas without a platform do not make one job: each is rank 0 of 1."""
    count = sum(n for role, n in job.replicas.items() if role != "reduction_server")  # reducers never run
    if count < 2:
        return []
    return [("emulate", f"{count} replicas run with no platform environment: each is a single process, rank 0 "
                        "of 1, so they do not train as one job (--emulate vertex, azure_ml, ai_platform or "
                        "kubernetes gives them a cluster)", "changed")]


def emulate(job: JobFacts, slots: Sequence[Slot], decided: Decided) -> list[dict[str, str]]:
    """No variables for any running slot."""
    return [{} for s in slots if s.runs]
