"""The plugin front door: every core name a backend plugin may import, in one place.

A backend plugin (``backends/<name>/omnidist_<name>/``) imports core names from this module only,
plus :mod:`omnidist.runtime` (its platform module's tables: pool indexes, variable names) and, in
its test harness and tests, :mod:`omnidist.testing`. A test holds every plugin to that
(``tests/conformance/test_plugin_layout.py``), so this page is the whole of what a backend author
has to learn of the core, grouped the way a backend is written:

- **the job** it compiles from and imports into (the IR, roles with inheritance applied, data,
  tuning, features);
- **the contract** it implements (:class:`CloudBackend`, capabilities, migration policy, settings
  checks; the capability classes it opts into: :class:`Imports`, :class:`Placement`) and the
  values that cross it (compiled jobs, notes, states);
- **compiling** (machine catalogs, data and code rules, command lines, runtime hints) and
  **importing** (delowering, names, durations, notes for what was left out);
- **the client** template its ``client.py`` fills in (idempotency, log paging, retries), and the
  client's capability classes (:class:`StagesCode`, :class:`ReadsLogs`, :class:`ReadsTrials`,
  :class:`ReportsShortage`);
- **errors**, the one tree.

What belongs to one cloud vendor (its machines, credentials, storage, command lines, prices)
is not here: it lives in that vendor's kit (``vendors/<vendor>/``), which
imports the core through this module too; a backend imports its vendor kit directly.

Anything a plugin needs that is not here is a defect of the kit: add it here (from the floor
where it lives), not an import of a core module. The kit sits on the top floor and names every
floor below it, but imports each name only when a plugin first uses it; its ``TYPE_CHECKING``
block imports the same names for type checkers and editors (generated from ``_NAMES``; a test
keeps the two equal).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The same names as _NAMES, for type checkers and editors; generated from it (tests/conformance/test_kit_typed.py).
    # the job (the IR)
    from omnidist.model.accelerators import BY_NAME as ACCELERATORS_BY_NAME
    from omnidist.model.accelerators import canonical_name as canonical_accelerator
    from omnidist.model.accelerators import GPUS as GPUS_BY_NAME
    from omnidist.model.accelerators import TPUS as TPUS_BY_NAME
    from omnidist.model.data import REFERENCE
    from omnidist.model.data import InputMode
    from omnidist.model.labels import LabelRules
    from omnidist.model.labels import Rewrite
    from omnidist.model.data import JobInput
    from omnidist.model.data import JobOutput
    from omnidist.model.data import is_data
    from omnidist.model.data import is_package
    from omnidist.model.data import scheme as uri_scheme
    from omnidist.model.features import HARDWARE
    from omnidist.model.features import PROGRAM
    from omnidist.model.features import Feature
    from omnidist.model.features import NoteCode
    from omnidist.model.job import DistributedJob
    from omnidist.model.job import Framework
    from omnidist.model.job import Interconnect
    from omnidist.model.job import job_from_dict
    from omnidist.model.job import job_from_yaml
    from omnidist.model.job import job_to_dict
    from omnidist.model.roles import AUTO
    from omnidist.model.roles import Accelerator
    from omnidist.model.roles import EffectiveRole
    from omnidist.model.roles import Role
    from omnidist.model.roles import RoleName
    from omnidist.model.roles import effective_role
    from omnidist.model.roles import effective_roles
    from omnidist.model.roles import num_nodes
    from omnidist.model.roles import processes_per_node
    from omnidist.model.roles import replica_count
    from omnidist.model.roles import TRAINING_ROLES
    from omnidist.model.roles import INHERITS_FROM_PRIMARY
    from omnidist.model.roles import TOPOLOGY
    from omnidist.model.roles import topology_chips
    from omnidist.model.roles import auto_processes
    from omnidist.model.serde import dump_yaml
    from omnidist.model.serde import parse_duration
    from omnidist.model.serde import parse_yaml
    from omnidist.model.limits import clipped_repr
    from omnidist.patterns import lazy_pattern
    from omnidist.model.fields import as_tuple
    from omnidist.model.serde import read_document
    from omnidist.model.serde import structure
    from omnidist.model.tuning import PARAMETER_NAME
    from omnidist.model.tuning import RANGE_TYPES
    from omnidist.model.tuning import Algorithm
    from omnidist.model.tuning import Goal
    from omnidist.model.tuning import Parameter
    from omnidist.model.tuning import ParameterType
    from omnidist.model.tuning import Scale
    from omnidist.model.tuning import Tuning
    from omnidist.model.recovery import Ending
    from omnidist.model.recovery import Recovery
    # the contract, and the values that cross it
    from omnidist.backend.contract import Backend
    from omnidist.backend.contract import Capabilities
    from omnidist.backend.contract import Imports
    from omnidist.backend.contract import Placement
    from omnidist.backend.contract import LazyClient
    from omnidist.backend.contract import MigrationPolicy
    from omnidist.backend.settings import ClientSettings
    from omnidist.backend.settings import check_one_line
    from omnidist.backend.settings import at_least
    from omnidist.backend.settings import one_of
    from omnidist.backend.settings import role_keys
    from omnidist.backend.values import REQUEST_ID_LABEL
    from omnidist.backend.values import CompiledJob
    from omnidist.backend.values import Credentials
    from omnidist.backend.values import Footprint
    from omnidist.backend.values import Pool
    from omnidist.backend.values import JobState
    from omnidist.backend.values import JobStatus
    from omnidist.backend.values import Note
    from omnidist.backend.values import NoteKind
    from omnidist.backend.values import Trial
    from omnidist.backend.values import best_trial
    from omnidist.config import Target
    from omnidist.config import settings_for
    from omnidist.submission.cloud import CloudBackend
    from omnidist.submission.handle import JobHandle
    # compiling
    from omnidist.compiler.catalog import Attachment
    from omnidist.compiler.catalog import MachineCatalog
    from omnidist.compiler.recovery import watcher_note
    from omnidist.recovery.endings import classify as classify_ending
    from omnidist.compiler.catalog import Machine
    from omnidist.compiler.catalog import big_enough
    from omnidist.compiler.catalog import check_named
    from omnidist.compiler.catalog import smallest_fit
    from omnidist.compiler.code_data import CODE_HASH
    from omnidist.compiler.code_data import CODE_OBJECT
    from omnidist.compiler.code_data import DataValues
    from omnidist.compiler.code_data import apply_data_map
    from omnidist.compiler.code_data import check_data_map
    from omnidist.compiler.code_data import check_references
    from omnidist.compiler.code_data import code_folder
    from omnidist.compiler.code_data import data_hints
    from omnidist.compiler.code_data import default_output_base
    from omnidist.compiler.code_data import foreign_uri
    from omnidist.compiler.code_data import local_path
    from omnidist.compiler.code_data import resolve_data
    from omnidist.compiler.code_data import staged_code_uri
    from omnidist.compiler.code_data import substituted
    from omnidist.compiler.code_data import unknown_version
    from omnidist.compiler.code_data import with_module
    from omnidist.compiler.commandline import CommandLine
    from omnidist.compiler.commandline import needs_shell
    from omnidist.compiler.commandline import shell_argv
    from omnidist.compiler.launchers import Launcher
    # what the program sees: each backend's world(native)
    from omnidist.migration.world import World
    from omnidist.migration.world import Node as WorldNode
    from omnidist.migration.world import Image as WorldImage
    from omnidist.migration.world import DataPath
    from omnidist.migration.world import Given
    from omnidist.migration.world import Access
    from omnidist.migration.world import Launcher as StartedBy
    from omnidist.migration.world import ENTRYPOINT
    from omnidist.migration.world import ARGV
    from omnidist.migration.world import TORCH_VARIABLES
    from omnidist.migration.world import MPI_VARIABLES
    from omnidist.migration.world import PROCESS_VARIABLES
    from omnidist.migration.world import registry_of
    from omnidist.migration.world import launched
    from omnidist.migration.world import env_list
    from omnidist.migration.world import uris_in
    from omnidist.compiler.launchers import read_launcher
    from omnidist.compiler.launchers import start_processes
    from omnidist.compiler.lowering import env_with_hints
    from omnidist.compiler.lowering import runtime_hints
    from omnidist.compiler.lowering import size_reducers
    from omnidist.compiler.lowering import refuse_tpus
    from omnidist.compiler.lowering import tpu_backends
    from omnidist.compiler.lowering import tpu_role
    from omnidist.compiler.lowering import tpu_slice_of
    # importing
    from omnidist.compiler.delowering import RETIRED_GPUS
    from omnidist.compiler.delowering import cannot_hold
    from omnidist.compiler.delowering import delower
    from omnidist.compiler.delowering import dropped_note
    from omnidist.compiler.delowering import native_text
    from omnidist.compiler.delowering import format_proto_duration
    from omnidist.compiler.delowering import native_duration
    from omnidist.compiler.delowering import parse_proto_duration
    from omnidist.compiler.delowering import pick_name
    from omnidist.compiler.delowering import portable_env
    from omnidist.compiler.delowering import portable_name
    from omnidist.compiler.delowering import proto_json_keys
    from omnidist.compiler.delowering import retired_gpu
    from omnidist.compiler.delowering import shorten
    from omnidist.compiler.delowering import tpu_refusal
    from omnidist.compiler.delowering import trials_at_once
    # the client
    from omnidist.secrets import mask_error
    from omnidist.secrets import mask_text
    from omnidist.secrets import secret_values
    from omnidist.submission.clients import Client
    from omnidist.submission.clients import Idempotency
    from omnidist.submission.clients import Keyed
    from omnidist.submission.clients import Shortage
    from omnidist.submission.clients import shortage_in
    from omnidist.submission.clients import LogPage
    from omnidist.submission.clients import LogStart
    from omnidist.submission.clients import labelled
    from omnidist.submission.clients import ReadsLogs
    from omnidist.submission.clients import ReadsTrials
    from omnidist.submission.clients import ReportsShortage
    from omnidist.submission.clients import StagesCode
    from omnidist.submission.packaging import FLAT as FLAT_ARCHIVE
    from omnidist.submission.packaging import PROGRESS_ABOVE_BYTES
    from omnidist.submission.packaging import large_folder_warning
    from omnidist.submission.packaging import scan_folder
    from omnidist.submission.packaging import stage
    from omnidist.submission.packaging import StagedCode
    from omnidist.submission.retry import parse_retry_after
    # prices: how a backend bills, and what a vendor kit declares about its price lists
    from omnidist.backend.billing import Billing
    from omnidist.placement.refresh import Fetcher as PriceFetcher
    from omnidist.placement.refresh import MAX_PAGES as PRICE_LIST_MAX_PAGES
    from omnidist.placement.prices import Row as PriceRow
    from omnidist.vendors import PriceSource
    from omnidist.vendors import Vendor
    from omnidist.vendors import AssetReference
    from omnidist.placement.refresh import portable_accelerator
    from omnidist.placement.refresh import price_value
    from omnidist.placement.refresh import shown_url
    from omnidist.placement.refresh import skypilot_source
    from omnidist.submission.staging import ObjectStore
    from omnidist.recovery.checkpoints import CheckpointStore
    from omnidist.submission.staging import stage_folder
    # errors
    from omnidist.errors import AuthenticationError
    from omnidist.errors import BackendError
    from omnidist.errors import ConfigError
    from omnidist.errors import ConflictError
    from omnidist.errors import InvalidRequestError
    from omnidist.errors import NotFoundError
    from omnidist.errors import NotPortableError
    from omnidist.errors import PORTABLE
    from omnidist.errors import OmnidistError
    from omnidist.errors import PermissionDeniedError
    from omnidist.errors import ShortageError
    from omnidist.errors import Problem
    from omnidist.errors import Refusal
    from omnidist.errors import TransientBackendError
    from omnidist.errors import UnsupportedFeatureError
    from omnidist.errors import ValidationError
    from omnidist.errors import error_for_status

_NAMES: dict[str, str] = {
    # the job (the IR)
    "ACCELERATORS_BY_NAME": "omnidist.model.accelerators:BY_NAME",
    "canonical_accelerator": "omnidist.model.accelerators:canonical_name",
    "GPUS_BY_NAME": "omnidist.model.accelerators:GPUS",
    "TPUS_BY_NAME": "omnidist.model.accelerators:TPUS",
    "REFERENCE": "omnidist.model.data",
    "InputMode": "omnidist.model.data",
    "LabelRules": "omnidist.model.labels",
    "Rewrite": "omnidist.model.labels",
    "JobInput": "omnidist.model.data",
    "JobOutput": "omnidist.model.data",
    "is_data": "omnidist.model.data",
    "is_package": "omnidist.model.data",
    "uri_scheme": "omnidist.model.data:scheme",
    "HARDWARE": "omnidist.model.features",
    "PROGRAM": "omnidist.model.features",
    "Feature": "omnidist.model.features",
    "NoteCode": "omnidist.model.features",
    "DistributedJob": "omnidist.model.job",
    "Framework": "omnidist.model.job",
    "Interconnect": "omnidist.model.job",
    "job_from_dict": "omnidist.model.job",
    "job_from_yaml": "omnidist.model.job",
    "job_to_dict": "omnidist.model.job",
    "AUTO": "omnidist.model.roles",
    "Accelerator": "omnidist.model.roles",
    "EffectiveRole": "omnidist.model.roles",
    "Role": "omnidist.model.roles",
    "RoleName": "omnidist.model.roles",
    "effective_role": "omnidist.model.roles",
    "effective_roles": "omnidist.model.roles",
    "num_nodes": "omnidist.model.roles",
    "processes_per_node": "omnidist.model.roles",
    "replica_count": "omnidist.model.roles",
    "TRAINING_ROLES": "omnidist.model.roles",
    "INHERITS_FROM_PRIMARY": "omnidist.model.roles",
    "TOPOLOGY": "omnidist.model.roles",
    "topology_chips": "omnidist.model.roles",
    "auto_processes": "omnidist.model.roles",
    "dump_yaml": "omnidist.model.serde",
    "parse_duration": "omnidist.model.serde",
    "parse_yaml": "omnidist.model.serde",
    "clipped_repr": "omnidist.model.limits",
    "lazy_pattern": "omnidist.patterns",
    "as_tuple": "omnidist.model.fields",
    "read_document": "omnidist.model.serde",
    "structure": "omnidist.model.serde",
    "PARAMETER_NAME": "omnidist.model.tuning",
    "RANGE_TYPES": "omnidist.model.tuning",
    "Algorithm": "omnidist.model.tuning",
    "Goal": "omnidist.model.tuning",
    "Parameter": "omnidist.model.tuning",
    "ParameterType": "omnidist.model.tuning",
    "Scale": "omnidist.model.tuning",
    "Tuning": "omnidist.model.tuning",
    "Ending": "omnidist.model.recovery",
    "Recovery": "omnidist.model.recovery",
    # the contract, and the values that cross it
    "Backend": "omnidist.backend.contract",
    "Capabilities": "omnidist.backend.contract",
    "Imports": "omnidist.backend.contract",
    "Placement": "omnidist.backend.contract",
    "LazyClient": "omnidist.backend.contract",
    "MigrationPolicy": "omnidist.backend.contract",
    "ClientSettings": "omnidist.backend.settings",
    "check_one_line": "omnidist.backend.settings",
    "at_least": "omnidist.backend.settings",
    "one_of": "omnidist.backend.settings",
    "role_keys": "omnidist.backend.settings",
    "REQUEST_ID_LABEL": "omnidist.backend.values",
    "CompiledJob": "omnidist.backend.values",
    "Credentials": "omnidist.backend.values",
    "Footprint": "omnidist.backend.values",
    "Pool": "omnidist.backend.values",
    "JobState": "omnidist.backend.values",
    "JobStatus": "omnidist.backend.values",
    "Note": "omnidist.backend.values",
    "NoteKind": "omnidist.backend.values",
    "Trial": "omnidist.backend.values",
    "best_trial": "omnidist.backend.values",
    "Target": "omnidist.config",
    "settings_for": "omnidist.config",
    "CloudBackend": "omnidist.submission.cloud",
    "JobHandle": "omnidist.submission.handle",
    # compiling
    "Attachment": "omnidist.compiler.catalog",
    "MachineCatalog": "omnidist.compiler.catalog",
    "watcher_note": "omnidist.compiler.recovery",
    "classify_ending": "omnidist.recovery.endings:classify",
    "Machine": "omnidist.compiler.catalog",
    "big_enough": "omnidist.compiler.catalog",
    "check_named": "omnidist.compiler.catalog",
    "smallest_fit": "omnidist.compiler.catalog",
    "CODE_HASH": "omnidist.compiler.code_data",
    "CODE_OBJECT": "omnidist.compiler.code_data",
    "DataValues": "omnidist.compiler.code_data",
    "apply_data_map": "omnidist.compiler.code_data",
    "check_data_map": "omnidist.compiler.code_data",
    "check_references": "omnidist.compiler.code_data",
    "code_folder": "omnidist.compiler.code_data",
    "data_hints": "omnidist.compiler.code_data",
    "default_output_base": "omnidist.compiler.code_data",
    "foreign_uri": "omnidist.compiler.code_data",
    "local_path": "omnidist.compiler.code_data",
    "resolve_data": "omnidist.compiler.code_data",
    "staged_code_uri": "omnidist.compiler.code_data",
    "substituted": "omnidist.compiler.code_data",
    "unknown_version": "omnidist.compiler.code_data",
    "with_module": "omnidist.compiler.code_data",
    "CommandLine": "omnidist.compiler.commandline",
    "needs_shell": "omnidist.compiler.commandline",
    "shell_argv": "omnidist.compiler.commandline",
    "Launcher": "omnidist.compiler.launchers",
    # what the program sees: each backend's world(native)
    "World": "omnidist.migration.world",
    "WorldNode": "omnidist.migration.world:Node",
    "WorldImage": "omnidist.migration.world:Image",
    "DataPath": "omnidist.migration.world",
    "Given": "omnidist.migration.world",
    "Access": "omnidist.migration.world",
    "StartedBy": "omnidist.migration.world:Launcher",
    "ENTRYPOINT": "omnidist.migration.world",
    "ARGV": "omnidist.migration.world",
    "TORCH_VARIABLES": "omnidist.migration.world",
    "MPI_VARIABLES": "omnidist.migration.world",
    "PROCESS_VARIABLES": "omnidist.migration.world",
    "registry_of": "omnidist.migration.world",
    "launched": "omnidist.migration.world",
    "env_list": "omnidist.migration.world",
    "uris_in": "omnidist.migration.world",
    "read_launcher": "omnidist.compiler.launchers",
    "start_processes": "omnidist.compiler.launchers",
    "env_with_hints": "omnidist.compiler.lowering",
    "runtime_hints": "omnidist.compiler.lowering",
    "size_reducers": "omnidist.compiler.lowering",
    "refuse_tpus": "omnidist.compiler.lowering",
    "tpu_backends": "omnidist.compiler.lowering",
    "tpu_role": "omnidist.compiler.lowering",
    "tpu_slice_of": "omnidist.compiler.lowering",
    # importing
    "RETIRED_GPUS": "omnidist.compiler.delowering",
    "cannot_hold": "omnidist.compiler.delowering",
    "delower": "omnidist.compiler.delowering",
    "dropped_note": "omnidist.compiler.delowering",
    "native_text": "omnidist.compiler.delowering",
    "format_proto_duration": "omnidist.compiler.delowering",
    "native_duration": "omnidist.compiler.delowering",
    "parse_proto_duration": "omnidist.compiler.delowering",
    "pick_name": "omnidist.compiler.delowering",
    "portable_env": "omnidist.compiler.delowering",
    "portable_name": "omnidist.compiler.delowering",
    "proto_json_keys": "omnidist.compiler.delowering",
    "retired_gpu": "omnidist.compiler.delowering",
    "shorten": "omnidist.compiler.delowering",
    "tpu_refusal": "omnidist.compiler.delowering",
    "trials_at_once": "omnidist.compiler.delowering",
    # the client
    "mask_error": "omnidist.secrets",
    "mask_text": "omnidist.secrets",
    "secret_values": "omnidist.secrets",
    "Client": "omnidist.submission.clients",
    "Idempotency": "omnidist.submission.clients",
    "Keyed": "omnidist.submission.clients",
    "Shortage": "omnidist.submission.clients",
    "shortage_in": "omnidist.submission.clients",
    "LogPage": "omnidist.submission.clients",
    "LogStart": "omnidist.submission.clients",
    "labelled": "omnidist.submission.clients",
    "ReadsLogs": "omnidist.submission.clients",
    "ReadsTrials": "omnidist.submission.clients",
    "ReportsShortage": "omnidist.submission.clients",
    "StagesCode": "omnidist.submission.clients",
    "FLAT_ARCHIVE": "omnidist.submission.packaging:FLAT",
    "PROGRESS_ABOVE_BYTES": "omnidist.submission.packaging",
    "large_folder_warning": "omnidist.submission.packaging",
    "scan_folder": "omnidist.submission.packaging",
    "stage": "omnidist.submission.packaging",
    "StagedCode": "omnidist.submission.packaging",
    "parse_retry_after": "omnidist.submission.retry",
    # prices: how a backend bills, and what a vendor kit declares about its price lists
    "Billing": "omnidist.backend.billing",
    "PriceFetcher": "omnidist.placement.refresh:Fetcher",
    "PRICE_LIST_MAX_PAGES": "omnidist.placement.refresh:MAX_PAGES",
    "PriceRow": "omnidist.placement.prices:Row",
    "PriceSource": "omnidist.vendors",
    "Vendor": "omnidist.vendors",
    "AssetReference": "omnidist.vendors",
    "portable_accelerator": "omnidist.placement.refresh",
    "price_value": "omnidist.placement.refresh",
    "shown_url": "omnidist.placement.refresh",
    "skypilot_source": "omnidist.placement.refresh",
    "ObjectStore": "omnidist.submission.staging",
    "CheckpointStore": "omnidist.recovery.checkpoints",
    "stage_folder": "omnidist.submission.staging",
    # errors
    "AuthenticationError": "omnidist.errors",
    "BackendError": "omnidist.errors",
    "ConfigError": "omnidist.errors",
    "ConflictError": "omnidist.errors",
    "InvalidRequestError": "omnidist.errors",
    "NotFoundError": "omnidist.errors",
    "NotPortableError": "omnidist.errors",
    "PORTABLE": "omnidist.errors",
    "OmnidistError": "omnidist.errors",
    "PermissionDeniedError": "omnidist.errors",
    "ShortageError": "omnidist.errors",
    "Problem": "omnidist.errors",
    "Refusal": "omnidist.errors",
    "TransientBackendError": "omnidist.errors",
    "UnsupportedFeatureError": "omnidist.errors",
    "ValidationError": "omnidist.errors",
    "error_for_status": "omnidist.errors",
}
"""Each name the kit offers -> where it lives: ``"module"`` (the same name there) or
``"module:name"`` (renamed here, where the module's own name reads ambiguously in a plugin).
Imported on first use (PEP 562), so a plugin that only compiles loads no client, packaging or
cloud-storage code: ``from omnidist.kit import X`` costs what ``X`` costs."""

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    where = _NAMES.get(name)
    if where is None:
        raise AttributeError(f"omnidist.kit offers no {name!r}: a name a plugin needs goes into omnidist.kit._NAMES")
    module, _, attribute = where.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
