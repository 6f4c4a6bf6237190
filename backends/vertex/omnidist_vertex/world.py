"""What a Vertex AI custom job's program sees (SPEC §14), from the request alone (world.md §2).

- argv: ``containerSpec.command`` replaces the image's ENTRYPOINT, ``args`` its CMD [V-CS]; a
  ``pythonPackageSpec`` runs ``python -m MODULE ARGS`` [V-CS]; a search appends each trial's values
  as flags [V-HPT].
- environment: ``CLUSTER_SPEC`` and ``TF_CONFIG`` on every replica of a distributed job [V-DT];
  ``AIP_MODEL_DIR``/``AIP_CHECKPOINT_DIR``/``AIP_TENSORBOARD_LOG_DIR`` (gs:// URIs) with a base output
  directory [V-ENV]; ``CLOUD_ML_JOB_ID`` [V-ENV]. No ``MASTER_ADDR``/``RANK`` is documented.
- processes: one per replica; Vertex starts no launcher [V-DT].
- data: ``/gcs/BUCKET/…`` is Cloud Storage FUSE, read and write [V-FUSE]; a ``gs://`` string stays a string.
- search: metric through cloudml-hypertune's file [HT].
- images: Artifact Registry, Container Registry or public Docker Hub [V-CS].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.kit import (
    ARGV,
    ENTRYPOINT,
    DataPath,
    World,
    WorldImage,
    WorldNode,
    env_list,
    launched,
    proto_json_keys,
    registry_of,
    uris_in,
)
from omnidist.runtime.platforms import tf_config
from omnidist.runtime.platforms import vertex as platform

ROLES = {0: "primary", 1: "workers", 2: "parameter_servers", 3: "evaluators"}
"""Pool index -> the role the World names (pool 2 may hold a Reduction Server instead)."""

OUTPUT_VARIABLES = ("AIP_MODEL_DIR", "AIP_CHECKPOINT_DIR", "AIP_TENSORBOARD_LOG_DIR")

PULLABLE_NOT = frozenset({"ecr"})
"""Amazon ECR serves no image without AWS credentials, which a Vertex request cannot name; Artifact
Registry, Container Registry and public registries are pulled [V-CS]."""


def world(native: Any) -> Optional[World]:
    """The World of a CustomJob, CustomJobSpec or HyperparameterTuningJob (or the gcloud forms
    the importer reads); ``None`` for another shape."""
    spec, searched = _spec(native)
    if spec is None:
        return None
    pools = spec.get("workerPoolSpecs") or []
    if isinstance(pools, Mapping):
        pools = [pools]
    replicas = [_count(p.get("replicaCount", 1)) if isinstance(p, Mapping) and p else 0 for p in pools]
    reducers = [i == 2 and _reducer(p, pools) for i, p in enumerate(pools)]
    distributed = sum(n for n, reducer in zip(replicas, reducers) if not reducer) > 1  # reducers run no program
    base = (spec.get("baseOutputDirectory") or {}).get("outputUriPrefix")
    own = {platform.JOB_ID} | ({platform.VARIABLE, tf_config.VARIABLE} if distributed else set())
    own |= set(OUTPUT_VARIABLES) if base else set()
    nodes, data, image = [], [], None
    for index, pool in enumerate(pools):
        if not isinstance(pool, Mapping) or not replicas[index]:
            continue
        argv, uri = _argv(pool)
        image = image or uri
        gpus = _count((pool.get("machineSpec") or {}).get("acceleratorCount", 0) or 0)
        env = env_list((pool.get("containerSpec") or {}).get("env"))
        role = "reduction_servers" if reducers[index] else ROLES.get(index, f"pool{index}")
        nodes.append(launched(argv, gpus, sum(replicas), own=frozenset(own), env=env, role=role))
        nodes[-1] = _counted(nodes[-1], replicas[index] * _tpu_hosts(pool.get("machineSpec") or {}))
    if not nodes:
        return None
    primary = nodes[0]
    words = [*primary.program, *primary.env.values()]
    for word in words:
        value = word.partition("=")[2] if word.startswith("-") and "=" in word else word
        if value.startswith(platform.FUSE_ROOT):
            data.append(DataPath(location="gs://" + value[len(platform.FUSE_ROOT):], given="path", access="rw",
                                 where="argv"))
    data += [DataPath(location=u, given="uri", access="ro", where="argv") for u in uris_in(words)]
    if base:
        data.append(DataPath(location=str(base), given="uri", access="rw", where="env AIP_MODEL_DIR", implicit=True))
    registry = registry_of(image or "")
    pullable = registry not in PULLABLE_NOT
    return World(
        platform=platform.NAME,
        image=WorldImage(uri=image or "", registry=registry, pullable=pullable,
                         why="" if pullable else "Amazon ECR needs AWS credentials a Vertex AI job cannot name"),
        nodes=nodes, data=data,
        hyperparameters=ARGV if searched else "",
        metric=platform.METRICS if searched else "",
    )


def _spec(native: Any) -> tuple[Optional[Mapping[str, Any]], bool]:
    """The CustomJobSpec a native form holds, and whether it is a search's trial."""
    from omnidist.kit import CommandLine
    from omnidist_vertex import gcloud
    from omnidist_vertex.importer import _is_flags

    try:
        if isinstance(native, CommandLine):
            return gcloud.command_to_spec(native, [])[0], False
        if isinstance(native, Sequence) and not isinstance(native, (str, bytes)):
            return gcloud.flags_to_spec({"worker_pool_specs": list(native)})[0], False
        if not isinstance(native, Mapping):
            return None, False
        if _is_flags(native):
            return gcloud.flags_to_spec(native)[0], False
    except Exception:  # noqa: BLE001 - what the importer refuses has no World; its error is the importer's
        return None, False
    native = proto_json_keys(native)
    if "trialJobSpec" in native:
        return native.get("trialJobSpec") or {}, True
    if "jobSpec" in native:
        return native.get("jobSpec") or {}, False
    if "workerPoolSpecs" in native:
        return native, False
    return None, False


