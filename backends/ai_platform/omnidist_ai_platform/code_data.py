"""Code, data and entrypoints on legacy AI Platform Training (SPEC §7). Pure.

- Data: legacy has no Cloud Storage FUSE, so programs read ``gs://`` themselves: a
  reference to a ``gs://`` input or output becomes the URI; plain ``http(s)`` URLs are kept;
  ``default`` outputs go under ``jobDir`` (``job_dir``, else under ``staging_bucket``), which
  the service also passes to the program as ``--job-dir``. Other locations are exit 3
  unless ``data_map`` rewrites them. Legacy has no environment variables, so the runtime's
  data hints are not sent: ``context().inputs`` is empty there (read your arguments).
- Code: a ``module`` job with ``code`` is a Python-package job (``packageUris`` +
  ``pythonModule``): TensorFlow on a runtime version (``runtimeVersion`` + ``pythonVersion``),
  PyTorch on Google's prebuilt PyTorch container, or on the job's own image. A command job
  cannot take a code folder (containers get no files besides their image): exit 3.
- No command and no module: ``masterConfig`` has no ``containerCommand``; ``args`` become
  ``containerArgs`` for the image's ENTRYPOINT.
"""

from __future__ import annotations

from typing import Optional

import attrs

from omnidist.kit import (
    DataValues,
    DistributedJob,
    EffectiveRole,
    Feature,
    JobInput,
    JobOutput,
    Note,
    NoteKind,
    RoleName,
    UnsupportedFeatureError,
    ValidationError,
    apply_data_map,
    code_folder,
    default_output_base,
    foreign_uri,
    is_package,
    resolve_data,
    staged_code_uri,
    substituted,
    unknown_version,
    with_module,
)
from omnidist_ai_platform import prebuilt
from omnidist_ai_platform.settings import AIPlatformSettings
from omnidist_ai_platform.tables import NAME

SETTINGS = f"backends.{NAME}"
READS = "Cloud Storage (gs://BUCKET/PATH, read by the program itself) or plain http(s) URLs"
PACKAGE_SETTINGS = ("runtime_version", "python_version", "python_module", "package_uris")
"""The settings that spell a Python-package job natively; a ``module`` job fills them itself."""


@attrs.frozen(kw_only=True)
class Plan:
    """How each role runs: references replaced, and the module / prebuilt image applied."""

    job: DistributedJob
    values: DataValues
    package: bool
    pytorch_images: Optional[tuple[str, str]] = None

    def role(self, role: EffectiveRole) -> EffectiveRole:
        """The role with references replaced and its entrypoint and image set."""
        if role.name is RoleName.REDUCTION_SERVERS:
            return role
        if not self.package:
            role = with_module(role, self.job)
        role = substituted(role, self.values)
        if not role.image and self.pytorch_images:
            role = attrs.evolve(role, image=self.pytorch_images[1 if role.gpus else 0])
        return role


def prepare(job: DistributedJob, settings: AIPlatformSettings,
            notes: list[Note]) -> tuple[DistributedJob, AIPlatformSettings, Plan]:
    """Apply ``data_map``, place inputs and outputs, and turn a module job into the native
    Python-package settings. Returns the job, the settings to compile with, and the plan."""
    job, rewrites = apply_data_map(job, settings.data_map)
    notes += rewrites
    settings = _job_dir(job, settings, notes)
    values = resolve_data(job, _input, lambda name, out: _output(name, out, settings.job_dir))
    if job.description:
        notes.append(Note(kind=NoteKind.DROPPED, field="description",
                          message="legacy AI Platform jobs have no description"))
    if job.framework_version and job.image:
        notes.append(Note(kind=NoteKind.HINT, field="framework_version",
                          message=f"not used: the job runs its own image {job.image}"))
    package = bool(job.module and job.code)
    if job.code and not job.module:
        raise UnsupportedFeatureError(
            Feature.CODE, NAME, "legacy AI Platform gives containers no files besides their image, so a command job "
            "cannot take a code folder.", "Run the code as a Python package (module: trainer.task), or bake it "
            "into the image.")
    settings, images = _prebuilt(job, settings, package)
    if package:
        settings = _package(job, settings, notes)
    return job, settings, Plan(job=job, values=values, package=package, pytorch_images=images)


