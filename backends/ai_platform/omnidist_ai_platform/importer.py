"""A legacy create body (or a ``trainingInput`` config file) -> a portable job (pure).

The native spec is first read into frozen attrs models through omnidist's one converter, so a
typo or a wrong type is a :class:`~omnidist.errors.ValidationError` naming its field path
(``trainingInput.workerConfig.imageUri``). Then one small function per part turns it into the IR.

What the portable job cannot hold is dropped with a note when the job runs without it (tuning,
an encryption key, queueing settings) and refused when it cannot (a TPU v4, several TPU workers).
Scale tiers other than BASIC become the cluster they ran (:data:`~.catalog.SCALE_TIER_SHAPES`);
K80s, which no cloud sells any more, become the GPU that replaces them, with a ``changed`` note.

A TPU job (SPEC §13) ran as a TPU Node: a master VM running the program and one ``cloud_tpu``
worker that is the TPU (``acceleratorConfig`` TPU_V2/TPU_V3, or their Pod slices). It becomes a
primary whose accelerator is the TPU slice; the master's machine and ``tpuTfVersion`` stay in
``backends.ai_platform``, so compiling it back gives the same body. ``BASIC_TPU`` is the same
layout with the tier's TPU (:data:`~.catalog.TPU_DEFAULT`).

A Python-package job with one package becomes a ``module`` job (SPEC §7): ``pythonModule`` ->
``module``, ``packageUris`` -> ``code``, a runtime version omnidist knows (or Google's prebuilt
PyTorch image) -> ``framework`` + ``framework_version``; ``jobDir`` -> ``outputs: {model:
default}``, the folder kept in ``backends.ai_platform.job_dir``. Older runtime versions and
several packages stay as ``backends.ai_platform`` settings, which compile back exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.kit import (
    REQUEST_ID_LABEL,
    Accelerator,
    CommandLine,
    DistributedJob,
    EffectiveRole,
    Feature,
    Framework,
    Machine,
    Note,
    NoteKind,
    Role,
    RoleName,
    ValidationError,
    cannot_hold,
    delower,
    dropped_note,
    is_package,
    parse_proto_duration,
    portable_name,
    retired_gpu,
    shorten,
    structure,
)
from omnidist_ai_platform import catalog, prebuilt
from omnidist_ai_platform.compiler import derive_job_id
from omnidist_ai_platform.tables import REDUCER_IMAGE, ROLE_PREFIXES, SCALE_TIERS

ACCELERATOR_ENUM: tuple[str, ...] = tuple(sorted(
    {"ACCELERATOR_TYPE_UNSPECIFIED", *catalog.PORTABLE_ACCELERATORS, *catalog.NATIVE_ONLY_ACCELERATORS}))
"""Every ``acceleratorConfig.type`` the ml v1 API defines (a test checks it against the discovery doc)."""

DEFAULT_BOOT_DISK_GB = 100
"""The boot disk of a replica whose ``diskConfig`` names none."""


_ENV_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def _int64(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    # int64 travels as a JSON string or number; the converter turned numbers into strings.
    if value is not None and not re.fullmatch(r"\d+", value):
        raise ValidationError(f"expected a whole number >= 0, got {value!r}", path=attribute.name)


def _argv(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if isinstance(value, str):
        raise ValidationError("expected a list of strings, got one string", path=attribute.name)


def _enum(choices: tuple[str, ...]) -> Any:
    def check(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
        if value is not None and value not in choices:
            raise ValidationError(f"{value!r} is not one of {', '.join(choices)}", path=attribute.name)
    return check


@attrs.frozen(kw_only=True)
class NativeAccelerator:
    """``AcceleratorConfig``."""

    count: Optional[str] = attrs.field(default=None, validator=_int64)
    type: Optional[str] = attrs.field(default=None, validator=_enum(ACCELERATOR_ENUM))


@attrs.frozen(kw_only=True)
class NativeDisk:
    """``DiskConfig``."""

    bootDiskSizeGb: Optional[int] = None  # noqa: N815 - the API's spelling
    bootDiskType: Optional[str] = None  # noqa: N815


@attrs.frozen(kw_only=True)
class NativeReplica:
    """``ReplicaConfig``."""

    acceleratorConfig: Optional[NativeAccelerator] = None  # noqa: N815
    containerArgs: Optional[tuple[str, ...]] = attrs.field(default=None, validator=_argv)  # noqa: N815
    containerCommand: Optional[tuple[str, ...]] = attrs.field(default=None, validator=_argv)  # noqa: N815
    diskConfig: Optional[NativeDisk] = None  # noqa: N815
    imageUri: Optional[str] = None  # noqa: N815
    tpuTfVersion: Optional[str] = None  # noqa: N815


@attrs.frozen(kw_only=True)
class NativeScheduling:
    """``Scheduling``."""

    maxRunningTime: Optional[str] = None  # noqa: N815
    maxWaitTime: Optional[str] = None  # noqa: N815
    priority: Optional[int] = None


@attrs.frozen(kw_only=True)
class NativeTrainingInput:
    """``TrainingInput`` (every field the ml v1 API defines)."""

    args: Optional[tuple[str, ...]] = attrs.field(default=None, validator=_argv)
    enableWebAccess: Optional[bool] = None  # noqa: N815
    encryptionConfig: Optional[dict[str, Any]] = None  # noqa: N815
    evaluatorConfig: Optional[NativeReplica] = None  # noqa: N815
    evaluatorCount: Optional[str] = attrs.field(default=None, validator=_int64)  # noqa: N815
    evaluatorType: Optional[str] = None  # noqa: N815
    hyperparameters: Optional[dict[str, Any]] = None
    jobDir: Optional[str] = None  # noqa: N815
    masterConfig: Optional[NativeReplica] = None  # noqa: N815
    masterType: Optional[str] = None  # noqa: N815
    network: Optional[str] = None
    packageUris: Optional[tuple[str, ...]] = attrs.field(default=None, validator=_argv)  # noqa: N815
    parameterServerConfig: Optional[NativeReplica] = None  # noqa: N815
    parameterServerCount: Optional[str] = attrs.field(default=None, validator=_int64)  # noqa: N815
    parameterServerType: Optional[str] = None  # noqa: N815
    pythonModule: Optional[str] = None  # noqa: N815
    pythonVersion: Optional[str] = None  # noqa: N815
    region: Optional[str] = None
    runtimeVersion: Optional[str] = None  # noqa: N815
    scaleTier: Optional[str] = attrs.field(default=None, validator=_enum(SCALE_TIERS))  # noqa: N815
    scheduling: Optional[NativeScheduling] = None
    serviceAccount: Optional[str] = None  # noqa: N815
    useChiefInTfConfig: Optional[bool] = None  # noqa: N815
    workerConfig: Optional[NativeReplica] = None  # noqa: N815
    workerCount: Optional[str] = attrs.field(default=None, validator=_int64)  # noqa: N815
    workerType: Optional[str] = None  # noqa: N815


@attrs.frozen(kw_only=True)
class NativeJob:
    """``Job``: the create body, or what ``jobs.get`` returns (its output-only fields are ignored)."""

    jobId: Optional[str] = None  # noqa: N815
    labels: dict[str, str] = attrs.field(factory=dict)
    trainingInput: Optional[NativeTrainingInput] = None  # noqa: N815
    predictionInput: Optional[dict[str, Any]] = None  # noqa: N815
    createTime: Any = None  # noqa: N815
    endTime: Any = None  # noqa: N815
    errorMessage: Any = None  # noqa: N815
    etag: Any = None
    jobPosition: Any = None  # noqa: N815
    predictionOutput: Any = None  # noqa: N815
    startTime: Any = None  # noqa: N815
    state: Any = None
    trainingOutput: Any = None  # noqa: N815


@attrs.frozen(kw_only=True)
class NativePool:
    """One role as the native spec gives it, resolved: machine, count, what each replica runs."""

    role: RoleName
    machine_type: Optional[str]
    machine: Optional[Machine]
    replicas: int
    accelerator: Optional[Accelerator]
    image: Optional[str]
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: dict[str, str]
    disk_gb: Optional[int]


def parse(request: Mapping[str, Any]) -> NativeJob:
    """Read a create body, a ``{trainingInput: …}`` config, or a bare ``TrainingInput`` mapping."""
    if not isinstance(request, Mapping):
        raise ValidationError("a legacy job spec is a mapping with a trainingInput key")
    fields = {a.name for a in attrs.fields(NativeTrainingInput)}
    bare = request.keys() & fields and not request.keys() & {"jobId", "labels"}
    if "trainingInput" not in request and bare:
        request = {"trainingInput": request}
    native = structure(request, NativeJob)
    if native.predictionInput is not None:
        raise cannot_hold("predictionInput", "this is a batch prediction job, not a training job.",
                          "Import training jobs only.")
    if native.trainingInput is None:
        raise ValidationError("required: a training job has a trainingInput", path="trainingInput")
    return native


TUNING_ENUMS: dict[str, tuple[str, ...]] = {
    "algorithm": ("ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"),
    "goal": ("GOAL_TYPE_UNSPECIFIED", "MAXIMIZE", "MINIMIZE"),
    "scaleType": ("NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"),
    "type": ("PARAMETER_TYPE_UNSPECIFIED", "CATEGORICAL", "DISCRETE", "DOUBLE", "INTEGER"),
}
"""The enums of ``HyperparameterSpec`` and ``ParameterSpec`` (ml v1 discovery document)."""


def _check_tuning(tuning: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``params`` of ``hyperparameters``, after the enum checks the API makes (exit 2)."""
    params = tuning.get("params") or []
    if not isinstance(params, list) or not all(isinstance(p, dict) for p in params):
        raise ValidationError("expected a list of parameter specs", path="trainingInput.hyperparameters.params")
    places = [("", tuning, ("algorithm", "goal"))] + [(f".params[{i}]", p, ("scaleType", "type"))
                                                      for i, p in enumerate(params)]
    for where, spec, keys in places:
        for key in keys:
            if spec.get(key) is not None and spec[key] not in TUNING_ENUMS[key]:
                raise ValidationError(f"{spec[key]!r} is not one of {', '.join(TUNING_ENUMS[key])}",
                                      path=f"trainingInput.hyperparameters{where}.{key}")
    return params


