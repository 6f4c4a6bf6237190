"""What a Kubeflow training job's program sees (SPEC §14), from the manifest alone (world.md §6).

- argv: plain Kubernetes: ``command`` replaces the image's ENTRYPOINT, ``args`` its CMD; the
  operators never rewrite argv [KF-env]. An MPIJob's launcher runs the user's ``mpirun``; its
  workers run ``sshd`` [MPI].
- PyTorchJob environment, on every container: ``PYTHONUNBUFFERED``; with a ``Master`` replica,
  ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE`` (replicas × nprocPerNode), ``RANK`` (the node's)
  and ``PET_*`` for torchrun [KF-env], [KF-master]; an elastic policy sets ``PET_RDZV_*`` [KF-elastic].
- TFJob: ``TF_CONFIG`` when the job is distributed [KF-tf]. MPIJob: ``OMPI_COMM_WORLD_*`` from
  mpirun, ``slotsPerWorker`` ranks a worker [MPI].
- processes: once per pod; a ``torchrun`` in the command starts ``PET_NPROC_PER_NODE`` [KF-env].
- data: whatever the pod mounts (a volume is a local path) [KF-env]. images: any registry the
  kubelet reaches (private ones through ``imagePullSecrets``) [K8S].
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import (
    ENTRYPOINT,
    MPI_VARIABLES,
    TORCH_VARIABLES,
    DataPath,
    StartedBy,
    World,
    WorldImage,
    WorldNode,
    env_list,
    launched,
    registry_of,
    uris_in,
)
from omnidist.runtime.platforms import kubernetes as platform
from omnidist.runtime.platforms import tf_config

ROLES = {"Master": "primary", "Chief": "primary", "Worker": "workers", "PS": "parameter_servers",
         "Evaluator": "evaluators", "Launcher": "launcher"}

GPU = "nvidia.com/gpu"


def world(native: Any) -> Optional[World]:
    """The World of a PyTorchJob, TFJob or MPIJob (the first training job of a stream, or the one
    a split names); ``None`` for another shape."""
    from omnidist_kubernetes.importer import JobInStream, documents, is_training_job

    docs = list(native.documents) if isinstance(native, JobInStream) else documents(native)
    jobs = [d for d in docs if is_training_job(d)]
    doc = native.documents[native.index] if isinstance(native, JobInStream) else (jobs[0] if jobs else None)
    if not isinstance(doc, Mapping) or not isinstance(doc.get("spec"), Mapping):
        return None
    kind, spec = str(doc["kind"]), doc["spec"]
    replica_specs = next((v for k, v in spec.items() if k.endswith("ReplicaSpecs") and isinstance(v, Mapping)), {})
    replicas = {t: int((s or {}).get("replicas", 1) or 0) for t, s in replica_specs.items()}
    if kind == "MPIJob":
        return _mpi_world(spec, replica_specs, replicas)
    nproc = str(spec.get("nprocPerNode") or (spec.get("elasticPolicy") or {}).get("nProcPerNode") or "")
    total = sum(n for t, n in replicas.items())
    own: set[str] = set()
    if kind == "PyTorchJob":
        own.add("PYTHONUNBUFFERED")  # the PyTorchJob controller's, on every container [KF-env]
        if "Master" in replica_specs:
            own |= TORCH_VARIABLES | {"PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NODE_RANK", "PET_NNODES"}
        if nproc:
            own |= {"PET_NPROC_PER_NODE"}
        if spec.get("elasticPolicy"):
            own |= {"PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_NNODES"}
    elif kind == "TFJob" and total > 1:
        own |= {tf_config.VARIABLE}
    training = sum(n for t, n in replicas.items() if ROLES.get(t) in ("primary", "workers"))
    nodes: list[WorldNode] = []
    image, data = "", list[DataPath]()
    for rtype in sorted(replica_specs, key=lambda t: list(ROLES).index(t) if t in ROLES else 99):
        if not replicas[rtype]:
            continue
        container, pod = _container(replica_specs[rtype], kind)
        argv = (*(container.get("command") or [ENTRYPOINT]), *(container.get("args") or []))
        argv = tuple(str(w) for w in argv)
        gpus = _gpus(container)
        default = int(nproc) if nproc.isdigit() else (gpus or 1) if nproc in ("gpu", "auto") else 1
        node = launched(argv, gpus, training, own=frozenset(own), env=env_list(container.get("env")),
                        role=ROLES.get(rtype, rtype.lower()), default_processes=default)
        nodes.append(attrs.evolve(node, count=replicas[rtype]))
        image = image or str(container.get("image", ""))
        data += _volumes(container, pod) if not data else []
    if not nodes:
        return None
    primary = nodes[0]
    data += [DataPath(location=u, given="uri", access="ro", where="argv")
             for u in uris_in([*primary.program, *primary.env.values()])]
    return World(platform=platform.NAME, image=WorldImage(uri=image, registry=registry_of(image), pullable=True),
                 nodes=nodes, data=data)


def _container(replica: Any, kind: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The replica's training container (named ``pytorch``/``tensorflow``, else the first) and its pod spec."""
    pod = ((replica or {}).get("template") or {}).get("spec") or {}
    containers = [c for c in pod.get("containers") or [] if isinstance(c, Mapping)]
    named = {"PyTorchJob": "pytorch", "TFJob": "tensorflow"}.get(kind)
    chosen = next((c for c in containers if c.get("name") == named), containers[0] if containers else {})
    return chosen, pod


