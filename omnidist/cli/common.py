"""What the ``omnidist`` commands share: the group that turns errors into exit codes, options,
choices read when first needed, and plain-text tables."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from typing import Any, Optional

import click

from omnidist.errors import OmnidistError
from omnidist.secrets import mask_shapes

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters a terminal acts on (escape sequences, carriage returns, bells) or breaks a line at,
but a tab and a newline."""


def shown(text: str) -> str:
    """Text from a job, a native file or a cloud as omnidist's own lines print it (errors, notes,
    reports, states): secrets masked by their shape, and every control character written as an
    escape, so that a value cannot move the cursor, clear the screen or fake a line of its own."""
    return _CONTROL.sub(lambda m: ascii(m[0])[1:-1], mask_shapes(text))


class Group(click.Group):
    """A command group that turns omnidist errors into messages and exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OmnidistError as exc:
            if ctx.meta.get("omnidist.debug"):
                raise
            click.echo(f"error: {shown(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:  # a bug in omnidist or a plugin: say so briefly, never a traceback
            if ctx.meta.get("omnidist.debug"):
                raise
            click.echo(f"internal error: {type(exc).__name__}: {shown(str(exc))} (rerun with --debug for "
                       "the traceback and report it)", err=True)
            ctx.exit(1)


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
FRAMEWORKS = click.Choice(["pytorch", "tensorflow", "horovod", "deepspeed", "custom", "jax"])

backend_option = click.option("--backend", "-b", help="Target backend (overrides the profile's).")
profile_option = click.option("--profile", "-p", help="Profile from omnidist.toml / config.toml.")


def table(rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    """Rows as aligned plain-text columns under a header and a rule."""
    rows = [tuple(shown(str(c)) for c in r) for r in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(tuple("-" * w for w in widths)), *map(line, rows)])
