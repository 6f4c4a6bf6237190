"""The handler that shows log records as the command's own lines (imports :mod:`logging`; loaded
by :mod:`omnidist.cli.messages` only once something logs or ``--debug`` is given)."""

from __future__ import annotations

import logging
import sys

import click

from omnidist.cli import style


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


def install(debug: bool) -> None:
    """Show log records and Python warnings as :func:`omnidist.cli.common.setup_logging` says,
    replacing the handler an earlier call installed."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Messages)]:
        root.removeHandler(handler)
    root.addHandler(_Messages(debug))
    if debug:
        root.setLevel(logging.DEBUG)
    logging.captureWarnings(True)  # warnings.warn goes to the "py.warnings" logger: shown with --debug
