"""Code, data and entrypoints on Vertex AI (SPEC §7). Pure: no network, no SDK import.

- Data: Cloud Storage FUSE mounts every bucket at ``/gcs/BUCKET``, so a ``gs://`` input or
  output becomes ``/gcs/BUCKET/PATH`` in command lines; ``default`` outputs go under
  ``baseOutputDirectory`` (``base_output_dir``, else under ``staging_bucket``), where Vertex
  also points ``AIP_MODEL_DIR``; plain ``http(s)`` URLs are passed as they are. Anything else
  (``azureml:``, Azure blob URLs, local paths) is exit 3 unless ``data_map`` rewrites it.
- Code: a ``module`` job with ``code`` runs as a ``pythonPackageSpec`` (the code as a source
  distribution in ``packageUris``, on the job's image or the prebuilt container for
  ``framework_version``); a command job with ``code`` unpacks it from ``/gcs/`` into its
  working directory first (``sh -c``, then ``exec`` of the command). A local folder is
  uploaded to ``staging_bucket`` at submit (:mod:`.staging`).
- No command and no module: ``containerSpec`` has no ``command``, so the image's ENTRYPOINT
  runs with ``args``.
"""

from __future__ import annotations

import shlex
from typing import Any, Optional

import attrs

from omnidist.kit import (
    TRAINING_ROLES,
    DataValues,
    DistributedJob,
    EffectiveRole,
    Feature,
    InputMode,
    JobInput,
    JobOutput,
    Note,
    NoteKind,
    RoleName,
    UnsupportedFeatureError,
    ValidationError,
    apply_data_map,
    code_folder,
    data_hints,
    default_output_base,
    foreign_uri,
    is_package,
    processes_per_node,
    resolve_data,
    staged_code_uri,
    start_processes,
    substituted,
    unknown_version,
    with_module,
)
from omnidist_vertex import prebuilt
from omnidist_vertex.settings import VertexSettings
from omnidist_vertex.tables import NAME, multi_region

BACKEND = NAME
SETTINGS = "backends.vertex"
CODE_DIR = "/tmp/omnidist-code"
"""Where a command job's code is unpacked and run from."""

READS = "Cloud Storage (gs://BUCKET/PATH, mounted at /gcs/BUCKET/PATH) or plain http(s) URLs"


def gcs_path(uri: str) -> str:
    """``gs://BUCKET/PATH`` -> ``/gcs/BUCKET/PATH`` (Cloud Storage FUSE)."""
    return "/gcs/" + uri[len("gs://"):]


@attrs.frozen(kw_only=True)
class Plan:
    """What the compiler needs to place the job's code and data in its worker pools.

    Attributes:
        job: the job after ``data_map``.
        values: each reference -> what the containers see.
        package_uri: ``packageUris[0]`` for a module job with code (a ``pythonPackageSpec``).
        unpack: the shell line that puts the code in :data:`CODE_DIR` for a command job.
        base_output: a ``baseOutputDirectory`` derived from ``staging_bucket`` (None when the
            settings name one, or no output needs it).
    """

    job: DistributedJob
    settings: VertexSettings
    values: DataValues
    package_uri: Optional[str] = None
    unpack: Optional[str] = None
    base_output: Optional[str] = None

    def role(self, role: EffectiveRole, notes: list[Note]) -> EffectiveRole:
        """The role with the entrypoint, references, data hints, prebuilt image and the node's
        processes (SPEC §10: a launcher where the job runs more than one per node) applied."""
        if role.name is RoleName.REDUCTION_SERVERS:
            return role
        role = substituted(with_module(role, self.job), self.values)
        env = {**data_hints(self.values), **role.env}
        image = role.image or self._prebuilt(role)
        command = self._processes(role, notes)
        if self.unpack:
            command = ("sh", "-c", f'set -e; {self.unpack}; cd {CODE_DIR}; exec "$@"', "omnidist-code", *command)
        return attrs.evolve(role, env=env, image=image, command=command)

    def _processes(self, role: EffectiveRole, notes: list[Note]) -> tuple[str, ...]:
        """The command that starts the node's processes: Vertex starts each replica's once."""
        processes = processes_per_node(self.job) if role.name in TRAINING_ROLES else 1
        if self.package_uri is not None and processes > 1:
            raise UnsupportedFeatureError(
                Feature.PROCESSES_PER_NODE, BACKEND, f"{processes} processes per node: the prebuilt container runs "
                f"`python -m {self.job.module}` once per replica, and a Python-package job has no command to put "
                "a launcher in.", "Set processes_per_node: 1, or run the module on an image with omnidist installed "
                "(image: and command: [python, -m, MODULE]).", subject="processes_per_node")
        command, note = start_processes(self.job, role.command, processes, BACKEND)
        if note is not None and role.name is RoleName.PRIMARY:
            notes.append(note)
        return command

    def _prebuilt(self, role: EffectiveRole) -> Optional[str]:
        if not self.job.framework_version:
            return None
        return prebuilt.image(self.job.framework, self.job.framework_version, role.gpus > 0,
                              multi_region(self.settings.region))

    def pool(self, pool: dict[str, Any], role: EffectiveRole) -> dict[str, Any]:
        """A module job with code: the pool's ``containerSpec`` becomes a ``pythonPackageSpec``."""
        if self.package_uri is None or role.name is RoleName.REDUCTION_SERVERS:
            return pool
        container = pool.pop("containerSpec")
        spec: dict[str, Any] = {"executorImageUri": container["imageUri"], "packageUris": [self.package_uri],
                                "pythonModule": self.job.module}
        for key in ("args", "env"):
            if key in container:
                spec[key] = container[key]
        return {**pool, "pythonPackageSpec": spec}

    def spec_extras(self) -> dict[str, Any]:
        """``baseOutputDirectory`` when it was derived from the staging bucket."""
        return {"baseOutputDirectory": {"outputUriPrefix": self.base_output}} if self.base_output else {}


