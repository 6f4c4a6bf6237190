"""omnidist backend for Skeleton Cloud's training jobs.

Importing this package loads no client code: :mod:`omnidist_skeleton.client` is imported only
when a job is submitted or followed. Nor does it load the backend until one of its names is
asked for: inside a training container the runtime imports :mod:`omnidist_skeleton.platform`
through this package, and needs only the standard library there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omnidist_skeleton.backend import SkeletonBackend
    from omnidist_skeleton.settings import SkeletonSettings

__all__ = ["SkeletonBackend", "SkeletonSettings"]


def __getattr__(name: str) -> Any:
    if name == "SkeletonBackend":
        from omnidist_skeleton.backend import SkeletonBackend

        return SkeletonBackend
    if name == "SkeletonSettings":
        from omnidist_skeleton.settings import SkeletonSettings

        return SkeletonSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
