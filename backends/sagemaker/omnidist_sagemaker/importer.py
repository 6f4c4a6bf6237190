"""SageMaker's native files -> portable job. Pure: no network, no SDK import.

Reads a ``CreateTrainingJob`` request (boto3's keyword arguments, ``--cli-input-json``, YAML),
``DescribeTrainingJob`` output (``null`` members dropped, status fields ignored), a
``CreateHyperParameterTuningJob`` request, and the ``TrainingJob`` / ``HyperParameterTuningJob``
custom resources of the SageMaker operators for Kubernetes, whose camelCase ``spec`` is the
request (:func:`from_custom_resource`). One small function per part of the request; what the
portable job cannot hold is kept in ``backends.sagemaker`` or noted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import (
    ACCELERATORS_BY_NAME,
    REQUEST_ID_LABEL,
    RETIRED_GPUS,
    Accelerator,
    DistributedJob,
    Framework,
    Note,
    NoteKind,
    ValidationError,
    cannot_hold,
    dropped_note,
    job_from_dict,
    pick_name,
    retired_gpu,
)
from omnidist.runtime import hints
from omnidist.runtime.launch import NPROC_FLAG, is_launch_command, launch_options
from omnidist.runtime.platforms import sagemaker as platform
from omnidist_sagemaker import catalog, tuning
from omnidist_sagemaker.code_data import CODE_CHANNEL
from omnidist_sagemaker.tables import (
    DLC_IMAGE,
    DLC_VERSIONS,
    NAME,
    OPERATOR_GROUPS,
    OPERATOR_KINDS,
    PORTABLE_INPUT_MODES,
)

BLOCK = f"backends.{NAME}"

REQUEST_KEYS = frozenset({"TrainingJobName", "AlgorithmSpecification", "ResourceConfig"})
"""Keys of a training request or description: two of them tell one."""

DESCRIBE_ONLY = ("AutoMLJobArn", "BillableTimeInSeconds", "CreationTime", "FailureReason", "FinalMetricDataList",
                 "LabelingJobArn", "LastModifiedTime", "ModelArtifacts", "ProfilerRuleEvaluationStatuses",
                 "ProfilingStatus", "SecondaryStatus", "SecondaryStatusTransitions", "TrainingEndTime",
                 "TrainingJobArn", "TrainingJobStatus", "TrainingStartTime", "TrainingTimeInSeconds",
                 "TuningJobArn", "WarmPoolStatus", "DebugRuleEvaluationStatuses", "RetryStrategyStatus",
                 "TensorBoardOutputConfig.LocalPath")
"""What a DescribeTrainingJob output says about the run, not the job: read past."""

DROPPED = {
    "DebugHookConfig": "SageMaker Debugger's hooks are SageMaker's own",
    "DebugRuleConfigurations": "SageMaker Debugger's rules are SageMaker's own",
    "ExperimentConfig": "SageMaker Experiments are SageMaker's own",
    "InfraCheckConfig": "SageMaker's infrastructure checks are its own",
    "ProfilerConfig": "SageMaker's profiler is its own",
    "ProfilerRuleConfigurations": "SageMaker's profiler rules are its own",
    "RemoteDebugConfig": "SageMaker's remote debugging is its own",
    "ResourceConfig.KeepAlivePeriodInSeconds": "warm pools are SageMaker's own",
    "StoppingCondition.MaxPendingTimeInSeconds": "the portable job has no limit on the time spent waiting for capacity",
    "TensorBoardOutputConfig": "the TensorBoard output is SageMaker's own; write it with the job's outputs",
    "WarmStartConfig": "a warm start from earlier tuning jobs is SageMaker's own",
}
"""Request members the portable job cannot hold -> why (each dropped with a note)."""

SETTINGS_KEYS: dict[str, str] = {
    "EnableInterContainerTrafficEncryption": "encrypt_inter_container_traffic",
    "EnableNetworkIsolation": "enable_network_isolation",
    "RoleArn": "role_arn",
}
"""Top-level request members -> the setting that keeps them."""

CHANNEL_KEYS = frozenset({"ChannelName", "DataSource", "InputMode", "ContentType", "CompressionType"})
"""A channel made of these only (with a plain S3 prefix, uncompressed) is an input (its content type
kept in ``content_types``); others stay channels."""

REPOSITORY_FRAMEWORKS: dict[str, Framework] = {
    "huggingface-pytorch-training": Framework.PYTORCH,
    "pytorch-training": Framework.PYTORCH,
    "sagemaker-pytorch": Framework.PYTORCH,
    "sagemaker-tensorflow": Framework.TENSORFLOW,
    "sagemaker-tensorflow-scriptmode": Framework.TENSORFLOW,
    "tensorflow-training": Framework.TENSORFLOW,
}
"""An image repository -> the framework its jobs run."""


# --- recognizing and reading the forms ---------------------------------------------------------------

def _operator(native: Mapping[str, Any]) -> Optional[str]:
    group = str(native.get("apiVersion", "")).split("/")[0]
    return OPERATOR_KINDS.get(str(native.get("kind"))) if group in OPERATOR_GROUPS else None


def recognizes(native: Any) -> bool:
    """A training or tuning request or description, or a SageMaker operator's custom resource."""
    if not isinstance(native, Mapping):
        return False
    if _operator(native):
        return True
    return len(REQUEST_KEYS & set(native)) >= 2 or "HyperParameterTuningJobConfig" in native


