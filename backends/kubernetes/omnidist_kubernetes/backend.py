"""The Kubernetes backend: Kubeflow PyTorchJob, TFJob and MPIJob.

Compiling and importing live in :mod:`.compiler` and :mod:`.importer` (pure); the official
``kubernetes`` client is touched only in :mod:`.client`, imported when a job is submitted or
followed. Imports flow one way: tables <- compiler / importer / client <- this facade.
"""

from __future__ import annotations

import secrets
import string
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Optional

from omnidist import display
from omnidist.backend import Backend, Capabilities, CompiledJob, JobHandle, JobStatus, Note
from omnidist.job import DistributedJob, Framework, RoleName

from omnidist_kubernetes.settings import KubernetesSettings
from omnidist_kubernetes.tables import GKE_ACCELERATORS, NAME

SUFFIX_ALPHABET = string.ascii_lowercase + string.digits
SUFFIX_LENGTH = 5


def random_suffix() -> str:
    """Five lowercase letters and digits, like the names Kubernetes generates."""
    return "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(SUFFIX_LENGTH))


def new_request_id() -> str:
    """The request id a submit labels its job with (32 hex digits: a valid label value)."""
    return uuid.uuid4().hex


class KubernetesBackend(Backend):
    """Kubeflow training jobs on any Kubernetes cluster (GKE's node labels by default).

    Args:
        suffix: makes the per-submit name suffix (``<name>-<suffix>``); injectable for tests.
        request_id: makes the id a submit labels its job with, to recognise the job as its own
            when a repeated create finds the name taken; injectable for tests.
        sleep: how retries and ``logs --follow`` wait; injectable for tests.
    """

    name = NAME
    output_format = "yaml"
    settings_type = KubernetesSettings
    capabilities = Capabilities(
        roles=frozenset({RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS, RoleName.EVALUATORS}),
        frameworks=frozenset(Framework),
        accelerators=frozenset(GKE_ACCELERATORS),
        spot=True,
        infiniband=False,
        per_role_machines=True,
        env=True,
        reduction_server=False,
    )

    def __init__(self, *, suffix: Callable[[], str] = random_suffix,
                 request_id: Callable[[], str] = new_request_id,
                 sleep: Optional[Callable[[float], None]] = None) -> None:
        self._suffix, self._request_id, self._sleep = suffix, request_id, sleep

    def compile(self, job: DistributedJob, settings: KubernetesSettings) -> CompiledJob:
        """The manifest ``kubectl apply -f`` takes (as a dict); pure."""
        from omnidist_kubernetes import compiler

        return compiler.compile_job(job, settings or KubernetesSettings())

    def import_native(self, request: Any) -> DistributedJob:
        """A portable job from a PyTorchJob, TFJob or MPIJob (a manifest, several documents, or
        ``kubectl get -o yaml`` output); pure."""
        return self.import_with_notes(request)[0]

    def import_with_notes(self, request: Any) -> tuple[DistributedJob, tuple[Note, ...]]:
        """:meth:`import_native`, plus what was inferred, approximated or dropped on the way."""
        from omnidist_kubernetes import importer

        job, notes = importer.import_job(request)
        return job, tuple(notes)

    @staticmethod
    def recognizes(native: Any) -> bool:
        """True for a Kubeflow training job (``apiVersion: kubeflow.org/…`` and a kind omnidist
        reads), also among several documents or in a ``kind: List``."""
        from omnidist_kubernetes import importer

        return importer.recognizes(native)

    def submit(self, compiled: CompiledJob, settings: KubernetesSettings) -> JobHandle:
        """Create the job under ``<name>-<suffix>`` (one name per submit, reused by every retry)."""
        from omnidist_kubernetes import client

        body = client.named(compiled.request, self._suffix(), self._request_id())
        with display.masking_errors(display.secret_values(body)):  # a 422 may quote an env value
            job_id = client.create(body, settings, sleep=self._sleep)
        return JobHandle(backend=NAME, id=job_id, url=self.console_url(job_id, settings), settings=settings,
                         driver=self)

    def status(self, job_id: str, settings: KubernetesSettings) -> JobStatus:
        """The job's state from its ``status.conditions``; secret-looking values of its env are
        masked in the message."""
        from omnidist_kubernetes import client

        job = client.get(job_id, settings, sleep=self._sleep)
        return display.mask_status(client.status_of(job), display.secret_values(job))

    def logs(self, job_id: str, settings: KubernetesSettings, follow: bool = False) -> Iterator[str]:
        """Every pod's log lines, prefixed ``[master-0]``…; ``follow`` streams the primary's
        (Master, Chief or Launcher: rank 0 and mpirun's output) until the job ends."""
        from omnidist_kubernetes import client

        return client.logs(job_id, settings, follow=follow, sleep=self._sleep)

    def cancel(self, job_id: str, settings: KubernetesSettings) -> None:
        """Delete the job (its pods go with it); a no-op once it has ended or is gone."""
        from omnidist_kubernetes import client

        client.cancel(job_id, settings, sleep=self._sleep)

    def console_url(self, job_id: str, settings: KubernetesSettings) -> str:
        """Kubernetes has no console of its own: empty (``kubectl describe`` shows the job)."""
        return ""

