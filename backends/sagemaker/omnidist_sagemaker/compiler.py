"""Portable job -> ``CreateTrainingJob`` request, exactly boto3's keyword arguments. Pure: no
network, no SDK import.

One function per part: :func:`place` (role -> instance type), :func:`resource_config` (one pool,
or instance groups for roles on different types), :func:`distribution` (script mode's
distribution and the processes per node, SPEC §10), :func:`algorithm` (image, entrypoint,
arguments), :func:`stopping` (timeout, spot), :func:`tags`. SageMaker's own limits that botocore
does not check (the name pattern, 50 tags, 100 variables, 100 hyperparameters, 20 channels,
``MaxWaitTimeInSeconds`` >= ``MaxRuntimeInSeconds``) are checked here.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, Optional

import attrs

from omnidist.kit import (
    AUTO,
    CompiledJob,
    DistributedJob,
    EffectiveRole,
    Feature,
    Framework,
    Interconnect,
    Machine,
    Note,
    NoteCode,
    NoteKind,
    Problem,
    RoleName,
    UnsupportedFeatureError,
    ValidationError,
    check_named,
    effective_roles,
    env_with_hints,
    processes_per_node,
    smallest_fit,
    start_processes,
    watcher_note,
)
from omnidist.runtime import hints
from omnidist.runtime.launch import carry_processes_per_node, is_launch_command
from omnidist.runtime.platforms import sagemaker as platform
from omnidist_sagemaker import catalog, code_data, labels
from omnidist_sagemaker.settings import SageMakerSettings
from omnidist_sagemaker.tables import (
    DEFAULT_MAX_RUNTIME_S,
    DEFAULT_VOLUME_GB,
    ENV_KEY,
    LIMITS,
    MAX_RUNTIME_S,
    NAME,
    REFUSALS,
    TRAINING_JOB_NAME,
)

SETTINGS = f"backends.{NAME}"
TRAINING = (RoleName.PRIMARY, RoleName.WORKERS)


def _machine_path(role: RoleName) -> str:
    return f"{SETTINGS}.instance_types.{role.value}"


# --- refusals ------------------------------------------------------------------------------------

def check_roles(job: DistributedJob, roles: dict[RoleName, EffectiveRole], notes: list[Note]) -> None:
    """Evaluators and reducers: exit 3; parameter servers: TensorFlow's distribution only; one program."""
    for name in (RoleName.EVALUATORS, RoleName.REDUCTION_SERVERS):
        if name in roles:
            feature = Feature(name.value)
            raise REFUSALS[feature].error(feature, NAME)
    if RoleName.PARAMETER_SERVERS in roles and job.framework is not Framework.TENSORFLOW:
        raise REFUSALS[Feature.PARAMETER_SERVERS].error(Feature.PARAMETER_SERVERS, NAME,
                                                        framework=job.framework.value)
    primary = roles[RoleName.PRIMARY]
    for name, role in roles.items():
        for field in ("image", "command", "args", "env"):
            if name is not RoleName.PRIMARY and getattr(role, field) != getattr(primary, field):
                raise REFUSALS[Feature.PER_ROLE_PROGRAMS].error(Feature.PER_ROLE_PROGRAMS, NAME, role=name.value,
                                                                field=field)


def parameter_servers(job: DistributedJob, roles: dict[RoleName, EffectiveRole], nodes: int,
                      notes: list[Note]) -> None:
    """SageMaker's parameter-server distribution runs one server on every instance."""
    servers = roles.get(RoleName.PARAMETER_SERVERS)
    if servers is None:
        return
    if int(servers.replicas) != nodes:
        notes.append(Note(kind=NoteKind.CHANGED, field="parameter_servers.replicas",
                          message=f"{servers.replicas} became {nodes}: SageMaker runs one parameter server on each "
                                  "of the job's instances"))
    own = [f for f in ("accelerator", "cpus", "memory_gb", "disk_gb") if job.parameter_servers and
           getattr(job.parameter_servers, f) is not None]
    if own:
        notes.append(Note(kind=NoteKind.CHANGED, field=f"parameter_servers.{own[0]}",
                          message="the parameter servers run on the training instances, not on machines of their own"))


