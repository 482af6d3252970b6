"""The ``flume`` command: typer commands that parse, call :mod:`flume.api` or the shell, render."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

# Every other import is made inside the command that uses it: a command answers at once only if
# it loads no more than it needs (bench/cli.py; tests/integration/test_cli_imports.py).
from flume import __version__
from flume.cli.herdr import herdr_app
from flume.cli.inspect import inspect_app
from flume.cli.usage import Command, parse_seconds
from flume.core.choices import AgentName, Panes
from flume.core.errors import Problem, UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from flume.core.ids import Instant
    from flume.shell.supervisor.handover import LaunchOutcome
    from flume.shell.supervisor.protocol import SurveyAnswer

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


_PLACE_HELP = "The place, <kind>--<name>."
_REPOSITORY_HELP = "The repository, when the name is in several."


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


def _list_scenarios(wanted: bool) -> None:
    """``flume simulate --list``: each shipped scenario's name and what it shows, then exit."""
    if not wanted:
        return
    from flume.shell.declared import scenario

    for path in scenario.shipped():
        try:
            about = scenario.load(path).description
        except UsageError as error:
            about = error.problems[0].render()
        typer.echo(f"{path.stem:<20} {about}")
    typer.echo(f"\n(in {scenario.SHIPPED}; name one, e.g. flume simulate fix-clean)")
    raise typer.Exit