def tuning_notes(ti: NativeTrainingInput) -> list[Note]:
    """What importing a tuning job leaves out: the search (the job runs once, as it is)."""
    tuning = ti.hyperparameters
    if tuning is None:
        return []
    names = [str(p.get("parameterName")) for p in _check_tuning(tuning)]
    searched = f"{len(names)} parameter(s) ({shorten(names, 48)})" if names else "the search"
    return [dropped_note("hyperparameters", f"{searched}: hyperparameter tuning is not imported; the job runs once, "
                                       "without the --NAME=VALUE arguments each trial was given")]


def unportable(ti: NativeTrainingInput) -> list[Note]:
    """Drop (with a note) what the job runs without."""
    notes = tuning_notes(ti)
    if ti.encryptionConfig:
        notes.append(dropped_note("encryptionConfig", f"{shorten(ti.encryptionConfig)}: the customer-managed key "
                                                 "is not carried; set the target's own key"))
    return notes


def tier_to_custom(ti: NativeTrainingInput, notes: list[Note]) -> NativeTrainingInput:
    """A scale tier other than BASIC as the CUSTOM cluster it ran (Google's documented shape)."""
    shape = catalog.SCALE_TIER_SHAPES.get(ti.scaleTier or "")
    if shape is None:
        return ti
    fields: dict[str, Any] = {}
    for prefix, machine, count in shape:
        fields[f"{prefix}Type"] = getattr(ti, f"{prefix}Type") or machine
        if prefix != "master":
            fields[f"{prefix}Count"] = getattr(ti, f"{prefix}Count") or str(count)
    cluster = ", ".join(f"{count} × {machine}" for _, machine, count in shape)
    notes.append(Note(kind=NoteKind.APPROXIMATED, field="scaleTier",
                      message=f"{ti.scaleTier} became the cluster Google documents for it ({cluster}), written "
                              "as machine types (scaleTier CUSTOM)"))
    return attrs.evolve(ti, scaleTier="CUSTOM", **fields)


