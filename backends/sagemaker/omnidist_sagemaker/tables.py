"""Where SageMaker differs: states, limits, input modes, images, refusals; sorted tables, inverses
derived (instance types: :mod:`.catalog`; the container's side: :mod:`omnidist.runtime.platforms.sagemaker`)."""

from __future__ import annotations

import re

from omnidist.kit import Billing, Ending, Feature, Framework, InputMode, JobState, Refusal, lazy_pattern
from omnidist.runtime.platforms import sagemaker as platform

NAME = platform.NAME
"""The backend's name (entry point, ``backends.sagemaker`` block, runtime platform)."""

JOB_STATES: dict[str, JobState] = {
    "Completed": JobState.SUCCEEDED,
    "DeleteFailed": JobState.FAILED,
    "Deleting": JobState.CANCELLED,
    "Failed": JobState.FAILED,
    "InProgress": JobState.RUNNING,
    "Stopped": JobState.CANCELLED,
    "Stopping": JobState.CANCELLING,
}
"""``TrainingJobStatus`` / ``HyperParameterTuningJobStatus`` -> portable state (an ``InProgress``
job's ``SecondaryStatus`` refines it: :data:`SECONDARY_STATES`)."""

SECONDARY_ENDINGS: dict[str, Ending] = {
    "MaxWaitTimeExceeded": Ending.PREEMPTION,
}
"""An ended job's ``SecondaryStatus`` that says how it ended whatever its status: a managed spot job
stopped because interruptions (or no spot capacity) outlasted ``MaxWaitTimeInSeconds``."""

FAILURE_ENDINGS: tuple[tuple[re.Pattern[str], Ending], ...] = (
    (re.compile(r"^CapacityError"), Ending.CAPACITY),
    (re.compile(r"^InternalServerError"), Ending.NODE_FAILURE),
)
"""A failed job's ``FailureReason`` prefix -> its ending; any other (``AlgorithmError``…) is the
program's own failure."""

SECONDARY_STATES: dict[str, JobState] = {
    "Downloading": JobState.PENDING,
    "DownloadingTrainingImage": JobState.PENDING,
    "Interrupted": JobState.PENDING,
    "LaunchingMLInstances": JobState.PENDING,
    "Pending": JobState.QUEUED,
    "PreparingTrainingStack": JobState.PENDING,
    "Restarting": JobState.PENDING,
    "Starting": JobState.QUEUED,
    "Training": JobState.RUNNING,
    "Updating": JobState.RUNNING,
    "Uploading": JobState.RUNNING,
}
"""An ``InProgress`` job's ``SecondaryStatus`` -> portable state (``Pending``: waiting for capacity;
``Interrupted``: a spot interruption, waiting to resume)."""

TRIAL_STATES: dict[str, JobState] = {
    "Completed": JobState.SUCCEEDED,
    "Failed": JobState.FAILED,
    "InProgress": JobState.RUNNING,
    "Stopped": JobState.CANCELLED,
    "Stopping": JobState.CANCELLING,
}
"""A tuning job's ``TrainingJobSummary.TrainingJobStatus`` -> a trial's portable state."""

INPUT_MODES: dict[InputMode, str] = {InputMode.DOWNLOAD: "File", InputMode.RO_MOUNT: "FastFile"}
"""Portable input mode -> the channel's ``InputMode`` (FastFile streams from S3 like a read-only mount)."""

PORTABLE_INPUT_MODES: dict[str, InputMode] = {v: k for k, v in INPUT_MODES.items()}
"""Channel ``InputMode`` -> portable mode (derived; ``Pipe`` has none: it stays a setting)."""

STRATEGIES: dict[str, str] = {"bayesian": "Bayesian", "grid": "Grid", "random": "Random"}
"""Portable tuning algorithm -> ``HyperParameterTuningJobConfig.Strategy``."""

ALGORITHMS: dict[str, str] = {v: k for k, v in STRATEGIES.items()}
"""``Strategy`` -> portable algorithm (derived; ``Hyperband`` has none)."""

SCALES: dict[str, str] = {"linear": "Linear", "log": "Logarithmic", "reverse_log": "ReverseLogarithmic"}
"""Portable parameter scale -> ``ScalingType`` (``Auto``, SageMaker's choice, reads as linear;
``ReverseLogarithmic`` takes only ranges within 0 <= x < 1)."""

