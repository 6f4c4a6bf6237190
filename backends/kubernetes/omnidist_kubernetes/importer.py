"""Kubeflow training jobs -> portable job. Pure: no network, no SDK import.

Read: a PyTorchJob (``kubeflow.org/v1``), TFJob (``v1``) or MPIJob (``v2beta1``, and the
training operator's ``v1``) as a manifest, as one of several documents (the list
``yaml.safe_load_all`` gives; other documents are skipped and noted, so are further jobs), or as
``kubectl get -o yaml`` output (``status`` and server-set metadata are ignored, a ``kind: List``
is opened). What a portable job cannot hold is dropped with a note (volumes, host networking,
affinity, ``envFrom``, extended resources…); what the platform itself would refuse is exit 2.

Settings go into ``backends.kubernetes`` (namespace, queue, node selection, tolerations, service
account, pull secrets, shared memory, run policy) so that Kubernetes -> Kubernetes is exact.

Pods asking for ``google.com/tpu`` on GKE's TPU node labels are the hosts of one TPU slice (SPEC
§13): the job becomes a primary whose accelerator is the slice (``TPU-V5E:16`` for four 4-chip
pods in ``4x4``), without workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import attrs

from omnidist.kit import (
    INHERITS_FROM_PRIMARY,
    REQUEST_ID_LABEL,
    TOPOLOGY,
    Accelerator,
    DistributedJob,
    EffectiveRole,
    Feature,
    Note,
    NoteKind,
    RoleName,
    ValidationError,
    auto_processes,
    cannot_hold,
    delower,
    job_from_dict,
    pick_name,
    topology_chips,
)
from omnidist.runtime import hints
from omnidist_google.tpu import default_topology, tpu_slice
from omnidist_k8s.nodes import MULTI_GPU_SHM_SIZE
from omnidist_k8s.templates import mapping, string_map, text
from omnidist_kubernetes import pods
from omnidist_kubernetes.pods import NativePod, dropped
from omnidist_kubernetes.tables import (
    CLEAN_POD_POLICIES,
    DEFAULT_CLEAN_POD_POLICIES,
    DEFAULT_NODE_SELECTORS,
    DEFAULT_RESTART_POLICIES,
    DESCRIPTION_ANNOTATION,
    GKE_TPU_ACCELERATOR_LABEL,
    GKE_TPU_ACCELERATORS,
    GKE_TPU_PORTABLE,
    GKE_TPU_TOPOLOGY_LABEL,
    GROUP,
    KIND_FRAMEWORKS,
    KINDS,
    LAUNCHER,
    MPI_RESTART_POLICIES,
    MPI_SLOTS_DEFAULT,
    MPIRUN,
    MPIRUN_FORWARDED,
    MPIRUN_OPTION_VALUES,
    MPIRUN_PROGRAMS,
    NAME,
    QUEUE_LABEL,
    REPLICA_ROLES,
    RESTART_POLICIES,
    SPOT_NODE_SELECTOR,
    SPOT_TOLERATIONS,
    TPU_RESOURCE,
    Kind,
)

VERSIONS: dict[str, tuple[str, ...]] = {"MPIJob": ("v2beta1", "v1"), "PyTorchJob": ("v1",), "TFJob": ("v1",)}
"""Kind -> the API versions read (the training operator's own ``v1`` MPIJob too)."""

SPEC_KEYS: dict[str, frozenset[str]] = {
    "MPIJob": frozenset({"launcherCreationPolicy", "mainContainer", "mpiImplementation", "mpiReplicaSpecs",
                         "runLauncherAsWorker", "runPolicy", "slotsPerWorker", "sshAuthMountPath"}),
    "PyTorchJob": frozenset({"elasticPolicy", "nprocPerNode", "pytorchReplicaSpecs", "runPolicy"}),
    "TFJob": frozenset({"enableDynamicWorker", "runPolicy", "successPolicy", "tfReplicaSpecs"}),
}
"""Kind -> the fields of its ``spec`` (training-operator release-1.9, mpi-operator v2beta1 CRDs)."""

CHIEF_ALIASES = {"Master": "Chief"}
"""TFJob's deprecated replica type for the chief."""

IGNORED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})
"""Annotations kubectl or the API server add, not the author."""

SETTINGS = f"backends.{NAME}"


# --- finding the job ---------------------------------------------------------------------------------

def documents(native: Any) -> list[Any]:
    """The documents of ``native``: one mapping, a list of them, or a ``kind: List``'s ``items``."""
    if isinstance(native, Mapping):
        if native.get("kind") == "List" and isinstance(native.get("items"), list):
            return [doc for item in native["items"] for doc in documents(item)]
        return [native]
    if isinstance(native, Sequence) and not isinstance(native, (str, bytes)):
        return [doc for item in native if item is not None for doc in documents(item)]
    return [native]