@app.command(cls=Command)
def simulate(
    given: Annotated[
        list[str],
        typer.Argument(
            metavar="SCENARIO",
            help="A scenario file, or the name of one flume ships (see --list).",
        ),
    ],
    *,
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
    nothing and exits with status 2.
    """
    from flume.cli import render
    from flume.core.step import trace
    from flume.shell.declared import scenario

    problems: list[Problem] = []
    loaded: list[scenario.Scenario] = []
    for each in given:
        try:
            loaded.append(scenario.load(scenario.find(each)))
        except UsageError as error:
            problems.extend(error.problems)
    if problems:
        _fail(UsageError(tuple(problems)))
    for number, one in enumerate(loaded):
        rows = list(trace(one.settings, one.observations))
        if as_json:
            lines = render.trace_json(rows, scenario=one.path)
        else:
            head = [f"scenario: {one.path}"]
            if one.description:
                head.append(f"  {one.description}")
            lines = iter([*([""] if number else []), *head, "", *render.trace_text(rows)])
        for line in lines:
            typer.echo(line)


@app.command(cls=Command)
def status(
    place: Annotated[
        str | None,
        typer.Argument(metavar="PLACE", help="One place, as <kind>--<name>."),
    ] = None,
    *,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (docs/status.md).")] = False,
    mark: Annotated[
        str | None, typer.Option(metavar="MARK", help="Only places launched with this mark.")
    ] = None,
    repository: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH", help="Only this repository's places (default: every one flume knows)."
        ),
    ] = None,
) -> None:
    """Show each place's stage, agent, deliverable and submission.

    Read from the places' journals; nothing is written or started.
    """
    from flume.cli import statusview

    try:
        found = _survey(place=place, repository=repository, mark=mark)
    except UsageError as error:
        _fail(error)
    for journal_path in found.torn:
        typer.echo(
            f"flume: warning: {journal_path} ends in a line a crash cut short; it was left out",
            err=True,
        )
    views = [
        view
        for view in found.places
        if (mark is None or view["mark"] == mark) and (place is None or view["place"] == place)
    ]
    if place is not None and not views:
        from flume import api

        _fail(api.no_such_place(place, [Path(each) for each in found.repositories]))
    if as_json:
        document = {
            "format": found.format,
            "places": views,
            "unreadable": [
                {"journal": each.journal, "problem": each.problem} for each in found.unreadable
            ],
        }
        typer.echo(statusview.status_json(document))
        return
    unreadable = [(each.journal, each.problem) for each in found.unreadable]
    for line in statusview.status_table(views, unreadable, width=_terminal_width()):
        typer.echo(line)


def _terminal_width() -> int | None:
    """The terminal's width; ``$COLUMNS`` when the output is no terminal; else None (unbounded).

    Into a file or a pipe each row stays one whole line, unless ``COLUMNS`` asks otherwise.
    """
    if sys.stdout.isatty():
        with contextlib.suppress(OSError, ValueError):
            return os.get_terminal_size(sys.stdout.fileno()).columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def _survey(place: str | None, repository: Path | None, mark: str | None) -> SurveyAnswer:
    """Every place's status (``status --json``'s data, with ``torn`` and ``repositories``).

    The running supervisor answers it from the places it follows, with their journals read to
    their ends; with none running, or for one repository, the journals are read here (R11: what
    an agent does now is then unknown). No repository registered: no places, nothing to read.
    """
    from flume.shell import host as registry
    from flume.shell.supervisor import client
    from flume.shell.supervisor.protocol import SurveyAnswer, Unreadable

    if repository is None:
        # A supervisor that cannot answer within this is taken as none: the journals are read.
        answer = client.survey(timeout=2.0)
        if answer is not None:
            return answer
        if not registry.remembered():
            return SurveyAnswer(
                format=registry.FORMAT, places=(), unreadable=(), torn=(), repositories=()
            )
    from flume import api
    from flume.shell.store.codec import FORMAT, codec

    found = api.survey(place=place, repository=repository, mark=mark)
    return SurveyAnswer(
        format=FORMAT,
        places=tuple(codec().unstructure(view) for view in found.places),
        unreadable=tuple(Unreadable(journal, problem) for journal, problem in found.unreadable),
        torn=found.torn,
        repositories=tuple(str(each) for each in found.repositories),
    )


def _brief(brief: str | None, brief_file: Path | None) -> str:
    """The brief from --brief, --brief-file or stdin; exactly one of them.

    ``-`` for either means stdin, as it does for ``tell``, ``retry --words`` and ``needs``.
    """
    if brief is not None and brief_file is not None:
        _fail(UsageError.one("brief", "both --brief and --brief-file are given", "give one"))
    if brief == "-" or brief_file == Path("-"):
        try:
            return _words("-", "brief")
        except UsageError as error:
            _fail(error)
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
                    "name a readable UTF-8 text file, or - for stdin",
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


@app.command(cls=Command)
def launch(  # noqa: PLR0913 (each option is one thing the caller names)
    *,
    kind: Annotated[
        str | None,
        typer.Option(
            metavar="KIND",
            help="fix, change, question, or a kind the repository declares (default: the kind "
            "file's).",
        ),
    ] = None,
    kind_file: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="A TOML file with a [kind] table: a kind this launch carries."
        ),
    ] = None,
    name: Annotated[
        str, typer.Option(metavar="NAME", help="The work's name: letters, digits, . _ -")
    ],
    repository: Annotated[
        Path,
        typer.Option(
            metavar="PATH",
            help="The repository (default: the current folder).",
            show_default=False,
        ),
    ] = Path(),
    brief: Annotated[
        str | None, typer.Option(metavar="TEXT", help="What the work is; - reads stdin.")
    ] = None,
    brief_file: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Read the brief from this file; - reads stdin."),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(metavar="BRANCH", help="The base branch (default: the shared branch)."),
    ] = None,
    mark: Annotated[
        str | None, typer.Option(metavar="MARK", help="A mark to find the place by.")
    ] = None,
    wait: Annotated[
        list[str] | None,
        typer.Option(
            metavar="STAGE", help="A stage that waits on your word (flume proceed); repeatable."
        ),
    ] = None,
    agent: Annotated[
        str,
        typer.Option(
            metavar="AGENT",
            help="The agent each stage starts: claude, codex or test.",
            autocompletion=lambda: [each.value for each in AgentName],
        ),
    ] = AgentName.CLAUDE.value,
    model: Annotated[str | None, typer.Option(metavar="MODEL", help="The agent's model.")] = None,
    panes: Annotated[
        str,
        typer.Option(
            metavar="PANES",
            help="tmux: each agent in a window of flume's own tmux server (flume attach shows "
            "it); herdr: each agent in a tab of your running herdr (its socket: "
            "$HERDR_SOCKET_PATH or herdr's default); print: flume writes the agent down and "
            "flume attach prints the command you run.",
            autocompletion=lambda: [each.value for each in Panes],
        ),
    ] = Panes.TMUX.value,
    agent_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-arg",
            metavar="ARG",
            help="An argument for the agent's command line, e.g. --agent-arg=--effort; "
            "repeatable, kept in order.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the place as JSON.")] = False,
) -> None:
    """Launch work in a place of its own, carried to landing.

    The launch is checked whole, journaled, and left to the supervisor, which makes the place
    and runs each stage's agent in it. Prints the place's id (<kind>--<name>). The brief comes
    from one of --brief, --brief-file or stdin. Bad input makes nothing and exits with status 2.
    """
    from flume.shell.perform import launch_words
    from flume.shell.supervisor import handover

    given: str | None = None
    if kind_file is None:
        # A running supervisor, with flume's rules and git loaded, launches at once: what this
        # process would load to launch costs more than the launch. A kind file is read here.
        try:
            launch_words.checked(kind=kind, kind_carried=False, agent=agent, panes=panes)
        except UsageError as error:
            _fail(error)
        given = _brief(brief, brief_file)
        words = {
            "repository": str(repository.absolute()),
            "name": name,
            "brief": given,
            "kind": kind,
            "base": base,
            "mark": mark,
            "waits": list(wait or ()),
            "agent": agent,
            "model": model,
            "agent_args": list(agent_arg or ()),
            "panes": panes,
        }
        try:
            outcome = handover.launch(words)
        except handover.Unanswered as error:
            typer.echo(
                f"flume: the supervisor took the launch and said nothing more ({error}); "
                "flume status shows whether it was made",
                err=True,
            )
            raise typer.Exit(1) from None
        if outcome is not None:
            _launched(outcome, as_json=as_json)
            return
    from flume import api

    try:
        made = api.launch(
            repository=repository,
            name=name,
            brief=given if given is not None else lambda: _brief(brief, brief_file),
            kind=kind,
            kind_file=kind_file,
            base=base,
            mark=mark,
            waits=wait or (),
            agent=agent,
            model=model,
            agent_args=agent_arg or (),
            panes=panes,
        )
    except UsageError as error:
        _fail(error)
    _show_launched(made.as_dict(), as_json=as_json)


def _launched(outcome: LaunchOutcome, *, as_json: bool) -> None:
    """What came of a launch the supervisor took, said as the command says its own."""
    from flume.shell.supervisor.handover import LaunchMade, LaunchRefused

    if isinstance(outcome, LaunchMade):
        _show_launched(outcome.document, as_json=as_json)
        return
    if isinstance(outcome, LaunchRefused):
        _fail(UsageError(outcome.problems, exit_status=outcome.exit_status))
    typer.echo(f"flume: the launch failed: {outcome.output}", err=True)
    raise typer.Exit(1)


def _show_launched(made: Mapping[str, Any], *, as_json: bool) -> None:
    """The place launched: its id (and where it is, on stderr), or ``--json``'s document."""
    if as_json:
        typer.echo(json.dumps(made, ensure_ascii=False, indent=2))
        return
    typer.echo(made["place"])
    typer.echo(
        f"flume: {made['path']} on {made['branch']} from {made['base']}; "
        f"follow it with: flume status {made['place']}",
        err=True,
    )


