"""The Azure ML backend: its settings, the tables where Azure differs, and the glue.

Compiling and importing live in :mod:`.compiler` and :mod:`.importer` (pure); talking to
Azure lives in :mod:`.client` (:class:`~omnidist_azure_ml.client.AzureMLClient`; ``azure-ai-ml``,
imported lazily).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Optional

import attrs

from omnidist import data
from omnidist.backend import Backend, Capabilities, CompiledJob, JobState, LazyClient, Note
from omnidist.errors import UnsupportedFeatureError, ValidationError
from omnidist.job import DistributedJob, Framework, RoleName
from omnidist.retry import ClientSettings
from omnidist.runtime.platforms import azure_ml as platform

from omnidist_azure_ml import catalog

NAME = "azure_ml"

FRAMEWORK_DISTRIBUTIONS: dict[Framework, str] = {f: platform.DISTRIBUTIONS[f.value] for f in sorted(Framework)}
"""Portable framework -> Azure ``distribution.type`` (custom: see LAUNCHES_OWN_PROCESSES): the
platform's own table (:data:`omnidist.runtime.platforms.azure_ml.DISTRIBUTIONS`), which decides
the variables the nodes get."""

DISTRIBUTION_FRAMEWORKS: dict[str, Framework] = {
    kind: min((f for f, k in FRAMEWORK_DISTRIBUTIONS.items() if k == kind), key=lambda f: f.value != kind)
    for kind in sorted(set(FRAMEWORK_DISTRIBUTIONS.values()))
}
"""Azure ``distribution.type`` -> framework: derived, preferring the framework of the same name."""

LAUNCHES_OWN_PROCESSES: frozenset[Framework] = frozenset({Framework.CUSTOM})
"""Frameworks whose command starts its own per-node processes, so Azure starts one per node
(``process_count_per_instance: 1``) and only wires MASTER_ADDR/NODE_RANK/WORLD_SIZE."""

PARAMETER_SERVERS_ADD_NODES = False
"""Whether TensorFlow parameter servers get nodes of their own on top of the workers.

*Unconfirmed* (PLATFORMS.md): Azure's documented example runs ``worker_count: 2,
parameter_server_count: 1`` on ``instance_count: 2``, so omnidist keeps
``instance_count == worker_count`` and lets Azure place the parameter servers. Flip this
entry if Azure turns out to need ``instance_count = worker_count + parameter_server_count``.
"""

STATES: dict[str, JobState] = {
    "CancelRequested": JobState.CANCELLING,
    "Canceled": JobState.CANCELLED,
    "Completed": JobState.SUCCEEDED,
    "Failed": JobState.FAILED,
    "Finalizing": JobState.RUNNING,
    "NotResponding": JobState.UNKNOWN,
    "NotStarted": JobState.QUEUED,
    "Null": JobState.UNKNOWN,
    "Paused": JobState.PAUSED,
    "Preparing": JobState.PENDING,
    "Provisioning": JobState.PENDING,
    "Queued": JobState.QUEUED,
    "Running": JobState.RUNNING,
    "Starting": JobState.PENDING,
    "Unknown": JobState.UNKNOWN,
}
"""Azure ML job status -> portable state."""

JOB_TIERS: tuple[str, ...] = ("basic", "premium", "spot", "standard")
"""Values of ``queue_settings.job_tier``."""

PRIORITIES: tuple[str, ...] = ("high", "low", "medium")
"""Values of ``queue_settings.priority``."""

CREDENTIALS: tuple[str, ...] = ("anonymous", "default")
"""``default``: azure-identity's DefaultAzureCredential; ``anonymous``: a static fake token (local endpoints)."""

UNSUPPORTED_NATIVE_KEYS: dict[str, str] = {
    "identity": "the job runs under the target's own identity (the compute's, or the submitting account's)",
    "properties": "free-form job properties are Azure ML's own",
    "resources.locations": "Azure ML regions; the target's region comes from its settings",
    "resources.max_instance_count": "elastic node counts are Azure ML's own; the job runs on its instance_count",
    "resources.properties": "compute properties are Azure ML's own",
    "services": "interactive services (SSH, Jupyter, TensorBoard) are Azure ML's own; open them the target's way",
}
"""Command-job keys the portable job cannot hold -> why the job runs without them (import drops
each with a note; ``migrate --strict`` refuses to lose them)."""

_SHM = re.compile(r"^\d+[bkmgBKMG]?$")