def _job_dir(job: DistributedJob, settings: AIPlatformSettings, notes: list[Note]) -> AIPlatformSettings:
    if settings.job_dir or not any(out.default for out in job.outputs.values()):
        return settings
    base = default_output_base(job, None, settings.staging_bucket, f"{SETTINGS}.job_dir", notes)
    if base is None:
        names = ", ".join(n for n, o in job.outputs.items() if o.default)
        raise ValidationError(f"outputs {names} go to the job directory: set {SETTINGS}.job_dir (gs://…) or "
                              "staging_bucket in the profile", source=job.source, path=f"{SETTINGS}.job_dir")
    return attrs.evolve(settings, job_dir=base)


def _input(name: str, inp: JobInput) -> str:
    from omnidist_azure.storage import is_blob_url  # a web URL only: most inputs are not

    if inp.scheme == "gs" or (inp.scheme in ("http", "https") and not is_blob_url(inp.uri)):
        return inp.uri
    raise foreign_uri(f"inputs.{name}", NAME, inp.uri, READS)


def _output(name: str, out: JobOutput, job_dir: Optional[str]) -> str:
    if out.default:
        return f"{job_dir.rstrip('/')}/{name}"
    if out.scheme == "gs":
        return out.uri
    raise foreign_uri(f"outputs.{name}", NAME, out.uri, "and write Cloud Storage (gs://BUCKET/PATH)")


def _prebuilt(job: DistributedJob, settings: AIPlatformSettings,
              package: bool) -> tuple[AIPlatformSettings, Optional[tuple[str, str]]]:
    """The runtime version (TensorFlow) or the prebuilt PyTorch images for ``framework_version``."""
    if not job.framework_version or job.image:
        return settings, None
    known = prebuilt.versions(job.framework)
    if not known:
        raise UnsupportedFeatureError(
            Feature.FRAMEWORK_VERSION, NAME,
            f"legacy AI Platform had no runtime or prebuilt container for {job.framework.value}.",
            "Give the job an image.", subject=f"framework_version with framework {job.framework.value}")
    if job.framework_version not in known:
        raise unknown_version(job, known, "legacy AI Platform")
    if job.framework in prebuilt.PYTORCH_FRAMEWORKS:
        return settings, prebuilt.PYTORCH_IMAGES[job.framework_version]
    if not package:
        raise ValidationError(f"TensorFlow {job.framework_version} runs on a runtime version, which installs your "
                              "code as a Python package: set module (e.g. trainer.task) and code, or give an image",
                              source=job.source, path="framework_version")
    python = prebuilt.RUNTIME_VERSIONS[job.framework_version]
    return attrs.evolve(settings, runtime_version=job.framework_version,
                        python_version=settings.python_version or python), None


def _package(job: DistributedJob, settings: AIPlatformSettings, notes: list[Note]) -> AIPlatformSettings:
    taken = [k for k in ("python_module", "package_uris") if getattr(settings, k)]
    if taken:
        raise ValidationError(f"the job's module and code already make it a Python-package job; remove "
                              f"{', '.join(f'{SETTINGS}.{k}' for k in taken)}", source=job.source,
                              path=f"{SETTINGS}.{taken[0]}")
    folder = code_folder(job)
    if folder is not None:
        uri = staged_code_uri(job, settings.staging_bucket, SETTINGS, notes, form="gs://BUCKET[/PATH]")
    elif job.code.startswith("gs://") and is_package(job.code):
        uri = job.code
    elif job.code.startswith("gs://"):
        raise ValidationError(f"packageUris are Python packages, and {job.code} is a folder: point code at a local "
                              "folder or a gs://…tar.gz source distribution", source=job.source, path="code")
    else:
        raise foreign_uri("code", NAME, job.code, "code from Cloud Storage or a local folder")
    if job.image and not settings.runtime_version:
        notes.append(Note(kind=NoteKind.HINT, field="image",
                          message="the package runs on your image the way Google's prebuilt PyTorch containers run "
                                  "one (unconfirmed for other images)"))
    return attrs.evolve(settings, python_module=job.module, package_uris=(uri,))
