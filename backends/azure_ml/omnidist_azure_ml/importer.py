"""Azure ML command job YAML (as parsed) -> portable job. Pure: no network, no SDK import.

Reads what ``az ml job create --file`` takes, what ``job.dump()`` writes (a ``command(...)``
node's ``component`` included) and what the SDK's own ``_to_dict()`` gives for a job object:
inline image environments become the job's ``image``; registered/curated environments, the
compute, SKU, shm size and other Azure-only settings go to ``backends.azure_ml``. The job's
tables in :mod:`.backend` are read backwards (derived inverses), so import cannot drift from
compile. The ``OMNIDIST_*`` hints compile adds are used to recover what Azure cannot say
(deepspeed vs pytorch, the processes a custom launcher starts) and then dropped.

``description``, ``code``, ``inputs`` and ``outputs`` become the portable job's own (SPEC §7):
a data input is ``{uri, mode}`` (a registered asset such as ``azureml:name:1`` stays an
``azureml:`` URI, which only Azure ML reads), a literal input stays a literal, an output without
a path is ``default``; what the portable form has no word for (a data type, a mode) is noted.
What the portable job cannot hold is dropped with a note (:data:`~.tables.UNSUPPORTED_NATIVE_KEYS`,
a conda file or build context): the job still runs without it, and ``migrate --strict`` refuses
to lose it. A command that only a shell runs the same way (several
lines, ``&&``, ``$VAR``) becomes ``bash -c '…'`` with its lines intact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import (
    AUTO,
    RETIRED_GPUS,
    Accelerator,
    DistributedJob,
    Framework,
    Interconnect,
    JobInput,
    JobOutput,
    Note,
    NoteKind,
    Role,
    ValidationError,
    auto_processes,
    cannot_hold,
    check_one_line,
    dropped_note,
    is_data,
    native_duration,
    pick_name,
    portable_env,
    retired_gpu,
    shell_argv,
    shorten,
    structure,
)
from omnidist.runtime import hints
from omnidist.runtime.launch import is_launch_command
from omnidist_azure_ml import catalog, prebuilt
from omnidist_azure_ml.tables import (
    DISTRIBUTION_FRAMEWORKS,
    FRAMEWORK_DISTRIBUTIONS,
    NAME,
    UNSUPPORTED_NATIVE_KEYS,
)

FALLBACK_NAME = "azure-ml-job"
DISTRIBUTION_KEYS: dict[str, tuple[str, ...]] = {
    "mpi": ("process_count_per_instance",),
    "pytorch": ("process_count_per_instance",),
    "tensorflow": ("parameter_server_count", "worker_count"),
}
"""The settings each distribution type has; others are dropped with a note (the SDK drops them)."""

JOB_TYPES: dict[str, str] = {
    "automl": "an AutoML job",
    "command": "",
    "data_transfer": "a data transfer job",
    "import": "a data import job",
    "parallel": "a parallel job",
    "pipeline": "a pipeline job",
    "spark": "a Spark job",
    "sweep": "a sweep (hyperparameter tuning) job",
}
"""``type`` values ``load_job`` takes -> what they are (empty for the one omnidist imports)."""

ENVIRONMENT_KEYS = frozenset({"build", "conda_file", "description", "image", "inference_config", "name", "os_type",
                              "tags", "version"})
"""Keys of an inline environment."""

INPUT_TYPES = frozenset({"custom_model", "mlflow_model", "mltable", "triton_model", "uri_file", "uri_folder"})
"""``type`` of a command job's data input (a literal input is a plain value)."""

INPUT_KEYS = frozenset({"datastore", "description", "mode", "path", "path_on_compute", "type"})
INPUT_MODES = frozenset({"direct", "download", "eval_download", "eval_mount", "ro_mount"})
"""What a command job's data input may say (azure-ai-ml's InputSchema: ``rw_mount`` and
``upload`` are output modes, ``default`` belongs to components)."""

_DATA_EXPORTS = re.compile(r'^export (?:OMNIDIST_(?:INPUT|OUTPUT)_\w+="\$\{\{(?:inputs|outputs)\.\w+\}\}" ?)+; ')
"""The runtime's data hints compile exports at the start of the command (it adds them again)."""

