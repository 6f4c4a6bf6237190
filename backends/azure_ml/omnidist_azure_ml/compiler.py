"""Portable job -> Azure ML command job YAML (as a dict). Pure: no network, no SDK import.

An Azure ML command job is one ``instance_type`` x ``instance_count`` nodes that all run the
same command in the same environment, so the primary and the workers become
``instance_count`` and everything that would need a second kind of node is refused.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Optional

import attrs

from omnidist.kit import (
    HARDWARE,
    PROGRAM,
    CompiledJob,
    DistributedJob,
    EffectiveRole,
    Feature,
    Framework,
    Interconnect,
    Note,
    NoteCode,
    NoteKind,
    RoleName,
    UnsupportedFeatureError,
    ValidationError,
    big_enough,
    effective_role,
    num_nodes,
    processes_per_node,
    replica_count,
    runtime_hints,
    smallest_fit,
    watcher_note,
)
from omnidist.runtime.launch import is_launch_command
from omnidist_azure_ml import catalog, code_data
from omnidist_azure_ml.catalog import Sku
from omnidist_azure_ml.settings import AzureMLSettings
from omnidist_azure_ml.tables import (
    FRAMEWORK_DISTRIBUTIONS,
    NAME,
    PARAMETER_SERVERS_ADD_NODES,
    REFUSALS,
)

SCHEMA = "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json"
SETTINGS = f"backends.{NAME}"
_PLACEHOLDER_ARG = re.compile(r"[\w@%+=:,./-]*(?:\$\{\{(?:inputs|outputs)\.[\w.]+\}\}[\w@%+=:,./-]*)+")


def _describe(value: Any) -> str:
    return "unset" if value is None else str(value)


def refuse(feature: Feature, **context: str) -> UnsupportedFeatureError:
    """The refusal of a feature Azure ML lacks, in the words of :data:`.tables.REFUSALS`."""
    return REFUSALS[feature].error(feature, NAME, **context)


def own(role: RoleName, field: str) -> UnsupportedFeatureError:
    """The refusal of a role with hardware (one ``instance_type`` per job) or a program (one
    command, one environment) other than the primary's."""
    feature = Feature.PER_ROLE_MACHINES if field in HARDWARE else Feature.PER_ROLE_PROGRAMS
    return refuse(feature, role=role.value, field=field, nodes=role.value.replace("_", " "))


def check_roles(job: DistributedJob) -> EffectiveRole:
    """Refuse what one homogeneous set of nodes cannot run; return the effective primary."""
    if replica_count(job, RoleName.EVALUATORS):
        raise refuse(Feature.EVALUATORS)
    reducers = job.reduction_servers
    if reducers is not None and reducers.replicas != 0:
        raise refuse(Feature.REDUCTION_SERVERS)
    primary = effective_role(job, RoleName.PRIMARY)
    if replica_count(job, RoleName.WORKERS):
        _check_same_as_primary(effective_role(job, RoleName.WORKERS), primary, RoleName.WORKERS)
    if replica_count(job, RoleName.PARAMETER_SERVERS):
        _check_parameter_servers(job, primary)
    return primary


def _check_same_as_primary(role: EffectiveRole, primary: EffectiveRole, name: RoleName) -> None:
    for field in (*HARDWARE, *PROGRAM):
        if getattr(role, field) != getattr(primary, field):
            raise own(name, field)


def _check_parameter_servers(job: DistributedJob, primary: EffectiveRole) -> None:
    if job.framework is not Framework.TENSORFLOW:
        raise refuse(Feature.PARAMETER_SERVERS, framework=job.framework.value)
    written = job.parameter_servers
    for field in (*HARDWARE, "image", "command", "args"):
        value = getattr(written, field)
        if value is not None and value != getattr(primary, field):
            raise own(RoleName.PARAMETER_SERVERS, field)
    if written.env:
        raise UnsupportedFeatureError(Feature.PER_ROLE_PROGRAMS, NAME, "Azure ML gives every node of a command job "
                                      "the same environment variables.", "Move the variables to the job's `env` "
                                      "and branch on TF_CONFIG's task type.", subject="parameter_servers.env")