def is_training_job(doc: Any) -> bool:
    """A Kubeflow job of a kind omnidist reads."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("kind"), str) or doc["kind"] not in KINDS:
        return False
    group, _, version = str(doc.get("apiVersion", "")).partition("/")
    return group == GROUP and version in VERSIONS[doc["kind"]]


def is_older_job(doc: Any) -> bool:
    """A Kubeflow job of a kind omnidist reads, in an API version it does not (``v1alpha2``…)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("kind"), str) or doc["kind"] not in KINDS:
        return False
    group, _, version = str(doc.get("apiVersion", "")).partition("/")
    return group == GROUP and version not in VERSIONS[doc["kind"]]


def recognizes(native: Any) -> bool:
    """True when ``native`` holds a Kubeflow training job, in a version omnidist reads or an
    older one (which :func:`pick_job` then names in its error)."""
    return any(is_training_job(doc) or is_older_job(doc) for doc in documents(native))


@attrs.frozen
class JobInStream:
    """One training job of a file that holds several: all the documents, and which one to read
    (paths in notes and errors keep their place in the file)."""

    documents: tuple[Any, ...]
    index: int


def split_jobs(native: Any) -> list[Any]:
    """``native`` once per training job it holds: itself when it holds one (or none, for the
    error), else a :class:`JobInStream` for each job."""
    docs = documents(native)
    jobs = [i for i, doc in enumerate(docs) if is_training_job(doc)]
    if len(jobs) < 2:
        return [native]
    return [JobInStream(tuple(docs), i) for i in jobs]


def _what(doc: Any) -> str:
    if not isinstance(doc, Mapping):
        return type(doc).__name__
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{doc.get('apiVersion', '?')} {doc.get('kind', '?')}" + (f" {name}" if isinstance(name, str) else "")


def _versions() -> str:
    return "; ".join(f"{kind} {', '.join(f'{GROUP}/{v}' for v in versions)}" for kind, versions in VERSIONS.items())


def pick_job(native: Any, notes: list[Note]) -> tuple[Mapping[str, Any], str]:
    """The training job of ``native`` (the first, or the one a :class:`JobInStream` names) and the
    path prefix of its document (``[1].`` among several); the other documents are noted.

    Raises:
        ValidationError: no document is a training job omnidist reads (an older API version of a
            known kind is named, with the versions read).
    """
    chosen = native.index if isinstance(native, JobInStream) else None
    docs = list(native.documents) if isinstance(native, JobInStream) else documents(native)
    jobs = [i for i, doc in enumerate(docs) if is_training_job(doc)]
    if not jobs:
        older = [(i, d) for i, d in enumerate(docs) if is_older_job(d)]
        if older:
            i, doc = older[0]
            raise ValidationError(
                f"{_what(doc)} is an older API version than omnidist reads ({_versions()}); rewrite it for the "
                "operator's current version (its replica specs mostly carry over) and import that",
                path=f"[{i}].apiVersion" if len(docs) > 1 else "apiVersion")
        found = ", ".join(_what(d) for d in docs[:5]) or "nothing"
        raise ValidationError(f"not a Kubeflow training job: expected {_versions()}; found {found}")
    first = jobs[0] if chosen is None else chosen
    for i, doc in enumerate(docs):
        if i == first:
            continue
        if i not in jobs:
            dropped(notes, f"[{i}]", f"{_what(doc)}: not a training job", NoteKind.HINT)
        elif chosen is None:
            dropped(notes, f"[{i}]", f"{_what(doc)}: another job: import the file with `omnidist import` (one "
                                     "portable job per training job) or import_all()")
    return docs[first], f"[{first}]." if len(docs) > 1 else ""


# --- replicas ------------------------------------------------------------------------------------------

def _int(value: Any, path: str, default: Optional[int] = None, minimum: int = 0) -> Optional[int]:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"expected a whole number, got {value!r}", path=path)
    if value < minimum:
        raise ValidationError(f"must be >= {minimum}, got {value}", path=path)
    return value