def unwrap_env(command: Optional[tuple[str, ...]]) -> tuple[tuple[str, ...], dict[str, str]]:
    """``env A=1 B=2 cmd…`` -> (``cmd…``, ``{A: 1, B: 2}``): the compiler's env workaround, undone."""
    command = tuple(command or ())
    if len(command) < 3 or command[0] != "env":
        return command, {}
    env: dict[str, str] = {}
    rest = command[1:]
    while rest and (match := _ENV_ASSIGNMENT.match(rest[0])):
        env[match[1]] = match[2]
        rest = rest[1:]
    return (rest, env) if env and rest else (command, {})


def native_accelerator(config: NativeReplica, machine: Optional[Machine], path: str,
                       notes: list[Note]) -> tuple[Optional[Accelerator], bool]:
    """The replica's GPUs: an explicit ``acceleratorConfig`` wins; else the machine's built-in ones.
    Also whether they replace a retired GPU the machine came with (its name then no longer fits)."""
    given = config.acceleratorConfig
    kind, count = (given.type, int(given.count or 1)) if given and given.type not in (
        None, "ACCELERATOR_TYPE_UNSPECIFIED") else (None, 0)
    builtin = kind is None and machine is not None and bool(machine.accelerator)
    if builtin:
        kind, count = machine.accelerator, machine.gpus
        kind = next((n for n, p in catalog.PORTABLE_ACCELERATORS.items() if p == kind), kind)
        path = path.replace("Config.acceleratorConfig", "Type")
    if kind is None or count == 0:
        return None, False
    what = catalog.NATIVE_ONLY_ACCELERATORS.get(kind)
    if what == "TPU":
        raise ValidationError(f"{kind} is a TPU: it goes on a {catalog.TPU_MACHINE} replica", path=path)
    if what is not None:
        return retired_gpu(what, count, path, notes), builtin
    return Accelerator(type=catalog.PORTABLE_ACCELERATORS[kind], count=count), False