def command_to_native(primary: EffectiveRole) -> str:
    """``command`` + ``args`` as one shell string, each argument quoted as needed.

    Azure ML runs ``command`` in a shell, so ``bash -c SCRIPT`` is written as the script itself:
    the importer reads a command only a shell runs the same way (several lines, ``&&``, a
    builtin such as ``.``) back as ``bash -c SCRIPT``, and compiling that again gives the same text.
    """
    argv = [*primary.command, *primary.args]
    if not argv:
        raise ValidationError("Azure ML command jobs need a command; add e.g. `command: [python, train.py]`",
                              path="command")
    if len(argv) == 3 and argv[:2] == ["bash", "-c"] and argv[2].strip():
        return argv[2]
    return " ".join(_quote(arg) for arg in argv)


def _quote(arg: str) -> str:
    # Azure substitutes ${{inputs.x}} in the text before the shell runs it; leave those bare.
    return arg if _PLACEHOLDER_ARG.fullmatch(arg) else shlex.quote(arg)


def environment_to_native(primary: EffectiveRole, settings: AzureMLSettings, notes: list[Note]) -> Any:
    """The registered environment when configured, else an inline ``{image: …}`` environment."""
    if settings.environment:
        if settings.environment.startswith("azureml:"):
            return settings.environment
        notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"{SETTINGS}.environment",
                          message="Azure ML job files reference registered and curated environments as "
                                  f"azureml:NAME; wrote azureml:{settings.environment}"))
        return f"azureml:{settings.environment}"
    if not primary.image:
        raise ValidationError(f"give the job an `image`, or a registered environment in `{SETTINGS}.environment` "
                              "(e.g. azureml:acpt-pytorch-2.2-cuda12.1@latest)", path="image")
    return {"image": primary.image}


def compute_to_native(settings: AzureMLSettings) -> Optional[str]:
    """``azureml:<cluster>``, or ``None`` for serverless compute."""
    if not settings.compute:
        return None
    return settings.compute if settings.compute.startswith("azureml:") else f"azureml:{settings.compute}"


@attrs.frozen(kw_only=True)
class Nodes:
    """What every node of the job is: the ``instance_type`` to send (None on a cluster that
    fixes it), the SKU when omnidist knows it, GPUs per node, and the InfiniBand tuning."""

    instance_type: Optional[str]
    sku: Optional[Sku]
    gpus: int
    infiniband_env: dict[str, str]


def _gpus(sku: Sku) -> str:
    return f"{sku.gpus}x{sku.accelerator}" if sku.gpus else "no GPU"


def nodes_for(job: DistributedJob, primary: EffectiveRole, settings: AzureMLSettings, notes: list[Note]) -> Nodes:
    """The SKU: the configured one (checked), else the smallest catalog SKU that fits."""
    need_ib = job.interconnect is Interconnect.INFINIBAND
    if settings.instance_type:
        sku = _explicit_sku(settings.instance_type, primary, need_ib, notes)
        return _nodes(sku.name if sku else settings.instance_type, sku, primary, need_ib)
    sku = _pick_sku(job, primary, need_ib, notes)
    if settings.compute:
        notes.append(Note(kind=NoteKind.HINT, field=f"{SETTINGS}.instance_type",
                          message=f"cluster {settings.compute} fixes the VM size; omnidist assumed one like "
                                  f"{sku.name} - set instance_type to the cluster's VM size so it can be checked"))
        return _nodes(None, None, primary, need_ib)
    return _nodes(sku.name, sku, primary, need_ib)


