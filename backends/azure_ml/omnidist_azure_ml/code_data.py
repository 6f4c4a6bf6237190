"""Code, data and entrypoints on Azure ML (SPEC §7). Pure: no network, no SDK import.

Azure ML has them all natively, so most things carry over as they are:

- ``code`` -> the job's ``code`` (a local folder, relative to the job file, is uploaded by
  the SDK at submit, honouring ``.amlignore`` / ``.gitignore``; an ``azureml:`` asset is used as is);
- ``inputs`` -> ``inputs``: data as ``{type: uri_folder|uri_file, path, mode}``, literals as
  they are; ``outputs`` -> ``outputs`` (``default``: ``{type: uri_folder}``, the workspace's
  default datastore); ``${{inputs.X}}`` / ``${{outputs.X}}`` stay in the command for Azure to fill;
- ``module`` -> ``python -m MODULE ARGS``; ``framework_version`` with no image -> a curated
  environment (:mod:`.prebuilt`).

Azure fills references in the command only, so environment values that hold one, and the
runtime's ``OMNIDIST_INPUT_*`` / ``OMNIDIST_OUTPUT_*`` hints, are exported at the start of the
command. A command job always runs a command: a job without one is exit 3. ``gs://`` and
other non-Azure locations are exit 3 unless ``data_map`` rewrites them.
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from omnidist.kit import (
    REFERENCE,
    DistributedJob,
    EffectiveRole,
    Feature,
    InputMode,
    JobInput,
    JobOutput,
    Note,
    NoteKind,
    UnsupportedFeatureError,
    ValidationError,
    apply_data_map,
    check_references,
    code_folder,
    foreign_uri,
    is_package,
    local_path,
    unknown_version,
    with_module,
)
from omnidist.kit import uri_scheme as scheme
from omnidist.runtime import hints
from omnidist_azure_ml import prebuilt
from omnidist_azure_ml.settings import AzureMLSettings
from omnidist_azure_ml.tables import NAME

SETTINGS = f"backends.{NAME}"
READABLE = frozenset({"abfs", "abfss", "adl", "azureml", "http", "https", "local", "wasb", "wasbs"})
"""Input location kinds Azure ML reads (local paths are uploaded by the SDK at submit)."""

WRITABLE = frozenset({"abfs", "abfss", "azureml", "https", "wasb", "wasbs"})
"""Output location kinds Azure ML writes (datastore and storage URIs)."""

READS = "azureml://datastores/… paths, Azure Storage (https://ACCOUNT.blob.core.windows.net/…, wasbs://, abfss://), " \
        "plain http(s) URLs and local paths"


def data_type(uri: str) -> str:
    """``uri_file`` when the path's last part names a file (``vocab.txt``), else ``uri_folder``."""
    last = uri.rstrip("/").rsplit("/", 1)[-1] if not uri.endswith("/") else ""
    return "uri_file" if "." in last.strip(".") and not last.startswith("azureml:") else "uri_folder"


@attrs.frozen(kw_only=True)
class Plan:
    """The job's code, inputs and outputs as Azure ML declares them, and the command's prefix."""

    job: DistributedJob
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    code: Optional[str]
    exports: dict[str, str]

    def primary(self, role: EffectiveRole) -> EffectiveRole:
        """The primary running ``python -m MODULE`` for a module job, its referencing env values moved
        into the command's exports."""
        role = with_module(role, self.job)
        return attrs.evolve(role, env={k: v for k, v in role.env.items() if not REFERENCE.search(v)})

    def command(self, command: str) -> str:
        """``export NAME="…" …; COMMAND`` when the runtime hints or env values need Azure's references."""
        if not self.exports:
            return command
        exported = " ".join(f'{name}="{value}"' for name, value in self.exports.items())
        return f"export {exported}; {command}"

    def fields(self) -> dict[str, Any]:
        """``description``, ``code``, ``inputs`` and ``outputs`` of the command job."""
        found: dict[str, Any] = {}
        if self.job.description:
            found["description"] = self.job.description
        if self.code:
            found["code"] = self.code
        if self.inputs:
            found["inputs"] = self.inputs
        if self.outputs:
            found["outputs"] = self.outputs
        return found


def prepare(job: DistributedJob, settings: AzureMLSettings,
            notes: list[Note]) -> tuple[DistributedJob, AzureMLSettings, Plan]:
    """Apply ``data_map``, refuse what a command job cannot run, and declare code and data."""
    job, rewrites = apply_data_map(job, settings.data_map)
    notes += rewrites
    check_references(job, {"inputs": settings.inputs})
    _check_command(job)
    settings = _environment(job, settings, notes)
    inputs = {name: _input(name, inp, job, notes) for name, inp in job.inputs.items()}
    clash = sorted(set(inputs) & set(settings.inputs))
    if clash:
        raise ValidationError(f"input {clash[0]} is declared both in the job and in {SETTINGS}.inputs; keep one",
                              source=job.source, path=f"inputs.{clash[0]}")
    outputs = {name: _output(name, out) for name, out in job.outputs.items()}
    return job, settings, Plan(job=job, inputs={**settings.inputs, **inputs}, outputs=outputs,
                               code=_code(job, settings, notes), exports=_exports(job, notes))


