"""What an Azure ML command or sweep job's program sees (SPEC §14), from the job file alone (world.md §4).

- argv: ``command`` is a shell line, with ``${{inputs.x}}``/``${{outputs.y}}`` replaced by local
  paths (mounted or downloaded data) or literal values [AZ-IN]; a sweep substitutes
  ``${{search_space.x}}`` [AZ-SWEEP].
- processes: the ``pytorch`` distribution starts ``process_count_per_instance`` copies per node and
  sets ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``NODE_RANK``, ``RANK``, ``LOCAL_RANK``
  [AZ-DGPU], [AZ-BLOG]; ``mpi`` runs ``mpirun`` with that many slots (``OMPI_COMM_WORLD_*``)
  [AZ-DGPU]; ``tensorflow`` sets ``TF_CONFIG`` [AZ-DGPU-v1]. ``AZUREML_RUN_ID`` always [AZ-PR1572].
- data: ``ro_mount`` and ``download`` inputs are local read-only paths, ``rw_mount`` and ``upload``
  outputs local writable ones, ``direct`` a URI string [AZ-IN], [AZ-OUT].
- search: the metric is the MLflow metric named ``objective.primary_metric`` [AZ-SWEEP].
- images: the workspace's ACR (managed identity), MCR and public images [AZ-MI], [AZ-BLOG].
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import (
    ARGV,
    MPI_VARIABLES,
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
from omnidist.runtime.platforms import azure_ml as platform
from omnidist.runtime.platforms import tf_config

PYTORCH_VARIABLES = frozenset({"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NODE_RANK", "RANK", "LOCAL_RANK"})
"""What the ``pytorch`` distribution sets for each process it starts [AZ-DGPU], [AZ-BLOG]."""

PULLABLE_NOT = frozenset({"ecr"})
"""Amazon ECR serves no image without AWS credentials, which a command job cannot name; the workspace's
ACR (managed identity) [AZ-MI] and public registries are pulled."""

INPUT_MODES = {"ro_mount": ("path", "ro"), "download": ("path", "ro"), "eval_mount": ("path", "ro"),
               "eval_download": ("path", "ro"), "direct": ("uri", "ro"), "rw_mount": ("path", "rw"),
               "upload": ("path", "rw")}
"""``mode`` -> (how the program gets it, access) [AZ-IN], [AZ-OUT]."""


def world(native: Any) -> Optional[World]:
    """The World of a command job, a sweep job or a ``command(...)`` node; ``None`` for another shape."""
    from omnidist_azure_ml.importer import from_component

    if not isinstance(native, Mapping):
        return None
    request = from_component(native)
    kind = str(request.get("type", "command")).lower()
    searched = kind == "sweep"
    trial = request.get("trial") if searched else request
    if not isinstance(trial, Mapping) or not isinstance(trial.get("command"), str):
        return None
    command = str(trial["command"])
    try:
        words = tuple(shlex.split(command))
    except ValueError:
        words = tuple(command.split())
    words, exported = _exports(words)
    resources = request.get("resources") or trial.get("resources") or {}
    nodes = int(resources.get("instance_count", 1) or 1)
    gpus = _gpus(str(resources.get("instance_type", "")))
    env = {**exported, **env_list(request.get("environment_variables") or trial.get("environment_variables") or {})}
    distribution = request.get("distribution") or trial.get("distribution") or {}
    inputs = {**(request.get("inputs") or {}), **(trial.get("inputs") or {})}
    outputs = {**(request.get("outputs") or {}), **(trial.get("outputs") or {})}
    own = {platform.RUN_ID} | {f"AZUREML_PARAMETER_{k}" for k in inputs}
    node = _node(words, distribution, gpus, nodes, env, frozenset(own))
    found = [attrs.evolve(node, count=1)] + ([attrs.evolve(node, role="workers", count=nodes - 1)] if nodes > 1 else [])
    image, registry = _image(request.get("environment") or trial.get("environment"))
    pullable = registry not in PULLABLE_NOT
    return World(
        platform=platform.NAME,
        image=WorldImage(uri=image, registry=registry, pullable=pullable,
                         why="" if pullable else "Amazon ECR needs AWS credentials an Azure ML job cannot name"),
        nodes=found, data=_data(inputs, outputs, node),
        hyperparameters=(ARGV if "search_space." in command else f"env {platform.SWEEP_PREFIX}*") if searched else "",
        metric=platform.METRICS if searched else "",
    )


def _exports(words: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    """A command line that starts with ``export K=V …;`` (how omnidist names data for the runtime):
    the command after it, and the variables it sets."""
    found: dict[str, str] = {}
    while words[:1] == ("export",):
        end = next((i for i, w in enumerate(words) if w.endswith(";") or w in ("&&", ";")), None)
        if end is None:
            break
        for word in words[1:end + 1]:
            key, eq, value = word.rstrip(";").partition("=")
            if eq:
                found[key] = value
        words = words[end + 1:]
        if words[:1] in (("&&",), (";",)):
            words = words[1:]
    return words, found


def _gpus(sku: str) -> int:
    from omnidist_azure_ml import catalog

    machine = catalog.lookup(sku) if sku else None
    return machine.gpus if machine is not None else 0


def _node(words: tuple[str, ...], distribution: Mapping[str, Any], gpus: int, nodes: int, env: Mapping[str, str],
          own: frozenset[str]) -> WorldNode:
    kind = str(distribution.get("type", "")).lower()
    per_node = int(distribution.get("process_count_per_instance", 1) or 1)
    argv = ("/bin/sh", "-c", shlex.join(words))
    if kind == "pytorch":
        return WorldNode(role="primary", count=nodes, argv=argv, launcher=StartedBy.PLATFORM, processes=per_node,
                         program=words, platform_env=own | PYTORCH_VARIABLES, env=dict(env))
    if kind == "mpi":
        batch = frozenset({platform.MPI_MASTER_NODE, platform.HOST_LIST})
        return WorldNode(role="primary", count=nodes, argv=argv, launcher=StartedBy.MPIRUN, processes=per_node,
                         program=words, platform_env=own | MPI_VARIABLES | batch, env=dict(env))
    if kind == "tensorflow":
        own = own | {tf_config.VARIABLE}
    node = launched(words, gpus, nodes, own=own, env=env)
    return attrs.evolve(node, argv=argv)


def _image(environment: Any) -> tuple[str, str]:
    if isinstance(environment, Mapping):
        if environment.get("image"):
            return str(environment["image"]), registry_of(str(environment["image"]))
        return "(an environment built from its Dockerfile or conda file)", "azureml-environment"
    if isinstance(environment, str) and environment:
        return environment, "azureml-environment" if environment.startswith("azureml:") else registry_of(environment)
    return "", "azureml-environment"


def _data(inputs: Mapping[str, Any], outputs: Mapping[str, Any], node: WorldNode) -> list[DataPath]:
    found = []
    for kind, declared, default in (("inputs", inputs, "ro_mount"), ("outputs", outputs, "rw_mount")):
        for name, value in declared.items():
            if not isinstance(value, Mapping) or ("path" not in value and kind == "inputs"):
                continue  # a literal (a number, a string): a value, not data
            if str(value.get("type", "uri_folder")) not in ("uri_folder", "uri_file", "mltable", "mlflow_model",
                                                               "custom_model", "triton_model"):
                continue
            given, access = INPUT_MODES.get(str(value.get("mode", default)), ("path", "ro"))
            location = str(value.get("path") or f"(the workspace's default datastore)/{name}")
            found.append(DataPath(location=location, given=given, access=access, where=f"${{{{{kind}.{name}}}}}"))
    found += [DataPath(location=u, given="uri", access="ro", where="argv") for u in uris_in(node.program)]
    return found