_REFERENCE = re.compile(r"\$\{\{\s*(inputs|outputs|search_space)\.([\w.]+)\s*\}\}")


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
    cannot hold are dropped (with a note) through :data:`UNSUPPORTED_NATIVE_KEYS` first."""

    command: str
    type: str = "command"
    name: Optional[str] = None
    display_name: Optional[str] = None
    experiment_name: Optional[str] = None
    description: Optional[str] = None
    code: Optional[str] = None
    inputs: dict[str, Any] = attrs.field(factory=dict)
    outputs: dict[str, Any] = attrs.field(factory=dict)
    environment: Any = None
    compute: Optional[str] = None
    resources: NativeResources = attrs.field(factory=NativeResources)
    distribution: Optional[dict[str, Any]] = None
    environment_variables: dict[str, str] = attrs.field(factory=dict)
    limits: NativeLimits = attrs.field(factory=NativeLimits)
    queue_settings: NativeQueue = attrs.field(factory=NativeQueue)
    tags: dict[str, str] = attrs.field(factory=dict)


_SECTIONS = ("limits", "queue_settings", "resources")


def check_type(request: Mapping[str, Any]) -> None:
    """A command job (or no ``type``) passes; another Azure job type is refused (exit 3), a
    ``type`` Azure ML does not have is an error (exit 2), as ``load_job`` says."""
    kind = request.get("type", "command")
    if not isinstance(kind, str) or kind.lower() not in JOB_TYPES:
        raise ValidationError(f"{kind!r} is not an Azure ML job type; types: {', '.join(sorted(JOB_TYPES))}",
                              path="type")
    if kind.lower() != "command":
        raise cannot_hold(f"job type {kind}", f"this is {JOB_TYPES[kind.lower()]}; omnidist imports command jobs.",
                          "Export the training step as a `type: command` job.")


def from_component(request: Mapping[str, Any]) -> dict[str, Any]:
    """A ``command(...)`` node as ``dump()`` writes it: the command, code and names sit in its
    ``component``; the node's own values win. The component's input declarations (types and
    defaults) and identity (name, version) describe the component, not the job."""
    component = request.get("component")
    data = {k: v for k, v in request.items() if k != "component"}
    if not isinstance(component, Mapping):
        return data
    for key in ("code", "command", "description", "display_name", "distribution", "environment",
                "environment_variables", "resources", "tags"):
        if component.get(key) not in (None, {}) and data.get(key) in (None, {}):
            data[key] = component[key]
    return data


def without_empty(data: Mapping[str, Any]) -> dict[str, Any]:
    """The SDK's ``_to_dict()`` writes empty ``properties``, ``parameters``, ``tags``…: nothing set."""
    return {k: v for k, v in data.items() if k != "$schema" and v is not None and v != {}}


def drop_extras(data: Mapping[str, Any], notes: list[Note]) -> dict[str, Any]:
    """``data`` without the keys of :data:`UNSUPPORTED_NATIVE_KEYS` it sets, each dropped with a note."""
    data = dict(data)
    for dotted, hint in UNSUPPORTED_NATIVE_KEYS.items():
        head, _, tail = dotted.partition(".")
        section = data.get(head) if tail else data
        key = tail or head
        if isinstance(section, Mapping) and section.get(key) not in (None, {}, [], ""):
            notes.append(dropped_note(dotted, f"{shorten(section[key])}: {hint}"))
            trimmed = {k: v for k, v in section.items() if k != key}
            data = trimmed if not tail else {**data, head: trimmed}
    return data


def parse(request: Mapping[str, Any], notes: list[Note]) -> NativeCommandJob:
    """Check the shape of a command job file and read it into :class:`NativeCommandJob`; what
    the portable job cannot hold is dropped into ``notes``."""
    if not isinstance(request, Mapping):
        raise ValidationError(f"a command job file is a mapping of keys, got {type(request).__name__}")
    check_type(request)
    data = drop_extras(without_empty(from_component(request)), notes)
    for key in _SECTIONS:  # serde cannot report a nested class given a non-mapping (it raises AttributeError)
        if key in data and not isinstance(data[key], Mapping):
            raise ValidationError(f"expected a mapping, got {type(data[key]).__name__}", path=key)
        if key in data:
            data[key] = without_empty(data[key])
    return structure(data, NativeCommandJob)


