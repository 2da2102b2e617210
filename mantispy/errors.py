"""The errors the top of mantispy (the CLI, build, predictor packaging) shares.

Kept apart so that the modules raising them and the ones catching them import one small module instead
of each other.
"""

from __future__ import annotations

import click


class UserError(click.ClickException):
    """A one-line error for the user; exit status 1."""

    def show(self, file=None) -> None:  # noqa: D102 - click API
        click.echo(f"mantispy: error: {self.format_message()}", err=True)


class BuildError(Exception):
    """The build cannot go on; the message names the file or stage and what to do."""
