"""omnidist's Azure ML backend: command jobs with PyTorch, TensorFlow or MPI distribution."""

from omnidist_azure_ml.backend import AzureMLBackend, AzureMLSettings

__all__ = ["AzureMLBackend", "AzureMLSettings"]
