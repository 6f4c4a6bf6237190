"""gcloud's forms of a Vertex job -> the CustomJob they create (its ``CustomJobSpec`` and outer
fields, which :mod:`.importer` reads like any other). Pure.

- ``--worker-pool-spec`` flag strings: ``{"worker_pool_specs": ["machine-type=…,…", …]}`` (or
  just the list), optionally with ``display_name``, ``command``, ``args``, ``labels``,
  ``region``, ``service_account``, ``network`` and ``enable_web_access``, the other flags;
- ``gcloud ai custom-jobs create …`` pasted into a file, its flags read as gcloud reads them:
  ``--worker-pool-spec`` once per pool, ``--config`` a CustomJobSpec file that the flags
  override, ``--args``/``--command`` comma-separated lists given to every pool's container (the
  Reduction Server pool excepted).
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from omnidist.kit import CommandLine, Note, NoteKind, ValidationError, cannot_hold, proto_json_keys, structure
from omnidist_google.gcloud import Flags, key_values, merged, parse_flags
from omnidist_vertex.tables import REDUCTION_SERVER_IMAGE

# --- --worker-pool-spec strings --------------------------------------------------------------------

FLAG_KEYS: dict[str, Optional[str]] = {
    "accelerator-count": "machineSpec.acceleratorCount",
    "accelerator-type": "machineSpec.acceleratorType",
    "container-image-uri": "containerSpec.imageUri",
    "disk-size": "diskSpec.bootDiskSizeGb",
    "disk-type": "diskSpec.bootDiskType",
    "executor-image-uri": None,
    "local-package-path": None,
    "machine-type": "machineSpec.machineType",
    "python-module": None,
    "replica-count": "replicaCount",
    "script": None,
}
"""``--worker-pool-spec`` key -> ``WorkerPoolSpec`` field (``None``: Python packages and
autopackaging, which need a local build and have no portable form)."""

_FLAG_OPTIONS = (
    "args",
    "command",
    "display_name",
    "enable_web_access",
    "labels",
    "network",
    "region",
    "service_account",
    "worker_pool_specs",
)


def flag_to_pool(text: Any, path: str) -> dict[str, Any]:
    """One ``--worker-pool-spec`` value -> a ``WorkerPoolSpec`` mapping (``{}`` when empty)."""
    if not isinstance(text, str):
        raise ValidationError(
            f"expected a flag string such as 'machine-type=n1-standard-4,replica-count=1', got {text!r}",
            path=path,
        )
    text = text.strip().removeprefix("--worker-pool-spec=").strip("'\"")
    pool: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in FLAG_KEYS:
            close = difflib.get_close_matches(key, list(FLAG_KEYS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValidationError(
                f"unknown key {key!r}{hint} Keys: {', '.join(FLAG_KEYS)}", path=f"{path}.{key}"
            )
        target = FLAG_KEYS[key]
        if target is None:
            raise cannot_hold(
                f"--worker-pool-spec {key}",
                "Python packages and autopackaging need a local build.",
                "Build the image and pass container-image-uri.",
            )
        outer, _, inner = target.rpartition(".")
        (pool.setdefault(outer, {}) if outer else pool)[inner] = value.strip("'\"")
    return pool


def _argv(value: Any, path: str) -> tuple[str, ...]:
    """``--command``/``--args``: a list, or one string split like a shell would."""
    if isinstance(value, str):
        return tuple(shlex.split(value))
    return tuple(structure(value, Optional[tuple[str, ...]], path=path) or ())  # type: ignore[arg-type]


def flags_to_spec(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``{"worker_pool_specs": [...], …}`` (the gcloud flags) -> the ``CustomJobSpec`` and the
    CustomJob's outer fields they create."""
    unknown = [k for k in data if k not in _FLAG_OPTIONS]
    if unknown:
        raise ValidationError(f"unknown key; allowed: {', '.join(_FLAG_OPTIONS)}", path=unknown[0])
    specs = data.get("worker_pool_specs")
    if not isinstance(specs, Sequence) or isinstance(specs, str):
        raise ValidationError("expected a list of --worker-pool-spec strings", path="worker_pool_specs")
    pools = [flag_to_pool(s, f"worker_pool_specs[{i}]") for i, s in enumerate(specs)]
    command, args = (_argv(data.get(key), key) for key in ("command", "args"))
    for pool in pools:
        container = pool.get("containerSpec")
        if container and not REDUCTION_SERVER_IMAGE.search(container.get("imageUri", "")):
            container.update({k: list(v) for k, v in (("command", command), ("args", args)) if v})
    spec = {
        "workerPoolSpecs": pools,
        **{
            camel: data[snake]
            for camel, snake in (
                ("network", "network"),
                ("serviceAccount", "service_account"),
                ("enableWebAccess", "enable_web_access"),
            )
            if data.get(snake)
        },
    }
    outer = {"displayName": data.get("display_name"), "labels": data.get("labels")}
    if data.get("region"):
        outer["name"] = f"projects/-/locations/{data['region']}/customJobs/-"
    return spec, outer


