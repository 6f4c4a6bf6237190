"""What legacy AI Platform Training ran Python packages on, for jobs that give
``framework_version`` and no ``image``. Pure data.

TensorFlow jobs ran on a *runtime version* (``runtimeVersion`` + ``pythonVersion``, Google's
own image); PyTorch jobs ran on Google's prebuilt PyTorch containers (``masterConfig.imageUri``)
with the package in ``packageUris``. The service shut down on 2025-01-31; these tables are
what its documentation listed, kept for migration and API-compatible endpoints.
"""

from __future__ import annotations

from omnidist.kit import Framework

RUNTIME_SOURCE = ("https://cloud.google.com/ai-platform/training/docs/runtime-version-list and the ml v1 "
                  "discovery document's trainingInput.pythonVersion")
"""Where :data:`RUNTIME_VERSIONS` comes from."""

RUNTIME_VERSIONS: dict[str, str] = {
    "1.15": "3.7",
    "2.1": "3.7",
    "2.2": "3.7",
    "2.3": "3.7",
    "2.4": "3.7",
    "2.5": "3.7",
    "2.6": "3.7",
    "2.7": "3.7",
    "2.8": "3.7",
    "2.9": "3.7",
    "2.10": "3.7",
    "2.11": "3.7",
}
"""TensorFlow runtime version -> the Python version it ran (``pythonVersion``). The discovery
document says Python 3.7 for 1.15 and later; the runtime list went from 1.15 and 2.1 to 2.11.
*Unconfirmed*: whether 2.9 and 2.10 were published as runtime versions (the list only
survives in secondary copies); correct this table if a job is refused."""

PYTORCH_SOURCE = ("https://cloud.google.com/ai-platform/training/docs/getting-started-pytorch (the prebuilt "
                  "PyTorch containers table, as copied in public samples)")
"""Where :data:`PYTORCH_IMAGES` comes from."""

PYTORCH_IMAGES: dict[str, tuple[str, str]] = {
    "1.4": ("gcr.io/cloud-ml-public/training/pytorch-cpu.1-4", "gcr.io/cloud-ml-public/training/pytorch-gpu.1-4"),
    "1.6": ("gcr.io/cloud-ml-public/training/pytorch-xla.1-6", "gcr.io/cloud-ml-public/training/pytorch-gpu.1-6"),
    "1.7": ("gcr.io/cloud-ml-public/training/pytorch-xla.1-7", "gcr.io/cloud-ml-public/training/pytorch-gpu.1-7"),
    "1.10": ("gcr.io/cloud-ml-public/training/pytorch-xla.1-10", "gcr.io/cloud-ml-public/training/pytorch-gpu.1-10"),
}
"""PyTorch version -> (CPU image, GPU image) of AI Platform's prebuilt PyTorch containers."""

RUNTIME_FRAMEWORKS = frozenset({Framework.TENSORFLOW})
"""Frameworks that run on a runtime version."""

PYTORCH_FRAMEWORKS = frozenset({Framework.DEEPSPEED, Framework.PYTORCH})
"""Frameworks that run on the prebuilt PyTorch containers (DeepSpeed from the package's dependencies)."""


def versions(framework: Framework) -> list[str]:
    """The versions with a prebuilt runtime or container for ``framework``."""
    if framework in RUNTIME_FRAMEWORKS:
        return list(RUNTIME_VERSIONS)
    if framework in PYTORCH_FRAMEWORKS:
        return list(PYTORCH_IMAGES)
    return []
