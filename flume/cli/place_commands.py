"""A place's commands, for the person or tool carrying work.

Launch, status, tell, stop, retry, proceed, approve, resume, raise, resolve, drop, tidy, attach,
events, transcript, watch. Each registers on the one app (:mod:`flume.cli.base`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

# Every other import is made inside the command that uses it: a command answers at once only if
# it loads no more than it needs (bench/cli.py; tests/integration/test_cli_imports.py).
from flume.cli.base import (
    PLACE_HELP,
    REPOSITORY_HELP,
    STEP_HELP,
    app,
    fail,
    given_words,
    reader_gone,
)
from flume.cli.usage import Command, parse_seconds
from flume.core.choices import AgentName, Panes
from flume.core.errors import UsageError


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
    fleet: Annotated[
        bool,
        typer.Option("--fleet", help="Every fleet place instead, with its host (docs/fleet.md)."),
    ] = False,
) -> None:
    """Show each place's stage, agent, deliverable and submission.

    Read from the places' journals; nothing is written or started. With --fleet, every place of
    the host's fleet, from Temporal and its hosts' heartbeats.
    """
    if fleet:
        from flume.cli import fleet_commands

        fleet_commands.status(as_json=as_json)
        return
    from flume import api
    from flume.cli import statusview

    try:
        found = api.status_document(place=place, repository=repository, mark=mark)
    except UsageError as error:
        fail(error)
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
        fail(api.no_such_place(place, [Path(each) for each in found.repositories]))
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


def _brief(brief: str | None, brief_file: Path | None) -> str:
    """The brief from --brief, --brief-file or stdin; exactly one of them.

    ``-`` for either means stdin, as it does for ``tell``, ``retry --words`` and ``needs``.
    """
    if brief is not None and brief_file is not None:
        fail(UsageError.one("brief", "both --brief and --brief-file are given", "give one"))
    if brief == "-" or brief_file == Path("-"):
        try:
            return given_words("-", "brief")
        except UsageError as error:
            fail(error)
    if brief is not None:
        return brief
    if brief_file is not None:
        try:
            return brief_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            fail(
                UsageError.one(
                    "brief",
                    f"cannot read the brief file {brief_file}: {error}",
                    "name a readable UTF-8 text file, or - for stdin",
                ),
            )
    if sys.stdin.isatty():
        fail(
            UsageError.one(
                "brief",
                "no brief is given",
                "give --brief TEXT, --brief-file FILE, or pipe the brief on stdin",
            ),
        )
    try:
        return sys.stdin.read()
    except UnicodeDecodeError as error:
        fail(
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
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Check the launch and print the worst case its kind's caps allow (agents at "
            "once, lanes, attempts, turns, tokens); start and make nothing.",
        ),
    ] = False,
    fleet: Annotated[
        bool,
        typer.Option(
            "--fleet",
            help="Launch it in the host's fleet: whichever host has a free slot carries it "
            "(docs/fleet.md).",
        ),
    ] = False,
    relaunch: Annotated[
        bool,
        typer.Option(
            "--relaunch",
            help="With --fleet: carry it again on another host if its host is lost (else as "
            "[fleet] relaunch says).",
        ),
    ] = False,
) -> None:
    """Launch work in a place of its own, carried to landing.

    The launch is checked whole, journaled, and left to the supervisor, which makes the place
    and runs each stage's agent in it. Prints the place's id (<kind>--<name>). The brief comes
    from one of --brief, --brief-file or stdin. Bad input makes nothing and exits with status 2.
    With --plan, nothing is made: the worst case the kind's caps allow is printed.
    """
    from flume import api

    asked = api.LaunchAsked(
        repository=repository,
        name=name,
        brief=lambda: _brief(brief, brief_file),
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
    if plan:
        # The brief is the work, not its caps: a plan reads none (and never stdin).
        _plan(asked.evolve(brief=brief if brief not in {None, "-"} else ""), as_json=as_json)
        return
    if relaunch and not fleet:
        fail(UsageError.one("relaunch", "--relaunch is given without --fleet", "add --fleet"))
    if fleet:
        from flume.cli import fleet_commands

        fleet_commands.launch(asked, relaunch=True if relaunch else None, as_json=as_json)
        return
    try:
        if kind_file is None:
            # A running supervisor, with flume's rules and git loaded, launches at once: what
            # this process would load to launch costs more than the launch. A kind file is read
            # here.
            asked.checked()
            asked = asked.evolve(brief=_brief(brief, brief_file))
            made = api.hand_over(asked)
            if made is not None:
                _show_launched(made.as_dict(), as_json=as_json)
                return
        made = api.launch_asked(asked)
    except api.Unanswered as error:
        typer.echo(
            f"flume: the supervisor took the launch and said nothing more ({error}); "
            "flume status shows whether it was made",
            err=True,
        )
        raise typer.Exit(1) from None
    except api.LaunchFailed as error:
        typer.echo(f"flume: the launch failed: {error}", err=True)
        raise typer.Exit(1) from None
    except UsageError as error:
        fail(error)
    _show_launched(made.as_dict(), as_json=as_json)


def _plan(asked: Any, *, as_json: bool) -> None:  # noqa: ANN401 (api.LaunchAsked, loaded late)
    """``flume launch --plan``: the worst case, as text or ``--json``; nothing is made."""
    import json

    from flume import api

    try:
        worst = api.plan_launch(asked)
    except UsageError as error:
        fail(error)
    if as_json:
        typer.echo(json.dumps(worst, ensure_ascii=False, indent=2))
        return

    def capped(value: int | None, unit: str = "") -> str:
        return "no cap" if value is None else f"{value}{unit}"

    rows = [
        ("agents at once", str(worst["agents_at_once"])),
        ("lanes", f"{worst['lanes']} (the main worktree and one per parallel branch)"),
        ("step runs", str(worst["step_runs"])),
        ("attempts", capped(worst["attempts"])),
        ("turns", capped(worst["turns"])),
        ("tokens", capped(worst["tokens"])),
        ("wall time", capped(worst["wall_minutes"], " minutes active")),
    ]
    typer.echo(f"kind {worst['kind']}: the worst case its caps allow; nothing started")
    for label, value in rows:
        typer.echo(f"  {label:<15} {value}")
    typer.echo("  step runs, each:")
    for each in worst["steps"]:
        typer.echo(f"    {each['path']:<30} {each['runs']}")


def _show_launched(made: dict[str, Any], *, as_json: bool) -> None:
    """The place launched: its id (and where it is, on stderr), or ``--json``'s document."""
    if as_json:
        import json

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
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Abandon the work; its branch is kept when it holds work.

    Its agent ends and its place is tidied away. A branch holding commits its base lacks is kept,
    and flume tidy names it; a change's branch is always kept.
    """
    from flume import api

    try:
        typer.echo(api.drop(place, repository=repository))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def tell(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    text: Annotated[str, typer.Argument(metavar="TEXT", help="What to tell; - reads stdin.")],
    *,
    step: Annotated[str, typer.Option(metavar="KEY", help=STEP_HELP)] = "",
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Tell the place's agent something, once it waits.

    Held while the agent works, sent once it waits; it counts as delivered when the agent's
    transcript holds it. With --step, refused unless the run is at that step; a lane's step
    (slice-a, slices/slice-a) goes to that lane's agent.
    """
    from flume import api

    try:
        said = given_words(text, "tell")
        typer.echo(api.tell(place, said, step=step, repository=repository))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def stop(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """End the place's agent; its stage waits for a retry."""
    from flume import api

    try:
        typer.echo(api.stop(place, repository=repository))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def retry(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    words: Annotated[
        str,
        typer.Option(
            metavar="TEXT",
            help="Your words for the next attempt, put in its prompt; - reads stdin.",
        ),
    ] = "",
    step: Annotated[str, typer.Option(metavar="KEY", help=STEP_HELP)] = "",
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Run a stage that stopped short again, with your words.

    The stage starts over with a fresh agent; your words go into its prompt. With --step,
    refused unless the run is at that step; a lane's step goes to that lane.
    """
    from flume import api

    try:
        said = given_words(words, "words")
        typer.echo(api.retry(place, words=said, step=step, repository=repository))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def proceed(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Give your word to a stage that waits on it, so it starts."""
    from flume import api

    try:
        typer.echo(api.proceed(place, repository=repository))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def approve(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Approve the step an approval gate holds, so the run goes on."""
    from flume import api

    try:
        typer.echo(api.approve(place, repository=repository))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def answer(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    question: Annotated[
        str,
        typer.Argument(metavar="QUESTION", help="The question's id, as flume status names it: q1."),
    ],
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Your answer; - reads stdin.")],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Answer the question a step's agent asked, once.

    flume status shows it (paused: question). Given once; it reaches the agent that asked as a
    message, counted once its transcript holds it.
    """
    from flume import api

    try:
        typer.echo(api.answer(place, question, given_words(text, "answer"), repository=repository))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def resume(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Let a run paused on a blocked gate or a loop's max go on.

    Its paused step starts again with a fresh agent. A run paused for an approval takes flume
    approve, one paused on a budget flume raise; flume status names the command each pause takes.
    """
    from flume import api

    try:
        typer.echo(api.resume(place, repository=repository))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def resolve(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    by_hand: Annotated[
        bool,
        typer.Option(
            "--by-hand",
            help="You merged the lane that conflicted in the run's worktree and committed.",
        ),
    ] = False,
    agent: Annotated[
        bool,
        typer.Option("--agent", help="A fresh agent merges the lanes in the run's worktree."),
    ] = False,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Let a run paused on a merge conflict of its lanes go on.

    Give one of --by-hand and --agent. The merge of a parallel's lanes into the run's branch
    conflicted. --by-hand: you merged it and committed, and flume merges the rest of the lanes
    in order. --agent: an agent merges them and commits first. flume status names the files
    that conflicted.
    """
    from flume import api

    if by_hand == agent:
        given = (
            "both --by-hand and --agent are given"
            if by_hand
            else "neither --by-hand nor --agent is given"
        )
        fail(
            UsageError.one(
                "resolve",
                given,
                "give one: --by-hand (you merged it and committed) or --agent (an agent merges it)",
            ),
        )
    try:
        typer.echo(api.resolve(place, agent=agent, repository=repository))
    except UsageError as error:
        fail(error)


def parse_increment(text: str) -> int:
    """An amount to raise a budget by (``parser=``): a whole number of at least 1, +5 or 5."""
    digits = text.removeprefix("+")
    if not digits.isascii() or not digits.isdigit() or int(digits) < 1:
        raise typer.BadParameter(
            f"{text!r} is not a whole number of at least 1; raise by one, such as +5"
        )
    return int(digits)


#: How each ``flume raise`` option names the amount it takes.
_INCREMENT = "+N"


@app.command(name="raise", cls=Command)
def raise_budgets(  # noqa: PLR0913 (one option per budget)
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    turns: Annotated[
        int | None,
        typer.Option(metavar=_INCREMENT, parser=parse_increment, help="More turns, in all."),
    ] = None,
    tokens: Annotated[
        int | None,
        typer.Option(metavar=_INCREMENT, parser=parse_increment, help="More tokens, in all."),
    ] = None,
    wall: Annotated[
        int | None,
        typer.Option(
            metavar="+MINUTES", parser=parse_increment, help="More minutes of active time."
        ),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(
            metavar=_INCREMENT,
            parser=parse_increment,
            help="More times an agent is told why its gate did not pass.",
        ),
    ] = None,
    turns_per_attempt: Annotated[
        int | None,
        typer.Option(metavar=_INCREMENT, parser=parse_increment, help="More turns per attempt."),
    ] = None,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Raise the budgets of a run paused on one, so it goes on.

    Each option raises its budget by that much (+5 or 5 alike); name at least one. A budget
    still spent after the raise pauses the run again, and flume status says which.
    """
    from flume import api

    try:
        typer.echo(
            api.raise_budgets(
                place,
                turns=turns,
                tokens=tokens,
                wall_minutes=wall,
                retries=retries,
                turns_per_attempt=turns_per_attempt,
                repository=repository,
            )
        )
    except UsageError as error:
        fail(error)


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
    from flume import api
    from flume.cli import render

    try:
        outcomes = api.tidy(repository=repository, force=force, dry_run=dry_run, timeout=timeout)
    except UsageError as error:
        fail(error)
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
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    *,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
) -> None:
    """Show the place's agent in this terminal.

    Its pane on flume's own tmux server, or its tab in herdr.
    """
    from flume import api

    try:
        attached = api.attach(place, repository=repository)
    except UsageError as error:
        fail(error)
    if attached.printed:
        typer.echo(attached.command)
        typer.echo(
            f"flume: {place}'s agent is printed (--panes print): run the command above in a "
            "terminal of your own",
            err=True,
        )
        return
    typer.echo(f"flume: {place} is in pane {attached.pane}; detach with {attached.leave}", err=True)
    api.exec_attach(attached)


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
    until: Annotated[
        list[str] | None,
        typer.Option(
            metavar="EVENT",
            help="Follow until an event of this name is shown, then stop (exit 0): landed, "
            "paused, finished...; repeatable, the first of them ends it.",
        ),
    ] = None,
) -> None:
    """Show the places' events: launched, delivered, landed.

    Read from their journals: every event flume reports, launched, stage started, prompt
    delivered, stopped short, landed, tidied and the rest. Time order across places, journal
    order within one. Nothing is written or started.
    """
    import json

    from flume import api
    from flume.cli import render
    from flume.core.actions import Event
    from flume.core.errors import did_you_mean

    names = [event.value for event in Event]
    for word in until or ():
        if word not in names:
            fail(
                UsageError.one(
                    "--until",
                    f"{word!r} is not an event flume reports{did_you_mean(word, names)}",
                    f"name one of {', '.join(names)}",
                )
            )

    def warn(journal_path: Path, problem: str) -> None:
        typer.echo(f"flume: warning: {journal_path} cannot be read: {problem}", err=True)

    try:
        stream = api.events(
            repository=repository,
            mark=mark,
            place=place,
            follow=follow or bool(until),
            after=after,
            on_problem=warn,
        )
    except UsageError as error:
        fail(error)
    try:
        for event in stream:
            if as_json:
                typer.echo(json.dumps(event.as_dict(), ensure_ascii=False))
            else:
                typer.echo(render.event_text(event))
            if until and event.event.value in until:
                return
    except KeyboardInterrupt:
        return
    except BrokenPipeError:
        reader_gone()


@app.command(cls=Command)
def transcript(
    place: Annotated[str, typer.Argument(metavar="PLACE", help=PLACE_HELP)],
    step: Annotated[
        str | None,
        typer.Argument(
            metavar="STEP-KEY",
            help=(
                "Only this step: its key as flume status shows it (review-loop@2/review), its "
                "name (every pass), or a loop's (default: every attempt)."
            ),
        ),
    ] = None,
    *,
    attempt: Annotated[
        int | None,
        typer.Option(metavar="N", help="Only the step's attempt N (retries count up from 1)."),
    ] = None,
    repository: Annotated[Path | None, typer.Option(metavar="PATH", help=REPOSITORY_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (docs/commands.md).")] = False,
) -> None:
    """Replay each attempt's chat from its agent's own transcript.

    Per attempt: its step key, agent, session and transcript, then each prompt typed, the
    agent's text, and each tool call and its result on one line. A tidied place is shown too.
    Exits 1 when no chosen attempt's transcript could be read (each says why).
    """
    from flume import api
    from flume.cli import render

    try:
        chats = api.transcript(place, step or "", attempt=attempt, repository=repository)
    except UsageError as error:
        fail(error)
    try:
        if as_json:
            typer.echo(render.transcript_json(place, chats))
        else:
            for line in render.transcript_text(chats):
                typer.echo(line)
    except BrokenPipeError:
        reader_gone()
        return
    for chat in chats:
        if chat.missing is not None:
            typer.echo(f"flume: {place} {chat.key}#{chat.attempt}: {chat.missing}", err=True)
    if all(chat.missing is not None for chat in chats):
        raise typer.Exit(1)


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

    try:
        api.seconds("interval", interval)
        follower = api.follower(repository=repository, mark=mark)
    except UsageError as error:
        fail(error)
    where = follower.repository
    label = str(where) if where is not None else "every repository flume knows"
    console = board.console()
    try:
        if show_once:
            board.once(follower, console, where=label)
            return
        with contextlib.suppress(KeyboardInterrupt):
            board.watch(follower, console, interval=interval, where=label)
    except BrokenPipeError:
        reader_gone()
