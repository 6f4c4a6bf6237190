"""What a migration needs from the user that the native spec does not have, and how a target's
refusal of a valid spec reads: ``--image`` (for specs that ran an environment or a package only
their cloud has), ``--command`` (for specs that leave the program to the image), and the flag to
name when the target refuses (exit 3, not 2: the spec is valid, the clouds differ).
"""

from __future__ import annotations

import collections
import shlex
from typing import Optional

import attrs

from omnidist.backend.contract import Backend
from omnidist.compiler import commandline
from omnidist.compiler import delowering as importing
from omnidist.errors import OmnidistError, UnsupportedFeatureError, ValidationError
from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.model.features import Feature
from omnidist.model.job import DistributedJob

IMAGE_NOTES = ("image", "environment.build", "environment.conda_file")
"""Import notes about what the source ran instead of (or on top of) a plain image; ``--image``
answers them."""


def _runs_instead(job: DistributedJob, source: Backend, entries: list[ReportEntry]) -> Optional[str]:
    """What the source spec runs that other clouds do not have, when it names no image to run
    (the source's :attr:`~omnidist.backend.contract.MigrationPolicy.runs_instead`)."""
    if job.image or job.primary.image or job.framework_version:
        return None  # a framework_version runs on the target's prebuilt container, or is refused there
    block = job.backends.get(source.name, {})
    for key, runs in source.migration.runs_instead.items():
        if key in block:
            return runs.format_map(collections.defaultdict(lambda: "default", block))
    if any(e.field == "environment.build" for e in entries):
        return "runs an image its cloud builds from a Docker context"
    return "names no container image (it came from the command line that submitted the file)"


def give_image(job: DistributedJob, source: Backend, target: Backend, image: Optional[str],
               entries: list[ReportEntry]) -> tuple[DistributedJob, list[ReportEntry], list[ReportEntry]]:
    """Set the image given with ``--image`` (it answers the import's notes about environments the
    source built or registered); a Python-package job runs its module with it.

    Returns:
        The job, the import entries left, and the entries this step adds.

    Raises:
        UnsupportedFeatureError: moving to another backend, the job has no image and its spec ran
            something only the source provides (a legacy runtime version, a registered or built
            environment): exit 3, naming ``--image``.
    """
    block = job.backends.get(source.name, {})
    if image is None:
        runs = _runs_instead(job, source, entries) if source.name != target.name else None
        if runs:
            raise UnsupportedFeatureError(
                Feature.IMAGE, target.name, f"the {source.name} spec {runs}, and {target.name} runs a container image.",
                "Pass --image (image= in Python) with a training container that holds the program.")
        return job, entries, []
    replaced = [e for e in entries if e.field in IMAGE_NOTES and e.field != "image"]
    what = f", in place of {', '.join(e.field for e in replaced)}" if replaced else ""
    added = [ReportEntry(fidelity=Fidelity.EXACT, field="image", message=f"{image} (from --image{what})")]
    key = source.migration.module_setting
    module = block.get(key) if key else None
    if module and not job.command:
        rest = {k: v for k, v in block.items() if k != key}
        job = attrs.evolve(job, command=("python", "-m", module), backends={**job.backends, source.name: rest})
        added.append(ReportEntry(fidelity=Fidelity.APPROXIMATED, field=f"backends.{source.name}.{key}",
                                 message=f"{module} became the command python -m {module}: the image must have the "
                                         "package installed"))
    kept = [e for e in entries if e.field not in IMAGE_NOTES]
    return attrs.evolve(job, image=image), kept, added


def give_command(job: DistributedJob, command: Optional[str]) -> tuple[DistributedJob, list[ReportEntry]]:
    """Set the command given with ``--command`` (one string, read like a shell reads it)."""
    if command is None:
        return job, []
    argv, wrapped = commandline.shell_argv(command, "--command")
    how = " (kept whole as bash -c: it needs a shell)" if wrapped else ""
    entry = ReportEntry(
        fidelity=Fidelity.EXACT, field="command", message=f"{importing.shorten(shlex.join(argv))} (from --command{how})"
    )
    return attrs.evolve(job, command=argv), [entry]


FLAG_HINTS: dict[str, str] = {
    "command": "Pass --command '…' (command= in Python): the program to run, which the spec left to the image.",
    "env": "Pass --command '…' (command= in Python) so that the variables can go in front of it.",
    "framework": "Pass --framework (framework= in Python) to say what the training code is written with.",
    "image": "Pass --image (image= in Python) with a training container that holds the program.",
    "framework_version": "Pass --image (image= in Python) with a training container that has the framework "
                         "version the job needs.",
}
"""The first part of a field the target asked for -> the ``migrate`` flag that gives it."""


def _flag_hint(feature: str) -> str:
    """The hint for a job-wide field (``command``, ``env``); a role's own field (``workers.image``)
    is not what the flag sets."""
    return "" if "." in feature else FLAG_HINTS.get(feature.split()[0] if feature else "", "")


def with_flag_hint(exc: UnsupportedFeatureError) -> UnsupportedFeatureError:
    """The target's refusal, pointing at the ``migrate`` flag that answers it (when one does)."""
    hint = _flag_hint(exc.subject)
    if not hint or hint in exc.hint:
        return exc
    return UnsupportedFeatureError(exc.feature, exc.backend, exc.message, hint, subject=exc.subject)


def cannot_express(exc: ValidationError, target: str) -> OmnidistError:
    """What the target's compiler rejects in a job imported from a valid spec is a gap between
    the two clouds (exit 3), not invalid input; settings the caller gave stay invalid input."""
    problem = exc.problems[0]
    if problem.path.startswith(("backends.", "settings.")) or (exc.source and problem.path != "framework_version"):
        return exc  # a framework_version the source ran and the target lacks is a gap, not invalid input
    message = problem.message if problem.message.endswith((".", "?", "!")) else f"{problem.message}."
    return UnsupportedFeatureError(problem.path or "the job", target, message, _flag_hint(problem.path))
