"""Vertex AI's prebuilt training containers, for jobs that give ``framework_version`` and no
``image`` (a ``pythonPackageSpec.executorImageUri``). Pure data.

Source: "Prebuilt containers for custom training",
https://cloud.google.com/vertex-ai/docs/training/pre-built-containers (the Python 3.10
images, read 2025). Every image is published in the ``us``, ``europe`` and ``asia``
Artifact Registry multi-regions and is used with its ``latest`` tag (the page says other
tags are not supported). PyTorch's CPU images are the ``pytorch-xla`` ones; before 2.0 one
``pytorch-gpu`` image served CPU and GPU.
"""

from __future__ import annotations

from typing import Optional

from omnidist.kit import Framework, lazy_pattern

SOURCE = "https://cloud.google.com/vertex-ai/docs/training/pre-built-containers"
"""Where :data:`TRAINING_IMAGES` comes from."""

TRAINING_IMAGES: dict[tuple[Framework, str], tuple[str, str]] = {
    (Framework.PYTORCH, "1.12"): ("pytorch-gpu.1-12.py310", "pytorch-gpu.1-12.py310"),
    (Framework.PYTORCH, "1.13"): ("pytorch-gpu.1-13.py310", "pytorch-gpu.1-13.py310"),
    (Framework.PYTORCH, "2.0"): ("pytorch-xla.2-0.py310", "pytorch-gpu.2-0.py310"),
    (Framework.PYTORCH, "2.1"): ("pytorch-xla.2-1.py310", "pytorch-gpu.2-1.py310"),
    (Framework.PYTORCH, "2.2"): ("pytorch-xla.2-2.py310", "pytorch-gpu.2-2.py310"),
    (Framework.PYTORCH, "2.3"): ("pytorch-xla.2-3.py310", "pytorch-gpu.2-3.py310"),
    (Framework.PYTORCH, "2.4"): ("pytorch-xla.2-4.py310", "pytorch-gpu.2-4.py310"),
    (Framework.TENSORFLOW, "2.11"): ("tf-cpu.2-11.py310", "tf-gpu.2-11.py310"),
    (Framework.TENSORFLOW, "2.12"): ("tf-cpu.2-12.py310", "tf-gpu.2-12.py310"),
    (Framework.TENSORFLOW, "2.13"): ("tf-cpu.2-13.py310", "tf-gpu.2-13.py310"),
    (Framework.TENSORFLOW, "2.14"): ("tf-cpu.2-14.py310", "tf-gpu.2-14.py310"),
    (Framework.TENSORFLOW, "2.15"): ("tf-cpu.2-15.py310", "tf-gpu.2-15.py310"),
    (Framework.TENSORFLOW, "2.16"): ("tf-cpu.2-16.py310", "tf-gpu.2-16.py310"),
    (Framework.TENSORFLOW, "2.17"): ("tf-cpu.2-17.py310", "tf-gpu.2-17.py310"),
}
"""(framework, version) -> (CPU image, GPU image) names under ``…-docker.pkg.dev/vertex-ai/training/``."""

IMAGE_FRAMEWORK: dict[Framework, Framework] = {
    Framework.DEEPSPEED: Framework.PYTORCH,
    Framework.PYTORCH: Framework.PYTORCH,
    Framework.TENSORFLOW: Framework.TENSORFLOW,
}
"""Portable framework -> the framework whose prebuilt images it runs on (DeepSpeed runs on
PyTorch's; it is installed from the package's own dependencies). Horovod and custom jobs
have no prebuilt container: they give an ``image``."""

REGISTRY = "{multi}-docker.pkg.dev/vertex-ai/training/{name}:latest"
"""An image's URI in an Artifact Registry multi-region (``us``, ``europe``, ``asia``)."""


def versions(framework: Framework) -> list[str]:
    """The versions with a prebuilt container for ``framework`` (none for horovod/custom)."""
    base = IMAGE_FRAMEWORK.get(framework)
    return [version for kind, version in TRAINING_IMAGES if kind is base]


def image(framework: Framework, version: str, gpu: bool, multi_region: str) -> str | None:
    """The prebuilt image for ``framework`` ``version`` (GPU or CPU), or None when there is none."""
    names = TRAINING_IMAGES.get((IMAGE_FRAMEWORK.get(framework), version))
    if names is None:
        return None
    return REGISTRY.format(multi=multi_region, name=names[1] if gpu else names[0])


PREBUILT_URI = lazy_pattern(
    r"^(?P<multi>us|europe|asia)-docker\.pkg\.dev/vertex-ai/training/(?P<name>[\w.-]+?)(?::latest)?$"
)
"""A prebuilt training image's URI (with its ``latest`` tag, or none)."""


def recognize(uri: str) -> Optional[tuple[Framework, str, str]]:
    """``(framework, version, multi-region)`` of a prebuilt training image from
    :data:`TRAINING_IMAGES`, or None for any other image (the inverse of :func:`image`)."""
    match = PREBUILT_URI.match(uri)
    if match is None:
        return None
    for (framework, version), names in TRAINING_IMAGES.items():
        if match["name"] in names:
            return framework, version, match["multi"]
    return None