def _pascal_key(key: str) -> str:
    """A custom resource's camelCase member -> the API's (``roleARN`` -> ``RoleArn``, ``type_`` -> ``Type``)."""
    key = key.rstrip("_")
    key = re.sub(r"ARN$", "Arn", re.sub(r"URI$", "Uri", re.sub(r"IDs$", "Ids", re.sub(r"ID$", "Id", key))))
    return key[:1].upper() + key[1:]


MAP_MEMBERS = frozenset({"Environment", "HyperParameters", "StaticHyperParameters"})
"""Members whose keys are the user's own (left as they are)."""


def _pascal(data: Any) -> Any:
    if isinstance(data, Mapping):
        out = {}
        for key, value in data.items():
            name = _pascal_key(str(key))
            if name in MAP_MEMBERS:
                out[name] = _name_value_map(value)
            else:
                out[name] = _pascal(value)
        return out
    if isinstance(data, list):
        return [_pascal(v) for v in data]
    return data


def _name_value_map(value: Any) -> Any:
    """The original operator writes hyperparameters as ``[{name, value}]``; the API takes a map."""
    if isinstance(value, list):
        return {str(item.get("name")): item.get("value") for item in value if isinstance(item, Mapping)}
    return value


def from_custom_resource(native: Mapping[str, Any], notes: list[Note]) -> dict[str, Any]:
    """The request an operator's ``spec`` stands for: members PascalCased, the name from
    ``metadata.name`` when the spec has none, ``region`` kept, the operator's own members noted."""
    spec = dict(native.get("spec") or {})
    request = _pascal(spec)
    name_key = "HyperParameterTuningJobName" if _operator(native) == "tuning" else "TrainingJobName"
    metadata = native.get("metadata")
    if not request.get(name_key) and isinstance(metadata, Mapping):
        request[name_key] = metadata.get("name")
    if "SageMakerEndpoint" in request:
        request.pop("SageMakerEndpoint")
        notes.append(dropped_note("spec.sageMakerEndpoint", "the operator's own endpoint"))
    if native.get("status"):
        notes.append(Note(kind=NoteKind.HINT, field="status", message="the resource's status is read past"))
    return request


