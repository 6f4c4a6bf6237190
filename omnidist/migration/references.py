"""Platform-bound references in a job that moves (SPEC §10): paths and variables that exist only
inside one platform's containers, found in ``command``, ``args`` and ``env``.

Each runtime platform declares its own (:class:`omnidist.runtime.platforms.Bound`: an
object store's FUSE mount paths and folder variables, a service's own mounts and variables, a
training operator's ``PET_*``, …); a new platform adds its declaration and every
migration honours it. What the target does not have is rewritten to the portable form the target
compiles into its own (a mounted bucket path becomes an input or output at the bucket's URI,
which the target shows the program as it shows any data at such a URI, through ``data_map``
where it reads none; a model-folder variable becomes ``${{outputs.model}}``), or reported
``changed``, naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Optional

import attrs

from omnidist.migration.report import Fidelity, ReportEntry
from omnidist.model.data import DATA_NAME, JobInput, JobOutput
from omnidist.model.job import DistributedJob
from omnidist.model.roles import RoleName
from omnidist.runtime import platforms
from omnidist.runtime.platforms import Bound

VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$([A-Za-z_][A-Za-z0-9_]*)")
"""A variable reference as a shell (``$X``, ``${X}``) or Kubernetes (``$(X)``) expands it."""

OUTPUT_WORDS = ("output", "out_dir", "outdir", "model_dir", "save", "checkpoint", "ckpt", "export", "log_dir",
                "logdir", "tensorboard", "job_dir", "result", "dest")
"""Words of a flag or variable name that say the program writes the folder it names: a bound path
it names becomes an output; any other becomes an input (read-only), and the report says so."""


@attrs.define
class _Rewriter:
    """The rewrites of one job: references found, inputs and outputs declared, report entries."""

    job: DistributedJob
    target: str
    foreign: dict[str, Bound]
    inputs: dict[str, JobInput] = attrs.field(factory=dict)
    outputs: dict[str, JobOutput] = attrs.field(factory=dict)
    entries: list[ReportEntry] = attrs.field(factory=list)
    seen: set[str] = attrs.field(factory=set)

    def __attrs_post_init__(self) -> None:
        self.inputs, self.outputs = dict(self.job.inputs), dict(self.job.outputs)

    # --- one text ------------------------------------------------------------------------------

    def text(self, value: str, field: str, context: str) -> str:
        """``value`` with every bound path and variable rewritten (``context``: the flag or variable
        name the value belongs to, which tells an output folder from an input)."""
        for platform, bound in self.foreign.items():
            for prefix, uri_prefix in bound.mounts.items():
                value = self._mount(value, field, context, platform, prefix, uri_prefix)
            for path, reference in bound.paths.items():
                value = self._path(value, field, platform, path, reference)
        return VARIABLE.sub(lambda m: self._variable(m, field), value)

    def _mount(self, value: str, field: str, context: str, platform: str, prefix: str, uri_prefix: str) -> str:
        pattern = re.compile(r"(?<![\w./~-])" + re.escape(prefix) + r"[^\s'\"]*")

        def replace(match: re.Match[str]) -> str:
            path = match[0]
            if not uri_prefix:
                self._changed(field, f"`{path}` is a {platform} mount: on {self.target} nothing is there; declare "
                                     "the data under inputs and refer to it as ${{inputs.NAME}}")
                return path
            uri = uri_prefix + path[len(prefix):]
            writes = any(word in _words(context) for word in OUTPUT_WORDS)
            kind, name = ("outputs", self._output(uri, context)) if writes else ("inputs", self._input(uri, context))
            how = "written there" if writes else ("read there (a read-only input; if the program writes there, move "
                                                  "it under outputs)")
            self.entries.append(ReportEntry(
                fidelity=Fidelity.APPROXIMATED, field=f"{kind}.{name}",
                message=f"`{path}` in {field} is {platform}'s mount of {uri}: declared as {kind}.{name} = {uri}, "
                        f"{how}, so {self.target} gives the program its own path for it"))
            return f"${{{{{kind}.{name}}}}}"

        return pattern.sub(replace, value)

    def _path(self, value: str, field: str, platform: str, path: str, reference: str) -> str:
        pattern = re.compile(r"(?<![\w./~-])" + re.escape(path) + r"(?=$|[/\s'\"])")
        if not pattern.search(value):
            return value
        self._declare(reference)
        self.entries.append(ReportEntry(
            fidelity=Fidelity.APPROXIMATED, field=field,
            message=f"`{path}` is {platform}'s own folder: written as {reference}, the same folder on {self.target}"))
        return pattern.sub(lambda _: reference, value)

    def _variable(self, match: re.Match[str], field: str) -> str:
        name = match[1] or match[2] or match[3]
        for platform, bound in self.foreign.items():
            if not bound.declares(name):
                continue
            equivalent = bound.equivalents.get(name)
            if equivalent:
                self._declare(equivalent)
                self.entries.append(ReportEntry(
                    fidelity=Fidelity.APPROXIMATED, field=field,
                    message=f"`{match[0]}` is set only by {platform}: written as {equivalent}, which means the same "
                            f"on {self.target}"))
                return equivalent
            self._changed(field, f"`{match[0]}` is set only by {platform}: on {self.target} it is unset (empty); "
                                 "give the program the value another way")
            return match[0]
        return match[0]

    def _changed(self, field: str, message: str) -> None:
        if (field, message) not in self.seen:
            self.seen.add((field, message))
            self.entries.append(ReportEntry(fidelity=Fidelity.CHANGED, field=field, message=message))

    # --- declaring data ------------------------------------------------------------------------

    def _declare(self, reference: str) -> None:
        kind, _, name = reference.strip("${}").partition(".")
        if kind == "outputs" and name not in self.outputs:
            self.outputs[name] = JobOutput()
        elif kind == "inputs" and name not in self.inputs:
            raise AssertionError(f"a platform's equivalent names an undeclared input: {reference}")

    def _input(self, uri: str, context: str) -> str:
        for name, found in self.inputs.items():
            if found.uri == uri:
                return name
        name = _fresh(_name(context, uri), set(self.inputs) | set(self.outputs))
        self.inputs[name] = JobInput.parse(uri)
        return name

    def _output(self, uri: str, context: str) -> str:
        for name, found in self.outputs.items():
            if found.uri == uri:
                return name
        name = _fresh(_name(context, uri), set(self.inputs) | set(self.outputs))
        self.outputs[name] = JobOutput(uri=uri)
        return name

    # --- the job ---------------------------------------------------------------------------------

    def argv(self, argv: Optional[Sequence[str]], field: str) -> Optional[tuple[str, ...]]:
        if argv is None:
            return None
        result = []
        for i, arg in enumerate(argv):
            flag, eq, _ = arg.partition("=")
            previous = argv[i - 1] if i else ""
            context = flag if eq and flag.startswith("-") else (previous if previous.startswith("-") else "")
            result.append(self.text(arg, field, context))
        return tuple(result)

    def env(self, env: Mapping[str, str], prefix: str) -> dict[str, str]:
        return {key: self.text(value, f"{prefix}env.{key}", key) for key, value in env.items()}


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower())


def _name(context: str, uri: str) -> str:
    """A data name from the flag or variable the path belongs to, else from the path's last part."""
    base = _words(context).strip("_") or _words(uri.rstrip("/").rsplit("/", 1)[-1]).strip("_") or "data"
    base = base if re.match(r"[a-z_]", base) else f"d_{base}"
    return base[:64]


