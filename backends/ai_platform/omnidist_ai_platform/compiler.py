"""Portable job -> the body of ``projects.jobs.create`` (pure: no network, no SDK).

One function per IR part: :func:`machine_for` (hardware), :func:`replica_config` (what a replica
runs), :func:`pool_to_native` (a role's ``<prefix>Type/Count/Config``), :func:`reducers_to_native`
(the Reduction Server in the parameter-server slot), :func:`tpu_to_native` (a TPU slice: the
master runs the program, one ``cloud_tpu`` worker is the TPU), :func:`training_input` (the rest).
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from omnidist.kit import (
    AUTO,
    TRAINING_ROLES,
    Accelerator,
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
    RoleName,
    UnsupportedFeatureError,
    ValidationError,
    check_named,
    effective_roles,
    format_proto_duration,
    processes_per_node,
    size_reducers,
    smallest_fit,
    start_processes,
    tpu_backends,
    tpu_slice_of,
    watcher_note,
)
from omnidist.runtime.launch import carry_processes_per_node
from omnidist_ai_platform import catalog, code_data
from omnidist_ai_platform.settings import AIPlatformSettings
from omnidist_ai_platform.tables import NAME, REDUCER_IMAGE, REFUSALS, ROLE_PREFIXES
from omnidist_google.google_labels import check_labels as check_google_labels

_SETTINGS_PATH = f"backends.{NAME}"

REDUCER_HINTS: dict[Framework, str] = {
    Framework.HOROVOD: "set HOROVOD_FUSION_THRESHOLD=134217728 for the Reduction Server",
    Framework.PYTORCH: "use DistributedDataParallel(bucket_cap_mb=64) (default 25) with the Reduction Server",
}
"""Framework -> tuning advice the Reduction Server documentation gives."""


@attrs.frozen(kw_only=True)
class _Context:
    """What every per-role function needs: the job, settings, the master's image, and the notes."""

    job: DistributedJob
    settings: AIPlatformSettings
    roles: dict[RoleName, EffectiveRole]
    notes: list[Note]

    @property
    def master_image(self) -> Optional[str]:
        return self.roles[RoleName.PRIMARY].image


def derive_job_id(name: str) -> str:
    """``cassava-resnet`` -> ``cassava_resnet``: legacy ids take letters, digits and ``_``."""
    return name.replace("-", "_")


def refuse(feature: Feature, **context: str) -> UnsupportedFeatureError:
    """The refusal of a feature legacy AI Platform lacks, in the words of :data:`.tables.REFUSALS`."""
    return REFUSALS[feature].error(feature, NAME, **context)


TPU_LAYOUT = "legacy AI Platform runs a TPU as one cloud_tpu worker beside the master, which runs the program"
"""How legacy AI Platform holds a TPU job, for the refusal of the roles it has no place for (SPEC §13)."""


def refuse_accelerator(role: EffectiveRole) -> None:
    """Exit 3 for an accelerator legacy AI Platform never had."""
    kind = role.accelerator.type if role.accelerator else None
    if kind and role.accelerator.tpu and kind not in catalog.TPU_ACCELERATORS:
        raise UnsupportedFeatureError(
            Feature.ACCELERATOR, NAME, f"legacy AI Platform Training ran TPU v2 and v3 only, as TPU Nodes, not {kind}.",
            f"Compile it for {tpu_backends(kind)}: {kind} runs on TPU VMs there.",
            subject=f"accelerator {kind}")
    if kind and not role.accelerator.tpu and kind not in catalog.ACCELERATOR_TYPES:
        raise refuse(Feature.ACCELERATOR, kind=kind, offered=", ".join(sorted(catalog.ACCELERATOR_TYPES)))


