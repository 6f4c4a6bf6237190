"""Amazon SageMaker training jobs: hosts ``algo-1`` … ``algo-N``, the ``SM_*`` variables and
``/opt/ml``.

SageMaker starts the image once per instance. Every container gets
``/opt/ml/input/config/resourceconfig.json`` (``current_host``, ``hosts``, and for a
heterogeneous cluster ``current_group_name`` and ``instance_groups``) and ``TRAINING_JOB_NAME``;
the training toolkit inside the AWS Deep Learning Containers (script mode) also exports
``SM_HOSTS`` (a JSON list), ``SM_CURRENT_HOST``, ``SM_NUM_GPUS``, ``SM_MODEL_DIR``,
``SM_CHANNEL_<NAME>`` per input channel (``SM_CHANNELS`` lists their names) and
``SM_RESOURCE_CONFIG`` (the file's content). Hosts carry no ports: rank 0 listens on the first
host (the toolkit's ``torchrun --master_port 7777``; the v3 drivers' ``SM_MASTER_ADDR`` /
``SM_MASTER_PORT`` say the same, and ``omnidist run`` sets them to where the emulated primary
listens). The toolkit sorts the hosts, and a host's node rank is its place among them; in a
heterogeneous cluster that omnidist compiled, the instance group named ``primary`` holds the
primary (:data:`PRIMARY_GROUP`).

The toolkit's distributions (hyperparameters :data:`DISTRIBUTIONS`) start processes
themselves: ``torch_distributed`` runs ``torchrun`` with one process per GPU, ``mpi`` runs
``mpirun`` with ``sagemaker_mpi_num_of_processes_per_host``, and TensorFlow's
``parameter_server`` writes a ``TF_CONFIG`` (``master``, ``worker``, ``ps`` on every host). Those
variables are read here as SageMaker's. SageMaker's tuner reads a trial's metrics from the job's
log lines (:data:`METRICS`). The SageMaker compiler takes its tables from here.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.runtime.errors import RuntimeEnvError
from omnidist.runtime.parsing import Env, host_port, integer, json_object, node_cluster
from omnidist.runtime.platforms import Bound, Decided, JobFacts, Slot, hosts, mpi, tf_config
from omnidist.runtime.trials import LOGS
from omnidist.runtime.view import RuntimeContext

NAME = "sagemaker"
ORDER = 25

HOSTS = "SM_HOSTS"
CURRENT_HOST = "SM_CURRENT_HOST"
NUM_GPUS = "SM_NUM_GPUS"
MODEL_DIR = "SM_MODEL_DIR"
CHANNELS = "SM_CHANNELS"
CHANNEL_PREFIX = "SM_CHANNEL_"
RESOURCE_CONFIG = "SM_RESOURCE_CONFIG"
FRAMEWORK_PARAMS = "SM_FRAMEWORK_PARAMS"
CURRENT_GROUP = "SM_CURRENT_INSTANCE_GROUP"
MASTER_ADDR = "SM_MASTER_ADDR"
MASTER_PORT = "SM_MASTER_PORT"
INPUT_CONFIG_DIR = "SM_INPUT_CONFIG_DIR"
JOB_NAME = "TRAINING_JOB_NAME"

VARIABLES = frozenset({JOB_NAME})
PREFIXES = ("SM_",)

PREFIX = "SM_"
"""The prefix of every variable SageMaker's toolkit injects (a reference to one is platform-bound)."""

CONFIG_DIR = "/opt/ml/input/config"
"""Where SageMaker writes ``resourceconfig.json`` (``SM_INPUT_CONFIG_DIR`` names it in script mode)."""

RESOURCE_FILE = "resourceconfig.json"

ROOT = "/opt/ml/"
"""Everything under it exists only inside SageMaker containers (a path there is platform-bound)."""

DATA_ROOT = "/opt/ml/input/data/"
"""Input channel ``NAME`` is at ``/opt/ml/input/data/NAME``."""

MODEL_PATH = "/opt/ml/model"
"""What the job leaves here is uploaded to ``OutputDataConfig.S3OutputPath`` as ``model.tar.gz``."""

OUTPUT_DATA = "/opt/ml/output/data/"
"""What the job leaves here is uploaded beside the model as ``output.tar.gz``."""

CHECKPOINT_PATH = "/opt/ml/checkpoints"
"""Where ``CheckpointConfig`` syncs with S3 (its default ``LocalPath``)."""

CODE_DIR = "/opt/ml/code"
"""Where script mode unpacks ``sagemaker_submit_directory``."""

