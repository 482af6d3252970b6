"""``flume herdr``: what flume's herdr plugin runs (herdr-plugin/herdr-plugin.toml).

``sidebar`` reports every place in flight to herdr's sidebar; ``action`` does what a plugin
action asks, on the place the invoking context means; ``pane`` is a plugin pane's program (a
popup that asks for words). Each talks to the herdr whose socket herdr gave it
(``$HERDR_SOCKET_PATH``) and does its work through flume's API, as the commands do.
"""

from __future__ import annotations

import contextlib
import enum
import signal
import sys
import threading
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from flume.cli.usage import Command, parse_seconds
from flume.core.choices import Panes
from flume.core.errors import UsageError

if TYPE_CHECKING:
    from flume.api import HerdrClient, HerdrContext, HerdrError, InFlight

herdr_app = typer.Typer(
    help="What flume's herdr plugin runs: sidebar reports, actions and popups.",
    short_help="What flume's herdr plugin runs.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class PluginAction(enum.Enum):
    """The plugin's actions (herdr-plugin.toml ``[[actions]]``)."""

    OPEN = "open"  #: focus the place's agent pane (a tmux-run agent opens in a new tab)
    TELL = "tell"  #: open the popup that asks what to tell the place's agent
    STOP = "stop"  #: end the place's agent; its stage waits for a retry
    RETRY = "retry"  #: run the place's stage again with a fresh agent
    PROCEED = "proceed"  #: give your word to a stage that waits on it
    LAUNCH = "launch"  #: open the popup that launches work from the focused repository
    PLACES = "places"  #: open the popup that lists the places in flight


class Popup(enum.Enum):
    """The plugin's panes (herdr-plugin.toml ``[[panes]]``)."""

    TELL = "tell"
    LAUNCH = "launch"
    PLACES = "places"


def _fail(error: UsageError | HerdrError) -> NoReturn:
    raise typer.Exit(_said(error))


def _said(error: UsageError | HerdrError) -> int:
    """Print what went wrong; the exit status it calls for."""
    from flume import api

    if isinstance(error, api.HerdrError):
        typer.echo(f"flume: herdr: {error.message}", err=True)
        return 1
    for problem in error.problems:
        typer.echo(f"flume: {problem.render()}", err=True)
    return error.exit_status


@herdr_app.command(cls=Command)
def sidebar(
    *,
    follow: Annotated[
        bool, typer.Option("--follow", help="Report again every few seconds, until herdr goes.")
    ] = False,
    every: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", help="Seconds between reports with --follow.", parser=parse_seconds
        ),
    ] = 3.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the reports as JSON lines; send none.")
    ] = False,
) -> None:
    """Show every place in flight in herdr's sidebar.

    Reported as pane and workspace tokens ($flume...) the plugin's sidebar shows.
    """
    from flume import api

    context = api.HerdrContext.from_environment()
    herdr = api.HerdrClient()
    try:
        api.seconds("every", every)
        if dry_run:
            import json

            for each in api.herdr_reports(herdr, context):
                typer.echo(json.dumps({"method": each.method, "params": each.params}))
            return
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stopping.set())
        problems = api.herdr_sidebar(
            herdr, context, every=every if follow else None, stopping=stopping
        )
    except (api.HerdrError, UsageError) as error:
        _fail(error)
    for problem in problems:
        typer.echo(f"flume: herdr refused a report: {problem}", err=True)
    if problems:
        raise typer.Exit(1)


def _meant(herdr: HerdrClient, context: HerdrContext) -> InFlight:
    from flume import api

    found = api.herdr_place_meant(herdr, context)
    if found is None:
        raise UsageError.one(
            "place",
            "the focused pane or workspace is in no single place in flight",
            "focus a place's agent pane or a folder inside its place, or use the places popup",
            exit_status=1,
        )
    return found


def _notify(herdr: HerdrClient, title: str, body: str) -> None:
    """Say it in herdr (a toast), and on stdout for the plugin's log."""
    from flume import api

    typer.echo(f"{title}: {body}")
    with contextlib.suppress(api.HerdrError):
        api.herdr_notify(herdr, title, body)


def _popup(herdr: HerdrClient, context: HerdrContext, popup: Popup) -> None:
    if context.plugin_id is None:
        raise UsageError.one(
            "action",
            f"the {popup.value} popup opens only when herdr runs this as its plugin",
            f"run flume herdr pane {popup.value} in a terminal inside herdr instead",
        )
    params = {
        "plugin_id": context.plugin_id,
        "entrypoint": popup.value,
        "placement": "popup",
        "focus": True,
    }
    herdr.call("plugin.pane.open", params)


@herdr_app.command(cls=Command)
def action(
    name: Annotated[
        PluginAction,
        typer.Argument(
            metavar="ACTION",
            help="What the plugin asks: open, tell, stop, retry, proceed, launch or places.",
        ),
    ],
) -> None:
    """Do a plugin action on the place herdr's invoking context means."""
    from flume import api

    context = api.HerdrContext.from_environment()
    herdr = api.HerdrClient()
    try:
        match name:
            case PluginAction.TELL | PluginAction.LAUNCH | PluginAction.PLACES:
                _popup(herdr, context, Popup(name.value))
            case PluginAction.OPEN:
                _open(herdr, _meant(herdr, context))
            case PluginAction.STOP | PluginAction.RETRY | PluginAction.PROCEED:
                meant = _meant(herdr, context)
                said = _command(name, meant)
                _notify(herdr, f"flume {name.value}", said)
                _refresh(herdr, context)
    except UsageError as error:
        with contextlib.suppress(api.HerdrError):
            _notify(herdr, f"flume {name.value}", error.problems[0].render())
        _fail(error)
    except api.HerdrError as error:
        _fail(error)