def tpu_accelerator(config: NativeReplica, path: str, notes: list[Note]) -> Accelerator:
    """The TPU slice a ``cloud_tpu`` replica is: its ``acceleratorConfig``, else the default device."""
    given = config.acceleratorConfig
    if given is None or given.type in (None, "ACCELERATOR_TYPE_UNSPECIFIED"):
        kind, count = catalog.TPU_DEFAULT
        notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{path}.acceleratorConfig", message=(
            f"no acceleratorConfig: one {kind} device of {count} cores, what a {catalog.TPU_MACHINE} worker gets "
            "by default (unconfirmed)")))
    else:
        kind, count = given.type, int(given.count or 1)
    if kind not in catalog.PORTABLE_TPUS:
        if catalog.NATIVE_ONLY_ACCELERATORS.get(kind) == "TPU":
            raise cannot_hold(f"accelerator {kind}", "it has no portable accelerator name (the portable TPUs are "
                              "TPU-V2, TPU-V3, TPU-V5E and TPU-V6E).", "Move the job to one of those TPUs first.",
                              feature=Feature.ACCELERATOR)
        raise ValidationError(f"{kind} is not a TPU; a {catalog.TPU_MACHINE} replica takes TPU_V2, TPU_V3 or their "
                              "Pod slices", path=f"{path}.acceleratorConfig.type")
    try:
        return Accelerator(type=catalog.PORTABLE_TPUS[kind], count=count)
    except ValidationError as exc:
        raise ValidationError(exc.problems[0].message, path=f"{path}.acceleratorConfig.count") from None


