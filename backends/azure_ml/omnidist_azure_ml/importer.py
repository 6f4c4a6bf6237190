"""Azure ML command job YAML (as parsed) -> portable job. Pure: no network, no SDK import.

Reads what ``az ml job create --file`` takes: inline image environments become the job's
``image``; registered/curated environments, the compute, SKU, shm size and other
Azure-only settings go to ``backends.azure_ml``. The job's tables in :mod:`.backend` are
read backwards (derived inverses), so import cannot drift from compile. The ``OMNIDIST_*``
hints compile adds are used to recover what Azure cannot say (deepspeed vs pytorch, the
processes a custom launcher starts) and then dropped.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist import importing, serde
from omnidist.backend import Note, NoteKind
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.job import AUTO, Accelerator, DistributedJob, Framework, Interconnect, Role
from omnidist.runtime import hints
from omnidist.runtime.launch import is_launch_command

from omnidist_azure_ml import catalog
from omnidist_azure_ml.backend import (
    DISTRIBUTION_FRAMEWORKS, FRAMEWORK_DISTRIBUTIONS, LAUNCHES_OWN_PROCESSES, NAME, PARAMETER_SERVERS_ADD_NODES,
    UNSUPPORTED_NATIVE_KEYS,
)

PORTABLE = "the portable job format"
FALLBACK_NAME = "azure-ml-job"
DISTRIBUTION_KEYS: dict[str, tuple[str, ...]] = {
    "mpi": ("process_count_per_instance",),
    "pytorch": ("process_count_per_instance",),
    "tensorflow": ("parameter_server_count", "worker_count"),
}
"""The settings each distribution type has; others are dropped with a note (the SDK drops them)."""
_SHELL_OPERATOR = re.compile(r"^[();<>|&]+$")
_SHELL_EXPANSION = re.compile(r"\$(?!\{\{)|`")


@attrs.frozen(kw_only=True)
class NativeResources:
    """``resources`` of a command job (the keys omnidist carries)."""

    instance_count: int = 1
    instance_type: Optional[str] = None
    shm_size: Optional[str] = None
    docker_args: Optional[str] = None


@attrs.frozen(kw_only=True)
class NativeLimits:
    """``limits``: the timeout in seconds (a duration such as 24h is read too)."""

    timeout: Optional[Any] = None


@attrs.frozen(kw_only=True)
class NativeQueue:
    """``queue_settings``."""

    job_tier: Optional[str] = None
    priority: Optional[str] = None


@attrs.frozen(kw_only=True)
class NativeCommandJob:
    """A command job file; unknown keys are errors with their path, Azure keys the portable job
    cannot hold are refused through :data:`UNSUPPORTED_NATIVE_KEYS`."""

    command: str
    type: str = "command"
    name: Optional[str] = None
    display_name: Optional[str] = None
    experiment_name: Optional[str] = None
    description: Optional[str] = None
    code: Optional[str] = None
    inputs: dict[str, Any] = attrs.field(factory=dict)
    environment: Any = None
    compute: Optional[str] = None
    resources: NativeResources = attrs.field(factory=NativeResources)
    distribution: Optional[dict[str, Any]] = None
    environment_variables: dict[str, str] = attrs.field(factory=dict)
    limits: NativeLimits = attrs.field(factory=NativeLimits)
    queue_settings: NativeQueue = attrs.field(factory=NativeQueue)
    tags: dict[str, str] = attrs.field(factory=dict)


_SECTIONS = ("limits", "queue_settings", "resources")


def _refuse(feature: str, hint: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(feature, PORTABLE, f"it is an Azure ML feature with no portable equivalent "
                                   f"(importing from {NAME}).", hint)


def parse(request: Mapping[str, Any]) -> NativeCommandJob:
    """Check the shape of a command job file and read it into :class:`NativeCommandJob`."""
    if not isinstance(request, Mapping):
        raise ValidationError(f"a command job file is a mapping of keys, got {type(request).__name__}")
    kind = request.get("type", "command")
    if not isinstance(kind, str) or kind.lower() != "command":
        raise UnsupportedFeatureError(f"job type {kind!r}", NAME, "omnidist reads Azure ML command jobs only.",
                                      "Export the training step as a `type: command` job.")
    for dotted, hint in UNSUPPORTED_NATIVE_KEYS.items():
        head, _, tail = dotted.partition(".")
        section = request.get(head) if tail else request
        if isinstance(section, Mapping) and (tail or head) in section:
            raise _refuse(dotted, hint)
    data = {k: v for k, v in request.items() if k != "$schema" and not (k in _SECTIONS and v is None)}
    for key in _SECTIONS:  # serde cannot report a nested class given a non-mapping (it raises AttributeError)
        if key in data and not isinstance(data[key], Mapping):
            raise ValidationError(f"expected a mapping, got {type(data[key]).__name__}", path=key)
    return serde.structure(data, NativeCommandJob)


def import_command_job(request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
    """The portable job for one command job file, and notes on what was inferred or dropped."""
    native = parse(request)
    notes: list[Note] = []
    env = dict(native.environment_variables)
    framework, per_node = native_to_framework(native.distribution, env, notes)
    command = native_to_command(native.command, notes)
    if is_launch_command(command) and framework is not Framework.HOROVOD:
        per_node = _hinted_processes(env) or per_node  # Azure starts 1 per node; the launcher starts the rest
    sku = catalog.lookup(native.resources.instance_type) if native.resources.instance_type else None
    accelerator = _accelerator(sku, native, notes)
    nodes, servers = native_to_nodes(native.distribution, native.resources.instance_count)
    env = _strip_tuning(hints.strip(env), sku)
    image, environment = native_to_environment(native.environment)
    default_per_node = accelerator.count if accelerator else 1
    job = DistributedJob(
        name=native_to_name(native, notes),
        framework=framework,
        image=image,
        command=command,
        env=env,
        primary=Role(accelerator=accelerator),
        workers=Role(replicas=nodes - 1) if nodes > 1 else None,
        parameter_servers=Role(replicas=servers) if servers else None,
        processes_per_node=AUTO if per_node in (None, default_per_node) else per_node,
        interconnect=Interconnect.INFINIBAND if sku is not None and sku.infiniband and nodes > 1 else Interconnect.ANY,
        spot=(native.queue_settings.job_tier or "").lower() == "spot",
        timeout=native_to_timeout(native.limits.timeout),
        labels=dict(native.tags),
        backends=_settings_block(native, environment, sku),
    )
    return job, tuple(notes)


def native_to_framework(distribution: Optional[Mapping[str, Any]], env: Mapping[str, str],
                        notes: list[Note]) -> tuple[Framework, Optional[int]]:
    """The framework (the hint wins when it compiles to the same distribution) and processes per node."""
    hinted = env.get(hints.FRAMEWORK)
    hinted_framework = Framework(hinted) if hinted in {f.value for f in Framework} else None
    if distribution is None:
        return Framework.CUSTOM, _hinted_processes(env)
    kind = distribution.get("type")
    if not isinstance(kind, str) or kind.lower() not in DISTRIBUTION_FRAMEWORKS:
        raise UnsupportedFeatureError(f"distribution type {kind!r}", PORTABLE,
                                      f"omnidist reads {', '.join(DISTRIBUTION_FRAMEWORKS)} distributions.",
                                      "Rewrite the job for PyTorch, MPI (Horovod) or TensorFlow distribution.")
    kind = kind.lower()
    for key in sorted(set(distribution) - set(DISTRIBUTION_KEYS[kind]) - {"type"}):
        notes.append(Note(kind=NoteKind.DROPPED, field=f"distribution.{key}",
                          message=f"not a {kind} distribution setting; Azure ML ignores it too"))
    framework = DISTRIBUTION_FRAMEWORKS[kind]
    if hinted_framework is not None and FRAMEWORK_DISTRIBUTIONS[hinted_framework] == kind:
        framework = hinted_framework
    if kind == "tensorflow" or framework in LAUNCHES_OWN_PROCESSES:
        return framework, _hinted_processes(env)  # Azure starts one process per node for these
    return framework, _count(distribution, "process_count_per_instance", 1, minimum=1)


def _hinted_processes(env: Mapping[str, str]) -> Optional[int]:
    value = env.get(hints.PROCESSES_PER_NODE, "")
    return int(value) if value.isdigit() and int(value) >= 1 else None


def _count(distribution: Mapping[str, Any], key: str, default: int, minimum: int = 0) -> int:
    value = distribution.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(f"expected a whole number >= {minimum}, got {value!r}", path=f"distribution.{key}")
    return value


def native_to_nodes(distribution: Optional[Mapping[str, Any]], instance_count: int) -> tuple[int, int]:
    """Training nodes (primary + workers) and parameter servers.

    TensorFlow jobs count nodes by ``worker_count``; ``instance_count`` must agree with it
    under :data:`PARAMETER_SERVERS_ADD_NODES` (either convention is read).
    """
    if instance_count < 1:
        raise ValidationError(f"must be >= 1, got {instance_count}", path="resources.instance_count")
    if distribution is None or str(distribution.get("type", "")).lower() != "tensorflow":
        return instance_count, 0
    workers = _count(distribution, "worker_count", instance_count, minimum=1)
    servers = _count(distribution, "parameter_server_count", 0)
    if instance_count not in (workers, workers + servers):
        expected = workers + servers if PARAMETER_SERVERS_ADD_NODES else workers
        raise ValidationError(f"{instance_count} nodes cannot hold worker_count {workers} with "
                              f"parameter_server_count {servers}; use {expected}", path="resources.instance_count")
    return workers, servers


def native_to_environment(environment: Any) -> tuple[Optional[str], Optional[str]]:
    """``(image, registered environment)`` from an inline ``{image: …}`` or an environment reference."""
    if environment is None:
        return None, None
    if isinstance(environment, str):
        return None, environment
    if not isinstance(environment, Mapping):
        raise ValidationError("expected azureml:NAME:VERSION or {image: …}", path="environment")
    extra = sorted(set(environment) - {"image", "name", "version", "description"})
    if extra:
        raise _refuse(f"environment.{extra[0]}", "Build the image yourself and give it as `image`, or register "
                      "the environment and reference it in backends.azure_ml.environment.")
    image = environment.get("image")
    if not isinstance(image, str) or not image:
        raise ValidationError("an inline environment needs an image", path="environment.image")
    return image, None


def native_to_command(command: str, notes: list[Note]) -> tuple[str, ...]:
    """An argv list: shell syntax (operators, ``$VAR``) is kept as ``bash -c '…'`` so it still runs."""
    try:
        lexer = shlex.shlex(command, posix=False, punctuation_chars=True)  # keeps quotes: '&' is an argument
        lexer.whitespace_split = True
        tokens = list(lexer)
        plain = shlex.split(command)
    except ValueError as exc:
        raise ValidationError(f"cannot split the command ({exc})", path="command") from None
    if any(_SHELL_OPERATOR.match(t) for t in tokens) or _has_expansion(command):
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="command",
                          message="the command uses shell syntax; kept whole as `bash -c '…'`"))
        return ("bash", "-c", command)
    return tuple(plain)


def _has_expansion(command: str) -> bool:
    # $VAR outside single quotes would be expanded by Azure's shell; ${{inputs.x}} is Azure's own.
    return any(_SHELL_EXPANSION.search(part) for i, part in enumerate(command.split("'")) if i % 2 == 0)


def native_to_timeout(value: Any) -> Optional[int]:
    """``limits.timeout`` in seconds."""
    return None if value is None else importing.parse_duration(value, "limits.timeout")


def native_to_name(native: NativeCommandJob, notes: Optional[list[Note]] = None) -> str:
    """A portable job name from ``display_name``, ``name`` or ``experiment_name``."""
    return importing.pick_name((native.display_name, native.name, native.experiment_name), fallback=FALLBACK_NAME,
                               missing=f"{FALLBACK_NAME}: the job names itself nowhere", notes=notes)


def _accelerator(sku: Optional[catalog.Sku], native: NativeCommandJob, notes: list[Note]) -> Optional[Accelerator]:
    from omnidist import accelerators

    if sku is None or sku.accelerator not in accelerators.BY_NAME:
        if native.compute or native.resources.instance_type:
            notes.append(Note(kind=NoteKind.HINT, field="primary.accelerator",
                              message="the GPUs are whatever the compute or VM size has; set primary.accelerator "
                                      "to carry them to another cloud"))
        return None
    accelerator = Accelerator(type=sku.accelerator, count=sku.gpus)
    notes.append(Note(kind=NoteKind.DEFAULTED, field="primary.accelerator",
                      message=f"{accelerator} from {sku.name}"))
    return accelerator


def _strip_tuning(env: dict[str, str], sku: Optional[catalog.Sku]) -> dict[str, str]:
    """Drop the InfiniBand variables compile adds for ``sku`` when they hold its values."""
    tuning = catalog.infiniband_env(sku) if sku else {}
    return {k: v for k, v in env.items() if tuning.get(k) != v}


def _settings_block(native: NativeCommandJob, environment: Optional[str],
                    sku: Optional[catalog.Sku]) -> dict[str, dict[str, Any]]:
    name = native_to_name(native)
    compute = native.compute.removeprefix("azureml:") if native.compute else None
    tier = (native.queue_settings.job_tier or "").lower()
    block = {
        "compute": compute,
        "instance_type": sku.name if sku else native.resources.instance_type,
        "environment": environment,
        "shm_size": native.resources.shm_size,
        "docker_args": native.resources.docker_args,
        "experiment_name": native.experiment_name if native.experiment_name != name else None,
        "job_tier": tier if tier and tier != "spot" else None,
        "priority": native.queue_settings.priority,
        "code": native.code,
        "inputs": dict(native.inputs) or None,
    }
    block = {k: v for k, v in block.items() if v is not None}
    return {NAME: block} if block else {}