def _refresh(herdr: HerdrClient, context: HerdrContext) -> None:
    """Report the sidebar again after a command was done.

    What was asked is done: the refresh is a courtesy (``sidebar --follow`` reports again within
    seconds), and a herdr away for it must not make the command say it failed.
    """
    from flume import api

    with contextlib.suppress(api.HerdrError):
        api.herdr_sidebar(herdr, context)


def _command(name: PluginAction, meant: InFlight) -> str:
    from flume import api

    where = meant.repository
    match name:
        case PluginAction.STOP:
            return api.stop(meant.name, repository=where)
        case PluginAction.RETRY:
            return api.retry(meant.name, repository=where)
        case _:
            return api.proceed(meant.name, repository=where)


def _open(herdr: HerdrClient, meant: InFlight) -> None:
    """Focus the place's agent pane; an agent in flume's tmux opens in a new herdr tab."""
    agent = meant.place.agent
    if agent is None:
        raise UsageError.one(
            "place",
            f"{meant.name} has no live agent (stage {meant.view.stage}, {meant.view.phase.value})",
            f"see flume status {meant.name}",
            exit_status=1,
        )
    if meant.place.launch.agent.panes is Panes.HERDR:
        herdr.call("pane.focus", {"pane_id": agent.pane})
        return
    command = [sys.executable, "-P", "-m", "flume", "attach", meant.name]
    command += ["--repository", str(meant.repository)]
    node = {"type": "pane", "label": meant.name, "cwd": meant.place.path, "command": command}
    herdr.call("layout.apply", {"tab_label": meant.name, "focus": True, "root": node})


@herdr_app.command(cls=Command)
def pane(
    name: Annotated[
        Popup,
        typer.Argument(metavar="PANE", help="The plugin pane to run: tell, launch or places."),
    ],
) -> None:
    """Run a plugin pane: ask for what a command needs, then do it."""
    from flume import api

    context = api.HerdrContext.from_environment()
    herdr = api.HerdrClient()
    try:
        match name:
            case Popup.TELL:
                meant = _meant_or_chosen(herdr, context)
                words = _ask(f"Tell {meant.name} (one line, Enter sends): ")
                typer.echo(api.tell(meant.name, words, repository=meant.repository))
            case Popup.PLACES:
                meant = _chosen(api.in_flight())
                what = _ask("o open, t tell, s stop, r retry, p proceed: ").strip().lower()
                _do(herdr, meant, what)
            case Popup.LAUNCH:
                _launch(context)
        _refresh(herdr, context)
    except (UsageError, api.HerdrError) as error:
        status = _said(error)
    else:
        status = 0
    # herdr closes the popup when this ends: what was done, or refused, stays until read.
    typer.echo("Enter closes this.", nl=False)
    sys.stdin.readline()
    if status:
        raise typer.Exit(status)


def _ask(prompt: str) -> str:
    typer.echo(prompt, nl=False)
    line = sys.stdin.readline()
    if not line:
        raise UsageError.one("words", "nothing was typed", "type your words, then Enter")
    return line.rstrip("\n")


def _meant_or_chosen(herdr: HerdrClient, context: HerdrContext) -> InFlight:
    from flume import api

    found = api.in_flight()
    return api.herdr_place_meant(herdr, context, found) or _chosen(found)


def _chosen(found: list[InFlight]) -> InFlight:
    from flume import api

    if not found:
        raise UsageError.one("place", "no place is in flight", "launch work first", exit_status=1)
    for number, each in enumerate(found, start=1):
        typer.echo(f"{number:>3}  {api.herdr_row(each)}")
    picked = _ask("Which place (its number): ").strip()
    if not picked.isdigit() or not 1 <= int(picked) <= len(found):
        raise UsageError.one("place", f"{picked!r} is no number listed", "type one of them")
    return found[int(picked) - 1]


def _do(herdr: HerdrClient, meant: InFlight, what: str) -> None:
    from flume import api

    match what:
        case "o":
            _open(herdr, meant)
        case "t":
            words = _ask(f"Tell {meant.name}: ")
            typer.echo(api.tell(meant.name, words, repository=meant.repository))
        case "s" | "r" | "p":
            chosen = {"s": PluginAction.STOP, "r": PluginAction.RETRY, "p": PluginAction.PROCEED}[
                what
            ]
            typer.echo(_command(chosen, meant))
        case _:
            raise UsageError.one("action", f"{what!r} is none of o t s r p", "type one of them")


def _launch(context: HerdrContext) -> None:
    """Launch work from the focused workspace's repository; its agents run in herdr."""
    from flume import api

    repository = api.herdr_repository_meant(context)
    if repository is None:
        raise UsageError.one(
            "repository",
            "the focused workspace stands in no git repository",
            "focus a workspace or pane whose folder is in the repository",
        )
    typer.echo(f"Launch work in {repository}")
    kind = _ask("Kind (fix, change, question or declared) [fix]: ").strip() or "fix"
    name = _ask("Name (letters, digits, . _ -): ").strip()
    brief = _ask("Brief (one line): ")
    agent = _ask("Agent (claude, codex) [claude]: ").strip() or "claude"
    made = api.launch(
        repository=repository, kind=kind, name=name, brief=brief, agent=agent, panes="herdr"
    )
    typer.echo(f"{made.place}: {made.path} on {made.branch} from {made.base}")
