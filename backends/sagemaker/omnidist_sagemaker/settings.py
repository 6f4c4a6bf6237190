"""The ``sagemaker`` backend's settings: profile keys and the job's ``backends.sagemaker`` block.

Every key is documented in ``docs/backends/sagemaker.md``; the retry, timeout and polling keys
come from :class:`~omnidist.backend.settings.ClientSettings`.
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from omnidist.kit import ClientSettings, ValidationError, at_least, check_data_map, one_of, role_keys
from omnidist_sagemaker.catalog import INSTANCE_TYPES
from omnidist_sagemaker.tables import LIMITS, ROLE_ARN

CREDENTIALS = ("anonymous", "default")
"""``default``: boto3's credential chain (environment, ``~/.aws``, instance roles); ``anonymous``:
unsigned requests (local endpoints)."""


def check_s3(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    """An S3 location setting: ``s3://BUCKET[/PATH]``."""
    if value is not None and (not value.startswith("s3://") or len(value.rstrip("/")) <= len("s3://")):
        raise ValidationError(f"{value!r} is not an S3 location; write s3://BUCKET or s3://BUCKET/PATH",
                              path=attribute.name)


def _instance_types(instance: Any, attribute: attrs.Attribute, value: dict[str, str]) -> None:
    role_keys(instance, attribute, value)
    for role, name in value.items():
        if name not in INSTANCE_TYPES:
            import difflib

            close = difflib.get_close_matches(name, INSTANCE_TYPES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "; SageMaker trains on ml.* types (ml.p4d.24xlarge)"
            raise ValidationError(f"{name!r} is not a SageMaker training instance type{hint}",
                                  path=f"{attribute.name}.{role}")


def _role_arn(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    if value is not None and not ROLE_ARN.match(value):
        raise ValidationError(f"{value!r} is not an IAM role ARN; write arn:aws:iam::ACCOUNT:role/NAME",
                              path=attribute.name)


def _at_most(limit: str) -> Any:
    def check(instance: Any, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
        if len(value) > LIMITS[limit]:
            raise ValidationError(f"SageMaker takes at most {LIMITS[limit]}, got {len(value)}", path=attribute.name)
    return check


def _text_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in dict(value).items()}


def _dicts(value: Any) -> tuple[dict[str, Any], ...]:
    return tuple(dict(item) for item in value)


def _strings(value: Any) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen(kw_only=True)
class SageMakerSettings(ClientSettings):
    """Settings of the ``sagemaker`` backend (documented in ``docs/backends/sagemaker.md``)."""

    region: str = "us-east-1"
    role_arn: Optional[str] = attrs.field(default=None, validator=_role_arn)
    """The IAM role the job runs as (``RoleArn``); required to compile."""
    endpoint_url: Optional[str] = None
    """An endpoint every AWS client uses, as boto3 takes it (a private endpoint, a local server)."""
    s3_endpoint_url: Optional[str] = None
    """The endpoint of S3 alone when it is not ``endpoint_url`` (an S3 VPC endpoint, a local S3)."""
    credentials: str = attrs.field(default="default", validator=one_of(*CREDENTIALS))
    aws_profile: Optional[str] = None
    """A named profile of ``~/.aws/config`` (default: boto3's own choice)."""
    staging_bucket: Optional[str] = attrs.field(default=None, validator=check_s3)
    """s3://BUCKET[/PATH] where a local code folder is uploaded at submit (once per content), and
    where outputs go when ``base_output_dir`` is not set."""
    base_output_dir: Optional[str] = attrs.field(default=None, validator=check_s3)
    """``OutputDataConfig.S3OutputPath``: SageMaker writes ``<dir>/<job>/output/model.tar.gz``."""
    instance_types: dict[str, str] = attrs.field(factory=dict, validator=_instance_types)
    """Role -> ml.* instance type (default: the smallest that fits the role)."""
    volume_gb: Optional[int] = attrs.field(default=None, validator=attrs.validators.optional(at_least(1)))
    """``VolumeSizeInGB`` of every instance when the roles name no ``disk_gb``."""
    subnets: tuple[str, ...] = attrs.field(default=(), converter=_strings, validator=_at_most("subnets"))
    security_group_ids: tuple[str, ...] = attrs.field(default=(), converter=_strings,
                                                      validator=_at_most("security_group_ids"))
    checkpoint_s3_uri: Optional[str] = attrs.field(default=None, validator=check_s3)
    """``CheckpointConfig.S3Uri``: ``/opt/ml/checkpoints`` is synced there (a spot job needs one)."""
    max_wait: Optional[int] = attrs.field(default=None, validator=attrs.validators.optional(at_least(1)))
    """Seconds a spot job may wait for capacity and run (``MaxWaitTimeInSeconds``, at least the timeout;
    default twice the timeout)."""
    max_retries: Optional[int] = attrs.field(default=None, validator=attrs.validators.optional(at_least(1)))
    """``RetryStrategy.MaximumRetryAttempts`` (1-30): SageMaker retries a job that fails on its side."""
    enable_network_isolation: bool = False
    encrypt_inter_container_traffic: bool = False
    metrics_time_series: bool = False
    """``EnableSageMakerMetricsTimeSeries``."""
    input_mode: Optional[str] = attrs.field(default=None, validator=one_of("File", "FastFile", "Pipe"))
    """``TrainingInputMode`` for every channel, instead of each input's ``mode``."""
    output_kms_key_id: Optional[str] = None
    volume_kms_key_id: Optional[str] = None
    hyperparameters: dict[str, str] = attrs.field(factory=dict, converter=_text_map)
    """``HyperParameters`` the image reads from ``/opt/ml/input/config/hyperparameters.json`` (a built-in
    algorithm's, or an image's own), besides what script mode writes."""
    metric_definitions: tuple[dict[str, str], ...] = attrs.field(default=(), converter=_dicts)
    """``AlgorithmSpecification.MetricDefinitions``: ``{Name, Regex}`` read from the job's logs."""
    content_types: dict[str, str] = attrs.field(factory=dict, converter=_text_map)
    """Input name -> its channel's ``ContentType`` (what a built-in algorithm reads the data as)."""
    channels: tuple[dict[str, Any], ...] = attrs.field(default=(), converter=_dicts)
    """``InputDataConfig`` channels passed as they are (EFS and FSx file systems, manifests), besides
    the job's inputs."""
    data_map: dict[str, str] = attrs.field(factory=dict, validator=check_data_map)
    """Prefix rewrites for input, output and code URIs (``{"gs://bkt/" = "s3://bkt/"}``)."""