def import_command_job(request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
    """The portable job for one command job file, and notes on what was inferred or dropped."""
    notes: list[Note] = []
    native = parse(request, notes)
    check_inputs(native.inputs)
    inputs = native_to_inputs(native.inputs, notes)
    outputs = native_to_outputs(native.outputs, notes)
    env = portable_env(native.environment_variables, "environment_variables", notes)
    framework, per_node = native_to_framework(native.distribution, env, notes)
    command = native_to_command(native.command, notes)
    if is_launch_command(command) and framework is not Framework.HOROVOD:
        per_node = _hinted_processes(env) or per_node  # Azure starts 1 per node; the launcher starts the rest
    sku = catalog.lookup(native.resources.instance_type) if native.resources.instance_type else None
    accelerator = _accelerator(sku, native, notes)
    nodes, servers = native_to_nodes(native.distribution, native.resources.instance_count, notes)
    env = _strip_tuning(hints.strip(env), sku)
    image, environment = native_to_environment(native.environment, notes)
    curated = prebuilt.recognize(environment) if environment else None
    framework_version = None
    if curated is not None and prebuilt.ENVIRONMENT_FRAMEWORK.get(framework) is curated[0]:
        framework_version, environment = curated[1], None  # compiling picks the same curated environment
    default_per_node = auto_processes(framework.value, accelerator)
    job = DistributedJob(
        name=native_to_name(native, notes),
        framework=framework,
        image=image,
        command=command,
        env=env,
        description=native.description,
        code=local_code(native.code),
        framework_version=framework_version,
        inputs=inputs,
        outputs=outputs,
        primary=Role(accelerator=accelerator, **native_to_size(sku)),
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
        raise cannot_hold(f"distribution type {kind!r}", f"omnidist reads {', '.join(DISTRIBUTION_FRAMEWORKS)} "
                          "distributions.", "Rewrite the job for PyTorch, MPI (Horovod) or TensorFlow distribution.")
    kind = kind.lower()
    for key in sorted(set(distribution) - set(DISTRIBUTION_KEYS[kind]) - {"type"}):
        notes.append(Note(kind=NoteKind.DROPPED, field=f"distribution.{key}",
                          message=f"not a {kind} distribution setting; Azure ML ignores it too"))
    framework = DISTRIBUTION_FRAMEWORKS[kind]
    if hinted_framework is not None and FRAMEWORK_DISTRIBUTIONS[hinted_framework] == kind:
        framework = hinted_framework
    if kind == "tensorflow":
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


def native_to_nodes(distribution: Optional[Mapping[str, Any]], instance_count: int,
                    notes: list[Note]) -> tuple[int, int]:
    """Training nodes (primary + workers) and parameter servers.

    TensorFlow jobs count nodes by ``worker_count`` (one TensorFlow worker per node, as compiling
    writes them, under :data:`omnidist_azure_ml.tables.PARAMETER_SERVERS_ADD_NODES`). Azure also runs a file whose
    ``instance_count`` is neither: it spreads the tasks over the nodes it has. That file is read
    with a node per worker and a ``changed`` note, not refused.
    """
    if instance_count < 1:
        raise ValidationError(f"must be >= 1, got {instance_count}", path="resources.instance_count")
    if distribution is None or str(distribution.get("type", "")).lower() != "tensorflow":
        return instance_count, 0
    workers = _count(distribution, "worker_count", instance_count, minimum=1)
    servers = _count(distribution, "parameter_server_count", 0)
    if instance_count not in (workers, workers + servers):
        notes.append(Note(kind=NoteKind.CHANGED, field="workers.replicas", message=(
            f"Azure spreads worker_count {workers} and parameter_server_count {servers} over instance_count "
            f"{instance_count} nodes; the portable job gives each worker a node of its own ({workers} nodes)")))
    return workers, servers


def native_to_environment(environment: Any, notes: list[Note]) -> tuple[Optional[str], Optional[str]]:
    """``(image, registered environment)`` from an inline environment or an environment reference.

    An inline environment Azure builds (a conda file on top of the image, a Docker build context)
    is not carried: the image is kept, bare, and the note says what it lacks (``migrate --image``
    gives the image built from it).
    """
    if environment is None:
        return None, None
    if isinstance(environment, str):
        return None, environment
    if not isinstance(environment, Mapping):
        raise ValidationError("expected azureml:NAME:VERSION or {image: …}", path="environment")
    extra = sorted(set(environment) - ENVIRONMENT_KEYS)
    if extra:
        raise ValidationError(f"not a key of an inline environment; keys: {', '.join(sorted(ENVIRONMENT_KEYS))}",
                              path=f"environment.{extra[0]}")
    image = environment.get("image")
    build = environment.get("build")
    if build is not None:
        path = build.get("path") if isinstance(build, Mapping) else build
        notes.append(
            dropped_note(
                "environment.build",
                f"Azure ML builds the image from {path}; other clouds run an image "
                "you build from it: set image: (migrate: --image)",
            )
        )
    elif not isinstance(image, str) or not image:
        raise ValidationError("an inline environment needs an image (or a build context)", path="environment.image")
    if environment.get("conda_file") is not None:
        conda = environment["conda_file"]
        notes.append(
            dropped_note(
                "environment.conda_file",
                f"{conda if isinstance(conda, str) else 'an inline conda file'}: "
                f"Azure ML installs it on top of {image}; other clouds run the "
                "image as it is: set image: to one with the packages "
                "installed (migrate: --image)",
            )
        )
    return (image if build is None else None), None


def check_inputs(inputs: Mapping[str, Any]) -> None:
    """Refuse what ``load_job`` refuses in a command job's inputs (exit 2): a mapping is a data
    input of a known type and mode; a component's ``type: string`` + ``default`` is not one."""
    for name, value in inputs.items():
        if not isinstance(value, Mapping):
            continue
        path = f"inputs.{name}"
        extra = sorted(set(value) - INPUT_KEYS)
        kind, mode = value.get("type", "uri_folder"), value.get("mode")
        if extra:
            raise ValidationError(f"not a key of a job input; keys: {', '.join(sorted(INPUT_KEYS))}",
                                  path=f"{path}.{extra[0]}")
        if not isinstance(kind, str) or kind not in INPUT_TYPES:
            raise ValidationError(f"{kind!r} is not a data input type ({', '.join(sorted(INPUT_TYPES))}); a literal "
                                  "input is written as its value", path=f"{path}.type")
        if mode is not None and (not isinstance(mode, str) or mode not in INPUT_MODES):
            raise ValidationError(f"{mode!r} is not an input mode; modes: {', '.join(sorted(INPUT_MODES))}",
                                  path=f"{path}.mode")


INPUT_MODES_PORTABLE: dict[str, str] = {"direct": "ro_mount", "download": "download", "eval_download": "download",
                                        "eval_mount": "ro_mount", "ro_mount": "ro_mount"}
"""Azure ML input mode -> the portable mode nearest to it (``ro_mount`` and ``download`` are the same)."""


def native_to_inputs(inputs: Mapping[str, Any], notes: list[Note]) -> dict[str, JobInput]:
    """The portable ``inputs``: data as ``{uri, mode}``, literals as they are; each Azure-only
    part (a data type the portable job infers differently, a mode it does not have) noted."""
    from omnidist_azure_ml.code_data import data_type

    found: dict[str, JobInput] = {}
    for name, value in inputs.items():
        path = f"inputs.{name}"
        if not isinstance(value, Mapping):
            literal = str(value).lower() if isinstance(value, bool) else value
            if isinstance(literal, str) and is_data(literal):  # a literal string that reads as a location
                notes.append(Note(kind=NoteKind.APPROXIMATED, field=path, message=(
                    f"{shorten(literal)} is literal text on Azure ML; the portable job reads it as data at "
                    "that location (the program gets the data's path, not the text)")))
            found[name] = JobInput.parse(literal)
            continue
        uri = value.get("path")
        if not isinstance(uri, str) or not uri.strip():
            raise ValidationError("a data input needs a path (a URI, an azureml: asset or a local path)",
                                  path=f"{path}.path")
        mode = value.get("mode") or "ro_mount"  # `mode: null` is Azure's default too
        kind = value.get("type", "uri_folder")
        found[name] = JobInput(uri=uri, mode=INPUT_MODES_PORTABLE[mode])
        if mode != INPUT_MODES_PORTABLE[mode]:
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"{path}.mode", message=(
                f"{mode} became {INPUT_MODES_PORTABLE[mode]}: the portable job mounts or downloads data")))
        if kind != data_type(uri):
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"{path}.type", message=(
                f"{kind}: the portable input is a location; compiled for Azure ML it is declared "
                f"{data_type(uri)}")))
        if value.get("datastore") or value.get("path_on_compute") or value.get("description"):
            extra = [k for k in ("datastore", "path_on_compute", "description") if value.get(k)]
            notes.append(dropped_note(f"{path}.{extra[0]}", f"{shorten(value[extra[0]])}: the portable input "
                                                       "has a location and a mode only"))
    return found


