"""Portable job -> Vertex AI CustomJob REST body. Pure: no network, no SDK import.

One function per part: :func:`place` (role -> machine; a TPU slice: :func:`place_tpu`),
:func:`reducer_count` (``auto``), :func:`pool_to_native` (role -> ``WorkerPoolSpec``),
:func:`scheduling_to_native`, :func:`spec_extras` (settings -> ``CustomJobSpec`` fields). The output is the REST form:
camelCase keys, enum names, int64 (``replicaCount``) as JSON strings, as the API returns it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import attrs

from omnidist.kit import (
    AUTO,
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
    env_with_hints,
    format_proto_duration,
    size_reducers,
    smallest_fit,
    tpu_backends,
    tpu_slice_of,
    watcher_note,
)
from omnidist.runtime import hints
from omnidist_google.compute_engine import COMPUTE_ENGINE, N1_GPUS, N1_MEMORY_PER_VCPU, REDUCTION_SERVER_MACHINE
from omnidist_google.google_labels import check_labels as check_google_labels
from omnidist_vertex import code_data
from omnidist_vertex.settings import VertexSettings
from omnidist_vertex.tables import (
    ACCELERATOR_TYPES,
    CLOUD_TPU_ACCELERATORS,
    NAME,
    POOL_INDEX,
    REDUCTION_SERVER_IMAGE,
    REFUSALS,
    TPU_MACHINE,
    TPU_VM_ACCELERATORS,
    reduction_server_image,
)

if TYPE_CHECKING:
    from omnidist_google.tpu import TpuSlice

BACKEND = NAME
TRAINING_ROLES = (RoleName.PRIMARY, RoleName.WORKERS)
MAX_ENV = 100

MACHINES = COMPUTE_ENGINE
"""The machines Vertex AI training runs on."""

DEFAULT_CPU_MACHINE = "n1-standard-4"
"""The machine for a CPU-only role that names no machine, cpus or memory (Vertex's usual default)."""

N1_GPU_VCPUS_PER_GPU = 4
"""vCPUs per attached GPU when a role names neither a machine nor ``cpus`` (a few cores to
feed each GPU's input pipeline; one vCPU for eight V100s would starve them)."""


REDUCER_HINTS: dict[str, str] = {
    "containers": "pools 0 and 1 need Vertex prebuilt TensorFlow >= 2.3 / PyTorch >= 1.4 containers, or NCCL >= 2.7 "
                  "with the google-reduction-server package",
    "custom": "framework custom keeps its reducers: the image must all-reduce through NCCL >= 2.7 with the "
              "google-reduction-server plugin (apt install google-reduction-server)",
    "messages": "the Reduction Server works best with large messages: PyTorch DDP bucket_cap_mb=64 (default 25); "
                "Horovod HOROVOD_FUSION_THRESHOLD=134217728",
    "single node": "with a single training node there is no all-reduce across the network for the reducers to "
                   "speed up; add workers or drop reduction_servers",
}
"""What Vertex's Reduction Server documentation advises, by the case it is for."""


TPU_LAYOUT = "Vertex runs a TPU slice as one worker pool of one replica"
"""How Vertex holds a TPU job, for the refusal of the roles it has no place for (SPEC §13)."""

TPU_RUNTIME = ("Vertex runs the slice on TPU VMs ({hosts}): the image brings the TPU runtime (jax[tpu], torch_xla, "
               "or TensorFlow's TPU-VM wheel with libtpu), and jax.distributed.initialize() finds the hosts itself")
"""The hint a TPU job gets (Vertex's "Training with TPU accelerators" page)."""


@attrs.frozen(kw_only=True)
class Placement:
    """Where a role's replicas run: the machine type, (when the catalog knows it) its egress, and
    the TPU slice it carries."""

    machine_type: str
    egress_gbps: Optional[float]
    tpu: Optional[TpuSlice] = None


def _machine_path(role: RoleName) -> str:
    return f"backends.{BACKEND}.machine_types.{role.value}"


# --- machines -----------------------------------------------------------------------------------


def _demands_rdma(job: DistributedJob, role: EffectiveRole) -> bool:
    return job.interconnect is Interconnect.INFINIBAND and role.name in TRAINING_ROLES


def _refuse_infiniband(role: EffectiveRole, why: str) -> UnsupportedFeatureError:
    return REFUSALS[Feature.INFINIBAND].error(Feature.INFINIBAND, BACKEND, role=role.name.value, why=why)


def _check_named(name: str, role: EffectiveRole, job: DistributedJob) -> Machine | None:
    """Validate a machine the job names for ``role``; ``None`` for a CPU machine outside the catalog."""
    machine = check_named(MACHINES, name, role=role.name.value, accelerator=role.accelerator,
                                  cpus=role.cpus, memory_gb=role.memory_gb, path=_machine_path(role.name))
    if _demands_rdma(job, role) and (machine is None or not machine.rdma):
        raise _refuse_infiniband(role, f"runs on {name}")
    return machine


def _pick(role: EffectiveRole, job: DistributedJob) -> Machine:
    """The smallest catalog machine that fits the role."""
    wanted, rdma = role.accelerator, _demands_rdma(job, role)
    if wanted is None and role.cpus is None and role.memory_gb is None:
        if rdma:
            raise _refuse_infiniband(role, "asks for no accelerator")
        reducers = role.name is RoleName.REDUCTION_SERVERS
        return MACHINES.get(REDUCTION_SERVER_MACHINE if reducers else DEFAULT_CPU_MACHINE)
    if wanted is not None and not MACHINES.ways_to_get(wanted.type):
        raise UnsupportedFeatureError(
            Feature.ACCELERATOR, BACKEND, f"Vertex AI offers no {wanted.type} GPU",
            f"Pick one it offers: {', '.join(sorted(ACCELERATOR_TYPES))}.", subject=f"accelerator {wanted.type}")
    if wanted is not None and smallest_fit(MACHINES, wanted) is None:
        raise ValidationError(
            f"Vertex offers {wanted.type} as: {', '.join(MACHINES.ways_to_get(wanted.type))}; "
            f"{wanted.count} per replica is not one of them",
            path=f"{role.name.value}.accelerator",
        )
    # N1 hosts take any vCPU count up to a cap: give each GPU a few cores to feed it. Memory
    # left open gets the standard ratio, so `cpus: 4` means n1-standard-4, not n1-highcpu-4.
    # (Accelerator-optimized machines have more memory per vCPU, so this only decides among N1.)
    cpus = role.cpus if role.cpus is not None else (_n1_default_vcpus(wanted) if wanted else 0)
    memory = role.memory_gb if role.memory_gb is not None else cpus * N1_MEMORY_PER_VCPU["standard"]
    found = smallest_fit(MACHINES, wanted, cpus=cpus, memory_gb=memory,
                                 interconnect="rdma" if rdma else None)
    if found is None and rdma:
        raise _refuse_infiniband(role, f"asks for {wanted or 'no accelerator'}")
    if found is None:
        asked = ", ".join(f"{k}: {v:g}" for k, v in (("cpus", role.cpus), ("memory_gb", role.memory_gb)) if v)
        raise ValidationError(f"no Vertex machine{' with ' + str(wanted) if wanted else ''} has {asked}; lower them "
                              f"or name a machine in {_machine_path(role.name)}", path=role.name.value)
    return found


def _n1_default_vcpus(wanted: Accelerator) -> int:
    rule = N1_GPUS.get(wanted.type)
    return min(N1_GPU_VCPUS_PER_GPU * wanted.count, rule.limits[wanted.count][0]) if rule else 0


def place_tpu(role: EffectiveRole, settings: VertexSettings, notes: list[Note]) -> Placement:
    """A TPU slice's machine: ``cloud-tpu`` for TPU v2/v3, else the TPU VM machine the settings
    name (checked against the topology) or the one the slice's topology runs on."""
    from omnidist_google.tpu import tpu_slice  # TPU jobs only: not loaded for a GPU job

    accelerator, path = role.accelerator, _machine_path(role.name)
    named = settings.machine_types.get(role.name.value)
    if accelerator.type not in CLOUD_TPU_ACCELERATORS and accelerator.type not in TPU_VM_ACCELERATORS:
        raise UnsupportedFeatureError(
            Feature.ACCELERATOR, BACKEND, f"Vertex custom training runs TPU v2 and v3 on {TPU_MACHINE} and "
            f"{', '.join(sorted(TPU_VM_ACCELERATORS))} on TPU VMs, not {accelerator.type}.",
            f"Compile it for {tpu_backends(accelerator.type)}, or move to {' or '.join(sorted(TPU_VM_ACCELERATORS))}.",
            subject=f"accelerator {accelerator.type}")
    if accelerator.type in CLOUD_TPU_ACCELERATORS:
        if named and named != TPU_MACHINE:
            raise ValidationError(f"{accelerator.type} runs on Vertex's {TPU_MACHINE} machine, not {named}", path=path)
        tpu, machine = tpu_slice(accelerator), TPU_MACHINE
    else:
        try:
            tpu = tpu_slice(accelerator, named)
        except ValueError as exc:
            raise ValidationError(str(exc), path=path) from None
        machine = tpu.host.machine_type
        for field, asked, has in (("cpus", role.cpus, tpu.host.vcpus), ("memory_gb", role.memory_gb,
                                                                        tpu.host.memory_gb)):
            if asked is not None and asked > has:
                raise ValidationError(f"{machine}, the host of a {tpu.topology} {accelerator.type} slice, has "
                                      f"{has:g}; ask for less", path=f"{role.name.value}.{field}")
    hosts = f"{tpu.hosts} host{'s' if tpu.hosts > 1 else ''} of {tpu.per_host} " + (
        "chips" if tpu.host else "cores")
    if not named:
        shape = f", topology {tpu.topology}" if tpu.topology else ""
        notes.append(Note(kind=NoteKind.DEFAULTED, field=path, message=f"picked {machine} ({hosts}{shape}) for "
                          f"{accelerator}; name a machine here to choose", code=NoteCode.MACHINE_CHOSEN,
                          data={"role": role.name.value, "machine": machine}))
    notes.append(Note(kind=NoteKind.HINT, field="image", message=TPU_RUNTIME.format(hosts=hosts)))
    return Placement(machine_type=machine, egress_gbps=None, tpu=tpu)


def place(role: EffectiveRole, job: DistributedJob, settings: VertexSettings, notes: list[Note]) -> Placement:
    """The machine for ``role``: the one the settings name (validated) or the smallest that fits."""
    if role.accelerator is not None and role.accelerator.tpu:
        return place_tpu(role, settings, notes)
    named = settings.machine_types.get(role.name.value)
    if named:
        machine = _check_named(named, role, job)
    else:
        machine = _pick(role, job)
        notes.append(Note(kind=NoteKind.DEFAULTED, field=_machine_path(role.name),
                          message=f"picked {machine.name} ({_describe(machine, role)}); name a machine here to choose",
                          code=NoteCode.MACHINE_CHOSEN, data={"role": role.name.value, "machine": machine.name}))
    if machine is None:
        return Placement(machine_type=named, egress_gbps=None)
    if _demands_rdma(job, role):
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="interconnect",
                          message=f"{role.name.value} on {machine.name}: GPUDirect RDMA over RoCE, not InfiniBand"))
    return Placement(machine_type=machine.name, egress_gbps=MACHINES.egress_gbps(machine, role.accelerator))


