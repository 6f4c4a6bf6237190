"""The backend contract: what a backend declares (capabilities, migration policy) and implements.

A backend is one class: tables of differences plus small functions. ``compile`` and
``import_native`` are pure (no network, no SDK import); ``submit``/``status``/``logs``/
``cancel`` are the only methods that touch a cloud. A cloud backend gets them from
:class:`omnidist.submission.cloud.CloudBackend`, through the client it declares (the SDK is imported
inside the client's methods); a backend that talks to no cloud but runs jobs (``local``)
implements them itself. The values that cross the contract are in :mod:`omnidist.backend.values`.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Optional

import attrs

from omnidist.backend.billing import Billing
from omnidist.backend.values import CompiledJob, Credentials, Footprint, JobStatus, Note
from omnidist.errors import BackendError, Refusal
from omnidist.model.features import ROLE_FEATURES, Feature
from omnidist.model.fields import as_dict
from omnidist.model.job import DistributedJob, Framework
from omnidist.model.labels import LabelRules
from omnidist.model.roles import RoleName

if TYPE_CHECKING:
    from omnidist.submission.clients import Client
    from omnidist.submission.handle import JobHandle


@attrs.frozen(kw_only=True)
class Capabilities:
    """What a backend can express; shown by ``omnidist backends`` and the docs tables, and read
    by ``omnidist migrate`` to plan what a job gives up on the way (:attr:`features`).

    Attributes:
        roles: the roles it has (every backend has the primary and workers).
        frameworks: the frameworks it runs.
        accelerators: the portable accelerators it offers.
        spot: spot / preemptible capacity.
        infiniband: ``interconnect: infiniband`` (on some machines at least).
        per_role_machines: a role on other hardware than the primary's.
        env: environment variables.
        reduction_server: the Reduction Server role.
        submit: it can create jobs (not only compile them).
        role_frameworks: roles it has with some frameworks only (role -> those frameworks).
        refusals: the words of its refusals, for the features it lacks (what migration reports
            when it gives one up); its compiler raises with the same :class:`Refusal`.
    """

    roles: frozenset[RoleName]
    frameworks: frozenset[Framework] = frozenset(Framework)
    accelerators: frozenset[str] = frozenset()
    spot: bool = False
    infiniband: bool = False
    per_role_machines: bool = True
    env: bool = True
    reduction_server: bool = False
    submit: bool = True
    role_frameworks: Mapping[RoleName, frozenset[Framework]] = attrs.field(factory=dict, converter=as_dict,
                                                                           hash=False)
    refusals: Mapping[Feature, Refusal] = attrs.field(factory=dict, converter=as_dict, hash=False)

    @property
    def features(self) -> frozenset[Feature]:
        """The portable features it declares: its roles and flags as :class:`Feature` members,
        and every other feature it has no :attr:`refusals` entry for."""
        flags = {Feature.SPOT: self.spot, Feature.INFINIBAND: self.infiniband, Feature.ENV: self.env,
                 Feature.PER_ROLE_MACHINES: self.per_role_machines,
                 Feature.REDUCTION_SERVERS: self.reduction_server and RoleName.REDUCTION_SERVERS in self.roles,
                 **{feature: RoleName(role) in self.roles for role, feature in ROLE_FEATURES.items()
                    if feature is not Feature.REDUCTION_SERVERS}}
        rest = {f for f in Feature if f not in flags and f is not Feature.NATIVE and f not in self.refusals}
        return frozenset(rest | {f for f, on in flags.items() if on})

    def has_role(self, role: RoleName, framework: Framework) -> bool:
        """True when a job of ``framework`` can have ``role`` here."""
        return role in self.roles and framework in self.role_frameworks.get(role, self.frameworks)

    def summary(self) -> str:
        """A one-line description for tables."""
        roles = ", ".join(r.value for r in RoleName if r in self.roles)
        flags = [name for name in ("spot", "infiniband", "per_role_machines", "env", "reduction_server")
                 if getattr(self, name)]
        return f"roles: {roles}; " + ", ".join(flags)


@attrs.frozen(kw_only=True)
class MigrationPolicy:
    """How jobs move between a backend and the others (:mod:`omnidist.migration` reads it).

    Attributes:
        vocabulary: backends of the same vocabulary (a name the backends of one vendor give, for the
            machines and settings their requests share) share :attr:`shared_settings`, which carry
            over between them as they are.
        shared_settings: settings keys that mean the same on every backend of the vocabulary.
        left_behind: settings key -> why a job imported from this backend loses meaning when
            that setting stays behind (other settings that stay are reported as hints).
        machine_setting: the settings key naming machines: role -> machine type with per-role
            machines, else the one machine of every training node.
        label_rules: the rules its compiler holds labels to (:class:`omnidist.model.labels.LabelRules`:
            a cloud's label or tag rules), so migration rewrites tags other clouds allow
            and it refuses; ``None`` when any tag goes.
        inputs_setting: the settings key of the inputs its commands reference as
            ``${{inputs.NAME}}``: literal ones are written into the command when a job leaves.
        module_setting: the settings key naming a Python module its jobs run without an image
            (given an image elsewhere, the job runs ``python -m MODULE``).
        runs_instead: settings key -> what a job with that setting runs instead of a container
            image (``{value}`` is the setting's value), for the error asking for ``--image``.
        tpus: how its TPU jobs reach the TPU (docs/job-format.md, TPUs): ``node`` (the program runs on a VM of its
            own and reaches a TPU Node by name), ``vm`` (the program runs on
            the TPU hosts); empty without TPUs. A TPU job moving between the two is
            reported ``changed``.
        output_setting: the settings key of the folder the job's outputs go under (such as
            ``base_output_dir`` or ``job_dir``): between backends of one vocabulary
            it is carried to the target's own key.
        example_settings: settings key -> an example value, for the settings a job may need that
            no default can give (such as an execution role's ARN): a migration missing several goes on
            with the examples to list every one at once, then fails naming them.
    """

    vocabulary: str = ""
    shared_settings: frozenset[str] = frozenset()
    left_behind: Mapping[str, str] = attrs.field(factory=dict, converter=as_dict, hash=False)
    machine_setting: str = ""
    label_rules: Optional[LabelRules] = attrs.field(default=None, hash=False)
    inputs_setting: str = ""
    module_setting: str = ""
    runs_instead: Mapping[str, str] = attrs.field(factory=dict, converter=as_dict, hash=False)
    tpus: str = ""
    output_setting: str = ""
    example_settings: Mapping[str, Any] = attrs.field(factory=dict, converter=as_dict, hash=False)

    def shares_with(self, other: MigrationPolicy) -> bool:
        """True when both backends speak the same vocabulary."""
        return bool(self.vocabulary) and self.vocabulary == other.vocabulary


class LazyClient:
    """Declares :attr:`Backend.client` by its import path, ``"package.module:Class"``: the class
    is imported when first used, so loading a backend to compile loads no client code."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __get__(self, instance: object, owner: type) -> type[Client]:
        module, _, name = self.path.partition(":")
        return getattr(importlib.import_module(module), name)


class Backend(ABC):
    """What every backend implements. Subclasses are registered under the entry-point
    group ``omnidist.backends`` with the same name as :attr:`name`.

    The required protocol is :data:`REQUIRED`: three declarations and :meth:`compile`. What a
    backend does beyond compiling it opts into with the capability classes of this module and of
    :mod:`omnidist.submission.clients` (:class:`Imports`: reading its native files back;
    :class:`Placement`: what ``plan`` prices and ``migrate`` carries), which the core finds with
    ``isinstance``; the other class attributes below are declarations with defaults.

    A cloud backend subclasses :class:`omnidist.submission.cloud.CloudBackend` and declares its
    :attr:`client`; ``submit``/``status``/``logs``/``cancel`` then go through it (retries,
    exactly-once creates, masking). A backend without one that still runs jobs (``local``)
    overrides those four methods; one that only compiles leaves them refusing.
    """

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    settings_type: ClassVar[type]
    """An attrs class holding the backend's settings (profile keys and ``backends.<name>``)."""
    output_format: ClassVar[str] = "json"
    client: ClassVar[Optional[type[Client]]] = None
    """The cloud's client (a :class:`omnidist.submission.clients.Client` subclass, or a
    :class:`LazyClient` naming one); ``None`` for a backend that talks to no cloud."""
    migration: ClassVar[MigrationPolicy] = MigrationPolicy()
    """How its jobs move to and from other backends."""
    emulation_settings: ClassVar[Mapping[str, Any]] = {}
    """Settings ``omnidist run --emulate <name>`` compiles with where the job's block gives none: stand-ins
    for what only a real account has (such as an execution role's ARN); nothing is sent anywhere."""
    billing: ClassVar[Mapping[str, Billing]] = {}
    """Service (a :class:`~omnidist.backend.values.Footprint`'s ``service``) -> how it bills: the
    services its footprints name, each with its price list, surcharge rule and fees. Placement
    prices a footprint from the service's list, which a vendor kit ships and refreshes."""
    command_programs: ClassVar[tuple[str, ...]] = ()
    """Programs whose command lines, pasted into a file, it reads as a native spec: a file whose
    first line runs one of them is read as a :class:`omnidist.compiler.commandline.CommandLine`."""
    testing: ClassVar[str] = ""
    """``"package.module:NAME"`` of its :class:`omnidist.testing.Harness` (its fake service and the
    settings that point its client there), for the suites and benchmarks that run every cloud
    backend; empty when it has none. Imported only by those."""
    opts_out: ClassVar[Mapping[str, str]] = {}
    """Shared suite (see :data:`omnidist.testing.harness.SUITES`) -> why it does not apply to this
    backend. Every shared suite runs on every backend with a harness unless it opts out here, with
    a reason the suite reports as its skip."""

    @abstractmethod
    def compile(self, job: DistributedJob, settings: Any) -> CompiledJob:
        """Build the native request. Pure: no network, no SDK import."""

    def under_profile_of(self, backend: str, settings: Any) -> Any:
        """The settings to use under a profile made for another ``backend`` (``omnidist run
        --profile P`` runs on ``local`` with the settings P holds for its own backend); the default: as they are."""
        return settings

    def submit(self, compiled: CompiledJob, settings: Any) -> JobHandle:
        """Create the job: on a cloud, retried on transient errors, never twice."""
        raise self._no_cloud()

    def status(self, job_id: str, settings: Any) -> JobStatus:
        """The job's current state."""
        raise self._no_cloud()

    def logs(self, job_id: str, settings: Any, follow: bool = False) -> Iterator[str]:
        """The job's log lines (following until it ends when ``follow``)."""
        raise self._no_cloud()

    def cancel(self, job_id: str, settings: Any) -> None:
        """Ask the cloud to cancel the job; a no-op on a finished job."""
        raise self._no_cloud()

    def _no_cloud(self) -> BackendError:
        return BackendError("this backend talks to no cloud: it cannot submit or follow jobs", backend=self.name)

    def console_url(self, job_id: str, settings: Any) -> str:
        """Where a person can look at the job; empty when there is no console."""
        return ""


class Imports(Backend):
    """Capability: the backend reads its own native files back into portable jobs (``omnidist
    import``, ``migrate`` from it, the read-back checks). It implements :meth:`import_native` or
    :meth:`import_with_notes`; :meth:`recognizes` lets ``import`` tell its files without ``--from``.
    A backend without it compiles and submits, and ``import --from`` it says it reads no files."""

    strict_json: ClassVar[bool] = False
    """Its own tools read a native ``.json`` file as strict JSON (such as a vendor CLI's ``--cli-input-json``):
    a ``.json`` file only a YAML reader takes (comments, trailing commas) is invalid for it (exit 2)."""
    native_formats: ClassVar[tuple[str, ...]] = ()
    """The native forms its importer reads, in words (listed when a file's format cannot be told)."""

    def import_native(self, request: Mapping[str, Any]) -> DistributedJob:
        """Turn a native request into a portable job. Pure. (The job of :meth:`import_with_notes`.)"""
        return self.import_with_notes(request)[0]

    def import_with_notes(self, request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
        """Like :meth:`import_native`, plus notes on what was inferred, approximated or
        dropped while importing (migration reports them).

        A backend implements one of the two: this one when its importer has something to say
        (the default has nothing to add to :meth:`import_native`)."""
        if type(self).import_native is Imports.import_native:
            raise NotImplementedError(f"backend {self.name!r} implements neither import_native nor import_with_notes")
        return self.import_native(request), ()

    def recognizes(self, native: Any) -> bool:
        """True when ``native`` (a mapping or list as read from a file) is one of this backend's
        own native formats: how ``omnidist import`` and ``migrate`` tell the source without
        ``--from``. Pure and cheap; the default recognises nothing."""
        return False

    def world(self, native: Any) -> Any:
        """What the training program sees on this platform when it runs ``native``: an
        :class:`omnidist.migration.world.World`, derived from the native request alone (not from
        the portable job). Pure; ``None`` where the backend cannot tell (the default)."""
        return None

    def split_jobs(self, native: Any) -> Sequence[Any]:
        """``native`` once per training job it holds, each part what :meth:`import_with_notes`
        reads (docs/migration.md: a YAML stream of several jobs imports as one portable job per job).
        Pure; the default holds one job, ``[native]``."""
        return [native]


class Placement(Backend):
    """Capability: the backend says where and on what its jobs run, so ``omnidist plan`` prices
    them, placements fail over between regions and the ledger records them, and ``migrate``
    carries its machine names. Without it a plan shows the price as unknown."""

    def footprint(self, compiled: CompiledJob, settings: Any) -> Optional[Footprint]:
        """What ``compiled`` runs on: the priced service, the region and the machines per role, read
        from the backend's own request (``omnidist plan`` prices it; the ledger records it). Pure.
        The default: ``None``, the backend does not say (plan shows its price as unknown)."""
        return None

    def region(self, settings: Any) -> Optional[str]:
        """Where the backend's jobs run, for the ledger and ``plan`` (default: a ``region`` setting)."""
        return getattr(settings, "region", None)

    def find_credentials(self, settings: Any) -> Optional[Credentials]:
        """Where the backend's client would find credentials, looked up without the network (what
        ``plan`` shows and what a placement skips a profile for); ``None`` (the default): the
        backend does not say."""
        return None

    def check_credentials(self, settings: Any) -> Optional[Credentials]:
        """:meth:`find_credentials`, then the cloud asked whether it accepts them, creating nothing
        (``omnidist check``): ``find_credentials(settings).checked(probe)``
        (:meth:`~omnidist.backend.values.Credentials.checked`); ``None`` (the default): the backend
        does not say."""
        return None

    def machine_offer(self) -> Optional[tuple[str, Any]]:
        """The price list its machines bill from (a service of :mod:`omnidist.placement.prices`) and
        the :class:`~omnidist.compiler.catalog.Catalog` compile picks machines from, for ``omnidist
        gpus``; ``None`` (the default) when the backend does not say."""
        return None

    def tpu_hosts(self, accelerator: str) -> list[tuple[str, int]]:
        """``(machine type, chips)`` of each TPU host it runs ``accelerator`` on, for ``omnidist
        gpus``; ``[]`` (the default): it runs no TPU."""
        return []

    def pricing_region(self, settings: Any) -> Optional[str]:
        """The region ``omnidist plan`` prices in when the settings name none (its cloud's largest,
        said in a note), or ``None`` (the default: the price comes from rows that state no region)."""
        return None

    def machine_alias(self, name: str) -> Optional[str]:
        """The name the cloud's shared machine vocabulary (the vendor's, for backends that
        share one) has for a machine only this backend calls ``name`` (a deprecated alias);
        ``None`` when ``name`` is that vocabulary's own. ``migrate`` carries machines with it."""
        return None


def footprint_of(driver: Backend, compiled: CompiledJob, settings: Any) -> Optional[Footprint]:
    """``driver``'s :meth:`Placement.footprint` of ``compiled``; ``None`` without :class:`Placement`."""
    return driver.footprint(compiled, settings) if isinstance(driver, Placement) else None


def region_of(driver: Backend, settings: Any) -> Optional[str]:
    """``driver``'s :meth:`Placement.region`; without :class:`Placement`, a ``region`` setting."""
    return driver.region(settings) if isinstance(driver, Placement) else getattr(settings, "region", None)


def machine_alias_of(driver: Backend, name: str) -> Optional[str]:
    """``driver``'s :meth:`Placement.machine_alias` for ``name``; ``None`` without :class:`Placement`."""
    return driver.machine_alias(name) if isinstance(driver, Placement) else None


REQUIRED: tuple[str, ...] = ("name", "capabilities", "settings_type", "compile")
"""The names every backend defines (:class:`Backend`'s required protocol); every other name of the
contract has a default or belongs to a capability class a backend opts into."""
