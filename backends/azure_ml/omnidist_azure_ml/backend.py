"""The Azure ML backend: the facade joining the tables, the pure compiler and importer, and the
client (:class:`~omnidist_azure_ml.client.AzureMLClient`, which alone imports ``azure-ai-ml``).
Imports flow one way: tables <- compiler, importer, client <- here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from omnidist.kit import (
    Capabilities,
    CloudBackend,
    CompiledJob,
    Credentials,
    DistributedJob,
    Footprint,
    Framework,
    Imports,
    LazyClient,
    MigrationPolicy,
    Note,
    Placement,
    RoleName,
    refuse_tpus,
)
from omnidist_azure_ml import catalog
from omnidist_azure_ml.settings import AzureMLSettings
from omnidist_azure_ml.tables import (
    BILLING,
    COMMAND_JOB_KEYS,
    LEFT_BEHIND,
    NAME,
    NATIVE_FORMATS,
    NATIVE_KEYS,
    REFUSALS,
    SERVICE,
)


class AzureMLBackend(Imports, Placement, CloudBackend):
    """Azure ML command jobs: PyTorch / DeepSpeed / Horovod (MPI) / TensorFlow distribution on
    one homogeneous set of nodes, with InfiniBand SKUs for multi-node GPU training.

    Submitting and following go through :class:`~omnidist_azure_ml.client.AzureMLClient`; a test
    injects ``suffix`` (each submit's job is ``<display_name>-<suffix>``) and ``sleep`` (see
    :class:`omnidist.backend.contract.Backend`).
    """

    name = NAME
    billing = {SERVICE: BILLING}
    output_format = "yaml"
    settings_type = AzureMLSettings
    client = LazyClient("omnidist_azure_ml.client:AzureMLClient")
    testing = "omnidist_azure_ml.testing:HARNESS"
    native_formats = NATIVE_FORMATS
    capabilities = Capabilities(
        roles=frozenset({RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS}),
        accelerators=frozenset(catalog.offered_accelerators()), spot=True, infiniband=True, per_role_machines=False,
        role_frameworks={RoleName.PARAMETER_SERVERS: frozenset({Framework.TENSORFLOW})}, refusals=REFUSALS,
    )
    migration = MigrationPolicy(left_behind=LEFT_BEHIND, machine_setting="instance_type", inputs_setting="inputs",
                                runs_instead={"environment": "runs the Azure ML environment {environment}"})

    def compile(self, job: DistributedJob, settings: AzureMLSettings) -> CompiledJob:
        """The command job YAML (as a dict) for ``job``; pure. A TPU is exit 3 naming it (docs/job-format.md, TPUs)."""
        from omnidist_azure_ml import compiler

        refuse_tpus(job, self.name, "Azure ML offers GPU virtual machines, no TPUs")
        compiled = compiler.compile_job(job, settings)
        if job.tuning is not None:  # a sweep job whose trial is this command job
            from omnidist_azure_ml import tuning

            compiled = tuning.sweep_job(compiled, job.tuning)
        return compiled

    def import_with_notes(self, request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
        """A command or sweep job (as parsed) as a portable job, with what was inferred (GPUs from
        the SKU), approximated or dropped. Pure."""
        from omnidist_azure_ml import importer, tuning

        if tuning.recognizes(request):  # a sweep job around a command job
            return tuning.import_sweep(request, importer.import_command_job)
        return importer.import_command_job(request)

    def recognizes(self, native: Any) -> bool:
        """A command or sweep job file (its ``$schema``, its ``type``, a ``component``, or two of
        its keys), or a file of command-job keys only that runs a command."""
        if not isinstance(native, Mapping):
            return False
        keys = set(native)
        kind = native.get("type")
        if ("azureml" in str(native.get("$schema", "")) or str(kind).lower() in ("command", "sweep")
                or "component" in keys or len(keys & NATIVE_KEYS) >= 2):
            return True
        return "command" in keys and len(keys) > 1 and keys <= COMMAND_JOB_KEYS

    def world(self, native: Any) -> Any:
        """What the program sees on this platform for ``native`` (docs/migration.md). Pure."""
        from omnidist_azure_ml import world

        return world.world(native)

    def pricing_region(self, settings: AzureMLSettings) -> Optional[str]:
        """Azure's largest region (``eastus``), for a plan whose profile names no workspace ``region``."""
        return "eastus"

    def find_credentials(self, settings: Any) -> Credentials:
        """DefaultAzureCredential's sources looked up offline: the environment, the Azure CLI's login."""
        from omnidist_azure_ml.credentials import find

        return find(settings)

    def check_credentials(self, settings: Any) -> Credentials:
        """The credentials found, asked for an Azure Resource Manager token (nothing is created)."""
        from omnidist_azure_ml.credentials import check

        return check(settings)

    def machine_offer(self) -> tuple[str, Any]:
        """Azure ML compute: Azure VM sizes, and the price list they bill from."""
        from omnidist_azure_ml.catalog import MACHINES
        from omnidist_azure_ml.footprint import SERVICE

        return SERVICE, MACHINES

    def footprint(self, compiled: CompiledJob, settings: AzureMLSettings) -> Footprint:
        """``instance_count`` nodes of the job's VM size, priced as Azure VMs in the ``region`` setting."""
        from omnidist_azure_ml import footprint

        return footprint.footprint(compiled.request, settings, compiled.diagnostics)

    def console_url(self, job_id: str, settings: AzureMLSettings) -> str:
        """The Azure ML studio page of the job (built locally, no network)."""
        if not (settings.subscription_id and settings.resource_group and settings.workspace):
            return ""
        return (f"https://ml.azure.com/runs/{job_id}?wsid=/subscriptions/{settings.subscription_id}"
                f"/resourcegroups/{settings.resource_group}/workspaces/{settings.workspace}")