def _fresh(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken or not DATA_NAME.match(candidate):
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def foreign_to(target: str) -> dict[str, Bound]:
    """Every platform's bound references that the ``target`` platform does not have itself."""
    found = platforms.bound()
    own = found.get(target, Bound())
    return {name: Bound(mounts={p: u for p, u in bound.mounts.items() if p not in own.mounts},
                        variables=tuple(v for v in bound.variables if v not in own.variables),
                        equivalents={k: v for k, v in bound.equivalents.items() if k not in own.variables},
                        paths={p: r for p, r in bound.paths.items() if p not in own.paths})
            for name, bound in found.items() if name != target}


def rewrite_bound_references(job: DistributedJob, target: str) -> tuple[DistributedJob, list[ReportEntry]]:
    """The job with the paths and variables only other platforms have rewritten for ``target``
    where a portable equivalent exists, and a report entry for each (``changed`` where none does)."""
    rewriter = _Rewriter(job=job, target=target, foreign=foreign_to(target))
    changes: dict[str, object] = {
        "command": rewriter.argv(job.command, "command") or (),
        "args": rewriter.argv(job.args, "args") or (),
        "env": rewriter.env(job.env, ""),
    }
    for name in RoleName:
        role = job.role(name)
        if role is not None:
            changes[name.value] = attrs.evolve(
                role, command=rewriter.argv(role.command, f"{name.value}.command"),
                args=rewriter.argv(role.args, f"{name.value}.args"), env=rewriter.env(role.env, f"{name.value}."))
    if not rewriter.entries:
        return job, []
    return attrs.evolve(job, inputs=rewriter.inputs, outputs=rewriter.outputs, **changes), rewriter.entries
