"""The fleet's commands: ``flume fleet worker``, ``server``, ``demo``, and a person's commands.

A person's command for a fleet place (``flume fleet tell PLACE ...``) is carried to the host that
carries the place, and run there.

``flume launch --fleet`` and ``flume status --fleet`` call :func:`launch` and :func:`status`
here. Every command loads Temporal's SDK (the ``fleet`` extra) only when it runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from flume.cli.base import app, fail
from flume.cli.usage import Command
from flume.core.errors import UsageError
from flume.fleet.routed import ROUTED

fleet_app = typer.Typer(
    help="Places spread over hosts, carried by Temporal.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(fleet_app, name="fleet")

CONFIG_HELP = "The host's config file (default: $XDG_CONFIG_HOME/flume/config.toml)."


def _fleet(config: Path | None = None, **given: Any) -> Any:  # noqa: ANN401 (a Fleet)
    """The host's ``[fleet]``, the command line's settings laid over it; exit 2 when malformed."""
    from flume.fleet import config as fleet_config

    try:
        return fleet_config.overridden(fleet_config.load(config), **given)
    except UsageError as error:
        fail(error)


def _sdk() -> None:
    """Exit 2, saying how to install it, when Temporal's SDK is not installed."""
    import importlib.util

    if importlib.util.find_spec("temporalio") is None:
        fail(
            UsageError.one(
                "fleet",
                "the fleet needs Temporal's Python SDK, which is not installed",
                "install flume's fleet extra: pip install 'flume[fleet]'",
            )
        )


