"""Vertex AI native specs -> portable job. Pure: no network, no SDK import.

These inputs are understood:

- a ``CustomJob`` as the REST API returns it (int64 as strings or numbers, enums as names or
  numbers; output-only fields such as ``state`` and ``createTime`` are ignored);
- a ``CustomJobSpec`` as ``gcloud ai custom-jobs create --config`` takes it (top-level
  ``workerPoolSpecs``, a list or, as gcloud also reads it, one mapping);
- a ``HyperparameterTuningJob``: its ``trialJobSpec`` is the job (see :func:`tuning_notes`);
- any of these with protobuf's field names (``worker_pool_specs``, ``machine_spec``…), which
  protobuf's JSON parsers take as well as the JSON names;
- ``--worker-pool-spec`` flag strings, and a ``gcloud ai custom-jobs create …`` command line
  (:mod:`.gcloud`).

A ``pythonPackageSpec`` job becomes a ``module`` job (SPEC §7): ``pythonModule`` -> ``module``,
its one ``packageUris`` entry -> ``code``, and a prebuilt ``executorImageUri`` -> ``framework`` +
``framework_version`` (any other executor image stays the job's ``image``). ``baseOutputDirectory``
-> ``outputs: {model: default}`` (Vertex's ``AIP_MODEL_DIR`` is ``<base>/model``), its folder kept
in ``backends.vertex.base_output_dir``; a spec omnidist compiled says its outputs in its hints.

The machine types go into ``backends.vertex.machine_types`` so a Vertex -> Vertex round trip
is exact, and each role records the vCPUs and memory of its machine; the ``OMNIDIST_*`` runtime
hints are read (framework, processes per node) and dropped. A TPU pool (SPEC §13) becomes the
primary's TPU slice: ``cloud-tpu`` + ``TPU_V2``/``TPU_V3`` + cores, or a TPU VM machine
(``ct5lp-hightpu-*``, ``ct6e-standard-*``) + ``tpuTopology``; its machine is kept only where the
compiler would not pick it again. A field the portable job cannot hold is dropped with a note when
the job still runs without it (:data:`DROPPED_FIELDS`), and refused
(:class:`~omnidist.errors.NotPortableError`, exit 3) when it cannot (TPUs without a portable name,
several packages).
"""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import attrs

from omnidist.kit import (
    REQUEST_ID_LABEL,
    Accelerator,
    CommandLine,
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
    dropped_note,
    is_package,
    job_from_dict,
    native_text,
    parse_proto_duration,
    pick_name,
    proto_json_keys,
    retired_gpu,
    shorten,
)
from omnidist.runtime import hints
from omnidist_google.compute_engine import compute_engine_shape
from omnidist_google.tpu import (
    HOSTS_BY_NAME as TPU_HOSTS_BY_NAME,
)
from omnidist_google.tpu import (
    is_default_host as is_default_tpu_host,
)
from omnidist_google.tpu import (
    slice_from_host,
    tpu_slice,
)
from omnidist_vertex import gcloud, prebuilt
from omnidist_vertex.tables import (
    ACCELERATOR_BY_NUMBER,
    DEFAULT_REGION,
    PORTABLE_ACCELERATORS,
    PORTABLE_CLOUD_TPUS,
    REDUCTION_SERVER_IMAGE,
    RETIRED_ACCELERATORS,
    ROLES_AT,
    STRATEGY_BY_NUMBER,
    TPU_MACHINE,
    TPU_VM_ACCELERATORS,
    multi_region,
    reduction_server_image,
)

DEFAULT_BOOT_DISK_GB = 100
"""Vertex's boot disk when a pool names none."""
DEFAULT_BOOT_DISK_TYPE = "pd-ssd"
"""Vertex's boot disk type when a pool names none."""

FIELDS: dict[str, frozenset[str]] = {
    "CustomJob": frozenset({"displayName", "encryptionSpec", "jobSpec", "labels"}),
    "CustomJobSpec": frozenset({
        "baseOutputDirectory", "enableDashboardAccess", "enableWebAccess", "experiment", "experimentRun",
        "models", "network", "persistentResourceId", "protectedArtifactLocationId", "pscInterfaceConfig",
        "reservedIpRanges", "scheduling", "serviceAccount", "tensorboard", "workerPoolSpecs"}),
    "ContainerSpec": frozenset({"args", "command", "env", "imageUri"}),
    "DiskSpec": frozenset({"bootDiskSizeGb", "bootDiskType"}),
    "HyperparameterTuningJob": frozenset({
        "displayName", "encryptionSpec", "labels", "maxFailedTrialCount", "maxTrialCount",
        "parallelTrialCount", "studySpec", "trialJobSpec"}),
    "MachineSpec": frozenset({
        "acceleratorCount", "acceleratorType", "gpuPartitionSize", "machineType", "reservationAffinity",
        "tpuTopology"}),
    "Scheduling": frozenset({"disableRetries", "maxWaitDuration", "restartJobOnWorkerRestart", "strategy",
                             "timeout"}),
    "WorkerPoolSpec": frozenset({
        "containerSpec", "diskSpec", "lustreMounts", "machineSpec", "nfsMounts", "pythonPackageSpec",
        "replicaCount"}),
    "PythonPackageSpec": frozenset({"args", "env", "executorImageUri", "packageUris", "pythonModule"}),
}
"""Each message -> the fields a user may write (aiplatform v1; a test checks them against the SDK).
A field outside them is an error naming it, as protobuf's parser reports it."""