# --- machines ------------------------------------------------------------------------------------

def _demands_efa(job: DistributedJob, role: EffectiveRole) -> bool:
    return job.interconnect is Interconnect.INFINIBAND and role.name in TRAINING


def _refuse_efa(role: EffectiveRole, why: str) -> UnsupportedFeatureError:
    return REFUSALS[Feature.INFINIBAND].error(Feature.INFINIBAND, NAME, role=role.name.value, why=why)


def _named(name: str, role: EffectiveRole, job: DistributedJob, notes: list[Note]) -> Optional[Machine]:
    machine = catalog.machine(name)
    if machine is not None and role.accelerator is None and machine.accelerator not in (None, *_portable()):
        # A chip without a portable name (Trainium, Inferentia): the job names the type itself.
        notes.append(Note(kind=NoteKind.HINT, field=_machine_path(role.name),
                          message=f"{name} comes with {machine.gpus}×{machine.accelerator}, which has no portable "
                                  "name: other clouds run this role without GPUs"))
    else:
        machine = check_named(catalog.MACHINES, name, role=role.name.value, accelerator=role.accelerator,
                              cpus=role.cpus, memory_gb=role.memory_gb, path=_machine_path(role.name))
    if _demands_efa(job, role) and (machine is None or not machine.rdma):
        raise _refuse_efa(role, f"runs on {name}, which has none")
    return machine


@functools.lru_cache(maxsize=1)
def _portable() -> frozenset[str]:
    from omnidist.kit import ACCELERATORS_BY_NAME

    return frozenset(ACCELERATORS_BY_NAME)


@functools.lru_cache(maxsize=1)
def _offered() -> tuple[str, ...]:
    return tuple(sorted({m.accelerator for m in catalog.MACHINES.machines if m.accelerator in _portable()}))


def offered() -> list[str]:
    """The portable accelerators some SageMaker type carries."""
    return list(_offered())


def _pick(role: EffectiveRole, job: DistributedJob) -> Machine:
    wanted, efa = role.accelerator, _demands_efa(job, role)
    if wanted is not None and wanted.type not in _offered():
        raise REFUSALS[Feature.ACCELERATOR].error(Feature.ACCELERATOR, NAME, kind=wanted.type,
                                                  offered=", ".join(offered()))
    if wanted is None and role.cpus is None and role.memory_gb is None and not efa:
        return catalog.MACHINES.get(catalog.DEFAULT_CPU_TYPE)
    if wanted is not None and smallest_fit(catalog.MACHINES, wanted, more_gpus=True) is None:
        ways = ", ".join(catalog.MACHINES.ways_to_get(wanted.type))
        raise ValidationError(f"SageMaker offers {wanted.type} as: {ways}; {wanted.count} per instance is more than "
                              "any of them has", path=f"{role.name.value}.accelerator")
    link: Optional[Literal["infiniband", "rdma"]] = "rdma" if efa else None
    found = (smallest_fit(catalog.MACHINES, wanted, cpus=role.cpus, memory_gb=role.memory_gb, interconnect=link)
             or smallest_fit(catalog.MACHINES, wanted, cpus=role.cpus, memory_gb=role.memory_gb, interconnect=link,
                             more_gpus=True))
    if found is None and efa:
        raise _refuse_efa(role, f"asks for {wanted or 'no accelerator'}, and no such type has it")
    if found is None:
        asked = ", ".join(f"{k}: {v:g}" for k, v in (("cpus", role.cpus), ("memory_gb", role.memory_gb)) if v)
        raise ValidationError(f"no SageMaker instance type{' with ' + str(wanted) if wanted else ''} has {asked}; "
                              f"lower them or name a type in {_machine_path(role.name)}", path=role.name.value)
    return found


