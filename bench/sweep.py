"""A hyperparameter sweep, and the same requests built two ways: through ``omnidist.compile``
and by hand with each cloud's own SDK objects (what a user without omnidist writes).

The hand-written builders hard-code what omnidist picks (machines, SKUs, env wrapper), as such
a user would; they produce the same request shape, not a simplified one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import attrs

IMAGE = "us-docker.pkg.dev/p/trainers/sweep:1.0"
COMMAND = ("python", "-m", "trainer.task")
ACCELERATORS = ("T4:1", "V100:2", "V100:8")
"""Accelerators the sweep visits (every cloud backend offers them)."""

VERTEX = {  # accelerator -> (machine, acceleratorType, count), as omnidist's catalog picks them
    "T4:1": ("n1-standard-4", "NVIDIA_TESLA_T4", 1),
    "V100:2": ("n1-standard-8", "NVIDIA_TESLA_V100", 2),
    "V100:8": ("n1-standard-32", "NVIDIA_TESLA_V100", 8),
}
LEGACY = {
    "T4:1": ("n1-highmem-2", "NVIDIA_TESLA_T4", 1),
    "V100:2": ("n1-highmem-2", "NVIDIA_TESLA_V100", 2),
    "V100:8": ("n1-highmem-2", "NVIDIA_TESLA_V100", 8),
}
AZURE = {"T4:1": ("Standard_NC4as_T4_v3", 1), "V100:2": ("Standard_ND40rs_v2", 2), "V100:8": ("Standard_ND40rs_v2", 8)}


@attrs.frozen
class Trial:
    """One point of the sweep."""

    index: int
    lr: str
    batch: str
    workers: int
    accelerator: str

    @property
    def name(self) -> str:
        """The job's name."""
        return f"sweep-{self.index}"

    @property
    def args(self) -> tuple[str, ...]:
        """The trainer's arguments."""
        return ("--lr", self.lr, "--batch-size", self.batch)


def trials(count: int) -> list[Trial]:
    """``count`` trials over learning rate x batch size x workers x accelerator."""
    grid = itertools.cycle(itertools.product(("0.1", "0.03", "0.01", "0.003"), ("64", "128", "256"),
                                             (1, 2, 4), ACCELERATORS))
    return [Trial(i, *point) for i, point in zip(range(count), grid)]


def job_document(trial: Trial) -> dict[str, Any]:
    """The portable job of a trial."""
    return {"name": trial.name, "framework": "pytorch", "image": IMAGE, "command": list(COMMAND),
            "args": list(trial.args), "env": {"NCCL_DEBUG": "INFO"},
            "primary": {"accelerator": trial.accelerator}, "workers": {"replicas": trial.workers},
            "timeout": "2h", "labels": {"sweep": "lr-batch"}}


def omnidist_jobs(sweep: list[Trial]) -> Iterator[Any]:
    """The sweep as :class:`DistributedJob` values made the omnidist way: ``evolve`` a base job."""
    from omnidist import serde
    from omnidist.job import Accelerator

    base = serde.job_from_dict(job_document(sweep[0]))
    for trial in sweep:
        yield attrs.evolve(base, name=trial.name, args=trial.args,
                           primary=attrs.evolve(base.primary, accelerator=Accelerator.parse(trial.accelerator)),
                           workers=attrs.evolve(base.workers, replicas=trial.workers))


# --- by hand, with each SDK's own objects --------------------------------------------------------

def _hints(trial: Trial, processes: int) -> dict[str, str]:
    return {"OMNIDIST_JOB_NAME": trial.name, "OMNIDIST_FRAMEWORK": "pytorch",
            "OMNIDIST_PROCESSES_PER_NODE": str(processes)}