OUTPUT_ONLY = frozenset({"createTime", "endTime", "error", "name", "satisfiesPzi", "satisfiesPzs", "startTime",
                         "state", "trials", "updateTime", "webAccessUris"})
"""Fields the API fills in; a job read back from it carries them, and they are ignored."""

DROPPED_FIELDS: dict[str, str] = {
    "enableDashboardAccess": "the dashboard of a running job is Vertex's own",
    "experiment": "Vertex AI Experiments tracking is Vertex's own; log to the target's tracking instead",
    "experimentRun": "Vertex AI Experiments tracking is Vertex's own; log to the target's tracking instead",
    "gpuPartitionSize": "GPU partitions are Vertex's own: the role gets whole GPUs",
    "lustreMounts": "Lustre shares are not mounted elsewhere: mount the share from the training code",
    "maxWaitDuration": "the portable job has no limit on the time spent waiting for capacity",
    "models": "registering the trained model is Vertex's own; register it on the target",
    "nfsMounts": "NFS shares are not mounted elsewhere: mount the share from the training code",
    "protectedArtifactLocationId": "where Vertex keeps the job's artifacts is Vertex's own",
    "pscInterfaceConfig": "a Private Service Connect interface is Vertex networking: set up the target's "
                          "network to reach the same hosts",
    "reservationAffinity": "Compute Engine reservations belong to this project",
    "reservedIpRanges": "reserved IP ranges are Vertex networking",
}
"""Fields the job runs without, which the portable job cannot hold -> why (dropped with a note)."""


@attrs.frozen(kw_only=True)
class NativePool:
    """One non-empty ``WorkerPoolSpec``, with types normalized."""

    index: int
    machine_type: str
    accelerator: Optional[Accelerator]
    replicas: int
    image: Optional[str]
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: dict[str, str]
    disk_type: Optional[str]
    disk_gb: Optional[int]
    module: Optional[str] = None
    """``pythonPackageSpec.pythonModule`` (a Python-package pool)."""
    packages: tuple[str, ...] = ()
    """``pythonPackageSpec.packageUris``."""


# --- scalars ------------------------------------------------------------------------------------


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"expected a mapping, got {type(value).__name__}", path=path)
    return value


def _int(value: Any, path: str, default: Optional[int] = None) -> Optional[int]:
    """int64 arrives as a JSON string or a number."""
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, str))
        or (isinstance(value, str) and not value.isdigit())
    ):
        raise ValidationError(f"expected a whole number (or its string), got {value!r}", path=path)
    return int(value)


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"expected a non-empty string, got {value!r}", path=path)
    return value


