"""omnidist backend for Vertex AI CustomJobs (worker pools, per-role machines, Reduction Server).

Importing this package loads no Google SDK: :mod:`omnidist_vertex.client` imports
``google.cloud.aiplatform_v1`` only when a job is submitted or followed.
"""

from omnidist_vertex.backend import VertexBackend
from omnidist_vertex.settings import VertexSettings

__all__ = ["VertexBackend", "VertexSettings"]