DEFAULT_MAX_RUNTIME_S = 86400
"""``MaxRuntimeInSeconds`` SageMaker applies when the request sets none (one day)."""

MAX_RUNTIME_S = 28 * 86400
"""The longest ``MaxRuntimeInSeconds`` SageMaker accepts (28 days)."""

DEFAULT_VOLUME_GB = 30
"""``VolumeSizeInGB`` when neither the role's ``disk_gb`` nor ``volume_gb`` says (the SDK's default)."""

LIMITS: dict[str, int] = {
    "channels": 20,
    "container_arguments": 100,
    "container_entrypoint": 100,
    "environment": 100,
    "environment_value": 512,
    "hyperparameters": 100,
    "instance_groups": 5,
    "metric_definitions": 40,
    "security_group_ids": 5,
    "subnets": 16,
    "tags": 50,
    "tuning_ranges": 30,
}
"""What SageMaker accepts at most of each list or map (its service model's ``max``; botocore does
not check them, the service does)."""

TRAINING_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
"""``TrainingJobName``: 1-63 letters, digits and dashes, starting and ending with a letter or digit."""

TUNING_JOB_NAME_MAX = 32
"""``HyperParameterTuningJobName`` holds at most 32 characters (same characters as a training job's)."""

CHANNEL_NAME = lazy_pattern(r"^[A-Za-z0-9.\-_]{1,64}$")
"""``ChannelName``: 1-64 letters, digits, ``.``, ``-`` and ``_``."""

ENV_KEY = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,1023}$")
"""An ``Environment`` key."""

ROLE_ARN = re.compile(r"^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$")
"""``RoleArn`` (the model's pattern)."""

DLC_ACCOUNTS: dict[str, str] = {
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-northeast-3": "364406365360",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "eu-south-1": "692866216735",
    "me-south-1": "217643126080",
    "us-gov-west-1": "442386744353",
}
"""Region -> the account that publishes the AWS Deep Learning Containers there, where it is not
:data:`DLC_ACCOUNT` (the SageMaker Python SDK's ``image_uri_config/pytorch.json`` registries)."""

DLC_ACCOUNT = "763104351884"
"""The account of the AWS Deep Learning Containers in every other region."""

DLC_REPOSITORIES: dict[Framework, str] = {
    Framework.DEEPSPEED: "pytorch-training",
    Framework.HOROVOD: "pytorch-training",
    Framework.PYTORCH: "pytorch-training",
    Framework.TENSORFLOW: "tensorflow-training",
}
"""Portable framework -> the Deep Learning Container repository its jobs run (Horovod and DeepSpeed
ship in the PyTorch training images)."""

DLC_VERSIONS: dict[str, dict[str, tuple[str, str]]] = {
    "pytorch-training": {
        "2.0": ("2.0.1", "py310"),
        "2.1": ("2.1.0", "py310"),
        "2.2": ("2.2.0", "py310"),
        "2.3": ("2.3.0", "py311"),
        "2.4": ("2.4.0", "py311"),
        "2.5": ("2.5.1", "py311"),
        "2.6": ("2.6.0", "py312"),
    },
    "tensorflow-training": {
        "2.13": ("2.13.0", "py310"),
        "2.14": ("2.14.1", "py310"),
        "2.16": ("2.16.2", "py310"),
    },
}
"""Repository -> ``framework_version`` -> (full version, Python) of its image tag
``<version>-<cpu|gpu>-<python>`` (``pytorch-training:2.1.0-gpu-py310``), the short tag each Deep
Learning Container release publishes beside its long one. *Best knowledge* of the releases (the
``2.1.0-gpu-py310`` tag is the one the corpus's jobs run): a table entry, easy to correct; a full
version (``2.3.0``) is also accepted."""

DLC_IMAGE = lazy_pattern(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
                       r"(?P<repository>[a-z-]+-training):(?P<version>\d+\.\d+(?:\.\d+)?)-(?P<device>cpu|gpu)")
"""A Deep Learning Container's URI: its repository and framework version (import reads them back)."""