def _without_nulls(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {k: _without_nulls(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [_without_nulls(v) for v in data if v is not None]
    return data


STR, INT, BOOL, NUMBER = "string", "integer", "boolean", "number"
SCALAR = (STR, INT, NUMBER, BOOL)

_TRAINING: dict[str, Any] = {
    "TrainingJobName": STR, "RoleArn": STR, "Region": STR,
    "AlgorithmSpecification": {"TrainingImage": STR, "TrainingInputMode": STR, "AlgorithmName": STR,
                               "ContainerEntrypoint": [STR], "ContainerArguments": [STR],
                               "EnableSageMakerMetricsTimeSeries": BOOL,
                               "MetricDefinitions": [{"Name": STR, "Regex": STR}]},
    "HyperParameters": {"*": SCALAR}, "StaticHyperParameters": {"*": SCALAR}, "Environment": {"*": SCALAR},
    "ResourceConfig": {"InstanceType": STR, "InstanceCount": INT, "VolumeSizeInGB": INT, "VolumeKmsKeyId": STR,
                       "InstanceGroups": [{"InstanceGroupName": STR, "InstanceType": STR, "InstanceCount": INT}]},
    "InputDataConfig": [{"ChannelName": STR, "InputMode": STR, "DataSource": {
        "S3DataSource": {"S3Uri": STR, "S3DataType": STR, "S3DataDistributionType": STR}}}],
    "OutputDataConfig": {"S3OutputPath": STR, "KmsKeyId": STR, "CompressionType": STR},
    "StoppingCondition": {"MaxRuntimeInSeconds": INT, "MaxWaitTimeInSeconds": INT},
    "CheckpointConfig": {"S3Uri": STR, "LocalPath": STR},
    "VpcConfig": {"Subnets": [STR], "SecurityGroupIds": [STR]},
    "Tags": [{"Key": STR, "Value": STR}], "EnableManagedSpotTraining": BOOL, "EnableNetworkIsolation": BOOL,
    "EnableInterContainerTrafficEncryption": BOOL, "RetryStrategy": {"MaximumRetryAttempts": INT},
}
SHAPE: dict[str, Any] = {
    **_TRAINING, "HyperParameterTuningJobName": STR, "TrainingJobDefinition": _TRAINING,
    "TrainingJobDefinitions": [_TRAINING],
    "HyperParameterTuningJobConfig": {
        "Strategy": STR, "TrainingJobEarlyStoppingType": STR,
        "HyperParameterTuningJobObjective": {"Type": STR, "MetricName": STR},
        "ResourceLimits": {"MaxNumberOfTrainingJobs": INT, "MaxParallelTrainingJobs": INT},
        "ParameterRanges": {kind: [{"Name": STR, "MinValue": STR, "MaxValue": STR, "ScalingType": STR,
                                    "Values": [STR]}]
                            for kind in ("IntegerParameterRanges", "ContinuousParameterRanges",
                                         "CategoricalParameterRanges")}},
}
"""The members the importer reads and their types (the service model's); others are not read."""

_CHECKS = {STR: lambda v: isinstance(v, str), BOOL: lambda v: isinstance(v, bool),
           INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
           NUMBER: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}


def check_shape(value: Any, shape: Any, path: str = "") -> None:
    """``value`` has the types :data:`SHAPE` gives the members the importer reads.

    Raises:
        ValidationError: at the member's path, saying what it should be.
    """
    if isinstance(shape, dict):
        if not isinstance(value, Mapping):
            raise ValidationError(f"expected a mapping, got {type(value).__name__}", path=path)
        for key, item in value.items():
            inner = shape.get("*", shape.get(key)) if isinstance(key, str) else None
            if inner is not None:
                check_shape(item, inner, f"{path}.{key}" if path else str(key))
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise ValidationError(f"expected a list, got {type(value).__name__}", path=path)
        for i, item in enumerate(value):
            check_shape(item, shape[0], f"{path}[{i}]")
    else:
        kinds = shape if isinstance(shape, tuple) else (shape,)
        if not any(_CHECKS[k](value) for k in kinds):
            raise ValidationError(f"expected a {' or '.join(kinds)}, got {value!r}", path=path)


def import_job(native: Any) -> tuple[DistributedJob, list[Note]]:
    """The portable job a SageMaker file describes, and notes on what was inferred or dropped.

    Raises:
        ValidationError: the file is not one of SageMaker's forms, or a member is malformed.
        NotPortableError: it holds what no portable job can (a marketplace algorithm).
    """
    if not isinstance(native, Mapping) or not recognizes(native):
        raise ValidationError("not a SageMaker job: expected a CreateTrainingJob or CreateHyperParameterTuningJob "
                              "request, DescribeTrainingJob output, or a SageMaker operator's custom resource")
    notes: list[Note] = []
    if _operator(native) and not isinstance(native.get("spec"), Mapping):
        raise ValidationError("a SageMaker custom resource holds its job in spec", path="spec")
    request = from_custom_resource(native, notes) if _operator(native) else _without_nulls(dict(native))
    check_shape(request, SHAPE)
    if "HyperParameterTuningJobConfig" in request:
        return _tuning_job(request, notes)
    return training_job(request, notes), notes


def _tuning_job(request: Mapping[str, Any], notes: list[Note]) -> tuple[DistributedJob, list[Note]]:
    definition = dict(request.get("TrainingJobDefinition") or {})
    if not definition:
        defs = request.get("TrainingJobDefinitions") or []
        if not defs:
            raise ValidationError("a tuning job needs a TrainingJobDefinition", path="TrainingJobDefinition")
        definition = dict(defs[0])
        if len(defs) > 1:
            notes.append(dropped_note("TrainingJobDefinitions", f"{len(defs) - 1} more training definitions: the "
                                                                "portable job searches one"))
    if "WarmStartConfig" in request:
        notes.append(dropped_note("WarmStartConfig", DROPPED["WarmStartConfig"]))
    training = {**definition, "TrainingJobName": request.get("HyperParameterTuningJobName"),
                "HyperParameters": definition.get("StaticHyperParameters") or {}, "Tags": request.get("Tags"),
                **({"Region": request["Region"]} if "Region" in request else {})}
    training.pop("StaticHyperParameters", None)
    algorithm = dict(training.get("AlgorithmSpecification") or {})
    config = request["HyperParameterTuningJobConfig"]
    search = tuning.tuning_from(config, notes)
    definitions = [d for d in algorithm.get("MetricDefinitions") or [] if d.get("Name") != search.metric.name]
    if len(definitions) < len(algorithm.get("MetricDefinitions") or []):
        notes.append(Note(kind=NoteKind.CHANGED, field="AlgorithmSpecification.MetricDefinitions",
                          message=f"{search.metric.name} is read from the line omnidist.runtime.report() prints, not "
                                  "with the file's own pattern: the program reports it with report()"))
    algorithm["MetricDefinitions"] = definitions
    training["AlgorithmSpecification"] = algorithm
    job = training_job(training, notes, hyper_field="StaticHyperParameters")
    return attrs.evolve(job, tuning=search), notes


# --- the training job ----------------------------------------------------------------------------------

def training_job(request: Mapping[str, Any], notes: list[Note], hyper_field: str = "HyperParameters") -> DistributedJob:
    """The portable job of a training request (or description); ``hyper_field`` is where its
    hyperparameters were (a tuning job's are ``StaticHyperParameters``)."""
    data: dict[str, Any] = {}
    block: dict[str, Any] = {}
    for key, reason in DROPPED.items():
        head, _, tail = key.partition(".")
        if head in request and (not tail or tail in (request.get(head) or {})):
            notes.append(dropped_note(key, reason))
    if any(k in request for k in DESCRIBE_ONLY):
        notes.append(Note(kind=NoteKind.HINT, field="TrainingJobStatus",
                          message="a described job: read as the job it ran (its status and results are not kept)"))
    data["name"] = pick_name([request.get("TrainingJobName")], fallback="sagemaker-job",
                             missing="the file names no job: called sagemaker-job", notes=notes)
    for key, setting in SETTINGS_KEYS.items():
        if request.get(key) not in (None, False):
            block[setting] = request[key]
    if "Region" in request:
        block["region"] = request["Region"]
    hyper = {str(k): _text(v) for k, v in (request.get("HyperParameters") or {}).items()}
    algorithm = request.get("AlgorithmSpecification") or {}
    _algorithm(algorithm, hyper, data, block, notes)
    _resources(request.get("ResourceConfig") or {}, data, block, notes)
    _channels(request.get("InputDataConfig") or [], algorithm.get("TrainingInputMode", "File"), data, block, notes)
    _outputs(request, data, block, notes)
    _stopping(request, data, block, notes)
    _distribution(hyper, data, notes)
    _program(algorithm, hyper, data, block, notes, hyper_field)
    given = {str(k): str(v) for k, v in (request.get("Environment") or {}).items()}
    _carried_argv(data, given)
    if given.get(hints.FRAMEWORK) in {f.value for f in Framework}:
        data["framework"] = given[hints.FRAMEWORK]  # what omnidist compiled it from
    env = hints.strip(given)
    if env:
        data["env"] = env
    vpc = request.get("VpcConfig") or {}
    if vpc:
        block["subnets"] = list(vpc.get("Subnets") or [])
        block["security_group_ids"] = list(vpc.get("SecurityGroupIds") or [])
    if (request.get("RetryStrategy") or {}).get("MaximumRetryAttempts"):
        block["max_retries"] = request["RetryStrategy"]["MaximumRetryAttempts"]
    labels = {str(t.get("Key")): str(t.get("Value", "")) for t in request.get("Tags") or [] if isinstance(t, Mapping)}
    labels.pop(REQUEST_ID_LABEL, None)
    if labels:
        data["labels"] = labels
    _auto_processes(data)
    _references(data, block, notes)
    if block:
        data["backends"] = {NAME: block}
    return job_from_dict(data)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _decoded(value: str) -> str:
    """Script mode's hyperparameters are JSON strings as the SDK writes them (``"\\"train.py\\""``)."""
    if value.startswith('"') and value.endswith('"'):
        try:
            return str(json.loads(value))
        except ValueError:
            return value
    return value


def _algorithm(algorithm: Mapping[str, Any], hyper: dict[str, str], data: dict[str, Any], block: dict[str, Any],
               notes: list[Note]) -> None:
    if algorithm.get("AlgorithmName"):
        raise cannot_hold("AlgorithmSpecification.AlgorithmName",
                          f"the job runs the SageMaker algorithm {algorithm['AlgorithmName']}, which only SageMaker "
                          "has.", "Run its container image instead (TrainingImage).")
    image = algorithm.get("TrainingImage")
    if image:
        data["image"] = image
        data["framework"] = _framework(image).value
    mode = algorithm.get("TrainingInputMode")
    if mode == "Pipe":
        block["input_mode"] = "Pipe"
        notes.append(Note(kind=NoteKind.CHANGED, field="AlgorithmSpecification.TrainingInputMode",
                          message="Pipe streams records into a FIFO only SageMaker provides; other clouds mount or "
                                  "download the data"))
    definitions = algorithm.get("MetricDefinitions") or []
    for i, item in enumerate(definitions):
        for member in ("Name", "Regex"):
            if not isinstance(item, Mapping) or not isinstance(item.get(member), str):
                raise ValidationError(f"a metric definition needs both Name and Regex; this one lacks {member}",
                                      path=f"AlgorithmSpecification.MetricDefinitions[{i}].{member}")
    if definitions:
        block["metric_definitions"] = [{"Name": d["Name"], "Regex": d["Regex"]} for d in definitions]
    if algorithm.get("EnableSageMakerMetricsTimeSeries"):
        block["metrics_time_series"] = True
    if algorithm.get("TrainingImageConfig"):
        notes.append(dropped_note("AlgorithmSpecification.TrainingImageConfig",
                                  "a private registry's access is SageMaker's own"))


def _framework(image: str) -> Framework:
    repository = image.split("/", 1)[-1].split(":")[0].split("@")[0]
    return REPOSITORY_FRAMEWORKS.get(repository, Framework.CUSTOM)


def _resources(config: Mapping[str, Any], data: dict[str, Any], block: dict[str, Any], notes: list[Note]) -> None:
    """Roles and their instance types: one pool, or instance groups (the ``primary`` group, else the first)."""
    groups = [g for g in config.get("InstanceGroups") or [] if isinstance(g, Mapping)]
    if groups:
        first = next((g for g in groups if g.get("InstanceGroupName") == platform.PRIMARY_GROUP), groups[0])
        rest = [g for g in groups if g is not first]
        primary_type, workers = first.get("InstanceType"), int(first.get("InstanceCount", 1)) - 1
        worker_types = [g.get("InstanceType") for g in rest] + ([primary_type] if workers else [])
        workers += sum(int(g.get("InstanceCount", 0)) for g in rest)
        worker_type = next((g.get("InstanceType") for g in rest), primary_type)
        if len(set(worker_types)) > 1:
            notes.append(Note(kind=NoteKind.CHANGED, field="ResourceConfig.InstanceGroups",
                              message=f"the workers run on one type, {worker_type}: the portable job gives workers one "
                                      f"machine ({', '.join(sorted(set(worker_types)))} in the file)"))
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="ResourceConfig.InstanceGroups",
                          message=f"instance group {first.get('InstanceGroupName')!r} holds the primary"))
    else:
        primary_type = config.get("InstanceType")
        workers = int(config.get("InstanceCount", 1) or 1) - 1
        worker_type = primary_type
    types: dict[str, str] = {}
    if primary_type:
        types["primary"] = primary_type
        data["primary"] = _hardware(primary_type, "ResourceConfig.InstanceType", notes)
    else:
        data["primary"] = {}
    if config.get("VolumeSizeInGB"):
        data["primary"]["disk_gb"] = int(config["VolumeSizeInGB"])
    if config.get("VolumeKmsKeyId"):
        block["volume_kms_key_id"] = config["VolumeKmsKeyId"]
    if workers > 0:
        data["workers"] = {"replicas": workers}
        if worker_type and worker_type != primary_type:
            types["workers"] = worker_type
            own = _hardware(worker_type, "ResourceConfig.InstanceGroups", notes)
            data["workers"].update(own if own else {})
            if "accelerator" not in own and data["primary"].get("accelerator"):
                data["workers"]["accelerator"] = "none"
        elif worker_type:
            types["workers"] = worker_type
    if types:
        block["instance_types"] = types


def _hardware(name: str, field: str, notes: list[Note]) -> dict[str, Any]:
    machine = catalog.machine(name)
    if machine is None:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field=field,
                          message=f"{name} is not in omnidist's catalog: its vCPUs, memory and GPUs are unknown, so "
                                  "other clouds get their default machine"))
        return {}
    if machine.accelerator is None:
        return {"cpus": machine.vcpus, "memory_gb": machine.memory_gb}
    if machine.accelerator in RETIRED_GPUS:
        found = retired_gpu(machine.accelerator, machine.gpus, field, notes)
        return {"accelerator": f"{found.type}:{found.count}"}
    if machine.accelerator not in ACCELERATORS_BY_NAME:
        notes.append(Note(kind=NoteKind.CHANGED, field=field,
                          message=f"{name} has {machine.gpus}×{machine.accelerator}, which has no portable name: other "
                                  "clouds run the job without GPUs; set primary.accelerator to keep them"))
        return {"cpus": machine.vcpus, "memory_gb": machine.memory_gb}
    return {"accelerator": str(Accelerator(type=machine.accelerator, count=machine.gpus))}


