"""The commands an agent runs in its place (needs, submit, progress, ask, spawn, notify).

Each registers on the one app (:mod:`flume.cli.base`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# Every other import is made inside the command that uses it: a command answers at once only if
# it loads no more than it needs (bench/cli.py; tests/integration/test_cli_imports.py).
from flume.cli.base import app, fail, given_words
from flume.cli.usage import Command
from flume.core.errors import UsageError


@app.command(cls=Command)
def needs(
    text: Annotated[
        str, typer.Argument(metavar="TEXT", help="What you need to go on; - reads stdin.")
    ],
) -> None:
    """For the agent: stop the stage short with what it needs.

    The place is the one the current folder is in; the agent's session is $FLUME_SESSION.
    """
    from flume import api

    try:
        typer.echo(api.needs(given_words(text, "words")))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def progress(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="What you have done; - reads stdin.")],
) -> None:
    """For the agent: report progress, if its step may.

    Its step must declare may = ["progress"]. Shown in flume status and as an event; the step
    goes on. The place is the one the current folder is in; the agent's session is
    $FLUME_SESSION.
    """
    from flume import api

    try:
        typer.echo(api.progress(given_words(text, "words")))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def ask(
    question: Annotated[
        str, typer.Argument(metavar="QUESTION", help="What you want to know; - reads stdin.")
    ],
    *,
    option: Annotated[
        list[str] | None,
        typer.Option(metavar="TEXT", help="An answer you offer; give it once for each."),
    ] = None,
) -> None:
    """For the agent: ask a question, if its step may; then wait.

    Its step must declare may = ["ask"]. With no lead above, the run shows itself paused
    (question) until a person answers with flume answer; the answer comes back as a message.
    The place and session as for needs.
    """
    from flume import api

    try:
        typer.echo(api.ask(given_words(question, "question"), option or ()))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def spawn(
    *,
    goal: Annotated[
        str, typer.Option(metavar="TEXT", help="What the child builds ($goal); - reads stdin.")
    ],
    agent: Annotated[
        str | None, typer.Option(metavar="AGENT", help="The agent it runs, if not its step's.")
    ] = None,
) -> None:
    """For a lead: spawn a child of its block's template.

    Its step must be an orchestrate block's lead that may spawn; refused past the block's max
    or a spent budget, nothing started. News of the child comes back as messages.
    """
    from flume import api

    try:
        typer.echo(api.spawn(given_words(goal, "goal"), agent))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def compose(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The fragment: a kind file.")],
    *,
    turns: Annotated[int, typer.Option(metavar="N", help="Turns reserved for it.")],
    tokens: Annotated[int, typer.Option(metavar="M", help="Tokens reserved for it.")],
    start: Annotated[
        str, typer.Option("--from", metavar="head|base", help="Where it is cut from.")
    ] = "head",
) -> None:
    """For a lead: start a child run of a workflow fragment.

    The run reserves its slice of turns and tokens, released for what it really spent when it
    ends; refused at depth 3, past the block's compose runs, or where the budgets cannot spare
    the slice. It is merged with the block's children.
    """
    from flume import api

    if start not in {"head", "base"}:
        fail(UsageError.one("--from", f"{start!r} is neither head nor base", "--from head"))
    try:
        typer.echo(api.compose(file, turns, tokens, base=start == "base"))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def notify(
    to: Annotated[str, typer.Argument(metavar="CHILD", help="A child's name, or all.")],
    text: Annotated[str, typer.Argument(metavar="TEXT", help="Your words; - reads stdin.")],
) -> None:
    """For a lead: tell one child, or all, your words.

    A running child's agent is told them as a message; one still waiting reads them in its
    prompt. Its step must be a lead that may notify.
    """
    from flume import api

    try:
        typer.echo(api.notify(to, given_words(text, "words")))
    except UsageError as error:
        fail(error)


@app.command(cls=Command)
def submit() -> None:
    """For the agent: hand the branch to the repository's lander.

    The place is the one the current folder is in; the agent's session is $FLUME_SESSION.
    """
    from flume import api

    try:
        typer.echo(api.submit())
    except UsageError as error:
        fail(error)


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
    from flume import api

    try:
        shown = api.prompt(kind, stage, brief=brief, name=name, base=base, repository=repository)
    except UsageError as error:
        fail(error)
    typer.echo(shown.text)
    if shown.repository is None:
        typer.echo(
            "flume: no repository here, so built-in kinds and prompts and a stand-in path; "
            "give --repository to see a repository's own",
            err=True,
        )
