"""The settings of the ``skeleton`` backend: profile keys and the job's ``backends.skeleton`` block."""

from __future__ import annotations

from typing import Optional

import attrs

from omnidist.kit import ClientSettings
from omnidist_skeleton.tables import DEFAULT_ENDPOINT


@attrs.frozen(kw_only=True)
class SkeletonSettings(ClientSettings):
    """Settings of the ``skeleton`` backend, plus the retry/timeout keys of
    :class:`~omnidist.backend.settings.ClientSettings`.

    Attributes:
        project: the project jobs are created in.
        endpoint: the API's base URL (a local fake in tests).
        token: a bearer token for the API (``None``: the ``SKELETON_TOKEN`` variable at submit).
    """

    project: str = "default"
    endpoint: str = DEFAULT_ENDPOINT
    token: Optional[str] = attrs.field(default=None, repr=False)