def _channels(channels: list[Any], default_mode: str, data: dict[str, Any], block: dict[str, Any],
              notes: list[Note]) -> None:
    """S3 prefix channels become inputs; the others (file systems, manifests, options) stay channels."""
    inputs: dict[str, Any] = {}
    raw: list[dict[str, Any]] = []
    for channel in channels:
        name = str(channel.get("ChannelName"))
        source = (channel.get("DataSource") or {}).get("S3DataSource") or {}
        plain = (set(channel) <= CHANNEL_KEYS and set(channel.get("DataSource") or {}) == {"S3DataSource"}
                 and str(channel.get("CompressionType", "None")) == "None"
                 and source.get("S3DataType", "S3Prefix") == "S3Prefix"
                 and source.get("S3DataDistributionType", "FullyReplicated") == "FullyReplicated"
                 and set(source) <= {"S3DataType", "S3Uri", "S3DataDistributionType"})
        mode = PORTABLE_INPUT_MODES.get(str(channel.get("InputMode") or default_mode))
        if plain and mode is not None and str(source.get("S3Uri", "")).startswith("s3://"):
            inputs[name] = {"uri": source["S3Uri"], "mode": mode.value}
            if channel.get("ContentType"):
                block.setdefault("content_types", {})[name] = str(channel["ContentType"])
            continue
        raw.append(dict(channel))
        notes.append(Note(kind=NoteKind.HINT, field=f"InputDataConfig.{name}",
                          message=f"channel {name} is kept as it is in {BLOCK}.channels (a file system, a manifest or "
                                  "SageMaker's own options): other clouds do not get it"))
    if inputs:
        data["inputs"] = inputs
    if raw:
        block["channels"] = raw