def prepare(job: DistributedJob, settings: VertexSettings, notes: list[Note]) -> tuple[DistributedJob, Plan]:
    """Apply ``data_map``, check the code and the entrypoint, and place every input and output."""
    job, rewrites = apply_data_map(job, settings.data_map)
    notes += rewrites
    _check_entrypoint(job, notes)
    base = _output_base(job, settings, notes)
    values = resolve_data(job, lambda name, inp: _input(name, inp, notes),
                          lambda name, out: _output(name, out, base))
    package_uri, unpack = _code(job, settings, notes)
    if job.description:
        notes.append(Note(kind=NoteKind.DROPPED, field="description", message="Vertex custom jobs have no description"))
    derived = base if base and not settings.base_output_dir else None
    return job, Plan(job=job, settings=settings, values=values, package_uri=package_uri, unpack=unpack,
                     base_output=derived)


def _check_entrypoint(job: DistributedJob, notes: list[Note]) -> None:
    if job.framework_version and job.image:
        notes.append(Note(kind=NoteKind.HINT, field="framework_version",
                          message=f"not used: the job runs its own image {job.image}"))
    if job.framework_version and not job.image and not prebuilt.versions(job.framework):
        raise UnsupportedFeatureError(
            Feature.FRAMEWORK_VERSION, BACKEND,
            f"Vertex has no prebuilt {job.framework.value} training container.",
            "Give the job an image (with your framework installed).",
            subject=f"framework_version with framework {job.framework.value}")
    if job.framework_version and not job.image:
        if job.framework_version not in prebuilt.versions(job.framework):
            raise unknown_version(job, prebuilt.versions(job.framework), "Vertex")
        if job.framework.value == "deepspeed":
            notes.append(Note(kind=NoteKind.HINT, field="framework_version",
                              message="runs on the prebuilt PyTorch container: list deepspeed in your package's "
                                      "dependencies"))


def _output_base(job: DistributedJob, settings: VertexSettings, notes: list[Note]) -> Optional[str]:
    if not any(out.default for out in job.outputs.values()):
        return settings.base_output_dir
    base = default_output_base(job, settings.base_output_dir, settings.staging_bucket,
                                    f"{SETTINGS}.base_output_dir", notes)
    if base is None:
        names = ", ".join(n for n, o in job.outputs.items() if o.default)
        raise ValidationError(f"outputs {names} go to the job's base output directory: set "
                              f"{SETTINGS}.base_output_dir (gs://…) or staging_bucket in the profile",
                              source=job.source, path=f"{SETTINGS}.base_output_dir")
    return base


def _input(name: str, inp: JobInput, notes: list[Note]) -> str:
    uri = inp.uri
    if inp.scheme == "gs":
        if inp.mode is InputMode.DOWNLOAD:
            notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"inputs.{name}",
                              message=f"read through Cloud Storage FUSE at {gcs_path(uri)}, not downloaded first"))
        return gcs_path(uri)
    from omnidist_azure.storage import is_blob_url  # a web URL only: most inputs are not

    if inp.scheme in ("http", "https") and not is_blob_url(uri):
        return uri
    raise foreign_uri(f"inputs.{name}", BACKEND, uri, READS)


def _output(name: str, out: JobOutput, base: Optional[str]) -> str:
    if out.default:
        return gcs_path(f"{base}/{name}")
    if out.scheme == "gs":
        return gcs_path(out.uri)
    raise foreign_uri(f"outputs.{name}", BACKEND, out.uri, "and write Cloud Storage (gs://BUCKET/PATH)")


def _code(job: DistributedJob, settings: VertexSettings, notes: list[Note]) -> tuple[Optional[str], Optional[str]]:
    """``(package URI, unpack line)``: one of them for a job with code, neither without."""
    if job.code is None:
        return None, None
    folder = code_folder(job)
    if folder is None and not job.code.startswith("gs://"):
        raise foreign_uri("code", BACKEND, job.code, "code from Cloud Storage or a local folder")
    if not job.module and not job.command and not any(r.command for r in _roles(job)):
        raise UnsupportedFeatureError(
            Feature.CODE, BACKEND, "a job with code needs a command or a module to run it; the image's ENTRYPOINT "
            "cannot be pointed at the code folder.", "Set module (python -m …) or command.")
    if folder is not None:
        uri = staged_code_uri(job, settings.staging_bucket, SETTINGS, notes, form="gs://BUCKET[/PATH]")
        archive = True
    else:
        uri, archive = job.code, is_package(job.code)
    if job.module:
        if not archive:
            raise ValidationError(f"a module job installs its code as a Python package, and {uri} is a folder: "
                                  "point code at a local folder or a gs://…tar.gz source distribution",
                                  source=job.source, path="code")
        return uri, None
    source = shlex.quote(gcs_path(uri))
    if archive:
        return None, f"mkdir -p {CODE_DIR}; tar -xzf {source} -C {CODE_DIR} --strip-components=1"
    return None, f"mkdir -p {CODE_DIR}; cp -R {source}/. {CODE_DIR}"


def _roles(job: DistributedJob):
    return [r for r in (job.primary, job.workers, job.parameter_servers, job.evaluators) if r is not None]
