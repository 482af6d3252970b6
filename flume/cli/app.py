"""The ``flume`` command: typer commands that parse arguments, call the shell and render."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from flume import __version__
from flume.cli import render
from flume.core.errors import UsageError
from flume.core.ids import Instant
from flume.core.launch import AgentName, AgentSettings
from flume.core.observations import DropAsked
from flume.core.settings import Settings
from flume.core.status import status as core_status
from flume.core.step import trace
from flume.shell import client, places, scenario, supervisor, tidying
from flume.shell import launch as shell_launch

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
    # R11: with no supervisor following the places, what an agent does now cannot be read.
    supervised = client.request("ping", timeout=1.0) is not None
    for found_in in repositories:
        for found in places.places_of(found_in, Settings()):
            if found.place is None:
                unreadable.append((str(found.journal), found.problem or "unreadable"))
                continue
            if found.torn:
                typer.echo(
                    f"flume: warning: {found.journal} ends in a line a crash cut short; "
                    "it was left out",
                    err=True,
                )
            view = core_status(found.place, agent_known=supervised)
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


def _brief(brief: str | None, brief_file: Path | None) -> str:
    """The brief from --brief, --brief-file or stdin; exactly one of them."""
    if brief is not None and brief_file is not None:
        _fail(UsageError.one("brief", "both --brief and --brief-file are given", "give one"))
    if brief is not None:
        return brief
    if brief_file is not None:
        try:
            return brief_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            _fail(
                UsageError.one(
                    "brief",
                    f"cannot read the brief file {brief_file}: {error}",
                    "name a readable UTF-8 text file",
                ),
            )
    if sys.stdin.isatty():
        _fail(
            UsageError.one(
                "brief",
                "no brief is given",
                "give --brief TEXT, --brief-file FILE, or pipe the brief on stdin",
            ),
        )
    try:
        return sys.stdin.read()
    except UnicodeDecodeError as error:
        _fail(
            UsageError.one(
                "brief",
                f"the brief on stdin is not UTF-8 text ({error.reason} at byte {error.start})",
                "give the brief as UTF-8 text",
            ),
        )


@app.command()
def launch(  # noqa: PLR0913 (each option is one thing the caller names)
    *,
    kind: Annotated[str, typer.Option(help="fix, change, question, or a declared kind.")],
    name: Annotated[str, typer.Option(help="The work's name: letters, digits, . _ -")],
    repository: Annotated[
        Path, typer.Option(help="The repository (default: the current folder).")
    ] = Path(),
    brief: Annotated[str | None, typer.Option(help="What the work is.")] = None,
    brief_file: Annotated[Path | None, typer.Option(help="Read the brief from this file.")] = None,
    base: Annotated[
        str | None, typer.Option(help="The base branch (default: the shared branch).")
    ] = None,
    mark: Annotated[str | None, typer.Option(help="A mark to find the place by.")] = None,
    wait: Annotated[
        list[str] | None,
        typer.Option(help="A stage that waits on your word (flume proceed); repeatable."),
    ] = None,
    agent: Annotated[AgentName, typer.Option(help="The agent each stage starts.")] = (
        AgentName.CLAUDE
    ),
    model: Annotated[str | None, typer.Option(help="The agent's model.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the place as JSON.")] = False,
) -> None:
    """Launch work: check it, journal it, and leave the supervisor to make and follow the place.

    Prints the place's id (<kind>--<name>). Bad input makes nothing and exits with status 2.
    """
    request = shell_launch.Request(
        repository=repository.absolute(),
        kind=kind,
        name=name,
        brief=_brief(brief, brief_file),
        base=base,
        mark=mark,
        waits=tuple(wait or ()),
        agent=AgentSettings(agent=agent, model=model),
    )
    try:
        made = shell_launch.launch(request, Settings(), time.time)
    except UsageError as error:
        _fail(error)
    client.ensure()
    if as_json:
        typer.echo(render.launched_json(made))
        return
    typer.echo(made.place)
    typer.echo(
        f"flume: {made.path} on {made.branch} from {made.base}; "
        f"follow it with: flume status {made.place}",
        err=True,
    )


@app.command()
def drop(
    place: Annotated[str, typer.Argument(metavar="PLACE", help="The place, <kind>--<name>.")],
    *,
    repository: Annotated[
        Path | None, typer.Option(help="The repository, when the name is in several.")
    ] = None,
) -> None:
    """Abandon the work: its agent ends; tidy removes its place and keeps its branch (R9, R10)."""
    try:
        found = places.find(place, repository, Settings())
        places.command(found.journal, DropAsked(at=Instant(time.time())), Settings())
    except UsageError as error:
        _fail(error)
    client.ensure()
    typer.echo(f"{place} dropped: the supervisor removes its place if clean, and keeps its branch")


@app.command()
def tidy(
    *,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what tidy would do; change nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Remove places holding uncommitted or untracked changes."),
    ] = False,
    repository: Annotated[
        Path | None, typer.Option(help="Only this repository (default: every one flume knows).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the supervisor.")] = 120.0,
) -> None:
    """Remove what landed or was dropped; keep, and name, everything else (R10)."""
    settings = Settings()
    try:
        repositories = [places.repository_of(repository)] if repository else places.remembered()
    except UsageError as error:
        _fail(error)
    found = [
        each
        for where in repositories
        for each in places.places_of(where, settings)
        if each.place is not None
    ]
    if dry_run:
        outcomes = tidying.plans(found, force=force)
    else:
        outcomes = tidying.tidy(found, force=force, settings=settings, timeout=timeout)
        for where in repositories:
            tidying.sweep_staging(where, time.time())
    if as_json:
        typer.echo(render.tidy_json(outcomes, dry_run=dry_run))
        return
    for line in render.tidy_text(outcomes, dry_run=dry_run):
        typer.echo(line)


daemon = typer.Typer(help="The supervisor that follows every place on this host.")
app.add_typer(daemon, name="daemon")


@daemon.command("status")
def daemon_status(
    *, as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
) -> None:
    """Whether the supervisor runs, and what it follows."""
    reply = client.request("status")
    if as_json:
        typer.echo(json.dumps({"running": reply is not None, **(reply or {})}, indent=2))
        return
    if reply is None:
        typer.echo("supervisor: not running (any command that needs it starts it)")
        return
    lives = ", ".join(f"{count} {life}" for life, count in sorted(reply["lives"].items()))
    typer.echo(
        f"supervisor: running, pid {reply['pid']}, {reply['places']} places"
        f"{' (' + lives + ')' if lives else ''} in {reply['repositories']} repositories; "
        f"{reply['ticks']} ticks, the last ran {reply['last_tick_subprocesses']} git processes"
    )
    for journal_path, problem in reply.get("unreadable", {}).items():
        typer.echo(f"not followed: {journal_path}: {problem}")


@daemon.command("stop")
def daemon_stop() -> None:
    """Stop the supervisor once its running actions finish; places wait in their journals."""
    reply = client.request("stop")
    if reply is None:
        typer.echo("supervisor: not running")
        return
    pid = int(reply["pid"])
    # It stops listening at once, and exits once its running actions are done.
    deadline = time.monotonic() + 600.0
    while client.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if client.alive(pid):
        typer.echo(f"supervisor {pid}: still finishing its actions after 600 s", err=True)
        raise typer.Exit(1)
    typer.echo(f"supervisor {pid}: stopped")


@daemon.command("run", hidden=True)
def daemon_run(
    *,
    asked_at: Annotated[
        float | None, typer.Option(help="When a command asked for this supervisor.")
    ] = None,
) -> None:
    """Run the supervisor in this process (flume starts it detached by itself)."""
    raise typer.Exit(supervisor.serve(Settings(), asked_at=asked_at))


def main() -> NoReturn:
    """The console script."""
    app()
    sys.exit(0)
