"""The host's commands: the supervisor (``flume daemon``), the monitor, the MCP server, herdr's.

Each registers on the one app (:mod:`flume.cli.base`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# Every other import is made inside the command that uses it: a command answers at once only if
# it loads no more than it needs (bench/cli.py; tests/integration/test_cli_imports.py).
from flume.cli.base import app, fail
from flume.cli.herdr import herdr_app
from flume.cli.usage import Command
from flume.core.errors import UsageError


@app.command("mcp", cls=Command)
def mcp_server() -> None:
    """Serve flume's commands as MCP tools on stdin and stdout.

    Claude Code's flume plugin starts it; launch runs in the repository of this folder.
    """
    from flume.cli import mcp

    mcp.serve()


@app.command("monitor", cls=Command)
def monitor(
    *,
    port: Annotated[
        int,
        typer.Option(metavar="N", help="The port on 127.0.0.1 (default: one the system chooses)."),
    ] = 0,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in your browser too.")
    ] = False,
    repository: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH", help="Only this repository's places (default: every one flume knows)."
        ),
    ] = None,
) -> None:
    """Serve a live web page of every place and run on this host.

    Each pause is shown with one control per way out. On 127.0.0.1 only; open the URL it
    prints, which carries a token no other page knows. Every control asks flume as the CLI
    does. Ctrl-C ends it. Needs flume's monitor extra.
    """
    try:
        from flume.web import serve
    except ImportError as error:
        fail(
            UsageError.one(
                "monitor",
                f"the monitor's packages are not installed ({error.name} is missing)",
                "install them with pip install 'flume[monitor]'",
                exit_status=1,
            )
        )

    def say(url: str) -> None:
        typer.echo(f"flume monitor: open {url}")
        typer.echo("flume monitor: Ctrl-C ends it", err=True)

    try:
        serve.serve(port=port, repository=repository, open_browser=open_browser, say=say)
    except UsageError as error:
        fail(error)
    except KeyboardInterrupt:
        return


app.add_typer(herdr_app, name="herdr")


daemon = typer.Typer(
    help="The supervisor that follows every place on this host.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


app.add_typer(daemon, name="daemon")


@daemon.command("status", cls=Command)
def daemon_status(
    *, as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False
) -> None:
    """Whether the supervisor runs, and what it follows.

    One that holds the host's lock but does not answer (stopped by SIGSTOP, a debugger) runs:
    it is named, with the way out, and the status is 1.
    """
    import json

    from flume import api

    found = api.daemon_status()
    holder, paused, reply, said = found.pid, found.paused, found.reply, found.problem
    if said is not None:
        if as_json:
            shown = {"running": True, "answering": False, "pid": holder, "paused": paused}
            typer.echo(json.dumps({**shown, "problem": said.what, "mend": said.mend}, indent=2))
        else:
            typer.echo(f"supervisor: running (pid {holder}) but not answering: {said.what}")
            typer.echo(f"  {said.mend}")
        raise typer.Exit(1)
    if as_json:
        shown = {"running": reply is not None, "answering": reply is not None}
        typer.echo(json.dumps({**shown, **(reply.answer() if reply else {})}, indent=2))
        return
    if reply is None:
        typer.echo("supervisor: not running (any command that needs it starts it)")
        return
    lives = ", ".join(f"{count} {life}" for life, count in sorted(reply.lives.items()))
    typer.echo(
        f"supervisor: running, pid {reply.pid}, {reply.places} places"
        f"{' (' + lives + ')' if lives else ''} in {reply.repositories} repositories; "
        f"{reply.ticks} ticks, the last ran {reply.last_tick_subprocesses} git and tmux "
        f"processes and sent herdr {reply.last_tick_herdr_requests} requests"
    )
    typer.echo(f"changes found by: {reply.watching}")
    if reply.other_hosts_places:
        typer.echo(
            f"not followed: {reply.other_hosts_places} places other hosts launched (their "
            "supervisors carry them)"
        )
    for journal_path, why in reply.unreadable.items():
        typer.echo(f"not followed: {journal_path}: {why}")
    for fault in reply.unwritable.values():
        typer.echo(f"cannot write: {fault}; free space or make its folder writable")


@daemon.command("start", cls=Command)
def daemon_start() -> None:
    """Start the supervisor if none runs, and wait until it answers.

    Any command that needs the supervisor starts it too; this one does nothing else.
    """
    from flume import api

    try:
        reply = api.daemon_start()
    except UsageError as error:
        fail(error)
    if reply is None:
        typer.echo(
            f"flume: supervisor: started, but not answering after "
            f"{api.DAEMON_START_SECONDS:.0f} s; see its log {api.daemon_log()}",
            err=True,
        )
        raise typer.Exit(1)
    typer.echo(f"supervisor: running, pid {reply.pid}")


@daemon.command("install", cls=Command)
def daemon_install(
    *,
    show: Annotated[
        bool, typer.Option("--print", help="Print the unit; write and enable nothing.")
    ] = False,
) -> None:
    """Have systemd keep the supervisor running, restarted when it fails.

    Writes ~/.config/systemd/user/flume.service (Restart=on-failure) and enables and starts it
    with systemctl --user. Refused, exit 1, where systemd does not run; --print shows the unit.
    """
    from flume import api

    if show:
        typer.echo(api.daemon_unit(), nl=False)
        return
    try:
        path = api.daemon_install()
    except UsageError as error:
        fail(error)
    typer.echo(f"supervisor: systemd keeps it running ({path}, Restart=on-failure)")


@daemon.command("stop", cls=Command)
def daemon_stop() -> None:
    """Stop the supervisor once its actions finish.

    The places wait in their journals; any command that needs the supervisor starts it again.
    """
    from flume import api

    try:
        stopped = api.daemon_stop(timeout=600.0)
    except UsageError as error:
        fail(error)
    if stopped is None:
        typer.echo("supervisor: not running")
        return
    pid, exited = stopped
    if not exited:
        typer.echo(f"supervisor {pid}: still finishing its actions after 600 s", err=True)
        raise typer.Exit(1)
    typer.echo(f"supervisor {pid}: stopped")


@daemon.command("run", hidden=True, cls=Command)
def daemon_run(
    *,
    asked_after: Annotated[
        int | None,
        typer.Option(
            metavar="STOPS", help="How many daemon stops were counted when it was asked for."
        ),
    ] = None,
) -> None:
    """Run the supervisor in this process (flume starts it detached by itself)."""
    from flume import api

    raise typer.Exit(api.daemon_run(asked_after=asked_after))