def _describe(machine: Machine, role: EffectiveRole) -> str:
    gpus = f", {role.accelerator.count}×{role.accelerator.type}" if role.accelerator else ""
    return f"{machine.vcpus} vCPUs, {machine.memory_gb:g} GB{gpus}"


# --- Reduction Server ----------------------------------------------------------------------------


def check_reducers(job: DistributedJob, roles: dict[RoleName, EffectiveRole], notes: list[Note]) -> None:
    """Note how to tune Vertex's Reduction Server (what no cloud can run is refused before this,
    by :func:`omnidist.compiler.lowering.check_portable_rules`)."""
    if RoleName.REDUCTION_SERVERS not in roles:
        return
    hints = [("reduction_servers", REDUCER_HINTS["single node"])] if RoleName.WORKERS not in roles else []
    hints.append(("framework", REDUCER_HINTS["custom"]) if job.framework is Framework.CUSTOM else
                 ("image", REDUCER_HINTS["containers"]))
    hints.append(("reduction_servers", REDUCER_HINTS["messages"]))
    notes.extend(Note(kind=NoteKind.HINT, field=field, message=message) for field, message in hints)


def _hint_gpu_bandwidth(trainers: list[RoleName], placements: dict[RoleName, Placement],
                        roles: dict[RoleName, EffectiveRole], notes: list[Note]) -> None:
    # Reduction Server pays off when nodes are network-bound; an N1 node with too few vCPUs does
    # not get the bandwidth its GPUs could unlock, so say how to get it.
    for name in trainers:
        machine, wanted = MACHINES.get(placements[name].machine_type), roles[name].accelerator
        locked = machine and MACHINES.locked_gpu_egress(machine, wanted)
        if locked:
            notes.append(Note(kind=NoteKind.HINT, field=f"{name.value}.cpus", message=(
                f"{machine.name} with {wanted.count}×{wanted.type} gets {placements[name].egress_gbps:g} Gbps; "
                f"a machine with {locked[0]} vCPUs unlocks {locked[1]:g} Gbps, the bandwidth the Reduction Server "
                "is there to use")))