def tpu_layout(ti: NativeTrainingInput, notes: list[Note]) -> tuple[NativeTrainingInput, Optional[Accelerator]]:
    """A TPU job's slice, and ``ti`` with the TPU worker taken out (the master runs the program).

    Raises:
        NotPortableError: several TPU workers (several TPU devices; the portable job holds one slice).
    """
    if ti.scaleTier == "BASIC_TPU":
        kind, count = catalog.TPU_DEFAULT
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="scaleTier", message=(
            f"BASIC_TPU: a master and one {kind} device of {count} cores (the tier's TPU, unconfirmed), imported "
            f"as primary.accelerator {catalog.PORTABLE_TPUS[kind]}:{count}; backends.ai_platform.scale_tier keeps "
            "the tier")))
        return ti, Accelerator(type=catalog.PORTABLE_TPUS[kind], count=count)
    if ti.masterType == catalog.TPU_MACHINE:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="trainingInput.masterType", message=(
            f"{catalog.TPU_MACHINE} master: imported as the primary's TPU; compiled back, a master VM runs the program "
            f"beside one {catalog.TPU_MACHINE} worker")))
        tpu = tpu_accelerator(ti.masterConfig or NativeReplica(), "trainingInput.masterConfig", notes)
        return attrs.evolve(ti, masterType=None, masterConfig=attrs.evolve(
            ti.masterConfig or NativeReplica(), acceleratorConfig=None, tpuTfVersion=None)), tpu
    if ti.workerType != catalog.TPU_MACHINE:
        return ti, None
    count = int(ti.workerCount or 0)
    if count > 1:
        raise cannot_hold("trainingInput.workerCount", f"{count} {catalog.TPU_MACHINE} workers are {count} TPU "
                          "devices, and a portable job trains on one TPU slice.",
                          "Use one worker with a Pod slice (acceleratorConfig TPU_V3_POD, count 32…).")
    tpu = tpu_accelerator(ti.workerConfig or NativeReplica(), "trainingInput.workerConfig", notes) if count else None
    return attrs.evolve(ti, workerType=None, workerCount=None, workerConfig=None), tpu


def native_to_pool(ti: NativeTrainingInput, role: RoleName, notes: list[Note]) -> Optional[NativePool]:
    """One role's ``<prefix>Type/Count/Config``, resolved against the catalog; ``None`` when absent."""
    prefix = ROLE_PREFIXES[role]
    type_name = getattr(ti, f"{prefix}Type")
    config: NativeReplica = getattr(ti, f"{prefix}Config") or NativeReplica()
    replicas = 1 if role is RoleName.PRIMARY else int(getattr(ti, f"{prefix}Count") or 0)
    path = f"trainingInput.{prefix}Type"
    if replicas == 0:
        if type_name:
            notes.append(Note(kind=NoteKind.HINT, field=path, message=f"{type_name} for {prefix}Count 0: no "
                                                                      f"{role.value.replace('_', ' ')} run"))
        return None
    if config.tpuTfVersion and type_name != catalog.TPU_MACHINE:
        notes.append(dropped_note(f"trainingInput.{prefix}Config.tpuTfVersion", (
            f"{config.tpuTfVersion}: the runtime of a {catalog.TPU_MACHINE} replica, and this one is "
            f"{type_name or 'not one'}: nothing runs it")))
    machine = catalog.MACHINES.get(type_name) if type_name else None
    if type_name and machine is None:
        raise ValidationError(f"{type_name!r} is not a machine type legacy AI Platform accepted"
                              f"{catalog.MACHINES.suggest(type_name)}", path=path)
    custom = (ti.scaleTier or "CUSTOM") == "CUSTOM"
    if type_name is None and custom and (role is not RoleName.PRIMARY or ti.scaleTier):
        raise ValidationError(f"required with scaleTier CUSTOM when {prefix} replicas are asked for",
                              path=path)
    disk = config.diskConfig
    if disk and disk.bootDiskType not in (None, "pd-ssd"):
        notes.append(Note(kind=NoteKind.DROPPED, field=f"trainingInput.{prefix}Config.diskConfig.bootDiskType",
                          message=f"{disk.bootDiskType}: the portable job gives only the boot disk size (other clouds "
                                  "use SSD boot disks)"))
    accelerator, replaced = native_accelerator(config, machine, f"trainingInput.{prefix}Config.acceleratorConfig",
                                               notes)
    if replaced:  # the legacy name meant its retired GPU: run the same machine with the new one
        type_name = catalog.compute_engine_name(type_name)
    command, env = unwrap_env(config.containerCommand)
    return NativePool(
        role=role, machine_type=type_name, machine=machine, replicas=replicas, accelerator=accelerator,
        image=config.imageUri, command=command, env=env, disk_gb=disk.bootDiskSizeGb if disk else None,
        args=config.containerArgs if config.containerArgs is not None else tuple(ti.args or ()))