def _outputs(request: Mapping[str, Any], data: dict[str, Any], block: dict[str, Any], notes: list[Note]) -> None:
    output = request.get("OutputDataConfig") or {}
    if output.get("S3OutputPath"):
        # SageMaker's own output place (the model lands in <path>/<job>/output/model.tar.gz): the job's
        # outputs.model is `default` where the program names /opt/ml/model (see _references).
        block["base_output_dir"] = output["S3OutputPath"]
    if output.get("KmsKeyId"):
        block["output_kms_key_id"] = output["KmsKeyId"]
    if output.get("CompressionType") not in (None, "GZIP"):
        notes.append(dropped_note("OutputDataConfig.CompressionType", "the model is uploaded as SageMaker packs it"))
    saved = request.get("CheckpointConfig") or {}
    if saved.get("S3Uri"):
        block["checkpoint_s3_uri"] = saved["S3Uri"]
        if saved.get("LocalPath") not in (None, platform.CHECKPOINT_PATH, platform.CHECKPOINT_PATH + "/"):
            notes.append(Note(kind=NoteKind.CHANGED, field="CheckpointConfig.LocalPath",
                              message=f"checkpoints are synced from {platform.CHECKPOINT_PATH}, not "
                                      f"{saved['LocalPath']}"))


def _stopping(request: Mapping[str, Any], data: dict[str, Any], block: dict[str, Any], notes: list[Note]) -> None:
    condition = request.get("StoppingCondition") or {}
    if condition.get("MaxRuntimeInSeconds"):
        data["timeout"] = int(condition["MaxRuntimeInSeconds"])
    if request.get("EnableManagedSpotTraining"):
        data["spot"] = True
    if condition.get("MaxWaitTimeInSeconds"):
        block["max_wait"] = int(condition["MaxWaitTimeInSeconds"])