def reducer_count(role: EffectiveRole, placements: dict[RoleName, Placement], roles: dict[RoleName, EffectiveRole],
                  notes: list[Note]) -> int:
    """``replicas: auto`` = ceil(Σ egress of primary + workers / egress of one reducer)."""
    if role.replicas != AUTO:
        return int(role.replicas)
    trainers = [r for r in TRAINING_ROLES if r in roles]
    unknown = [placements[r].machine_type for r in (*trainers, role.name) if placements[r].egress_gbps is None]
    if unknown:
        raise ValidationError(f"cannot size 'auto': the egress bandwidth of {', '.join(unknown)} is not in "
                              "omnidist's catalog; give a number of reducers", path="reduction_servers.replicas")
    _hint_gpu_bandwidth(trainers, placements, roles, notes)
    egress = {r: placements[r].egress_gbps for r in trainers}
    sizing = size_reducers(roles, egress, placements[role.name].egress_gbps)
    notes.append(Note(kind=NoteKind.DEFAULTED, field="reduction_servers.replicas",
                      message=sizing.explain(placements[role.name].machine_type)))
    return sizing.count


def _count(role: EffectiveRole) -> int:
    return 1 if role.name is RoleName.PRIMARY else int(role.replicas)


# --- pools and the job spec ------------------------------------------------------------------------