def native_to_role(pool: NativePool, master: NativePool) -> EffectiveRole:
    """One role as its replicas run it, every value spelled out (worker, parameter-server and
    evaluator images default to the master's natively)."""
    machine = pool.machine
    return EffectiveRole(
        name=pool.role, replicas=pool.replicas, accelerator=pool.accelerator,
        cpus=machine.vcpus if machine else None, memory_gb=machine.memory_gb if machine else None,
        disk_gb=pool.disk_gb, image=pool.image or master.image, command=pool.command, args=pool.args,
        env=pool.env)


def reducers_to_role(pool: NativePool) -> Role:
    """A parameter-server slot holding the Reduction Server image -> ``reduction_servers``."""
    return Role(replicas=pool.replicas, cpus=pool.machine.vcpus if pool.machine else None,
                memory_gb=pool.machine.memory_gb if pool.machine else None,
                image=None if pool.image == REDUCER_IMAGE else pool.image)


def name_from_job_id(job_id: Optional[str], notes: list[Note]) -> tuple[str, Optional[str]]:
    """The portable name for a ``jobId``, and the id to pin when the name does not give it back."""
    if not job_id:
        notes.append(Note(kind=NoteKind.DEFAULTED, field="name",
                          message="the file has no jobId (gcloud takes it on the command line); "
                                  "named imported-job"))
        return "imported-job", None
    name = portable_name(job_id.replace("_", "-")) or "imported-job"  # the compiler's derive_job_id, undone
    return name, (None if derive_job_id(name) == job_id else job_id)


def backend_block(ti: NativeTrainingInput, pools: dict[RoleName, NativePool],
                  pinned: Optional[str], tpu_tf_version: Optional[str] = None) -> dict[str, Any]:
    """The ``backends.ai_platform`` settings that make compiling the job give this spec back."""
    block: dict[str, Any] = {
        "tpu_tf_version": tpu_tf_version,
        "region": ti.region, "job_id": pinned,
        "scale_tier": ti.scaleTier if ti.scaleTier not in (None, "CUSTOM") else None,
        "machine_types": {r.value: p.machine_type for r, p in pools.items() if p.machine_type} or None,
        "runtime_version": ti.runtimeVersion, "python_version": ti.pythonVersion,
        "python_module": ti.pythonModule, "package_uris": list(ti.packageUris) if ti.packageUris else None,
        "job_dir": ti.jobDir, "service_account": ti.serviceAccount, "network": ti.network,
        "enable_web_access": ti.enableWebAccess or None,
        "use_chief_in_tf_config": (ti.useChiefInTfConfig and RoleName.REDUCTION_SERVERS not in pools) or None,
    }
    return {k: v for k, v in block.items() if v is not None}


PYTORCH_VERSION_OF = {image: version for version, images in prebuilt.PYTORCH_IMAGES.items() for image in images}
"""A prebuilt PyTorch image -> its version."""