def place(role: EffectiveRole, job: DistributedJob, settings: SageMakerSettings, notes: list[Note]) -> str:
    """The instance type of ``role``: the one the settings name (checked) or the smallest that fits."""
    named = settings.instance_types.get(role.name.value)
    if named:
        _named(named, role, job, notes)
        return named
    machine = _pick(role, job)
    wanted = role.accelerator
    if wanted is not None and machine.gpus > wanted.count:
        notes.append(Note(kind=NoteKind.CHANGED, field=f"{role.name.value}.accelerator",
                          message=f"{wanted} runs on {machine.name}, which has {machine.gpus}: no SageMaker type has "
                                  f"{wanted.count}, so {machine.gpus - wanted.count} stay idle"))
    gpus = f", {machine.gpus}×{machine.accelerator}" if machine.accelerator else ""
    notes.append(Note(kind=NoteKind.DEFAULTED, field=_machine_path(role.name),
                      message=f"picked {machine.name} ({machine.vcpus} vCPUs, {machine.memory_gb:g} GiB{gpus}); "
                              "name a type here to choose",
                      code=NoteCode.MACHINE_CHOSEN, data={"role": role.name.value, "machine": machine.name}))
    if _demands_efa(job, role):
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="interconnect",
                          message=f"{role.name.value} on {machine.name}: EFA with GPUDirect RDMA, not InfiniBand"))
    return machine.name


def _volume(role: EffectiveRole, settings: SageMakerSettings, notes: list[Note]) -> int:
    if role.disk_gb is not None:
        return int(role.disk_gb)
    if settings.volume_gb is not None:
        return settings.volume_gb
    notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{SETTINGS}.volume_gb",
                      message=f"{DEFAULT_VOLUME_GB} GB of storage per instance (set disk_gb or volume_gb)"))
    return DEFAULT_VOLUME_GB


def resource_config(job: DistributedJob, roles: dict[RoleName, EffectiveRole], settings: SageMakerSettings,
                    notes: list[Note]) -> dict[str, Any]:
    """``ResourceConfig``: one pool when the training roles share a type, else instance groups
    (a heterogeneous cluster), named by role."""
    types = {name: place(roles[name], job, settings, notes) for name in TRAINING if name in roles}
    counts = {name: 1 if name is RoleName.PRIMARY else int(roles[name].replicas) for name in types}
    volume = _volume(roles[RoleName.PRIMARY], settings, notes)
    config: dict[str, Any]
    if len(set(types.values())) == 1:
        config = {"InstanceType": types[RoleName.PRIMARY], "InstanceCount": sum(counts.values())}
    else:
        groups = [{"InstanceGroupName": platform.PRIMARY_GROUP if name is RoleName.PRIMARY else name.value,
                   "InstanceType": kind, "InstanceCount": counts[name]} for name, kind in types.items()]
        config = {"InstanceGroups": groups}
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="workers",
                          message="a heterogeneous cluster: instance groups "
                                  + ", ".join(f"{g['InstanceGroupName']} ({g['InstanceType']} ×{g['InstanceCount']})"
                                              for g in groups)))
    config["VolumeSizeInGB"] = volume
    if settings.volume_kms_key_id:
        config["VolumeKmsKeyId"] = settings.volume_kms_key_id
    return config


# --- processes per node (SPEC §10) ----------------------------------------------------------------

@attrs.frozen(kw_only=True)
class Distribution:
    """How a node's processes start: script mode's distribution hyperparameters, or a launcher
    the command starts with."""

    hyperparameters: dict[str, str] = attrs.field(factory=dict)
    command: Optional[tuple[str, ...]] = None


