"""What the ``omnidist`` commands share: the group that turns errors into exit codes, options,
choices read when first needed, and plain-text tables."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Optional

import click

from omnidist.cli import style
from omnidist.cli.style import shown
from omnidist.errors import OmnidistError
from omnidist.model.spelling import close_matches


class Group(click.Group):
    """A command group that turns omnidist errors into messages and exit codes.

    Its commands can be named in ``lazy_commands`` (name to ``"module:function"`` under
    ``omnidist.cli``): a command's module is imported when that command is looked up, so a run of
    one command pays for no other command's imports (click's lazy-loading group pattern). With
    ``lists_backends``, its help lists the installed backends after its own text, each with the
    first sentence of its description: they are read and loaded only when the help is shown.
    """

    def __init__(self, *args: Any, lazy_commands: Optional[dict[str, str]] = None, lists_backends: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})
        self.lists_backends = lists_backends

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help_text(ctx, formatter)
        if not self.lists_backends:
            return
        names = _installed()
        if names:  # as click sizes the commands' short help
            limit = formatter.width - 6 - max(len(name) for name in names)
            with formatter.section("Backends (installed)"):
                formatter.write_dl([(name, backend_summary(name, limit)) for name in names])

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            import importlib

            module, _, name = self.lazy_commands[cmd_name].partition(":")
            command = getattr(importlib.import_module(f"omnidist.cli.{module}"), name)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OmnidistError as exc:
            if ctx.meta.get("omnidist.debug"):
                raise
            style.echo_error(shown(str(exc)))
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as exc:  # an interrupted create says what it knows of its job
            click.echo(shown(getattr(exc, "message", "") or "interrupted"), err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:  # a bug in omnidist or a plugin: say so briefly, never a traceback
            if ctx.meta.get("omnidist.debug"):
                raise
            style.echo_error(f"{type(exc).__name__}: {shown(str(exc))} (rerun with --debug for the traceback and "
                             "report it)",
                             prefix="internal error:")
            ctx.exit(1)


def setup_logging(debug: bool) -> None:
    """What the command shows of log records and Python warnings: omnidist's own warnings, one
    line each; the cloud SDKs' loggers and warnings (credential chains, "experimental field"
    notices, HTTP retries) only with ``--debug``, where everything down to debug records shows.
    Called once per command; a second call replaces the first's handler.

    Without ``--debug``, and while nothing has imported :mod:`logging`, the handler is installed
    when something first does (the SDK a submit loads, a plugin that logs) or when a warning is
    first shown: before that nothing can log, and a command that never logs (``compile``) does
    not pay the import (about 5 ms of its start). See :mod:`omnidist.cli.messages`.
    """
    from omnidist.cli import messages

    messages.setup(debug)


class LazyChoice(click.Choice):
    """A choice whose values are read when first needed (``--help``, parsing), not when the command
    is defined: ``omnidist compile`` does not pay for discovering plugins or platforms it never
    lists, and a newly installed plugin is a choice without an edit here.

    Args:
        read: returns the choices.
        name: how the type names itself in messages.
    """

    def __init__(self, read: Callable[[], Sequence[str]], name: str) -> None:
        self._read, self.name = read, name
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self._read())

    @choices.setter
    def choices(self, value: object) -> None:  # click.Choice.__init__ sets it; `read` decides
        pass

    def get_invalid_choice_message(self, value: Any, ctx: Optional[click.Context]) -> str:
        """Click's message, with the closest choice suggested."""
        close = close_matches(str(value), self.choices, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return super().get_invalid_choice_message(value, ctx) + hint


def _installed() -> list[str]:
    from omnidist.backend import registry

    return registry.installed()


def backend_summary(name: str, limit: int = 45) -> str:
    """The first sentence of installed backend ``name``'s description (its class's docstring: what
    it compiles for), at most ``limit`` characters as click shortens a command's help; a backend
    that does not load says so. Loads the backend: for help only."""
    import inspect

    from omnidist.backend import registry

    try:
        driver = registry.get(name)
    except OmnidistError:
        return "does not load (omnidist backends says why)"
    text = inspect.cleandoc(type(driver).__doc__ or "").replace("``", "")
    return click.utils.make_default_short_help(text, limit)


def _emulations() -> list[str]:
    from omnidist.runtime import platforms

    return sorted(platforms.emulations(), key=lambda name: name != platforms.DEFAULT_EMULATION)


class BackendChoice(LazyChoice):
    """The installed backends, as ``--backend`` lists them in ``--help`` and completes them; a
    backend omnidist knows of but that is not installed passes through, so the registry's message
    says which package installs it."""

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        from omnidist.backend import registry

        if value not in registry.installed() and value in registry.missing():  # `missing` imports every
            return value  # runtime platform module: only for a name that is not installed
        return super().convert(value, param, ctx)


BACKENDS = LazyChoice(_installed, "backend")
"""The installed backends."""
EMULATIONS = LazyChoice(_emulations, "platform")
"""The platforms ``omnidist run`` can emulate, the default first."""
FRAMEWORKS = click.Choice(["pytorch", "tensorflow", "horovod", "deepspeed", "custom", "jax"])

backend_option = click.option("--backend", "-b", type=BackendChoice(_installed, "backend"),
                              help="Target backend (default: the profile's, else local).")
profile_option = click.option("--profile", "-p", help="Profile from omnidist.toml / config.toml.")
verbose_option = click.option("--verbose", "-v", is_flag=True, help="Also show the notes that are details "
                              "(the interpreter a local run uses, preview ports).")


def width() -> Optional[int]:
    """The terminal's width when stdout is a terminal or ``COLUMNS`` says one, else ``None``
    (output for a file or a program is not wrapped)."""
    import os
    import shutil

    if not (sys.stdout.isatty() or os.environ.get("COLUMNS")):
        return None
    return shutil.get_terminal_size((100, 24)).columns


def table(rows: list[tuple[Any, ...]], header: tuple[str, ...], fit: Optional[int] = None) -> str:
    """Rows as aligned plain-text columns under a header and a rule.

    With ``fit`` (a width in characters), the last column's long cells wrap at word boundaries
    onto lines of their own, indented under the column, so every line fits (at least 30
    characters are left to the last column).
    """
    import textwrap

    cells = [tuple(shown(str(c)) for c in r) for r in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    indent = sum(widths[:-1]) + 2 * (len(header) - 1)
    room = max(fit - indent, 30) if fit else None
    if room is not None:
        widths[-1] = min(widths[-1], room)
    lines = []
    for n, row in enumerate(cells):
        # a path or a machine name is never split: a reader copies it whole
        parts = (textwrap.wrap(row[-1], room, break_long_words=False, break_on_hyphens=False)
                 if room is not None and n and row[-1] else [row[-1]])
        first = "  ".join(c.ljust(w) for c, w in zip((*row[:-1], parts[0]), widths)).rstrip()
        lines.append(first)
        lines += [" " * indent + part for part in parts[1:]]
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --- a one-off job from flags: `omnidist run --nodes 2 --accelerator A100:8 -- python train.py` ---------

JOB_SUFFIXES = (".yaml", ".yml", ".json")
"""What a job file's name ends with (a lone word that does not is a command)."""


job_argument = click.argument("job", nargs=-1, required=True, type=click.UNPROCESSED,
                              metavar="JOB_FILE | -- COMMAND…")
"""``JOB_FILE`` or, after ``--``, the command of a one-off job (:func:`one_off`)."""


def one_off_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The flags that shape a one-off job (listed last in ``--help``)."""
    options = [
        click.option("--nodes", type=click.IntRange(min=1), help="One-off job: training nodes (the primary and "
                     "NODES-1 workers; default 1)."),
        click.option("--accelerator", metavar="TYPE:COUNT", help="One-off job: each node's accelerators, e.g. "
                     "A100:8."),
        click.option("--framework", type=FRAMEWORKS, help="One-off job: the framework (default pytorch)."),
        click.option("--image", help="One-off job: the container image (the clouds need one)."),
        click.option("--name", help="One-off job: its name (default: from the command)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def one_off(job: tuple[str, ...], nodes: Optional[int], accelerator: Optional[str], framework: Optional[str],
            image: Optional[str], name: Optional[str]) -> Any:
    """The job file's path, or a one-off job made from a command and the flags.

    A single word naming a ``.yaml``/``.yml``/``.json`` file, or an existing file, is a job file
    (then the one-off flags are refused: the file says it all); anything else is a command.

    Raises:
        ValidationError: one-off flags with a job file, or a one-off job the flags make invalid.
    """
    import os

    from omnidist.errors import ValidationError

    flags = {"--nodes": nodes, "--accelerator": accelerator, "--framework": framework, "--image": image,
             "--name": name}
    if len(job) == 1 and (job[0].endswith(JOB_SUFFIXES) or os.path.isfile(job[0])):
        given = [flag for flag, value in flags.items() if value is not None]
        if given:
            raise ValidationError(f"{', '.join(given)} make a one-off job from a command (omnidist run --nodes 2 "
                                  f"-- python train.py); {job[0]} is a job file: set them in it", path=given[0])
        return job[0]
    from omnidist.model.job import NAME_PATTERN, DistributedJob

    words = [w for w in job if not w.startswith("-") and w not in ("python", "python3", "-m")]
    stem = os.path.splitext(os.path.basename(words[0]))[0] if words else ""
    derived = "-".join(filter(None, "".join(c if c.isalnum() else " " for c in stem.lower()).split()))
    derived = derived if NAME_PATTERN.match(derived or "") else "job"
    data: dict[str, Any] = {"name": name or derived, "framework": framework or "pytorch", "command": list(job),
                            "primary": {"accelerator": accelerator} if accelerator else {}}
    if image:
        data["image"] = image
    if nodes and nodes > 1:
        data["workers"] = {"replicas": nodes - 1}
    try:
        return DistributedJob.from_dict(data)
    except ValidationError as exc:  # say it with the flag the value came from
        from omnidist.errors import Problem

        raise ValidationError([Problem(_FLAGS.get(p.path.split(".type")[0], p.path), p.message) for p in exc.problems],
                              source="the command line") from None


_FLAGS = {"primary.accelerator": "--accelerator", "name": "--name", "framework": "--framework", "image": "--image",
          "workers.replicas": "--nodes", "command": "COMMAND"}
"""A one-off job's field -> the flag that set it, for its errors."""
