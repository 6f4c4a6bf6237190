"""Roles: the five roles of a job, what each replica runs on, and the inheritance between them.

The IR keeps what the user wrote (:class:`Role`, unset fields ``None``); backends compile from
:class:`EffectiveRole` values, never from the raw :class:`Role`, so the inheritance rules below
hold identically on every cloud:

- every role's ``image``, ``command`` and ``args`` default to the job's;
- workers and evaluators run the primary's program on the primary's hardware, so their
  ``accelerator``, ``cpus``, ``memory_gb``, ``disk_gb`` (and image/command/args/env) default
  to the primary's;
- parameter servers and reduction servers inherit no hardware (they are CPU roles);
- ``accelerator: none`` on a role means no accelerator, even where it would inherit one;
- a role's ``env`` is merged over the job's (and, for workers/evaluators, the primary's).

The functions here read a job by its attributes (``job.primary``, ``job.workers``…), so this
module sits below :mod:`omnidist.model.job`.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Optional, Union

import attrs

from omnidist.errors import ValidationError
from omnidist.model import accelerators, serde
from omnidist.model import limits as bounds
from omnidist.model.data import NO_ACCELERATOR
from omnidist.model.fields import (
    at_most,
    env_names,
    fail,
    masked_argv_repr,
    masked_repr,
    non_negative,
    positive,
    to_argv,
    to_str_map,
)
from omnidist.patterns import lazy_pattern

if TYPE_CHECKING:
    from omnidist.model.job import DistributedJob

AUTO: Literal["auto"] = "auto"


class RoleName(str, enum.Enum):
    """The five roles of a job, in the order the clouds number them."""

    PRIMARY = "primary"
    WORKERS = "workers"
    PARAMETER_SERVERS = "parameter_servers"
    EVALUATORS = "evaluators"
    REDUCTION_SERVERS = "reduction_servers"

    @property
    def singular(self) -> str:
        """The runtime's name for one replica of the role (SPEC §5 ``role``)."""
        return _SINGULAR[self]


_SINGULAR = {
    RoleName.PRIMARY: "primary",
    RoleName.WORKERS: "worker",
    RoleName.PARAMETER_SERVERS: "parameter_server",
    RoleName.EVALUATORS: "evaluator",
    RoleName.REDUCTION_SERVERS: "reduction_server",
}


def _canonical_accelerator(value: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"must be an accelerator name such as 'V100', got {value!r}", path="type")
    try:
        return accelerators.canonical_name(value)
    except ValueError as exc:
        raise ValidationError(str(exc), path="type") from None


TOPOLOGY = lazy_pattern(r"^[1-9][0-9]*(x[1-9][0-9]*){1,2}$")
"""A TPU slice's topology: chips along each axis, ``4x4`` or ``2x2x1``."""


def topology_chips(topology: str) -> int:
    """The chips a topology lays out: ``4x8`` -> 32."""
    return math.prod(int(n) for n in topology.split("x"))


_COUNTED = (lazy_pattern(r"^\s*(?P<type>.+?)\s*[x×*]\s*(?P<count>\d+)\s*$", re.I),
            lazy_pattern(r"^\s*(?P<count>\d+)\s*[x×*]\s*(?P<type>.+?)\s*$", re.I))
"""``V100x8``, ``8xV100``, ``V100*8``: a count written the way machine names and catalogs write it."""


def _check_count_spelling(text: str) -> None:
    """Refuse ``V100x8``-style spellings of a known accelerator with the ``V100:8`` it means (a bare
    name that is itself an accelerator, ``A100-80GB``, passes)."""
    try:
        accelerators.canonical_name(text)
        return
    except ValueError:
        pass
    for pattern in _COUNTED:
        found = pattern.match(text)
        if found is None:
            continue
        try:
            name = accelerators.canonical_name(found["type"])
        except ValueError:
            continue
        raise ValidationError(f"unknown accelerator {text!r}; did you mean '{name}:{int(found['count'])}'? "
                              "Write TYPE:COUNT (the count after a colon)")


