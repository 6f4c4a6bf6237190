"""omnidist's Azure ML backend: command jobs with PyTorch, TensorFlow or MPI distribution."""

from omnidist_azure_ml.backend import AzureMLBackend
from omnidist_azure_ml.settings import AzureMLSettings

__all__ = ["AzureMLBackend", "AzureMLSettings"]
