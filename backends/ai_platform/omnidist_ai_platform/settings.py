"""The settings of the ``ai_platform`` backend: profile keys and the job's ``backends.ai_platform`` block."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import ClientSettings, ValidationError, check_data_map, one_of, role_keys
from omnidist_ai_platform import catalog
from omnidist_ai_platform.tables import CREDENTIALS, JOB_ID_PATTERN, SCALE_TIERS
from omnidist_google.google_cloud import check_gs_prefix


def _job_id(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    if value is not None and not JOB_ID_PATTERN.match(value):
        raise ValidationError(
            f"{value!r} is not a legacy job id: start with a letter, then letters, digits or '_' (max 128)",
            path=attribute.name)


def _machine_types(instance: Any, attribute: attrs.Attribute, value: Mapping[str, str]) -> None:
    role_keys(instance, attribute, value)
    for role, name in value.items():
        path = f"{attribute.name}.{role}"
        if catalog.MACHINES.get(name) is None:
            raise ValidationError(
                f"{name!r} is not a machine type legacy AI Platform accepted{catalog.MACHINES.suggest(name)} "
                "Known: n1-standard-4…96, n1-highmem-2…96, n1-highcpu-16…96, a2-highgpu-1g…8g, "
                "a2-megagpu-16g and the deprecated names (complex_model_m, …)", path=path)


def _uris(value: Any) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen(kw_only=True)
class AIPlatformSettings(ClientSettings):
    """Settings of the ``ai_platform`` backend (profile keys and the job's ``backends.ai_platform``).

    The retry, timeout and polling keys come from :class:`~omnidist.backend.settings.ClientSettings`.

    Attributes:
        project: Google Cloud project id (needed to submit, not to compile).
        region: ``trainingInput.region``.
        api_endpoint: base URL of an API-compatible endpoint (or a local test server).
        credentials: ``default`` (google.auth's default chain) or ``anonymous``.
        job_id: pin the ``jobId``; else it is derived from the job name, plus a unique suffix at submit.
        machine_types: role name -> machine type, overriding the catalog's smallest fit.
        runtime_version, python_version, python_module, package_uris: a Python-package job on
            Google's runtime image instead of a custom container (``runtimeVersion`` XOR ``imageUri``).
        job_dir, service_account, network: copied to ``trainingInput``.
        use_chief_in_tf_config: write ``chief`` instead of ``master`` into TF_CONFIG; unset, it is
            on for TensorFlow jobs (TensorFlow 2 rejects ``master``) and with a Reduction Server.
        scale_tier: ``CUSTOM`` (default); other tiers only for a single CPU replica without machine types
            (``BASIC_TPU``: a primary with ``TPU-V2:8`` and nothing else).
        tpu_tf_version: ``tpuTfVersion`` of the TPU worker of a custom-container job: the runtime
            version whose TensorFlow matches the image's (the API requires it there).
        enable_web_access: interactive shell access to the replicas.
        staging_bucket: gs://BUCKET[/PATH] where a local code folder is uploaded at submit.
        storage_endpoint: Cloud Storage API endpoint for that upload (local test servers).
        data_map: prefix rewrites for input, output and code URIs.
    """

    project: Optional[str] = None
    region: str = "us-central1"
    api_endpoint: Optional[str] = None
    credentials: str = attrs.field(default="default", validator=one_of(*CREDENTIALS))
    job_id: Optional[str] = attrs.field(default=None, validator=_job_id)
    machine_types: dict[str, str] = attrs.field(factory=dict, validator=_machine_types)
    runtime_version: Optional[str] = None
    python_version: Optional[str] = None
    python_module: Optional[str] = None
    package_uris: tuple[str, ...] = attrs.field(default=(), converter=_uris)
    job_dir: Optional[str] = None
    service_account: Optional[str] = None
    network: Optional[str] = None
    use_chief_in_tf_config: Optional[bool] = None
    scale_tier: str = attrs.field(default="CUSTOM", validator=one_of(*SCALE_TIERS))
    enable_web_access: bool = False
    tpu_tf_version: Optional[str] = None
    # Code and data (SPEC §7; omnidist_ai_platform.code_data).
    staging_bucket: Optional[str] = attrs.field(default=None, validator=check_gs_prefix)
    storage_endpoint: Optional[str] = None
    data_map: dict[str, str] = attrs.field(factory=dict, validator=check_data_map)

    @property
    def package_mode(self) -> bool:
        """True for a Python-package job on a runtime version (no custom container)."""
        return bool(self.runtime_version or self.python_module or self.package_uris)