@attrs.frozen(kw_only=True)
class Accelerator:
    """``count`` devices of one portable accelerator ``type`` per replica.

    Accepts the ``"V100:8"`` shorthand through :meth:`parse`; ``type`` is normalized to the
    canonical portable name (case-insensitive, aliases allowed). A TPU's ``count`` is its whole
    slice, in cores (v2, v3) or chips (v5e, v6e), one of the sizes sold; a chip-counted
    slice may name its ``topology`` (``4x4``), whose chips must be the count (docs/job-format.md, TPUs).
    """

    type: str = attrs.field(converter=lambda v: _canonical_accelerator(v))
    count: int = attrs.field(default=1, validator=positive)
    topology: Optional[str] = attrs.field(default=None)

    @count.validator
    def _slice_size(self, attribute: attrs.Attribute, value: int) -> None:
        info = accelerators.BY_NAME[self.type]
        if not info.tpu:  # a TPU's sizes bound it (a TPU v3 Pod slice reaches 2048 cores)
            at_most(bounds.MAX_ACCELERATORS, " accelerators per replica")(self, attribute, value)
            return
        if isinstance(value, int) and value not in info.sizes:
            unit = "cores (8, or a multiple of 32 for a Pod slice)" if info.unit == "core" else "chips"
            sizes = ", ".join(map(str, info.sizes)) if len(info.sizes) <= 10 else f"8, 32, 64 … {info.sizes[-1]}"
            raise ValidationError(f"{self.type} comes in slices of {sizes} {unit}, got {value}", path="count")

    @topology.validator
    def _topology(self, attribute: attrs.Attribute, value: Optional[str]) -> None:
        if value is None:
            return
        info = accelerators.BY_NAME[self.type]
        if not info.topologies:
            names = ", ".join(n for n, a in accelerators.TPUS.items() if a.topologies)
            raise ValidationError(f"only TPU slices counted in chips have a topology ({names}); remove it from "
                                  f"{self.type}", path="topology")
        if not isinstance(value, str) or not TOPOLOGY.match(value):
            raise ValidationError(f"expected chips per axis such as 4x4 or 2x2x1, got {value!r}", path="topology")
        if topology_chips(value) != self.count:
            raise ValidationError(f"{value} lays out {topology_chips(value)} chips, and count is {self.count}; make "
                                  "them agree", path="topology")

    @property
    def tpu(self) -> bool:
        """True for a TPU slice."""
        return accelerators.is_tpu(self.type)

    @classmethod
    def parse(cls, text: str) -> Accelerator:
        """Parse ``"TYPE:COUNT"`` (``"V100:8"``) or a bare ``"TYPE"`` (one device)."""
        kind, sep, count = text.partition(":")
        if not sep:
            _check_count_spelling(text)
            return cls(type=kind)
        try:
            number = int(count)
        except ValueError:
            raise ValidationError(
                f"count {count!r} in {text!r} is not a whole number; write TYPE:COUNT, e.g. V100:8"
            ) from None
        return cls(type=kind, count=number)

    def __str__(self) -> str:
        return f"{self.type}:{self.count}"


Replicas = Union[int, Literal["auto"]]


def _to_accelerator(value: Union[Accelerator, str, Mapping[str, Any], None]) -> Union[Accelerator, str, None]:
    """The Python API takes the job file's spellings too: ``"V100:8"``, ``{type, count}``, or
    ``none`` (no accelerator, instead of inheriting the primary's)."""
    if value is None or isinstance(value, Accelerator):
        return value
    if isinstance(value, str) and value.strip().lower() == NO_ACCELERATOR:
        return NO_ACCELERATOR
    try:
        if isinstance(value, str):
            return Accelerator.parse(value)
        if isinstance(value, Mapping):
            return Accelerator(**value)
    except ValidationError as exc:
        raise exc.prefixed("accelerator") from None
    except TypeError as exc:
        raise ValidationError(f"{exc}; write {{type: V100, count: 8}}", path="accelerator") from None
    raise ValidationError(f"expected 'TYPE:COUNT' (e.g. V100:8), got {value!r}", path="accelerator")