def _distribution(hyper: dict[str, str], data: dict[str, Any], notes: list[Note]) -> None:
    """Script mode's distribution: the processes per node it started, and the roles it implies."""
    on = {name for name, key in platform.DISTRIBUTIONS.items() if _decoded(hyper.get(key, "")).lower() == "true"}
    if "mpi" in on:
        per_host = _decoded(hyper.get(platform.MPI_PROCESSES, "1"))
        if per_host.isdigit():
            data["processes_per_node"] = int(per_host)
        if data.get("framework") in (None, "custom", "tensorflow"):
            data["framework"] = "horovod"
        if _decoded(hyper.get(platform.MPI_OPTIONS, "")).strip():
            notes.append(dropped_note("HyperParameters.sagemaker_mpi_custom_mpi_options",
                                      "mpirun's own options are SageMaker's mpi distribution's"))
    if "parameter_server" in on:
        nodes = 1 + int((data.get("workers") or {}).get("replicas", 0))
        data["parameter_servers"] = {"replicas": nodes}
        data["framework"] = "tensorflow"
    for key in (*platform.DISTRIBUTIONS.values(), platform.MPI_PROCESSES, platform.MPI_OPTIONS):
        hyper.pop(key, None)


def _program(algorithm: Mapping[str, Any], hyper: dict[str, str], data: dict[str, Any], block: dict[str, Any],
             notes: list[Note], field: str = "HyperParameters") -> None:
    """The command: script mode's program and flags, or the entrypoint and arguments."""
    data.setdefault("framework", "custom")
    program = _decoded(hyper.pop(platform.PROGRAM, "")) if platform.PROGRAM in hyper else ""
    submit = _decoded(hyper.pop(platform.SUBMIT_DIRECTORY, "")) if platform.SUBMIT_DIRECTORY in hyper else ""
    for key in (platform.REGION, platform.LOG_LEVEL, "sagemaker_job_name"):
        hyper.pop(key, None)
    entrypoint = [str(a) for a in algorithm.get("ContainerEntrypoint") or []]
    arguments = [str(a) for a in algorithm.get("ContainerArguments") or []]
    if program and not entrypoint:
        data["command"] = ["python", program]
        if submit:
            data["code"] = submit
        args = [a for name, value in hyper.items() for a in (f"--{name}", _decoded(value))]
        if args:
            data["args"] = args
        notes.append(Note(kind=NoteKind.APPROXIMATED, field=field,
                          message=f"script mode: {platform.PROGRAM} and {platform.SUBMIT_DIRECTORY} are the command "
                                  "and the code, the toolkit's own settings are SageMaker's, and the rest reach the "
                                  "program as --NAME VALUE: its args"))
        _prebuilt(data, notes)
        return
    if hyper:
        block["hyperparameters"] = hyper
        notes.append(Note(kind=NoteKind.HINT, field=field,
                          message=f"kept in {BLOCK}.hyperparameters: the image reads them from "
                                  "/opt/ml/input/config/hyperparameters.json, which other clouds do not write (pass "
                                  "them as args there)"))
    command, code = _unwrapped(entrypoint, data, notes)
    if code:
        data["code"] = code
    if command:
        data["command"] = command
    if arguments:
        data["args"] = arguments