def _leave(status: int = 0) -> NoReturn:
    """Exit at once, output flushed, once a command that talked to Temporal is done.

    Temporal's SDK runs its core on threads of its own, which may still call into Python while
    the interpreter finalizes, and crash it (an abort, after the command did its work): nothing
    is left to finalize, so the process ends here.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _refuse(error: UsageError) -> NoReturn:
    """:func:`fail`, for a command that may have talked to Temporal: then :func:`_leave`."""
    for problem in error.problems:
        typer.echo(f"flume: {problem.render()}", err=True)
    _leave(error.exit_status)


def _host_name(fleet: Any) -> str:  # noqa: ANN401 (a Fleet)
    from flume.fleet.config import host_name

    return host_name(fleet)


def launch(asked: Any, *, relaunch: bool | None, as_json: bool) -> None:  # noqa: ANN401
    """``flume launch --fleet``: checked here, then left to the fleet; prints the place."""
    import asyncio

    from flume.fleet import handover

    fleet = _fleet()
    handed = None
    try:
        if asked.kind_file is None:
            asked = asked.evolve(
                brief=asked.brief if isinstance(asked.brief, str) else asked.brief()
            )
            # The host's worker has Temporal loaded and connected: it launches at once.
            handed = handover.hand_over(asked.words(), relaunch)
    except UsageError as error:
        fail(error)
    if handed is None:
        _sdk()
        from flume.fleet import client

        try:
            launched = asyncio.run(
                client.launch(asked, fleet, host=_host_name(fleet), relaunch=relaunch)
            )
        except UsageError as error:
            _refuse(error)
        handed = launched.as_dict()
    made = _Made(handed)
    if as_json:
        import json

        typer.echo(json.dumps(handed, ensure_ascii=False, indent=2))
        _leave()
    typer.echo(made.place)
    typer.echo(
        f"flume: {made.place} launched in the fleet at {fleet.address}; a host with a free slot "
        f"carries it from {made.base}: flume status --fleet",
        err=True,
    )
    _leave()


class _Made:
    """A fleet launch's answer (``flume launch --fleet --json``'s), by its fields."""

    def __init__(self, said: dict[str, Any]) -> None:
        self.place = str(said["place"])
        self.base = str(said["base"])


#: The columns of ``flume status --fleet``.
_COLUMNS = ("PLACE", "STATE", "HOST", "TRY", "STAGE", "PHASE", "AGENT", "PUSHED", "WORDS")


def status(*, as_json: bool) -> None:
    """``flume status --fleet``: every fleet place, with its host and how it goes there."""
    import asyncio

    from flume.fleet import client

    _sdk()
    fleet = _fleet()
    try:
        rows = asyncio.run(client.standings(fleet))
    except UsageError as error:
        _refuse(error)
    if as_json:
        import json

        typer.echo(json.dumps({"format": 1, "places": rows}, ensure_ascii=False, indent=2))
        _leave()
    table = [list(_COLUMNS)]
    for row in rows:
        beat = row.get("beat") or {}
        words = row.get("words", "")
        if beat.get("paused"):
            words = beat["paused"]
        if beat.get("refused"):
            words = f"{words}; {beat['refused']}" if words else beat["refused"]
        for kept in row.get("kept", []):
            words = f"{words}; kept on {kept}" if words else f"kept on {kept}"
        pushed = beat.get("pushed") or row.get("pushed") or ""
        table.append(
            [
                str(row.get("place", "")),
                str(row.get("state", "")),
                str(row.get("host", "")) or "-",
                str(row.get("attempt", "")),
                str(beat.get("stage", "")) or "-",
                str(beat.get("phase", "")) or "-",
                str(beat.get("agent", "")) or "-",
                pushed[:12] or "-",
                words,
            ]
        )
    if len(table) == 1:
        typer.echo(f"no fleet places at {fleet.address} ({fleet.namespace})")
        _leave()
    widths = [max(len(line[column]) for line in table) for column in range(len(_COLUMNS) - 1)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        typer.echo("  ".join([*cells, line[-1]]).rstrip())
    _leave()


@fleet_app.command("worker", cls=Command)
def worker(  # noqa: PLR0913 (each option is one thing the host gives)
    *,
    repository: Annotated[
        Path,
        typer.Option(metavar="PATH", help="The host's clone (default: the current folder)."),
    ] = Path(),
    remote: Annotated[
        str, typer.Option(metavar="NAME", help="The clone's remote the fleet shares.")
    ] = "origin",
    config: Annotated[Path | None, typer.Option(metavar="FILE", help=CONFIG_HELP)] = None,
    slots: Annotated[
        int | None,
        typer.Option(
            metavar="N", help="At most N fleet places live here (default: [fleet] slots)."
        ),
    ] = None,
    host: Annotated[
        str | None, typer.Option(metavar="NAME", help="This host's name in the fleet.")
    ] = None,
    address: Annotated[
        str | None, typer.Option(metavar="HOST:PORT", help="The fleet's Temporal frontend.")
    ] = None,
) -> None:
    """Serve the fleet from this host, until ^C.

    Runs beside the host's supervisor. It takes fleet places of its clone's remote while it has
    a free slot, launches each here, pushes its branch as its head moves, and heartbeats it
    until it lands; a person's commands for them come here to run.
    """
    _sdk()
    from flume.fleet import worker as fleet_worker
    from flume.fleet.host import clone_of

    fleet = _fleet(config, slots=slots, host=host, address=address)
    try:
        clone = clone_of(repository.absolute(), remote)
        raise typer.Exit(fleet_worker.run(fleet, _host_name(fleet), clone))
    except UsageError as error:
        fail(error)


@fleet_app.command("server", cls=Command)
def server(
    *,
    folder: Annotated[
        Path, typer.Option(metavar="DIR", help="Where its database and log are kept.")
    ] = Path("temporal"),
    ui: Annotated[bool, typer.Option("--ui", help="Serve Temporal's Web UI too.")] = False,
) -> None:
    """Run Temporal's dev server here, until ^C.

    Its address goes in [fleet] address of each host's config. For a fleet of one machine only:
    real hosts share a Temporal of their own.
    """
    import signal
    import threading

    _sdk()
    from flume.fleet import server as dev

    try:
        running = dev.start(folder.absolute(), ui=ui)
    except UsageError as error:
        fail(error)
    typer.echo(f"address = {running.address}")
    if running.ui:
        typer.echo(f"ui = {running.ui}")
    typer.echo(f"flume: Temporal's dev server runs (pid {running.pid}); ^C stops it", err=True)
    stop = threading.Event()
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, lambda *_: stop.set())
    stop.wait()
    running.stop()


@fleet_app.command("demo", cls=Command)
def demo(
    *,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="Leave Temporal's Web UI up, and the folder, to look at."),
    ] = False,
) -> None:
    """Carry a fix and a change across three local hosts.

    A dev server, a bare remote, and three hosts, each its own state folder, clone, supervisor,
    tmux server and worker, all in a temporary folder; prints which host carried what, and exits
    0 once both landed on the remote's main. Nothing is left running (but the UI, with --keep).
    """
    _sdk()
    import flume.fleet.demo as fleet_demo

    raise typer.Exit(fleet_demo.run(keep=keep, say=typer.echo))


def _routed(command: str) -> None:
    """Register ``flume fleet <command> PLACE ...``: run on the host that carries PLACE."""

    def routed(
        context: typer.Context,
        place: Annotated[str, typer.Argument(metavar="PLACE", help="The fleet place.")],
    ) -> None:
        import asyncio

        _sdk()
        from flume.fleet import client
        from flume.fleet.records import Asked

        args = list(context.args)
        stdin = None
        if "-" in args and not sys.stdin.isatty():
            stdin = sys.stdin.read()
        fleet = _fleet()
        try:
            answer = asyncio.run(
                client.route(fleet, place, Asked(command=command, args=args, stdin=stdin))
            )
        except UsageError as error:
            _refuse(error)
        sys.stdout.write(answer.out)
        sys.stderr.write(answer.err)
        _leave(answer.status)

    routed.__doc__ = (
        f"flume {command}, on the host carrying PLACE.\n\n"
        f"Its arguments and options are flume {command}'s (flume {command} --help), but "
        "--repository, which is the host's clone."
    )
    fleet_app.command(
        command,
        cls=Command,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(routed)


for _command in ROUTED:
    _routed(_command)