@attrs.frozen(kw_only=True)
class Role:
    """One role's replicas and what each replica runs on.

    Unset fields (``None``) inherit: workers and evaluators from the primary, every role's
    image/command/args from the job. ``env`` is merged over the job's ``env``.
    """

    replicas: Replicas = attrs.field(default=1)
    accelerator: Optional[Union[Accelerator, Literal["none"]]] = attrs.field(default=None, converter=_to_accelerator)
    """``none`` means no accelerator even where the role would inherit the primary's."""
    cpus: Optional[float] = attrs.field(default=None, validator=[positive, at_most(bounds.MAX_CPUS, " vCPUs")])
    memory_gb: Optional[float] = attrs.field(default=None, validator=[positive, at_most(bounds.MAX_MEMORY_GB, " GB")])
    disk_gb: Optional[int] = attrs.field(default=None, validator=[positive, at_most(bounds.MAX_DISK_GB, " GB")])
    image: Optional[str] = None
    command: Optional[tuple[str, ...]] = attrs.field(default=None, converter=to_argv, repr=masked_argv_repr)
    args: Optional[tuple[str, ...]] = attrs.field(default=None, converter=to_argv, repr=masked_argv_repr)
    env: dict[str, str] = attrs.field(factory=dict, converter=to_str_map, validator=env_names, repr=masked_repr)

    @replicas.validator
    def _replicas(self, attribute: attrs.Attribute, value: Replicas) -> None:
        if value == AUTO:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            fail(attribute, f"must be a whole number or 'auto', got {value!r}")
        non_negative(self, attribute, value)
        at_most(bounds.MAX_REPLICAS, " replicas of one role")(self, attribute, value)


# --- inheritance: the role as each replica really gets it -------------------------------------


TRAINING_ROLES = frozenset({RoleName.PRIMARY, RoleName.WORKERS})
"""The roles whose nodes train together (the nodes ``processes_per_node`` counts on)."""

INHERITS_FROM_PRIMARY = frozenset({RoleName.WORKERS, RoleName.EVALUATORS})
"""The roles that run the primary's program on the primary's hardware unless they say otherwise."""


@attrs.frozen(kw_only=True)
class EffectiveRole:
    """A role with inheritance applied: what each of its replicas really gets.

    ``replicas`` may still be ``"auto"`` for reduction servers; the backend sizes them.
    """

    name: RoleName
    replicas: int | str
    accelerator: Optional[Accelerator]
    cpus: Optional[float]
    memory_gb: Optional[float]
    disk_gb: Optional[int]
    image: Optional[str]
    command: tuple[str, ...] = attrs.field(repr=masked_argv_repr)
    args: tuple[str, ...] = attrs.field(repr=masked_argv_repr)
    env: dict[str, str] = attrs.field(repr=masked_repr)

    @property
    def gpus(self) -> int:
        """Accelerators per replica (0 for CPU-only)."""
        return self.accelerator.count if self.accelerator else 0

    @property
    def hardware(self) -> tuple:
        """What decides the machine: two roles with equal hardware can share one machine type."""
        return (self.accelerator, self.cpus, self.memory_gb, self.disk_gb)


def _pick(value, fallback, last=None):
    """The first of the values that is set (written out: this runs for every field of every role)."""
    return value if value is not None else fallback if fallback is not None else last


_NO_ROLE = Role()
"""What a role that inherits nothing from the primary falls back to (only the job's fields)."""


_ROLE_FIELDS = tuple((name, name.value) for name in RoleName)
"""Each role with the job field that holds it, in pool order."""


def _accelerator(role: Role, base: Role) -> Optional[Accelerator]:
    # `accelerator: none` stops the inheritance instead of leaving it open.
    picked = _pick(role.accelerator, base.accelerator)
    return None if picked == NO_ACCELERATOR else picked


def effective_role(job: DistributedJob, name: RoleName | str) -> Optional[EffectiveRole]:
    """The role with inheritance applied, or ``None`` when the job does not have it."""
    if not isinstance(name, RoleName):
        name = RoleName(name)
    role: Optional[Role] = getattr(job, name.value)
    return None if role is None else _effective(job, name, role)


def _effective(job: DistributedJob, name: RoleName, role: Role) -> EffectiveRole:
    base = job.primary if name in INHERITS_FROM_PRIMARY else _NO_ROLE
    return EffectiveRole(
        name=name,
        replicas=role.replicas,
        accelerator=_accelerator(role, base),
        cpus=_pick(role.cpus, base.cpus),
        memory_gb=_pick(role.memory_gb, base.memory_gb),
        disk_gb=_pick(role.disk_gb, base.disk_gb),
        image=_pick(role.image, base.image, job.image),
        command=_pick(role.command, base.command, job.command or None) or (),
        args=_pick(role.args, base.args, job.args or None) or (),
        env={**job.env, **base.env, **role.env},
    )


