"""The SageMaker backend: the facade joining the tables, the pure compiler and importer, and the
client (:class:`~omnidist_sagemaker.client.SageMakerClient`, which alone imports boto3, when a job
is submitted or followed). Imports flow one way: tables <- compiler, importer, client <- here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from omnidist.kit import CheckpointStore
from omnidist_sagemaker.labels import TAGS
from omnidist_sagemaker.settings import SageMakerSettings
from omnidist_sagemaker.tables import BILLING, CONSOLE_URL, LEFT_BEHIND, NAME, NATIVE_FORMATS, REFUSALS, SERVICE


def _offered() -> frozenset[str]:
    from omnidist_sagemaker.compiler import offered

    return frozenset(offered())


class SageMakerBackend(Imports, Placement, CloudBackend):
    """Amazon SageMaker training jobs (``CreateTrainingJob``) and tuning jobs
    (``CreateHyperParameterTuningJob``), through boto3.

    Submitting and following go through :class:`~omnidist_sagemaker.client.SageMakerClient`
    (declared lazily: compiling loads no client code): a submit names the job ``<name>-<suffix>``
    once and tags it with a request id, so a repeated create adopts its own job; logs come from
    CloudWatch Logs; cancel stops the job. ``Backend(request_id=…, suffix=…, sleep=…)`` injects ids
    and waits for tests.
    """

    name = NAME
    billing = {SERVICE: BILLING}
    output_format = "json"
    settings_type = SageMakerSettings
    client = LazyClient("omnidist_sagemaker.client:SageMakerClient")
    testing = "omnidist_sagemaker.testing:HARNESS"
    native_formats = NATIVE_FORMATS
    emulation_settings = {"role_arn": "arn:aws:iam::000000000000:role/omnidist-local-run"}
    strict_json = True  # `aws sagemaker create-training-job --cli-input-json` reads JSON with json.loads
    capabilities = Capabilities(
        roles=frozenset({RoleName.PRIMARY, RoleName.WORKERS, RoleName.PARAMETER_SERVERS}),
        role_frameworks={RoleName.PARAMETER_SERVERS: frozenset({Framework.TENSORFLOW})},
        accelerators=_offered(), spot=True, infiniband=True, per_role_machines=True, env=True,
        reduction_server=False, refusals=REFUSALS,
    )
    migration = MigrationPolicy(left_behind=LEFT_BEHIND, machine_setting="instance_types", label_rules=TAGS,
                                example_settings={"role_arn": "arn:aws:iam::111122223333:role/Example",
                                                  "base_output_dir": "s3://example-bucket/out"})
    opts_out = {
        "tuning": "SageMaker tuning jobs run the image's own entrypoint (HyperParameterAlgorithmSpecification has no "
                  "ContainerEntrypoint), and the suite's search runs a command on a custom image, which compile "
                  "refuses (exit 3); the plugin's tests/test_tuning.py drives script-mode searches through boto3 "
                  "against the fake instead",
    }

    def compile(self, job: DistributedJob, settings: SageMakerSettings) -> CompiledJob:
        """The ``CreateTrainingJob`` request (``CreateHyperParameterTuningJob`` with ``tuning``), as
        boto3's keyword arguments. Pure."""
        from omnidist_sagemaker import compiler

        refuse_tpus(job, self.name, "SageMaker offers NVIDIA GPUs and AWS Trainium, no TPUs")  # SPEC §13
        settings = settings or SageMakerSettings()
        if job.tuning is not None:
            from omnidist_sagemaker import tuning

            return tuning.compile_tuning(job, settings)
        return compiler.compile_job(job, settings)

    def import_with_notes(self, request: Any) -> tuple[DistributedJob, tuple[Note, ...]]:
        """A CreateTrainingJob / CreateHyperParameterTuningJob request, DescribeTrainingJob output, or
        an operator's custom resource as a portable job, with what was defaulted or dropped. Pure."""
        from omnidist_sagemaker import importer

        job, notes = importer.import_job(request)
        return job, tuple(notes)

    def recognizes(self, native: Any) -> bool:
        """A training or tuning request / description (by their keys), or a SageMaker operator's
        custom resource (by its API group)."""
        from omnidist_sagemaker import importer

        return importer.recognizes(native)

    def world(self, native: Any) -> Any:
        """What the program sees on SageMaker for ``native`` (docs/migration.md). Pure."""
        from omnidist_sagemaker import world

        return world.world(native)

    def find_credentials(self, settings: Any) -> Credentials:
        """boto3's chain looked up offline: the environment, ``~/.aws`` files, a container or web-identity role."""
        from omnidist_sagemaker.credentials import find

        return find(settings)

    def check_credentials(self, settings: Any) -> Credentials:
        """The credentials found, shown to STS (``GetCallerIdentity`` creates nothing)."""
        from omnidist_sagemaker.credentials import check

        return check(settings)

    def machine_offer(self) -> tuple[str, Any]:
        """SageMaker training: ml.* instance types, and the price list they bill from."""
        from omnidist_sagemaker.catalog import MACHINES
        from omnidist_sagemaker.footprint import SERVICE

        return SERVICE, MACHINES

    def footprint(self, compiled: CompiledJob, settings: SageMakerSettings) -> Footprint:
        """The instances of ``ResourceConfig`` (a tuning job's, times its trials at once), priced as
        SageMaker training instances in the ``region`` setting."""
        from omnidist_sagemaker import footprint

        return footprint.footprint(compiled.request, settings or SageMakerSettings())

    def checkpoint_store(self, settings: SageMakerSettings) -> CheckpointStore:
        """``s3://`` objects through the settings' region, credentials and endpoint (the watcher
        copies a checkpoint with it before a move)."""
        from omnidist_aws import s3
        from omnidist_sagemaker.client import aws_client, translate_error

        return s3.checkpoint_store(lambda: aws_client(settings, "s3"), translate_error)

    def console_url(self, job_id: str, settings: SageMakerSettings) -> str:
        """The SageMaker console page of a training job (a tuning job's ARN opens its own page)."""
        settings = settings or SageMakerSettings()
        page = "hyper-tuning-jobs" if ":hyper-parameter-tuning-job/" in job_id else "jobs"
        name = job_id.rsplit("/", 1)[-1]
        return CONSOLE_URL.format(region=settings.region, page=page, name=name)