@app.command(cls=Command)
def drop(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=_PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=_REPOSITORY_HELP)] = None,
) -> None:
    """Abandon the work; its branch is kept when it holds work.

    Its agent ends and its place is tidied away. A branch holding commits its base lacks is kept,
    and flume tidy names it; a change's branch is always kept.
    """
    from flume import api

    try:
        typer.echo(api.drop(place, repository=repository))
    except UsageError as error:
        _fail(error)


def _now() -> Instant:
    from flume.core.ids import Instant

    return Instant(time.time())


def _cwd() -> Path:
    """The folder the command runs in; a usage error when it is gone (its worktree removed)."""
    try:
        return Path.cwd()
    except FileNotFoundError as error:
        raise UsageError.one(
            "folder", "the current folder no longer exists", "run it from a folder that exists"
        ) from error


def _words(text: str, field: str) -> str:
    """``text`` as given, or stdin read as UTF-8 when it is ``-``."""
    if text != "-":
        return text
    from flume.shell.commands import asked

    if sys.stdin.isatty():
        raise UsageError.one(field, f"the {field} is '-' and stdin is a terminal", "pipe it in")
    return asked.decoded(field, sys.stdin.buffer.read())


@app.command(cls=Command)
def tell(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=_PLACE_HELP)],
    text: Annotated[str, typer.Argument(metavar="TEXT", help="What to tell; - reads stdin.")],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=_REPOSITORY_HELP)] = None,
) -> None:
    """Tell the place's agent something, once it waits.

    Held while the agent works, sent once it waits; it counts as delivered when the agent's
    transcript holds it.
    """
    from flume import api

    try:
        typer.echo(api.tell(place, _words(text, "tell"), repository=repository))
    except UsageError as error:
        _fail(error)


