"""Code, data and entrypoints on SageMaker (SPEC §7, §11). Pure: no network, no SDK import.

- Inputs: each ``s3://`` input is a channel of ``InputDataConfig`` (``ro_mount`` -> ``FastFile``,
  ``download`` -> ``File``), which the container sees at ``/opt/ml/input/data/NAME``; anything
  else is exit 3 unless ``data_map`` rewrites it to S3.
- Outputs: ``model`` is ``OutputDataConfig.S3OutputPath`` (``default``: ``base_output_dir``, else
  the staging bucket, else the SageMaker SDK's default bucket of the role's account); the
  container writes ``/opt/ml/model``, which SageMaker uploads. ``checkpoints`` is
  ``CheckpointConfig`` (``/opt/ml/checkpoints``, synced). Any other ``s3://`` output is passed
  to the program as its URI: the program writes there itself.
- Code: with ``framework_version`` and no image, a ``python SCRIPT.py --flag value …`` command
  runs in script mode on the AWS Deep Learning Container (``sagemaker_program``,
  ``sagemaker_submit_directory``, the flags as hyperparameters). Any other job with code gets it
  as a channel ``code`` and an entrypoint that unpacks it into ``/opt/ml/code`` and runs the
  command there (any image with ``sh`` and ``tar``). A local folder is uploaded to the staging
  bucket at submit, once per content.
"""

from __future__ import annotations

import json
import shlex
from typing import Any, Optional

import attrs

from omnidist.kit import (
    CODE_HASH,
    DataValues,
    DistributedJob,
    EffectiveRole,
    Feature,
    JobInput,
    JobOutput,
    Note,
    NoteKind,
    RoleName,
    UnsupportedFeatureError,
    ValidationError,
    apply_data_map,
    code_folder,
    data_hints,
    effective_role,
    foreign_uri,
    resolve_data,
    staged_code_uri,
    substituted,
    unknown_version,
    with_module,
)
from omnidist.runtime.platforms import sagemaker as platform
from omnidist_sagemaker.settings import SageMakerSettings
from omnidist_sagemaker.tables import (
    CHANNEL_NAME,
    DLC_ACCOUNT,
    DLC_ACCOUNTS,
    DLC_REPOSITORIES,
    DLC_VERSIONS,
    INPUT_MODES,
    LIMITS,
    NAME,
    ROLE_ARN,
)

SETTINGS = f"backends.{NAME}"
READS = "Amazon S3 (s3://BUCKET/PATH, as a channel at /opt/ml/input/data/NAME)"
CODE_CHANNEL = "code"
"""The channel that carries a job's code when it does not run in script mode."""

CODE_OBJECT = f"omnidist/code/{CODE_HASH}/sourcedir.tar.gz"
"""Where in the staging bucket a code folder goes (the files at the archive's root, as script mode
unpacks them into ``/opt/ml/code``)."""

CHECKPOINTS = "checkpoints"
"""The output that is ``CheckpointConfig``."""


@attrs.frozen(kw_only=True)
class ScriptMode:
    """A job run by the training toolkit of an AWS Deep Learning Container.

    Attributes:
        program: ``sagemaker_program``: the script, relative to the code folder.
        submit_directory: ``sagemaker_submit_directory``: the code archive's S3 URI.
        flags: the program's ``--flag value`` arguments as hyperparameters (in order).
    """

    program: str
    submit_directory: str
    flags: tuple[tuple[str, str], ...]


