"""Portable job -> a Kubeflow training job (PyTorchJob, TFJob or MPIJob) as plain data: the
manifest ``kubectl apply -f`` takes. Pure: no network, no SDK import.

One function per part: :func:`container_to_native` (what a replica runs and its resources),
:func:`pod_to_native` (where it runs), :func:`replica_to_native` (a replica type),
:func:`launcher_to_native` (an MPIJob's ``mpirun``), :func:`tpu_hosts` (a TPU slice as one pod
per TPU host, SPEC §13), :func:`run_policy_to_native` and :func:`metadata_to_native`;
:func:`compile_job` puts them together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import attrs

from omnidist.kit import (
    REQUEST_ID_LABEL,
    TRAINING_ROLES,
    CompiledJob,
    DataValues,
    DistributedJob,
    EffectiveRole,
    Interconnect,
    JobInput,
    JobOutput,
    Note,
    NoteKind,
    Problem,
    RoleName,
    UnsupportedFeatureError,
    ValidationError,
    apply_data_map,
    data_hints,
    effective_roles,
    foreign_uri,
    num_nodes,
    processes_per_node,
    replica_count,
    resolve_data,
    runtime_hints,
    start_processes,
    substituted,
    tpu_slice_of,
    watcher_note,
    with_module,
)
from omnidist_k8s import quantities
from omnidist_k8s.nodes import CPU, EPHEMERAL_STORAGE, GPU_RESOURCE, MEMORY, MULTI_GPU_SHM_SIZE, SHM_PATH, SHM_VOLUME
from omnidist_kubernetes import expansion, names
from omnidist_kubernetes.settings import KubernetesSettings, label_problems
from omnidist_kubernetes.tables import (
    DEFAULT_CLEAN_POD_POLICIES,
    DEFAULT_NODE_SELECTORS,
    DEFAULT_RESTART_POLICIES,
    DESCRIPTION_ANNOTATION,
    FRAMEWORK_KINDS,
    GKE_TPU_ACCELERATOR_LABEL,
    GKE_TPU_ACCELERATORS,
    GKE_TPU_TOPOLOGY_LABEL,
    KINDS,
    LAUNCHER,
    MAX_NAME,
    MPI_CONTAINERS,
    MPI_RESTART_POLICIES,
    MPIRUN,
    MPIRUN_FORWARDED,
    NAME,
    QUEUE_LABEL,
    REPLICA_TYPES,
    TPU_RESOURCE,
    Kind,
)

if TYPE_CHECKING:
    from omnidist_google.tpu import TpuSlice

SETTINGS = f"backends.{NAME}"
READS = "URIs the program opens itself (gs://, s3://, https://…): omnidist mounts nothing into pods"
_PROGRAM = ("image", "command", "args", "env")
_HARDWARE = ("accelerator", "cpus", "memory_gb", "disk_gb")
_RESERVED_LABELS = {
    QUEUE_LABEL: f"set {SETTINGS}.queue instead (the job gets this label from it)",
    REQUEST_ID_LABEL: "reserved: omnidist sets this label when it submits (to find the job a retried create "
                      "made); use another key",
}


def _refuse(feature: str, message: str, hint: str = "") -> UnsupportedFeatureError:
    return UnsupportedFeatureError(feature, NAME, message, hint)


def _note(notes: list[Note], kind: NoteKind, field: str, message: str) -> None:
    """Add a note once (several replica types often make the same decision)."""
    note = Note(kind=kind, field=field, message=message)
    if note not in notes:
        notes.append(note)


# --- what Kubernetes cannot run ------------------------------------------------------------------

def check_job(job: DistributedJob, kind: Kind, notes: list[Note]) -> None:
    """Refuse what no Kubeflow job expresses, and what this kind has no replica type for."""
    if job.tuning is not None:
        raise _refuse("tuning", "Kubeflow training jobs run one configuration; hyperparameter search on "
                      "Kubernetes is Katib, which omnidist does not write.",
                      "Run the trials locally with omnidist run, or drop the tuning block.")
    reducers = job.reduction_servers
    if reducers is not None and reducers.replicas != 0:
        raise _refuse("reduction_servers", "Reduction Server is a Vertex AI service; Kubernetes clusters have none.",
                      "Drop reduction_servers; NCCL all-reduce runs among the GPU pods themselves.")
    if job.interconnect is Interconnect.INFINIBAND:
        raise _refuse("interconnect: infiniband", "InfiniBand on Kubernetes depends on the cluster's RDMA device "
                      "plugin and network setup, which a portable job cannot name.",
                      "Drop interconnect: infiniband and request the RDMA resources in your cluster's own way.")
    types = REPLICA_TYPES[kind.kind]
    for role in (RoleName.PARAMETER_SERVERS, RoleName.EVALUATORS):
        if replica_count(job, role) and role not in types:
            raise _refuse(role.value, f"a {kind.kind} has only {' and '.join(sorted(set(types.values())))} "
                          f"replicas (framework {job.framework.value}).",
                          "Use framework: tensorflow (a TFJob has PS and Evaluator replicas), or drop "
                          f"{role.value}.")


def _same_as_primary(role: EffectiveRole, primary: EffectiveRole) -> None:
    """An MPIJob has one Worker template for every node: workers run as the primary does."""
    for field in (*_HARDWARE, *_PROGRAM):
        if getattr(role, field) != getattr(primary, field):
            raise _refuse(f"workers.{field}", f"an MPIJob runs every node from one Worker template, and the "
                          f"workers set their own {field}.",
                          f"Remove workers.{field} and branch on the rank inside the program instead.")


# --- code and data (SPEC §7) ---------------------------------------------------------------------

def _input(name: str, inp: JobInput) -> str:
    if inp.scheme in ("local", "azureml", "file"):
        raise foreign_uri(f"inputs.{name}", NAME, inp.uri, READS)
    return inp.uri


def _output(name: str, out: JobOutput, base: Optional[str], job: DistributedJob) -> str:
    if out.default:
        if not base:
            raise ValidationError(f"output {name} goes to the job's output place: set {SETTINGS}.base_output_dir "
                                  "(a URI the program writes, such as gs://bkt/out, or a path on a volume of the "
                                  "image)", source=job.source, path=f"{SETTINGS}.base_output_dir")
        return f"{base.rstrip('/')}/{name}"
    if out.scheme in ("local", "azureml", "file"):
        raise foreign_uri(f"outputs.{name}", NAME, out.uri, "and write " + READS)
    return out.uri


def prepare(job: DistributedJob, settings: KubernetesSettings,
            notes: list[Note]) -> tuple[DistributedJob, DataValues]:
    """Apply ``data_map``, refuse code that would have to be shipped, and place inputs and outputs."""
    job, rewrites = apply_data_map(job, settings.data_map)
    notes += rewrites
    if job.code:
        raise _refuse("code", "Kubernetes pods get no files besides their image, and omnidist uploads none.",
                      "Bake the code into the image (COPY in its Dockerfile) and drop code.")
    if job.framework_version and not job.image:
        raise _refuse("framework_version", "Kubernetes has no prebuilt training containers to pick by version.",
                      "Give the job an image (e.g. pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime).")
    if job.framework_version:
        notes.append(Note(kind=NoteKind.HINT, field="framework_version",
                          message=f"not used: the job runs its own image {job.image}"))
    values = resolve_data(job, _input, lambda name, out: _output(name, out, settings.base_output_dir, job))
    if any(not inp.literal for inp in job.inputs.values()):
        notes.append(Note(kind=NoteKind.HINT, field="inputs",
                          message="inputs are passed as their URIs; the program reads them itself"))
    return job, values


# --- one replica -----------------------------------------------------------------------------------

def env_to_native(env: dict[str, str]) -> list[dict[str, str]]:
    """``[{name, value}]``, values escaped against ``$(VAR)`` expansion."""
    return [{"name": k, "value": expansion.escape(v)} for k, v in env.items()]


def resources_to_native(role: EffectiveRole, tpu: Optional[TpuSlice] = None) -> dict[str, dict[str, str]]:
    """GPUs as an ``nvidia.com/gpu`` limit (a TPU host's chips as ``google.com/tpu``); CPUs and disk
    as requests; memory requested and capped."""
    requests, limits = {}, {}
    if role.cpus is not None:
        requests[CPU] = quantities.cpu(role.cpus)
    if role.memory_gb is not None:
        requests[MEMORY] = limits[MEMORY] = quantities.memory(role.memory_gb)
    if role.disk_gb is not None:
        requests[EPHEMERAL_STORAGE] = quantities.disk(role.disk_gb)
    if role.gpus:
        limits[GPU_RESOURCE] = str(role.gpus)
    if tpu is not None:
        limits[TPU_RESOURCE] = str(tpu.per_host)
    return {k: v for k, v in (("requests", requests), ("limits", limits)) if v}


def container_to_native(name: str, role: EffectiveRole, env: dict[str, str], *, program: bool = True,
                        shm: bool = False, tpu: Optional[TpuSlice] = None) -> dict[str, Any]:
    """One container: the image, the program (unless the operator supplies one), env and resources.

    Raises:
        ValidationError: the role has no image.
    """
    if not role.image:
        raise ValidationError("Kubernetes runs container images: give the job an image", path="image")
    container: dict[str, Any] = {"name": name, "image": role.image}
    if program and role.command:
        container["command"] = [expansion.escape(a) for a in role.command]
    if program and role.args:
        container["args"] = [expansion.escape(a) for a in role.args]
    if env:
        container["env"] = env_to_native(env)
    resources = resources_to_native(role, tpu)
    if resources:
        container["resources"] = resources
    if shm:
        container["volumeMounts"] = [{"name": SHM_VOLUME, "mountPath": SHM_PATH}]
    return container


def tpu_selector(tpu: TpuSlice, settings: KubernetesSettings, notes: list[Note]) -> dict[str, str]:
    """The node labels a TPU host's pod selects: the settings' for the TPU, else GKE's TPU and
    topology labels."""
    if settings.node_selectors is not None and tpu.accelerator.type in settings.node_selectors:
        return dict(settings.node_selectors[tpu.accelerator.type])
    labels = {GKE_TPU_ACCELERATOR_LABEL: GKE_TPU_ACCELERATORS[tpu.accelerator.type],
              GKE_TPU_TOPOLOGY_LABEL: tpu.topology}
    _note(notes, NoteKind.DEFAULTED, f"{SETTINGS}.node_selectors", f"{tpu.accelerator.type} pods select "
          f"{', '.join(f'{k}: {v}' for k, v in labels.items())} (GKE's TPU labels), {tpu.per_host} {TPU_RESOURCE} each")
    return labels


def node_selector_for(role: EffectiveRole, job: DistributedJob, settings: KubernetesSettings,
                      notes: list[Note], tpu: Optional[TpuSlice] = None) -> dict[str, str]:
    """The node labels a pod of ``role`` selects: the job-wide ones, the accelerator's (or the TPU
    slice's), spot's."""
    selector = dict(settings.node_selector)
    if tpu is not None:
        selector.update(tpu_selector(tpu, settings, notes))
    if role.accelerator is not None:
        table = DEFAULT_NODE_SELECTORS if settings.node_selectors is None else settings.node_selectors
        labels = table.get(role.accelerator.type)
        if labels is None:
            _note(notes, NoteKind.HINT, f"{SETTINGS}.node_selectors",
                  f"no labels for {role.accelerator.type}: its pods go to any node with {GPU_RESOURCE}")
        elif settings.node_selectors is None:
            shown = ", ".join(f"{k}: {v}" for k, v in labels.items())
            _note(notes, NoteKind.DEFAULTED, f"{SETTINGS}.node_selectors",
                  f"{role.accelerator.type} pods select {shown} (GKE's node label; set node_selectors for other "
                  "clusters)")
        selector.update(labels or {})
    if job.spot:
        selector.update(settings.spot_node_selector)
    return selector


def pod_to_native(containers: list[dict[str, Any]], role: Optional[EffectiveRole], job: DistributedJob,
                  settings: KubernetesSettings, notes: list[Note], shm: Optional[str] = None,
                  tpu: Optional[TpuSlice] = None) -> dict[str, Any]:
    """A pod spec: containers, node selection, tolerations, service account, pull secrets, shared memory."""
    pod: dict[str, Any] = {"containers": containers}
    selector = node_selector_for(role, job, settings, notes, tpu) if role is not None else dict(settings.node_selector)
    if role is None and job.spot:
        selector.update(settings.spot_node_selector)
    if selector:
        pod["nodeSelector"] = selector
    tolerations = [*settings.tolerations, *(settings.spot_tolerations if job.spot else ())]
    if tolerations:
        pod["tolerations"] = [dict(t) for t in tolerations]
    if settings.service_account:
        pod["serviceAccountName"] = settings.service_account
    if settings.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": s} for s in settings.image_pull_secrets]
    if shm:
        pod["volumes"] = [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": shm}}]
    return pod


def shm_for(role: EffectiveRole, settings: KubernetesSettings, notes: list[Note]) -> Optional[str]:
    """``/dev/shm`` for a role's pods: the setting, else 16Gi for pods with several GPUs (noted)."""
    if settings.shm_size:
        return settings.shm_size
    if role.gpus >= 2:
        _note(notes, NoteKind.DEFAULTED, f"{SETTINGS}.shm_size",
              f"{MULTI_GPU_SHM_SIZE} of memory-backed /dev/shm for pods with several GPUs (the container default, "
              "64Mi, starves data loaders and NCCL)")
        return MULTI_GPU_SHM_SIZE
    return None


def replica_to_native(replicas: int, restart_policy: str, pod: dict[str, Any]) -> dict[str, Any]:
    """One entry of the kind's replica specs."""
    return {"replicas": replicas, "restartPolicy": restart_policy, "template": {"spec": pod}}


def _restart_policy(kind: Kind, settings: KubernetesSettings, replica_type: str) -> str:
    if settings.restart_policy and kind.kind == "MPIJob" and settings.restart_policy not in MPI_RESTART_POLICIES:
        raise ValidationError(f"mpi-operator accepts {' and '.join(MPI_RESTART_POLICIES)} only, got "
                              f"{settings.restart_policy!r}", path=f"{SETTINGS}.restart_policy")
    default = DEFAULT_RESTART_POLICIES[LAUNCHER if replica_type == LAUNCHER else kind.kind]
    return settings.restart_policy or default


def recovery_restart_policy(kind: Kind, job: DistributedJob, settings: KubernetesSettings) -> KubernetesSettings:
    """With ``recovery`` and no ``restart_policy`` of the user's: training-operator's ``ExitCode``
    (a replica killed by a signal, exit 128-255 as an evicted or preempted pod is, restarts; the
    program's own exit 1-127 fails the job) or, when ``on`` lists ``failure``, ``OnFailure``; and
    ``backoffLimit`` from ``max_restarts``. mpi-operator takes neither ExitCode nor per-pod
    restarts that would help mpirun: an MPIJob keeps its defaults."""
    recovery = job.recovery
    if recovery is None or kind.kind == "MPIJob":
        return settings
    changes: dict[str, Any] = {}
    if settings.restart_policy is None:
        changes["restart_policy"] = "OnFailure" if recovery.restarts("failure") else "ExitCode"
    if settings.backoff_limit is None:
        changes["backoff_limit"] = recovery.max_restarts
    return attrs.evolve(settings, **changes)


def recovery_note(kind: Kind, job: DistributedJob, settings: KubernetesSettings) -> Optional[Note]:
    """What the operator restarts by itself, and what is left to ``omnidist watch``."""
    if kind.kind == "MPIJob" or settings.restart_policy not in ("ExitCode", "OnFailure", "Always"):
        return watcher_note(job, "")
    handled = ["preemption", "node_failure"] + (["failure"] if settings.restart_policy != "ExitCode" else [])
    limit = f", at most {settings.backoff_limit} times (runPolicy.backoffLimit)" if settings.backoff_limit else ""
    return watcher_note(job, f"restartPolicy {settings.restart_policy} restarts a replica whose pod was evicted or "
                             f"lost with its node{limit}", handled=handled)


# --- the whole job -----------------------------------------------------------------------------------

def _role_env(role: EffectiveRole, job: DistributedJob, values: DataValues,
              per_role: bool = True) -> dict[str, str]:
    """Runtime hints, then the data hints, then the role's variables (which win)."""
    return {**runtime_hints(job, role.name, per_role), **data_hints(values), **role.env}


def _ready(role: EffectiveRole, job: DistributedJob, values: DataValues) -> EffectiveRole:
    return substituted(with_module(role, job), values)


def launcher_to_native(primary: EffectiveRole, env: dict[str, str], nodes: int, slots: int) -> dict[str, Any]:
    """The MPIJob launcher's container: ``mpirun`` over every slot, forwarding the job's variables
    (ranks start over ssh, outside the worker pods' environment), then the program.

    Raises:
        UnsupportedFeatureError: the job has no command for ``mpirun`` to start.
    """
    if not primary.command:
        raise _refuse("command", "an MPIJob's launcher runs mpirun, which needs the program to start; the job runs "
                      "its image's ENTRYPOINT.", "Give the job a command (e.g. [python, train.py]).")
    forwarded = [part for name in (*MPIRUN_FORWARDED, *env) for part in ("-x", name)]
    argv = [*MPIRUN, "-np", str(nodes * slots), *forwarded, *primary.command]
    # The container's command and args make one argv: the job's args stay args.
    launcher = attrs.evolve(primary, command=tuple(argv), accelerator=None, cpus=None, memory_gb=None, disk_gb=None)
    return container_to_native(MPI_CONTAINERS[LAUNCHER], launcher, env)


def replicas_to_native(kind: Kind, roles: dict[RoleName, EffectiveRole], job: DistributedJob,
                       settings: KubernetesSettings, values: DataValues, notes: list[Note],
                       tpu: Optional[TpuSlice] = None) -> dict[str, Any]:
    """The kind's replica specs, in the order the operator documents them (a TPU slice's hosts:
    each pod with the host's chips, :func:`tpu_hosts`)."""
    if kind.kind == "MPIJob":
        return _mpi_replicas(kind, roles, job, settings, values, notes)
    specs = {}
    for name, role in roles.items():
        replica_type = REPLICA_TYPES[kind.kind][name]
        shm = shm_for(role, settings, notes)
        container = container_to_native(kind.container, role, _role_env(role, job, values), shm=bool(shm), tpu=tpu)
        pod = pod_to_native([container], role, job, settings, notes, shm, tpu)
        specs[replica_type] = replica_to_native(int(role.replicas), _restart_policy(kind, settings, replica_type),
                                                pod)
    return specs


def _mpi_replicas(kind: Kind, roles: dict[RoleName, EffectiveRole], job: DistributedJob,
                  settings: KubernetesSettings, values: DataValues, notes: list[Note]) -> dict[str, Any]:
    primary = roles[RoleName.PRIMARY]
    if RoleName.WORKERS in roles:
        _same_as_primary(roles[RoleName.WORKERS], primary)
    nodes, slots = num_nodes(job), processes_per_node(job)
    env = _role_env(primary, job, values, per_role=False)  # every rank gets the launcher's variables
    launcher = pod_to_native([launcher_to_native(primary, env, nodes, slots)], None, job, settings, notes)
    shm = shm_for(primary, settings, notes)
    worker = container_to_native(MPI_CONTAINERS["Worker"], primary, env, program=False, shm=bool(shm))
    return {
        LAUNCHER: replica_to_native(1, _restart_policy(kind, settings, LAUNCHER), launcher),
        "Worker": replica_to_native(nodes, _restart_policy(kind, settings, "Worker"),
                                    pod_to_native([worker], primary, job, settings, notes, shm)),
    }


def _pod_processes(roles: dict[RoleName, EffectiveRole], job: DistributedJob, processes: int,
                   notes: list[Note]) -> dict[RoleName, EffectiveRole]:
    """A PyTorchJob's training pods with a command that starts ``nprocPerNode`` processes: the
    operator starts the command once per pod and sets torchrun's defaults (``PET_*``), so a plain
    program runs under a bare ``torchrun`` (SPEC §10)."""
    ready = dict(roles)
    for name in TRAINING_ROLES & set(roles):
        command, note = start_processes(job, roles[name].command, processes, NAME, launcher="torchrun")
        ready[name] = attrs.evolve(roles[name], command=command)
        if note is not None and name is RoleName.PRIMARY:
            notes.append(note)
    return ready


TPU_LAYOUT = "GKE runs a TPU slice as one pod per TPU host, every pod alike"
"""How GKE holds a TPU job, for the refusal of the roles it has no place for (SPEC §13)."""

TPU_WIRING = ("GKE sets TPU_WORKER_ID and TPU_WORKER_HOSTNAMES only for Indexed Jobs and JobSets; in this {kind} the "
              "pods' ranks come from the operator's variables, which omnidist.runtime.context() reads (jax: "
              "jax.distributed.initialize(f'{{ctx.master_addr}}:{{port}}', ctx.world_size, ctx.rank))")
"""The hint a TPU job compiled to a Kubeflow job gets."""


def tpu_hosts(roles: dict[RoleName, EffectiveRole], job: DistributedJob, kind: Kind,
              notes: list[Note]) -> tuple[dict[RoleName, EffectiveRole], Optional[TpuSlice]]:
    """A TPU slice (the primary's accelerator) as one pod per TPU host: the primary's pod, then
    ``hosts - 1`` worker pods running the same program, each with the host's chips. Roles are
    returned without the accelerator (the chips go on as ``google.com/tpu``).

    Raises:
        UnsupportedFeatureError: a role besides the primary; a TPU GKE does not run (v2, v3); a
            framework whose kind has no one-pod-per-host layout (horovod's MPIJob).
    """
    accelerator = tpu_slice_of(job, NAME, TPU_LAYOUT)
    if accelerator is None:
        return roles, None
    if accelerator.type not in GKE_TPU_ACCELERATORS:
        raise UnsupportedFeatureError(
            "accelerator", NAME, f"GKE runs TPU VMs ({', '.join(GKE_TPU_ACCELERATORS)}), not {accelerator.type}, "
            "which only ran as a TPU Node.", "Compile for vertex or ai_platform, or move to TPU-V5E or TPU-V6E.",
            subject=f"accelerator {accelerator.type}")
    if kind.kind == "MPIJob":
        raise _refuse(f"framework {job.framework.value}", "Horovod starts its ranks with mpirun over ssh from a "
                      "launcher pod, and a TPU slice's hosts run one program each.",
                      "Use framework jax, pytorch (PyTorch/XLA) or tensorflow.")
    from omnidist_google.tpu import tpu_slice  # TPU jobs only: not loaded for a GPU job

    try:
        tpu = tpu_slice(accelerator)
    except ValueError as exc:  # a topology no host of this TPU runs (a 2-D one on v5p)
        raise ValidationError(str(exc), path="primary.accelerator.topology") from None
    host = attrs.evolve(roles[RoleName.PRIMARY], accelerator=None)
    hosts = {RoleName.PRIMARY: host}
    if tpu.hosts > 1:
        hosts[RoleName.WORKERS] = attrs.evolve(host, name=RoleName.WORKERS, replicas=tpu.hosts - 1)
    _note(notes, NoteKind.HINT, "primary.accelerator", f"{accelerator}: {tpu.hosts} pod(s) of {tpu.per_host} chips "
          f"on {tpu.host.machine_type} nodes, topology {tpu.topology}")
    _note(notes, NoteKind.HINT, "image", TPU_WIRING.format(kind=kind.kind))
    return hosts, tpu


def run_policy_to_native(kind: Kind, job: DistributedJob, settings: KubernetesSettings) -> dict[str, Any]:
    """``runPolicy``: what to clean, how often to retry, the deadline (``timeout``), the TTL."""
    policy: dict[str, Any] = {}
    clean = settings.clean_pod_policy or DEFAULT_CLEAN_POD_POLICIES.get(kind.kind)
    if clean:
        policy["cleanPodPolicy"] = clean
    if settings.ttl_seconds_after_finished is not None:
        policy["ttlSecondsAfterFinished"] = settings.ttl_seconds_after_finished
    if job.timeout:
        policy["activeDeadlineSeconds"] = job.timeout
    if settings.backoff_limit is not None:
        policy["backoffLimit"] = settings.backoff_limit
    return policy


def longest_suffix(kind: Kind, job: DistributedJob) -> str:
    """The longest ``-<replica type>-<index>`` the operator appends to pod and service names."""
    if kind.kind == "MPIJob":
        suffixes = ["-launcher", f"-worker-{num_nodes(job) - 1}"]
    else:
        suffixes = [f"-{rtype.lower()}-{max(_pods(job, role), 1) - 1}"
                    for role, rtype in REPLICA_TYPES[kind.kind].items()
                    if job.role(role) is not None or _pods(job, role)]
    return max(suffixes, key=len)


def _pods(job: DistributedJob, role: RoleName) -> int:
    """The pods of ``role``: its replicas, or a TPU slice's hosts beyond the primary's for the workers."""
    primary = job.primary.accelerator
    if role is RoleName.WORKERS and primary is not None and primary != "none" and primary.tpu \
            and primary.type in GKE_TPU_ACCELERATORS:
        from omnidist_google.tpu import tpu_slice  # TPU jobs only

        return tpu_slice(primary).hosts - 1
    return replica_count(job, role)


def name_to_native(kind: Kind, job: DistributedJob, notes: list[Note], reserve: int = 0) -> str:
    """The job's name as a DNS-1035 label short enough for every pod and service name derived from
    it (``reserve`` more characters are kept free, for the suffix a submit adds)."""
    room = MAX_NAME - len(longest_suffix(kind, job)) - reserve
    name = job.name[:room].rstrip("-")
    if name != job.name:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="name",
                          message=f"{job.name!r} became {name!r}: the operator names pods and services "
                                  f"<job>{longest_suffix(kind, job)}, at most {MAX_NAME} characters, ending in a "
                                  "letter or digit"))
    problem = names.job_name(name, longest_suffix(kind, job))
    if problem:  # pragma: no cover - a portable name cut to size is always one
        raise ValidationError(problem, path="name")
    return name


