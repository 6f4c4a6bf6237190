"""The typed vocabulary of what a job can ask for, and of what diagnostics say.

:class:`Feature` names the portable features a backend may lack. A backend declares what it
has in its :class:`~omnidist.backend.contract.Capabilities`; a compiler that meets a job using a feature
its backend lacks raises :class:`~omnidist.errors.UnsupportedFeatureError` with that
:class:`Feature`, in the words of the backend's :class:`Refusal`; ``omnidist migrate`` plans
what to give up from the same declarations (:func:`used` against the target's capabilities).

:class:`NoteCode` marks the diagnostics other code reads: a :class:`~omnidist.backend.values.Note`
carries a code and data (the role, the machine…) besides the sentence a person reads.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping


class Feature(str, enum.Enum):
    """A portable feature a job can use and a backend can lack."""

    ACCELERATOR = "accelerator"              # a GPU model (and count) per replica
    CODE = "code"                            # a local code folder shipped with the job
    COMMAND = "command"                      # a job without a command: the image's ENTRYPOINT runs
    ENV = "env"                              # environment variables
    EVALUATORS = "evaluators"                # the evaluator role
    FRAMEWORK_VERSION = "framework_version"  # a prebuilt container picked by framework version
    IMAGE = "image"                          # the container image the job runs
    INFINIBAND = "infiniband"                # interconnect: infiniband
    INPUTS = "inputs"                        # data inputs
    NATIVE = "native"                        # a native setting the portable job cannot hold (importers)
    OTHER = "other"                          # what the vocabulary has no name for (named in words)
    OUTPUTS = "outputs"                      # data outputs
    PARAMETER_SERVERS = "parameter_servers"  # the parameter-server role
    PER_ROLE_MACHINES = "per_role_machines"  # a role on other hardware than the primary's
    PER_ROLE_PROGRAMS = "per_role_programs"  # a role running another image, command, args or env
    PROCESSES_PER_NODE = "processes_per_node"
    REDUCTION_SERVERS = "reduction_servers"  # the Reduction Server role
    SPOT = "spot"                            # spot / preemptible capacity
    TUNING = "tuning"                        # a hyperparameter search

    @classmethod
    def named(cls, words: str, default: Feature) -> Feature:
        """The feature a refusal named only in words is about (plugins written before this
        vocabulary): ``role.field`` is a role's own hardware or program, else the first word names
        it (``accelerator H100``, ``inputs.data``, ``interconnect: infiniband``); ``default``
        when nothing does."""
        role, dot, field = words.partition(".")
        if dot and role in _ROLES and field in HARDWARE:
            return cls.PER_ROLE_MACHINES
        if dot and role in _ROLES and field in PROGRAM:
            return cls.PER_ROLE_PROGRAMS
        head = re.split(r"[\s.:]", words.strip(), maxsplit=1)[0]
        return cls._value2member_map_.get(head) or _ALIASES.get(head) or default


ROLE_FEATURES: Mapping[str, Feature] = {
    "evaluators": Feature.EVALUATORS,
    "parameter_servers": Feature.PARAMETER_SERVERS,
    "reduction_servers": Feature.REDUCTION_SERVERS,
}
"""Role -> the feature of having it (the primary and workers every backend has)."""

_ROLES = ("evaluators", "parameter_servers", "primary", "reduction_servers", "workers")
_ALIASES = {"interconnect": Feature.INFINIBAND}
"""Words that name a feature by another name (the only interconnect a backend can lack)."""

HARDWARE = ("accelerator", "cpus", "memory_gb", "disk_gb")
"""A role's hardware fields: another value than the primary's is :attr:`Feature.PER_ROLE_MACHINES`."""

PROGRAM = ("image", "command", "args", "env")
"""A role's program fields: another value than the primary's is :attr:`Feature.PER_ROLE_PROGRAMS`."""


class NoteCode(str, enum.Enum):
    """What a note is about, for code that reads notes (the sentence is for people)."""

    MACHINE_CHOSEN = "machine.chosen"
    """The backend picked a machine the job did not name. Data: ``machine``, and ``role`` when the
    pick is one role's (without it, the pick is every training node's)."""
    DETAIL = "detail"
    """A detail of how the job runs that changes nothing about it (the interpreter a local run's
    ``python`` is, the preview ports of a local plan): ``omnidist run`` and ``compile`` show it
    only with ``--verbose``."""