def read_replicas(kind: Kind, spec: Mapping[str, Any], path: str,
                  notes: list[Note]) -> dict[str, tuple[int, Optional[str], NativePod]]:
    """Replica type -> (replicas, restartPolicy, pod) for every replica type the operator runs.

    Raises:
        ValidationError: no replica specs, a replica type the operator refuses, a bad count or policy.
    """
    where = f"{path}spec.{kind.replica_specs}"
    specs = mapping(spec.get(kind.replica_specs), where, required=True)
    if not specs:
        raise ValidationError("a job needs at least one replica type", path=where)
    known = {LAUNCHER, "Worker"} if kind.kind == "MPIJob" else {*REPLICA_ROLES[kind.kind], *CHIEF_ALIASES}
    if kind.kind == "TFJob" and sum(t in specs for t in ("Chief", *CHIEF_ALIASES)) > 1:
        raise ValidationError("a TFJob has one Chief or Master, not both (the operator's webhook refuses it)",
                              path=where)
    found = {}
    for rtype, body in specs.items():
        at = f"{where}.{rtype}"
        if rtype not in known:
            if kind.kind == "MPIJob":  # mpi-operator validates Launcher and Worker and creates nothing else
                dropped(notes, at, f"mpi-operator runs only Launcher and Worker replicas: the {rtype} pods are "
                                   "never created")
                continue
            raise ValidationError(f"not a {kind.kind} replica type; the operator runs {', '.join(sorted(known))}",
                                  path=at)
        body = mapping(body, at, required=True)
        replicas = _int(body.get("replicas"), f"{at}.replicas", default=1)
        policy = body.get("restartPolicy")
        allowed = MPI_RESTART_POLICIES if kind.kind == "MPIJob" else RESTART_POLICIES
        if policy is not None and policy not in allowed:
            raise ValidationError(f"{policy!r} is not one of {', '.join(allowed)}", path=f"{at}.restartPolicy")
        found[CHIEF_ALIASES.get(rtype, rtype) if kind.kind == "TFJob" else rtype] = (
            replicas, policy, pods.native_to_pod(body.get("template"), kind, f"{at}.template", notes))
    return found


def pod_to_role(name: RoleName, replicas: int, pod: NativePod) -> EffectiveRole:
    """A replica type as the portable role it runs, every value spelled out."""
    accelerator = Accelerator(type=pod.accelerator, count=pod.gpus) if pod.gpus and pod.accelerator else None
    return EffectiveRole(name=name, replicas=replicas, accelerator=accelerator, cpus=pod.cpus,
                         memory_gb=pod.memory_gb, disk_gb=pod.disk_gb, image=pod.image, command=pod.command,
                         args=pod.args, env=hints.strip(pod.env))


def _gpus_without_model(name: RoleName, pod: NativePod, notes: list[Note]) -> None:
    if pod.gpus and not pod.accelerator:
        dropped(notes, f"{name.value}.accelerator",
                f"{pod.gpus} nvidia.com/gpu per pod, but no node label names the GPU model (GKE's "
                "cloud.google.com/gke-accelerator, nvidia.com/gpu.product or a known instance type): imported without "
                f"an accelerator; set {name.value}.accelerator (e.g. A100:{pod.gpus})", NoteKind.CHANGED)


def split_first(replicas: int, pod: NativePod) -> dict[RoleName, tuple[int, NativePod]]:
    """Workers without a chief: worker 0 is the primary, the rest are workers."""
    roles = {RoleName.PRIMARY: (1, pod)}
    if replicas > 1:
        roles[RoleName.WORKERS] = (replicas - 1, pod)
    return roles


def replicas_to_roles(kind: Kind, found: dict[str, tuple[int, Optional[str], NativePod]], spec: Mapping[str, Any],
                      path: str, notes: list[Note]) -> dict[RoleName, tuple[int, NativePod]]:
    """Replica types -> roles; without a Master / Chief, worker 0 is the primary."""
    if kind.kind == "MPIJob":
        return _mpi_roles(found, spec, path, notes)
    roles: dict[RoleName, tuple[int, NativePod]] = {}
    for rtype, (replicas, _, pod) in found.items():
        role = REPLICA_ROLES[kind.kind][rtype]
        if role is RoleName.PRIMARY and replicas != 1:
            raise ValidationError(f"must be 1 (the operator refuses another count), got {replicas}",
                                  path=f"{path}spec.{kind.replica_specs}.{rtype}.replicas")
        if replicas:
            roles[role] = (replicas, pod)
    if RoleName.PRIMARY not in roles:
        if RoleName.WORKERS not in roles:
            raise ValidationError("no Master, Chief or Worker replicas: nothing trains",
                                  path=f"{path}spec.{kind.replica_specs}")
        replicas, pod = roles.pop(RoleName.WORKERS)
        primary = "Master" if kind.kind == "PyTorchJob" else "Chief"
        dropped(notes, "primary", f"no {primary}: worker 0 becomes the primary (a compiled job has a {primary})",
                NoteKind.APPROXIMATED)
        roles = {**split_first(replicas, pod), **roles}
    return roles