def _argv(pool: Mapping[str, Any]) -> tuple[tuple[str, ...], Optional[str]]:
    container = pool.get("containerSpec")
    if isinstance(container, Mapping) and container:
        command = [str(w) for w in container.get("command") or []]
        args = [str(w) for w in container.get("args") or []]
        return (*(command or [ENTRYPOINT]), *args), container.get("imageUri")
    package = pool.get("pythonPackageSpec") or {}
    args = [str(w) for w in package.get("args") or []]
    return ("python", "-m", str(package.get("pythonModule", "")), *args), package.get("executorImageUri")


def _count(value: Any) -> int:
    """A replica count; one the request leaves to a template (``${COUNT:-1}``) reads as 1."""
    text = str(value if value is not None else 1)
    return int(text) if text.isdigit() else 1


def _reducer(pool: Any, pools: Sequence[Any]) -> bool:
    """Pool 2 holds a Reduction Server (its image, or omnidist's hint says so) rather than parameter servers."""
    from omnidist.runtime import hints
    from omnidist_vertex.tables import REDUCTION_SERVER_IMAGE

    container = (pool or {}).get("containerSpec") or {} if isinstance(pool, Mapping) else {}
    told = [env_list((p.get("containerSpec") or {}).get("env")).get(hints.POOL2_ROLE) for p in (pool, pools[0])
            if isinstance(p, Mapping)]
    return bool(REDUCTION_SERVER_IMAGE.search(str(container.get("imageUri", "")))) or "reduction_server" in told


def _tpu_hosts(machine: Mapping[str, Any]) -> int:
    """The hosts one replica of a TPU VM pool runs on: a multi-host slice runs the container on each."""
    if not machine.get("tpuTopology"):
        return 1
    from omnidist.kit import slice_from_host, tpu_slice

    try:
        return tpu_slice(slice_from_host(str(machine.get("machineType")), str(machine["tpuTopology"]))).hosts
    except Exception:  # noqa: BLE001 - a slice the importer refuses: its error is the importer's
        return 1


def _counted(node: WorldNode, count: int) -> WorldNode:
    import attrs

    return attrs.evolve(node, count=count)
