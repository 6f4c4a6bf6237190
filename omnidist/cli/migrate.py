"""``omnidist import`` and ``omnidist migrate`` (SPEC §3), registered on the main group."""

from __future__ import annotations

import json
import sys
from typing import Optional

import click

from omnidist.cli import style
from omnidist.cli.common import BACKENDS, FRAMEWORKS, setup_logging, shown


@click.command("import")
@click.argument("native_file", type=click.Path(dir_okay=False))
@click.option("--from", "source", type=BACKENDS, help="The spec's backend (detected from the content when omitted).")
@click.option("--framework", type=FRAMEWORKS, help="Set the framework instead of inferring it.")
def import_command(native_file: str, source: Optional[str], framework: Optional[str]) -> None:
    """Turn a native job spec (NATIVE_FILE) into a portable job; prints its YAML.

    A file holding several training jobs (Kubernetes manifests) prints one portable job per
    training job, as a YAML stream (``---`` between them).

    \b
    Examples:
      omnidist import request.json > job.yaml
      omnidist import config.yaml --from BACKEND --framework tensorflow
      omnidist import pytorchjobs.yaml --from kubernetes
    """
    from omnidist import migration
    from omnidist.migration.imports import import_jobs

    parts, found = import_jobs(native_file, migration.resolve(source), framework)
    click.echo("---\n".join(migration.job_yaml_with_comments(job, entries, found.name, native_file)
                            for job, entries in parts), nl=False)


@click.command("migrate")
@click.argument("native_file", type=click.Path(dir_okay=False))
@click.option("--from", "source", type=BACKENDS, help="The spec's backend (detected from the content when omitted).")
@click.option("--to", "target", type=BACKENDS, required=True, help="The backend to compile for.")
@click.option("--strict", is_flag=True, help="Exit 3 if anything would be dropped or change meaning.")
@click.option("--framework", type=FRAMEWORKS, help="Set the framework instead of inferring it.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Format of the fidelity report on stderr.")
@click.option("--image", help="Container to run, for specs that ran something only their cloud has "
              "(a Python-package job; a registered environment, build context or conda file).")
@click.option("--command", "command", help="Command to run, one string read like a shell reads it "
              "(for a spec that names none, or to run something else).")
@click.option("--profile", "-p", help="Profile supplying the target's settings.")
@click.option("--accelerator", "accelerators", multiple=True, metavar="[ROLE=]TYPE:COUNT",
              help="The GPUs of a spec whose machines the file does not say (a job on a named compute "
                   "cluster): V100:2 for the primary (the roles that inherit its hardware follow), "
                   "workers=V100:2 for one role. Repeatable.")
@click.option("--debug", is_flag=True, help="Say where each report line came from (the importer's or compiler's note "
              "and its code, or the migration itself), and show Python tracebacks for errors.")
def migrate_command(native_file: str, source: Optional[str], target: str, strict: bool, framework: Optional[str],
                    output: str, image: Optional[str], command: Optional[str], profile: Optional[str],
                    accelerators: tuple[str, ...], debug: bool) -> None:
    """Import NATIVE_FILE and compile it for another backend.

    Prints the target's native request on stdout and a fidelity report on stderr: what
    mapped exactly, what was inferred or approximated, what changed or was dropped. With
    --strict, a drop or a change in meaning prints the report and exits 3. With -o json,
    stderr is one JSON document, errors included: the report, or an ``error`` object.
    A file holding several training jobs compiles each: the requests as a YAML stream, one
    report per job (a JSON list with -o json). With --debug (here or before the command), each
    report line also says where it came from: ``[BACKEND compiler note machine.chosen]``, or
    ``[migration]`` for a line the migration writes itself (``origin`` and ``code`` in JSON).

    \b
    Examples:
      omnidist migrate config.yaml --to TARGET > request.json
      omnidist migrate job.yml --from SOURCE --to TARGET --strict
      omnidist migrate config.yaml --to TARGET --image registry.example.com/trainer:1 -o json
      omnidist migrate job.yml --to TARGET --accelerator V100:4   # a spec run on a named compute cluster
    """
    from omnidist import migration
    from omnidist.errors import OmnidistError
    from omnidist.migration.report import StrictMigrationError

    meta = click.get_current_context().meta
    if debug and not meta.get("omnidist.debug"):  # as `omnidist --debug migrate`: tracebacks and SDK logs too
        meta["omnidist.debug"] = True
        setup_logging(True)
    traced = bool(meta.get("omnidist.debug"))
    try:
        results = migration.migrate_all(native_file, source, target, strict=strict, framework=framework,
                                        image=image, profile=profile, command=command,
                                        accelerators=dict(_role_and_accelerator(a) for a in accelerators))
    except OmnidistError as exc:
        report = exc.report if isinstance(exc, StrictMigrationError) else None  # what broke --strict
        if output != "json" or traced:
            if report is not None:
                click.echo(style.report(report, style.enabled(), traced=traced), err=True, color=style.enabled())
            raise
        click.echo(json.dumps({**(report.to_dict() if report is not None else {}), "error": error_dict(exc)},
                              indent=2), err=True)
        sys.exit(exc.exit_code)
    if len(results) == 1:
        click.echo(results[0][0].render())
    else:  # a YAML stream (JSON documents are YAML too)
        click.echo("---\n".join(compiled.render().rstrip("\n") + "\n" for compiled, _ in results), nl=False)
    if output == "json":
        reports = [report.to_dict(traced=traced) for _, report in results]
        click.echo(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2), err=True)
        return
    on = style.enabled()
    for i, (compiled, report) in enumerate(results):
        if len(results) > 1:
            name = compiled.job.name if compiled.job is not None else ""
            click.echo(f"{'' if i == 0 else chr(10)}# job {i + 1} of {len(results)}: {shown(name)}", err=True)
        click.echo(style.report(report, on, traced=traced), err=True, color=on)


def _role_and_accelerator(text: str) -> tuple[str, str]:
    """``workers=V100:2`` -> ``("workers", "V100:2")``; a bare ``V100:2`` is the primary's."""
    role, sep, accelerator = text.partition("=")
    return (role.strip(), accelerator.strip()) if sep else ("primary", text.strip())


def error_dict(exc: BaseException) -> dict[str, object]:
    """An error as ``-o json`` prints it: ``{"type", "exit_code", "message"}``."""
    from omnidist.secrets import mask_shapes

    return {"type": type(exc).__name__, "exit_code": getattr(exc, "exit_code", 1), "message": mask_shapes(str(exc))}
