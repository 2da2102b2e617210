"""The errors the top of mantispy (the CLI, build, predictor packaging) shares, and its exit statuses.

Exit statuses: 0 success, 1 the program or the build failed (:class:`FailureError`, and an internal
error), 2 bad usage or bad input (:class:`UserError`, and click's own usage errors). Kept apart so that
the modules raising these errors and the ones catching them import one small module instead of each other.
"""

from __future__ import annotations

import click

EXIT_FAILED = 1
"""The program or the build failed (or mantispy itself did)."""
EXIT_BAD_INPUT = 2
"""Bad usage or bad input: a file, field or option the message names."""
DEBUG_ENV = "MANTISPY_DEBUG"
"""Set to 1 for tracebacks (as ``mantispy --debug``)."""


class UserError(click.ClickException):
    """Bad usage or bad input: one line for the user naming the file, field and fix; exit status 2."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file=None) -> None:  # noqa: D102 - click API
        click.echo(f"mantispy: error: {self.format_message()}", err=True)


class FailureError(UserError):
    """The program or the build failed: one line saying what failed and what to do; exit status 1."""

    exit_code = EXIT_FAILED


class BuildError(Exception):
    """The build cannot go on; the message names the file or stage and what to do."""