def machine_for(role: EffectiveRole, ctx: _Context, default: Optional[str] = None) -> Machine:
    """The role's machine: the one named in settings (checked), else the smallest catalog fit."""
    kind, count = (role.accelerator.type, role.gpus) if role.accelerator else (None, 0)
    named = ctx.settings.machine_types.get(role.name.value)
    if named:  # the settings accept known names only, so this is never None
        return check_named(catalog.MACHINES, named, role=role.name.value, accelerator=role.accelerator,
                           cpus=role.cpus, memory_gb=role.memory_gb,
                           path=f"{_SETTINGS_PATH}.machine_types.{role.name.value}")
    why = "is the smallest legacy machine that fits" + (f" {count} x {kind}" if kind else "")
    if default and role.cpus is None and role.memory_gb is None and kind is None:
        found, why = catalog.MACHINES.get(default), "is the machine the samples recommend for this role"
    else:
        found = smallest_fit(catalog.MACHINES, role.accelerator, cpus=role.cpus, memory_gb=role.memory_gb)
    if found is None:
        want = f"{count} x {kind}, " if kind else ""
        raise ValidationError(
            f"no legacy machine has {want}{role.cpus or 0:g} vCPUs and {role.memory_gb or 0:g} GB; "
            "ask for less or name a machine in backends.ai_platform.machine_types", path=role.name.value)
    ctx.notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{role.name.value}.machine_type",
                          message=f"{found.name} ({found.vcpus} vCPUs, {found.memory_gb:g} GB) {why}",
                          code=NoteCode.MACHINE_CHOSEN, data={"role": role.name.value, "machine": found.name}))
    if kind and found.family == "n1" and found.vcpus < 4 * count:
        ctx.notes.append(Note(kind=NoteKind.HINT, field=f"{role.name.value}.cpus",
                              message=f"{found.vcpus} vCPUs feed {count} x {kind}; set cpus for data loading "
                                      "and the full network bandwidth"))
    return found


def launch_command(role: EffectiveRole, ctx: _Context) -> tuple[str, ...]:
    """The role's command, made to start the node's processes (SPEC §10): legacy starts each
    replica's command once, and has no field for the count (nor an environment for the hint), so
    an ``omnidist launch`` command gets ``--nproc-per-node=N`` and any other command runs under
    one (:func:`omnidist.compiler.launchers.start_processes`)."""
    processes = processes_per_node(ctx.job) if role.name in TRAINING_ROLES else 1
    command = carry_processes_per_node(role.command, processes)
    if command != tuple(role.command) and role.name is RoleName.PRIMARY:
        ctx.notes.append(Note(kind=NoteKind.APPROXIMATED, field="processes_per_node",
                              message=f"{processes} processes per node: carried as `omnidist launch "
                                      f"--nproc-per-node={processes}` in the command (legacy has no field or "
                                      "environment variable for it)"))
    command, note = start_processes(ctx.job, command, processes, NAME)
    if note is not None and role.name is RoleName.PRIMARY:
        ctx.notes.append(note)
    return command


def wrapped_command(role: EffectiveRole, ctx: _Context) -> tuple[str, ...]:
    """The role's command (:func:`launch_command`), prefixed with ``env K=V …`` when it has
    environment variables (legacy has no env field)."""
    command = launch_command(role, ctx)
    if not role.env:
        return command
    if not role.command:
        raise UnsupportedFeatureError(
            Feature.ENV, NAME, f"{role.name.value} sets {', '.join(sorted(role.env))}, but legacy AI Platform has no "
            "environment variables and there is no command to prefix with `env K=V …`.",
            "Give the job a command (e.g. command: [python, -m, trainer.task]) or bake the variables "
            "into the image.")
    ctx.notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"{role.name.value}.env",
                          message="passed by prefixing containerCommand with `env K=V …` "
                                  "(no env field in legacy)"))
    return ("env", *(f"{key}={value}" for key, value in sorted(role.env.items())), *command)


