"""omnidist backend for Skeleton Cloud's training jobs.

Importing this package loads no client code: :mod:`omnidist_skeleton.client` is imported only
when a job is submitted or followed.
"""

from omnidist_skeleton.backend import SkeletonBackend
from omnidist_skeleton.settings import SkeletonSettings

__all__ = ["SkeletonBackend", "SkeletonSettings"]
