"""The ``flume`` command: the one typer app, its commands registered by audience.

Each audience's commands are a module of their own, registering on the app of
:mod:`flume.cli.base`: a place's commands (:mod:`~flume.cli.place_commands`), an agent's
(:mod:`~flume.cli.agent_commands`), the host's (:mod:`~flume.cli.host_commands`) and the tools
(:mod:`~flume.cli.tool_commands`). Each command parses its words, calls :mod:`flume.api` and
renders what it returns.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

from flume.cli import agent_commands, host_commands, place_commands, tool_commands
from flume.cli.base import app

#: The modules whose commands the app holds, each registered as it is imported.
AUDIENCES = (place_commands, agent_commands, host_commands, tool_commands)

#: The order ``flume --help`` names the commands in, then the groups.
ORDER = (
    "simulate", "status", "launch", "drop", "tell", "stop", "retry", "proceed",
    "approve", "resume", "raise", "needs",
    "submit", "prompt", "tidy", "attach", "demo", "mcp", "events", "watch",
    "inspect", "herdr", "daemon",
)  # fmt: skip


def _named(info: typer.models.CommandInfo) -> str:
    assert info.callback is not None  # noqa: S101 (every command has its function)
    return info.name or typer.main.get_command_name(info.callback.__name__)


app.registered_commands.sort(key=lambda info: ORDER.index(_named(info)))
app.registered_groups.sort(key=lambda info: ORDER.index(info.name or ""))


def main() -> NoReturn:
    """The console script."""
    narrowed(sys.argv[1:])()
    sys.exit(0)


def narrowed(args: list[str]) -> typer.Typer:
    """The app holding only the command ``args`` name, or the whole app when they name none.

    typer builds every command it holds, reading each one's signature, before it runs one: a
    command pays for all the others. The narrowed app has the same settings and callback, so
    the command parses, runs and shows its help exactly as in the whole app.
    """
    wanted = args[0] if args else None
    commands = [
        info
        for info in app.registered_commands
        if info.callback is not None
        and (info.name or typer.main.get_command_name(info.callback.__name__)) == wanted
    ]
    groups = [info for info in app.registered_groups if info.name == wanted]
    if len(commands) + len(groups) != 1:
        return app
    one = typer.Typer()
    one.__dict__.update(vars(app))
    one.registered_commands = commands
    one.registered_groups = groups
    return one
