"""Code and data, shared by every backend (SPEC §7): ``data_map`` rewrites, the local code
folder, reference substitution and the runtime's data hints.

Each backend decides what a container sees for an input or output (a mounted path, the
object-store URI itself, a platform's own input placeholder, a local path on this machine); the
rules that do not depend on the cloud live here, so they hold the same everywhere:

- the profile's ``data_map`` rewrites the prefix of every input, output and ``code`` URI
  before compiling (the longest matching prefix wins), with one note per rewrite;
- a local ``code`` folder is resolved against the job file's folder and must exist;
- references are replaced in ``command``, ``args`` and ``env`` of every role, and the
  values are also handed to the runtime as ``OMNIDIST_INPUT_<NAME>`` /
  ``OMNIDIST_OUTPUT_<NAME>`` (:mod:`omnidist.runtime.hints`);
- a URI the target cannot read is refused with exit 3, naming the input and the fix.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Optional

import attrs

from omnidist.backend.values import Note, NoteKind
from omnidist.errors import UnreadableLocationError, ValidationError
from omnidist.model import data as jobdata
from omnidist.model.data import REFERENCE, JobInput, JobOutput, scheme
from omnidist.model.features import Feature
from omnidist.model.job import DistributedJob
from omnidist.model.limits import clipped_repr
from omnidist.model.roles import EffectiveRole, RoleName
from omnidist.patterns import lazy_pattern
from omnidist.runtime import hints

DataValues = dict[tuple[str, str], str]
"""``(inputs|outputs, NAME)`` -> what a reference to it becomes inside the container."""

CODE_HASH = "{content-sha256}"
"""Stands for the code's content hash in a compiled request; submit packs the folder, uploads
it under that hash and puts the hash in its place."""

CODE_OBJECT = "omnidist/code/" + CODE_HASH + ".tar.gz"
"""Where in a staging bucket a code folder is uploaded, by content."""


# --- settings every backend shares -----------------------------------------------------------

def check_data_map(instance: Any, attribute: attrs.Attribute, value: Mapping[str, str]) -> None:
    """``data_map``: non-empty prefixes on both sides, each ending in ``/`` or both not."""
    for source, target in value.items():
        path = f"{attribute.name}.{source}"
        if not source.strip() or not target.strip():
            raise ValidationError("prefixes cannot be empty; write e.g. \"scheme://bucket/\" = "
                                  "\"other-scheme://bucket/data/\"", path=path)
        if source.endswith("/") != target.endswith("/"):
            raise ValidationError(f"{source!r} and {target!r} must both end in '/' (or neither): a prefix "
                                  "rewrite keeps what follows it", path=path)


# --- data_map ----------------------------------------------------------------------------------

def rewrite(uri: str, data_map: Mapping[str, str]) -> Optional[str]:
    """``uri`` with its longest mapped prefix replaced, or None when no prefix matches."""
    matches = [prefix for prefix in data_map if uri.startswith(prefix)]
    if not matches:
        return None
    prefix = max(matches, key=len)
    return data_map[prefix] + uri[len(prefix):]


def apply_data_map(job: DistributedJob, data_map: Mapping[str, str]) -> tuple[DistributedJob, list[Note]]:
    """The job with every input, output and ``code`` URI rewritten by ``data_map``, and a note
    per rewrite (``migrate`` reports them)."""
    if not data_map:
        return job, []
    notes: list[Note] = []

    def moved(field: str, uri: Optional[str]) -> Optional[str]:
        new = rewrite(uri, data_map) if uri else None
        if new is None:
            return uri
        notes.append(Note(kind=NoteKind.APPROXIMATED, field=field, message=f"{uri} -> {new} (data_map)"))
        return new

    inputs = {name: inp if inp.literal else attrs.evolve(inp, uri=moved(f"inputs.{name}", inp.uri))
              for name, inp in job.inputs.items()}
    outputs = {name: out if out.default else JobOutput(uri=moved(f"outputs.{name}", out.uri))
               for name, out in job.outputs.items()}
    code = moved("code", job.code)
    return attrs.evolve(job, inputs=inputs, outputs=outputs, code=code), notes


def foreign_uri(field: str, backend: str, uri: str, reads: str) -> UnreadableLocationError:
    """Exit 3 for a data location ``backend`` cannot read, saying how ``data_map`` fixes it
    (``field``: ``code``, ``inputs.NAME`` or ``outputs.NAME``, which names the feature). The
    example maps to the first kind of location ``reads`` names, and so
    does the error's ``stand_in`` (with which a migration looks for the job's other blockers)."""
    kind, to = scheme(uri), _example_target(reads)
    name = field.rsplit(".", 1)[-1]
    stand_in = None if to.startswith("./") else f"{to}{name}.tar.gz" if field == "code" else f"{to}{name}"
    if is_asset(uri):
        what, fetch = _asset_words(uri)
        return UnreadableLocationError(
            field, backend, f"{uri} is {what}, and {backend} jobs read {reads}.",
            f"Download it ({fetch}), copy it there and map the reference in the profile, e.g. "
            f'data_map = {{"{uri}" = "{to.rstrip("/")}"}}.', stand_in=stand_in)
    source = "./data/" if kind == "local" else f'{uri.rsplit("/", 1)[0]}/'
    return UnreadableLocationError(
        Feature(field.split(".")[0]), backend, f"{uri} is a {kind} location, and {backend} jobs read {reads}.",
        f'Copy the data there and add a prefix rewrite to the profile, e.g. data_map = {{"{source}" = "{to}"}}.',
        subject=field, stand_in=stand_in)


_READ_SCHEME = lazy_pattern(r"\b([a-z][a-z0-9]*)://(datastores/)?")


def _example_target(reads: str) -> str:
    """A prefix of the first kind of location ``reads`` names, for a ``data_map`` example."""
    found = _READ_SCHEME.search(reads)
    if found is None:
        return "./data/" if "local" in reads else "scheme://bucket/data/"
    if found.group(2):
        return f"{found.group(1)}://datastores/ds/paths/"
    return f"{found.group(1)}://bkt/data/"


def is_asset(uri: str) -> bool:
    """True for a reference to registered data (:data:`omnidist.model.data.ASSET`: ``STORE:NAME:1``,
    ``STORE:NAME@latest``), not a path nor a URI."""
    return jobdata.ASSET.match(uri) is not None


def _asset_words(uri: str) -> tuple[str, str]:
    """What a registered-data reference is and how to download it, as the installed vendor kit
    that declares its store says (:class:`omnidist.vendors.AssetReference`), else in general words."""
    from omnidist import vendors

    asset = vendors.asset_of(uri)
    if asset is None:
        store = scheme(uri)
        return (f"a reference to data registered with a service ({store}:)",
                f"with the tools of the service that resolves {store}: references")
    return asset.title, asset.fetch.format(name=asset.name(uri))


def fill_code_hash(request: Any, sha256: str) -> Any:
    """A copy of a compiled request with :data:`CODE_HASH` replaced by the content hash."""
    if isinstance(request, str):
        return request.replace(CODE_HASH, sha256)
    if isinstance(request, Mapping):
        return {k: fill_code_hash(v, sha256) for k, v in request.items()}
    if isinstance(request, (list, tuple)):
        return [fill_code_hash(v, sha256) for v in request]
    return request


# --- code ----------------------------------------------------------------------------------------

def staged_code_uri(job: DistributedJob, staging_bucket: Optional[str], settings_path: str,
                    notes: list[Note], *, object_name: str = CODE_OBJECT,
                    form: str = "scheme://BUCKET[/PATH]") -> str:
    """Where a local code folder goes at submit (``<staging_bucket>/<object_name>``, by default
    ``omnidist/code/<sha256>.tar.gz``), with a note saying so.

    Args:
        job: the job (its ``code`` folder).
        staging_bucket: the backend's staging location (any object store's URI).
        settings_path: where the backend's settings live (``backends.<name>``), for the error.
        notes: where the note goes.
        object_name: the object's name under the bucket, with :data:`CODE_HASH` in it.
        form: how the backend's staging locations are written, for the error (``scheme://BUCKET``).

    Raises:
        ValidationError: no staging bucket is set (exit 2, naming the setting).
    """
    if not staging_bucket:
        raise ValidationError(f"the code folder {job.code} is uploaded at submit to the staging bucket: set "
                              f"{settings_path}.staging_bucket ({form}) or staging_bucket in the profile",
                              source=job.source, path=f"{settings_path}.staging_bucket")
    uri = f"{staging_bucket.rstrip('/')}/{object_name}"
    notes.append(Note(kind=NoteKind.HINT, field="code", message=f"{job.code} is packed at submit and uploaded "
                      f"once per content to {uri} ({CODE_HASH}: the SHA-256 of its files)"))
    return uri


def job_folder(job: DistributedJob) -> Path:
    """The folder relative paths in the job are read from: the job file's, else the current one."""
    return Path(os.path.dirname(os.path.abspath(job.source))) if job.source else Path.cwd()


