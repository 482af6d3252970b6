"""The one ``flume`` typer app, and what its commands share: failing, stdin's words, help."""

from __future__ import annotations

import os
import sys
from typing import Annotated, NoReturn

import typer

# Every other import is made inside the command that uses it: a command answers at once only if
# it loads no more than it needs (bench/cli.py; tests/integration/test_cli_imports.py).
from flume import __version__
from flume.core.errors import UsageError

app = typer.Typer(
    name="flume",
    help="Carry work for AI coding agents from launch to landing.",
    no_args_is_help=True,
    # Plain help, as click writes it: no markup to eat a [kind] written in it, and no rich at
    # start (rich's help formatting costs a command more than its work). Shell completion:
    # flume --install-completion (docs/commands.md).
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


PLACE_HELP = "The place, <kind>--<name>."


REPOSITORY_HELP = "The repository, when the name is in several."
STEP_HELP = (
    "Only at this step: its name or key as flume status shows it (review, "
    "review-loop@2/review); a lane's (slice-a) goes to that lane."
)


def fail(error: UsageError) -> NoReturn:
    """Say what is wrong and how to mend it, on stderr, and exit with the error's status."""
    for problem in error.problems:
        typer.echo(f"flume: {problem.render()}", err=True)
    raise typer.Exit(error.exit_status)


@app.callback(invoke_without_command=True)
def _root(
    *,
    version: Annotated[bool, typer.Option("--version", help="Print flume's version.")] = False,
) -> None:
    if version:
        typer.echo(f"flume {__version__}")
        raise typer.Exit


def given_words(text: str, field: str) -> str:
    """``text`` as given, or stdin read as UTF-8 when it is ``-``."""
    if text != "-":
        return text
    from flume import api

    if sys.stdin.isatty():
        raise UsageError.one(field, f"the {field} is '-' and stdin is a terminal", "pipe it in")
    return api.decoded(field, sys.stdin.buffer.read())


def reader_gone() -> None:
    """Whoever read the output went away (``| head``): nothing more to say, nor to flush at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
