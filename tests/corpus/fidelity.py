"""The property a migration must have: every field of the input is mapped, reported, or refused.

A native spec is walked into its leaves (``jobSpec.workerPoolSpecs.0.machineSpec.machineType =
n1-standard-8``). A leaf is accounted for when

- it holds nothing (``false``, ``0``, ``""``, ``[]``: protobuf's and YAML's "unset"), or it is part
  of the format itself (``$schema``, ``type: command``, ``scaleTier: CUSTOM``);
- a rule of :data:`RULES` says where the portable job keeps it, and its value is there; a value
  kept in ``backends.<source>`` must also be spoken of by the migration report (carried, dropped
  or hinted at);
- or an import note or report entry names the leaf or a field around it (``hyperparameters``
  covers every leaf under it).

The rules say *where* a field goes, so an importer that silently forgets one (or a file with a
field no rule knows and no entry reports) is caught: :func:`unaccounted` returns those leaves.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Optional

from omnidist.compiler import delowering as importing
from omnidist.compiler.commandline import needs_shell
from omnidist.model import serde
from omnidist.model.job import DistributedJob

Leaf = tuple[tuple[str, ...], Any]
Check = Callable[[dict[tuple[str, ...], Any], Any, tuple[str, ...]], bool]

EMPTY = (None, False, "", 0, "0", [], {})


def leaves(data: Any, path: tuple[str, ...] = ()) -> Iterator[Leaf]:
    """Every leaf of a native spec with its path (list items by index); empty containers are leaves."""
    if isinstance(data, Mapping) and data:
        for key, value in data.items():
            yield from leaves(value, (*path, str(key)))
    elif isinstance(data, list) and data:
        for i, value in enumerate(data):
            yield from leaves(value, (*path, str(i)))
    else:
        yield path, data


def _norm(segment: str) -> str:
    return segment.replace("_", "").replace("-", "").lower()


def norm_path(text: str) -> tuple[str, ...]:
    """``workerPoolSpecs[0].machine_spec`` -> ``("workerpoolspecs", "0", "machinespec")``."""
    return tuple(_norm(s) for s in re.split(r"[.\[\]\s]+", text) if s)


def flatten(job: DistributedJob) -> dict[tuple[str, ...], Any]:
    """The portable job as ``path -> value`` (argv and lists as their items, ``T4:1`` kept whole)."""
    return {path: value for path, value in leaves(job.to_dict())}


def _values(flat: Mapping[tuple[str, ...], Any], globs: Iterable[str]) -> list[Any]:
    found = []
    for glob in globs:
        pattern = glob.split(".")
        for path, value in flat.items():
            if len(path) == len(pattern) and all(p in ("*", s) for p, s in zip(pattern, path)):
                found.append(value)
    return found


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def at(*globs: str, norm: Callable[[Any], Any] = lambda v: v) -> Check:
    """The leaf's value (through ``norm``) is among the portable job's values at ``globs``."""
    return lambda flat, value, path: any(_same(norm(value), v) for v in _values(flat, globs))


def fixed(*allowed: Any) -> Check:
    """A leaf that is part of the format: it holds one of ``allowed``."""
    return lambda flat, value, path: value in allowed


def _accelerator_part(index: int, native_names: Mapping[str, str]) -> Check:
    def check(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
        wanted = native_names.get(str(value), str(value)) if index == 0 else str(value)
        return any(str(v).split(":")[index] == wanted for v in _values(flat, ["*.accelerator"]))
    return check


VERTEX_GPUS = {"NVIDIA_TESLA_T4": "T4", "NVIDIA_TESLA_V100": "V100", "NVIDIA_TESLA_P100": "P100",
               "NVIDIA_TESLA_P4": "P4", "NVIDIA_TESLA_A100": "A100", "NVIDIA_A100_80GB": "A100-80GB",
               "NVIDIA_L4": "L4", "NVIDIA_H100_80GB": "H100", "NVIDIA_H100_MEGA_80GB": "H100-MEGA",
               "NVIDIA_H200_141GB": "H200", "NVIDIA_B200": "B200"}
"""The accelerator names both Google APIs use -> portable names (the test's own copy)."""

TPUS = {"TPU_V2": "TPU-V2", "TPU_V2_POD": "TPU-V2", "TPU_V3": "TPU-V3", "TPU_V3_POD": "TPU-V3"}
"""The TPU accelerator names both Google APIs use -> portable names (the test's own copy, SPEC §13)."""


def _tpu(flat: Mapping[tuple[str, ...], Any]) -> bool:
    """The job's primary holds a TPU slice."""
    return any(str(v).startswith("TPU-") for v in _values(flat, ["primary.accelerator", "primary.accelerator.type"]))


def _tpu_node(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """A legacy ``cloud_tpu`` worker (one) became the primary's TPU slice."""
    return _tpu(flat) and (str(value) == "cloud_tpu" or int(value) == 1)


PROGRAM = ("image", "*.image")
COMMAND = ("command.*", "*.command.*")
ARGS = ("args.*", "*.args.*")


def _proto_seconds(value: Any) -> Any:
    return int(str(value).rstrip("s").split(".")[0]) if str(value).endswith("s") else value


def _replicas(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    return int(value) == 1 or any(_same(value, v) for v in _values(flat, ["*.replicas"]))


def _env_name(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    return any(p[-1] == str(value) for p in flat if len(p) >= 2 and p[-2] == "env")


def _prebuilt_image(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """A Google prebuilt training image (``…/pytorch-gpu.1-13.py310``) became ``framework_version``."""
    version = flat.get(("framework_version",))
    return version is not None and f".{str(version).replace('.', '-')}" in str(value)


def _runtime_python(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """``pythonVersion`` 3.7, the one every runtime version from 1.15 ran, is implied by ``framework_version``."""
    return flat.get(("framework_version",)) is not None and str(value) == "3.7"


def _azure_command(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """The command became argv words, or ``bash -c`` with the text, lines and all, intact."""
    command = [v for _, v in sorted(((int(p[1]), v) for p, v in flat.items() if p[:1] == ("command",)
                                     and len(p) == 2))]
    text = re.sub(r"\$\{\{\s*(\w+)\.([\w.]+)\s*\}\}", r"${{\1.\2}}", str(value)).strip()
    if needs_shell(text):  # several lines, &&, $VAR…: only a shell runs it the same
        return command == ["bash", "-c", text]
    return command == shlex.split(text)


def _nodes(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    workers = next(iter(_values(flat, ["workers.replicas"])), 0)
    return int(value) == 1 + int(workers)


def _framework_of(kinds: Mapping[str, tuple[str, ...]]) -> Check:
    return lambda flat, value, path: flat.get(("framework",)) in kinds.get(str(value).lower(), ())


# --- tuning: each field of a native search is somewhere in the portable ``tuning`` block ---------

def _parameter(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """A searched parameter's name is a key of ``tuning.parameters``."""
    return any(p[:3] == ("tuning", "parameters", str(value)) for p in flat)


def _lowered(*globs: str, names: Optional[Mapping[str, Any]] = None) -> Check:
    """The native enum (through ``names``, else lower-cased) is among the values at ``globs``."""
    def norm(v: Any) -> Any:
        return names.get(str(v), str(v).lower()) if names is not None else str(v).lower()
    return at(*globs, norm=norm)


def _scale(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """A (reverse) log scale is some parameter's ``scale: log`` (``reverse_log``); a linear one is the default."""
    scales = _values(flat, ["tuning.parameters.*.scale"])
    if "REVERSE_LOG" in str(value):
        return "reverse_log" in scales
    return "log" in scales if "LOG" in str(value) else str(value) in ("UNIT_LINEAR_SCALE", "NONE")


def _count(glob: str, default: int) -> Check:
    """A trial count: the value at ``glob``, or the portable default the job file leaves out."""
    path = tuple(glob.split("."))
    return lambda flat, v, p: at(glob)(flat, v, p) or (path not in flat and int(v) == default)


def _stops_early(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    return flat.get(("tuning", "early_stopping")) is True


def _azure_parameter(field: str) -> Check:
    """``search_space.NAME.FIELD`` of a sweep: the parameter NAME (the flag the command passes it
    as, else NAME) holds it; a log distribution's bounds are exponents."""
    def check(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
        params = {p[2] for p in flat if p[:2] == ("tuning", "parameters") and len(p) > 2}
        if field == "type":
            return bool(params)
        wanted = [math.exp(float(value))] if "log" in str(value) or field in ("min", "max") else [value]
        candidates = {"min": ["tuning.parameters.*.min"], "max": ["tuning.parameters.*.max"],
                      "values": ["tuning.parameters.*.values.*"]}[field]
        found = _values(flat, candidates)
        return any(_same(value, v) or any(abs(float(w) - float(v)) < 1e-6 * max(1.0, abs(float(w)))
                                          for w in wanted if isinstance(v, (int, float))) for v in found)
    return check


def _sweep_command(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """The trial command without its ``--FLAG ${{search_space.KEY}}`` values (trials get them as
    ``--NAME=VALUE`` after the args)."""
    text = re.sub(r"\s*--?[\w.-]+[= ]\s*\$\{\{\s*search_space\.\w+\s*\}\}", "", str(value))
    return _azure_command(flat, text, path)


VERTEX_TUNING = [
    ("studySpec.metrics.*.metricId", at("tuning.metric.name")),
    ("studySpec.metrics.*.goal", _lowered("tuning.metric.goal")),
    ("studySpec.parameters.*.parameterId", _parameter),
    ("studySpec.parameters.*.*ValueSpec.minValue", at("tuning.parameters.*.min")),
    ("studySpec.parameters.*.*ValueSpec.maxValue", at("tuning.parameters.*.max")),
    ("studySpec.parameters.*.*ValueSpec.values.*", at("tuning.parameters.*.values.*")),
    ("studySpec.parameters.*.scaleType", _scale),
    ("studySpec.algorithm", _lowered("tuning.algorithm", names={
        "ALGORITHM_UNSPECIFIED": "bayesian", "GRID_SEARCH": "grid", "RANDOM_SEARCH": "random"})),
    ("studySpec.*StoppingSpec.**", _stops_early),
    ("maxTrialCount", at("tuning.max_trials")),
    ("parallelTrialCount", _count("tuning.parallel_trials", 1)),
    ("maxFailedTrialCount", at("tuning.max_failed_trials")),
]
"""Where a ``HyperparameterTuningJob``'s search lives in the portable job."""

LEGACY_TUNING = [
    ("trainingInput.hyperparameters.goal", _lowered("tuning.metric.goal")),
    ("trainingInput.hyperparameters.hyperparameterMetricTag", at("tuning.metric.name")),
    ("trainingInput.hyperparameters.maxTrials", at("tuning.max_trials")),
    ("trainingInput.hyperparameters.maxParallelTrials", _count("tuning.parallel_trials", 1)),
    ("trainingInput.hyperparameters.maxFailedTrials", at("tuning.max_failed_trials")),
    ("trainingInput.hyperparameters.enableTrialEarlyStopping", _stops_early),
    ("trainingInput.hyperparameters.algorithm", _lowered("tuning.algorithm", names={
        "ALGORITHM_UNSPECIFIED": "bayesian", "GRID_SEARCH": "grid", "RANDOM_SEARCH": "random"})),
    ("trainingInput.hyperparameters.params.*.parameterName", _parameter),
    ("trainingInput.hyperparameters.params.*.type", _lowered("tuning.parameters.*.type")),
    ("trainingInput.hyperparameters.params.*.minValue", at("tuning.parameters.*.min")),
    ("trainingInput.hyperparameters.params.*.maxValue", at("tuning.parameters.*.max")),
    ("trainingInput.hyperparameters.params.*.*Values.*", at("tuning.parameters.*.values.*")),
    ("trainingInput.hyperparameters.params.*.scaleType", _scale),
]
"""Where ``trainingInput.hyperparameters`` lives in the portable job."""

AZURE_TUNING = [
    ("type", fixed("command", "Command", "sweep")),
    ("sampling_algorithm", _lowered("tuning.algorithm", names={"bayesian": "bayesian", "random": "random",
                                                               "grid": "grid"})),
    ("sampling_algorithm.type", _lowered("tuning.algorithm")),
    ("search_space.*.type", _azure_parameter("type")),
    ("search_space.*.min_value", lambda flat, v, p: _azure_parameter("min")(flat, v, p)),
    ("search_space.*.max_value", lambda flat, v, p: _azure_parameter("max")(flat, v, p)),
    ("search_space.*.values.*", at("tuning.parameters.*.values.*")),
    ("objective.goal", _lowered("tuning.metric.goal")),
    ("objective.primary_metric", at("tuning.metric.name")),
    ("limits.max_total_trials", at("tuning.max_trials")),
    ("limits.max_concurrent_trials", _count("tuning.parallel_trials", 1)),
    ("early_termination.**", _stops_early),
    ("trial.command", _sweep_command),
]
"""Where a sweep job's search lives in the portable job (its ``trial`` is read as a command job)."""


def _input_mode(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """An Azure input's mode: the portable input's (``ro_mount`` when it is a bare location)."""
    kept = flat.get(("inputs", path[1], "mode"), "ro_mount" if ("inputs", path[1]) in flat else None)
    return kept == value


def _data_type(kind: str) -> Check:
    """An Azure data type: the one compile declares for the portable location."""
    def check(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
        from omnidist_azure_ml.code_data import data_type

        uri = flat.get((kind, path[1])) or flat.get((kind, path[1], "uri"))
        return isinstance(uri, str) and data_type(uri) == value
    return check


def _under(*prefixes: str) -> Check:
    """The leaf's value is some value of the portable job under one of ``prefixes`` (dotted)."""
    wanted = [tuple(p.split(".")) for p in prefixes]

    def check(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
        return any(p[:len(w)] == w and _same(value, v) for p, v in flat.items() for w in wanted)
    return check


def _hyperparameter(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """A SageMaker hyperparameter: script mode's own (its program, code, distribution), one of the
    program's args, or one kept for the image in ``backends.sagemaker.hyperparameters``."""
    key = path[1] if len(path) == 2 else ""
    if path[-1] == "name" and not str(value).startswith("sagemaker_"):
        return any(str(v) == f"--{value}" for p, v in flat.items() if p[:1] == ("args",)) or any(
            p[:3] == ("backends", "sagemaker", "hyperparameters") and p[-1] == str(value) for p in flat)
    text = str(value)
    decoded = text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text
    return key.startswith("sagemaker_") or (path[-1] == "value" and any(
        _same(decoded, v) for p, v in flat.items() if p[:1] in (("args",), ("command",), ("code",),
                                                                ("processes_per_node",)))) or any(
        _same(decoded, v) for p, v in flat.items() if p[:1] in (("args",), ("command",), ("code",))
        or p[:3] == ("backends", "sagemaker", "hyperparameters")) or _same(value, _sm_key(flat, key))


def _sm_key(flat: Mapping[tuple[str, ...], Any], key: str) -> Any:
    return flat.get(("backends", "sagemaker", "hyperparameters", key))


def _dlc(flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    """An AWS Deep Learning Container became ``framework_version``."""
    version = flat.get(("framework_version",))
    return version is not None and f":{version}" in str(value)


SAGEMAKER_TUNING = [
    ("HyperParameterTuningJobConfig.Strategy",
     lambda flat, v, p: str(v).lower() == flat.get(("tuning", "algorithm"), "bayesian")),
    ("HyperParameterTuningJobConfig.HyperParameterTuningJobObjective.Type", _lowered("tuning.metric.goal")),
    ("HyperParameterTuningJobConfig.HyperParameterTuningJobObjective.MetricName", at("tuning.metric.name")),
    ("HyperParameterTuningJobConfig.ResourceLimits.MaxNumberOfTrainingJobs", at("tuning.max_trials")),
    ("HyperParameterTuningJobConfig.ResourceLimits.MaxParallelTrainingJobs", _count("tuning.parallel_trials", 1)),
    ("HyperParameterTuningJobConfig.ParameterRanges.*.*.Name", _parameter),
    ("HyperParameterTuningJobConfig.ParameterRanges.*.*.MinValue", at("tuning.parameters.*.min")),
    ("HyperParameterTuningJobConfig.ParameterRanges.*.*.MaxValue", at("tuning.parameters.*.max")),
    ("HyperParameterTuningJobConfig.ParameterRanges.*.*.Values.*", at("tuning.parameters.*.values.*")),
    ("HyperParameterTuningJobConfig.ParameterRanges.*.*.ScalingType",
     lambda flat, v, p: _scale(flat, "LOG" if v == "Logarithmic" else "NONE", p)),
    ("HyperParameterTuningJobConfig.TrainingJobEarlyStoppingType",
     lambda flat, v, p: v == "Off" or _stops_early(flat, v, p)),
    ("HyperParameterTuningJobName", at("name", norm=importing.portable_name)),
]
"""Where a SageMaker tuning job's search lives in the portable job."""


RULES: dict[str, list[tuple[str, Check]]] = {
    "sagemaker": [
        *SAGEMAKER_TUNING,
        ("apiVersion", fixed("sagemaker.aws.amazon.com/v1", "sagemaker.services.k8s.aws/v1alpha1")),
        ("kind", fixed("TrainingJob", "HyperParameterTuningJob", "HyperparameterTuningJob")),
        ("metadata.**", lambda flat, v, p: True),  # the resource's own name and bookkeeping
        ("status.**", lambda flat, v, p: True),  # a resource's status: what ran, not the job
        ("TrainingJobName", at("name", norm=importing.portable_name)),
        ("RoleArn", at("backends.sagemaker.role_arn")),
        ("Region", at("backends.sagemaker.region")),
        ("AlgorithmSpecification.TrainingImage", lambda flat, v, p: at(*PROGRAM)(flat, v, p) or _dlc(flat, v, p)),
        ("AlgorithmSpecification.TrainingInputMode",
         lambda flat, v, p: v in ("File", "FastFile") or at("backends.sagemaker.input_mode")(flat, v, p)),
        ("AlgorithmSpecification.MetricDefinitions.*.*",
         _under("backends.sagemaker.metric_definitions", "tuning.metric.name")),
        ("AlgorithmSpecification.EnableSageMakerMetricsTimeSeries", at("backends.sagemaker.metrics_time_series")),
        ("AlgorithmSpecification.ContainerEntrypoint.*", at(*COMMAND)),
        ("AlgorithmSpecification.ContainerArguments.*", at(*ARGS)),
        ("HyperParameters.**", _hyperparameter),
        ("InputDataConfig.*.ChannelName", lambda flat, v, p: any(k[:2] == ("inputs", str(v)) for k in flat)
         or _under("backends.sagemaker.channels")(flat, v, p) or (v == "code" and ("code",) in flat)),
        ("InputDataConfig.*.InputMode", lambda flat, v, p: True if v in ("File", "FastFile")
         else _under("backends.sagemaker.channels")(flat, v, p)),
        ("InputDataConfig.*.DataSource.S3DataSource.S3Uri", _under("inputs", "code", "backends.sagemaker.channels")),
        ("InputDataConfig.*.DataSource.S3DataSource.S3DataType", lambda flat, v, p: v == "S3Prefix"
         or _under("backends.sagemaker.channels")(flat, v, p)),
        ("InputDataConfig.*.DataSource.S3DataSource.S3DataDistributionType",
         lambda flat, v, p: v == "FullyReplicated" or _under("backends.sagemaker.channels")(flat, v, p)),
        ("InputDataConfig.*.ContentType", lambda flat, v, p: at("backends.sagemaker.content_types.*")(flat, v, p)
         or _under("backends.sagemaker.channels")(flat, v, p)),
        ("InputDataConfig.*.CompressionType", lambda flat, v, p: v == "None"
         or _under("backends.sagemaker.channels")(flat, v, p)),
        ("InputDataConfig.**", _under("backends.sagemaker.channels")),
        ("OutputDataConfig.S3OutputPath", at("backends.sagemaker.base_output_dir")),
        ("OutputDataConfig.KmsKeyId", at("backends.sagemaker.output_kms_key_id")),
        ("ResourceConfig.InstanceType", at("backends.sagemaker.instance_types.*")),
        ("ResourceConfig.InstanceCount", _nodes),
        ("ResourceConfig.VolumeSizeInGB", at("*.disk_gb")),
        ("ResourceConfig.VolumeKmsKeyId", at("backends.sagemaker.volume_kms_key_id")),
        ("StoppingCondition.MaxRuntimeInSeconds", at("timeout", norm=serde.format_duration)),
        ("StoppingCondition.MaxWaitTimeInSeconds", at("backends.sagemaker.max_wait")),
        ("EnableManagedSpotTraining", lambda flat, v, p: flat.get(("spot",)) is True),
        ("CheckpointConfig.S3Uri", at("backends.sagemaker.checkpoint_s3_uri", "outputs.checkpoints.uri")),
        ("CheckpointConfig.LocalPath", fixed("/opt/ml/checkpoints", "/opt/ml/checkpoints/")),
        ("Environment.*", at("env.*")),
        ("VpcConfig.SecurityGroupIds.*", at("backends.sagemaker.security_group_ids.*")),
        ("VpcConfig.Subnets.*", at("backends.sagemaker.subnets.*")),
        ("Tags.*.Key", lambda flat, v, p: ("labels", str(v)) in flat),
        ("Tags.*.Value", at("labels.*")),
        ("EnableNetworkIsolation", at("backends.sagemaker.enable_network_isolation")),
        ("EnableInterContainerTrafficEncryption", at("backends.sagemaker.encrypt_inter_container_traffic")),
        ("RetryStrategy.MaximumRetryAttempts", at("backends.sagemaker.max_retries")),
        *[(key, lambda flat, v, p: True) for key in (
            "TrainingJobArn", "TrainingJobStatus", "SecondaryStatus", "SecondaryStatusTransitions.**",
            "CreationTime", "LastModifiedTime", "TrainingStartTime", "TrainingEndTime", "TrainingTimeInSeconds",
            "BillableTimeInSeconds", "ModelArtifacts.**", "FinalMetricDataList.**", "ProfilingStatus",
            "FailureReason", "WarmPoolStatus.**")],  # a description's account of the run
    ],
    "vertex": [
        ("displayName", at("name", norm=importing.portable_name)),
        ("labels.*", at("labels.*")),
        ("name", at("backends.vertex.region", norm=lambda v: str(v).split("/")[3] if str(v).count("/") > 3 else v)),
        ("workerPoolSpecs.*.machineSpec.machineType", at("backends.vertex.machine_types.*")),
        ("workerPoolSpecs.*.machineSpec.acceleratorType", _accelerator_part(0, {**VERTEX_GPUS, **TPUS})),
        ("workerPoolSpecs.*.machineSpec.tpuTopology", lambda flat, v, p: _tpu(flat)),
        ("workerPoolSpecs.*.machineSpec.acceleratorCount", _accelerator_part(1, {})),
        ("workerPoolSpecs.*.replicaCount", _replicas),
        (
            "workerPoolSpecs.*.containerSpec.imageUri",
            lambda flat, v, p: "reductionserver" in str(v) or at(*PROGRAM)(flat, v, p),
        ),
        ("workerPoolSpecs.*.containerSpec.command.*", at(*COMMAND)),
        ("workerPoolSpecs.*.containerSpec.args.*", at(*ARGS)),
        ("workerPoolSpecs.*.containerSpec.env.*.name", _env_name),
        ("workerPoolSpecs.*.containerSpec.env.*.value", at("env.*", "*.env.*")),
        (
            "workerPoolSpecs.*.pythonPackageSpec.executorImageUri",
            lambda flat, v, p: at(*PROGRAM)(flat, v, p) or _prebuilt_image(flat, v, p),
        ),
        ("workerPoolSpecs.*.pythonPackageSpec.pythonModule", at("module")),
        ("workerPoolSpecs.*.pythonPackageSpec.packageUris.*", at("code")),
        ("workerPoolSpecs.*.pythonPackageSpec.args.*", at(*ARGS)),
        ("workerPoolSpecs.*.pythonPackageSpec.env.*.name", _env_name),
        ("workerPoolSpecs.*.pythonPackageSpec.env.*.value", at("env.*", "*.env.*")),
        ("workerPoolSpecs.*.diskSpec.bootDiskSizeGb", lambda flat, v, p: int(v) == 100 or at("*.disk_gb")(flat, v, p)),
        ("workerPoolSpecs.*.diskSpec.bootDiskType", at("backends.vertex.boot_disk_type")),
        ("scheduling.timeout", at("timeout", norm=lambda v: serde.format_duration(_proto_seconds(v)))),
        (
            "scheduling.strategy",
            lambda flat, v, p: flat.get(("spot",)) is (v in ("SPOT", "LOW_COST")) or v in ("STANDARD", "ON_DEMAND"),
        ),
        ("scheduling.restartJobOnWorkerRestart", at("backends.vertex.restart_job_on_worker_restart")),
        ("serviceAccount", at("backends.vertex.service_account")),
        ("network", at("backends.vertex.network")),
        *VERTEX_TUNING,
        ("tensorboard", at("backends.vertex.tensorboard")),
        ("enableWebAccess", at("backends.vertex.enable_web_access")),
        ("persistentResourceId", at("backends.vertex.persistent_resource_id")),
        (
            "baseOutputDirectory.outputUriPrefix",
            lambda flat, v, p: (
                at("backends.vertex.base_output_dir")(flat, v, p) and flat.get(("outputs", "model")) is not None
            ),
        ),
        ("encryptionSpec.kmsKeyName", at("backends.vertex.kms_key_name")),
    ],
    "ai_platform": [
        (
            "jobId",
            at("name", "backends.ai_platform.job_id", norm=lambda v: importing.portable_name(str(v).replace("_", "-"))),
        ),
        ("labels.*", at("labels.*")),
        (
            "trainingInput.scaleTier",
            lambda flat, v, p: v == "CUSTOM" or at("backends.ai_platform.scale_tier")(flat, v, p),
        ),
        ("trainingInput.workerType", lambda flat, v, p: (v == "cloud_tpu" and _tpu_node(flat, v, p))
         or at("backends.ai_platform.machine_types.*")(flat, v, p)),
        ("trainingInput.workerCount", lambda flat, v, p: _tpu_node(flat, v, p) or _replicas(flat, v, p)),
        ("trainingInput.*Config.tpuTfVersion", at("backends.ai_platform.tpu_tf_version")),
        ("trainingInput.*Type", at("backends.ai_platform.machine_types.*")),
        ("trainingInput.*Count", _replicas),
        ("trainingInput.*Config.imageUri", lambda flat, v, p: at(*PROGRAM)(flat, v, p) or _prebuilt_image(flat, v, p)),
        ("trainingInput.*Config.acceleratorConfig.type", _accelerator_part(0, {**VERTEX_GPUS, **TPUS})),
        ("trainingInput.*Config.acceleratorConfig.count", _accelerator_part(1, {})),
        (
            "trainingInput.*Config.diskConfig.bootDiskSizeGb",
            lambda flat, v, p: int(v) == 100 or at("*.disk_gb")(flat, v, p),
        ),
        ("trainingInput.*Config.diskConfig.bootDiskType", fixed("pd-ssd")),
        ("trainingInput.*Config.containerCommand.*", at(*COMMAND)),
        ("trainingInput.*Config.containerArgs.*", at(*ARGS)),
        ("trainingInput.args.*", at(*ARGS)),
        ("trainingInput.runtimeVersion", at("backends.ai_platform.runtime_version", "framework_version")),
        (
            "trainingInput.pythonVersion",
            lambda flat, v, p: at("backends.ai_platform.python_version")(flat, v, p) or _runtime_python(flat, v, p),
        ),
        ("trainingInput.pythonModule", at("backends.ai_platform.python_module", "module")),
        ("trainingInput.packageUris.*", at("backends.ai_platform.package_uris.*", "code")),
        (
            "trainingInput.jobDir",
            lambda flat, v, p: (
                at("backends.ai_platform.job_dir")(flat, v, p) and flat.get(("outputs", "model")) is not None
            ),
        ),
        ("trainingInput.region", at("backends.ai_platform.region")),
        ("trainingInput.serviceAccount", at("backends.ai_platform.service_account")),
        ("trainingInput.network", at("backends.ai_platform.network")),
        ("trainingInput.enableWebAccess", at("backends.ai_platform.enable_web_access")),
        ("trainingInput.useChiefInTfConfig", at("backends.ai_platform.use_chief_in_tf_config")),
        *LEGACY_TUNING,
        (
            "trainingInput.scheduling.maxRunningTime",
            at("timeout", norm=lambda v: serde.format_duration(_proto_seconds(v))),
        ),
    ],
    "azure_ml": [
        ("$schema", lambda flat, v, p: "azureml" in str(v)),
        *AZURE_TUNING,
        ("command", _azure_command),
        ("code", at("code", norm=lambda v: str(v).removeprefix("azureml:") if str(v).startswith("azureml:.") else v)),
        ("description", at("description")),
        ("inputs.*", lambda flat, v, p: flat.get(p) == v or flat.get(p) == str(v).lower()),
        ("inputs.*.path", lambda flat, v, p: v in (flat.get(("inputs", p[1])), flat.get(("inputs", p[1], "uri")))),
        ("inputs.*.mode", _input_mode),
        ("inputs.*.type", _data_type("inputs")),
        ("outputs.*.path", lambda flat, v, p: flat.get(("outputs", p[1], "uri")) == v),
        ("outputs.*.mode", fixed("rw_mount")),
        (
            "outputs.*.type",
            lambda flat, v, p: v == "uri_folder" and ("outputs", p[1]) in flat or ("outputs", p[1], "uri") in flat,
        ),
        ("environment", at("backends.azure_ml.environment")),
        ("environment.image", at("image")),
        ("compute", at("backends.azure_ml.compute", norm=lambda v: str(v).removeprefix("azureml:"))),
        ("resources.instance_count", _nodes),
        ("resources.instance_type", at("backends.azure_ml.instance_type")),
        ("resources.shm_size", at("backends.azure_ml.shm_size")),
        ("resources.docker_args", at("backends.azure_ml.docker_args")),
        (
            "distribution.type",
            _framework_of(
                {"pytorch": ("pytorch", "deepspeed", "custom"), "mpi": ("horovod",), "tensorflow": ("tensorflow",)}
            ),
        ),
        (
            "distribution.process_count_per_instance",
            lambda flat, v, p: at("processes_per_node")(flat, v, p) or flat.get(("processes_per_node",)) is None,
        ),
        ("distribution.worker_count", _nodes),
        ("distribution.parameter_server_count", at("parameter_servers.replicas")),
        ("environment_variables.*", at("env.*")),
        ("limits.timeout", at("timeout", norm=serde.format_duration)),
        (
            "queue_settings.job_tier",
            lambda flat, v, p: (
                flat.get(("spot",)) is True
                if str(v).lower() == "spot"
                else at("backends.azure_ml.job_tier", norm=str.lower)(flat, v, p)
            ),
        ),
        ("queue_settings.priority", at("backends.azure_ml.priority")),
        ("tags.*", at("labels.*")),
        ("display_name", at("name", norm=importing.portable_name)),
        ("name", at("name", norm=importing.portable_name)),
        ("experiment_name", at("name", "backends.azure_ml.experiment_name", norm=lambda v: v)),
    ],
}
"""Source backend -> (native path pattern, where the portable job keeps that field). In a pattern
``*`` is one segment or part of one (``*Type``), ``**`` any rest; Vertex paths start below
``jobSpec`` (or ``trialJobSpec``), in JSON field names."""


def _matches(pattern: str, path: tuple[str, ...]) -> bool:
    parts = pattern.split(".")
    if parts[-1] == "**":
        return len(path) > len(parts) - 1 and _matches(".".join(parts[:-1]), path[:len(parts) - 1])
    return len(parts) == len(path) and all(re.fullmatch(re.escape(p).replace(r"\*", ".*"), s)
                                           for p, s in zip(parts, path))


def native_path(path: tuple[str, ...], source: str) -> tuple[str, ...]:
    """The path as :data:`RULES` spell it: JSON field names, Vertex below its job spec, a sweep's
    trial as the command job it is."""
    if source == "azure_ml" and path[:1] == ("trial",) and path[1:2] != ("command",):
        return path[1:]
    if source == "sagemaker":
        from omnidist_sagemaker.importer import _pascal_key

        path = path[1:] if path[:1] == ("spec",) else path
        if path[:1] in (("metadata",), ("status",), ("apiVersion",), ("kind",)):
            return path
        named = tuple(s if s.isdigit() or i and path[i - 1] in MAP_KEYS else _pascal_key(s) for i, s in enumerate(path))
        if named[:1] == ("TrainingJobDefinition",):
            named = named[1:]
        return ("HyperParameters", *named[1:]) if named[:1] == ("StaticHyperParameters",) else named
    if source != "vertex":
        return path
    camel = tuple(importing.camel(s) for s in path)
    camel = camel[1:] if camel[:1] in (("jobSpec",), ("trialJobSpec",)) else camel
    if camel[:1] == ("workerPoolSpecs",) and len(camel) > 1 and not camel[1].isdigit():
        camel = (camel[0], "0", *camel[1:])  # one pool written as a mapping, not a list
    return camel


MAP_KEYS = ("Environment", "HyperParameters", "StaticHyperParameters", "environment", "hyperParameters",
            "staticHyperParameters")
"""SageMaker members whose keys are the user's own (not PascalCased)."""


def spoken_of(path: tuple[str, ...], fields: Iterable[str]) -> bool:
    """True when a report field names ``path`` or a field around it (its segments end one of the
    leaf's ancestors)."""
    normalized = tuple(_norm(s) for s in path)
    ancestors = [normalized[:i] for i in range(1, len(normalized) + 1)]
    for field in fields:
        wanted = norm_path(field)
        if wanted and any(a[-len(wanted):] == wanted for a in ancestors if len(a) >= len(wanted)):
            return True
    return False


def _where(check: Check, flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...]) -> bool:
    try:
        return bool(check(flat, value, path))
    except (TypeError, ValueError, AttributeError):
        return False


def unaccounted(native: Any, source: str, job: DistributedJob, fields: Iterable[str],
                carried: Optional[Iterable[str]] = None) -> list[str]:
    """The leaves of ``native`` that neither a rule nor a report field accounts for.

    Args:
        native: the spec as read (a mapping).
        source: its backend.
        job: the imported portable job.
        fields: the fields of the import notes and (for a migration) the report entries.
        carried: for a migration, the report fields: a value kept in ``backends.<source>.KEY``
            counts as mapped only when they speak of ``backends.<source>.KEY``.
    """
    fields = list(fields)
    flat = flatten(job)
    lost = []
    for path, value in leaves(native):
        if value in EMPTY or spoken_of(path, fields):
            continue
        rule_path = native_path(path, source)
        check = next((c for pattern, c in RULES[source] if _matches(pattern, rule_path)), None)
        if check is None or not _where(check, flat, value, rule_path):
            lost.append(f"{'.'.join(path)} = {importing.shorten(value, 40)}")
            continue
        if carried is not None and not _carried(check, flat, value, rule_path, source, list(carried)):
            lost.append(f"{'.'.join(path)} = {importing.shorten(value, 40)} (kept in backends.{source}, not reported)")
    return lost


def _carried(check: Check, flat: Mapping[tuple[str, ...], Any], value: Any, path: tuple[str, ...], source: str,
             report: list[str]) -> bool:
    """A value the job keeps in the source's block survives a migration only as a report line
    about that key (carried, dropped, a hint), or about the machine the target chose for it."""
    from omnidist.backend import registry

    outside = {p: v for p, v in flat.items() if p[:2] != ("backends", source)}
    if _where(check, outside, value, path):
        return True
    keys = {p[2] for p, v in flat.items() if p[:2] == ("backends", source) and _where(check, {p: v}, value, path)}
    for key in keys:
        prefix = norm_path(f"backends.{source}.{key}")
        if any(norm_path(field)[:len(prefix)] == prefix for field in report):
            return True
        machines = registry.get(source).migration.machine_setting
        if key in (machines, "instance_type") and any(field.endswith(".machine") for field in report):
            return True
    return False


# --- meaning: what the target runs, read back from its request ---------------------------------------

def _vcpus(backend: str, machine: Optional[str]) -> Optional[int]:
    """vCPUs of a machine a backend names (``None`` when unknown)."""
    if not machine:
        return None
    if backend == "azure_ml":
        from omnidist_azure_ml import catalog as azure

        found = azure.lookup(machine)
    elif backend == "sagemaker":
        from omnidist_sagemaker import catalog as sagemaker

        found = sagemaker.machine(machine)
    elif backend == "ai_platform":
        from omnidist_ai_platform import catalog as legacy

        found = legacy.MACHINES.get(machine)
    else:
        from omnidist_google.compute_engine import COMPUTE_ENGINE

        found = COMPUTE_ENGINE.get(machine)
    return found.vcpus if found else None


def _machine_of(job: DistributedJob, backend: str, role: str) -> Optional[str]:
    block = job.backends.get(backend, {})
    return (block.get("machine_types") or block.get("instance_types") or {}).get(role) or (
        block.get("instance_type") if role in ("primary", "workers") else None)


def meaning_changes(imported: DistributedJob, source: str, request: Mapping[str, Any], target: str,
                    report: Iterable[Any]) -> list[str]:
    """What the target's request runs differently from the source, with no ``changed`` or
    ``dropped`` line to say so: another GPU model or count, fewer vCPUs, a role gone, a command
    that lost its lines, a machine name the target does not have."""
    from omnidist.backend import registry
    from omnidist.model.roles import effective_role, effective_roles

    said = [e.field for e in report if e.fidelity.value in ("changed", "dropped")]
    readback = registry.get(target).import_native(request)
    found = []
    for role in effective_roles(imported):
        name = role.name.value
        got = effective_role(readback, name)
        if got is not None and target == "azure_ml" and name == "parameter_servers":
            got = effective_role(readback, "primary")  # they run on the job's nodes, with their GPUs
        if name in said:
            continue  # the role itself was given up, and said so
        if got is None:
            found.append(f"{name}: gone")
            continue
        # (a role that had to take the primary's hardware on the target is reported on its cpus or memory)
        moved = {f"{name}.{field}" for field in ("machine", "accelerator", "cpus", "memory_gb", "disk_gb")}
        gpus_said = moved & set(said) or any("accelerator" in f for f in said)
        if (role.accelerator, role.gpus) != (got.accelerator, got.gpus) and not gpus_said:
            found.append(f"{name}: {role.accelerator} became {got.accelerator}")
        before = _vcpus(source, _machine_of(imported, source, name))
        after = _vcpus(target, _machine_of(readback, target, name))
        size_said = {f"{name}.machine", f"{name}.cpus"} & set(said)
        if not role.accelerator and before and after and after < before and not size_said:
            found.append(f"{name}: {before} vCPUs became {after}")
        machine = _machine_of(readback, target, name)
        if target != "azure_ml" and machine and _vcpus(target, machine) is None and "-" not in machine:
            found.append(f"{name}: {machine} is not a {target} machine")
    entrypoint = not imported.command and not imported.module  # a module runs `python -m MODULE`
    if entrypoint and readback.command and not spoken_of(("command",), [e.field for e in report]):
        found.append(f"command: the image's own entrypoint became the command {' '.join(readback.command)[:40]!r}")
    lines = [a.count("\n") for a in imported.command if "\n" in a]
    if lines and sorted(lines) != sorted(a.count("\n") for a in readback.command if "\n" in a):
        found.append("command: its lines were not kept")
    return found
