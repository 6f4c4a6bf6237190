"""The plugin front door: every core name a backend plugin may import, in one place.

A backend plugin (``backends/<name>/omnidist_<name>/``) imports core names from this module only,
plus :mod:`omnidist.runtime` (its platform module's tables: pool indexes, variable names) and, in
its test harness and tests, :mod:`omnidist.testing`. A test holds every plugin to that
(``tests/conformance/test_plugin_layout.py``), so this page is the whole of what a backend author
has to learn of the core, grouped the way a backend is written:

- **the job** it compiles from and imports into (the IR, roles with inheritance applied, data,
  tuning, features);
- **the contract** it implements (:class:`CloudBackend`, capabilities, migration policy, settings
  checks) and the values that cross it (compiled jobs, notes, states);
- **compiling** (machine catalogs, data and code rules, command lines, runtime hints) and
  **importing** (delowering, names, durations, notes for what was left out);
- **the client** template its ``client.py`` fills in (idempotency, log paging, retries);
- **cloud knowledge** two or more plugins share (Compute Engine, TPU slices, Google Cloud labels, credentials
  and staging, ``gcloud`` command lines);
- **errors**, the one tree.

Anything a plugin needs that is not here is a defect of the kit: add it here (from the floor
where it lives), not an import of a core module. The kit sits on the top floor and names every
floor below it, but imports each name only when a plugin first uses it.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES: dict[str, str] = {
    # the job (the IR)
    "ACCELERATORS_BY_NAME": "omnidist.model.accelerators:BY_NAME",
    "canonical_accelerator": "omnidist.model.accelerators:canonical_name",
    "GPUS_BY_NAME": "omnidist.model.accelerators:GPUS",
    "TPUS_BY_NAME": "omnidist.model.accelerators:TPUS",
    "REFERENCE": "omnidist.model.data",
    "InputMode": "omnidist.model.data",
    "LabelRules": "omnidist.model.labels",
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
    "TOPOLOGY": "omnidist.model.roles",
    "topology_chips": "omnidist.model.roles",
    "auto_processes": "omnidist.model.roles",
    "dump_yaml": "omnidist.model.serde",
    "parse_duration": "omnidist.model.serde",
    "parse_yaml": "omnidist.model.serde",
    "clipped_repr": "omnidist.model.limits",
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
    # the contract, and the values that cross it
    "Backend": "omnidist.backend.contract",
    "Capabilities": "omnidist.backend.contract",
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
    "Catalog": "omnidist.compiler.catalog",
    "Machine": "omnidist.compiler.catalog",
    "big_enough": "omnidist.compiler.catalog",
    "check_named": "omnidist.compiler.catalog",
    "smallest_fit": "omnidist.compiler.catalog",
    "CODE_HASH": "omnidist.compiler.code_data",
    "DataValues": "omnidist.compiler.code_data",
    "apply_data_map": "omnidist.compiler.code_data",
    "check_data_map": "omnidist.compiler.code_data",
    "check_references": "omnidist.compiler.code_data",
    "code_folder": "omnidist.compiler.code_data",
    "data_hints": "omnidist.compiler.code_data",
    "default_output_base": "omnidist.compiler.code_data",
    "foreign_uri": "omnidist.compiler.code_data",
    "is_azure_storage": "omnidist.compiler.code_data",
    "local_path": "omnidist.compiler.code_data",
    "resolve_data": "omnidist.compiler.code_data",
    "staged_code_uri": "omnidist.compiler.code_data",
    "substituted": "omnidist.compiler.code_data",
    "unknown_version": "omnidist.compiler.code_data",
    "with_module": "omnidist.compiler.code_data",
    "needs_shell": "omnidist.compiler.commandline",
    "shell_argv": "omnidist.compiler.commandline",
    "Launcher": "omnidist.compiler.launchers",
    "read_launcher": "omnidist.compiler.launchers",
    "start_processes": "omnidist.compiler.launchers",
    "env_with_hints": "omnidist.compiler.lowering",
    "runtime_hints": "omnidist.compiler.lowering",
    "size_reducers": "omnidist.compiler.lowering",
    "refuse_tpus": "omnidist.compiler.lowering",
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
    "FLAT_ARCHIVE": "omnidist.submission.packaging:FLAT",
    "PROGRESS_ABOVE_BYTES": "omnidist.submission.packaging",
    "large_folder_warning": "omnidist.submission.packaging",
    "scan_folder": "omnidist.submission.packaging",
    "stage": "omnidist.submission.packaging",
    "StagedCode": "omnidist.submission.packaging",
    "parse_retry_after": "omnidist.submission.retry",
    "ObjectStore": "omnidist.submission.staging",
    "stage_folder": "omnidist.submission.staging:stage_code",
    # cloud knowledge shared by plugins
    "COMPUTE_ENGINE": "omnidist.clouds.compute_engine",
    "COMPUTE_ENGINE_ACCELERATORS": "omnidist.clouds.compute_engine",
    "COMPUTE_ENGINE_GPU_MACHINES": "omnidist.clouds.compute_engine",
    "N1_GPUS": "omnidist.clouds.compute_engine",
    "N1_MEMORY_PER_VCPU": "omnidist.clouds.compute_engine",
    "REDUCTION_SERVER_MACHINE": "omnidist.clouds.compute_engine",
    "compute_engine_shape": "omnidist.clouds.compute_engine",
    "CommandLine": "omnidist.clouds.gcloud",
    "Flags": "omnidist.clouds.gcloud",
    "key_values": "omnidist.clouds.gcloud",
    "merged": "omnidist.clouds.gcloud",
    "parse_flags": "omnidist.clouds.gcloud",
    "check_gs_prefix": "omnidist.clouds.google_cloud",
    "check_google_credentials": "omnidist.clouds.google_cloud",
    "find_google_credentials": "omnidist.clouds.google_cloud",
    "google_credentials": "omnidist.clouds.google_cloud",
    "stage_code": "omnidist.clouds.google_cloud",
    "storage_media_error": "omnidist.clouds.google_cloud",
    "translate_storage_error": "omnidist.clouds.google_cloud",
    "check_google_labels": "omnidist.clouds.google_labels:check_labels",
    "GOOGLE_LABELS": "omnidist.clouds.google_labels:GOOGLE",
    "DEFAULT_TPU_TOPOLOGIES": "omnidist.clouds.tpu:DEFAULT_TOPOLOGIES",
    "TPU_HOSTS": "omnidist.clouds.tpu",
    "TPU_HOSTS_BY_NAME": "omnidist.clouds.tpu:HOSTS_BY_NAME",
    "TpuSlice": "omnidist.clouds.tpu",
    "is_default_tpu_host": "omnidist.clouds.tpu:is_default_host",
    "slice_from_host": "omnidist.clouds.tpu",
    "tpu_slice": "omnidist.clouds.tpu",
    # errors
    "AuthenticationError": "omnidist.errors",
    "BackendError": "omnidist.errors",
    "ConfigError": "omnidist.errors",
    "ConflictError": "omnidist.errors",
    "InvalidRequestError": "omnidist.errors",
    "NotFoundError": "omnidist.errors",
    "NotPortableError": "omnidist.errors",
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
