"""The Vertex AI backend: the facade joining the tables, the pure compiler and importer, and the
client (:class:`~omnidist_vertex.client.VertexClient`, which alone imports the SDK, when a job
is submitted or followed). Imports flow one way: tables <- compiler, importer, client <- here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

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
from omnidist_google import GCLOUD
from omnidist_google.google_labels import GOOGLE as GOOGLE_LABELS
from omnidist_google.hooks import GoogleCredentials
from omnidist_vertex.settings import VertexSettings
from omnidist_vertex.tables import (
    ACCELERATOR_TYPES,
    BILLING,
    CLOUD_TPU_ACCELERATORS,
    CONSOLE_URL,
    GCLOUD_COMMANDS,
    NAME,
    NATIVE_FORMATS,
    NATIVE_KEYS,
    REFUSALS,
    SERVICE,
    TPU_VM_ACCELERATORS,
    resource_name,
)


class VertexBackend(GoogleCredentials, Imports, Placement, CloudBackend):
    """Vertex AI CustomJobs: positional worker pools, per-role machines, Reduction Server.

    Submitting and following go through :class:`~omnidist_vertex.client.VertexClient` (declared
    lazily: compiling loads no client code); a test injects ``request_id`` (the create's label)
    and ``sleep`` (see :class:`omnidist.backend.contract.Backend`).
    """

    name = NAME
    billing = {SERVICE: BILLING}
    output_format = "json"
    settings_type = VertexSettings
    client = LazyClient("omnidist_vertex.client:VertexClient")
    testing = "omnidist_vertex.testing:HARNESS"
    native_formats = NATIVE_FORMATS
    command_programs = (GCLOUD,)
    capabilities = Capabilities(
        roles=frozenset(RoleName),
        accelerators=frozenset(ACCELERATOR_TYPES) | frozenset(CLOUD_TPU_ACCELERATORS) | TPU_VM_ACCELERATORS, spot=True,
        infiniband=True,  # GPUDirect RDMA, on the machines that have it
        reduction_server=True, refusals=REFUSALS,
    )
    migration = MigrationPolicy(
        vocabulary="compute_engine",
        shared_settings=frozenset({"enable_web_access", "machine_types", "network", "region", "service_account"}),
        machine_setting="machine_types",
        label_rules=GOOGLE_LABELS,
        tpus="vm",
        output_setting="base_output_dir",
    )

    def compile(self, job: DistributedJob, settings: VertexSettings) -> CompiledJob:
        """Build the CustomJob REST body (camelCase, enum names). Pure."""
        from omnidist_vertex import compiler

        compiled = compiler.compile_job(job, settings or VertexSettings())
        if job.tuning is not None:  # a HyperparameterTuningJob around the CustomJob's spec
            from omnidist_vertex import tuning

            compiled = tuning.tuning_job(compiled, job.tuning)
        return compiled

    def import_with_notes(self, request: Any) -> tuple[DistributedJob, tuple[Note, ...]]:
        """A CustomJob, a ``gcloud --config`` CustomJobSpec, ``--worker-pool-spec`` strings or a
        HyperparameterTuningJob as a portable job, with what was defaulted or dropped. Pure."""
        from omnidist_vertex import importer, tuning

        if tuning.recognizes(request):  # a HyperparameterTuningJob
            job, notes = tuning.import_tuning_job(request, importer.spec_to_job)
        else:
            job, notes = importer.import_native(request)
        return job, tuple(notes)

    def recognizes(self, native: Any) -> bool:
        """A CustomJob, CustomJobSpec or HyperparameterTuningJob (by their keys), a list of
        ``--worker-pool-spec`` strings, or a ``gcloud ai custom-jobs create`` command line."""
        if isinstance(native, CommandLine):
            from omnidist_google import gcloud  # the command-line reader, only for a command line

            return any(gcloud.creates(native, *words) for words in GCLOUD_COMMANDS)
        if isinstance(native, Mapping):
            return bool(NATIVE_KEYS & set(native))
        return isinstance(native, Sequence) and bool(native) and all(isinstance(s, str) for s in native)

    def world(self, native: Any) -> Any:
        """What the program sees on this platform for ``native`` (docs/migration.md). Pure."""
        from omnidist_vertex import world

        return world.world(native)

    def tpu_hosts(self, accelerator: str) -> list[tuple[str, int]]:
        """Google's TPU VM hosts of ``accelerator`` (none for a TPU Vertex does not run on TPU VMs)."""
        from omnidist_google.tpu import host_picks

        return host_picks(accelerator) if accelerator in TPU_VM_ACCELERATORS else []

    def machine_offer(self) -> tuple[str, Any]:
        """Vertex AI custom training: Compute Engine machine types, and the price list they bill from."""
        from omnidist_google.compute_engine import COMPUTE_ENGINE
        from omnidist_vertex.footprint import SERVICE

        return SERVICE, COMPUTE_ENGINE

    def footprint(self, compiled: CompiledJob, settings: VertexSettings) -> Footprint:
        """Each worker pool's machine, GPUs and replicas, priced from Vertex AI's training prices."""
        from omnidist_vertex import footprint

        return footprint.footprint(compiled.request, settings or VertexSettings())

    def checkpoint_store(self, settings: VertexSettings) -> CheckpointStore:
        """``gs://`` objects through the settings' project, credentials and ``storage_endpoint``
        (the watcher copies a checkpoint with it before a move)."""
        from omnidist_google import storage

        return storage.checkpoint_store(settings, NAME)

    def console_url(self, job_id: str, settings: VertexSettings) -> str:
        """The Cloud Console page for ``job_id`` (a full resource name or a bare number)."""
        parts = resource_name(job_id, settings or VertexSettings())
        if parts is None:
            return ""
        project, region, number = parts
        return CONSOLE_URL.format(region=region, job=number, project=project)
