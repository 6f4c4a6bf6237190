"""omnidist backend for Amazon SageMaker: CreateTrainingJob and CreateHyperParameterTuningJob.

Importing this package loads no AWS SDK: :mod:`omnidist_sagemaker.client` imports ``boto3`` only
when a job is submitted or followed.
"""

from omnidist_sagemaker.backend import SageMakerBackend
from omnidist_sagemaker.settings import SageMakerSettings

__all__ = ["SageMakerBackend", "SageMakerSettings"]
