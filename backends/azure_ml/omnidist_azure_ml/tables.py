"""Where Azure ML differs: distributions, states, queue values, keys it drops, refusals, its files
(VM sizes: :mod:`.catalog`); sorted tables, inverses derived, imported by the rest."""

from __future__ import annotations

import re

from omnidist.kit import Billing, Ending, Feature, Framework, JobState, Refusal, lazy_pattern
from omnidist.runtime.platforms import azure_ml as platform

NAME = platform.NAME
"""The backend's name (entry point, ``backends.azure_ml`` block, runtime platform)."""

FRAMEWORK_DISTRIBUTIONS: dict[Framework, str] = {f: platform.DISTRIBUTIONS[f.value] for f in sorted(Framework)}
"""Portable framework -> Azure ``distribution.type`` : the
platform's own table (:data:`omnidist.runtime.platforms.azure_ml.DISTRIBUTIONS`), which decides
the variables the nodes get."""

DISTRIBUTION_FRAMEWORKS: dict[str, Framework] = {
    kind: min((f for f, k in FRAMEWORK_DISTRIBUTIONS.items() if k == kind), key=lambda f: f.value != kind)
    for kind in sorted(set(FRAMEWORK_DISTRIBUTIONS.values()))
}
"""Azure ``distribution.type`` -> framework: derived, preferring the framework of the same name."""

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

REFUSALS: dict[Feature, Refusal] = {
    Feature.ACCELERATOR: Refusal(
        subject="accelerator {kind}", message="no Azure ML SKU in omnidist's catalog carries {kind}.",
        hint="Use one of {offered}, or name the VM size in `backends.azure_ml.instance_type`."),
    Feature.EVALUATORS: Refusal(
        message="Azure ML command jobs have no evaluator role: every node trains.",
        hint="Evaluate inside the training loop (e.g. on rank 0) or in a separate job, and drop `evaluators`."),
    Feature.PARAMETER_SERVERS: Refusal(
        message="Azure ML only has parameter servers in its tensorflow distribution, and this job's framework is "
                "{framework}.",
        hint="Use `framework: tensorflow`, or drop `parameter_servers` for all-reduce training."),
    Feature.PER_ROLE_MACHINES: Refusal(
        subject="{role}.{field}",
        message="Azure ML runs {nodes} on the job's one instance_type with the job's command; {role} set their own "
                "{field}.",
        hint="Remove `{role}.{field}`; they run on the primary's hardware and program."),
    Feature.PER_ROLE_PROGRAMS: Refusal(
        subject="{role}.{field}",
        message="Azure ML runs one command in one environment on every node; {role} set their own {field}.",
        hint="Remove `{role}.{field}` and branch on the node's rank inside the program instead."),
    Feature.REDUCTION_SERVERS: Refusal(
        message="Azure ML has no Reduction Server; NCCL all-reduce runs among the GPU nodes themselves.",
        hint="Drop `reduction_servers` and use an InfiniBand SKU (`interconnect: infiniband`) for fast all-reduce."),
}
"""Feature -> how Azure ML refuses a job that uses it (one homogeneous set of nodes, one program)."""

NATIVE_KEYS = frozenset({"command", "compute", "distribution", "environment", "environment_variables", "resources"})
"""Top-level keys of a command job file: two of them tell one (``$schema`` and ``type`` may be missing)."""

COMMAND_JOB_KEYS = NATIVE_KEYS | {"$schema", "code", "component", "description", "display_name", "experiment_name",
                                  "identity", "inputs", "limits", "name", "outputs", "properties", "queue_settings",
                                  "services", "tags", "type"}
"""Every top-level key of a command job file (a file with another key is not one)."""

NATIVE_FORMATS: tuple[str, ...] = (
    "a command job file ($schema …commandJob…, type: command, command + environment/compute/resources), "
    "as written by hand or by job.dump()",
    "an azure.ai.ml command(...) / CommandJob object (Python)",
)
"""The native forms the importer reads (listed when a file's format cannot be told)."""

LEFT_BEHIND: dict[str, str] = {
    "code": "the code folder is not uploaded: bake it into the image",
    "docker_args": "extra `docker run` options are Azure ML's own: the target starts the container its way",
    "environment": "a registered Azure ML environment is not pulled by other clouds: the job runs its image",
}
"""Setting -> why a job moved to another backend loses meaning without it."""


SHORTAGE_CODES: dict[str, str] = {
    "ClusterMinNodesExceedCoreQuota": "quota",
    "JobNodeCountExceedsCoreQuota": "quota",
    "NotAvailableForSubscription": "capacity",
    "QuotaExceeded": "quota",
    "SkuNotAvailable": "capacity",
}
"""Azure error code -> the shortage it reports (a placement moves on): the subscription's vCPU
quota for the VM family (``JobNodeCountExceedsCoreQuota`` "…has a Standard DSv2 family vCPU quota of
2…", ``ClusterMinNodesExceedCoreQuota``, ``QuotaExceeded``), a size the region or subscription
does not offer. ``OperationNotAllowed`` is read by its text ("exceeding approved LowPriorityCores
quota"). Sources: docs/placement.md."""


def native_state(state: str) -> JobState:
    """The portable state for an Azure status (``UNKNOWN`` for a status omnidist has not seen)."""
    return STATES.get(state, JobState.UNKNOWN)


FAILURE_ENDINGS: tuple[tuple[re.Pattern[str], Ending], ...] = (
    (re.compile(r"PreemptionError"), Ending.PREEMPTION),
    (lazy_pattern(r"(?i)not enough quota|exceeds? (the )?quota|insufficient capacity|OutOfCapacity"), Ending.CAPACITY),
)
"""A failed run's error -> its ending: ``PreemptionError: Nodes of this job got pre-empted`` (a
low-priority cluster's nodes taken back); quota or capacity texts; any other (a ``UserError``
with the exit code) is the program's own failure."""

SERVICE = "azure_machine_learning"
"""The price list Azure ML compute bills from (the VM prices)."""

BILLING = Billing(
    prices="azure_vm",
    rule="Azure ML compute bills the VM price, no surcharge (infracost PR #2902: 'the same pricing as Azure "
         "VMs'; skypilot-catalog az_ml_vms.csv prices equal the VM prices)")
"""How it bills (its :attr:`Backend.billing <omnidist.kit.Backend.billing>`; the rows are its vendor kit's)."""
