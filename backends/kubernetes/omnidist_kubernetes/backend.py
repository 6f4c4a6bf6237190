"""The Kubernetes backend: Kubeflow PyTorchJob, TFJob and MPIJob.

Compiling and importing live in :mod:`.compiler` and :mod:`.importer` (pure); the official
``kubernetes`` client is touched only in :mod:`.client`, imported when a job is submitted or
followed. Imports flow one way: tables <- compiler / importer / client <- this facade.
"""

from __future__ import annotations

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
)
from omnidist_kubernetes.settings import KubernetesSettings
from omnidist_kubernetes.tables import BILLING, CLOUD_BILLING, GKE_ACCELERATORS, GKE_TPU_ACCELERATORS, NAME, SERVICE


class KubernetesBackend(Imports, Placement, CloudBackend):
    """Kubeflow training jobs on any Kubernetes cluster (GKE's node labels by default).

    ``submit``, ``status``, ``logs`` and ``cancel`` go through :class:`~omnidist_kubernetes.client.KubernetesClient`
    (the core's client template): a submit names the job ``<name>-<suffix>`` once and labels it
    with a request id, so a repeated create adopts its own job; ``logs --follow`` streams the
    primary pod's log; cancel deletes the job. ``Backend(request_id=…, suffix=…, sleep=…)``
    injects ids and waits for tests.
    """

    name = NAME
    billing = {SERVICE: BILLING, **CLOUD_BILLING}
    output_format = "yaml"
    settings_type = KubernetesSettings
    capabilities = Capabilities(
        roles=frozenset({RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS, RoleName.EVALUATORS}),
        frameworks=frozenset(Framework),
        accelerators=frozenset(GKE_ACCELERATORS) | frozenset(GKE_TPU_ACCELERATORS),
        spot=True,
        infiniband=False,
        per_role_machines=True,
        env=True,
        reduction_server=False,
    )
    migration = MigrationPolicy(tpus="vm", example_settings={"base_output_dir": "gs://example-bucket/out"})
    client = LazyClient("omnidist_kubernetes.client:KubernetesClient")
    testing = "omnidist_kubernetes.testing:HARNESS"
    native_formats = (
        "a Kubeflow PyTorchJob, TFJob or MPIJob manifest (YAML or JSON; several documents, one job each, or "
        "kubectl's kind: List)",
    )
    opts_out = {"tuning": "Kubeflow training jobs run one configuration; a job with a tuning block is refused "
                          "(exit 3) before anything reaches the cluster",
                "corpus": "its corpus manifests are imported and migrated to every cloud, and checked with the target "
                          "SDKs, by the plugin's own tests/test_migration.py: the field-by-field fidelity checker "
                          "of the shared corpus suite (tests/corpus/fidelity.py) does not read Kubeflow jobs yet"}

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

    def split_jobs(self, native: Any) -> list[Any]:
        """Each PyTorchJob, TFJob or MPIJob of a file that holds several; pure."""
        from omnidist_kubernetes import importer

        return importer.split_jobs(native)

    @staticmethod
    def recognizes(native: Any) -> bool:
        """True for a Kubeflow training job (``apiVersion: kubeflow.org/…`` and a kind omnidist
        reads), also among several documents or in a ``kind: List``."""
        from omnidist_kubernetes import importer

        return importer.recognizes(native)

    def world(self, native: Any) -> Any:
        """What the program sees on this platform for ``native`` (docs/migration.md). Pure."""
        from omnidist_kubernetes import world

        return world.world(native)

    def find_credentials(self, settings: Any) -> Credentials:
        """A kubeconfig (the setting, ``$KUBECONFIG``, ``~/.kube/config``) or a pod's service account."""
        from omnidist_kubernetes.credentials import find

        return find(settings)

    def check_credentials(self, settings: Any) -> Credentials:
        """The cluster asked for its version with those credentials (nothing is created)."""
        from omnidist_kubernetes.credentials import check

        return check(settings)

    def tpu_hosts(self, accelerator: str) -> list[tuple[str, int]]:
        """Google's TPU VM hosts of ``accelerator``."""
        from omnidist_google.tpu import host_picks

        return host_picks(accelerator)

    def machine_offer(self) -> tuple[str, Any]:
        """GKE nodes (the default cloud): Compute Engine machine types, and the price list they bill from."""
        from omnidist_google.compute_engine import COMPUTE_ENGINE
        from omnidist_kubernetes.footprint import SERVICE

        return SERVICE, COMPUTE_ENGINE

    def footprint(self, compiled: CompiledJob, settings: KubernetesSettings) -> Footprint:
        """Each replica type's pods as the ``cloud``'s nodes in the ``region`` setting (one pod per node)."""
        from omnidist_kubernetes import footprint

        return footprint.footprint(compiled.request, settings)

    def region(self, settings: KubernetesSettings) -> Optional[str]:
        """The ``region`` setting (or its alias ``gke_region``)."""
        return settings.cluster_region

    def pricing_region(self, settings: KubernetesSettings) -> Optional[str]:
        """The largest region of the cluster's ``cloud``, for a plan whose settings name none."""
        from omnidist_kubernetes.footprint import LARGEST_REGION

        return LARGEST_REGION[settings.cloud]

    def console_url(self, job_id: str, settings: KubernetesSettings) -> str:
        """Kubernetes has no console of its own: empty (``kubectl describe`` shows the job)."""
        return ""