def vertex_message() -> Callable[[Trial], Any]:
    """Build a trial's ``aiplatform_v1.CustomJob`` from the SDK's messages."""
    from google.cloud import aiplatform_v1 as v1

    def build(trial: Trial) -> Any:
        machine, kind, count = VERTEX[trial.accelerator]

        def pool(role: str, replicas: int) -> Any:
            env = {**_hints(trial, count), "OMNIDIST_ROLE": role, "NCCL_DEBUG": "INFO"}
            return v1.WorkerPoolSpec(
                machine_spec=v1.MachineSpec(machine_type=machine, accelerator_type=kind, accelerator_count=count),
                replica_count=replicas,
                container_spec=v1.ContainerSpec(image_uri=IMAGE, command=list(COMMAND), args=list(trial.args),
                                                env=[v1.EnvVar(name=k, value=v) for k, v in env.items()]))

        job = v1.CustomJob(display_name=trial.name, labels={"sweep": "lr-batch"}, job_spec=v1.CustomJobSpec(
            worker_pool_specs=[pool("primary", 1), pool("worker", trial.workers)],
            scheduling=v1.Scheduling(timeout={"seconds": 7200})))
        return job

    return build


def vertex_builder() -> Callable[[Trial], str]:
    """:func:`vertex_message`, printed as REST JSON with ``CustomJob.to_json``."""
    from google.cloud import aiplatform_v1 as v1

    message = vertex_message()
    return lambda trial: v1.CustomJob.to_json(message(trial))


def azure_command() -> Callable[[Trial], Any]:
    """Build a trial's command job with ``azure.ai.ml.command`` and a ``PyTorchDistribution``."""
    import logging

    from azure.ai.ml import PyTorchDistribution, command
    from azure.ai.ml.entities import Environment

    logging.getLogger("azure.ai.ml").setLevel(logging.ERROR)

    def build(trial: Trial) -> Any:
        sku, gpus = AZURE[trial.accelerator]
        job = command(command=" ".join((*COMMAND, *trial.args)), environment=Environment(image=IMAGE),
                      instance_count=1 + trial.workers, instance_type=sku, shm_size="16g" if sku.startswith("Standard_ND") else None,
                      distribution=PyTorchDistribution(process_count_per_instance=gpus),
                      environment_variables={**_hints(trial, gpus), "NCCL_DEBUG": "INFO"},
                      display_name=trial.name, experiment_name=trial.name, timeout=7200, tags={"sweep": "lr-batch"})
        return job

    return build


def azure_builder() -> Callable[[Trial], Any]:
    """:func:`azure_command`, turned into its REST object with ``_to_rest_object()``."""
    make = azure_command()
    return lambda trial: make(trial)._to_rest_object()


def legacy_jobs(endpoint: str | None = None) -> Any:
    """The discovery client's ``projects().jobs()`` collection, built offline."""
    from google.auth.credentials import AnonymousCredentials
    from googleapiclient.discovery import build as discovery_build

    options = {"api_endpoint": endpoint} if endpoint else None
    return discovery_build("ml", "v1", static_discovery=True, credentials=AnonymousCredentials(),
                           client_options=options, cache_discovery=False).projects().jobs()


def legacy_builder(jobs: Any = None, suffix: str = "") -> Callable[[Trial], Any]:
    """Build a trial's ``projects.jobs.create`` request with the discovery client (not executed)."""
    jobs = jobs or legacy_jobs()

    def build(trial: Trial) -> Any:
        machine, kind, count = LEGACY[trial.accelerator]
        command = ["env", "NCCL_DEBUG=INFO", *COMMAND]
        config = {"acceleratorConfig": {"count": count, "type": kind}, "containerCommand": command,
                  "containerArgs": list(trial.args)}
        body = {"jobId": trial.name.replace("-", "_") + suffix, "labels": {"sweep": "lr-batch"}, "trainingInput": {
            "scaleTier": "CUSTOM", "region": "us-central1", "masterType": machine,
            "masterConfig": {**config, "imageUri": IMAGE}, "workerType": machine, "workerCount": trial.workers,
            "workerConfig": config, "scheduling": {"maxRunningTime": "7200s"}}}
        return jobs.create(parent="projects/p", body=body)

    return build


NATIVE_BUILDERS: dict[str, Callable[[], Callable[[Trial], Any]]] = {
    "ai_platform": legacy_builder,
    "azure_ml": azure_builder,
    "vertex": vertex_builder,
}
"""Backend -> the hand-written, SDK-object way to build a trial's request."""