def metadata_to_native(job: DistributedJob, name: str, settings: KubernetesSettings) -> dict[str, Any]:
    """``name``, ``namespace``, ``labels`` (the job's and Kueue's) and the description annotation.

    Raises:
        ValidationError: a label Kubernetes refuses, or one omnidist reserves, at ``labels.KEY``.
    """
    problems = label_problems(job.labels, "labels")
    problems += [Problem(f"labels.{key}", why) for key, why in _RESERVED_LABELS.items() if key in job.labels]
    if problems:
        raise ValidationError(problems, source=job.source)
    metadata: dict[str, Any] = {"name": name, "namespace": settings.namespace}
    labels = dict(job.labels)
    if settings.queue:
        labels[QUEUE_LABEL] = settings.queue
    if labels:
        metadata["labels"] = labels
    if job.description:
        metadata["annotations"] = {DESCRIPTION_ANNOTATION: job.description}
    return metadata


def compile_job(job: DistributedJob, settings: KubernetesSettings) -> CompiledJob:
    """The whole manifest; see the module docstring and docs/backends/kubernetes.md."""
    notes: list[Note] = []
    kind = KINDS[FRAMEWORK_KINDS[job.framework]]
    check_job(job, kind, notes)
    settings = recovery_restart_policy(kind, job, settings)
    note = recovery_note(kind, job, settings)
    if note:
        notes.append(note)
    job, values = prepare(job, settings, notes)
    roles = {r.name: _ready(r, job, values) for r in effective_roles(job)}
    roles, tpu = tpu_hosts(roles, job, kind, notes)
    name = name_to_native(kind, job, notes)
    spec: dict[str, Any] = {}
    processes = processes_per_node(job)
    if kind.kind == "PyTorchJob" and processes > 1:
        spec["nprocPerNode"] = str(processes)
        roles = _pod_processes(roles, job, processes, notes)
    if kind.kind == "MPIJob":
        spec["slotsPerWorker"] = processes
    policy = run_policy_to_native(kind, job, settings)
    if policy:
        spec["runPolicy"] = policy
    spec[kind.replica_specs] = replicas_to_native(kind, roles, job, settings, values, notes, tpu)
    request = {"apiVersion": kind.api_version, "kind": kind.kind,
               "metadata": metadata_to_native(job, name, settings), "spec": spec}
    return CompiledJob(backend=NAME, request=request, diagnostics=notes, format="yaml", job=job)