@app.command(cls=Command)
def stop(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=_PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=_REPOSITORY_HELP)] = None,
) -> None:
    """End the place's agent; its stage waits for a retry."""
    from flume import api

    try:
        typer.echo(api.stop(place, repository=repository))
    except UsageError as error:
        _fail(error)


@app.command(cls=Command)
def retry(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=_PLACE_HELP)],
    *,
    words: Annotated[
        str,
        typer.Option(
            metavar="TEXT",
            help="Your words for the next attempt, put in its prompt; - reads stdin.",
        ),
    ] = "",
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=_REPOSITORY_HELP)] = None,
) -> None:
    """Run a stage that stopped short again, with your words.

    The stage starts over with a fresh agent; your words go into its prompt.
    """
    from flume import api

    try:
        typer.echo(api.retry(place, words=_words(words, "words"), repository=repository))
    except UsageError as error:
        _fail(error)


@app.command(cls=Command)
def proceed(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=_PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=_REPOSITORY_HELP)] = None,
) -> None:
    """Give your word to a stage that waits on it, so it starts."""
    from flume import api

    try:
        typer.echo(api.proceed(place, repository=repository))
    except UsageError as error:
        _fail(error)


@app.command(cls=Command)
def needs(
    text: Annotated[
        str, typer.Argument(metavar="TEXT", help="What you need to go on; - reads stdin.")
    ],
) -> None:
    """For the agent: stop the stage short with what it needs.

    The place is the one the current folder is in; the agent's session is $FLUME_SESSION.
    """
    from flume.shell.commands import asked

    try:
        words = asked.checked_text("words", _words(text, "words"))
        cwd = _cwd()
        if asked.in_no_place(cwd):
            raise asked.outside(cwd)
    except UsageError as error:
        _fail(error)
    # Only a command that may be in a place loads the rules, git and the journal's codec.
    from flume.cli import render
    from flume.core.observations import NeedsSaid
    from flume.core.settings import Settings
    from flume.shell.commands import verbs as commands
    from flume.shell.supervisor import client

    settings = Settings()
    try:
        found = commands.place_here(cwd, settings)
        seen = NeedsSaid(at=_now(), words=words, session=commands.session_of())
        decision = commands.give(found, seen, settings)
        client.ensure()
    except UsageError as error:
        _fail(error)
    typer.echo(render.said_needs(decision))