def effective_roles(job: DistributedJob) -> Iterator[EffectiveRole]:
    """Every role the job has with at least one replica (or ``auto``), in pool order."""
    for name, field in _ROLE_FIELDS:
        role = getattr(job, field)
        if role is not None and (role.replicas == AUTO or role.replicas > 0):
            yield _effective(job, name, role)


def replica_count(job: DistributedJob, name: RoleName | str) -> int:
    """How many replicas a role has (0 when absent; ``auto`` counts as 0 here)."""
    role = job.role(name)
    if role is None or role.replicas == AUTO:
        return 0
    return role.replicas


def num_nodes(job: DistributedJob) -> int:
    """The nodes that train together: the primary plus the workers."""
    return 1 + replica_count(job, RoleName.WORKERS)


ONE_PROCESS_PER_NODE = frozenset({"tensorflow", "custom", "jax"})
"""Frameworks whose ``processes_per_node: auto`` is one process per node: tf.distribute drives
every GPU of a node from one process, JAX runs one process per host over all its devices, and a
custom program starts what it needs itself."""


def auto_processes(framework: str, accelerator: Optional[Union[Accelerator, str]]) -> int:
    """What ``processes_per_node: auto`` is for a ``framework`` (its value) on a node with
    ``accelerator``: one per accelerator (1 without any) for the frameworks that run one process
    per device (pytorch, deepspeed, horovod), 1 for those that run one per node
    (:data:`ONE_PROCESS_PER_NODE`) and on a TPU (one process per TPU host). Importers compare
    what a native job ran with it."""
    if framework in ONE_PROCESS_PER_NODE or not isinstance(accelerator, Accelerator) or accelerator.tpu:
        return 1  # a TPU host runs one process, which drives every chip of the host
    return accelerator.count


def processes_per_node(job: DistributedJob) -> int:
    """``processes_per_node``, with ``auto`` worked out (:func:`auto_processes`): the same N
    processes start on every node of every backend (SPEC §10)."""
    if job.processes_per_node != AUTO:
        return job.processes_per_node
    return auto_processes(job.framework.value, job.primary.accelerator)


def has_gpus(role: Optional[EffectiveRole]) -> bool:
    """True when the role exists and each replica has at least one accelerator."""
    return role is not None and role.gpus > 0


# --- reading and writing roles (the job file's spellings) -------------------------------------

def _structure_accelerator(value: Any, _: type) -> Accelerator:
    if isinstance(value, str):
        return Accelerator.parse(value)
    if isinstance(value, Mapping):
        return _accelerator_fields(value, Accelerator)
    raise ValueError(f"expected 'TYPE:COUNT' (e.g. V100:8) or {{type: V100, count: 8}}, got {serde.kind(value)}")


def _structure_role_accelerator(value: Any, _: type) -> Any:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == NO_ACCELERATOR:
        return NO_ACCELERATOR
    return _structure_accelerator(value, Accelerator)


def _structure_replicas(value: Any, _: type) -> Replicas:
    if value == AUTO:
        return AUTO
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"expected a whole number or 'auto', got {serde.kind(value)}")


# Generated on first use, not at import: generating one evaluates the classes' annotations,
# milliseconds that a command which never reads a job should not pay.
_accelerator_fields = serde.lazy(lambda: serde.fields_structure(Accelerator))
serde.register_structure(Accelerator, _structure_accelerator)
serde.register_unstructure(Accelerator, lambda a: f"{a.type}:{a.count}" if a.topology is None
                           else {"type": a.type, "count": a.count, "topology": a.topology})
serde.register_exact(Optional[Union[Accelerator, Literal["none"]]], _structure_role_accelerator)
serde.register_exact(Replicas, _structure_replicas)
serde.register_unstructure(Role, serde.lazy(lambda: serde.fields_unstructure(
    Role, replicas=serde.override(omit_if_default=False))))