def _prebuilt(data: dict[str, Any], notes: list[Note]) -> None:
    """A Deep Learning Container in script mode whose version omnidist knows becomes ``framework_version``."""
    match = DLC_IMAGE.match(str(data.get("image", "")))
    if not match:
        return
    versions = DLC_VERSIONS.get(match["repository"], {})
    short = next((v for v, (full, _) in versions.items() if match["version"] in (v, full)), None)
    if short is None:
        return
    notes.append(Note(kind=NoteKind.APPROXIMATED, field="AlgorithmSpecification.TrainingImage",
                      message=f"{data['image']} is the AWS Deep Learning Container for {data['framework']} {short}: "
                              f"framework_version {short}"))
    data["framework_version"] = short
    del data["image"]


_UNPACK = re.compile(r"tar -xzf (?P<archive>\S+) -C " + re.escape(platform.CODE_DIR))


def _unwrapped(entrypoint: list[str], data: dict[str, Any], notes: list[Note]) -> tuple[list[str], Optional[str]]:
    """The command inside omnidist's wrappers: the code unpacking entrypoint, and ``omnidist launch``."""
    code = None
    if entrypoint[:2] == ["sh", "-c"] and len(entrypoint) > 3 and _UNPACK.search(entrypoint[2]):
        archive = _UNPACK.search(entrypoint[2])["archive"].strip("'")
        channel = archive[len(platform.DATA_ROOT):].split("/")[0] if archive.startswith(platform.DATA_ROOT) else ""
        inputs = data.get("inputs") or {}
        if channel == CODE_CHANNEL and CODE_CHANNEL in inputs:
            code = inputs.pop(CODE_CHANNEL)["uri"]
            if not inputs:
                data.pop("inputs")
        entrypoint = entrypoint[4:]
    if is_launch_command(entrypoint):
        options = launch_options(entrypoint)
        for option in options:
            if option.startswith(NPROC_FLAG + "="):
                data["processes_per_node"] = int(option.split("=", 1)[1])
        start = entrypoint.index("launch") + 1 + len(options)
        rest = entrypoint[start + 1:] if entrypoint[start:start + 1] == ["--"] else entrypoint[start:]
        if rest:
            entrypoint = rest
    return entrypoint, code