def replica_config(role: EffectiveRole, ctx: _Context, machine: Optional[Machine]) -> dict[str, Any]:
    """``ReplicaConfig``: accelerator (not for deprecated names, whose GPUs are built in), image
    (omitted when equal to the master's), command, args, disk."""
    config: dict[str, Any] = {}
    if role.accelerator and machine and machine.name not in catalog.LEGACY_MACHINE_NAMES:
        native_type = catalog.ACCELERATOR_TYPES[role.accelerator.type]
        config["acceleratorConfig"] = {"count": role.gpus, "type": native_type}
    if not ctx.settings.package_mode:
        if role.name is RoleName.PRIMARY or role.image != ctx.master_image:
            config["imageUri"] = role.image
        command = wrapped_command(role, ctx)
        if command:
            config["containerCommand"] = list(command)
        if role.args:
            config["containerArgs"] = list(role.args)
    elif role.image and (role.name is RoleName.PRIMARY or role.image != ctx.master_image):
        config["imageUri"] = role.image  # a package on a container (prebuilt PyTorch, or the job's image)
    if role.disk_gb:
        config["diskConfig"] = {"bootDiskSizeGb": role.disk_gb}
    return config


def pool_to_native(role: EffectiveRole, ctx: _Context) -> dict[str, Any]:
    """``<prefix>Type``, ``<prefix>Count`` (not for the master) and ``<prefix>Config`` of one role."""
    refuse_accelerator(role)
    prefix = ROLE_PREFIXES[role.name]
    machine = machine_for(role, ctx)
    native: dict[str, Any] = {f"{prefix}Type": machine.name}
    if role.name is not RoleName.PRIMARY:
        native[f"{prefix}Count"] = role.replicas
    config = replica_config(role, ctx, machine)
    if config:
        native[f"{prefix}Config"] = config
    return native


def reducers_to_native(role: EffectiveRole, ctx: _Context) -> dict[str, Any]:
    """The Reduction Server: reducers in the parameter-server slot with the legacy image."""
    machine = machine_for(role, ctx, default=catalog.REDUCER_MACHINE)
    count = role.replicas
    if count == AUTO:
        trainers: dict[RoleName, EffectiveRole] = {r: ctx.roles[r] for r in (RoleName.PRIMARY, RoleName.WORKERS)
                                                   if r in ctx.roles}
        egress: dict[RoleName, float] = {
            r: catalog.MACHINES.egress_gbps(machine_for(n, attrs.evolve(ctx, notes=[])), n.accelerator)
            for r, n in trainers.items()}
        sizing = size_reducers(trainers, egress, machine.egress_gbps)
        count = sizing.count
        ctx.notes.append(Note(kind=NoteKind.DEFAULTED, field="reduction_servers.replicas",
                              message=sizing.explain(machine.name)))
    ctx.notes.append(Note(kind=NoteKind.APPROXIMATED, field="reduction_servers",
                          message=f"placed in the parameter-server slot with {REDUCER_IMAGE} and "
                                  "useChiefInTfConfig: true, as a public sample does "
                                  "(unconfirmed beyond it)"))
    if ctx.job.framework in REDUCER_HINTS:
        ctx.notes.append(Note(kind=NoteKind.HINT, field="reduction_servers",
                              message=REDUCER_HINTS[ctx.job.framework]))
    image = (ctx.job.reduction_servers.image if ctx.job.reduction_servers else None) or REDUCER_IMAGE
    return {"parameterServerType": machine.name, "parameterServerCount": count,
            "parameterServerConfig": {"imageUri": image}}


def tpu_to_native(primary: EffectiveRole, tpu: Accelerator, ctx: _Context) -> dict[str, Any]:
    """A TPU slice the legacy way: the master (a CPU machine) runs the program, and one ``cloud_tpu``
    worker is the TPU it reaches by name (a TPU Node), with ``tpuTfVersion`` for a custom container."""
    refuse_accelerator(primary)
    native = pool_to_native(attrs.evolve(primary, accelerator=None), ctx)
    device, pod = catalog.TPU_ACCELERATORS[tpu.type]
    config: dict[str, Any] = {"acceleratorConfig": {"count": tpu.count, "type": device if tpu.count <= 8 else pod}}
    if not ctx.settings.package_mode:
        if not ctx.settings.tpu_tf_version:
            raise ValidationError(
                "required for a TPU job in a custom container: the runtime version whose TensorFlow matches the "
                "image's (tpuTfVersion, e.g. \"2.11\"); or run a Python package on a runtime version",
                path=f"{_SETTINGS_PATH}.tpu_tf_version")
        config["tpuTfVersion"] = ctx.settings.tpu_tf_version
    ctx.notes.append(Note(kind=NoteKind.HINT, field="primary.accelerator", message=(
        f"{tpu} is a TPU Node: the master ({native['masterType']}) runs the program and reaches the TPU over the "
        "network by name (TPUClusterResolver); TPU VM code (Vertex, GKE) runs on the TPU host itself")))
    return {**native, "workerType": catalog.TPU_MACHINE, "workerCount": 1, "workerConfig": config}