def local_path(job: DistributedJob, path: str) -> Path:
    """A local path of the job (``code``, an input) as an absolute path."""
    return (job_folder(job) / os.path.expanduser(path)).resolve()


FOLDER, FILE, MISSING = "folder", "file", "missing"


def path_kind(path: Path) -> str:
    """What is at a local path a job names: :data:`FOLDER`, :data:`FILE`, :data:`MISSING`, or the
    operating system's reason the path cannot be used (``File name too long``, ``Permission
    denied``). Never raises: a path comes from a job or a native file, and any text may name it."""
    try:
        found = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL
        return getattr(exc, "strerror", None) or str(exc)
    return FOLDER if stat.S_ISDIR(found.st_mode) else FILE


def code_folder(job: DistributedJob) -> Optional[Path]:
    """The local ``code`` folder, checked; None when the job has no code or a remote one.

    Raises:
        ValidationError: the folder does not exist (exit 2, naming it).
    """
    if job.code is None or scheme(job.code) != "local":
        return None
    folder = local_path(job, job.code)
    kind = path_kind(folder)
    if kind != FOLDER:
        what = {FILE: "is a file, not a folder", MISSING: "does not exist"}.get(kind, f"cannot be read ({kind})")
        raise ValidationError(f"the code folder {clipped_repr(job.code)} ({clipped_repr(str(folder))[1:-1]}) {what}; "
                              "create it or fix the path", source=job.source, path="code")
    return folder