def _nodes(instance_type: Optional[str], sku: Optional[Sku], primary: EffectiveRole, need_ib: bool) -> Nodes:
    if sku is not None:
        tuning = catalog.infiniband_env(sku)
    else:  # an unknown SKU or a cluster: trust `interconnect`, skip the SKU-specific topo file
        tuning = dict(catalog.INFINIBAND_ENV) if need_ib else {}
    return Nodes(instance_type=instance_type, sku=sku, gpus=sku.gpus if sku else primary.gpus,
                 infiniband_env=tuning)


def _pick_sku(job: DistributedJob, primary: EffectiveRole, need_ib: bool, notes: list[Note]) -> Sku:
    accel = primary.accelerator
    if accel is not None and catalog.largest(accel.type) is None:
        raise refuse(Feature.ACCELERATOR, kind=accel.type, offered=", ".join(catalog.offered_accelerators()))
    multi_gpu = accel is not None and num_nodes(job) > 1
    if accel is None and primary.cpus is None and primary.memory_gb is None and not need_ib:
        sku = catalog.lookup(catalog.DEFAULT_CPU_SKU)
    else:
        sku = smallest_fit(catalog.MACHINES, accel, cpus=primary.cpus, memory_gb=primary.memory_gb,
                           more_gpus=True, interconnect="infiniband" if need_ib else None,
                           prefer_interconnect="infiniband" if multi_gpu else None)
    if sku is None:
        raise _no_sku(primary, need_ib)
    notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{SETTINGS}.instance_type",
                      message=f"{sku.name} ({_gpus(sku)}, {sku.vcpus} vCPUs, {sku.memory_gb:g} GB"
                              f"{', SR-IOV InfiniBand' if sku.infiniband else ''}) is the smallest SKU that fits",
                      code=NoteCode.MACHINE_CHOSEN, data={"machine": sku.name}))
    _sku_hints(sku, primary, notes)
    if multi_gpu and not sku.infiniband:
        notes.append(Note(kind=NoteKind.HINT, field="interconnect",
                          message=f"no SKU with InfiniBand carries {accel.type}; NCCL talks TCP between nodes"))
    return sku


def _sku_hints(sku: Sku, primary: EffectiveRole, notes: list[Note]) -> None:
    if sku.retired:
        notes.append(Note(kind=NoteKind.HINT, field=f"{SETTINGS}.instance_type",
                          message=f"{sku.name}: {sku.retired}; pools may no longer be created with it"))
    if primary.accelerator is not None and sku.gpus > primary.accelerator.count:
        notes.append(Note(kind=NoteKind.HINT, field="primary.accelerator",
                          message=f"{sku.name} has {sku.gpus} GPUs; the job uses {primary.accelerator.count} per node"))


def _no_sku(primary: EffectiveRole, need_ib: bool) -> Exception:
    accel = primary.accelerator
    if need_ib and not catalog.infiniband_alternatives(accel.type if accel else None):
        return UnsupportedFeatureError(
            Feature.INFINIBAND,
            NAME,
            f"no Azure SKU with SR-IOV InfiniBand carries {accel.type if accel else 'no GPU'}.",
            "Use an accelerator an InfiniBand SKU carries (V100, A100, A100-80GB, H100, H200), or drop "
            "`interconnect: infiniband`.",
            subject=f"interconnect: infiniband with {accel.type if accel else 'CPU-only nodes'}",
        )
    biggest = catalog.largest(accel.type) if accel else None
    if accel is not None and biggest is not None and accel.count > biggest.gpus:
        return ValidationError(f"no Azure SKU has {accel.count} {accel.type} GPUs; the largest has {biggest.gpus} "
                               f"({biggest.name}): use {accel.type}:{biggest.gpus} and more workers",
                               path="primary.accelerator")
    return ValidationError(f"no Azure SKU{' with InfiniBand' if need_ib else ''} has {_describe(accel)} with "
                           f"{_describe(primary.cpus)} vCPUs and {_describe(primary.memory_gb)} GB; lower "
                           f"primary.cpus / primary.memory_gb or name the VM size in {SETTINGS}.instance_type",
                           path="primary.cpus")