@attrs.frozen(kw_only=True)
class Plan:
    """Where the job's code and data go on SageMaker.

    Attributes:
        job: the job after ``data_map``.
        values: each reference -> what the container sees.
        channels: ``InputDataConfig``.
        output_path: ``OutputDataConfig.S3OutputPath``.
        checkpoints: ``CheckpointConfig.S3Uri`` from ``outputs.checkpoints`` (else ``None``).
        image: the training image (the job's, or the Deep Learning Container's).
        script: script mode, when the job runs in it.
        unpack: the code archive's path inside the container, when an entrypoint unpacks it.
    """

    job: DistributedJob
    values: DataValues
    channels: tuple[dict[str, Any], ...]
    output_path: str
    checkpoints: Optional[str] = None
    image: Optional[str] = None
    script: Optional[ScriptMode] = None
    unpack: Optional[str] = None

    def role(self, role: EffectiveRole) -> EffectiveRole:
        """The role with its module, references and data hints applied."""
        role = substituted(with_module(role, self.job), self.values)
        return attrs.evolve(role, env={**data_hints(self.values), **role.env}, image=role.image or self.image)

    def entrypoint(self, command: tuple[str, ...]) -> tuple[str, ...]:
        """``command`` run from the unpacked code folder (unchanged without code to unpack)."""
        if not self.unpack:
            return command
        line = (f"set -e; mkdir -p {platform.CODE_DIR}; tar -xzf {shlex.quote(self.unpack)} -C {platform.CODE_DIR}; "
                f'cd {platform.CODE_DIR}; exec "$@"')
        return ("sh", "-c", line, "omnidist-code", *command)


def default_bucket(settings: SageMakerSettings) -> Optional[str]:
    """The SageMaker SDK's default bucket, ``s3://sagemaker-<region>-<account>``, with the account
    of ``role_arn`` (``None`` without one)."""
    match = ROLE_ARN.match(settings.role_arn or "")
    if not match:
        return None
    account = settings.role_arn.split(":")[4]
    return f"s3://sagemaker-{settings.region}-{account}"


def prepare(job: DistributedJob, settings: SageMakerSettings, notes: list[Note]) -> tuple[DistributedJob, Plan]:
    """Apply ``data_map``, place every input and output, and decide how the code runs."""
    job, rewrites = apply_data_map(job, settings.data_map)
    notes += rewrites
    image = job.image or _prebuilt(job, settings, notes)
    output_path = _output_path(job, settings, notes)
    checkpoint = _checkpoints(job)
    values = resolve_data(job, lambda name, inp: _input(name, inp), lambda name, out: _output(name, out, notes))
    channels = [_channel(name, inp, settings) for name, inp in job.inputs.items() if not inp.literal]
    script, unpack = None, None
    code = _code_uri(job, settings, notes)
    if code is not None:
        primary = substituted(with_module(effective_role(job, RoleName.PRIMARY), job), values)
        script = _script_mode(primary, code, notes) if not job.image else None
        if script is None:
            if CODE_CHANNEL in job.inputs:
                raise ValidationError(f"the input {CODE_CHANNEL!r} would clash with the channel that carries the "
                                      "job's code; rename the input", source=job.source, path=f"inputs.{CODE_CHANNEL}")
            channels.append(_code_channel(code))
            unpack = f"{platform.DATA_ROOT}{CODE_CHANNEL}/{code.rsplit('/', 1)[-1]}"
    if len(channels) > LIMITS["channels"]:
        raise ValidationError(f"SageMaker takes at most {LIMITS['channels']} channels, this job has {len(channels)} "
                              "(its S3 inputs and its code)", source=job.source, path="inputs")
    if job.description:
        notes.append(Note(kind=NoteKind.DROPPED, field="description",
                          message="SageMaker training jobs have no description (tag the job instead)"))
    return job, Plan(job=job, values=values, channels=tuple(channels), output_path=output_path,
                     checkpoints=checkpoint, image=image, script=script, unpack=unpack)


# --- images ------------------------------------------------------------------------------------