BOUND = Bound(
    mounts={DATA_ROOT: "", OUTPUT_DATA: "", CHECKPOINT_PATH + "/": ""},
    variables=(f"{PREFIX}*", JOB_NAME),
    equivalents={MODEL_DIR: "${{outputs.model}}"},
    paths={MODEL_PATH: "${{outputs.model}}"},
)
"""Only inside SageMaker's containers: the channel, output-data and checkpoint folders under
``/opt/ml/`` (a channel is ``${{inputs.NAME}}`` in a portable job), the toolkit's ``SM_*``
variables, and the model folder (the portable ``outputs.model``)."""

DEFAULT_PORT = 7777
"""The port the toolkit's ``torchrun`` (and the v3 drivers) give rank 0 on the first host."""

PRIMARY_GROUP = "primary"
"""The instance group holding the primary in a heterogeneous cluster omnidist compiles."""

PROGRAM = "sagemaker_program"
SUBMIT_DIRECTORY = "sagemaker_submit_directory"
REGION = "sagemaker_region"
LOG_LEVEL = "sagemaker_container_log_level"
MPI_PROCESSES = "sagemaker_mpi_num_of_processes_per_host"
MPI_OPTIONS = "sagemaker_mpi_custom_mpi_options"

DISTRIBUTIONS: Mapping[str, str] = {
    "mpi": "sagemaker_mpi_enabled",
    "multi_worker_mirrored_strategy": "sagemaker_multi_worker_mirrored_strategy_enabled",
    "parameter_server": "sagemaker_parameter_server_enabled",
    "torch_distributed": "sagemaker_torch_distributed_enabled",
}
"""Script mode's distribution -> the hyperparameter that turns it on (``"true"``)."""

SCRIPT_MODE_KEYS = frozenset({PROGRAM, SUBMIT_DIRECTORY, REGION, LOG_LEVEL, MPI_PROCESSES, MPI_OPTIONS,
                              "sagemaker_job_name", *DISTRIBUTIONS.values()})
"""Hyperparameters script mode reads itself (the program never sees them as arguments)."""

METRICS = LOGS
"""SageMaker's tuner reads a trial's objective from its log lines (``MetricDefinitions``)."""

HINTS_PER_ROLE: Optional[bool] = False
"""Every hint but ``OMNIDIST_ROLE``: a training job has one ``Environment`` for every instance."""

ENV_FIELD = True


# --- reading -----------------------------------------------------------------------------------

def _config_file(env: Env) -> str:
    return os.path.join(env.get(INPUT_CONFIG_DIR) or CONFIG_DIR, RESOURCE_FILE)


def detect(env: Env) -> bool:
    """The toolkit's ``SM_HOSTS`` / ``SM_CURRENT_HOST`` / ``SM_RESOURCE_CONFIG``, or
    ``TRAINING_JOB_NAME`` beside SageMaker's ``resourceconfig.json`` (an image without the toolkit)."""
    if any(name in env for name in (HOSTS, CURRENT_HOST, RESOURCE_CONFIG)):
        return True
    return JOB_NAME in env and os.path.isfile(_config_file(env))


def _resource_config(env: Env) -> dict[str, Any]:
    """``current_host``, ``hosts`` (and groups) from ``SM_RESOURCE_CONFIG``, else the file, else
    ``SM_HOSTS`` / ``SM_CURRENT_HOST``; the variables win where both say."""
    config: dict[str, Any] = {}
    if RESOURCE_CONFIG in env:
        config = json_object(env, RESOURCE_CONFIG)
    elif os.path.isfile(_config_file(env)):
        path = _config_file(env)
        try:
            with open(path, encoding="utf-8") as fh:
                config = json_object({path: fh.read()}, path)
        except OSError as exc:
            raise RuntimeEnvError(path, f"cannot be read ({exc})") from None
    if HOSTS in env:
        try:
            listed = json.loads(env[HOSTS])
        except ValueError as exc:
            raise RuntimeEnvError(HOSTS, f"not valid JSON ({exc})") from None
        config["hosts"] = listed
    if env.get(CURRENT_HOST):
        config["current_host"] = env[CURRENT_HOST]
    if env.get(CURRENT_GROUP):
        config["current_group_name"] = env[CURRENT_GROUP]
    return config


def _host_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(h, str) and h for h in value):
        raise RuntimeEnvError(where, f"expected a non-empty JSON list of host names, got {value!r}")
    if len(set(value)) != len(value):
        raise RuntimeEnvError(where, f"lists a host twice: {value!r}")
    return sorted(value)  # the toolkit's order: a host's node rank is its place in it