def native_to_outputs(outputs: Mapping[str, Any], notes: list[Note]) -> dict[str, JobOutput]:
    """The portable ``outputs``: a path stays the output's location, no path is ``default`` (the
    workspace's default datastore here, each backend's own output place elsewhere)."""
    found: dict[str, JobOutput] = {}
    for name, value in outputs.items():
        path = f"outputs.{name}"
        value = value if isinstance(value, Mapping) else {"path": value}
        uri = value.get("path")
        found[name] = JobOutput(uri=uri) if isinstance(uri, str) and uri.strip() else JobOutput()
        if value.get("mode") not in (None, "rw_mount"):
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"{path}.mode", message=(
                f"{value['mode']}: the portable output has no mode; Azure ML mounts it read-write")))
        if value.get("type") not in (None, "uri_folder"):
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"{path}.type", message=(
                f"{value['type']}: the portable output is a folder")))
    return found


def native_to_command(command: str, notes: list[Note]) -> tuple[str, ...]:
    """An argv list; a command only a shell runs the same way is kept whole, lines intact, as
    ``bash -c '…'`` (see :func:`omnidist.compiler.commandline.shell_argv`). ``${{ inputs.x }}`` is written
    without spaces, which Azure reads the same, so it stays one word."""
    command = _REFERENCE.sub(lambda m: f"${{{{{m[1]}.{m[2]}}}}}", command)
    command = _DATA_EXPORTS.sub("", command, count=1)
    argv, wrapped = shell_argv(command, "command")
    if wrapped:
        lines = len(command.strip().splitlines())
        what = f"{lines} lines" if lines > 1 else "shell syntax"
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="command",
                          message=f"the command has {what} (Azure ML runs it in a shell); kept whole as `bash -c "
                                  "'…'` so that it runs the same"))
    return argv


