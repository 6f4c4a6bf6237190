"""omnidist backend for Kubernetes: Kubeflow PyTorchJob, TFJob and MPIJob.

Importing this package loads no Kubernetes client: :mod:`omnidist_kubernetes.client` imports
``kubernetes`` only when a job is submitted or followed.
"""

from omnidist_kubernetes.backend import KubernetesBackend
from omnidist_kubernetes.settings import KubernetesSettings

__all__ = ["KubernetesBackend", "KubernetesSettings"]