def _explicit_sku(name: str, primary: EffectiveRole, need_ib: bool, notes: list[Note]) -> Optional[Sku]:
    sku = catalog.lookup(name)
    path = f"{SETTINGS}.instance_type"
    if sku is None:
        notes.append(Note(kind=NoteKind.HINT, field=path,
                          message=f"{name} is not in omnidist's SKU catalog; its GPUs and InfiniBand are unchecked"))
        return None
    accel = primary.accelerator
    if need_ib and not sku.infiniband:
        alternatives = catalog.infiniband_alternatives(accel.type if accel else sku.accelerator if sku.gpus else None)
        instead = (f"use {' or '.join(s.name + (' (retired)' if s.retired else '') for s in alternatives)} instead"
                   if alternatives else "drop `interconnect: infiniband` or pick another accelerator")
        rdma = " (it has RDMA, but not the SR-IOV that NCCL needs)" if sku.rdma else ""
        raise ValidationError(f"{sku.name} has no SR-IOV InfiniBand{rdma}, which `interconnect: infiniband` "
                              f"needs; {instead}", path=path)
    if accel is not None and not catalog.MACHINES.takes(sku, accel, more_gpus=True):
        better = smallest_fit(catalog.MACHINES, accel, more_gpus=True, interconnect="infiniband" if need_ib else None)
        instead = f"use {better.name}" if better else "pick a SKU that carries it"
        raise ValidationError(f"{sku.name} has {_gpus(sku)}, but the primary asks for {accel}; {instead} "
                              "or change primary.accelerator", path=path)
    if not big_enough(sku, primary.cpus, primary.memory_gb):
        raise ValidationError(f"{sku.name} has {sku.vcpus} vCPUs and {sku.memory_gb:g} GB, but the primary asks "
                              f"for {_describe(primary.cpus)} vCPUs and {_describe(primary.memory_gb)} GB", path=path)
    _sku_hints(sku, primary, notes)
    return sku


def compile_job(job: DistributedJob, settings: AzureMLSettings) -> CompiledJob:
    """The whole command job; see the module docstring and docs/backends/azure_ml.md."""
    notes: list[Note] = []
    job, settings, plan = code_data.prepare(job, settings, notes)  # data_map, code, inputs/outputs (SPEC §7)
    primary = plan.primary(check_roles(job))
    nodes = nodes_for(job, primary, settings, notes)
    request: dict[str, Any] = {
        "$schema": SCHEMA,
        "type": "command",
        "display_name": job.name,
        "experiment_name": settings.experiment_name or job.name,
        "command": plan.command(command_to_native(primary)),
    }
    request.update(plan.fields())
    request["environment"] = environment_to_native(primary, settings, notes)
    compute = compute_to_native(settings)
    if compute:
        request["compute"] = compute
    request["resources"] = resources_to_native(job, nodes, settings, notes)
    request["distribution"] = distribution_to_native(job, notes)
    env = env_to_native(job, primary, nodes, notes)
    if env:
        request["environment_variables"] = env
    if job.timeout:
        request["limits"] = {"timeout": job.timeout}
    queue = queue_to_native(job, settings)
    if queue:
        request["queue_settings"] = queue
    if job.labels:
        request["tags"] = dict(job.labels)
    if primary.disk_gb is not None:
        notes.append(Note(kind=NoteKind.DROPPED, field="primary.disk_gb",
                          message="Azure ML nodes use their SKU's local disk; disk_gb is not sent"))
    note = watcher_note(job, "")  # a command job has no retry field; preempted low-priority jobs fail
    if note:
        notes.append(note)
    return CompiledJob(backend=NAME, request=request, diagnostics=notes, format="yaml", job=job)


