"""What the ``omnidist`` commands share: the group that turns errors into exit codes, options,
choices read when first needed, and plain-text tables."""

from __future__ import annotations

import difflib
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any, Optional

import click

from omnidist.cli import style
from omnidist.errors import OmnidistError


class Group(click.Group):
    """A command group that turns omnidist errors into messages and exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OmnidistError as exc:
            if ctx.meta.get("omnidist.debug"):
                raise
            style.echo_error(str(exc))
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:  # a bug in omnidist or a plugin: say so briefly, never a traceback
            if ctx.meta.get("omnidist.debug"):
                raise
            style.echo_error(f"{type(exc).__name__}: {exc} (rerun with --debug for the traceback and report it)",
                             prefix="internal error:")
            ctx.exit(1)


class _Messages(logging.Handler):
    """Log records on stderr as the command's own lines: ``warning: …`` (stderr read when a record
    comes, so a test's or a caller's replacement of it is honoured)."""

    def __init__(self, debug: bool) -> None:
        super().__init__(logging.DEBUG if debug else logging.WARNING)
        self.debug = debug
        if not debug:  # the SDKs' loggers (and Python warnings) only with --debug
            self.addFilter(lambda record: record.name == "omnidist" or record.name.startswith("omnidist."))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            on = style.enabled(sys.stderr)
            if self.debug:
                line = f"{record.levelname.lower()}: {record.name}: {message}"
            elif record.levelno >= logging.ERROR:
                line = f"{style.paint('error:', on, fg='red', bold=True)} {message}"
            else:
                line = style.warning(message, on)
            click.echo(line, err=True, color=on)
        except Exception:  # noqa: BLE001 - logging never takes the command down
            self.handleError(record)


def setup_logging(debug: bool) -> None:
    """What the command shows of log records and Python warnings: omnidist's own warnings, one
    line each; the cloud SDKs' loggers and warnings (credential chains, "experimental field"
    notices, HTTP retries) only with ``--debug``, where everything down to debug records shows.
    Called once per command; a second call replaces the first's handler."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Messages)]:
        root.removeHandler(handler)
    root.addHandler(_Messages(debug))
    if debug:
        root.setLevel(logging.DEBUG)
    logging.captureWarnings(True)  # warnings.warn goes to the "py.warnings" logger: shown with --debug


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
        close = difflib.get_close_matches(str(value), self.choices, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return super().get_invalid_choice_message(value, ctx) + hint


def _installed() -> list[str]:
    from omnidist.backend import registry

    return registry.installed()


def _emulations() -> list[str]:
    from omnidist.runtime import platforms

    return sorted(platforms.emulations(), key=lambda name: name != platforms.DEFAULT_EMULATION)


BACKENDS = LazyChoice(_installed, "backend")
"""The installed backends."""
EMULATIONS = LazyChoice(_emulations, "platform")
"""The platforms ``omnidist run`` can emulate, the default first."""
FRAMEWORKS = click.Choice(["pytorch", "tensorflow", "horovod", "deepspeed", "custom"])

backend_option = click.option("--backend", "-b", help="Target backend (overrides the profile's).")
profile_option = click.option("--profile", "-p", help="Profile from omnidist.toml / config.toml.")


def table(rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    """Rows as aligned plain-text columns under a header and a rule."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])