def _prebuilt(job: DistributedJob, settings: SageMakerSettings, notes: list[Note]) -> Optional[str]:
    """The AWS Deep Learning Container for ``framework_version`` (no image given)."""
    if not job.framework_version:
        return None
    repository = DLC_REPOSITORIES.get(job.framework)
    if repository is None:
        raise UnsupportedFeatureError(
            Feature.FRAMEWORK_VERSION, NAME, f"AWS publishes no {job.framework.value} training container.",
            "Give the job an image (with your framework installed).",
            subject=f"framework_version with framework {job.framework.value}")
    versions = DLC_VERSIONS[repository]
    full = {v[0]: v for v in versions.values()}
    found = versions.get(job.framework_version) or full.get(job.framework_version)
    if found is None:
        raise unknown_version(job, versions, "SageMaker")
    gpu = job.primary.accelerator is not None
    account = DLC_ACCOUNTS.get(settings.region, DLC_ACCOUNT)
    domain = "amazonaws.com.cn" if settings.region.startswith("cn-") else "amazonaws.com"
    image = (f"{account}.dkr.ecr.{settings.region}.{domain}/{repository}:"
             f"{found[0]}-{'gpu' if gpu else 'cpu'}-{found[1]}")
    notes.append(Note(kind=NoteKind.DEFAULTED, field="image", message=f"the AWS Deep Learning Container {image}"))
    if job.framework.value in ("deepspeed", "horovod"):
        notes.append(Note(kind=NoteKind.HINT, field="framework_version",
                          message=f"runs on the PyTorch training container: install {job.framework.value} in your "
                                  "code's requirements.txt (script mode installs it)"))
    return image


# --- data --------------------------------------------------------------------------------------

def _input(name: str, inp: JobInput) -> str:
    if inp.scheme != "s3":
        raise foreign_uri(f"inputs.{name}", NAME, inp.uri, READS)
    if not CHANNEL_NAME.match(name):
        raise ValidationError("a SageMaker channel name is 1-64 letters, digits, '.', '-' or '_'",
                              path=f"inputs.{name}")
    return f"{platform.DATA_ROOT}{name}"


def _channel(name: str, inp: JobInput, settings: SageMakerSettings) -> dict[str, Any]:
    source = {"S3DataType": "S3Prefix", "S3Uri": inp.uri, "S3DataDistributionType": "FullyReplicated"}
    channel: dict[str, Any] = {"ChannelName": name, "DataSource": {"S3DataSource": source}}
    if settings.input_mode is None:
        channel["InputMode"] = INPUT_MODES[inp.mode]
    if name in settings.content_types:
        channel["ContentType"] = settings.content_types[name]
    return channel


def _code_channel(uri: str) -> dict[str, Any]:
    source = {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}
    return {"ChannelName": CODE_CHANNEL, "DataSource": {"S3DataSource": source}, "InputMode": "File"}


def _output_path(job: DistributedJob, settings: SageMakerSettings, notes: list[Note]) -> str:
    """``S3OutputPath``: the model output's URI, else ``base_output_dir``, else a default place."""
    model = job.outputs.get("model")
    if model is not None and not model.default:
        if model.scheme != "s3":
            raise foreign_uri("outputs.model", NAME, model.uri, "and write the model to S3 (s3://BUCKET/PATH)")
        return model.uri
    if settings.base_output_dir:
        return settings.base_output_dir
    base = settings.staging_bucket or default_bucket(settings)
    if base is None:
        raise ValidationError("SageMaker uploads /opt/ml/model to an S3 output path: set "
                              f"{SETTINGS}.base_output_dir (s3://…), staging_bucket or role_arn",
                              source=job.source, path=f"{SETTINGS}.base_output_dir")
    path = f"{base.rstrip('/')}/omnidist/outputs/{job.name}"
    where = "the staging bucket" if settings.staging_bucket else "the SageMaker SDK's default bucket (it must exist)"
    notes.append(Note(kind=NoteKind.DEFAULTED, field=f"{SETTINGS}.base_output_dir",
                      message=f"the model goes under {path}, in {where}; set base_output_dir to choose"))
    return path


def _checkpoints(job: DistributedJob) -> Optional[str]:
    out = job.outputs.get(CHECKPOINTS)
    if out is None or out.default:
        return None
    if out.scheme != "s3":
        raise foreign_uri(f"outputs.{CHECKPOINTS}", NAME, out.uri, "and sync checkpoints with S3 (s3://BUCKET/PATH)")
    return out.uri