@app.command(cls=Command)
def submit() -> None:
    """For the agent: hand the branch to the repository's lander.

    The place is the one the current folder is in; the agent's session is $FLUME_SESSION.
    """
    from flume.shell.commands import asked

    try:
        cwd = _cwd()
        if asked.in_no_place(cwd):
            raise asked.outside(cwd)
    except UsageError as error:
        _fail(error)
    # Only a command that may be in a place loads the rules, git and the journal's codec.
    from flume.cli import render
    from flume.core.observations import SubmitAsked
    from flume.core.settings import Settings
    from flume.shell.commands import verbs as commands
    from flume.shell.supervisor import client

    settings = Settings()
    try:
        found = commands.place_here(cwd, settings)
        seen = SubmitAsked(at=_now(), session=commands.session_of())
        decision = commands.give(found, seen, settings)
        client.ensure()
    except UsageError as error:
        _fail(error)
    typer.echo(render.submitted(decision))


@app.command(cls=Command)
def prompt(  # noqa: PLR0913 (each option is one thing a launch names)
    kind: Annotated[
        str,
        typer.Argument(
            metavar="KIND", help="fix, change, question, or a kind the repository declares."
        ),
    ],
    stage: Annotated[str, typer.Argument(metavar="STAGE", help="One of the kind's stages.")],
    *,
    brief: Annotated[
        str, typer.Option(metavar="TEXT", help="The brief to show in it.")
    ] = "(the brief)",
    name: Annotated[str, typer.Option(metavar="NAME", help="The work's name.")] = "example",
    base: Annotated[
        str | None,
        typer.Option(
            metavar="BRANCH", help="The base branch (default: the shared branch, or main)."
        ),
    ] = None,
    repository: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH", help="Whose kinds and prompts apply (default: the current folder's)."
        ),
    ] = None,
) -> None:
    """Print the exact prompt a stage would be sent. Starts nothing, writes nothing."""
    from flume.core.settings import Settings
    from flume.shell.commands import verbs as commands

    asked = commands.PromptAsked(
        kind=kind, stage=stage, brief=brief, name=name, base=base, repository=repository
    )
    try:
        shown = commands.prompt(asked, _cwd(), Settings())
    except UsageError as error:
        _fail(error)
    typer.echo(shown.text)
    if shown.repository is None:
        typer.echo(
            "flume: no repository here, so built-in kinds and prompts and a stand-in path; "
            "give --repository to see a repository's own",
            err=True,
        )


@app.command(cls=Command)
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
        Path | None,
        typer.Option(metavar="PATH", help="Only this repository (default: every one flume knows)."),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", help="Seconds to wait for the supervisor.", parser=parse_seconds
        ),
    ] = 120.0,
) -> None:
    """Remove what landed or was dropped; name what is kept, and why.

    Exits 1 when a removal failed or the supervisor had not finished (what failed is named).
    """
    from flume.cli import render
    from flume.core.settings import Settings
    from flume.shell.commands import tidying
    from flume.shell.store import places

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
        outcomes = tidying.plans(found, force=force, settings=settings)
    else:
        try:
            outcomes = tidying.tidy(found, force=force, settings=settings, timeout=timeout)
        except UsageError as error:
            _fail(error)
        for where in repositories:
            tidying.sweep_staging(where, time.time())
    if as_json:
        typer.echo(render.tidy_json(outcomes, dry_run=dry_run))
    else:
        for line in render.tidy_text(outcomes, dry_run=dry_run):
            typer.echo(line)
    if any(outcome.failed for outcome in outcomes):
        # A removal that failed, or a tidy not finished: the caller's script must see it.
        raise typer.Exit(1)