# --- references and runtime hints ------------------------------------------------------------------

def substitute(text: str, values: DataValues) -> str:
    """``text`` with each ``${{inputs.X}}`` / ``${{outputs.X}}`` replaced by its value."""
    return REFERENCE.sub(lambda m: values[(m.group(1), m.group(2))], text)


def substituted(role: EffectiveRole, values: DataValues) -> EffectiveRole:
    """The role's command, args and env with references replaced."""
    if not values:
        return role
    return attrs.evolve(role, command=tuple(substitute(a, values) for a in role.command),
                        args=tuple(substitute(a, values) for a in role.args),
                        env={k: substitute(v, values) for k, v in role.env.items()})


def literal_values(job: DistributedJob) -> DataValues:
    """Literal inputs: substituted as text on every backend."""
    return {("inputs", name): inp.text for name, inp in job.inputs.items() if inp.literal}


def check_references(job: DistributedJob, also_declared: Optional[Mapping[str, Iterable[str]]] = None) -> None:
    """Every ``${{inputs.X}}`` / ``${{outputs.X}}`` in the job names a declared input or output.

    Raises:
        ValidationError: exit 2, naming the field path of each undeclared reference.
    """
    problems = jobdata.undeclared(job, also_declared)
    if problems:
        raise ValidationError(problems, source=job.source)


def resolve_data(job: DistributedJob, locate_input: Callable[[str, JobInput], str],
                 locate_output: Callable[[str, JobOutput], str]) -> DataValues:
    """Every input and output of the job -> what the container sees, from the backend's two
    functions (literals are always their text), after checking that references are declared."""
    check_references(job)
    values = literal_values(job)
    values.update({("inputs", name): locate_input(name, inp) for name, inp in job.inputs.items()
                   if not inp.literal})
    values.update({("outputs", name): locate_output(name, out) for name, out in job.outputs.items()})
    return values


def data_hints(values: DataValues) -> dict[str, str]:
    """``OMNIDIST_INPUT_<NAME>`` / ``OMNIDIST_OUTPUT_<NAME>`` for the runtime's ``inputs`` and ``outputs``."""
    prefixes = {"inputs": hints.INPUT_PREFIX, "outputs": hints.OUTPUT_PREFIX}
    return {f"{prefixes[kind]}{name}": value for (kind, name), value in sorted(values.items())}


# --- entrypoints -----------------------------------------------------------------------------------

def module_command(job: DistributedJob) -> tuple[str, ...]:
    """``python -m MODULE`` for a ``module`` job (empty otherwise)."""
    return ("python", "-m", job.module) if job.module else ()


def with_module(role: EffectiveRole, job: DistributedJob) -> EffectiveRole:
    """The role running ``python -m MODULE`` when the job has a module and no command."""
    if not job.module or role.name is RoleName.REDUCTION_SERVERS:
        return role
    return attrs.evolve(role, command=module_command(job))


def unknown_version(job: DistributedJob, known: Iterable[str], where: str) -> ValidationError:
    """Exit 2 for a ``framework_version`` the cloud has no prebuilt container for, listing the real ones."""
    versions = sorted(set(known), key=_version_key)
    listed = ", ".join(versions) if versions else "none"
    return ValidationError(f"{where} has no prebuilt {job.framework.value} {job.framework_version}; "
                           f"versions: {listed}", source=job.source, path="framework_version")


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in version.split("."))


def default_output_base(job: DistributedJob, configured: Optional[str], staging_bucket: Optional[str],
                        setting: str, notes: list[Note]) -> Optional[str]:
    """Where ``default`` outputs go: the configured folder, else one under the staging bucket
    (noted), else None."""
    if configured:
        return configured.rstrip("/")
    if not staging_bucket:
        return None
    base = f"{staging_bucket.rstrip('/')}/omnidist/outputs/{job.name}"
    notes.append(Note(kind=NoteKind.DEFAULTED, field=setting,
                      message=f"default outputs go under {base} (set {setting} to choose)"))
    return base
