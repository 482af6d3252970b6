"""Tools around the work: the rules simulated, an agent's files inspected, the demo.

Each registers on the one app (:mod:`flume.cli.base`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# Every other import is made inside the command that uses it: a command answers at once only if
# it loads no more than it needs (bench/cli.py; tests/integration/test_cli_imports.py).
from flume.cli.base import app, fail
from flume.cli.inspect import inspect_app
from flume.cli.usage import Command, parse_seconds
from flume.core.errors import UsageError


def _list_scenarios(wanted: bool) -> None:
    """``flume simulate --list``: each shipped scenario's name and what it shows, then exit."""
    if not wanted:
        return
    from flume import api

    folder, named = api.scenarios()
    for name, about in named:
        typer.echo(f"{name:<20} {about}")
    typer.echo(f"\n(in {folder}; name one, e.g. flume simulate fix-clean)")
    raise typer.Exit


@app.command(cls=Command)
def simulate(
    given: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SCENARIO",
            help="A scenario file, or the name of one flume ships (see --list).",
        ),
    ] = None,
    *,
    journals: Annotated[
        list[Path] | None,
        typer.Option(
            "--journal",
            metavar="JOURNAL",
            help="A place's journal to run through the rules again (its Report lines are the "
            "events flume events shows); may be given more than once.",
        ),
    ] = None,
    kind_file: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="A changed definition (a kind file, as flume launch --kind-file reads it): "
            "each --journal is folded under its own kind and this one, and the first decision "
            "that differs is named, or 'same' said.",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the traces as JSON lines."),
    ] = False,
    _listing: Annotated[
        bool,
        typer.Option(
            "--list",
            help="Name the scenarios flume ships, and exit.",
            is_eager=True,
            callback=_list_scenarios,
        ),
    ] = False,
) -> None:
    """Run flume's rules over scenarios, with no I/O.

    Prints each step of each scenario: what was seen, the place's state, the actions decided.
    Several scenarios run one after another, each its own trace. With --json, one stream: each
    trace's steps, then its summary, which names its scenario. A malformed scenario prints
    nothing and exits with status 2. --journal runs a place's journal instead (after the
    scenarios, if any are named), as the supervisor and flume events read it. With --kind-file,
    each journal is folded twice, under the definition its launch froze and under the file's,
    and the first observation decided differently is named, or "same" said.
    """
    from flume import api
    from flume.cli import render

    if kind_file is not None:
        _compare_versions(given, journals, kind_file, as_json=as_json)
        return
    if not given and not journals:
        fail(
            UsageError.one(
                "simulate",
                "names no scenario and no journal",
                "name a scenario (flume simulate --list names them) or --journal JOURNAL",
            )
        )
    try:
        simulated = api.simulate(given or [])
        simulated.extend(api.simulate_journal(path) for path in journals or [])
    except UsageError as error:
        fail(error)
    for number, one in enumerate(simulated):
        rows = list(one.rows)
        if as_json:
            lines = render.trace_json(rows, scenario=one.path)
        else:
            head = [f"scenario: {one.path}"]
            if one.description:
                head.append(f"  {one.description}")
            lines = iter([*([""] if number else []), *head, "", *render.trace_text(rows)])
        for line in lines:
            typer.echo(line)


def _compare_versions(
    given: list[str] | None, journals: list[Path] | None, kind_file: Path, *, as_json: bool
) -> None:
    """``simulate --journal J --kind-file NEW``: each journal's decisions under NEW, compared."""
    from flume import api
    from flume.cli import render

    if given or not journals:
        fail(
            UsageError.one(
                "--kind-file",
                "compares a place's journal under a changed definition"
                + (", not a scenario" if given else ", and no --journal is given"),
                "give --journal JOURNAL (and no scenario) with --kind-file",
            )
        )
    try:
        compared = [api.simulate_versions(path, kind_file) for path in journals]
    except UsageError as error:
        fail(error)
    for number, versioned in enumerate(compared):
        if as_json:
            typer.echo(render.versions_json(versioned))
            continue
        if number:
            typer.echo("")
        for line in render.versions_text(versioned):
            typer.echo(line)


app.add_typer(inspect_app, name="inspect")


@app.command(cls=Command)
def demo(
    *,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="Keep the demo's folder (repository, state, transcripts)."),
    ] = False,
    seconds: Annotated[
        float,
        typer.Option(metavar="SECONDS", help="How long to let the work run.", parser=parse_seconds),
    ] = 300.0,
    monitor: Annotated[
        bool,
        typer.Option(
            "--monitor",
            help=(
                "Serve the run monitor of the demo too and print its URL; at a terminal the demo "
                "starts once that page is open, or on Enter (flume[monitor])."
            ),
        ),
    ] = False,
) -> None:
    """Carry a fix and a change to landing, on a sample repository.

    Everything lives in a temporary folder: the repository, flume's state and supervisor, its
    tmux server and the agents' HOME. The agents are flume's test agent, in real tmux panes. In
    a terminal the board of flume watch shows the work; piped, each event as flume events
    prints it. Exits 0 only when both landed and were tidied; however it ends (Ctrl-C, SIGTERM,
    a closed terminal), its supervisor is stopped and its folder removed.
    """
    # Imported here: only this command uses it.
    from flume.cli import demo_story

    status = demo_story.run(keep=keep, seconds=seconds, monitor=monitor)
    if status:
        raise typer.Exit(status)
