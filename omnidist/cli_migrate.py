"""``omnidist import`` and ``omnidist migrate`` (SPEC §3), registered on the main group."""

from __future__ import annotations

import difflib
import json
from typing import Any, Optional

import click



class BackendChoice(click.Choice):
    """A choice of the installed backends, read from the registry when first needed: ``omnidist
    --help`` loads no plugin, and a newly installed backend is a choice without an edit here."""

    name = "backend"

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from omnidist import registry

        return tuple(registry.installed())

    @choices.setter
    def choices(self, value: object) -> None:  # click.Choice.__init__ sets it; the registry decides
        pass

    def get_invalid_choice_message(self, value: Any, ctx: Optional[click.Context]) -> str:
        """Click's message, with the closest installed backend suggested."""
        close = difflib.get_close_matches(str(value), self.choices, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return super().get_invalid_choice_message(value, ctx) + hint


BACKENDS = BackendChoice()
FRAMEWORKS = click.Choice(["pytorch", "tensorflow", "horovod", "deepspeed", "custom"])


@click.command("import")
@click.argument("native_file", type=click.Path(dir_okay=False))
@click.option("--from", "source", type=BACKENDS, help="The spec's backend (detected from the content when omitted).")
@click.option("--framework", type=FRAMEWORKS, help="Set the framework instead of inferring it.")
def import_command(native_file: str, source: Optional[str], framework: Optional[str]) -> None:
    """Turn a native job spec (NATIVE_FILE) into a portable job; prints its YAML."""
    from omnidist import migration

    job, source, entries = migration.import_job(native_file, source, framework)
    click.echo(migration.job_yaml_with_comments(job, entries, source, native_file), nl=False)


@click.command("migrate")
@click.argument("native_file", type=click.Path(dir_okay=False))
@click.option("--from", "source", type=BACKENDS, help="The spec's backend (detected from the content when omitted).")
@click.option("--to", "target", type=BACKENDS, required=True, help="The backend to compile for.")
@click.option("--strict", is_flag=True, help="Exit 3 if anything would be dropped or change meaning.")
@click.option("--framework", type=FRAMEWORKS, help="Set the framework instead of inferring it.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Format of the fidelity report on stderr.")
@click.option("--image", help="Container to run, for specs that ran something only their cloud has "
              "(a legacy Python-package job; an Azure ML registered environment, build context or conda file).")
@click.option("--command", "command", help="Command to run, one string read like a shell reads it "
              "(for a spec that names none, or to run something else).")
@click.option("--profile", "-p", help="Profile supplying the target's settings.")
def migrate_command(native_file: str, source: Optional[str], target: str, strict: bool, framework: Optional[str],
                    output: str, image: Optional[str], command: Optional[str], profile: Optional[str]) -> None:
    """Import NATIVE_FILE and compile it for another backend.

    Prints the target's native request on stdout and a fidelity report on stderr: what
    mapped exactly, what was inferred or approximated, what changed or was dropped. With
    --strict, a drop or a change in meaning prints the report and exits 3.
    """
    from omnidist import migration

    def show(report: "migration.MigrationReport") -> None:
        text = json.dumps(report.to_dict(), indent=2) if output == "json" else str(report)
        click.echo(text, err=True)

    try:
        compiled, report = migration.migrate(native_file, source, target, strict=strict, framework=framework,
                                             image=image, profile=profile, command=command)
    except migration.StrictMigrationError as exc:
        show(exc.report)
        raise
    click.echo(compiled.render())
    show(report)