def package_job(
    ti: NativeTrainingInput, pools: dict[RoleName, NativePool]
) -> tuple[dict[str, Any], NativeTrainingInput, dict[RoleName, NativePool]]:
    """The portable ``module``, ``code``, ``framework`` and ``framework_version`` of a job that
    runs one Python package, with ``ti`` and the pools left holding only what they do not say.
    Nothing for a container job, several packages, or a runtime version omnidist does not know."""
    packages = ti.packageUris or ()
    if not (ti.pythonModule and len(packages) == 1 and is_package(packages[0])):
        return {}, ti, pools
    fields: dict[str, Any] = {"module": ti.pythonModule, "code": packages[0]}
    ti = attrs.evolve(ti, pythonModule=None, packageUris=None)
    images = {pool.image for role, pool in pools.items() if role is not RoleName.REDUCTION_SERVERS}
    if ti.runtimeVersion in prebuilt.RUNTIME_VERSIONS and images == {None}:
        fields.update(framework=Framework.TENSORFLOW, framework_version=ti.runtimeVersion)
        python = ti.pythonVersion if ti.pythonVersion != prebuilt.RUNTIME_VERSIONS[ti.runtimeVersion] else None
        return fields, attrs.evolve(ti, runtimeVersion=None, pythonVersion=python), pools
    versions = {PYTORCH_VERSION_OF.get(image or "") for image in images}
    if ti.runtimeVersion is None and len(versions) == 1 and None not in versions:
        fields.update(framework=Framework.PYTORCH, framework_version=versions.pop())
        pools = {role: pool if role is RoleName.REDUCTION_SERVERS else attrs.evolve(pool, image=None)
                 for role, pool in pools.items()}
    return fields, ti, pools


def job_dir_outputs(ti: NativeTrainingInput, notes: list[Note]) -> dict[str, Any]:
    """``model: default`` for a ``jobDir`` (the output place a module job's ``default`` outputs go under)."""
    if not ti.jobDir:
        return {}
    notes.append(Note(kind=NoteKind.APPROXIMATED, field="trainingInput.jobDir", message=(
        f"{ti.jobDir}: the service passes it to the program as --job-dir; imported as outputs.model (default), which "
        "each backend puts in its own output place. Other clouds pass no --job-dir: add [--job-dir, "
        "${{outputs.model}}] to args, or read omnidist.runtime.context().model_dir")))
    return {"model": "default"}


def job_notes(ti: NativeTrainingInput, pools: dict[RoleName, NativePool], framework: Framework,
              module_job: bool = False) -> list[Note]:
    """What the importer could not carry exactly, or the user must add before compiling elsewhere."""
    notes = [Note(kind=NoteKind.HINT, field="framework",
                  message="runtimeVersion jobs run Google's TensorFlow runtime images; imported as "
                          "tensorflow")
             ] if framework is Framework.TENSORFLOW and ti.runtimeVersion else []
    package = bool(ti.runtimeVersion or ti.pythonModule or ti.packageUris)
    if package:
        module = ti.pythonModule or "MODULE"
        notes.append(
            Note(
                kind=NoteKind.HINT,
                field="image",
                message=(
                    f"a Python-package job (runtime {ti.runtimeVersion or 'default'}, module "
                    f"{ti.pythonModule or 'from the command line'}) keeps its settings in backends.ai_platform; "
                    "compiling for another cloud needs an image: "
                    "set image: to a training container with the package installed and command: "
                    f"[python, -m, {module}] "
                    "(migrate: --image, --command)"
                ),
            )
        )
    elif not pools[RoleName.PRIMARY].image and not module_job:
        notes.append(Note(kind=NoteKind.HINT, field="image",
                          message="no masterConfig.imageUri (gcloud takes --master-image-uri); set image: "
                                  "before compiling"))
    if ti.args and not package and not module_job:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="args",
                          message="trainingInput.args became the job's args; omnidist compiles them as each "
                                  "replica's containerArgs (the same arguments to the entrypoint)"))
    if ti.scaleTier is None and ti.masterType:
        notes.append(Note(kind=NoteKind.DEFAULTED, field="backends.ai_platform.scale_tier",
                          message="no scaleTier; CUSTOM assumed because masterType is set"))
    scheduling = ti.scheduling or NativeScheduling()
    for key in ("maxWaitTime", "priority"):
        if getattr(scheduling, key) is not None:
            notes.append(dropped_note(f"trainingInput.scheduling.{key}",
                                 f"{getattr(scheduling, key)}: the portable job has no queueing setting"))
    return notes