def _carried_argv(data: dict[str, Any], env: dict[str, str]) -> None:
    """An argv compile carried in ``OMNIDIST_ARGV_<i>`` (a word too long for SageMaker) is the command."""
    import shlex

    parts: list[str] = []
    while f"OMNIDIST_ARGV_{len(parts)}" in env:
        parts.append(env.pop(f"OMNIDIST_ARGV_{len(parts)}"))
    command = data.get("command") or []
    if parts and command[:2] == ["sh", "-c"] and command[2:3] and command[2].startswith('eval "exec $'):
        argv, code = _unwrapped(shlex.split("".join(parts)), data, [])
        data["command"] = argv
        data.pop("args", None)
        if code:
            data["code"] = code


def _auto_processes(data: dict[str, Any]) -> None:
    """A process count equal to the primary's GPUs is ``auto``."""
    count = data.get("processes_per_node")
    accelerator = str((data.get("primary") or {}).get("accelerator") or "")
    gpus = int(accelerator.split(":")[1]) if ":" in accelerator else 1
    if count == gpus:
        data.pop("processes_per_node")


# --- platform-bound references (SPEC §10) ---------------------------------------------------------------

def _references(data: dict[str, Any], block: dict[str, Any], notes: list[Note]) -> None:
    """``/opt/ml/input/data/NAME``, ``/opt/ml/model``, ``/opt/ml/checkpoints`` and their ``SM_*``
    variables become references to the job's inputs and outputs (the model output is the job's
    ``default`` one, in ``base_output_dir``; the checkpoints one is ``checkpoint_s3_uri``); other
    SageMaker-only paths and variables are noted."""
    inputs = set(data.get("inputs") or {})
    outputs: set[str] = set()

    def output(name: str) -> Optional[str]:
        setting = {"model": "base_output_dir", "checkpoints": "checkpoint_s3_uri"}[name]
        if setting not in block:
            return None
        outputs.add(name)
        return f"${{{{outputs.{name}}}}}"

    table: list[tuple[re.Pattern[str], Any]] = [
        (re.compile(re.escape(platform.DATA_ROOT) + r"([A-Za-z0-9.\-_]+)"),
         lambda m: f"${{{{inputs.{m[1]}}}}}" if m[1] in inputs else None),
        (re.compile(r"\$\{?SM_CHANNEL_([A-Z0-9_]+)\}?"),
         lambda m: next((f"${{{{inputs.{n}}}}}" for n in inputs if n.upper() == m[1]), None)),
        (re.compile(re.escape(platform.MODEL_PATH) + r"(?![\w-])|\$\{?SM_MODEL_DIR\}?"),
         lambda m: output("model")),
        (re.compile(re.escape(platform.CHECKPOINT_PATH) + r"(?![\w-])"), lambda m: output("checkpoints")),
    ]
    bound = re.compile(re.escape(platform.ROOT) + r"[^\s'\"]*|\$\{?SM_[A-Z0-9_]+\}?")

    def rewrite(text: str, field: str) -> str:
        for pattern, replace in table:
            text = pattern.sub(lambda m, replace=replace: replace(m) or m[0], text)  # type: ignore[misc]
        left = sorted(set(bound.findall(text)))
        if left:
            notes.append(Note(kind=NoteKind.CHANGED, field=field,
                              message=f"{', '.join(left)} exist only inside SageMaker's containers: other clouds "
                                      "have no equivalent"))
        return text

    for key in ("command", "args"):
        if data.get(key):
            data[key] = [rewrite(a, f"{key}[{i}]") for i, a in enumerate(data[key])]
    if data.get("env"):
        data["env"] = {k: rewrite(v, f"env.{k}") for k, v in data["env"].items()}
    declared = data.setdefault("outputs", {})
    if "model" in outputs:
        declared["model"] = "default"
    if "checkpoints" in outputs:
        declared["checkpoints"] = {"uri": block.pop("checkpoint_s3_uri")}
    if not declared:
        data.pop("outputs")