def _strings(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError("expected a list of strings", path=path)
    return tuple(value)


def _enum_name(value: Any, by_number: Mapping[int, str], path: str) -> str:
    """An enum given by name or by number (the REST API's ``enum-encoding=int``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value not in by_number:
            raise cannot_hold(f"{path} = {value}", f"enum number {value} is not one omnidist knows.")
        return by_number[value]
    return _str(value, path)


def _known(data: Mapping[str, Any], message: str, path: str, *, also: frozenset[str] = frozenset()) -> None:
    """Refuse a field ``message`` does not have (exit 2), as protobuf's JSON parser does."""
    for key in data:
        if key not in FIELDS[message] and key not in also:
            close = difflib.get_close_matches(str(key), sorted(FIELDS[message]), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            where = f"{path}.{key}" if path else str(key)
            raise ValidationError(f"not a field of {message}{hint}", path=where)


def drop_extras(data: Mapping[str, Any], path: str, notes: list[Note]) -> None:
    """Note every field of :data:`DROPPED_FIELDS` that ``data`` sets (to anything but its default)."""
    for key, why in DROPPED_FIELDS.items():
        if data.get(key) not in (None, False, "", [], {}, 0, "0"):
            notes.append(dropped_note(f"{path}.{key}" if path else key, f"{shorten(data[key])}: {why}"))


# --- pools --------------------------------------------------------------------------------------


def _accelerator(machine: Mapping[str, Any], path: str, notes: list[Note]) -> Optional[Accelerator]:
    """A pool's GPUs (a retired GPU is replaced, with a ``changed`` note) or TPU slice."""
    raw = machine.get("acceleratorType")
    machine_type = machine.get("machineType")
    if machine_type in TPU_HOSTS_BY_NAME or machine.get("tpuTopology"):
        return _tpu_vm(machine, path)
    if raw in (None, 0, "ACCELERATOR_TYPE_UNSPECIFIED"):
        return None
    name = _enum_name(raw, ACCELERATOR_BY_NUMBER, f"{path}.acceleratorType")
    count = _int(machine.get("acceleratorCount"), f"{path}.acceleratorCount", default=1)
    if count < 1:
        raise ValidationError("must be >= 1 when acceleratorType is set", path=f"{path}.acceleratorCount")
    if name in PORTABLE_CLOUD_TPUS:
        if machine_type != TPU_MACHINE:
            raise ValidationError(f"{name} runs on the {TPU_MACHINE} machine, not {machine_type}",
                                  path=f"{path}.machineType")
        return _portable_slice(PORTABLE_CLOUD_TPUS[name], count, None, f"{path}.acceleratorCount")
    if name.startswith("TPU_"):
        raise cannot_hold(f"accelerator {name}", "it has no portable accelerator name (the portable TPUs are "
                          "TPU-V2, TPU-V3, TPU-V5E and TPU-V6E).", "Move the job to one of those TPUs first.",
                          feature=Feature.ACCELERATOR)
    if name in RETIRED_ACCELERATORS:
        return retired_gpu(RETIRED_ACCELERATORS[name], count, f"{path}.acceleratorType", notes)
    if name not in PORTABLE_ACCELERATORS:
        raise cannot_hold(f"accelerator {name}", "it has no portable accelerator name.",
                          f"Portable accelerators: {', '.join(sorted(PORTABLE_ACCELERATORS.values()))}.")
    return Accelerator(type=PORTABLE_ACCELERATORS[name], count=count)


def _tpu_vm(machine: Mapping[str, Any], path: str) -> Accelerator:
    """The slice a TPU VM pool runs: its machine's TPU, as many chips as ``tpuTopology`` lays out."""
    machine_type, topology = machine.get("machineType"), machine.get("tpuTopology")
    if machine_type not in TPU_HOSTS_BY_NAME:
        raise cannot_hold(f"{path}.machineType {machine_type}", "its TPU has no portable accelerator name (the "
                          "portable TPU VMs are TPU-V5E and TPU-V6E: ct5lp-hightpu-* and ct6e-standard-*).",
                          "Move the job to one of those TPUs first.", feature=Feature.ACCELERATOR)
    if TPU_HOSTS_BY_NAME[machine_type].accelerator not in TPU_VM_ACCELERATORS:
        raise cannot_hold(f"{path}.machineType {machine_type}", f"Vertex custom training does not run "
                          f"{TPU_HOSTS_BY_NAME[machine_type].accelerator} (its TPU VMs are "
                          f"{', '.join(sorted(TPU_VM_ACCELERATORS))}).", "Import it from GKE, or move the job to "
                          "one of those TPUs first.", feature=Feature.ACCELERATOR)
    if topology is not None and not isinstance(topology, str):
        raise ValidationError(f"expected a topology such as 4x4, got {topology!r}", path=f"{path}.tpuTopology")
    try:
        return slice_from_host(machine_type, topology)
    except ValueError as exc:
        raise ValidationError(str(exc), path=f"{path}.tpuTopology") from None


def _portable_slice(kind: str, count: int, topology: Optional[str], path: str) -> Accelerator:
    try:
        return Accelerator(type=kind, count=count, topology=topology)
    except ValidationError as exc:
        raise ValidationError(exc.problems[0].message, path=path) from None


def _machine_setting(pool: NativePool) -> Optional[str]:
    """The machine ``backends.vertex.machine_types`` keeps for a pool: every GPU or CPU machine; a
    TPU pool's only where compiling the slice would not pick it again."""
    accelerator = pool.accelerator
    if accelerator is None or not accelerator.tpu:
        return pool.machine_type
    if pool.machine_type == TPU_MACHINE:
        return None
    return None if is_default_tpu_host(tpu_slice(accelerator, pool.machine_type)) else pool.machine_type


def _env(value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise ValidationError("expected a list of {name, value}", path=path)
    env = {}
    for i, item in enumerate(value):
        item = _mapping(item, f"{path}[{i}]")
        env[_str(item.get("name"), f"{path}[{i}].name")] = str(item.get("value", ""))
    return env


def native_to_pool(data: Any, index: int, path: str, notes: list[Note]) -> Optional[NativePool]:
    """One ``WorkerPoolSpec`` (``None`` for a skipped ``{}`` pool)."""
    data = _mapping(data, path)
    if not data:
        return None
    _known(data, "WorkerPoolSpec", path)
    package = data.get("pythonPackageSpec")
    if package and data.get("containerSpec"):
        raise ValidationError(
            "a pool runs a containerSpec or a pythonPackageSpec, not both", path=f"{path}.pythonPackageSpec"
        )
    machine = _mapping(data.get("machineSpec"), f"{path}.machineSpec")
    if package:
        return _package_pool(data, machine, index, path, notes)
    container = _mapping(data.get("containerSpec"), f"{path}.containerSpec")
    disk = _mapping(data.get("diskSpec") or {}, f"{path}.diskSpec")
    for part, message, where in ((machine, "MachineSpec", "machineSpec"), (container, "ContainerSpec", "containerSpec"),
                                 (disk, "DiskSpec", "diskSpec")):
        _known(part, message, f"{path}.{where}")
    drop_extras(data, path, notes)
    drop_extras(machine, f"{path}.machineSpec", notes)
    return NativePool(
        index=index,
        machine_type=_str(machine.get("machineType"), f"{path}.machineSpec.machineType"),
        accelerator=_accelerator(machine, f"{path}.machineSpec", notes),
        replicas=_int(data.get("replicaCount"), f"{path}.replicaCount", default=1),
        image=_str(container.get("imageUri"), f"{path}.containerSpec.imageUri"),
        command=_strings(container.get("command"), f"{path}.containerSpec.command"),
        args=_strings(container.get("args"), f"{path}.containerSpec.args"),
        env=_env(container.get("env"), f"{path}.containerSpec.env"),
        disk_type=disk.get("bootDiskType") or None,
        disk_gb=_int(disk.get("bootDiskSizeGb"), f"{path}.diskSpec.bootDiskSizeGb"),
    )


def _package_pool(data: Mapping[str, Any], machine: Mapping[str, Any], index: int, path: str,
                  notes: list[Note]) -> NativePool:
    """A pool that installs ``packageUris`` on ``executorImageUri`` and runs ``python -m pythonModule``."""
    where = f"{path}.pythonPackageSpec"
    package = _mapping(data["pythonPackageSpec"], where)
    disk = _mapping(data.get("diskSpec") or {}, f"{path}.diskSpec")
    for part, message, at in ((machine, "MachineSpec", f"{path}.machineSpec"), (package, "PythonPackageSpec", where),
                              (disk, "DiskSpec", f"{path}.diskSpec")):
        _known(part, message, at)
    packages = _strings(package.get("packageUris"), f"{where}.packageUris")
    if not packages:
        raise ValidationError("required: the Cloud Storage URI of the Python package to install",
                              path=f"{where}.packageUris")
    drop_extras(data, path, notes)
    drop_extras(machine, f"{path}.machineSpec", notes)
    return NativePool(
        index=index,
        machine_type=_str(machine.get("machineType"), f"{path}.machineSpec.machineType"),
        accelerator=_accelerator(machine, f"{path}.machineSpec", notes),
        replicas=_int(data.get("replicaCount"), f"{path}.replicaCount", default=1),
        image=_str(package.get("executorImageUri"), f"{where}.executorImageUri"),
        command=(), args=_strings(package.get("args"), f"{where}.args"), env=_env(package.get("env"), f"{where}.env"),
        disk_type=disk.get("bootDiskType") or None,
        disk_gb=_int(disk.get("bootDiskSizeGb"), f"{path}.diskSpec.bootDiskSizeGb"),
        module=_str(package.get("pythonModule"), f"{where}.pythonModule"), packages=packages)


def _role_of(pool: NativePool, primary_env: Mapping[str, str]) -> RoleName:
    roles = ROLES_AT[pool.index]
    if len(roles) == 1:
        return roles[0]
    told = pool.env.get(hints.POOL2_ROLE) or primary_env.get(hints.POOL2_ROLE)
    if REDUCTION_SERVER_IMAGE.search(pool.image or "") or told == RoleName.REDUCTION_SERVERS.singular:
        return RoleName.REDUCTION_SERVERS
    return RoleName.PARAMETER_SERVERS


# --- assembling the job -------------------------------------------------------------------------


def native_to_role(name: RoleName, pool: NativePool) -> EffectiveRole:
    """One pool as the role it runs, every value spelled out (:func:`~omnidist.compiler.delowering.delower`
    then writes it as differences from what it inherits)."""
    cpus, memory_gb = compute_engine_shape(pool.machine_type) or (None, None)
    return EffectiveRole(name=name, replicas=pool.replicas, accelerator=pool.accelerator, cpus=cpus,
                         memory_gb=memory_gb, disk_gb=pool.disk_gb, image=pool.image, command=pool.command,
                         args=pool.args, env=hints.strip(pool.env))


def pools_to_roles(pools: dict[RoleName, NativePool], region: str = DEFAULT_REGION) -> dict[str, Any]:
    """The job's program, env and roles, each role written as differences from what it inherits."""
    found = delower({name: native_to_role(name, pool) for name, pool in pools.items()},
                              unset={"disk_gb": DEFAULT_BOOT_DISK_GB})
    roles = dict(found.roles)
    reducers = pools.get(RoleName.REDUCTION_SERVERS)
    if reducers is not None:  # reducers run their own program, not the job's
        image = reducers.image if reducers.image != reduction_server_image(region) else None
        roles[RoleName.REDUCTION_SERVERS] = attrs.evolve(
            roles[RoleName.REDUCTION_SERVERS], image=image, command=reducers.command or None,
            args=reducers.args or None)
    return attrs.evolve(found, roles=roles).job_dict()


def package_job(pools: dict[RoleName, NativePool], region: str,
                notes: list[Note]) -> tuple[dict[str, Any], dict[RoleName, NativePool]]:
    """``module``, ``code`` and (on a prebuilt executor image) ``framework`` + ``framework_version``
    of a Python-package job, and the pools without the prebuilt image (compiling picks it again).
    Nothing for a container job; exit 3 when the trainers mix the two or install several packages."""
    trainers = {role: pool for role, pool in pools.items() if role is not RoleName.REDUCTION_SERVERS}
    runs = {(pool.module, pool.packages) for pool in trainers.values()}
    first = next(iter(trainers.values()))
    if len(runs) > 1:
        odd = next(p for p in trainers.values() if (p.module, p.packages) != (first.module, first.packages))
        raise cannot_hold(f"workerPoolSpecs[{odd.index}]", "its pools run different Python packages or mix "
                          "packages and containers, and the portable job has one module and one code package.",
                          "Give every pool the same pythonPackageSpec, or build an image and use containerSpec.")
    if first.module is None:
        return {}, pools
    at = f"workerPoolSpecs[{first.index}].pythonPackageSpec"
    if len(first.packages) > 1:
        raise cannot_hold(f"{at}.packageUris", f"the portable job ships one code package, and this job installs "
                          f"{len(first.packages)} ({shorten(list(first.packages))}).",
                          "Merge them into one source distribution (the others as its install_requires).")
    if not is_package(first.packages[0]):
        raise cannot_hold(f"{at}.packageUris", f"{first.packages[0]} is not a built Python package, and the portable "
                          "job's code for a module is one (a source distribution or a wheel).",
                          "Point packageUris at the package's .tar.gz (python -m build --sdist).")
    fields: dict[str, Any] = {"module": first.module, "code": first.packages[0]}
    found = {prebuilt.recognize(pool.image) for pool in trainers.values()}
    if len(found) != 1 or None in found:
        return fields, pools
    framework, version, _ = found.pop()
    fields.update(framework=framework.value, framework_version=version)
    for pool in trainers.values():
        chosen = prebuilt.image(framework, version, pool.accelerator is not None, multi_region(region))
        if pool.image.removesuffix(":latest") != chosen.removesuffix(":latest"):
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"workerPoolSpecs[{pool.index}].pythonPackageSpec"
                              ".executorImageUri", message=f"{pool.image} became framework_version {version}: the "
                              f"prebuilt image is picked by the job's region and GPUs ({chosen})"))
    return fields, {role: pool if role not in trainers else attrs.evolve(pool, image=None)
                    for role, pool in pools.items()}


_UNPACK = re.compile(r'^set -e; mkdir -p /tmp/omnidist-code; (?:tar -xzf (?P<archive>\S+) -C /tmp/omnidist-code '
                     r'--strip-components=1|cp -R (?P<folder>\S+)/\. /tmp/omnidist-code); cd /tmp/omnidist-code; '
                     r'exec "\$@"$')
"""The line the compiler puts in front of a command job's command to unpack its ``code``."""


def unwrap_code(pools: dict[RoleName, NativePool]) -> tuple[Optional[str], dict[RoleName, NativePool]]:
    """The ``code`` a spec omnidist compiled unpacks before each command, and the pools running
    the command itself (``sh -c 'set -e; …; exec "$@"' omnidist-code CMD…`` -> ``CMD…``)."""
    found: set[str] = set()
    unwrapped = dict(pools)
    for role, pool in pools.items():
        command = pool.command
        match = (
            _UNPACK.match(command[2]) if command[:2] == ("sh", "-c") and command[3:4] == ("omnidist-code",) else None
        )
        if match is None:
            continue
        path = shlex.split(match["archive"] or match["folder"])[0]
        found.add("gs://" + path[len("/gcs/"):] if path.startswith("/gcs/") else path)
        unwrapped[role] = attrs.evolve(pool, command=command[4:])
    trainers = [r for r in pools if r is not RoleName.REDUCTION_SERVERS]
    if len(found) != 1 or any(unwrapped[r] is pools[r] for r in trainers):
        return None, pools  # not omnidist's wrapper on every trainer: the commands stay as written
    return found.pop(), unwrapped


def data_references(primary_env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``inputs`` a spec omnidist compiled names in its hints, and each place -> the
    ``${{inputs.NAME}}`` / ``${{outputs.NAME}}`` reference the compiler replaced with it."""
    if hints.JOB_NAME not in primary_env:
        return {}, {}
    inputs: dict[str, Any] = {}
    places: dict[str, str] = {}
    for variable, value in primary_env.items():
        for prefix, kind in ((hints.INPUT_PREFIX, "inputs"), (hints.OUTPUT_PREFIX, "outputs")):
            if not variable.startswith(prefix):
                continue
            name = variable[len(prefix):]
            located = value.startswith(("/gcs/", "http://", "https://"))
            if kind == "inputs":
                inputs[name] = "gs://" + value[len("/gcs/"):] if value.startswith("/gcs/") else value
            if located:  # a literal's text may be anything: it stays as written
                places[value] = f"${{{{{kind}.{name}}}}}"
    return inputs, places


def _referenced(pool: NativePool, places: Mapping[str, str]) -> NativePool:
    """The pool with each word that is exactly a data place (or ``--flag=place``) written as its reference."""
    def word(text: str) -> str:
        if text in places:
            return places[text]
        flag, equals, value = text.partition("=")
        return f"{flag}={places[value]}" if equals and value in places else text
    return attrs.evolve(pool, command=tuple(map(word, pool.command)), args=tuple(map(word, pool.args)),
                        env={k: v if hints.is_hint(k) else word(v) for k, v in pool.env.items()})


def spec_outputs(spec: Mapping[str, Any], primary_env: Mapping[str, str], notes: list[Note]) -> dict[str, Any]:
    """The job's ``outputs``: those a spec compiled by omnidist names in its hints, else
    ``model: default`` for a ``baseOutputDirectory`` (where Vertex points ``AIP_MODEL_DIR``)."""
    prefix = native_text(_mapping(spec.get("baseOutputDirectory") or {}, "baseOutputDirectory").get("outputUriPrefix"),
                         "baseOutputDirectory.outputUriPrefix")
    if hints.JOB_NAME in primary_env:
        base = f"/gcs/{str(prefix or '').removeprefix('gs://').rstrip('/')}/"
        return {name[len(hints.OUTPUT_PREFIX):]: "default" if value == f"{base}{name[len(hints.OUTPUT_PREFIX):]}"
                else ("gs://" + value[len("/gcs/"):] if value.startswith("/gcs/") else value)
                for name, value in primary_env.items() if name.startswith(hints.OUTPUT_PREFIX)}
    if not prefix:
        return {}
    notes.append(Note(kind=NoteKind.APPROXIMATED, field="baseOutputDirectory", message=(
        f"{prefix}: Vertex gives the program AIP_MODEL_DIR ({prefix.rstrip('/')}/model/) and AIP_CHECKPOINT_DIR and "
        "AIP_TENSORBOARD_LOG_DIR beside it; imported as outputs.model (default), which each backend puts in its own "
        "output place: read omnidist.runtime.context().model_dir or ${{outputs.model}}, which every cloud gives")))
    return {"model": "default"}


def _framework(primary: NativePool, notes: list[Note]) -> str:
    told = primary.env.get(hints.FRAMEWORK)
    if told:
        return told
    # Left to the caller (migrate infers it from the image, and reports that it did).
    notes.append(Note(kind=NoteKind.DEFAULTED, field="framework",
                      message="the spec does not say; custom (set it in the job, or --framework)"))
    return "custom"


DROPPED_SCHEDULING: dict[str, str] = {
    "disableRetries": "Vertex retries a job whose replica failed for a platform reason unless told not to; "
                      "the portable job does not say, so the target retries as it does by default",
}
"""``scheduling`` fields the portable job cannot hold -> why (dropped with a note)."""


def _scheduling(data: Any, job: dict[str, Any], vertex: dict[str, Any], notes: list[Note]) -> None:
    data = _mapping(data or {}, "jobSpec.scheduling")
    _known(data, "Scheduling", "jobSpec.scheduling")
    if data.get("timeout") is not None:
        job["timeout"] = parse_proto_duration(data["timeout"], "jobSpec.scheduling.timeout")
    strategy = _enum_name(
        data.get("strategy", "STRATEGY_UNSPECIFIED"), STRATEGY_BY_NUMBER, "jobSpec.scheduling.strategy"
    )
    if strategy in ("SPOT", "LOW_COST"):
        job["spot"] = True
    elif strategy not in ("STRATEGY_UNSPECIFIED", "STANDARD", "ON_DEMAND"):
        notes.append(Note(kind=NoteKind.CHANGED, field="scheduling.strategy",
                          message=f"{strategy}: the portable job runs on on-demand or spot capacity; it gets "
                                  "on-demand capacity, without queueing for it"))
    for key, why in DROPPED_SCHEDULING.items():
        if data.get(key):
            notes.append(dropped_note(f"scheduling.{key}", f"{shorten(data[key])}: {why}"))
    drop_extras(data, "scheduling", notes)
    if data.get("restartJobOnWorkerRestart"):
        vertex["restart_job_on_worker_restart"] = True


_SPEC_SETTINGS = {
    "enableWebAccess": "enable_web_access",
    "network": "network",
    "persistentResourceId": "persistent_resource_id",
    "serviceAccount": "service_account",
    "tensorboard": "tensorboard",
}
"""``CustomJobSpec`` field -> ``backends.vertex`` key (the ones copied as they are)."""


def _pools(spec: Mapping[str, Any], notes: list[Note]) -> list[Optional[NativePool]]:
    raw = spec.get("workerPoolSpecs")
    if isinstance(raw, Mapping):  # gcloud's parser wraps a lone value of a repeated field in a list
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise ValidationError("expected a non-empty list of worker pools", path="workerPoolSpecs")
    if len(raw) > 4:
        raise ValidationError(f"Vertex has 4 worker pools, got {len(raw)}", path="workerPoolSpecs")
    found = [native_to_pool(p, i, f"workerPoolSpecs[{i}]", notes) for i, p in enumerate(raw)]
    if found[0] is None:
        raise ValidationError("pool 0 (the primary) cannot be empty", path="workerPoolSpecs[0]")
    if found[0].replicas != 1:
        raise ValidationError(f"pool 0 is the primary, so replicaCount must be 1, got {found[0].replicas}",
                              path="workerPoolSpecs[0].replicaCount")
    return found


def boot_disk_type(pools: Mapping[RoleName, NativePool], notes: list[Note]) -> Optional[str]:
    """The one ``backends.vertex.boot_disk_type`` for every pool; pools that asked for another
    type (or left it to Vertex's pd-ssd) get it too, which the note says."""
    kinds = {role: pool.disk_type or DEFAULT_BOOT_DISK_TYPE for role, pool in pools.items()}
    named = [pool.disk_type for pool in pools.values() if pool.disk_type]
    if not named:
        return None
    chosen = named[0]
    for role, kind in kinds.items():
        if kind != chosen:
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"{role.value}.disk",
                              message=f"boot disk {kind} became {chosen}: the portable job gives every role "
                                      "one boot disk type (backends.vertex.boot_disk_type)"))
    return chosen


def spec_to_job(spec: Mapping[str, Any], outer: Mapping[str, Any], notes: list[Note],
                path: str = "jobSpec") -> DistributedJob:
    """A portable job from a ``CustomJobSpec`` (at ``path``) plus the ``CustomJob`` fields around it."""
    _known(spec, "CustomJobSpec", path)
    found = _pools(spec, notes)
    primary = found[0]
    pools = {_role_of(p, primary.env): p for p in found if p is not None}
    machines = {r.value: m for r, p in pools.items() if (m := _machine_setting(p))}
    vertex: dict[str, Any] = {"machine_types": machines,
                              "boot_disk_type": boot_disk_type(pools, notes)}
    name = pick_name((outer.get("displayName"), primary.env.get(hints.JOB_NAME)),
                               fallback="vertex-job", missing="no displayName; called the job 'vertex-job'",
                               notes=notes)
    match = re.match(r"^projects/[^/]+/locations/([^/]+)/", str(outer.get("name") or ""))
    if match:
        vertex["region"] = match[1]
    package, pools = package_job(pools, vertex.get("region", DEFAULT_REGION), notes)
    code, pools = unwrap_code(pools)
    if code:
        package["code"] = code
    inputs, places = data_references(primary.env)
    if places:
        pools = {role: pool if role is RoleName.REDUCTION_SERVERS else _referenced(pool, places)
                 for role, pool in pools.items()}
    if inputs:
        package["inputs"] = inputs
    told = primary.env.get(hints.FRAMEWORK)
    job: dict[str, Any] = {"name": name, **package,
                           "framework": told or package.get("framework") or _framework(primary, notes)}
    job.update(pools_to_roles(pools, vertex.get("region", DEFAULT_REGION)))
    told = primary.env.get(hints.PROCESSES_PER_NODE)
    framework = str(getattr(job["framework"], "value", job["framework"]))
    auto = auto_processes(framework, primary.accelerator)
    if told and told.isdigit() and int(told) != auto:
        job["processes_per_node"] = int(told)
    _scheduling(spec.get("scheduling"), job, vertex, notes)
    vertex.update({key: spec[field] for field, key in _SPEC_SETTINGS.items() if spec.get(field)})
    drop_extras(spec, path, notes)
    if spec.get("baseOutputDirectory"):
        vertex["base_output_dir"] = _mapping(spec["baseOutputDirectory"], "baseOutputDirectory").get("outputUriPrefix")
    outputs = spec_outputs(spec, primary.env, notes)
    if outputs:
        job["outputs"] = outputs
    kms = _mapping(outer.get("encryptionSpec") or {}, "encryptionSpec").get("kmsKeyName")
    if kms:
        vertex["kms_key_name"] = kms
    labels = {k: v for k, v in _mapping(outer.get("labels") or {}, "labels").items() if k != REQUEST_ID_LABEL}
    if labels:
        job["labels"] = labels
    block = {k: v for k, v in vertex.items() if v not in (None, {})}
    if block:
        job["backends"] = {"vertex": block}
    return job_from_dict(job)


# --- tuning jobs ----------------------------------------------------------------------------------

TUNING_FIELDS = ("studySpec", "maxTrialCount", "parallelTrialCount", "maxFailedTrialCount")
"""``HyperparameterTuningJob`` fields that describe the search rather than one trial."""


def tuning_notes(native: Mapping[str, Any]) -> list[Note]:
    """What importing a ``HyperparameterTuningJob`` as its trial job leaves out: the search.

    The trial job runs as it is, with the arguments it has; the values each trial would have
    been given (``--NAME=VALUE``) are not passed.
    """
    return [dropped_note(key, f"{_searched(native[key]) if key == 'studySpec' else native[key]}: hyperparameter tuning "
                         "is not imported; the job runs once, as one trial without the searched values")
            for key in TUNING_FIELDS if native.get(key) is not None]


def _searched(study: Any) -> str:
    """``3 parameter(s) (lr, layers, …), metric f1 MAXIMIZE``: what a ``studySpec`` searches."""
    if not isinstance(study, Mapping):
        return shorten(study)
    params = [p.get("parameterId") for p in study.get("parameters") or [] if isinstance(p, Mapping)]
    metrics = [f"{m.get('metricId')} {m.get('goal', '')}".strip() for m in study.get("metrics") or []
               if isinstance(m, Mapping)]
    return f"{len(params)} parameter(s) ({shorten(params, 48)}), metric {', '.join(metrics) or 'none'}"


def _is_flags(native: Mapping[str, Any]) -> bool:
    """``{"worker_pool_specs": ["machine-type=…", …]}``: gcloud flag strings, not protobuf field names."""
    specs = native.get("worker_pool_specs")
    return "worker_pool_specs" in native and not (
        isinstance(specs, Mapping) or (isinstance(specs, list) and specs and isinstance(specs[0], Mapping)))


def import_native(native: Any) -> tuple[DistributedJob, list[Note]]:
    """Turn any Vertex form into a portable job, with notes on what was defaulted or dropped.

    Raises:
        ValidationError: malformed input, naming the native field path.
        NotPortableError: something the portable job cannot hold (Python packages, TPUs and
            other accelerators without a portable name…).
    """
    notes: list[Note] = []
    if isinstance(native, CommandLine):
        return spec_to_job(*gcloud.command_to_spec(native, notes), notes), notes
    if isinstance(native, Sequence) and not isinstance(native, (str, bytes)):
        return spec_to_job(*gcloud.flags_to_spec({"worker_pool_specs": list(native)}), notes), notes
    native = _mapping(native, "")
    if _is_flags(native):
        return spec_to_job(*gcloud.flags_to_spec(native), notes), notes
    native = proto_json_keys(native)
    if "trialJobSpec" in native or "studySpec" in native:
        _known(native, "HyperparameterTuningJob", "", also=OUTPUT_ONLY)
        notes += tuning_notes(native)
        spec = _mapping(native.get("trialJobSpec"), "trialJobSpec")
        return spec_to_job(spec, native, notes, "trialJobSpec"), notes
    if "jobSpec" in native:
        _known(native, "CustomJob", "", also=OUTPUT_ONLY)
        return spec_to_job(_mapping(native["jobSpec"], "jobSpec"), native, notes), notes
    if "workerPoolSpecs" in native:
        return spec_to_job(native, {}, notes, ""), notes
    raise ValidationError("not a Vertex spec: expected a CustomJob (jobSpec), a CustomJobSpec (workerPoolSpecs), a "
                          "HyperparameterTuningJob (trialJobSpec), {worker_pool_specs: [--worker-pool-spec strings]} "
                          "or a `gcloud ai custom-jobs create` command line")