# --- TPU slices (SPEC §13) -----------------------------------------------------------------------------

def _host(pod: NativePod) -> tuple:
    """What every host of a slice shares: the program and the machine (hints aside)."""
    return (pod.image, pod.command, pod.args, hints.strip(pod.env), pod.cpus, pod.memory_gb, pod.disk_gb, pod.tpus,
            pod.tpu_labels)


def tpu_slice_from_pods(roles: dict[RoleName, tuple[int, NativePod]],
                        notes: list[Note]) -> tuple[dict[RoleName, tuple[int, NativePod]], Optional[Accelerator]]:
    """The TPU slice whose hosts the training pods are, and the roles with the workers folded into
    the primary (``None``: no pod asks for ``google.com/tpu``, or none says which TPU).

    Raises:
        NotPortableError: hosts that differ, or a TPU without a portable name.
        ValidationError: a slice size or topology GKE does not run.
    """
    trainers = {n: roles[n] for n in (RoleName.PRIMARY, RoleName.WORKERS) if n in roles}
    primary = roles[RoleName.PRIMARY][1]
    if not any(pod.tpus for _, pod in trainers.values()):
        return roles, None
    for name, (_, pod) in trainers.items():
        if _host(pod) != _host(primary):
            raise cannot_hold(name.value, f"its pods ask for {TPU_RESOURCE} unlike the primary's, and a TPU slice's "
                              "hosts run one program on like machines.", "Give every host's pod the same template.")
    label = primary.tpu_labels.get(GKE_TPU_ACCELERATOR_LABEL)
    where = f"{primary.path}.nodeSelector"
    if label is None:
        dropped(notes, "primary.accelerator", f"{primary.tpus} {TPU_RESOURCE} per pod, but no "
                f"{GKE_TPU_ACCELERATOR_LABEL} node label says which TPU: imported without an accelerator; set "
                "primary.accelerator (e.g. TPU-V5E:16)", NoteKind.CHANGED)
        return roles, None
    if label not in GKE_TPU_PORTABLE:
        raise cannot_hold(f"accelerator {label}", "it has no portable accelerator name (the portable TPUs on GKE are "
                          f"{', '.join(GKE_TPU_ACCELERATORS)}).", "Move the job to one of those TPUs first.",
                          feature=Feature.ACCELERATOR)
    hosts = sum(count for count, _ in trainers.values())
    kind, chips = GKE_TPU_PORTABLE[label], hosts * primary.tpus
    topology = primary.tpu_labels.get(GKE_TPU_TOPOLOGY_LABEL)
    try:
        found = slice_from_topology(kind, topology) if topology else Accelerator(type=kind, count=chips)
        laid = tpu_slice(found)
    except (ValidationError, ValueError) as exc:
        message = exc.problems[0].message if isinstance(exc, ValidationError) else str(exc)
        raise ValidationError(message, path=f"{where}.{GKE_TPU_TOPOLOGY_LABEL if topology else ''}".rstrip(".")) \
            from None
    if (laid.hosts, laid.per_host) != (hosts, primary.tpus):
        dropped(notes, "primary.accelerator", f"{hosts} pod(s) of {primary.tpus} chips: the {found} slice "
                f"compiles as {laid.hosts} pod(s) of {laid.per_host} ({laid.host.machine_type} nodes)",
                NoteKind.CHANGED if hosts * primary.tpus != found.count else NoteKind.APPROXIMATED)
    return {n: (1, pod) if n is RoleName.PRIMARY else entry for n, entry in roles.items()
            if n is not RoleName.WORKERS}, found


def slice_from_topology(kind: str, topology: str) -> Accelerator:
    """A portable TPU slice from GKE's topology label (the topology kept only when not the default)."""
    chips = topology_chips(topology) if TOPOLOGY.match(topology) else 0
    default = default_topology(kind, chips)
    return Accelerator(type=kind, count=chips, topology=None if default == topology else topology)


# --- MPIJob: the launcher's mpirun -------------------------------------------------------------------

def parse_mpirun(argv: Sequence[str]) -> Optional[tuple[dict[str, list[str]], tuple[str, ...]]]:
    """``mpirun [options] program …`` -> (options, program argv); ``None`` when ``argv`` is no
    launcher command omnidist can read (a shell script, an unknown option)."""
    if not argv or argv[0].rsplit("/", 1)[-1] not in MPIRUN_PROGRAMS:
        return None
    options: dict[str, list[str]] = {}
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":  # a lone "-" is a program word
        option, eq, value = argv[i].partition("=")
        count = MPIRUN_OPTION_VALUES.get(option)
        if count is None:
            return None
        if eq:
            options.setdefault(option, []).append(value)
            i += 1
            continue
        options.setdefault(option, []).extend(argv[i + 1:i + 1 + count])
        i += 1 + count
    return (options, tuple(argv[i:])) if i < len(argv) else None


