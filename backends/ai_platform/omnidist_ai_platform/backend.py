"""The legacy AI Platform Training backend: the facade joining the tables, the pure compiler and
importer, and the client (:class:`~omnidist_ai_platform.client.AIPlatformClient`, which alone
imports the SDK). Imports flow one way: tables <- compiler, importer, client <- here.

AI Platform Training (``ml.googleapis.com/v1``) stopped taking jobs on 2025-01-31; omnidist
reads and writes its job files for migration and submits to API-compatible endpoints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from omnidist.kit import (
    Capabilities,
    CloudBackend,
    CommandLine,
    CompiledJob,
    DistributedJob,
    Footprint,
    Imports,
    LazyClient,
    MigrationPolicy,
    Note,
    Placement,
    RoleName,
)

if TYPE_CHECKING:
    from omnidist.kit import CheckpointStore
from omnidist_ai_platform import catalog
from omnidist_ai_platform.settings import AIPlatformSettings
from omnidist_ai_platform.tables import (
    BILLING,
    CONSOLE_URL,
    GCLOUD_COMMANDS,
    LEFT_BEHIND,
    NAME,
    NATIVE_FORMATS,
    NATIVE_KEYS,
    REFUSALS,
    SERVICE,
)
from omnidist_google import GCLOUD
from omnidist_google.google_labels import GOOGLE as GOOGLE_LABELS
from omnidist_google.hooks import GoogleCredentials


class AIPlatformBackend(GoogleCredentials, Imports, Placement, CloudBackend):
    """Legacy AI Platform Training (``ml v1``): compile, import, and submit to compatible endpoints.

    Submitting and following go through :class:`~omnidist_ai_platform.client.AIPlatformClient`; a
    test injects ``suffix`` (makes each ``jobId`` unique), ``request_id`` (the marker a submit labels
    its job with) and ``sleep`` (see :class:`omnidist.backend.contract.Backend`).
    """

    name = NAME
    billing = {SERVICE: BILLING}
    output_format = "json"
    settings_type = AIPlatformSettings
    client = LazyClient("omnidist_ai_platform.client:AIPlatformClient")
    testing = "omnidist_ai_platform.testing:HARNESS"
    native_formats = NATIVE_FORMATS
    command_programs = (GCLOUD,)
    capabilities = Capabilities(
        roles=frozenset(RoleName), reduction_server=True,
        accelerators=frozenset(catalog.ACCELERATOR_TYPES) | frozenset(catalog.TPU_ACCELERATORS),
        env=True,  # only through the `env K=V cmd` wrapper: needs a command
        refusals=REFUSALS,
    )
    migration = MigrationPolicy(
        vocabulary="compute_engine",
        shared_settings=frozenset({"enable_web_access", "machine_types", "network", "region", "service_account"}),
        left_behind=LEFT_BEHIND,
        machine_setting="machine_types",
        label_rules=GOOGLE_LABELS,
        module_setting="python_module",
        tpus="node",
        output_setting="job_dir",
        example_settings={"job_dir": "gs://example-bucket/out"},
        runs_instead={key: "runs a Python package on Google's runtime {runtime_version}"
                      for key in ("runtime_version", "python_module")},
    )

    def compile(self, job: DistributedJob, settings: AIPlatformSettings) -> CompiledJob:
        """The body of ``projects.jobs.create``; pure and deterministic."""
        from omnidist_ai_platform import compiler

        compiled = compiler.compile_job(job, settings)
        if job.tuning is not None:  # the same body, with trainingInput.hyperparameters
            from omnidist_ai_platform import tuning

            compiled = tuning.with_hyperparameters(compiled, job.tuning)
        return compiled

    def import_with_notes(self, request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
        """A create body or ``trainingInput`` config as a portable job, with what did not carry
        over exactly (``migrate`` reads the notes). Pure."""
        from omnidist_ai_platform import importer

        return importer.import_with_notes(request)

    def recognizes(self, native: Any) -> bool:
        """A create body, ``gcloud --config`` file or bare ``trainingInput`` (by their keys), or a
        ``gcloud ai-platform jobs submit training`` command line."""
        if isinstance(native, CommandLine):
            from omnidist_google import gcloud  # the command-line reader, only for a command line

            return any(gcloud.creates(native, *words) for words in GCLOUD_COMMANDS)
        return isinstance(native, Mapping) and bool(NATIVE_KEYS & set(native))

    def checkpoint_store(self, settings: AIPlatformSettings) -> CheckpointStore:
        """``gs://`` objects through the settings' project, credentials and ``storage_endpoint``
        (the watcher copies a checkpoint with it before a move)."""
        from omnidist_google import storage

        return storage.checkpoint_store(settings, NAME)

    def console_url(self, job_id: str, settings: AIPlatformSettings) -> str:
        """The legacy console page of the job."""
        return CONSOLE_URL.format(job_id=job_id, project=settings.project or "")

    def world(self, native: Any) -> Any:
        """What the program sees on this platform for ``native`` (docs/migration.md). Pure."""
        from omnidist_ai_platform import world

        return world.world(native)

    def tpu_hosts(self, accelerator: str) -> list[tuple[str, int]]:
        """Google's TPU VM hosts of ``accelerator``."""
        from omnidist_google.tpu import host_picks

        return host_picks(accelerator)

    def machine_offer(self) -> tuple[str, Any]:
        """legacy AI Platform Training: its machine list, and the price list they bill from."""
        from omnidist_ai_platform.catalog import MACHINES
        from omnidist_ai_platform.footprint import SERVICE

        return SERVICE, MACHINES

    def footprint(self, compiled: CompiledJob, settings: AIPlatformSettings) -> Footprint:
        """Each ``trainingInput`` slot's machine, GPUs and count, priced as Vertex AI training."""
        from omnidist_ai_platform import footprint

        return footprint.footprint(compiled.request, settings)

    def machine_alias(self, name: str) -> Optional[str]:
        """The Compute Engine machine a deprecated legacy name (``large_model``) stands for."""
        return catalog.compute_engine_name(name)
