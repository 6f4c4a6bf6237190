"""The portable job (SPEC §1) as frozen, keyword-only attrs values: omnidist's IR.

The IR keeps what the user wrote: a role's unset fields stay ``None`` so that ``to_dict``
round-trips losslessly. :mod:`omnidist.model.roles` computes the effective values (inheritance
from the primary, env merging) that backends compile from. This module also reads and writes
job files (:func:`load`, :func:`job_from_dict`, :func:`job_to_yaml`…), through the one
converter of :mod:`omnidist.model.serde`.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Mapping
from typing import Any, Optional

import attrs

from omnidist.errors import ValidationError
from omnidist.model import data as jobdata
from omnidist.model import documents, serde
from omnidist.model.data import JobInput, JobOutput
from omnidist.model.fields import as_dict, at_most, choice, env_names, fail, positive, to_argv, to_str_map
from omnidist.model.limits import MAX_PROCESSES_PER_NODE, MAX_TIMEOUT_S, clipped_repr
from omnidist.model.recovery import Recovery, check_max_cost, to_recovery
from omnidist.model.roles import AUTO, Replicas, Role, RoleName, effective_roles
from omnidist.model.tuning import Tuning, to_tuning

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


class Framework(str, enum.Enum):
    """What the training code is written with; decides the distribution on each backend."""

    PYTORCH = "pytorch"
    TENSORFLOW = "tensorflow"
    HOROVOD = "horovod"
    DEEPSPEED = "deepspeed"
    CUSTOM = "custom"
    JAX = "jax"


class Interconnect(str, enum.Enum):
    """``infiniband`` demands an RDMA/InfiniBand-capable machine; ``any`` takes what fits."""

    ANY = "any"
    INFINIBAND = "infiniband"


def _patterns(value: Any) -> tuple[str, ...]:
    """``ship_secrets``: a list of gitignore patterns (one string is one pattern)."""
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(p, str) and p.strip() for p in items):
        raise ValidationError(f"expected a list of file patterns (e.g. [.env, certs/*.pem]), got {value!r}",
                              path="ship_secrets")
    return tuple(items)


def _role_auto_only_for_reducers(job: DistributedJob) -> None:
    for name in RoleName:
        role = getattr(job, name.value)
        if role is not None and role.replicas == AUTO and name is not RoleName.REDUCTION_SERVERS:
            raise ValidationError(
                "'auto' is only for reduction_servers; give a whole number",
                path=f"{name.value}.replicas",
            )
    if job.primary.replicas != 1:
        raise ValidationError(
            f"the primary is always exactly 1 replica, got {job.primary.replicas}; "
            "put the other replicas under workers",
            path="primary.replicas",
        )


@attrs.frozen(kw_only=True, repr=False)
class DistributedJob:
    """One distributed training job, portable across backends (docs/job-format.md).

    Example:
        >>> job = DistributedJob(name="demo", framework="pytorch", image="trainer:1",
        ...                      command="python train.py", workers=Role(replicas=2))
        >>> job.workers.replicas
        2
    """

    name: str = attrs.field()
    framework: Framework = attrs.field(converter=choice(Framework, "framework"))
    image: Optional[str] = None
    command: tuple[str, ...] = attrs.field(default=(), converter=lambda v: to_argv(v) or ())
    args: tuple[str, ...] = attrs.field(default=(), converter=lambda v: to_argv(v) or ())
    env: dict[str, str] = attrs.field(factory=dict, converter=to_str_map, validator=env_names)
    # SPEC §7: description, code, entrypoint and data (omnidist.model.data holds the rules).
    description: Optional[str] = None
    code: Optional[str] = None
    """A folder shipped with the job: a local path (relative to the job file) or a remote URI."""
    ship_secrets: tuple[str, ...] = attrs.field(default=(), converter=lambda v: _patterns(v))
    """Secret-looking files of a local ``code`` folder that ship anyway (gitignore patterns such as
    ``.env`` or ``certs/*.pem``); every other one is left out with a warning (docs/security.md)."""
    module: Optional[str] = attrs.field(default=None, validator=jobdata.check_module)
    """Instead of ``command``: ``python -m MODULE ARGS``, run from ``code``."""
    framework_version: Optional[str] = attrs.field(default=None, validator=jobdata.check_framework_version)
    """With no ``image``: the cloud's prebuilt training container for framework + version."""
    inputs: dict[str, JobInput] = attrs.field(factory=dict, converter=jobdata.to_inputs)
    outputs: dict[str, JobOutput] = attrs.field(factory=dict, converter=jobdata.to_outputs)
    primary: Role = attrs.field(factory=Role)
    workers: Optional[Role] = None
    parameter_servers: Optional[Role] = None
    evaluators: Optional[Role] = None
    reduction_servers: Optional[Role] = None
    processes_per_node: Replicas = attrs.field(default=AUTO)
    interconnect: Interconnect = attrs.field(default=Interconnect.ANY, converter=choice(Interconnect, "interconnect"))
    spot: bool = False
    timeout: Optional[int] = attrs.field(default=None, validator=[positive, at_most(MAX_TIMEOUT_S, " seconds")])
    """Seconds; written in job files with an s/m/h/d suffix."""
    recovery: Optional[Recovery] = attrs.field(default=None, converter=to_recovery)
    """Restart (or move) the job when it ends for a reason listed (SPEC §15); ``None``: no recovery."""
    max_cost: Optional[float] = attrs.field(default=None, validator=check_max_cost)
    """US dollars the job may cost at most (its ``timeout`` at the profile's price, every attempt)."""
    labels: dict[str, str] = attrs.field(factory=dict, converter=to_str_map)
    tuning: Optional[Tuning] = attrs.field(default=None, converter=to_tuning)
    """Hyperparameter search over trials of this job (SPEC §8); ``None``: one run."""
    backends: dict[str, dict[str, Any]] = attrs.field(factory=dict, converter=as_dict)
    """Backend-specific settings by backend name; each backend validates its own block."""
    source: Optional[str] = attrs.field(default=None, eq=False, repr=False, metadata={serde.INTERNAL: True})
    """The file the job was read from, for error messages; not part of the job format."""

    @name.validator
    def _name(self, attribute: attrs.Attribute, value: str) -> None:
        if not isinstance(value, str) or not NAME_PATTERN.match(value):
            fail(
                attribute,
                f"{clipped_repr(value)} is not a valid job name: start with a lowercase letter, then up to 62 "
                "lowercase letters, digits or '-' (e.g. 'cassava-resnet')",
            )

    @processes_per_node.validator
    def _ppn(self, attribute: attrs.Attribute, value: Replicas) -> None:
        if value != AUTO and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            fail(attribute, f"must be a whole number >= 1 or 'auto', got {value!r}")
        at_most(MAX_PROCESSES_PER_NODE, " processes per node")(self, attribute, value)

    def __attrs_post_init__(self) -> None:
        _role_auto_only_for_reducers(self)
        jobdata.check_job(self)

    def __repr__(self) -> str:
        from omnidist import notebook  # the renderers load when a job is shown, not when one compiles

        return notebook.short_job_repr(self, effective_roles(self))

    def _repr_html_(self) -> str:
        from omnidist import notebook

        return notebook.job_html(self, effective_roles(self))

    def role(self, name: RoleName | str) -> Optional[Role]:
        """The role as written (``None`` when absent)."""
        return getattr(self, RoleName(name).value)

    # The spellings SPEC §4 promises, for the module's job-file functions below.
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> DistributedJob:
        """Build a job from plain data (as parsed from YAML/JSON); errors name ``source``."""
        return job_from_dict(data, source=source)

    @classmethod
    def from_yaml(cls, text: str, *, source: str | None = None) -> DistributedJob:
        """Parse YAML (or JSON, a subset of YAML) text into a job."""
        return job_from_yaml(text, source=source)

    def to_dict(self) -> dict[str, Any]:
        """Plain data as a job file would hold it; ``from_dict(to_dict())`` equals ``self``."""
        return job_to_dict(self)

    def to_yaml(self) -> str:
        """The job as a YAML job file."""
        return job_to_yaml(self)


# --- job files ----------------------------------------------------------------------------------

serde.register_enums(Framework, Interconnect)
serde.register_structure(DistributedJob, serde.lazy(lambda: serde.fields_structure(
    DistributedJob,
    source=serde.override(omit=True),
    timeout=serde.override(struct_hook=lambda v, _: None if v is None else serde.parse_duration(v)),
    framework_version=serde.override(struct_hook=lambda v, _: jobdata.structure_version(v)),
)))
serde.register_unstructure(DistributedJob, serde.lazy(lambda: serde.fields_unstructure(
    DistributedJob,
    name=serde.override(omit_if_default=False),
    framework=serde.override(omit_if_default=False),
    primary=serde.override(omit_if_default=False),
    source=serde.override(omit=True),
    timeout=serde.override(unstruct_hook=lambda v: None if v is None else serde.format_duration(v)),
)))


class NotAJobError(ValidationError):
    """Data without the ``primary`` every job has: either a job missing it, or not a job at all
    (another tool's file, a cloud's native spec). ``data`` is what was read, for callers that can
    say whose file it is (:func:`omnidist.api.load` asks the backends)."""

    def __init__(self, problems: Any, *, source: str | None = None, path: str = "", data: Any = None):
        super().__init__(problems, source=source, path=path)
        self.data = data


def _not_a_job(data: Mapping[str, Any], source: str | None) -> NotAJobError:
    keys = ", ".join(sorted(map(str, data))[:6]) + (", …" if len(data) > 6 else "")
    if set(map(str, data)) & set(serde.field_names(DistributedJob)):
        return NotAJobError("required: every job has one primary replica; write `primary: {}` for a CPU-only one",
                            source=source, path="primary", data=data)
    return NotAJobError(f"not a job file: none of its keys ({keys or 'none'}) is a job's. A job file names at least "
                        "name, framework, command and primary (see docs/job-format.md)", source=source, data=data)


def job_from_dict(data: Any, *, source: str | None = None) -> DistributedJob:
    """Build a :class:`DistributedJob` from parsed job-file data (within the bounds of
    :func:`omnidist.model.documents.check_shape`).

    Raises:
        NotAJobError: the data has no ``primary``: a job missing it, or no job at all.
        ValidationError: naming the field path of every other problem.
    """
    documents.check_shape(data, source=source)
    if isinstance(data, Mapping) and "primary" not in data:
        raise _not_a_job(data, source)
    if isinstance(data, Mapping) and data.get("primary") is None and "primary" in data:
        data = {**data, "primary": {}}
    job = serde.structure(data, DistributedJob, source=source)
    return attrs.evolve(job, source=source) if source else job


def job_to_dict(job: DistributedJob) -> dict[str, Any]:
    """Plain data for a job, omitting what is left at its default (replicas always shown)."""
    data = serde.unstructure(job)
    data["primary"].pop("replicas", None)  # always 1; saying so is noise
    return data


def job_from_yaml(text: str, *, source: str | None = None) -> DistributedJob:
    """Parse a job file's text."""
    data = serde.parse_yaml(text, source=source)
    if not isinstance(data, Mapping):
        raise ValidationError(f"a job file holds a mapping of keys, got {serde.kind(data)}", source=source)
    return job_from_dict(data, source=source)


def job_to_yaml(job: DistributedJob) -> str:
    """A job as YAML, keys in the order of SPEC §1."""
    return serde.dump_yaml(job_to_dict(job))


def load(path: str | os.PathLike[str]) -> DistributedJob:
    """Read a job file (YAML or JSON)."""
    return job_from_yaml(documents.read_text(path), source=str(path))