@app.command(cls=Command)
def attach(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=_PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=_REPOSITORY_HELP)] = None,
) -> None:
    """Show the place's agent in this terminal.

    Its pane on flume's own tmux server, or its tab in herdr.
    """
    from flume.core.settings import Settings
    from flume.shell.agents.runner import PRINTED
    from flume.shell.panes import attach as attaching
    from flume.shell.panes import printed
    from flume.shell.panes.herdr import Herdr
    from flume.shell.panes.port import PaneServer
    from flume.shell.panes.tmux import Tmux
    from flume.shell.store import places

    settings = Settings()
    try:
        found = places.find(place, repository, settings)
        pane = attaching.pane_of(found.place)
    except UsageError as error:
        _fail(error)
    if pane.startswith(PRINTED):
        typer.echo(shlex.join(printed.command(Path(pane.removeprefix(PRINTED)))))
        typer.echo(
            f"flume: {place}'s agent is printed (--panes print): run the command above in a "
            "terminal of your own",
            err=True,
        )
        return
    assert found.place is not None  # noqa: S101 (pane_of read it)
    in_herdr = found.place.launch.agent.panes is Panes.HERDR
    server: PaneServer = Herdr() if in_herdr else Tmux()
    try:
        pane = attaching.live_pane(found.place, server.panes())
    except UsageError as error:
        _fail(error)
    argv = server.attach_argv(pane)
    leave = "herdr's own keys" if in_herdr else "C-b d"
    typer.echo(f"flume: {place} is in pane {pane}; detach with {leave}", err=True)
    attaching.exec_attach(argv)


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
) -> None:
    """Carry a fix and a change to landing, on a sample repository.

    Everything lives in a temporary folder: the repository, flume's state and supervisor, its
    tmux server and the agents' HOME. The agents are flume's test agent, in real tmux panes. In
    a terminal the board of flume watch shows the work; piped, each event as flume events
    prints it. Exits 0 only when both landed and were tidied; however it ends (Ctrl-C, SIGTERM,
    a closed terminal), its supervisor is stopped and its folder removed.
    """
    # Imported here: only this command uses it.
    from flume.cli import demo as demo_story

    status = demo_story.run(keep=keep, seconds=seconds)
    if status:
        raise typer.Exit(status)


@app.command("mcp", cls=Command)
def mcp_server() -> None:
    """Serve flume's commands as MCP tools on stdin and stdout.

    Claude Code's flume plugin starts it; launch runs in the repository of this folder.
    """
    from flume.cli import mcp

    mcp.serve()


@app.command(cls=Command)
def events(  # noqa: PLR0913 (each option narrows the stream or says how to show it)
    place: Annotated[
        str | None,
        typer.Argument(metavar="PLACE", help="One place, as <kind>--<name>."),
    ] = None,
    *,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Go on: each new event, places launched later too, until ^C."
        ),
    ] = False,
    mark: Annotated[
        str | None, typer.Option(metavar="MARK", help="Only places launched with this mark.")
    ] = None,
    repository: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH", help="Only this repository's places (default: every one flume knows)."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object a line (docs/events.md).")
    ] = False,
    after: Annotated[
        str | None,
        typer.Option(metavar="CURSOR", help="Only events after this one (its cursor in --json)."),
    ] = None,
) -> None:
    """Show the places' events: launched, delivered, landed.

    Read from their journals: every event flume reports, launched, stage started, prompt
    delivered, stopped short, landed, tidied and the rest. Time order across places, journal
    order within one. Nothing is written or started.
    """
    from flume import api
    from flume.cli import render

    def warn(journal_path: Path, problem: str) -> None:
        typer.echo(f"flume: warning: {journal_path} cannot be read: {problem}", err=True)

    try:
        stream = api.events(
            repository=repository,
            mark=mark,
            place=place,
            follow=follow,
            after=after,
            on_problem=warn,
        )
    except UsageError as error:
        _fail(error)
    try:
        for event in stream:
            if as_json:
                typer.echo(json.dumps(event.as_dict(), ensure_ascii=False))
            else:
                typer.echo(render.event_text(event))
    except KeyboardInterrupt:
        return
    except BrokenPipeError:
        _reader_gone()