def distribution(job: DistributedJob, nodes: int, script: bool, command: tuple[str, ...],
                 notes: list[Note]) -> Distribution:
    """Script mode: SageMaker's own distribution starts the processes (``torch_distributed``: one
    per GPU; ``mpi``: ``processes_per_node`` per host; TensorFlow's ``parameter_server`` or
    ``multi_worker_mirrored_strategy``). A container SageMaker starts once per instance: the
    command starts them (``omnidist launch``), with a note on what the image needs."""
    per_node, gpus = processes_per_node(job), job.primary.accelerator.count if job.primary.accelerator else 0
    keys = platform.DISTRIBUTIONS
    if not script:
        launched = _launched(job, per_node, command, notes)
        if job.parameter_servers is not None and job.parameter_servers.replicas:
            notes.append(Note(kind=NoteKind.HINT, field="parameter_servers",
                              message="SageMaker's parameter_server distribution starts the servers when the image is "
                                      "built on its TensorFlow training container (the toolkit does it)"))
            return attrs.evolve(launched, hyperparameters={keys["parameter_server"]: "true"})
        return launched
    if job.parameter_servers is not None and job.parameter_servers.replicas:
        return Distribution(hyperparameters={keys["parameter_server"]: "true"})
    if job.framework is Framework.TENSORFLOW and job.processes_per_node == AUTO:
        return Distribution(hyperparameters={keys["multi_worker_mirrored_strategy"]: "true"} if nodes > 1 else {})
    if per_node == 1 and nodes == 1:
        return Distribution()
    torch = job.framework in (Framework.PYTORCH, Framework.DEEPSPEED)
    if torch and gpus and per_node == gpus:
        return Distribution(hyperparameters={keys["torch_distributed"]: "true"})
    notes.append(Note(kind=NoteKind.APPROXIMATED, field="processes_per_node",
                      message=f"{per_node} per instance, started by SageMaker's mpi distribution (mpirun): each "
                              "process reads its rank from OMPI_COMM_WORLD_* (omnidist.runtime does)"))
    return Distribution(hyperparameters={keys["mpi"]: "true", platform.MPI_PROCESSES: str(per_node),
                                         platform.MPI_OPTIONS: '""'})


def _launched(job: DistributedJob, per_node: int, command: tuple[str, ...], notes: list[Note]) -> Distribution:
    if per_node == 1:
        return Distribution()
    if not command and job.processes_per_node == AUTO:
        notes.append(Note(kind=NoteKind.HINT, field="processes_per_node",
                          message=f"auto ({per_node}): SageMaker starts the image's entrypoint once per instance; it "
                                  "starts the node's processes itself"))
        return Distribution()
    if not command:
        raise UnsupportedFeatureError(
            Feature.PROCESSES_PER_NODE, NAME,
            f"SageMaker starts the image's entrypoint once per instance, and this job runs no command that could "
            f"start {per_node} processes.", "Give the job a command (omnidist launch -- …), or processes_per_node: 1.")
    if is_launch_command(command):
        return Distribution(command=carry_processes_per_node(command, per_node))
    launched, note = start_processes(job, command, per_node, NAME)  # the note every backend words alike
    if note is not None:
        notes.append(note)
    return Distribution(command=launched)


# --- the request ---------------------------------------------------------------------------------

def environment(role: EffectiveRole, job: DistributedJob) -> dict[str, str]:
    """``Environment``: the runtime hints underneath the job's variables (one for every instance)."""
    env = env_with_hints(role, job, per_role=False)
    env = {**{k: env[k] for k in hints.ALL if k in env}, **dict(sorted((k, v) for k, v in env.items()
                                                                       if k not in hints.ALL))}
    problems = [Problem(f"env.{k}", "SageMaker variable names are letters, digits and '_', not starting with a digit")
                for k in env if not ENV_KEY.match(k)]
    if problems:
        raise ValidationError(problems, source=job.source)
    if len(env) > LIMITS["environment"]:
        raise ValidationError(f"SageMaker takes at most {LIMITS['environment']} variables, got {len(env)} (with "
                              "omnidist's runtime hints)", source=job.source, path="env")
    long = next((k for k, v in env.items() if len(v) > LIMITS["environment_value"]), None)
    if long is not None:
        raise UnsupportedFeatureError(Feature.ENV, NAME, f"a SageMaker variable holds at most "
                                      f"{LIMITS['environment_value']} characters; {long} has {len(env[long])}.",
                                      "Shorten it, or pass the value as an input (a file in S3).",
                                      subject=f"env.{long}")
    return env