def _groups(config: Mapping[str, Any], where: str) -> dict[str, list[str]]:
    """Instance group name -> its hosts (empty without groups)."""
    found: dict[str, list[str]] = {}
    groups = config.get("instance_groups") or []
    if not isinstance(groups, list):
        raise RuntimeEnvError(where, f"instance_groups: expected a list, got {groups!r}")
    for i, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("instance_group_name"), str):
            raise RuntimeEnvError(where, f"instance_groups[{i}]: expected {{instance_group_name, hosts}}")
        found[group["instance_group_name"]] = _host_list(group.get("hosts"), f"{where} instance_groups[{i}]")
    return found


def nodes(config: Mapping[str, Any], where: str) -> list[str]:
    """The training nodes in node-rank order: the primary group's host first where the cluster has
    one (a heterogeneous cluster omnidist compiled), else the sorted hosts."""
    listed = _host_list(config.get("hosts"), where)
    groups = _groups(config, where)
    first = groups.get(PRIMARY_GROUP, [])[:1]
    return first + [h for h in listed if h not in first]


def _port(env: Env) -> int:
    return integer(env, MASTER_PORT, minimum=1) or DEFAULT_PORT


def parse(env: Env) -> RuntimeContext:
    """An MPI rank (``sagemaker_mpi``), a ``TF_CONFIG`` (``parameter_server``), else the hosts."""
    if mpi.detect(env):
        return _mpi(env)
    if tf_config.VARIABLE in env:
        return tf_config.parse_spec(json_object(env, tf_config.VARIABLE), tf_config.VARIABLE, NAME, env)
    where = HOSTS if HOSTS in env else RESOURCE_CONFIG if RESOURCE_CONFIG in env else _config_file(env)
    config = _resource_config(env)
    ordered = nodes(config, where)
    current = config.get("current_host")
    if current not in ordered:
        raise RuntimeEnvError(CURRENT_HOST, f"{current!r} is not one of the hosts {', '.join(ordered)}")
    node_rank, port = ordered.index(current), _port(env)
    addr = env.get(MASTER_ADDR) or ordered[0]
    host_port(f"{addr}:{port}", MASTER_ADDR, "rank 0's address")
    return RuntimeContext(
        platform=NAME, role="primary" if node_rank == 0 else "worker", index=max(node_rank - 1, 0),
        node_rank=node_rank, num_nodes=len(ordered), rank=node_rank, world_size=len(ordered), local_rank=0,
        master_addr=addr, master_port=port, cluster=node_cluster([f"{h}:{port}" for h in ordered]),
        processes_per_node=_processes(env), source=where,
    )


def _processes(env: Env) -> int:
    """The processes the toolkit starts per host: one per GPU under ``torch_distributed``."""
    gpus = integer(env, NUM_GPUS)
    params = json_object(env, FRAMEWORK_PARAMS) if env.get(FRAMEWORK_PARAMS) else {}
    enabled = params.get(DISTRIBUTIONS["torch_distributed"]) in (True, "true", "True")
    return gpus if enabled and gpus else 1


def _mpi(env: Env) -> RuntimeContext:
    """A rank ``mpirun`` started: rank and world from MPI, rank 0's host from the hosts."""
    ctx = mpi.parse(env)
    config = _resource_config(env) if (HOSTS in env or RESOURCE_CONFIG in env) else {}
    addr, listing = ctx.master_addr, ctx.cluster
    if config.get("hosts"):
        ordered = nodes(config, HOSTS)
        addr = env.get(MASTER_ADDR) or ordered[0]
        listing = node_cluster([f"{h}:{_port(env)}" for h in ordered])
    return dataclasses.replace(ctx, platform=NAME, master_addr=addr, master_port=ctx.master_port or _port(env),
                               cluster=listing)


def model_dir(env: Env, argv: Sequence[str]) -> Optional[str]:
    """``SM_MODEL_DIR`` (script mode), which SageMaker uploads when the job ends."""
    return env.get(MODEL_DIR) or None


def default_model_dir() -> str:
    """``/opt/ml/model``: SageMaker uploads it to ``S3OutputPath`` whatever the image."""
    return MODEL_PATH