def container_to_native(role: EffectiveRole, job: DistributedJob, settings: VertexSettings) -> dict[str, Any]:
    """``containerSpec``: image, command, args and the env (runtime hints underneath the user's)."""
    google_reducer = False
    if role.name is RoleName.REDUCTION_SERVERS:
        own = job.reduction_servers
        image = own.image or settings.reduction_server_image or reduction_server_image(settings.region)
        command, args = own.command or (), own.args or ()
        google_reducer = bool(REDUCTION_SERVER_IMAGE.search(image))
    else:
        image, command, args = role.image, role.command, role.args
    if not image:
        raise ValidationError("Vertex runs containers: set image (for the job or this role), or framework_version "
                              "for a prebuilt container", path=f"{role.name.value}.image")
    # Google's reducer image runs no omnidist runtime: the hints would be read by nothing.
    env = dict(role.env) if google_reducer else env_with_hints(role, job)
    # Hints first, then the user's variables by name: a stable order that survives an import
    # (which may regroup variables between the job and its roles).
    env = {**{k: env[k] for k in hints.ALL if k in env}, **dict(sorted(env.items()))}
    if len(env) > MAX_ENV:
        raise ValidationError(f"Vertex takes at most {MAX_ENV} variables per pool, got {len(env)} (with omnidist's "
                              "runtime hints)", path=f"{role.name.value}.env")
    spec: dict[str, Any] = {"imageUri": image}
    if command:
        spec["command"] = list(command)
    if args:
        spec["args"] = list(args)
    # An empty value is left out, as the API itself prints it (proto3 drops empty strings).
    if env:  # none for Google's reducers: an empty list is left out, as the API prints it
        spec["env"] = [{"name": k, "value": v} if v else {"name": k} for k, v in env.items()]
    return spec


def pool_to_native(role: EffectiveRole, replicas: int, placement: Placement, job: DistributedJob,
                   settings: VertexSettings) -> dict[str, Any]:
    """One ``WorkerPoolSpec`` (a TPU slice: one replica whose machine spec names the slice)."""
    machine: dict[str, Any] = {"machineType": placement.machine_type}
    if placement.tpu is not None and placement.tpu.topology is not None:
        machine["tpuTopology"] = placement.tpu.topology
    elif placement.tpu is not None:
        machine["acceleratorType"] = CLOUD_TPU_ACCELERATORS[role.accelerator.type]
        machine["acceleratorCount"] = role.accelerator.count
    elif role.accelerator is not None:
        machine["acceleratorType"] = ACCELERATOR_TYPES[role.accelerator.type]
        machine["acceleratorCount"] = role.accelerator.count
    pool: dict[str, Any] = {"machineSpec": machine, "replicaCount": str(replicas),
                            "containerSpec": container_to_native(role, job, settings)}
    disk = {k: v for k, v in (("bootDiskType", settings.boot_disk_type), ("bootDiskSizeGb", role.disk_gb))
            if v is not None}
    if disk:
        pool["diskSpec"] = disk
    return pool