def native_to_size(sku: Optional[catalog.Sku]) -> dict[str, Any]:
    """The vCPUs and memory of the VM size the job ran on (none for an unknown or retired one)."""
    if sku is None or _retired(sku):
        return {}
    return {"cpus": sku.vcpus, "memory_gb": sku.memory_gb}


def native_to_timeout(value: Any) -> Optional[int]:
    """``limits.timeout`` in seconds."""
    return None if value is None else native_duration(value, "limits.timeout")


def native_to_name(native: NativeCommandJob, notes: Optional[list[Note]] = None) -> str:
    """A portable job name from ``display_name``, ``name`` or ``experiment_name``."""
    return pick_name((native.display_name, native.name, native.experiment_name), fallback=FALLBACK_NAME,
                               missing=f"{FALLBACK_NAME}: the job names itself nowhere", notes=notes)


GPU_SKU = re.compile(r"^Standard_N", re.IGNORECASE)
"""Azure's GPU VM sizes are its N series (NC, ND, NV…)."""

GPU_WORDS = re.compile(r"gpu|tesla|[kpv]100|[ah]100|h200|k80|(^|[-_])(t4|nc\d+|nd\d+|nv\d+)", re.IGNORECASE)
"""Words in a compute cluster's name that say its nodes have GPUs (``gpu-cluster``, ``a100-4-pi``,
``low-pri-nc24s``)."""


