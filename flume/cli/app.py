"""The ``flume`` command: the one typer app, its commands registered by audience.

Each audience's commands are a module of their own, registering on the app of
:mod:`flume.cli.base`: a place's commands (:mod:`~flume.cli.place_commands`), an agent's
(:mod:`~flume.cli.agent_commands`), the host's (:mod:`~flume.cli.host_commands`) and the tools
(:mod:`~flume.cli.tool_commands`). Each command parses its words, calls :mod:`flume.api` and
renders what it returns.
"""

from __future__ import annotations

import sys
import typing
from typing import NoReturn

import typer

from flume.cli import (
    agent_commands,
    fleet_commands,
    host_commands,
    place_commands,
    tool_commands,
)
from flume.cli.base import app

#: The modules whose commands the app holds, each registered as it is imported.
AUDIENCES = (place_commands, agent_commands, host_commands, tool_commands, fleet_commands)

#: The order ``flume --help`` names the commands in, then the groups.
ORDER = (
    "simulate", "status", "launch", "drop", "tell", "stop", "retry", "proceed",
    "approve", "pass", "resume", "raise", "resolve", "answer", "needs", "progress", "ask", "spawn",
    "notify", "compose",
    "submit", "prompt", "tidy", "attach", "demo", "mcp", "events", "transcript", "watch", "monitor",
    "inspect", "herdr", "daemon", "fleet",
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
        return resolved(app)
    one = typer.Typer()
    one.__dict__.update(vars(app))
    one.registered_commands = commands
    one.registered_groups = groups
    return resolved(one)


def resolved(typer_app: typer.Typer) -> typer.Typer:
    """``typer_app``, each of its functions' annotations evaluated once, to what typer reads.

    flume's modules write annotations as strings (``from __future__ import annotations``), and
    typer evaluates every string four times as it builds a command (it reads the parameters
    twice, each time through the signature and through the type hints): ``flume --help`` spent
    ten milliseconds compiling them (bench/cli.py). Evaluated here once, to the same values
    (typing's type hints, ``Annotated`` kept), they are read as they are. Only the functions of
    the commands about to be built are evaluated.
    """
    infos = [typer_app.registered_callback, *typer_app.registered_commands]
    for info in infos:
        if info is not None and info.callback is not None:
            function = info.callback
            function.__annotations__ = typing.get_type_hints(function, include_extras=True)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            resolved(group.typer_instance)
    return typer_app
