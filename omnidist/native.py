"""Reading a native spec in any of the forms people keep one in, and telling whose it is.

A native spec arrives as a mapping, a list of ``--worker-pool-spec`` strings, a YAML/JSON file,
a file holding the ``gcloud`` command that submitted it (:class:`~omnidist.commandline.CommandLine`),
or an SDK object (``azure.ai.ml.command(...)``), which is read through the SDK's own
serialization. :func:`detect_backend` names the backend from the content; when nothing says,
the error lists the formats omnidist reads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from omnidist import importing, serde
from omnidist.commandline import CommandLine, find_command_line
from omnidist.errors import ValidationError

Native = Union[Mapping[str, Any], Sequence[Any], str, "os.PathLike[str]", Any]
Spec = Union[Mapping[str, Any], Sequence[Any], CommandLine]

FORMATS: dict[str, tuple[str, ...]] = {
    "ai_platform": (
        "a legacy create body or gcloud --config file ({trainingInput: …}), or a bare trainingInput",
        "a `gcloud ai-platform jobs submit training JOB …` command line",
    ),
    "azure_ml": (
        "a command job file ($schema …commandJob…, type: command, command + environment/compute/resources), "
        "as written by hand or by job.dump()",
        "an azure.ai.ml command(...) / CommandJob object (Python)",
    ),
    "vertex": (
        "a CustomJob (displayName + jobSpec), a CustomJobSpec (workerPoolSpecs) or a HyperparameterTuningJob "
        "(trialJobSpec), in JSON or protobuf field names (job_spec, worker_pool_specs…)",
        "{worker_pool_specs: [--worker-pool-spec strings]} or a `gcloud ai custom-jobs create …` command line",
    ),
}
"""Backend -> the native forms omnidist reads (listed when a file's format cannot be told)."""

AZURE_KEYS = frozenset({"command", "compute", "distribution", "environment", "environment_variables", "resources"})
"""Top-level keys of an Azure ML command job file (``$schema`` and ``type`` may be missing)."""

AI_PLATFORM_KEYS = frozenset({"trainingInput", "masterType", "masterConfig", "scaleTier", "parameterServerType"})
VERTEX_KEYS = frozenset({"jobSpec", "job_spec", "workerPoolSpecs", "worker_pool_specs", "trialJobSpec",
                         "trial_job_spec", "studySpec", "study_spec"})
GCLOUD_COMMANDS: dict[tuple[str, ...], str] = {
    ("ai", "custom-jobs", "create"): "vertex",
    ("ai", "hp-tuning-jobs", "create"): "vertex",
    ("ai-platform", "jobs", "submit", "training"): "ai_platform",
    ("ml-engine", "jobs", "submit", "training"): "ai_platform",
}
"""gcloud command words (after ``gcloud`` and a release track) -> the backend whose job it creates."""

_TRACKS = ("alpha", "beta")


def formats() -> str:
    """Every native form omnidist reads, one line per backend."""
    return "; ".join(f"{name}: {' | '.join(forms)}" for name, forms in sorted(FORMATS.items()))


def detect_backend(native: Spec) -> str:
    """Tell which backend a native spec belongs to from its content.

    Raises:
        ValidationError: when the content does not say; the message lists the formats omnidist
            reads and asks for ``--from``.
    """
    if isinstance(native, CommandLine):
        return _command_backend(native)
    if not isinstance(native, Mapping):  # a bare list of --worker-pool-spec strings
        return "vertex"
    keys = set(native)
    schema = str(native.get("$schema", ""))
    kind = str(native.get("type", "")).lower()
    if "azureml" in schema or kind in ("command", "sweep") or "component" in keys or len(keys & AZURE_KEYS) >= 2:
        return "azure_ml"
    if keys & AI_PLATFORM_KEYS:
        return "ai_platform"
    if keys & VERTEX_KEYS:
        return "vertex"
    if keys & {"command"} and keys & {"code", "inputs", "outputs", "display_name", "experiment_name"}:
        return "azure_ml"
    raise ValidationError(f"not a native spec omnidist can tell; it reads {formats()}. Pass --from "
                          "vertex|ai_platform|azure_ml if it is one of these")


def _command_backend(command: CommandLine) -> str:
    words = tuple(w for w in command.argv[1:6] if w not in _TRACKS)
    for head, backend in GCLOUD_COMMANDS.items():
        if words[:len(head)] == head:
            return backend
    raise ValidationError(f"`{' '.join(command.argv[:4])} …` does not create a training job; omnidist reads "
                          f"{formats()}")


def read_native(native: Native) -> tuple[Spec, Optional[str]]:
    """A native spec from any form it comes in, with the name of the file it came from.

    Raises:
        ValidationError: naming the file, for one that cannot be read or holds no spec.
    """
    if callable(getattr(native, "_to_dict", None)):  # an SDK object (some are mappings too)
        return importing.sdk_object_to_dict(native), None
    if isinstance(native, (Mapping, list, tuple, CommandLine)):
        return native, None
    if not isinstance(native, (str, os.PathLike)):
        raise ValidationError(f"a native spec is a mapping, a file or an SDK job object, got {type(native).__name__}")
    source = str(native)
    try:
        text = Path(native).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"cannot read the file ({exc.strerror or exc})", source=source) from None
    try:
        argv = find_command_line(text)
    except ValidationError as exc:
        raise exc.with_source(source) from None
    if argv is not None:
        return CommandLine(argv=argv, config=_config_of(argv, source), source=source), source
    data = serde.parse_yaml(text, source=source)
    if not isinstance(data, (Mapping, list)):
        raise ValidationError(f"holds no job spec (a mapping of keys, or a gcloud command line); omnidist reads "
                              f"{formats()}", source=source)
    return data, source


def _config_of(argv: Sequence[str], source: str) -> Any:
    """The content of the file a command line's ``--config`` names, found next to ``source``."""
    config = None
    for i, word in enumerate(argv):
        if word.startswith("--config="):
            config = word.split("=", 1)[1]
        elif word == "--config" and i + 1 < len(argv):
            config = argv[i + 1]
    if config is None:
        return None
    path = Path(config) if Path(config).is_absolute() else Path(source).parent / config
    if not path.is_file():
        raise ValidationError(f"the command's --config file {config} is not at {path}; put it there (or paste its "
                              "content in place of the command)", source=source, path="--config")
    return serde.read_document(path)