def _looks_like_gpus(native: NativeCommandJob) -> Optional[str]:
    """Why the nodes probably have GPUs although omnidist cannot tell which (``None``: no sign)."""
    sku, compute = native.resources.instance_type or "", native.compute or ""
    per_node = (native.distribution or {}).get("process_count_per_instance")
    if GPU_SKU.match(sku):
        return f"{sku} is an N-series (GPU) VM size omnidist does not know"
    if GPU_WORDS.search(compute.removeprefix("azureml:")):
        return f"the compute {compute} is named for GPUs"
    if isinstance(per_node, int) and per_node > 1:
        return f"the job starts {per_node} processes per node"
    return None


def _accelerator(sku: Optional[catalog.Sku], native: NativeCommandJob, notes: list[Note]) -> Optional[Accelerator]:
    from omnidist.kit import ACCELERATORS_BY_NAME

    if sku is None and native.resources.instance_type:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="resources.instance_type",
                          message=f"{native.resources.instance_type} is not in omnidist's catalog: its vCPUs, memory "
                                  "and GPUs are unknown, so other clouds get their default machine"))
    if sku is not None and sku.accelerator in RETIRED_GPUS:
        return retired_gpu(sku.accelerator, sku.gpus, "resources.instance_type", notes)
    if sku is None or sku.accelerator not in ACCELERATORS_BY_NAME:
        gpus = _looks_like_gpus(native)
        if gpus:
            notes.append(Note(kind=NoteKind.CHANGED, field="primary.accelerator",
                              message=f"{gpus}: the job's GPUs cannot be named, so other clouds run it without GPUs; "
                                      "name them to keep them: omnidist migrate --accelerator TYPE:COUNT (per role: "
                                      "workers=TYPE:COUNT), or set primary.accelerator after omnidist import"))
        elif native.compute:
            notes.append(Note(kind=NoteKind.HINT, field="primary.accelerator",
                              message=f"the machines are whatever the compute {native.compute} has; to carry its "
                                      "GPUs to another cloud, name them: omnidist migrate --accelerator TYPE:COUNT, or "
                                      "set primary.accelerator (and cpus, memory_gb) after omnidist import"))
        return None
    accelerator = Accelerator(type=sku.accelerator, count=sku.gpus)
    notes.append(Note(kind=NoteKind.DEFAULTED, field="primary.accelerator",
                      message=f"{accelerator} from {sku.name}"))
    return accelerator


def _strip_tuning(env: dict[str, str], sku: Optional[catalog.Sku]) -> dict[str, str]:
    """Drop the InfiniBand variables compile adds for ``sku`` when they hold its values."""
    tuning = catalog.infiniband_env(sku) if sku else {}
    return {k: v for k, v in env.items() if tuning.get(k) != v}


def _retired(sku: Optional[catalog.Sku]) -> bool:
    """A SKU whose GPUs were replaced on import: its name no longer fits the job."""
    return sku is not None and sku.accelerator in RETIRED_GPUS


def local_code(code: Optional[str]) -> Optional[str]:
    """The code folder; the SDK's ``_to_dict()`` writes a local one as ``azureml:./src``, which
    ``load_job`` would read as a registered asset, so the prefix goes."""
    if code and code.startswith("azureml:."):
        return code.removeprefix("azureml:")
    return code


def _settings_block(native: NativeCommandJob, environment: Optional[str],
                    sku: Optional[catalog.Sku]) -> dict[str, dict[str, Any]]:
    for key in ("compute", "experiment_name"):  # names, quoted in remarks and requests: one line each
        check_one_line(getattr(native, key), key)
    check_one_line(native.resources.instance_type, "resources.instance_type")
    name = native_to_name(native)
    compute = native.compute.removeprefix("azureml:") if native.compute else None
    tier = (native.queue_settings.job_tier or "").lower()
    block = {
        "compute": compute,
        "instance_type": (sku.name if sku else native.resources.instance_type) if not _retired(sku) else None,
        "environment": environment,
        "shm_size": native.resources.shm_size,
        "docker_args": native.resources.docker_args,
        "experiment_name": native.experiment_name if native.experiment_name != name else None,
        "job_tier": tier if tier and tier != "spot" else None,
        "priority": native.queue_settings.priority,
    }
    block = {k: v for k, v in block.items() if v is not None}
    return {NAME: block} if block else {}