def check_job(job: DistributedJob, settings: AIPlatformSettings, roles: dict[RoleName, EffectiveRole],
              notes: list[Note]) -> None:
    """Job-wide rules: what legacy cannot express, and the container/package and tier choices."""
    if job.spot:
        raise refuse(Feature.SPOT)
    if job.interconnect is Interconnect.INFINIBAND:
        raise refuse(Feature.INFINIBAND)
    if settings.package_mode and processes_per_node(job) > 1:
        raise UnsupportedFeatureError(
            Feature.PROCESSES_PER_NODE, NAME, f"{processes_per_node(job)} processes per node: a runtime-version job "
            "runs `python -m MODULE` once per replica, and has no command to put a launcher in.",
            "Set processes_per_node: 1, or run a custom container (image: and command:).",
            subject="processes_per_node")
    primary = roles[RoleName.PRIMARY]
    if settings.package_mode:
        if not (settings.python_module and settings.package_uris):
            raise ValidationError("a Python-package job needs both python_module and package_uris",
                                  path=f"{_SETTINGS_PATH}.python_module")
        trainers = [r for r in roles.values() if r.name is not RoleName.REDUCTION_SERVERS]
        if any(r.command for r in trainers) or (settings.runtime_version and any(r.image for r in trainers)):
            raise ValidationError(
                "runtime_version/python_module jobs run your package (on Google's runtime image, or on a "
                "container without a runtime_version): remove the job's command (and image, with a runtime "
                "version), or remove the python settings to run the container",
                path=_SETTINGS_PATH)
        with_env = next((r for r in trainers if r.env), None)
        if with_env is not None:  # named as the role's field: no migrate flag answers it
            raise UnsupportedFeatureError(
                Feature.ENV,
                NAME,
                f"{with_env.name.value} sets {', '.join(sorted(with_env.env))}, "
                "but a Python-package job has no command to prefix with `env K=V …`, and "
                "legacy AI Platform has no environment variables.",
                "Set them in your Python code instead, or pass them as arguments.",
                subject=f"{with_env.name.value}.env",
            )
        if len({r.args for r in trainers}) > 1:
            raise ValidationError("a Python-package job passes one args list to every replica; give roles "
                                  "no own args", path="args")
    elif not primary.image:
        raise ValidationError("legacy AI Platform needs a container image (image:), or a Python package "
                              "(backends.ai_platform.python_module + package_uris)", path="image")
    tpu = tpu_slice_of(job, NAME, TPU_LAYOUT)
    basic_tpu = (f"{catalog.PORTABLE_TPUS[catalog.TPU_DEFAULT[0]]}:{catalog.TPU_DEFAULT[1]}", None, None, None)
    if settings.scale_tier == "BASIC_TPU" and (str(tpu), *primary.hardware[1:]) != basic_tpu:
        raise ValidationError(f"BASIC_TPU runs one master and one {basic_tpu[0]} device; give the primary accelerator "
                              f"{basic_tpu[0]} and nothing else, or use CUSTOM (the default)",
                              path=f"{_SETTINGS_PATH}.scale_tier")
    if settings.scale_tier not in ("CUSTOM", "BASIC_TPU") and (
            len(roles) > 1 or primary.hardware != (None, None, None, None) or settings.machine_types):
        raise ValidationError(f"{settings.scale_tier} fixes the cluster; use CUSTOM (the default) for jobs "
                              "with workers, parameter servers, evaluators, accelerators or machine sizes",
                              path=f"{_SETTINGS_PATH}.scale_tier")