def _choice(values: tuple[str, ...]) -> Callable[[Any, attrs.Attribute, Any], None]:
    def check(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
        if value is not None and value.lower() not in values:
            raise ValidationError(f"{value!r} is not one of {', '.join(values)}", path=attribute.name)

    return check


def _shm(instance: Any, attribute: attrs.Attribute, value: Optional[str]) -> None:
    if value is not None and not _SHM.match(value):
        raise ValidationError(f"{value!r} is not a size; write a number with b, k, m or g, e.g. 16g",
                              path=attribute.name)


@attrs.frozen(kw_only=True)
class AzureMLSettings(ClientSettings):
    """Profile keys and ``backends.azure_ml`` keys (every one documented in docs/backends/azure_ml.md);
    the retry/timeout keys come from :class:`~omnidist.retry.ClientSettings`."""

    subscription_id: Optional[str] = None
    resource_group: Optional[str] = None
    workspace: Optional[str] = None
    compute: Optional[str] = None
    """Compute cluster name; omitted -> serverless compute sized by ``resources.instance_type``."""
    instance_type: Optional[str] = None
    """VM SKU; omitted -> picked from the catalog by accelerator, cpus, memory and interconnect."""
    environment: Optional[str] = None
    """A registered/curated environment (``azureml:name:version``), used instead of the job's image."""
    shm_size: Optional[str] = attrs.field(default=None, validator=_shm)
    docker_args: Optional[str] = None
    experiment_name: Optional[str] = None
    job_tier: Optional[str] = attrs.field(default=None, validator=_choice(JOB_TIERS))
    priority: Optional[str] = attrs.field(default=None, validator=_choice(PRIORITIES))
    code: Optional[str] = None
    """Local folder (or URI) Azure uploads as the working directory of the command."""
    inputs: dict[str, Any] = attrs.field(factory=dict)
    """Job inputs, passed through as written (referenced as ``${{inputs.NAME}}`` in the command)."""
    credential: str = attrs.field(default="default", validator=_choice(CREDENTIALS))
    endpoint: Optional[str] = None
    """Resource-manager base URL override (tests, local endpoints, sovereign clouds)."""
    data_map: dict[str, str] = attrs.field(factory=dict, validator=data.check_data_map)
    """Prefix rewrites for input, output and code URIs (``{"gs://bkt/" = "azureml://datastores/ds/paths/"}``)."""


class AzureMLBackend(Backend):
    """Azure ML command jobs: PyTorch / DeepSpeed / Horovod (MPI) / TensorFlow distribution on
    one homogeneous set of nodes, with InfiniBand SKUs for multi-node GPU training.

    Submitting and following go through :class:`~omnidist_azure_ml.client.AzureMLClient`; a test
    injects ``suffix`` (each submit's job is ``<display_name>-<suffix>``) and ``sleep`` (see
    :class:`omnidist.backend.Backend`).
    """

    name = NAME
    output_format = "yaml"
    settings_type = AzureMLSettings
    client = LazyClient("omnidist_azure_ml.client:AzureMLClient")
    capabilities = Capabilities(
        roles=frozenset({RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS}),
        accelerators=frozenset(catalog.offered_accelerators()),
        spot=True,
        infiniband=True,
        per_role_machines=False,
        env=True,
        reduction_server=False,
    )

    def compile(self, job: DistributedJob, settings: AzureMLSettings) -> CompiledJob:
        """The command job YAML (as a dict) for ``job``; pure."""
        from omnidist_azure_ml import compiler

        compiled = compiler.compile_job(job, settings)
        if job.tuning is not None:  # a sweep job whose trial is this command job
            from omnidist_azure_ml import tuning

            compiled = tuning.sweep_job(compiled, job.tuning)
        return compiled

    def import_native(self, request: Mapping[str, Any]) -> DistributedJob:
        """A portable job from a command job YAML (as parsed); pure."""
        return self.import_with_notes(request)[0]

    def import_with_notes(self, request: Mapping[str, Any]) -> tuple[DistributedJob, tuple[Note, ...]]:
        """The portable job plus what was inferred (GPUs from the SKU), approximated or dropped."""
        from omnidist_azure_ml import importer, tuning

        if tuning.recognizes(request):  # a sweep job around a command job
            return tuning.import_sweep(request, importer.import_command_job)
        return importer.import_command_job(request)

    def console_url(self, job_id: str, settings: AzureMLSettings) -> str:
        """The Azure ML studio page of the job (built locally, no network)."""
        if not (settings.subscription_id and settings.resource_group and settings.workspace):
            return ""
        return (f"https://ml.azure.com/runs/{job_id}?wsid=/subscriptions/{settings.subscription_id}"
                f"/resourcegroups/{settings.resource_group}/workspaces/{settings.workspace}")


def refuse_tuning_submit(compiled: CompiledJob) -> None:
    """Tuning jobs compile and run locally; creating sweeps on Azure ML is not wired up yet."""
    if compiled.request.get("type") == "sweep":
        raise UnsupportedFeatureError(
            "tuning", NAME, "submitting tuning jobs is not supported yet: a job with a tuning block compiles to a "
            "sweep job (omnidist compile) and runs its trials locally (omnidist run), but omnidist does not "
            "create it on Azure ML.",
            "Run the trials locally with omnidist run, or create the compiled sweep yourself "
            "(omnidist compile JOB --backend azure_ml > sweep.yml; az ml job create --file sweep.yml).")


def native_state(state: str) -> JobState:
    """The portable state for an Azure status (``UNKNOWN`` for a status omnidist has not seen)."""
    return STATES.get(state, JobState.UNKNOWN)