def _output(name: str, out: JobOutput, notes: list[Note]) -> str:
    if name == "model":
        return platform.MODEL_PATH
    if name == CHECKPOINTS and not out.default:
        return platform.CHECKPOINT_PATH
    if out.default:
        path = f"{platform.OUTPUT_DATA}{name}"
        notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"outputs.{name}",
                          message=f"written to {path}: SageMaker uploads {platform.OUTPUT_DATA} as output.tar.gz "
                                  "beside the model"))
        return path
    if out.scheme != "s3":
        raise foreign_uri(f"outputs.{name}", NAME, out.uri, "and write S3 (s3://BUCKET/PATH)")
    notes.append(Note(kind=NoteKind.APPROXIMATED, field=f"outputs.{name}",
                      message=f"passed as {out.uri}: the program writes it to S3 itself"))
    return out.uri


# --- code ----------------------------------------------------------------------------------------

def _code_uri(job: DistributedJob, settings: SageMakerSettings, notes: list[Note]) -> Optional[str]:
    if job.code is None:
        return None
    if not job.module and not job.command and not any(r.command for r in _roles(job)):
        raise UnsupportedFeatureError(
            Feature.CODE, NAME, "a job with code needs a command or a module to run it; the image's ENTRYPOINT "
            "cannot be pointed at the code folder.", "Set module (python -m …) or command.")
    if code_folder(job) is not None:
        bucket = settings.staging_bucket or default_bucket(settings)
        return staged_code_uri(job, bucket, SETTINGS, notes, object_name=CODE_OBJECT, form="s3://BUCKET[/PATH]")
    if not job.code.startswith("s3://") or not job.code.endswith((".tar.gz", ".tgz")):
        raise foreign_uri("code", NAME, job.code, "code from a local folder or an S3 .tar.gz archive")
    return job.code


def _script_mode(primary: EffectiveRole, code: str, notes: list[Note]) -> Optional[ScriptMode]:
    """Script mode for ``python SCRIPT.py --flag value …`` on a Deep Learning Container, else ``None``
    (a note says why the command runs through the unpacking entrypoint instead)."""
    argv = [*primary.command, *primary.args]
    if argv[:1] in (["python"], ["python3"]):
        argv = argv[1:]
    flags = _flags(argv[1:]) if argv and argv[0].endswith(".py") and not argv[0].startswith("/") else None
    if flags is None:
        notes.append(Note(kind=NoteKind.HINT, field="command",
                          message="not script mode (that takes `python SCRIPT.py --flag value …`): the code "
                                  f"arrives as channel {CODE_CHANNEL!r} and the command runs from {platform.CODE_DIR}"))
        return None
    return ScriptMode(program=argv[0], submit_directory=code, flags=flags)


def _flags(args: list[str]) -> Optional[tuple[tuple[str, str], ...]]:
    """``--name value`` / ``--name=value`` pairs (script mode passes hyperparameters so), else ``None``."""
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or len(arg) < 3:
            return None
        name, equals, value = arg[2:].partition("=")
        if not equals:
            if i + 1 >= len(args) or args[i + 1].startswith("--"):
                return None
            value, i = args[i + 1], i + 1
        if any(name == n for n, _ in found) or name.startswith("sagemaker_"):
            return None
        found.append((name, value))
        i += 1
    return tuple(found)


def hyperparameters(script: ScriptMode, settings: SageMakerSettings) -> dict[str, str]:
    """Script mode's hyperparameters: the toolkit's (JSON strings, as the SageMaker SDK writes them),
    then the program's flags."""
    own = {platform.PROGRAM: json.dumps(script.program), platform.SUBMIT_DIRECTORY: json.dumps(script.submit_directory),
           platform.REGION: json.dumps(settings.region), platform.LOG_LEVEL: "20"}
    return {**own, **dict(script.flags)}


def _roles(job: DistributedJob):
    return [r for r in (job.primary, job.workers, job.parameter_servers) if r is not None]


def training_roles() -> tuple[RoleName, ...]:
    """The roles whose replicas are SageMaker instances."""
    return (RoleName.PRIMARY, RoleName.WORKERS)