def stopping(job: DistributedJob, settings: SageMakerSettings, notes: list[Note]) -> dict[str, Any]:
    """``StoppingCondition``: ``timeout`` (default one day, at most 28), and a spot job's wait."""
    runtime = job.timeout
    if runtime is None:
        runtime = DEFAULT_MAX_RUNTIME_S
        notes.append(Note(kind=NoteKind.DEFAULTED, field="timeout",
                          message="SageMaker stops a job after 1 day unless timeout says otherwise"))
    if runtime > MAX_RUNTIME_S:
        raise UnsupportedFeatureError(Feature.OTHER, NAME, f"a SageMaker job runs at most 28 days ({MAX_RUNTIME_S} s); "
                                      f"timeout is {runtime} s.", "Lower timeout to 28d or less.", subject="timeout")
    condition: dict[str, Any] = {"MaxRuntimeInSeconds": runtime}
    if job.spot:
        wait = settings.max_wait if settings.max_wait is not None else 2 * runtime
        if wait < runtime:
            raise ValidationError(f"a spot job's MaxWaitTimeInSeconds ({wait}) must be at least its timeout "
                                  f"({runtime} s)", source=job.source, path=f"{SETTINGS}.max_wait")
        if settings.max_wait is None:
            notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{SETTINGS}.max_wait",
                              message=f"a spot job may wait for capacity and run {wait} s in all (twice the timeout)"))
        condition["MaxWaitTimeInSeconds"] = wait
    return condition


def checkpoint(job: DistributedJob, settings: SageMakerSettings, plan: code_data.Plan,
               notes: list[Note]) -> Optional[dict[str, Any]]:
    """``CheckpointConfig``: ``outputs.checkpoints`` or ``checkpoint_s3_uri``; a spot job gets one by default."""
    uri = plan.checkpoints or settings.checkpoint_s3_uri
    if uri is None and (job.spot or job.recovery):
        uri = f"{plan.output_path.rstrip('/')}/checkpoints"
        what = "a spot job" if job.spot else "a job with recovery"
        notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{SETTINGS}.checkpoint_s3_uri",
                          message=f"{what} resumes from checkpoints: {platform.CHECKPOINT_PATH} is synced with "
                                  f"{uri}"))
    return {"S3Uri": uri, "LocalPath": platform.CHECKPOINT_PATH} if uri else None


MAX_RETRY_ATTEMPTS = 30
"""``RetryStrategy.MaximumRetryAttempts`` is 1-30."""


def recovery_note(job: DistributedJob, retries: Optional[int]) -> Optional[Note]:
    """What SageMaker restarts itself: a spot interruption (managed spot, within ``MaxWaitTimeInSeconds``,
    from ``/opt/ml/checkpoints``) and, with ``RetryStrategy``, internal errors only."""
    native = []
    if job.spot:
        native.append("managed spot restarts an interrupted job from its checkpoints within MaxWaitTimeInSeconds")
    if retries is not None:
        native.append(f"RetryStrategy retries it up to {retries} times after an InternalServerError only")
    return watcher_note(job, "; ".join(native), handled=("preemption",) if job.spot else ())


