"""What a SageMaker training job's program sees (SPEC §14), from the request alone (world.md §5).

- argv: without ``ContainerEntrypoint`` SageMaker runs ``docker run IMAGE train`` [SM-RUN]; with
  it, the entrypoint and ``ContainerArguments`` [SM-NOTE]. In script mode the image's ``train`` is
  the toolkit, which runs ``python PROGRAM`` with every hyperparameter as ``--key value``, keys
  sorted (one-letter keys as ``-k``) [TK-map], and starts torchrun or mpirun for a distribution [TK-runner].
- environment: the request's ``Environment`` and ``TRAINING_JOB_NAME``; the toolkit's ``SM_*``
  (script mode); ``MASTER_ADDR``/``MASTER_PORT`` from the PyTorch toolkit [PT-train].
- data: each channel at ``/opt/ml/input/data/NAME`` (a local copy, or streamed read-only), the model
  folder ``/opt/ml/model`` and the checkpoint folder writable [TK-envmd], [SM-CKPT].
- search: values in ``hyperparameters.json`` (and the toolkit's args); the metric from a log regex [SM-NOTE].
- images: Amazon ECR, or a VPC registry named in ``TrainingImageConfig`` [SM-REG].
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from omnidist.kit import (
    ARGV,
    ENTRYPOINT,
    MPI_VARIABLES,
    PROCESS_VARIABLES,
    DataPath,
    StartedBy,
    World,
    WorldImage,
    WorldNode,
    launched,
    registry_of,
    uris_in,
)
from omnidist.runtime.platforms import sagemaker as platform
from omnidist_sagemaker import catalog

TOOLKIT_VARIABLES = frozenset({platform.HOSTS, platform.CURRENT_HOST, platform.NUM_GPUS, platform.MODEL_DIR,
                               platform.CHANNELS, "SM_HPS", "SM_NUM_CPUS", "SM_USER_ARGS", "SM_INPUT_DIR",
                               platform.INPUT_CONFIG_DIR, "SM_OUTPUT_DATA_DIR", platform.RESOURCE_CONFIG,
                               "SM_INPUT_DATA_CONFIG", "SM_TRAINING_ENV"})
"""What the training toolkit exports to the program in script mode [TK-env], [TK-envmd]."""

PYTORCH_TOOLKIT = frozenset({"MASTER_ADDR", "MASTER_PORT"})
"""The PyTorch container's toolkit sets these for every job [PT-train]."""

HYPERPARAMETERS = f"{platform.CONFIG_DIR}/hyperparameters.json"

PULLS = "SageMaker pulls from Amazon ECR, or from a VPC registry named in TrainingImageConfig"


def world(native: Any) -> Optional[World]:
    """The World of a CreateTrainingJob / CreateHyperParameterTuningJob request (or a
    DescribeTrainingJob output, or an operator's custom resource); ``None`` for another shape."""
    from omnidist_sagemaker.importer import _operator, from_custom_resource

    if not isinstance(native, Mapping):
        return None
    request: Mapping[str, Any] = from_custom_resource(native, []) if _operator(native) else native
    searched = "HyperParameterTuningJobConfig" in request
    definition = request
    hyper_field = "HyperParameters"
    if searched:
        definition = request.get("TrainingJobDefinition") or next(iter(request.get("TrainingJobDefinitions") or []),
                                                                  {})
        hyper_field = "StaticHyperParameters"
    algorithm = definition.get("AlgorithmSpecification") or {}
    if not isinstance(algorithm, Mapping) or not algorithm.get("TrainingImage"):
        return None
    hyper = {str(k): _decoded(str(v)) for k, v in (definition.get(hyper_field) or {}).items()}
    image = str(algorithm["TrainingImage"])
    groups = _groups(definition.get("ResourceConfig") or {})
    nodes = sum(count for _, count in groups)
    gpus = _gpus(groups[0][0]) if groups else 0
    env = {str(k): str(v) for k, v in (definition.get("Environment") or {}).items()}
    channels = [str(c.get("ChannelName")) for c in definition.get("InputDataConfig") or []]
    node = _node(algorithm, hyper, image, gpus, nodes, env, channels)
    found = [node if nodes == 1 else _evolve_count(node, "primary", 1)]
    if nodes > 1:
        found.append(_evolve_count(node, "workers", nodes - 1))
    config = algorithm.get("TrainingImageConfig") or {}  # AlgorithmSpecification.TrainingImageConfig [SM-REG]
    access = str(config.get("TrainingRepositoryAccessMode") or "Platform")
    registry = registry_of(image)
    pullable = registry == "ecr" or access == "Vpc"
    return World(
        platform=platform.NAME,
        image=WorldImage(uri=image, registry=registry, pullable=pullable, why="" if pullable else PULLS),
        nodes=found, data=_data(definition, node),
        hyperparameters=(ARGV if platform.PROGRAM in hyper else HYPERPARAMETERS) if searched else "",
        metric=platform.METRICS if searched else "",
    )


def _decoded(value: str) -> str:
    """The SDK JSON-encodes hyperparameters; the toolkit decodes them first [TK-map]."""
    import json

    try:
        decoded = json.loads(value)
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else value


def _groups(config: Mapping[str, Any]) -> list[tuple[str, int]]:
    groups = config.get("InstanceGroups") or []
    if groups:
        return [(str(g.get("InstanceType", "")), int(g.get("InstanceCount", 1))) for g in groups]
    return [(str(config.get("InstanceType", "")), int(config.get("InstanceCount", 1) or 1))]