def _mpi_roles(found: dict[str, tuple[int, Optional[str], NativePod]], spec: Mapping[str, Any], path: str,
               notes: list[Note]) -> dict[RoleName, tuple[int, NativePod]]:
    if LAUNCHER not in found:
        raise ValidationError("an MPIJob needs a Launcher (mpi-operator refuses one without)",
                              path=f"{path}spec.mpiReplicaSpecs.{LAUNCHER}")
    replicas, _, launcher = found[LAUNCHER]
    if replicas != 1:
        raise ValidationError(f"must be 1, got {replicas}", path=f"{path}spec.mpiReplicaSpecs.{LAUNCHER}.replicas")
    workers = found.get("Worker")
    program = launcher_program(launcher, spec, workers[0] if workers else 0, path, notes)
    # The launcher's args end its argv: they are the program's args (as compile writes them).
    split = len(launcher.args) if launcher.args and program[-len(launcher.args):] == launcher.args else 0
    command, args = (program[:-split], launcher.args) if split and program[:-split] else (program, ())
    if spec.get("runLauncherAsWorker") is True or not workers or not workers[0]:
        # The launcher is a node too (or the only one): it runs ranks on its own hardware.
        nodes = [(1, _with(launcher, command, args))]
        if workers and workers[0]:
            nodes.append((workers[0], _with(workers[2], command, args, env=launcher.env)))
        roles = {RoleName.PRIMARY: nodes[0]}
        if len(nodes) > 1:
            roles[RoleName.WORKERS] = nodes[1]
        return roles
    count, _, worker = workers
    return split_first(count, _with(worker, command, args, env={**worker.env, **launcher.env}))


def _with(pod: NativePod, command: tuple[str, ...], args: tuple[str, ...],
          env: Optional[dict[str, str]] = None) -> NativePod:
    return attrs.evolve(pod, command=command, args=args, env=pod.env if env is None else env)


def launcher_program(launcher: NativePod, spec: Mapping[str, Any], worker_pods: int, path: str,
                     notes: list[Note]) -> tuple[str, ...]:
    """The program the launcher's ``mpirun`` starts on every slot (the whole command when it is no
    ``mpirun`` line omnidist can read, with a note)."""
    argv = (*launcher.command, *launcher.args)
    parsed = parse_mpirun(argv)
    if parsed is None:
        dropped(notes, "command", "the launcher does not run a plain mpirun line (a script, or options omnidist does "
                                  "not know): its whole command became the job's command, which starts mpirun "
                                  "itself; on other platforms give the training program instead", NoteKind.CHANGED)
        return argv
    options, program = parsed
    slots = _int(spec.get("slotsPerWorker"), f"{path}spec.slotsPerWorker", default=MPI_SLOTS_DEFAULT, minimum=1)
    asked = (options.get("-np") or options.get("-n") or options.get("--np") or options.get("-c") or [None])[-1]
    nodes = worker_pods + (1 if spec.get("runLauncherAsWorker") is True else 0)
    if asked is not None and asked != str(max(nodes, 1) * slots):
        dropped(notes, "processes_per_node", f"mpirun -np {asked} over {nodes} node(s) x {slots} slot(s): the job "
                                             "runs every slot", NoteKind.APPROXIMATED)
    forwarded = set(options.get("-x", [])) - set(MPIRUN_FORWARDED)
    kept = {k for k in forwarded if "=" not in k}
    standard = parse_mpirun((*MPIRUN, "program"))[0]
    settings_like = [k for k, v in options.items()
                     if k not in ("-np", "-n", "--np", "-c", "-x") and standard.get(k) != v]
    if settings_like:
        dropped(notes, "command", f"mpirun options {' '.join(sorted(settings_like))} are mpirun's, not the program's: "
                                  "compile writes its own mpirun line", NoteKind.APPROXIMATED)
    missing = sorted(k for k in kept if k not in launcher.env)
    if missing:
        dropped(notes, "env", f"mpirun forwards {', '.join(missing)} from the launcher's environment, which does not "
                              "set them here", NoteKind.HINT)
    return program


# --- the job -------------------------------------------------------------------------------------------

def _uniform(values: list[Any], what: str, notes: list[Note]) -> Any:
    """One value for the job from its pods (the primary's when they differ, noted)."""
    distinct = []
    for value in values:
        if value not in distinct:
            distinct.append(value)
    if len(distinct) > 1:
        dropped(notes, f"{SETTINGS}.{what}", f"the pods differ ({'; '.join(map(str, distinct))}); every pod gets the "
                                             "primary's", NoteKind.APPROXIMATED)
    return distinct[0] if distinct else None