def _reader_gone() -> None:
    """Whoever read the output went away (``| head``): nothing more to say, nor to flush at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@app.command(cls=Command)
def watch(
    *,
    mark: Annotated[
        str | None, typer.Option(metavar="MARK", help="Only places launched with this mark.")
    ] = None,
    repository: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH", help="Only this repository's places (default: every one flume knows)."
        ),
    ] = None,
    show_once: Annotated[
        bool, typer.Option("--once", help="Print the board once and exit.")
    ] = False,
    interval: Annotated[
        float, typer.Option(metavar="SECONDS", help="Seconds between looks.", parser=parse_seconds)
    ] = 1.0,
) -> None:
    """Show a live board of every place.

    Each place's kind, stage, agent, deliverable, submission, tasks and age.

    Redrawn as the journals grow; q or Ctrl-C quits. On a terminal that cannot move its cursor
    (TERM=dumb) or into a pipe, the board is printed anew each time a place changes.
    """
    from flume import api
    from flume.cli import board
    from flume.core.settings import Settings
    from flume.shell.store import places
    from flume.shell.store.events import EventStream

    try:
        where = places.repository_of(repository) if repository is not None else None
        api.seconds("interval", interval)
    except UsageError as error:
        _fail(error)
    follower = EventStream(Settings(), repository=where, mark=mark)
    label = str(where) if where is not None else "every repository flume knows"
    console = board.console()
    try:
        if show_once:
            board.once(follower, console, where=label)
            return
        with contextlib.suppress(KeyboardInterrupt):
            board.watch(follower, console, interval=interval, where=label)
    except BrokenPipeError:
        _reader_gone()


app.add_typer(inspect_app, name="inspect")
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
    from flume.shell.supervisor import client
    from flume.shell.supervisor.protocol import wire

    holder = client.holder()
    paused = holder is not None and client.stopped(holder)
    reply = None if paused else client.status(timeout=client.ANSWER_SECONDS)
    if reply is None and holder is not None:
        problem = client.not_answering(holder, 0 if paused else client.ANSWER_SECONDS)
        (said,) = problem.problems
        if as_json:
            shown = {"running": True, "answering": False, "pid": holder, "paused": paused}
            typer.echo(json.dumps({**shown, "problem": said.what, "mend": said.mend}, indent=2))
        else:
            typer.echo(f"supervisor: running (pid {holder}) but not answering: {said.what}")
            typer.echo(f"  {said.mend}")
        raise typer.Exit(1)
    if as_json:
        shown = {"running": reply is not None, "answering": reply is not None}
        answered = wire(reply, reply.pid) if reply is not None else {}
        typer.echo(json.dumps({**shown, **answered}, indent=2))
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
    from flume.shell.supervisor import client

    try:
        reply = client.ensure(wait=client.START_SECONDS)
    except UsageError as error:
        _fail(error)
    if reply is None:
        log = client.log_path()
        typer.echo(
            f"flume: supervisor: started, but not answering after {client.START_SECONDS:.0f} s;"
            f" see its log {log}",
            err=True,
        )
        raise typer.Exit(1)
    typer.echo(f"supervisor: running, pid {reply.pid}")


@daemon.command("stop", cls=Command)
def daemon_stop() -> None:
    """Stop the supervisor once its actions finish.

    The places wait in their journals; any command that needs the supervisor starts it again.
    """
    from flume.shell import process
    from flume.shell.supervisor import client

    holder = client.holder()
    paused = holder is not None and client.stopped(holder)
    reply = None if paused else client.stop(timeout=client.ANSWER_SECONDS)
    if reply is None and holder is not None:
        _fail(client.not_answering(holder, 0 if paused else client.ANSWER_SECONDS))
    if reply is None:
        typer.echo("supervisor: not running")
        return
    pid = reply.pid
    # It stops listening at once, and exits once its running actions are done.
    deadline = time.monotonic() + 600.0
    while process.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process.alive(pid):
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
    from flume.core.settings import Settings
    from flume.shell.supervisor import daemon as supervisor

    raise typer.Exit(supervisor.serve(Settings(), asked_after=asked_after))


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
