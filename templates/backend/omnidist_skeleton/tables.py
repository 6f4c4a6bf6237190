"""What Skeleton Cloud calls things, as tables: the compiler, importer and client read them.

A real backend's tables hold its machine catalog, accelerator names and API enums; this one holds
the few a JSON job API needs.
"""

from __future__ import annotations

from omnidist.kit import Feature, JobState, Refusal, RoleName

NAME = "skeleton"
"""The backend's name: its entry point, its ``backends.<name>`` block, its profiles' ``backend``."""

DISPLAY = "Skeleton Cloud"

ROLES = {RoleName.PRIMARY: "primary", RoleName.WORKERS: "workers"}
"""Portable role -> the cloud's pool name."""

ACCELERATORS = {"T4": "nvidia-t4", "V100": "nvidia-v100", "A100": "nvidia-a100", "L4": "nvidia-l4"}
"""Portable accelerator -> the cloud's name for it."""

STATES = {"QUEUED": JobState.QUEUED, "RUNNING": JobState.RUNNING, "SUCCEEDED": JobState.SUCCEEDED,
          "FAILED": JobState.FAILED, "CANCELLING": JobState.CANCELLING, "CANCELLED": JobState.CANCELLED}
"""The API's job states -> portable states."""

NATIVE_KEYS = frozenset({"id", "displayName", "pools", "labels", "timeoutSeconds"})
"""The keys of a job request: a file with ``pools`` and no key outside these is one of ours."""

NATIVE_FORMATS = (f"{DISPLAY} job request (JSON: displayName, pools)",)

CONSOLE_URL = "https://console.skeleton.example/jobs/{job_id}"

DEFAULT_ENDPOINT = "https://api.skeleton.example"

DEFAULT_TIMEOUT = "7 days"
"""How long the cloud lets a job run that sets no ``timeoutSeconds``."""

ONLY_TWO_ROLES = Refusal(message=f"{DISPLAY} runs a primary and workers only",
                         hint="Drop the {role} role, or pick a backend that has it.")
NO_DATA = f"{DISPLAY} mounts no data"

REFUSALS = {
    Feature.PARAMETER_SERVERS: ONLY_TWO_ROLES,
    Feature.EVALUATORS: ONLY_TWO_ROLES,
    Feature.REDUCTION_SERVERS: Refusal(message=f"{DISPLAY} has no Reduction Server", hint="Drop reduction_servers."),
    Feature.SPOT: Refusal(message=f"{DISPLAY} sells no spot capacity", hint="Set spot: false."),
    Feature.INFINIBAND: Refusal(message=f"{DISPLAY} has no InfiniBand machines", hint="Set interconnect: any."),
    Feature.TUNING: Refusal(message=f"{DISPLAY} runs no hyperparameter searches",
                            hint="Run the search on another backend."),
    Feature.CODE: Refusal(message=f"{DISPLAY} runs container images only", hint="Build the code into the image."),
    Feature.INPUTS: Refusal(message=NO_DATA, hint="Read the data from the program."),
    Feature.OUTPUTS: Refusal(message=NO_DATA, hint="Write the outputs from the program."),
    Feature.IMAGE: Refusal(message=f"{DISPLAY} needs a container image", hint="Give the job an image."),
    Feature.FRAMEWORK_VERSION: Refusal(message=f"{DISPLAY} has no prebuilt containers", hint="Give the job an image."),
}
"""The features it lacks, in words (its compiler raises with them; ``migrate`` reports them)."""