def block_from_pods(roles: dict[RoleName, tuple[int, NativePod]], launcher: Optional[NativePod],
                    notes: list[Note]) -> tuple[dict[str, Any], bool]:
    """The ``backends.kubernetes`` keys the pods say (node selection, tolerations, service account,
    pull secrets, shared memory) and whether the job runs on spot capacity."""
    every = [pod for _, pod in roles.values()] + ([launcher] if launcher is not None else [])
    block: dict[str, Any] = {}
    table = {pod.accelerator: pod.accelerator_labels for _, pod in roles.values() if pod.accelerator and pod.gpus}
    if table and any(DEFAULT_NODE_SELECTORS.get(model) != labels for model, labels in table.items()):
        block["node_selectors"] = table
    selector = _uniform([pod.node_selector for pod in every], "node_selector", notes)
    if selector:
        block["node_selector"] = selector
    spot = any(pod.spot for pod in every)
    if spot:
        labels = _uniform([pod.spot_labels for pod in every if pod.spot], "spot_node_selector", notes)
        if labels != SPOT_NODE_SELECTOR:
            block["spot_node_selector"] = labels
    tolerations = _uniform([list(pod.tolerations) for pod in every], "tolerations", notes) or []
    if spot:
        spot_keys = set(block.get("spot_node_selector", SPOT_NODE_SELECTOR))
        spot_tolerations = [t for t in tolerations if _key(t) in spot_keys]
        tolerations = [t for t in tolerations if _key(t) not in spot_keys]
        if spot_tolerations != list(SPOT_TOLERATIONS):
            block["spot_tolerations"] = spot_tolerations
    if tolerations:
        block["tolerations"] = tolerations
    for key, values in (("service_account", [p.service_account for p in every]),
                        ("image_pull_secrets", [list(p.pull_secrets) for p in every])):
        value = _uniform(values, key, notes)
        if value:
            block[key] = value
    trainers = [pod for _, pod in roles.values()]
    if any(pod.shm_size != (MULTI_GPU_SHM_SIZE if pod.gpus >= 2 else None) for pod in trainers):
        shm = _uniform([p.shm_size for p in every if p.shm_size is not None], "shm_size", notes)
        if shm:
            block["shm_size"] = shm
    return block, spot


def run_policy_to_block(kind: Kind, spec: Mapping[str, Any], path: str, job: dict[str, Any],
                        block: dict[str, Any], notes: list[Note]) -> None:
    """``runPolicy``: the deadline is the job's ``timeout``; retries, cleaning and TTL are settings."""
    where = f"{path}spec.runPolicy"
    policy = mapping(spec.get("runPolicy"), where)
    deadline = _int(policy.get("activeDeadlineSeconds"), f"{where}.activeDeadlineSeconds", minimum=1)
    if deadline:
        job["timeout"] = deadline
    for field, key in (("backoffLimit", "backoff_limit"), ("ttlSecondsAfterFinished", "ttl_seconds_after_finished")):
        value = _int(policy.get(field), f"{where}.{field}")
        if value is not None:
            block[key] = value
    clean = policy.get("cleanPodPolicy")
    if clean is not None:
        if clean not in CLEAN_POD_POLICIES:
            raise ValidationError(f"{clean!r} is not one of {', '.join(CLEAN_POD_POLICIES)}",
                                  path=f"{where}.cleanPodPolicy")
        if clean != DEFAULT_CLEAN_POD_POLICIES.get(kind.kind, "None"):
            block["clean_pod_policy"] = clean
    elif kind.kind in DEFAULT_CLEAN_POD_POLICIES:
        block["clean_pod_policy"] = "None"  # mpi-operator's default when unset; omnidist's is Running
    for field in ("schedulingPolicy", "managedBy"):
        if policy.get(field):
            dropped(notes, f"{where}.{field}", f"{policy[field]}: not carried (a gang scheduler's or another "
                                               "controller's setting)")
    if policy.get("suspend"):
        dropped(notes, f"{where}.suspend", "the job was suspended; the imported job starts when submitted",
                NoteKind.CHANGED)


def restart_policy_to_block(kind: Kind, found: dict[str, tuple[int, Optional[str], NativePod]],
                            block: dict[str, Any], notes: list[Note]) -> None:
    """One ``restart_policy`` for every replica, unless each has the operator's default."""
    def default(rtype: str) -> str:
        return DEFAULT_RESTART_POLICIES[LAUNCHER if rtype == LAUNCHER else kind.kind]

    chosen = {rtype: policy or default(rtype) for rtype, (_, policy, _) in found.items()}
    if all(policy == default(rtype) for rtype, policy in chosen.items()):
        return
    block["restart_policy"] = _uniform(list(chosen.values()), "restart_policy", notes)