# --- a gcloud command line ------------------------------------------------------------------------

COMMAND = ("ai", "custom-jobs", "create")
"""The gcloud command (after ``gcloud`` and an optional ``beta``/``alpha``)."""

VALUE_FLAGS = frozenset({
    "account", "args", "billing-project", "command", "config", "display-name", "format",
    "impersonate-service-account", "kms-key", "kms-keyring", "kms-location", "kms-project", "labels", "network",
    "persistent-resource-id", "project", "python-package-uris", "region", "service-account", "verbosity",
    "worker-pool-spec",
})
"""Flags with a value that omnidist reads (gcloud's global flags among them)."""

SWITCHES = frozenset({"enable-dashboard-access", "enable-web-access", "quiet"})
"""Flags without a value."""

CLIENT_SIDE = ("account", "billing-project", "format", "impersonate-service-account", "project", "quiet",
               "verbosity")
"""Flags that decide how gcloud runs, not what the job is (the project comes from the profile)."""


def is_vertex_command(command: CommandLine) -> bool:
    """True for ``gcloud [beta|alpha] ai custom-jobs create``."""
    words = [w for w in command.argv[1:4 + 1] if w not in ("beta", "alpha")]
    return command.argv[:1] == ("gcloud",) and tuple(words[:3]) == COMMAND


def gcloud_list(text: str) -> list[str]:
    """A gcloud list flag: comma-separated, or split on ``X`` when written ``^X^a X b``."""
    if text.startswith("^") and text.count("^") >= 2:
        delimiter, rest = text[1:].split("^", 1)
        return rest.split(delimiter)
    return text.split(",")


def _spec_from_flags(flags: Flags) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    pools = flags.values.get("worker-pool-spec", [])
    if pools:
        spec["workerPoolSpecs"] = [flag_to_pool(p, f"--worker-pool-spec[{i}]") for i, p in enumerate(pools)]
    for flag, field in (("service-account", "serviceAccount"), ("network", "network"),
                        ("persistent-resource-id", "persistentResourceId")):
        if flags.one(flag):
            spec[field] = flags.one(flag)
    for flag, field in (("enable-web-access", "enableWebAccess"), ("enable-dashboard-access", "enableDashboardAccess")):
        if flags.one(flag) == "true":
            spec[field] = True
    return spec


def _program(spec: dict[str, Any], flags: Flags) -> None:
    """``--command`` and ``--args`` go to every pool's container, the Reduction Server's excepted."""
    given = {field: gcloud_list(flags.one(flag)) for flag, field in (("command", "command"), ("args", "args"))
             if flags.one(flag) is not None}
    for pool in spec.get("workerPoolSpecs") or []:
        container = pool.get("containerSpec") if isinstance(pool, dict) else None
        if container and not REDUCTION_SERVER_IMAGE.search(str(container.get("imageUri", ""))):
            container.update(given)


def command_to_spec(command: CommandLine, notes: list[Note]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``CustomJobSpec`` and outer fields a ``gcloud ai custom-jobs create`` command line
    creates (with notes on the flags that are gcloud's own).

    Raises:
        ValidationError: another command, an unknown flag, or a flag without its value.
        NotPortableError: Python packages (``--python-package-uris``, ``python-module=`` in a pool).
    """
    if not is_vertex_command(command):
        raise ValidationError(f"not a Vertex command: expected `gcloud ai custom-jobs create …`, got `{command}`")
    words = [w for w in command.argv[1:] if w not in ("beta", "alpha")][len(COMMAND):]
    flags = parse_flags(words, switches=SWITCHES, known=VALUE_FLAGS, command="gcloud ai custom-jobs create")
    if flags.positional or flags.rest:
        raise ValidationError(f"unexpected words {' '.join(flags.positional + flags.rest)!r}",
                              path="gcloud ai custom-jobs create")
    if flags.one("python-package-uris"):
        raise cannot_hold("--python-package-uris", "the portable job runs container images, and this "
                                    "job installs Python packages into Google's prebuilt one.",
                                    "Build an image with the packages installed and use container-image-uri.")
    config = proto_json_keys(command.config) if command.config is not None else {}
    if not isinstance(config, dict):
        raise ValidationError("the --config file holds a CustomJobSpec mapping", path="--config")
    spec = merged(config, _spec_from_flags(flags))
    _program(spec, flags)
    outer: dict[str, Any] = {"displayName": flags.one("display-name"),
                             "labels": key_values(flags.one("labels") or "", "--labels") or None}
    if flags.one("region"):
        outer["name"] = f"projects/-/locations/{flags.one('region')}/customJobs/-"
    if flags.one("kms-key"):
        outer["encryptionSpec"] = {"kmsKeyName": flags.one("kms-key")}
    notes.extend(Note(kind=NoteKind.HINT, field=f"--{flag}", message=f"{flags.one(flag)}: a gcloud setting, not "
                      "part of the job (the profile names the project)")
                 for flag in CLIENT_SIDE if flags.one(flag) is not None)
    return spec, outer