def _check_command(job: DistributedJob) -> None:
    if job.module or job.command or job.primary.command:
        return
    raise UnsupportedFeatureError(
        Feature.COMMAND, NAME, "an Azure ML command job always runs its command; it cannot start the image's own "
        "ENTRYPOINT.", "Set command (the program the image's ENTRYPOINT would run) or module.")


def _environment(job: DistributedJob, settings: AzureMLSettings, notes: list[Note]) -> AzureMLSettings:
    if not job.framework_version:
        return settings
    if job.image or settings.environment:
        notes.append(Note(kind=NoteKind.HINT, field="framework_version",
                          message=f"not used: the job runs {job.image or settings.environment}"))
        return settings
    known = prebuilt.versions(job.framework)
    if not known:
        raise UnsupportedFeatureError(
            Feature.FRAMEWORK_VERSION, NAME,
            f"Azure ML has no curated {job.framework.value} environment.",
            f"Give the job an image, or a registered environment in {SETTINGS}.environment.",
            subject=f"framework_version with framework {job.framework.value}")
    reference = prebuilt.environment(job.framework, job.framework_version)
    if reference is None:
        raise unknown_version(job, known, "Azure ML (curated environments)")
    notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{SETTINGS}.environment",
                      message=f"{reference} (the curated {job.framework.value} {job.framework_version} environment)"))
    return attrs.evolve(settings, environment=reference)


def _input(name: str, inp: JobInput, job: DistributedJob, notes: list[Note]) -> Any:
    if inp.literal:
        return inp.value
    if inp.scheme not in READABLE:
        raise foreign_uri(f"inputs.{name}", NAME, inp.uri, READS)
    if inp.scheme == "local":
        local_path(job, inp.uri)  # resolved like code: relative to the job file
        notes.append(Note(kind=NoteKind.HINT, field=f"inputs.{name}",
                          message=f"{inp.uri} is uploaded by the Azure ML SDK at submit"))
    native: dict[str, Any] = {"type": data_type(inp.uri), "path": inp.uri}
    if inp.mode is InputMode.DOWNLOAD:
        native["mode"] = "download"
    return native


def _output(name: str, out: JobOutput) -> dict[str, Any]:
    if out.default:
        return {"type": "uri_folder"}
    if out.scheme not in WRITABLE:
        raise foreign_uri(f"outputs.{name}", NAME, out.uri,
                           "and write datastore and Azure Storage locations (azureml://datastores/…, abfss://, …)")
    return {"type": data_type(out.uri), "path": out.uri, "mode": "rw_mount"}


def _code(job: DistributedJob, settings: AzureMLSettings, notes: list[Note]) -> Optional[str]:
    if job.code is None:
        return settings.code
    if settings.code:
        raise ValidationError(f"code is set both in the job and in {SETTINGS}.code; keep one",
                              source=job.source, path="code")
    folder = code_folder(job)
    if folder is not None:
        notes.append(Note(kind=NoteKind.HINT, field="code",
                          message=f"{job.code} is uploaded at submit by the Azure ML SDK to the workspace's default "
                                  "datastore, once per content (.amlignore / .gitignore honoured)"))
        return job.code
    if is_package(job.code):
        raise UnsupportedFeatureError(
            Feature.CODE, NAME, f"{job.code} is a built Python package, and Azure ML ships code as a folder without "
            "installing it, so python -m would not find the module.",
            "Point code at the package's source folder, or install the package in the image and leave code out.",
            subject="code")
    if scheme(job.code) not in ("azureml", "https", "wasbs", "abfss"):
        raise foreign_uri("code", NAME, job.code, "code from a local folder or an azureml: code asset")
    return job.code


def _exports(job: DistributedJob, notes: list[Note]) -> dict[str, str]:
    """Runtime hints for every input and output, and env values holding a reference."""
    exports = {f"{hints.INPUT_PREFIX}{name}": f"${{{{inputs.{name}}}}}" for name in job.inputs}
    exports.update({f"{hints.OUTPUT_PREFIX}{name}": f"${{{{outputs.{name}}}}}" for name in job.outputs})
    moved = {k: v for k, v in {**job.env, **job.primary.env}.items() if REFERENCE.search(v)}
    for key, value in moved.items():
        if '"' in value or "\\" in value or "`" in value or "$(" in value:
            raise ValidationError("an env value that refers to an input or output is exported in the command, "
                                  'so it cannot hold ", \\, ` or $(', source=job.source, path=f"env.{key}")
        notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"env.{key}",
                          message="exported at the start of the command: Azure fills ${{…}} only there"))
    return {**exports, **moved}
