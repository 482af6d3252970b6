"""The ``flume`` command: typer commands that parse arguments, call the shell and render."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from flume import __version__
from flume.cli import render
from flume.core.errors import UsageError
from flume.core.settings import Settings
from flume.core.status import status as core_status
from flume.core.step import trace
from flume.shell import places, scenario

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


@app.command()
def status(
    place: Annotated[
        str | None,
        typer.Argument(metavar="[PLACE]", help="One place, as <kind>--<name>."),
    ] = None,
    *,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (docs/status.md).")] = False,
    mark: Annotated[str | None, typer.Option(help="Only places launched with this mark.")] = None,
    repository: Annotated[
        Path | None,
        typer.Option(help="Only this repository's places (default: every one flume knows)."),
    ] = None,
) -> None:
    """Show each place: kind, stage, agent, deliverable, submission, tasks (read from journals)."""
    try:
        repositories = [places.repository_of(repository)] if repository else places.remembered()
    except UsageError as error:
        _fail(error)
    views = []
    unreadable = []
    for found_in in repositories:
        for found in places.places_of(found_in, Settings()):
            if found.place is None:
                unreadable.append((str(found.journal), found.problem or "unreadable"))
                continue
            # No supervisor follows places yet: what an agent does now cannot be read.
            view = core_status(found.place, agent_known=False)
            if (mark is None or view.mark == mark) and (place is None or view.place == place):
                views.append(view)
    if place is not None and not views:
        _fail(
            UsageError.one(
                "place",
                f"no place {place} in {', '.join(map(str, repositories)) or 'any repository'}",
                "run flume status to list the places there are",
            ),
        )
    if as_json:
        typer.echo(render.status_json(views, unreadable))
        return
    for line in render.status_table(views, unreadable):
        typer.echo(line)


def main() -> NoReturn:
    """The console script."""
    app()
    sys.exit(0)