def resources_to_native(job: DistributedJob, nodes: Nodes, settings: AzureMLSettings,
                        notes: list[Note]) -> dict[str, Any]:
    """``instance_count`` (primary + workers), ``instance_type``, ``shm_size``, ``docker_args``."""
    count = num_nodes(job)
    if PARAMETER_SERVERS_ADD_NODES:
        count += replica_count(job, RoleName.PARAMETER_SERVERS)
    resources: dict[str, Any] = {"instance_count": count}
    if nodes.instance_type:
        resources["instance_type"] = nodes.instance_type
    shm = settings.shm_size
    if shm is None and nodes.gpus >= 2:
        shm = catalog.MULTI_GPU_SHM_SIZE
        notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{SETTINGS}.shm_size",
                          message=f"{shm} of shared memory for {nodes.gpus} GPUs per node (Azure's default 2g "
                                  "starves multi-process data loaders)"))
    if shm:
        resources["shm_size"] = shm
    if settings.docker_args:
        resources["docker_args"] = settings.docker_args
    return resources


def distribution_to_native(job: DistributedJob, notes: list[Note]) -> dict[str, Any]:
    """The ``distribution`` block for the job's framework (:data:`FRAMEWORK_DISTRIBUTIONS`)."""
    kind = FRAMEWORK_DISTRIBUTIONS[job.framework]
    if kind == "tensorflow":
        servers = replica_count(job, RoleName.PARAMETER_SERVERS)
        if servers:
            notes.append(Note(kind=NoteKind.APPROXIMATED, field="parameter_servers",
                              message=f"{servers} parameter server(s) share the job's {num_nodes(job)} "
                                      "node(s) as in Azure's documented example (how Azure places them is "
                                      "unconfirmed)"))
        return {"type": kind, "worker_count": num_nodes(job), "parameter_server_count": servers}
    processes = processes_per_node(job)
    launches = is_launch_command(effective_role(job, RoleName.PRIMARY).command)
    if launches and kind == "pytorch":
        # One launcher, never two: Azure starting N processes that each run torchrun with N more
        # would make N x N per node.
        notes.append(Note(kind=NoteKind.DEFAULTED, field="distribution.process_count_per_instance",
                          message=f"1: the command is `omnidist launch …`, which starts the node's {processes} "
                                  "process(es) itself (torchrun); Azure starts one per node"))
        return {"type": kind, "process_count_per_instance": 1}
    if launches:
        notes.append(Note(kind=NoteKind.HINT, field="distribution.process_count_per_instance",
                          message=f"{processes}: Azure's mpirun starts the node's processes, and `omnidist launch` "
                                  "in each of them runs the command directly"))
    return {"type": kind, "process_count_per_instance": processes}


def env_to_native(job: DistributedJob, primary: EffectiveRole, nodes: Nodes,
                  notes: list[Note]) -> dict[str, str]:
    """Runtime hints, then InfiniBand tuning, then the user's variables (which win)."""
    tuning = {k: v for k, v in nodes.infiniband_env.items() if k not in primary.env}
    if tuning:
        added = ", ".join(f"{k}={v}" for k, v in tuning.items())
        notes.append(Note(kind=NoteKind.DEFAULTED, field="env", message=f"NCCL over SR-IOV InfiniBand: set {added}"))
    return {**runtime_hints(job, per_role=False), **tuning, **primary.env}


def queue_to_native(job: DistributedJob, settings: AzureMLSettings) -> dict[str, str]:
    """``job_tier`` (spot for ``spot: true``) and ``priority``."""
    queue: dict[str, str] = {}
    tier = settings.job_tier.lower() if settings.job_tier else None
    if job.spot:
        if tier not in (None, "spot"):
            raise ValidationError(f"`spot: true` asks for the spot tier but job_tier is {tier!r}; remove one of them",
                                  path=f"{SETTINGS}.job_tier")
        tier = "spot"
    if tier:
        queue["job_tier"] = tier
    if settings.priority:
        queue["priority"] = settings.priority.lower()
    return queue