def inputs(env: Env) -> dict[str, str]:
    """Channel name -> its folder: ``SM_CHANNEL_<NAME>``, named as ``SM_CHANNELS`` spells them."""
    try:
        listed = json.loads(env[CHANNELS]) if env.get(CHANNELS, "").startswith("[") else []
    except ValueError as exc:
        raise RuntimeEnvError(CHANNELS, f"not valid JSON ({exc})") from None
    names = {str(n).upper(): str(n) for n in listed} if isinstance(listed, list) else {}
    return {names.get(k[len(CHANNEL_PREFIX):], k[len(CHANNEL_PREFIX):].lower()): v
            for k, v in env.items() if k.startswith(CHANNEL_PREFIX) and v}


# --- emulating ---------------------------------------------------------------------------------

def follow(request: Mapping[str, Any], job: JobFacts) -> Decided:
    """The distribution compile chose (script mode's hyperparameters) and the processes it starts."""
    definition = request.get("TrainingJobDefinition", request)
    hyper = definition.get("HyperParameters") or definition.get("StaticHyperParameters") or {}
    chosen = next((name for name, key in DISTRIBUTIONS.items() if str(hyper.get(key, "")).strip('"') == "true"),
                  "")
    per_host = str(hyper.get(MPI_PROCESSES, "1")).strip('"')
    return Decided(processes_per_node=int(per_host) if chosen == "mpi" and per_host.isdigit() else 1,
                   details={"distribution": chosen})


def assume(job: JobFacts) -> Decided:
    """Without the backend: a container that SageMaker starts once per instance."""
    return Decided(details={"distribution": "parameter_server" if job.replicas.get("parameter_server") else ""})


def roles(decided: Decided) -> frozenset[str]:
    """Training nodes; parameter servers with the parameter-server distribution."""
    if decided.details.get("distribution") == "parameter_server":
        return frozenset({"primary", "worker", "parameter_server"})
    return frozenset({"primary", "worker"})


def emulate(job: JobFacts, slots: Sequence[Slot], decided: Decided) -> list[dict[str, str]]:
    """What each running slot's container gets: the hosts ``algo-1`` … (the primary first), its own,
    where rank 0 listens here, and a ``TF_CONFIG`` as the TensorFlow toolkit writes one."""
    training = [s for s in slots if s.role in ("primary", "worker")]
    names = [f"algo-{i + 1}" for i in range(len(training))]
    addr, _, port = training[0].address.rpartition(":")
    config = {"hosts": names, "network_interface_name": "lo"}
    result = []
    for slot in slots:
        if not slot.runs:
            continue
        common = {JOB_NAME: job.name, HOSTS: json.dumps(names), MASTER_ADDR: addr, MASTER_PORT: port,
                  NUM_GPUS: "0", "SM_HOST_COUNT": str(len(names))}
        if slot.role == "parameter_server":
            result.append({**common, CURRENT_HOST: names[slot.index % len(names)],
                           tf_config.VARIABLE: json.dumps(_tf_config(slots, slot))})
            continue
        rank = training.index(slot)
        env = {**common, CURRENT_HOST: names[rank], "SM_CURRENT_HOST_RANK": str(rank),
               RESOURCE_CONFIG: json.dumps({**config, "current_host": names[rank]})}
        if decided.details.get("distribution") == "parameter_server":
            env[tf_config.VARIABLE] = json.dumps(_tf_config(slots, slot))
        if decided.details.get("distribution") == "mpi":  # mpirun's variables, per process
            world, first = sum(s.processes for s in training), sum(s.processes for s in training[:rank])
            result.extend({**env, "OMPI_COMM_WORLD_RANK": str(first + local), "OMPI_COMM_WORLD_SIZE": str(world),
                           "OMPI_COMM_WORLD_LOCAL_RANK": str(local),
                           "OMPI_COMM_WORLD_LOCAL_SIZE": str(slot.processes)} for local in range(slot.processes))
        else:
            result.extend([env] * slot.processes)
    return result


def _tf_config(slots: Sequence[Slot], slot: Slot) -> dict[str, Any]:
    """The TensorFlow toolkit's ``TF_CONFIG``: the first host is ``master``, the others ``worker``,
    and the parameter servers ``ps``."""
    types = {"primary": tf_config.LEGACY_CHIEF, "worker": "worker", "parameter_server": "ps"}
    listing = {types[r]: hosts(slots, r) for r in types if hosts(slots, r)}
    return {"cluster": listing, "task": {"type": types[slot.role], "index": slot.index}, "environment": "cloud"}


PREEMPTION_GRACE_S = 120
"""Seconds between the SIGTERM a preempted replica gets and its machine's end:
EC2's two-minute Spot interruption notice; SageMaker SIGTERMs the algorithm and gives it 120 s
(``omnidist run --preempt`` sends the same)."""
