"""The ``flume`` command: typer commands that parse arguments, call the shell and render."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from flume import __version__
from flume.cli import render
from flume.core.errors import UsageError
from flume.core.step import trace
from flume.shell import scenario

app = typer.Typer(
    name="flume",
    help="Carry work for AI coding agents from launch to landing.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail(error: UsageError) -> NoReturn:
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


@app.command()
def simulate(
    scenario_file: Annotated[
        Path,
        typer.Argument(metavar="SCENARIO", help="A scenario file (see examples/scenarios/)."),
    ],
    *,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the trace as JSON lines."),
    ] = False,
) -> None:
    """Run flume's rules over a scenario with no I/O, and print each step's state and actions."""
    try:
        loaded = scenario.load(scenario_file)
    except UsageError as error:
        _fail(error)
    rows = list(trace(loaded.settings, loaded.observations))
    if as_json:
        lines = render.trace_json(rows)
    else:
        head = [f"scenario: {loaded.path}"]
        if loaded.description:
            head.append(f"  {loaded.description}")
        lines = iter([*head, "", *render.trace_text(rows)])
    for line in lines:
        typer.echo(line)


def main() -> NoReturn:
    """The console script."""
    app()
    sys.exit(0)