def algorithm(role: EffectiveRole, settings: SageMakerSettings, plan: code_data.Plan,
              launched: Optional[tuple[str, ...]], job: DistributedJob) -> dict[str, Any]:
    """``AlgorithmSpecification``: the image, and (outside script mode) the entrypoint and arguments."""
    if not role.image:
        raise ValidationError("SageMaker runs containers: set image, or framework_version for the AWS Deep Learning "
                              "Container", source=job.source, path="image")
    spec: dict[str, Any] = {"TrainingImage": role.image, "TrainingInputMode": settings.input_mode or "File"}
    if plan.script is None:
        command = plan.entrypoint(launched if launched is not None else role.command) if role.command else ()
        args = role.args
        if command:
            spec["ContainerEntrypoint"] = list(command)
        if args:
            spec["ContainerArguments"] = list(args)
        for key in ("ContainerEntrypoint", "ContainerArguments"):
            if len(spec.get(key, ())) > LIMITS["container_entrypoint"]:
                raise ValidationError(f"SageMaker takes at most 100 items in {key}", source=job.source,
                                      path="command" if key == "ContainerEntrypoint" else "args")
    if settings.metric_definitions:
        spec["MetricDefinitions"] = [dict(d) for d in settings.metric_definitions]
    if settings.metrics_time_series:
        spec["EnableSageMakerMetricsTimeSeries"] = True
    return spec


ARGV_VARIABLE = "OMNIDIST_ARGV_"
"""Where an argv with a word longer than SageMaker takes is carried (``OMNIDIST_ARGV_0``, …)."""

ARG_MAX = 256
"""Characters in one ``ContainerEntrypoint`` / ``ContainerArguments`` item."""

ENV_VALUE_MAX = 512
"""Characters in one ``Environment`` value."""


def fit_argv(spec: dict[str, Any], env: dict[str, str], notes: list[Note]) -> None:
    """An entrypoint or argument longer than SageMaker's 256 characters (a ``bash -c`` script): the
    whole argv, shell-quoted, goes into ``OMNIDIST_ARGV_<i>`` variables, and ``sh`` runs it."""
    argv = [*spec.get("ContainerEntrypoint", ()), *spec.get("ContainerArguments", ())]
    if all(len(item) <= ARG_MAX for item in argv):
        return
    import shlex

    text = shlex.join(argv)
    chunks = [text[i:i + ENV_VALUE_MAX] for i in range(0, len(text), ENV_VALUE_MAX)]
    env.update({f"{ARGV_VARIABLE}{i}": chunk for i, chunk in enumerate(chunks)})
    refs = "".join(f"${{{ARGV_VARIABLE}{i}}}" for i in range(len(chunks)))
    spec["ContainerEntrypoint"] = ["sh", "-c", f'eval "exec {refs}"']
    spec.pop("ContainerArguments", None)
    notes.append(Note(kind=NoteKind.APPROXIMATED, field="command",
                      message=f"a word of the command is longer than SageMaker's {ARG_MAX} characters: the command "
                              f"travels in {ARGV_VARIABLE}0… and sh runs it"))


def job_name(job: DistributedJob, notes: list[Note]) -> str:
    """The job's name as SageMaker's pattern takes it (botocore does not check it): a portable name
    ending in dashes loses them."""
    name = job.name.rstrip("-")
    if name != job.name:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="name",
                          message=f"{name!r}: a SageMaker job name ends with a letter or digit"))
    if not TRAINING_JOB_NAME.match(name):
        raise ValidationError("a SageMaker job name is 1-63 letters, digits and dashes, ending with a letter or digit",
                              source=job.source, path="name")
    return name


