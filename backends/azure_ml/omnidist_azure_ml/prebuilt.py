"""Azure ML's curated training environments, for jobs that give ``framework_version`` and no
``image``. Pure data.

Source: the ``azureml`` registry's environment assets, https://github.com/Azure/azureml-assets
(``assets/training/general/environments/<name>/``; each ``spec.yaml`` tags the PyTorch or
TensorFlow version, read 2025). A job references the latest version of one as
``azureml://registries/azureml/environments/<name>/labels/latest``, the form Azure's own
examples use. The ACPT (Azure Container for PyTorch) images carry DeepSpeed too.
"""

from __future__ import annotations

from omnidist.kit import Framework

SOURCE = "https://github.com/Azure/azureml-assets/tree/main/assets/training/general/environments"
"""Where :data:`CURATED_ENVIRONMENTS` comes from."""

CURATED_ENVIRONMENTS: dict[tuple[Framework, str], str] = {
    (Framework.PYTORCH, "2.0"): "acpt-pytorch-2.0-cuda11.7",
    (Framework.PYTORCH, "2.1"): "acpt-pytorch-2.1-cuda12.1",
    (Framework.PYTORCH, "2.2"): "acpt-pytorch-2.2-cuda12.1",
    (Framework.PYTORCH, "2.3"): "acpt-pytorch-2.3-cuda12.1",
    (Framework.PYTORCH, "2.4"): "acpt-pytorch-2.4-cuda12.4",
    (Framework.PYTORCH, "2.5"): "acpt-pytorch-2.5-cuda12.4",
    (Framework.PYTORCH, "2.7"): "acpt-pytorch-2.7-cuda12.6",
    (Framework.PYTORCH, "2.8"): "acpt-pytorch-2.8-cuda12.6",
    (Framework.TENSORFLOW, "2.12"): "tensorflow-2.12-cuda11",
    (Framework.TENSORFLOW, "2.16"): "tensorflow-2.16-cuda12",
}
"""(framework, version) -> curated environment name in the ``azureml`` registry."""

ENVIRONMENT_FRAMEWORK: dict[Framework, Framework] = {
    Framework.DEEPSPEED: Framework.PYTORCH,
    Framework.PYTORCH: Framework.PYTORCH,
    Framework.TENSORFLOW: Framework.TENSORFLOW,
}
"""Portable framework -> the framework whose curated environments it runs in (DeepSpeed is in
the ACPT images). Horovod and custom jobs have none: they give an ``image`` or an ``environment``."""

REFERENCE = "azureml://registries/azureml/environments/{name}/labels/latest"
"""How a command job names a curated environment's latest version."""


def versions(framework: Framework) -> list[str]:
    """The versions with a curated environment for ``framework``."""
    base = ENVIRONMENT_FRAMEWORK.get(framework)
    return [version for kind, version in CURATED_ENVIRONMENTS if kind is base]


def environment(framework: Framework, version: str) -> str | None:
    """The curated environment reference for ``framework`` ``version``, or None."""
    name = CURATED_ENVIRONMENTS.get((ENVIRONMENT_FRAMEWORK.get(framework), version))
    return None if name is None else REFERENCE.format(name=name)


def recognize(reference: str) -> tuple[Framework, str] | None:
    """``(framework, version)`` of a curated environment reference :func:`environment` writes,
    or None for any other environment (the inverse of :func:`environment`)."""
    for (framework, version), name in CURATED_ENVIRONMENTS.items():
        if reference == REFERENCE.format(name=name):
            return framework, version
    return None