def import_with_notes(request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
    """Turn a legacy spec into a portable job, with notes on what did not carry over exactly.

    Args:
        request: the body of ``projects.jobs.create`` (``{jobId, labels, trainingInput}``), a
            ``gcloud … --config`` file's content (``{trainingInput: …}``), a bare ``TrainingInput``,
            or a ``gcloud ai-platform jobs submit training`` command line.

    Returns:
        The job, and the notes (``migrate`` reports them).

    Raises:
        ValidationError: malformed input, naming the field path.
        NotPortableError: something the portable job cannot hold (a TPU v4, a GPU model without a
            portable name…).
    """
    from omnidist_ai_platform import tuning

    if isinstance(request, CommandLine):
        from omnidist_ai_platform import gcloud

        request = gcloud.command_to_request(request)
    if tuning.split(request)[1] is not None:  # the tuning block, then the rest of the body
        return tuning.import_with_tuning(request, import_with_notes)
    native = parse(request)
    notes = unportable(native.trainingInput)
    ti = tier_to_custom(native.trainingInput, notes)
    tpu_tf_version = (ti.workerConfig or NativeReplica()).tpuTfVersion if ti.workerType == catalog.TPU_MACHINE else (
        (ti.masterConfig or NativeReplica()).tpuTfVersion)
    ti, tpu = tpu_layout(ti, notes)
    hostless = tpu is not None and ti.masterType is None  # a cloud_tpu master: no VM of its own to name
    pools = {role: pool for role in (RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS,
                                     RoleName.EVALUATORS)
             if (pool := native_to_pool(attrs.evolve(ti, scaleTier=None) if hostless and role is RoleName.PRIMARY
                                        else ti, role, notes))}
    if tpu is not None:  # the master runs the program on the TPU: the portable primary holds the slice
        pools[RoleName.PRIMARY] = attrs.evolve(pools[RoleName.PRIMARY], accelerator=tpu)
    servers = pools.get(RoleName.PARAMETER_SERVERS)
    if servers and servers.image and "reductionserver" in servers.image.rsplit("/", 1)[-1]:
        pools[RoleName.REDUCTION_SERVERS] = attrs.evolve(pools.pop(RoleName.PARAMETER_SERVERS),
                                                         role=RoleName.REDUCTION_SERVERS)
    package, ti, pools = package_job(ti, pools)
    master = pools[RoleName.PRIMARY]
    trainers: dict[RoleName, EffectiveRole] = {role: native_to_role(pool, master) for role, pool in pools.items()
                if role is not RoleName.REDUCTION_SERVERS}  # reducers run Google's image, without env
    found = delower(trainers, unset={"disk_gb": DEFAULT_BOOT_DISK_GB})
    reducers = pools.get(RoleName.REDUCTION_SERVERS)
    if reducers is not None:
        roles = {**found.roles, RoleName.REDUCTION_SERVERS: reducers_to_role(reducers)}
        found = attrs.evolve(found, roles=roles)
    name, pinned = name_from_job_id(native.jobId, notes)
    # Legacy specs do not name the framework: custom unless a TF runtime version (or a TPU worker's) says so
    # (omnidist.migration infers it from images and roles, and reports that).
    framework = package.pop("framework", None) or (
        Framework.TENSORFLOW if ti.runtimeVersion or tpu_tf_version else Framework.CUSTOM)
    notes += job_notes(ti, pools, framework, bool(package))
    outputs = job_dir_outputs(ti, notes)
    block = backend_block(ti, pools, pinned, tpu_tf_version)
    if ti.scaleTier is None and not ti.masterType:
        block["scale_tier"] = "BASIC"  # the API's default tier
    max_running = (ti.scheduling or NativeScheduling()).maxRunningTime
    job = DistributedJob(
        name=name, framework=framework, **found.job_fields(),
        timeout=None if max_running is None else parse_proto_duration(
            max_running, "trainingInput.scheduling.maxRunningTime"),
        labels={k: v for k, v in native.labels.items() if k != REQUEST_ID_LABEL},  # a fetched job's marker
        backends={"ai_platform": block} if block else {}, outputs=outputs, **package)
    return job, tuple(notes)