def _gpus(instance_type: str) -> int:
    machine = catalog.machine(instance_type)
    return machine.gpus if machine is not None else 0


def _toolkit_args(hyper: Mapping[str, str]) -> list[str]:
    """Every hyperparameter but the toolkit's own, keys sorted: ``--key value`` (``-k value``) [TK-map]."""
    found = []
    for key in sorted(k for k in hyper if not k.startswith("sagemaker_") and not k.startswith("_")):
        found += [f"-{key}" if len(key) == 1 else f"--{key}", hyper[key]]
    return found


def _node(algorithm: Mapping[str, Any], hyper: Mapping[str, str], image: str, gpus: int, nodes: int,
          env: Mapping[str, str], channels: list[str]) -> WorldNode:
    entrypoint = [str(a) for a in algorithm.get("ContainerEntrypoint") or []]
    arguments = [str(a) for a in algorithm.get("ContainerArguments") or []]
    own = {platform.JOB_NAME}
    if entrypoint:
        argv, env = _carried([*entrypoint, *arguments], env)
        return launched(argv, gpus, nodes, own=frozenset(own), env=env)
    argv = [ENTRYPOINT, "train", *arguments]
    program = hyper.get(platform.PROGRAM)
    if not program:  # bring your own image: `IMAGE train` runs once per instance
        return WorldNode(role="primary", count=nodes, argv=argv, launcher=StartedBy.NONE, processes=1, program=argv,
                         platform_env=frozenset(own), env=dict(env))
    own |= TOOLKIT_VARIABLES | {f"{platform.CHANNEL_PREFIX}{n.upper()}" for n in channels}
    if "pytorch" in image.rsplit("/", 1)[-1]:
        own |= PYTORCH_TOOLKIT
    runs = ("python", program, *_toolkit_args(hyper)) if program.endswith(".py") else (f"./{program}",
                                                                                       *_toolkit_args(hyper))
    flag = {v: k for k, v in platform.DISTRIBUTIONS.items()}
    chosen = next((flag[k] for k, v in hyper.items() if k in flag and v.lower() == "true"), None)
    if chosen == "torch_distributed":
        return WorldNode(role="primary", count=nodes, argv=argv, launcher=StartedBy.TORCHRUN,
                         processes=max(gpus, 1), program=runs, platform_env=frozenset(own | PROCESS_VARIABLES),
                         env=dict(env))
    if chosen == "mpi" or any(k in hyper for k in ("sagemaker_distributed_dataparallel_enabled",
                                                   "sagemaker_pytorch_ddp_enabled")):
        told = hyper.get(platform.MPI_PROCESSES, "")
        per_host = int(told) if told.isdigit() else max(gpus, 1)
        return WorldNode(role="primary", count=nodes, argv=argv, launcher=StartedBy.MPIRUN, processes=per_host,
                         program=runs, platform_env=frozenset(own | MPI_VARIABLES), env=dict(env))
    return WorldNode(role="primary", count=nodes, argv=argv, launcher=StartedBy.PLATFORM, processes=1, program=runs,
                     platform_env=frozenset(own), env=dict(env))


def _carried(argv: list[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """``sh -c 'eval "exec ${OMNIDIST_ARGV_0}…"'``: the argv ``sh`` execs, read from the variables
    that carry it (how omnidist passes a word longer than SageMaker's 256 characters)."""
    import shlex

    env = dict(env)
    if argv[:2] != ["sh", "-c"] or len(argv) != 3 or not argv[2].startswith('eval "exec ${OMNIDIST_ARGV_0}'):
        return argv, env
    parts: list[str] = []
    while f"OMNIDIST_ARGV_{len(parts)}" in env:
        parts.append(env.pop(f"OMNIDIST_ARGV_{len(parts)}"))
    try:
        return shlex.split("".join(parts)), env
    except ValueError:
        return argv, env


def _evolve_count(node: WorldNode, role: str, count: int) -> WorldNode:
    import attrs

    return attrs.evolve(node, role=role, count=count)


def _data(definition: Mapping[str, Any], node: WorldNode) -> list[DataPath]:
    found = []
    for channel in definition.get("InputDataConfig") or []:
        name = str(channel.get("ChannelName"))
        source = channel.get("DataSource") or {}
        s3 = source.get("S3DataSource") or {}
        fs = source.get("FileSystemDataSource") or {}
        location = str(s3.get("S3Uri") or fs.get("FileSystemId") or name)
        found.append(DataPath(location=location, given="path", access="ro", where=f"{platform.DATA_ROOT}{name}"))
    output = (definition.get("OutputDataConfig") or {}).get("S3OutputPath")
    if output:
        found.append(DataPath(location=str(output), given="path", access="rw", where=platform.MODEL_PATH,
                              implicit=True))
    saved = definition.get("CheckpointConfig") or {}
    if saved.get("S3Uri"):
        found.append(DataPath(location=str(saved["S3Uri"]), given="path", access="rw",
                              where=str(saved.get("LocalPath") or platform.CHECKPOINT_PATH), implicit=True))
    hyper = definition.get("HyperParameters") or definition.get("StaticHyperParameters") or {}
    own = sorted(k for k in hyper if not k.startswith(("sagemaker_", "_")))
    if own and platform.PROGRAM not in hyper:  # script mode turns them into args; an image reads the file
        found.append(DataPath(location=f"hyperparameters {', '.join(own)}", given="path", access="ro",
                              where=HYPERPARAMETERS))
    words = [*node.program, *node.env.values()]
    found += [DataPath(location=u, given="uri", access="ro", where="argv") for u in uris_in(words)]
    return found