def _compiled_from(name: Any, hint: Optional[str]) -> bool:
    """Whether ``name`` is what compile (and submit) made of the job name ``hint``: cut to fit,
    trailing dashes gone, maybe a suffix added."""
    return bool(hint) and isinstance(name, str) and name.startswith(hint[:len(name)].rstrip("-"))


def _metadata(obj: Mapping[str, Any], path: str, job: dict[str, Any], block: dict[str, Any],
              hint: Optional[str], notes: list[Note]) -> str:
    meta = mapping(obj.get("metadata"), f"{path}metadata")
    raw = meta.get("name") or meta.get("generateName")
    # The job's own name, when the manifest is omnidist's (its name may be cut or suffixed).
    candidates = (hint, raw) if _compiled_from(raw, hint) else (raw,)
    name = pick_name(candidates, fallback="kubeflow-job",
                               missing="the job has no name; called it 'kubeflow-job'", notes=notes)
    namespace = meta.get("namespace")
    if namespace and namespace != "default":
        block["namespace"] = text(namespace, f"{path}metadata.namespace")
    labels = string_map(meta.get("labels"), f"{path}metadata.labels")
    if QUEUE_LABEL in labels:
        block["queue"] = labels.pop(QUEUE_LABEL)
    labels.pop(REQUEST_ID_LABEL, None)
    if labels:
        job["labels"] = labels
    annotations = dict(string_map(meta.get("annotations"), f"{path}metadata.annotations"))
    if DESCRIPTION_ANNOTATION in annotations:
        job["description"] = annotations.pop(DESCRIPTION_ANNOTATION)
    shown = [k for k in annotations if k not in IGNORED_ANNOTATIONS]
    if shown:
        dropped(notes, f"{path}metadata.annotations", f"{', '.join(shown)}: annotations are not carried")
    return name


def _processes(kind: Kind, spec: Mapping[str, Any], primary: NativePod, framework: str, path: str,
               notes: list[Note], tpu: Optional[Accelerator] = None) -> Any:
    """``processes_per_node`` from ``nprocPerNode`` / ``slotsPerWorker`` (the hint when it is there)."""
    told = primary.env.get(hints.PROCESSES_PER_NODE)
    value: int | str
    if kind.kind == "PyTorchJob":
        raw = spec.get("nprocPerNode")
        if raw is None:
            value = int(told) if told and told.isdigit() else 1  # the operator starts one process per pod
        elif isinstance(raw, str) and raw.isdigit() and int(raw) >= 1:
            value = int(raw)
        elif raw in ("auto", "gpu"):
            value = "auto"
        else:
            if raw != "cpu":
                raise ValidationError(f"expected a number (as a string), auto, cpu or gpu, got {raw!r}",
                                      path=f"{path}spec.nprocPerNode")
            dropped(notes, "processes_per_node", "nprocPerNode: cpu (one process per CPU) has no portable form; "
                                                 "one per node", NoteKind.CHANGED)
            value = 1
    elif kind.kind == "MPIJob":
        value = _int(spec.get("slotsPerWorker"), f"{path}spec.slotsPerWorker", default=MPI_SLOTS_DEFAULT, minimum=1)
    else:  # a TFJob runs one process per pod whatever the job says; only the hint tells
        value = int(told) if told and told.isdigit() else "auto"
    gpus = Accelerator(type=primary.accelerator, count=primary.gpus) if primary.gpus and primary.accelerator else tpu
    return "auto" if value in ("auto", auto_processes(framework, gpus)) else value


def _spec_extras(kind: Kind, spec: Mapping[str, Any], path: str, notes: list[Note]) -> None:
    for key in sorted(set(spec) - SPEC_KEYS[kind.kind]):
        dropped(
            notes, f"{path}spec.{key}", f"not a field of {kind.kind} {VERSIONS[kind.kind][0]} (the API server drops it)"
        )
    if spec.get("elasticPolicy"):
        dropped(notes, f"{path}spec.elasticPolicy", "an elastic job became a fixed one with its replicas",
                NoteKind.APPROXIMATED)
    for key in ("successPolicy", "enableDynamicWorker", "launcherCreationPolicy", "sshAuthMountPath", "mainContainer"):
        if spec.get(key):
            dropped(notes, f"{path}spec.{key}", f"{spec[key]}: not carried", NoteKind.HINT)
    implementation = spec.get("mpiImplementation")
    if implementation not in (None, "OpenMPI"):
        dropped(notes, f"{path}spec.mpiImplementation", f"{implementation}: compile writes an OpenMPI mpirun line",
                NoteKind.CHANGED)


