"""What a legacy AI Platform Training job's program sees (SPEC §14), from the request alone (world.md §3).

- argv: a custom container runs its ENTRYPOINT/CMD with ``containerCommand``/``containerArgs``
  (workers default to the master's image) [AIP-PT]; a package job runs ``python -m MODULE ARGS``
  [AIP-HPT]; ``jobDir`` reaches the program as ``--job-dir gs://…`` [GH-gcloud].
- environment: ``TF_CONFIG`` and ``CLUSTER_SPEC`` [V-ENV]; ``MASTER_ADDR``, ``MASTER_PORT``,
  ``WORLD_SIZE``, ``RANK`` on every node of a distributed job in the prebuilt PyTorch containers [AIP-PT].
- processes: one per VM [AIP-PT]. data: gs:// strings only.
- search: values as command-line args, metric through cloudml-hypertune [AIP-HPT], [HT].
- images: Artifact Registry or Container Registry through the service agent [AIP-img].
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from omnidist.kit import (
    ARGV,
    ENTRYPOINT,
    TORCH_VARIABLES,
    CommandLine,
    DataPath,
    World,
    WorldImage,
    launched,
    registry_of,
    uris_in,
)
from omnidist.runtime.platforms import ai_platform as platform
from omnidist.runtime.platforms import tf_config

PREBUILT_PYTORCH = "cloud-ml-public/training/pytorch"
"""The prebuilt PyTorch containers, which set torch's cluster variables [AIP-PT]."""

PULLABLE_NOT = frozenset({"ecr"})
"""Amazon ECR serves no image without AWS credentials, which an AI Platform request cannot name; Google's
registries through the service agent [AIP-img], and public registries, are pulled."""

ROLES = (("master", "primary"), ("worker", "workers"), ("parameterServer", "parameter_servers"),
         ("evaluator", "evaluators"))


def world(native: Any) -> Optional[World]:
    """The World of a ``projects.jobs.create`` body (or its config-file and command-line forms);
    ``None`` for a shape the importer would refuse."""
    from omnidist_ai_platform import importer, tuning
    from omnidist_ai_platform.gcloud import command_to_request

    try:
        request = command_to_request(native) if isinstance(native, CommandLine) else native
        request, searched = tuning.split(request)
        ti = importer.tier_to_custom(importer.parse(request).trainingInput, [])
    except Exception:  # noqa: BLE001 - what the importer refuses has no World; its error is the importer's
        return None
    if ti is None:
        return None
    master = ti.masterConfig or importer.NativeReplica()
    image = master.imageUri or ""
    counts = {"master": 1, "worker": int(ti.workerCount or 0), "parameterServer": int(ti.parameterServerCount or 0),
              "evaluator": int(ti.evaluatorCount or 0)}
    total = sum(counts.values())
    own = {platform.JOB_ID} | ({platform.VARIABLE, tf_config.VARIABLE} if total > 1 else set())
    if total > 1 and PREBUILT_PYTORCH in image:
        own |= TORCH_VARIABLES
    job_dir = [platform.JOB_DIR_FLAGS[0], ti.jobDir] if ti.jobDir else []
    nodes = []
    for prefix, role in ROLES:
        if not counts[prefix]:
            continue
        config = getattr(ti, f"{prefix}Config") or importer.NativeReplica()
        if ti.pythonModule:
            argv = ("python", "-m", ti.pythonModule, *(ti.args or ()), *job_dir)
        else:
            argv = (*(config.containerCommand or master.containerCommand or (ENTRYPOINT,)),
                    *(config.containerArgs or master.containerArgs or ti.args or ()), *job_dir)
        gpus = int(config.acceleratorConfig.count or 0) if config.acceleratorConfig else 0
        node = launched(argv, gpus, counts["master"] + counts["worker"], own=frozenset(own), role=role)
        nodes.append(attrs.evolve(node, count=counts[prefix]))
    primary = nodes[0]
    data = [DataPath(location=u, given="uri", access="ro", where="argv")
            for u in uris_in([*primary.program, *primary.env.values()])]
    if not image:  # a package job runs on the runtime version's image, Google's own
        image = f"(runtime version {ti.runtimeVersion or 'default'})"
    registry = registry_of(image) if not image.startswith("(") else "runtime-version"
    pullable = registry not in PULLABLE_NOT
    return World(
        platform=platform.NAME,
        image=WorldImage(uri=image, registry=registry, pullable=pullable,
                         why="" if pullable else "Amazon ECR needs AWS credentials an AI Platform job cannot name"),
        nodes=nodes, data=data,
        hyperparameters=ARGV if searched is not None else "",
        metric=platform.METRICS if searched is not None else "",
    )
