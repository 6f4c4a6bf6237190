"""``gcloud ai-platform jobs submit training …`` pasted into a file -> the create body it sends. Pure.

The flags are read as gcloud reads them: ``--config`` is a ``{trainingInput: …}`` file the flags
override, ``--scale-tier basic-gpu`` is ``BASIC_GPU``, ``--master-accelerator count=1,type=…`` an
``acceleratorConfig``, ``--tpu-tf-version`` the worker's ``tpuTfVersion``, and the words after
``--`` are the program's ``args``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnidist.kit import CommandLine, ValidationError
from omnidist_google.gcloud import Flags, key_values, merged, parse_flags

COMMANDS = (("ai-platform", "jobs", "submit", "training"), ("ml-engine", "jobs", "submit", "training"))
"""The gcloud commands (after ``gcloud`` and an optional ``beta``)."""

ROLE_FLAGS = {"master": "master", "worker": "worker", "parameter-server": "parameterServer"}
"""Flag prefix -> ``trainingInput`` field prefix."""

PLAIN_FLAGS: dict[str, str] = {
    "job-dir": "jobDir",
    "module-name": "pythonModule",
    "network": "network",
    "python-version": "pythonVersion",
    "region": "region",
    "runtime-version": "runtimeVersion",
    "service-account": "serviceAccount",
}
"""Flags copied into ``trainingInput`` as they are."""

CLIENT_SIDE = frozenset({"account", "billing-project", "format", "impersonate-service-account", "project",
                         "staging-bucket", "verbosity"})
"""Flags that decide how gcloud runs or uploads, not what the job is."""

VALUE_FLAGS = frozenset({
    *PLAIN_FLAGS, *CLIENT_SIDE, "config", "kms-key", "labels", "package-path", "packages", "scale-tier",
    "tpu-tf-version", "use-chief-in-tf-config",
    *(f"{role}-{what}" for role in ROLE_FLAGS for what in ("accelerator", "image-uri", "machine-type")),
    "worker-count", "parameter-server-count",
})
"""Flags with a value that omnidist reads."""

SWITCHES = frozenset({"async", "enable-web-access", "quiet", "stream-logs"})
"""Flags without a value."""


def is_ai_platform_command(command: CommandLine) -> bool:
    """True for ``gcloud [beta] ai-platform|ml-engine jobs submit training``."""
    words = tuple(w for w in command.argv[1:6] if w != "beta")
    return command.argv[:1] == ("gcloud",) and words[:4] in COMMANDS


def _accelerator(text: str, path: str) -> dict[str, str]:
    given = key_values(text, path)
    unknown = sorted(set(given) - {"count", "type"})
    if unknown:
        raise ValidationError(f"takes count= and type=, not {unknown[0]}=", path=path)
    if "type" in given:
        given["type"] = given["type"].upper().replace("-", "_")
    return given


def _roles(flags: Flags) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for flag, prefix in ROLE_FLAGS.items():
        config: dict[str, Any] = {}
        if flags.one(f"{flag}-image-uri"):
            config["imageUri"] = flags.one(f"{flag}-image-uri")
        if flags.one(f"{flag}-accelerator"):
            config["acceleratorConfig"] = _accelerator(flags.one(f"{flag}-accelerator"), f"--{flag}-accelerator")
        if config:
            found[f"{prefix}Config"] = config
        if flags.one(f"{flag}-machine-type"):
            found[f"{prefix}Type"] = flags.one(f"{flag}-machine-type")
        if prefix != "master" and flags.one(f"{flag}-count"):
            found[f"{prefix}Count"] = flags.one(f"{flag}-count")
    if flags.one("tpu-tf-version"):  # the TPU worker's runtime (gcloud writes it into workerConfig)
        found.setdefault("workerConfig", {})["tpuTfVersion"] = flags.one("tpu-tf-version")
    return found


def _training_input(flags: Flags) -> dict[str, Any]:
    """What the flags say about ``trainingInput``."""
    found: dict[str, Any] = {field: flags.one(flag) for flag, field in PLAIN_FLAGS.items() if flags.one(flag)}
    found.update(_roles(flags))
    if flags.one("scale-tier"):
        found["scaleTier"] = flags.one("scale-tier").upper().replace("-", "_")
    packages = [*(flags.values.get("packages") or []), *(flags.values.get("package-path") or [])]
    if packages:
        found["packageUris"] = [p for text in packages for p in text.split(",") if p]
    if flags.one("use-chief-in-tf-config"):
        found["useChiefInTfConfig"] = flags.one("use-chief-in-tf-config").lower() == "true"
    if flags.one("enable-web-access") == "true":
        found["enableWebAccess"] = True
    if flags.one("kms-key"):
        found["encryptionConfig"] = {"kmsKeyName": flags.one("kms-key")}
    if flags.rest:
        found["args"] = list(flags.rest)
    return found


def command_to_request(command: CommandLine) -> dict[str, Any]:
    """The create body (``{jobId, labels, trainingInput}``) a submit command line sends.

    Raises:
        ValidationError: another command, an unknown flag, or a flag without its value.
    """
    if not is_ai_platform_command(command):
        raise ValidationError("not an AI Platform command: expected `gcloud ai-platform jobs submit training JOB …`,"
                              f" got `{command}`")
    words = [w for w in command.argv[1:] if w != "beta"][4:]
    flags = parse_flags(words, switches=SWITCHES, known=VALUE_FLAGS, command="gcloud ai-platform jobs submit training")
    if len(flags.positional) != 1:
        raise ValidationError("takes one JOB id before or among the flags, got "
                              f"{' '.join(flags.positional) or 'none'}", path="gcloud ai-platform jobs submit training")
    config = command.config if command.config is not None else {}
    if not isinstance(config, Mapping):
        raise ValidationError("the --config file holds a mapping with trainingInput", path="--config")
    base = dict(config) if "trainingInput" in config else {"trainingInput": dict(config)}
    body = merged(base, {"jobId": flags.positional[0], "trainingInput": _training_input(flags)})
    if flags.one("labels"):
        body["labels"] = {**(body.get("labels") or {}), **key_values(flags.one("labels"), "--labels")}
    return body
