"""The way back, shared by every importer: native spec -> portable job.

- :func:`delower` undoes role inheritance: a native file spells out every role in full, the
  portable job writes each role as its differences from what it inherits (the inverse of
  :func:`omnidist.model.roles.effective_role`).
- :func:`portable_name` and :func:`pick_name` turn a native display name or job id into a valid
  portable ``name``.
- :func:`parse_duration`, :func:`parse_proto_duration` and :func:`format_proto_duration` read
  and write the durations native files use (``86400``, ``"24h"``, ``"86400s"``).
- :func:`dropped`, :func:`cannot_hold` and :func:`retired_gpu` say what an import gives up, cannot
  take, or replaces; :func:`proto_json_keys` and :func:`sdk_object_to_dict` bring the other
  spellings of a native spec (protobuf field names, an SDK's own objects) to the one importers read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

import attrs

from omnidist.backend.values import Note, NoteKind
from omnidist.errors import NotPortableError, UnsupportedFeatureError, ValidationError
from omnidist.model import serde
from omnidist.model.data import NO_ACCELERATOR
from omnidist.model.features import Feature
from omnidist.model.fields import ENV_NAME
from omnidist.model.job import NAME_PATTERN
from omnidist.model.limits import clipped_repr
from omnidist.model.roles import INHERITS_FROM_PRIMARY, Accelerator, EffectiveRole, Role, RoleName
from omnidist.patterns import lazy_pattern

_HARDWARE = ("accelerator", "cpus", "memory_gb", "disk_gb")
_PROGRAM = ("image", "command", "args")

# --- role inheritance, undone ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Delowered:
    """What :func:`delower` gives: the job-wide program and env, and each role as a job file writes it."""

    image: Optional[str]
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: dict[str, str]
    roles: dict[RoleName, Role]

    def job_fields(self) -> dict[str, Any]:
        """Keyword arguments for :class:`~omnidist.model.job.DistributedJob`: the program, env and roles."""
        roles = {name.value: role for name, role in self.roles.items()}
        return {"image": self.image, "command": self.command, "args": self.args, "env": self.env, **roles}

    def job_dict(self) -> dict[str, Any]:
        """:meth:`job_fields` as plain data, for :func:`omnidist.model.job.job_from_dict`."""
        return {key: serde.unstructure(value) for key, value in self.job_fields().items()}


def _common_env(roles: Iterable[EffectiveRole]) -> dict[str, str]:
    envs = [role.env for role in roles]
    return {k: v for k, v in envs[0].items() if all(env.get(k) == v for env in envs[1:])}


def delower(roles: Mapping[RoleName, EffectiveRole], *, unset: Mapping[str, Any] | None = None) -> Delowered:
    """Portable roles from fully specified ones: the inverse of role inheritance.

    The primary's program (image, command, args) becomes the job's; the variables every role
    has with the same value become the job's ``env``; workers and evaluators keep only what
    differs from the primary, the other roles only what differs from the job. Lowering the
    result gives ``roles`` back.

    Args:
        roles: every role of the job (the primary among them) with every value as the native
            file gives it, env without omnidist's runtime hints.
        unset: hardware field -> what the platform runs when a native role leaves it out
            (a boot disk of 100 GB, say): a worker that leaves out a field the primary sets
            gets that value instead of inheriting the primary's.

    Raises:
        UnsupportedFeatureError: a worker or evaluator lacks something the primary has, which the
            portable job cannot take away again (a GPU, an environment variable).
    """
    primary = roles[RoleName.PRIMARY]
    # A role that inherits from the job and runs no image keeps the job from having one: the
    # primary's image then stays the primary's (its workers inherit it from there).
    imageless = any(r.image is None for r in roles.values() if r.name not in INHERITS_FROM_PRIMARY)
    job = {"image": None if imageless else primary.image, "command": primary.command, "args": primary.args}
    common = _common_env(roles.values())
    own = {k: v for k, v in primary.env.items() if common.get(k) != v}
    return Delowered(
        **job, env=common,
        roles={name: _role(role, primary, job, common, own, unset or {}) for name, role in roles.items()},
    )


def _role(role: EffectiveRole, primary: EffectiveRole, job: Mapping[str, Any], common: dict[str, str],
          own: dict[str, str], unset: Mapping[str, Any]) -> Role:
    """One role written as its differences from what it inherits."""
    name = role.name.value
    inherits = role.name in INHERITS_FROM_PRIMARY
    base_env = {**common, **own} if inherits else common
    missing = [k for k in base_env if k not in role.env]
    if missing:
        raise cannot_hold(
            f"{name} env", f"{name} lack {', '.join(missing)}, which the primary sets, and a role "
            "inherits the primary's env.", "Set the same variables on every replica.", feature=Feature.ENV)
    fields: dict[str, Any] = {"replicas": role.replicas, "env": {k: v for k, v in role.env.items()
                                                               if base_env.get(k) != v}}
    for field in _HARDWARE:
        value, inherited = getattr(role, field), getattr(primary, field)
        if inherits and field == "accelerator" and value is None and inherited is not None:
            fields[field] = NO_ACCELERATOR  # a CPU-only role beside a GPU primary (SPEC §7)
            continue
        if inherits and value is None and inherited is not None:
            value = unset.get(field)
            if value is None:
                raise _cannot_drop(name, field, inherited)
        fields[field] = None if inherits and value == inherited else value
    for field in _PROGRAM:
        value = getattr(role, field)
        inherited = getattr(primary, field) if inherits else job[field]
        if value is None and inherited is not None:
            raise _cannot_drop(name, field, inherited)
        fields[field] = None if value == inherited else value
    return Role(**fields)


def _cannot_drop(role: str, field: str, inherited: Any) -> UnsupportedFeatureError:
    if field == "accelerator":
        return cannot_hold(
            f"CPU-only {role}",
            f"{role} inherit the primary's accelerator ({inherited}) and cannot opt out.",
            "Give them the primary's accelerator, or make them parameter_servers.", feature=Feature.ACCELERATOR)
    return cannot_hold(
        f"{role} without {field}", f"{role} inherit the primary's {field} ({inherited}) and cannot "
        "leave it unset.", f"Give them a {field} of their own.",
        feature=Feature.PER_ROLE_MACHINES if field in _HARDWARE else Feature.PER_ROLE_PROGRAMS)


# --- names ----------------------------------------------------------------------------------------


def portable_name(text: Any) -> Optional[str]:
    """A valid portable job name from a native display name or id; ``None`` when nothing is left.

    A valid name is kept as it is; else letters are lowercased, every run of other characters
    becomes one ``-``, and leading non-letters and trailing dashes go (63 characters at most):
    ``"My Job - v2"`` -> ``my-job-v2``.
    """
    if not isinstance(text, str):
        return None
    if NAME_PATTERN.match(text):
        return text
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower()))
    slug = re.sub(r"^[^a-z]+", "", slug)[:63].rstrip("-")
    return slug or None


def pick_name(candidates: Iterable[Any], *, fallback: str, missing: str,
              notes: Optional[list[Note]] = None) -> str:
    """The job's name: the first candidate that makes a portable name, else ``fallback``.

    Args:
        candidates: native fields that may name the job, best first (``None`` when absent).
        fallback: the name when none does.
        missing: the note's text when ``fallback`` is used (why the file names nothing).
        notes: where to say that a name was cleaned up or defaulted (``None``: say nothing).
    """
    for candidate in candidates:
        name = portable_name(candidate)
        if name is not None:
            if name != candidate and notes is not None:
                notes.append(Note(kind=NoteKind.APPROXIMATED, field="name",
                                  message=f"{candidate!r} became {name!r} (job names are lowercase slugs)"))
            return name
    if notes is not None:
        notes.append(Note(kind=NoteKind.DEFAULTED, field="name", message=missing))
    return fallback


# --- durations ------------------------------------------------------------------------------------

_PROTO_DURATION = lazy_pattern(r"^(\d+)(?:\.(\d+))?s$")


def _positive(seconds: int, value: Any, path: str) -> int:
    if seconds <= 0:
        raise ValidationError(f"must be > 0, got {value}", path=path)
    return seconds


def native_duration(value: Any, path: str) -> int:
    """Seconds from a number of seconds or a job-file duration (``3600``, ``"90m"``, ``"7d"``).

    Raises:
        ValidationError: at ``path``, for anything else or a duration that is not positive.
    """
    try:
        seconds = serde.parse_duration(value)
    except ValueError as exc:
        raise ValidationError(str(exc), path=path) from None
    return _positive(seconds, value, path)


def parse_proto_duration(value: Any, path: str) -> int:
    """Whole seconds from a protobuf ``Duration`` in JSON (``"3600s"``, ``"3600.5s"``; fractions round up).

    Raises:
        ValidationError: at ``path``, for anything else or a duration that is not positive.
    """
    match = _PROTO_DURATION.match(value) if isinstance(value, str) else None
    if not match:
        raise ValidationError(f"expected a duration such as '3600s', got {value!r}", path=path)
    return _positive(int(match[1]) + (1 if match[2] and int(match[2]) else 0), value, path)


def format_proto_duration(seconds: int) -> str:
    """``86400`` -> ``"86400s"``: seconds as a protobuf ``Duration`` in JSON."""
    return f"{seconds}s"


# --- what an import gives up ----------------------------------------------------------------------


def native_text(value: Any, path: str) -> Optional[str]:
    """A native field that holds text (or is absent), checked at the importer's boundary: any
    other kind is exit 2 at ``path``, never an error deeper in.

    Raises:
        ValidationError: ``value`` is neither ``None`` nor a string.
    """
    if value is None or isinstance(value, str):
        return value
    raise ValidationError(f"expected text, got {clipped_repr(value, 80)}", path=path)


def dropped_note(field: str, message: str) -> Note:
    """A note that ``field`` of the native spec was left out (``migrate --strict`` refuses it)."""
    return Note(kind=NoteKind.DROPPED, field=field, message=message)


def portable_env(env: Mapping[str, str], field: str, notes: list[Note]) -> dict[str, str]:
    """The variables of a native ``env`` whose names every platform takes (letters, digits and
    ``_``, :data:`~omnidist.model.fields.ENV_NAME`).

    Some platforms (Kubernetes among them) also take ``.`` and ``-`` in a name; others and a shell do
    not, so such a variable cannot move. It is left out with a ``dropped`` note naming it, not
    refused: the file its platform accepts still imports.
    """
    kept: dict[str, str] = {}
    for name, value in env.items():
        if ENV_NAME.match(name):
            kept[name] = value
        else:
            notes.append(Note(kind=NoteKind.DROPPED, field=f"{field}.{name}", message=(
                f"{name!r} is not a name every platform takes (letters, digits, _): rename it to move it")))
    return kept


def trials_at_once(max_trials: int, parallel: int, field: str, notes: list[Note]) -> int:
    """Trials at a time as the portable job holds them: no more than the trials in all.

    Every tuning service accepts a parallel count above the total and simply starts them all at
    once, so the importer reads it that way too (``approximated``) rather than refusing a file the
    service runs.
    """
    if isinstance(max_trials, int) and isinstance(parallel, int) and 1 <= max_trials < parallel:
        notes.append(Note(kind=NoteKind.APPROXIMATED, field="tuning.parallel_trials", message=(
            f"{field} {parallel} is more than the {max_trials} trials in all; the service starts them "
            f"all at once, so {max_trials}")))
        return max_trials
    return parallel


def cannot_hold(subject: str, message: str, hint: str = "", *,
                feature: Feature = Feature.NATIVE) -> NotPortableError:
    """The error for what a native spec holds and the portable job cannot (exit 3): ``subject``
    names it, ``feature`` says what kind of thing it is (a native setting, unless said otherwise)."""
    return NotPortableError(feature, message, hint, subject=subject)


TPU_MESSAGE = "omnidist does not import TPU jobs yet (it compiles them for the backends that run TPUs)"
"""What an importer says about a TPU (a TPU machine, accelerator or runtime setting)."""

TPU_HINT = "Rewrite the job for GPUs to move it."


def tpu_refusal(subject: str) -> NotPortableError:
    """The one refusal for TPUs, whichever field asked for them."""
    return cannot_hold(subject, TPU_MESSAGE + ".", TPU_HINT, feature=Feature.ACCELERATOR)


RETIRED_GPUS: dict[str, dict[int, str]] = {
    "K80": {1: "T4", 2: "T4", 4: "T4", 8: "V100"},
}
"""GPU model no cloud sells any more -> count -> the portable GPU that replaces it: the nearest
model every cloud sells in that count (the K80 reached end of support on the clouds that
sold it; N1 takes T4 in 1, 2 or 4, so eight K80 dies become eight V100)."""


def retired_gpu(model: str, count: int, field: str, notes: list[Note]) -> Accelerator:
    """The accelerator that replaces ``count`` ``model`` GPUs, and a ``changed`` note saying so.

    Raises:
        NotPortableError: for a count the table has no replacement for.
    """
    successor = RETIRED_GPUS[model].get(count)
    if successor is None:
        raise cannot_hold(f"accelerator {model}:{count}", f"the {model} is retired and {count} of them has no "
                          "replacement every cloud sells.", "Name another GPU in the file.",
                          feature=Feature.ACCELERATOR)
    notes.append(Note(kind=NoteKind.CHANGED, field=field,
                      message=f"{model}:{count} became {successor}:{count}: the {model} is retired, no cloud "
                              f"sells it; {successor} is the nearest GPU every cloud offers in that count"))
    return Accelerator(type=successor, count=count)


# --- other spellings of a native spec -------------------------------------------------------------


def camel(name: str) -> str:
    """``worker_pool_specs`` -> ``workerPoolSpecs`` (protobuf's JSON name for a field)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def proto_json_keys(data: Any, maps: frozenset[str] = frozenset({"labels"})) -> Any:
    """``data`` with every field name in protobuf's JSON spelling.

    Protobuf's JSON parsers take a field's proto name (``worker_pool_specs``) as well as its JSON
    name (``workerPoolSpecs``), so a spec may use either, or both; importers read one. The keys
    under a map field (``labels``) are the user's own and stay as written.
    """
    if isinstance(data, Mapping):
        return {camel(k) if isinstance(k, str) else k: (v if k in maps else proto_json_keys(v, maps))
                for k, v in data.items()}
    if isinstance(data, list):
        return [proto_json_keys(v, maps) for v in data]
    return data


def sdk_object_to_dict(obj: Any) -> Any:
    """The plain data an SDK object serializes itself to, through the SDK's own ``_to_dict()``.

    A job builder may return a wrapper (a pipeline node) rather than the job: its ``_to_job()`` is
    the job, whose ``_to_dict()`` is the job file ``job.dump()`` writes (docs/migration.md names
    the SDK objects each backend reads). Objects without ``_to_dict`` are returned as they are.
    """
    to_job = getattr(obj, "_to_job", None)
    entity = to_job() if callable(to_job) else obj
    to_dict = getattr(entity, "_to_dict", None)
    if not callable(to_dict):
        return obj
    return _plain(to_dict())


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def shorten(value: Any, width: int = 72) -> str:
    """``value`` as text for a one-line message (mappings as ``{key: value, …}``, as a YAML file
    writes them inline), cut to ``width`` characters."""
    text = " ".join(_inline(value, top=True).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _inline(value: Any, top: bool = False) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_inline(v) for v in value)
        return inner if top else f"[{inner}]"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