RECOVERY_NATIVE = ("scheduling.restartJobOnWorkerRestart restarts every worker together when Vertex AI "
                   "restarts one, so all resume from the same checkpoint")


def scheduling_to_native(job: DistributedJob, settings: VertexSettings) -> dict[str, Any]:
    """``scheduling``: timeout as ``"<seconds>s"``, SPOT capacity, restart on worker restart."""
    # one machine restarts as a whole anyway; several restart together only when asked
    together = job.recovery is not None and len(list(effective_roles(job))) > 1
    scheduling = {"timeout": format_proto_duration(job.timeout) if job.timeout is not None else None,
                  "restartJobOnWorkerRestart": settings.restart_job_on_worker_restart or together or None,
                  "strategy": "SPOT" if job.spot else None}
    return {k: v for k, v in scheduling.items() if v is not None}


def spec_extras(settings: VertexSettings) -> dict[str, Any]:
    """The ``CustomJobSpec`` fields that come from the backend settings."""
    if settings.tensorboard and not settings.service_account:
        raise ValidationError("Vertex needs service_account when tensorboard is set",
                              path=f"backends.{BACKEND}.service_account")
    extras = {"serviceAccount": settings.service_account, "network": settings.network,
              "baseOutputDirectory": settings.base_output_dir and {"outputUriPrefix": settings.base_output_dir},
              "enableWebAccess": settings.enable_web_access or None, "tensorboard": settings.tensorboard,
              "persistentResourceId": settings.persistent_resource_id}
    return {k: v for k, v in extras.items() if v}


def compile_job(job: DistributedJob, settings: VertexSettings) -> CompiledJob:
    """The CustomJob for ``job``, with diagnostics."""
    notes: list[Note] = []
    check_google_labels(job.labels)
    if tpu_slice_of(job, BACKEND, TPU_LAYOUT) is not None and job.framework_version and not job.image:
        raise UnsupportedFeatureError(Feature.FRAMEWORK_VERSION, BACKEND, "omnidist's table of Vertex's prebuilt "
                                      "containers holds CPU and GPU images, not TPU ones.",
                                      "Give the job an image with the TPU runtime (jax[tpu], torch_xla…).")
    job, plan = code_data.prepare(job, settings, notes)  # data_map, code, inputs/outputs (SPEC §7)
    roles = {r.name: plan.role(r, notes) for r in effective_roles(job)}
    check_reducers(job, roles, notes)
    placements = {name: place(role, job, settings, notes) for name, role in roles.items()}
    pools: list[dict[str, Any]] = [{}, {}, {}, {}]
    for name, role in roles.items():
        replicas = reducer_count(role, placements, roles, notes) if name is RoleName.REDUCTION_SERVERS else _count(role)
        pools[POOL_INDEX[name]] = plan.pool(pool_to_native(role, replicas, placements[name], job, settings), role)
    while pools and not pools[-1]:
        pools.pop()  # skipped pools in the middle stay as {}; trailing ones go
    spec: dict[str, Any] = {"workerPoolSpecs": pools}
    scheduling = scheduling_to_native(job, settings)
    if scheduling:
        spec["scheduling"] = scheduling
    spec.update(spec_extras(settings))
    spec.update(plan.spec_extras())
    request: dict[str, Any] = {"displayName": job.name, "jobSpec": spec}
    if job.labels:
        request["labels"] = dict(job.labels)
    if settings.kms_key_name:
        request["encryptionSpec"] = {"kmsKeyName": settings.kms_key_name}
    note = watcher_note(job, RECOVERY_NATIVE if scheduling.get("restartJobOnWorkerRestart") else "")
    if note:
        notes.append(note)
    return CompiledJob(backend=BACKEND, request=request, diagnostics=notes, format="json", job=job)
