"""How a failed job on Google Cloud's training services says why it ended (Vertex AI and legacy AI
Platform Training word their errors alike): the patterns each Google backend's ``ending_of`` reads."""

from __future__ import annotations

import re

from omnidist.kit import Ending

FAILURE_ENDINGS: tuple[tuple[re.Pattern[str], Ending], ...] = (
    (re.compile(r"(?i)preempt"), Ending.PREEMPTION),
    (re.compile(r"(?i)resources are insufficient|RESOURCE_EXHAUSTED|stockout|ZONE_RESOURCE_POOL_EXHAUSTED"),
     Ending.CAPACITY),
    (re.compile(r"(?i)internal error"), Ending.NODE_FAILURE),
)
"""A failed job's error message -> its ending (a VM taken back, no capacity in the region, the
service's own error); any other is the program's own failure (a replica that exited non-zero)."""