def _references(pods_: list[NativePod], notes: list[Note]) -> None:
    refs = sorted({ref for pod in pods_ for ref in pod.references})
    if refs:
        dropped(notes, "command", f"Kubernetes expands {', '.join(f'$({r})' for r in refs)} from the container's "
                                  "environment; other platforms pass the text on as written", NoteKind.CHANGED)


def import_job(native: Any) -> tuple[DistributedJob, list[Note]]:
    """A portable job from a Kubeflow training job; see the module docstring.

    Raises:
        ValidationError: no training job, or one the platform would refuse (naming the field path).
        UnsupportedFeatureError: roles the portable job cannot tell apart (a worker without a GPU
            the primary has…).
    """
    notes: list[Note] = []
    obj, path = pick_job(native, notes)
    kind = KINDS[obj["kind"]]
    if kind.kind == "MPIJob" and not str(obj.get("apiVersion")).endswith("/v2beta1"):
        dropped(notes, f"{path}apiVersion", "the training operator's v1 MPIJob: compile writes mpi-operator's v2beta1",
                NoteKind.HINT)
    spec = mapping(obj.get("spec"), f"{path}spec", required=True)
    _spec_extras(kind, spec, path, notes)
    found = read_replicas(kind, spec, path, notes)
    roles = replicas_to_roles(kind, found, spec, path, notes)
    roles, tpu = tpu_slice_from_pods(roles, notes)
    seen: list[NativePod] = []
    for name, (_, pod) in roles.items():  # the primary and the workers may be one template: say it once
        if not any(pod is other for other in seen):
            _gpus_without_model(name, pod, notes)
        seen.append(pod)
    job: dict[str, Any] = {}
    block: dict[str, Any] = {}
    primary = roles[RoleName.PRIMARY][1]
    job["name"] = _metadata(obj, path, job, block, primary.env.get(hints.JOB_NAME), notes)
    launcher = found[LAUNCHER][2] if LAUNCHER in found else None
    job["framework"] = primary.env.get(hints.FRAMEWORK) or KIND_FRAMEWORKS[kind.kind].value
    pod_block, spot = block_from_pods(roles, launcher, notes)
    block.update(pod_block)
    _references([pod for _, pod in roles.values()], notes)
    effective = {name: pod_to_role(name, count, pod) for name, (count, pod) in roles.items()}
    if tpu is not None:
        effective[RoleName.PRIMARY] = attrs.evolve(effective[RoleName.PRIMARY], accelerator=tpu)
    effective = _with_primary_env(effective, notes)
    delowered = delower(effective)
    job.update(delowered.job_dict())
    processes = _processes(kind, spec, primary, str(job["framework"]), path, notes, tpu)
    if processes != "auto":
        job["processes_per_node"] = processes
    if spot:
        job["spot"] = True
    run_policy_to_block(kind, spec, path, job, block, notes)
    restart_policy_to_block(kind, found, block, notes)
    if block:
        job["backends"] = {NAME: block}
    try:
        return job_from_dict(job), notes
    except ValidationError as exc:  # pragma: no cover - the importer writes what the job format takes
        raise exc.prefixed("(imported)") from None


def _key(toleration: Any) -> Optional[str]:
    """A toleration's ``key`` when it is text (another kind matches no node's taint)."""
    key = toleration.get("key") if isinstance(toleration, Mapping) else None
    return key if isinstance(key, str) else None


def _with_primary_env(effective: dict[RoleName, Any], notes: list[Note]) -> dict[RoleName, Any]:
    """Workers (and evaluators) whose pods lack a variable the primary's pod sets get it empty,
    noted as a change: Kubernetes runs such a job (SPEC §10: no stricter than the platform), and a
    portable role inherits the primary's env, which it cannot unset again."""
    primary = effective[RoleName.PRIMARY]
    found = dict(effective)
    for name, role in effective.items():
        missing = sorted(k for k in primary.env if k not in role.env) if name in INHERITS_FROM_PRIMARY else []
        if not missing:
            continue
        found[name] = attrs.evolve(role, env={**role.env, **{k: "" for k in missing}})
        notes.append(Note(kind=NoteKind.CHANGED, field=f"{name.value}.env", message=(
            f"{', '.join(missing)}: set on the primary's pod, not on the {name.value}' pods; a portable role inherits "
            "the primary's variables, so the workers get them empty")))
    return found