def training_request(job: DistributedJob, settings: SageMakerSettings,
                     notes: list[Note]) -> tuple[dict[str, Any], DistributedJob]:
    """The ``CreateTrainingJob`` request for ``job``, and the job after ``data_map``."""
    if not settings.role_arn:
        raise ValidationError("SageMaker runs every job as an IAM role: set role_arn (arn:aws:iam::ACCOUNT:role/NAME) "
                              "in the profile or the job's backends.sagemaker block", source=job.source,
                              path=f"{SETTINGS}.role_arn")
    name = job_name(job, notes)
    job, plan = code_data.prepare(job, settings, notes)
    roles = {r.name: plan.role(r) for r in effective_roles(job)}
    check_roles(job, roles, notes)
    primary = roles[RoleName.PRIMARY]
    resources = resource_config(job, roles, settings, notes)
    nodes = sum(1 if n is RoleName.PRIMARY else int(r.replicas) for n, r in roles.items() if n in TRAINING)
    parameter_servers(job, roles, nodes, notes)
    spread = distribution(job, nodes, plan.script is not None, primary.command, notes)
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "RoleArn": settings.role_arn,
        "AlgorithmSpecification": algorithm(primary, settings, plan, spread.command, job),
        "ResourceConfig": resources,
        "OutputDataConfig": {"S3OutputPath": plan.output_path,
                             **({"KmsKeyId": settings.output_kms_key_id} if settings.output_kms_key_id else {})},
        "StoppingCondition": stopping(job, settings, notes),
    }
    hyper = {**settings.hyperparameters, **(code_data.hyperparameters(plan.script, settings) if plan.script else {}),
             **spread.hyperparameters}
    if hyper:
        if len(hyper) > LIMITS["hyperparameters"]:
            raise ValidationError(f"SageMaker takes at most {LIMITS['hyperparameters']} hyperparameters, got "
                                  f"{len(hyper)}", source=job.source, path="args")
        request["HyperParameters"] = hyper
    channels = [*plan.channels, *settings.channels]
    if channels:
        if len(channels) > LIMITS["channels"]:
            raise ValidationError(f"SageMaker takes at most {LIMITS['channels']} channels, got {len(channels)}",
                                  source=job.source, path="inputs")
        request["InputDataConfig"] = [dict(c) for c in channels]
    env = environment(primary, job)
    fit_argv(request["AlgorithmSpecification"], env, notes)
    if len(env) > LIMITS["environment"]:
        raise ValidationError(f"SageMaker takes at most {LIMITS['environment']} variables, got {len(env)}",
                              source=job.source, path="env")
    if env:
        request["Environment"] = env
    if settings.subnets or settings.security_group_ids:
        if not (settings.subnets and settings.security_group_ids):
            raise ValidationError("a VPC needs both subnets and security_group_ids", source=job.source,
                                  path=f"{SETTINGS}.{'subnets' if not settings.subnets else 'security_group_ids'}")
        request["VpcConfig"] = {"SecurityGroupIds": list(settings.security_group_ids),
                                "Subnets": list(settings.subnets)}
    if job.spot:
        request["EnableManagedSpotTraining"] = True
    saved = checkpoint(job, settings, plan, notes)
    if saved:
        request["CheckpointConfig"] = saved
    if settings.enable_network_isolation:
        request["EnableNetworkIsolation"] = True
    if settings.encrypt_inter_container_traffic:
        request["EnableInterContainerTrafficEncryption"] = True
    retries = settings.max_retries
    if retries is None and job.recovery is not None and job.recovery.max_restarts:
        retries = min(job.recovery.max_restarts, MAX_RETRY_ATTEMPTS)
    if retries is not None:
        request["RetryStrategy"] = {"MaximumRetryAttempts": retries}
    note = recovery_note(job, retries)
    if note:
        notes.append(note)
    if job.labels:
        request["Tags"] = labels.tags(job.labels, job.source)
    return request, job


def compile_job(job: DistributedJob, settings: SageMakerSettings) -> CompiledJob:
    """The ``CreateTrainingJob`` request for ``job``, with diagnostics."""
    notes: list[Note] = []
    request, job = training_request(job, settings, notes)
    return CompiledJob(backend=NAME, request=request, diagnostics=notes, format="json", job=job)