NATIVE_FORMATS: tuple[str, ...] = (
    "a CreateTrainingJob or CreateHyperParameterTuningJob request (boto3's keyword arguments, the JSON of "
    "`aws sagemaker create-training-job --cli-input-json`, or YAML)",
    "DescribeTrainingJob output",
    "a TrainingJob or HyperParameterTuningJob custom resource of the SageMaker operators for Kubernetes "
    "(sagemaker.aws.amazon.com/v1, ACK's sagemaker.services.k8s.aws/v1alpha1)",
)
"""The native forms the importer reads (listed when a file's format cannot be told)."""

OPERATOR_GROUPS: dict[str, str] = {
    "sagemaker.aws.amazon.com": "the SageMaker Operators for Kubernetes",
    "sagemaker.services.k8s.aws": "ACK's SageMaker controller",
}
"""API group of a custom resource -> whose it is."""

OPERATOR_KINDS: dict[str, str] = {
    "HyperParameterTuningJob": "tuning",
    "HyperparameterTuningJob": "tuning",
    "TrainingJob": "training",
}
"""Custom resource kind -> what it holds (the original operator spells ``HyperparameterTuningJob``)."""

CONSOLE_URL = "https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/{page}/{name}"
"""The console page of a job (``page``: ``jobs`` or ``hyper-tuning-jobs``)."""

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
"""The CloudWatch Logs group of training jobs: one stream per host, ``<job>/algo-<n>-<epoch>``."""

REFUSALS: dict[Feature, Refusal] = {
    Feature.ACCELERATOR: Refusal(
        subject="accelerator {kind}", message="no SageMaker training instance type carries {kind}.",
        hint="Use one of {offered}, or name an ml.* type in `backends.sagemaker.instance_types`."),
    Feature.EVALUATORS: Refusal(
        message="SageMaker training jobs have no evaluator role: every instance trains.",
        hint="Evaluate inside the training loop (e.g. on rank 0) or in a job of its own, and drop `evaluators`."),
    Feature.INFINIBAND: Refusal(
        subject="interconnect: infiniband",
        message="AWS has no InfiniBand; its RDMA fabric is EFA with GPUDirect RDMA, which {role} {why}.",
        hint="Use A100:8, A100-80GB:8, H100:8, H200:8 or B200:8 (ml.p4d, p4de, p5, p5e, p6-b200) or set "
             "interconnect: any."),
    Feature.PARAMETER_SERVERS: Refusal(
        message="SageMaker runs parameter servers only in TensorFlow's parameter_server distribution, and this "
                "job's framework is {framework}.",
        hint="Use `framework: tensorflow`, or drop `parameter_servers` for all-reduce training."),
    Feature.PER_ROLE_PROGRAMS: Refusal(
        subject="{role}.{field}",
        message="a SageMaker training job runs one image with one command and environment on every instance; "
                "{role} set their own {field}.",
        hint="Remove `{role}.{field}` and branch on the node's rank (omnidist.runtime.context()) instead."),
    Feature.REDUCTION_SERVERS: Refusal(
        message="SageMaker has no Reduction Server; NCCL all-reduce runs among the GPU instances themselves.",
        hint="Drop `reduction_servers`; for fast all-reduce use an EFA type (`interconnect: infiniband`)."),
}
"""Feature -> how SageMaker refuses a job that uses it."""

LEFT_BEHIND: dict[str, str] = {
    "role_arn": "the job runs under the target's own identity, not this IAM role",
    "subnets": "the VPC subnets are AWS's own: give the target its own network",
}
"""Setting -> why a job moved to another backend loses meaning without it."""

SHORTAGE_CODES: dict[str, str] = {
    # A create refused for the lack of machines of that type in the region (the failed job's own
    # reason, "CapacityError: Unable to provision requested ML compute capacity", is read as text).
    "CapacityError": "capacity",
    "InsufficientCapacityError": "capacity",
    # "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 0 Instances ...
    # Please use AWS Service Quotas to request an increase for this quota."
    "ResourceLimitExceeded": "quota",
}
"""AWS error code -> the shortage (a :class:`~omnidist.kit.Shortage` value) a placement moves on from
(throttling codes are rate limits, retried in place)."""

SERVICE = "amazon_sagemaker"
"""The price list SageMaker training bills from."""

BILLING = Billing(
    prices="amazon_sagemaker",
    rule="SageMaker bills ml.* instances from a price list of its own, above EC2's (by 15-40 % on the "
         "pairs the sources compare)")
"""How it bills (its :attr:`Backend.billing <omnidist.kit.Backend.billing>`; the rows are its vendor kit's)."""