def use_chief(ctx: _Context) -> bool:
    """``useChiefInTfConfig``: forced with a Reduction Server, else the setting, else on for
    TensorFlow jobs in a custom container, whose ``tf.distribute`` strategies reject a task
    named ``master`` (the field has no effect on Python-package jobs, the API says)."""
    explicit = ctx.settings.use_chief_in_tf_config
    if RoleName.REDUCTION_SERVERS in ctx.roles:
        return True
    tensorflow = ctx.job.framework is Framework.TENSORFLOW and not ctx.settings.package_mode
    if explicit is not None:
        if tensorflow and not explicit:
            ctx.notes.append(Note(kind=NoteKind.HINT, field="useChiefInTfConfig",
                                  message="false, as asked: TF_CONFIG names the primary `master`, which TensorFlow "
                                          "2's tf.distribute rejects (ValueError: Disallowed task type)"))
        return explicit
    if tensorflow:
        ctx.notes.append(Note(kind=NoteKind.DEFAULTED, field="useChiefInTfConfig",
                              message="true for a TensorFlow job: TF_CONFIG names the primary `chief`, since "
                                      "TensorFlow 2's tf.distribute rejects `master` (set backends.ai_platform."
                                      "use_chief_in_tf_config: false to keep `master`)"))
    return tensorflow


def training_input(ctx: _Context) -> dict[str, Any]:
    """``trainingInput``: the pools, then the job-wide fields, in the API's order."""
    settings, roles = ctx.settings, ctx.roles
    native: dict[str, Any] = {"scaleTier": settings.scale_tier, "region": settings.region}
    primary = roles[RoleName.PRIMARY]
    tpu = primary.accelerator if primary.accelerator is not None and primary.accelerator.tpu else None
    if settings.scale_tier == "CUSTOM" and tpu is not None:
        native.update(tpu_to_native(primary, tpu, ctx))  # the only role a TPU job has (check_job)
    elif settings.scale_tier == "CUSTOM":
        for role in roles.values():
            native.update(reducers_to_native(role, ctx) if role.name is RoleName.REDUCTION_SERVERS
                          else pool_to_native(role, ctx))
    else:
        if tpu is None:
            refuse_accelerator(primary)
        config = replica_config(attrs.evolve(primary, accelerator=None), ctx, None)
        if config:
            native["masterConfig"] = config
    if use_chief(ctx):
        native["useChiefInTfConfig"] = True
    optional = {"runtimeVersion": settings.runtime_version, "pythonVersion": settings.python_version,
                "pythonModule": settings.python_module, "packageUris": list(settings.package_uris) or None}
    native.update({k: v for k, v in optional.items() if v})
    if settings.package_mode and roles[RoleName.PRIMARY].args:
        native["args"] = list(roles[RoleName.PRIMARY].args)
    if settings.job_dir:
        native["jobDir"] = settings.job_dir
    if ctx.job.timeout:
        native["scheduling"] = {"maxRunningTime": format_proto_duration(ctx.job.timeout)}
    tail = {"serviceAccount": settings.service_account, "network": settings.network,
            "enableWebAccess": settings.enable_web_access or None}
    native.update({k: v for k, v in tail.items() if v})
    return native


def compile_job(job: DistributedJob, settings: AIPlatformSettings) -> CompiledJob:
    """Build the create body ``{"jobId", "labels", "trainingInput"}`` for ``job``."""
    check_google_labels(job.labels)  # the API answers 400 otherwise; the same rules as Vertex
    notes: list[Note] = []
    job, settings, plan = code_data.prepare(job, settings, notes)  # data_map, code, inputs/outputs (SPEC §7)
    roles = {role.name: plan.role(role) for role in effective_roles(job)}
    check_job(job, settings, roles, notes)
    ctx = _Context(job=job, settings=settings, roles=roles, notes=notes)
    body: dict[str, Any] = {"jobId": settings.job_id or derive_job_id(job.name)}
    if job.labels:
        body["labels"] = dict(job.labels)
    body["trainingInput"] = training_input(ctx)
    note = watcher_note(job, "")  # trainingInput has no retry or restart field
    if note:
        notes.append(note)
    return CompiledJob(backend=NAME, request=body, diagnostics=tuple(notes), format="json", job=job)
