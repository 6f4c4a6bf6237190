"""``omnidist explain`` (SPEC §14): what the training program sees, registered on the main group."""

from __future__ import annotations

import json
from typing import Any, Optional

import click

from omnidist.cli.common import BACKENDS, table, width


@click.command("explain")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--from", "source", type=BACKENDS, help="FILE's backend, for a native file (detected when omitted).")
@click.option("--backend", "-b", type=BACKENDS,
              help="Read FILE as a portable job, compile it for this backend and explain that request.")
@click.option("--profile", "-p", help="Profile supplying the backend's settings (with --backend).")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="A table, or the World as JSON.")
def explain(file: str, source: Optional[str], backend: Optional[str], profile: Optional[str], output: str) -> None:
    """Print what the training program sees when FILE runs (docs/migration.md): per node, the argv the
    platform execs, who starts its processes and how many, the variables it is given; each data
    location (a local path, read-only or writable, or a URI); how a search passes values and reads
    its metric; the image, its registry and whether the platform can pull it.

    FILE is a native request (its backend detected, or --from), or with --backend a portable
    job compiled for that backend. This is the description `omnidist migrate` compares.

    \b
    Examples:
      omnidist explain trainingjob.json
      omnidist explain pytorchjob.yaml --from kubernetes -o json
      omnidist explain job.yaml --backend BACKEND
    """
    from omnidist.backend import registry
    from omnidist.errors import ValidationError

    if backend is not None:
        if source is not None:
            raise click.UsageError("--from reads a native file, --backend a portable job: give one")
        from omnidist import api

        parts, name = [api.compile(file, backend=backend, profile=profile).request], backend
    else:
        from omnidist.migration.native import detect_backend, read_native

        data, _ = read_native(file)
        try:
            name = source or detect_backend(data)
        except ValidationError as exc:
            raise exc.with_source(file) from None
        parts = list(registry.importer(name).split_jobs(data))
    worlds = [registry.importer(name).world(part) for part in parts]
    if any(w is None for w in worlds):
        raise ValidationError(f"{name} derives no World from this form of request; compile or migrate it "
                              "to a request form and explain that", source=file)
    if output == "json":
        shown = [w.to_dict() for w in worlds]
        click.echo(json.dumps(shown[0] if len(shown) == 1 else shown, indent=2))
        return
    click.echo("\n\n".join(text(w) for w in worlds))


def text(world: Any) -> str:
    """A World as tables: its nodes, then its data, image and search."""
    from omnidist.migration.world import shown

    nodes = [(n.role, n.count, shown(n.argv), f"{n.processes} ({n.launcher.value})", shown(n.program),
              ", ".join(sorted(n.platform_env)) or "-", ", ".join(sorted(n.env)) or "-") for n in world.nodes]
    lines = [f"what the program sees on {world.platform}",
             table(nodes, ("role", "nodes", "argv exec'd", "processes a node", "each process runs",
                           "set by the platform", "the job's variables"), fit=width())]
    if world.data:
        data = [(d.location, d.given.value, d.access.value, d.where + (" (the platform's own)" if d.implicit else ""))
                for d in world.data]
        lines.append(table(data, ("data", "given as", "access", "where the program finds it"), fit=width()))
    image = world.image
    if image is not None:
        pull = "yes" if image.pullable else f"no: {image.why}"
        lines.append(f"image: {image.uri} (registry: {image.registry}; the platform pulls it: {pull})")
    if world.hyperparameters:
        lines.append(f"search: values by {world.hyperparameters}; metric read through {world.metric}")
    return "\n".join(lines)