def _gpus(container: Mapping[str, Any]) -> int:
    resources = container.get("resources") or {}
    count = str((resources.get("limits") or {}).get(GPU) or (resources.get("requests") or {}).get(GPU) or "0")
    return int(count) if count.isdigit() else 0


def _volumes(container: Mapping[str, Any], pod: Mapping[str, Any]) -> list[DataPath]:
    """Each mounted volume that holds data (a claim, a CSI bucket, NFS, a host path): a local path."""
    volumes = {v.get("name"): v for v in pod.get("volumes") or [] if isinstance(v, Mapping)}
    found = []
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name")) or {}
        source = next((k for k in volume if k != "name"), "")
        if source in ("emptyDir", "configMap", "secret", "downwardAPI", "projected", ""):
            continue
        detail = volume[source] if isinstance(volume[source], Mapping) else {}
        what = detail.get("claimName") or (detail.get("volumeAttributes") or {}).get("bucketName") or detail.get(
            "path") or detail.get("server") or mount.get("name")
        found.append(DataPath(location=f"{source}:{what}", given="path",
                              access="ro" if mount.get("readOnly") else "rw", where=str(mount.get("mountPath"))))
    return found


def _mpi_world(spec: Mapping[str, Any], replica_specs: Mapping[str, Any], replicas: Mapping[str, int]) -> World:
    """An MPIJob: the launcher's ``mpirun`` starts ``slotsPerWorker`` ranks on each worker pod [MPI]."""
    workers = replicas.get("Worker", 0)
    slots = int(spec.get("slotsPerWorker", 1) or 1)
    launcher, _ = _container(replica_specs.get("Launcher"), "MPIJob")
    worker, pod = _container(replica_specs.get("Worker"), "MPIJob")
    argv = tuple(str(w) for w in (*(launcher.get("command") or [ENTRYPOINT]), *(launcher.get("args") or [])))
    node = launched(argv, _gpus(worker), max(workers, 1), env=env_list(launcher.get("env")), role="workers")
    if node.launcher is StartedBy.MPIRUN:
        node = attrs.evolve(node, processes=slots, platform_env=node.platform_env | MPI_VARIABLES)
    node = attrs.evolve(node, count=workers, platform_env=node.platform_env | {"K_MPI_JOB_ROLE"})
    image = str(worker.get("image") or launcher.get("image") or "")
    data = _volumes(worker, pod) + [DataPath(location=u, given="uri", access="ro", where="argv")
                                    for u in uris_in(node.program)]
    return World(platform=platform.NAME, image=WorldImage(uri=image, registry=registry_of(image), pullable=True),
                 nodes=[node], data=data)
