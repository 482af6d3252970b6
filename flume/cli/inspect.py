"""``flume inspect``: what flume makes of an agent's files, for a person to check (docs/inspect.md).

``flume inspect transcript FILE`` lists the lines of a Claude Code transcript or a Codex rollout
that flume takes as messages typed by the user, and the agent's state it reads at the end. Keys
typed into a pane prove nothing; the transcript does (R5), so this is how to see why a prompt did
or did not count as delivered. The judgement is :func:`flume.shell.agents.inspection.inspect`'s;
this
module only renders it.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from flume.cli.usage import Command
from flume.core.errors import UsageError

if TYPE_CHECKING:
    from flume.api import Inspection

#: A prompt's text in the table: one line, at most this many characters.
SHORT = 100

inspect_app = typer.Typer(
    help="Show what flume makes of an agent's files.", no_args_is_help=True, rich_markup_mode=None
)


def _fail(error: UsageError) -> NoReturn:
    """Say what is wrong and how to mend it, on stderr, and exit with the error's status."""
    for problem in error.problems:
        typer.echo(f"flume: {problem.render()}", err=True)
    raise typer.Exit(error.exit_status)


def shorten(text: str, limit: int = SHORT) -> str:
    """``text`` on one line (runs of blanks made one space), cut to ``limit`` characters."""
    line = re.sub(r"\s+", " ", text).strip()
    return line if len(line) <= limit else f"{line[: limit - 1]}…"


def inspection_json(found: Inspection) -> str:
    """The inspection as one JSON object, every prompt's text whole."""
    import json

    return json.dumps(
        {
            "file": str(found.path),
            "format": found.format.value,
            "lines": found.lines,
            "unreadable": found.unreadable,
            "torn": found.torn,
            "prompts": [
                {"line": prompt.line, "timestamp": prompt.timestamp, "text": prompt.text}
                for prompt in found.prompts
            ],
            "state": found.state.value,
        },
        indent=2,
        ensure_ascii=False,
    )


def inspection_text(found: Inspection) -> list[str]:
    """The inspection for a person: a few facts, then a table of the typed messages."""
    lines = [
        f"file: {found.path}",
        f"format: {found.format.value}",
        f"lines: {found.lines} ({found.unreadable} unreadable)",
        f"typed by the user: {len(found.prompts)}",
    ]
    if found.torn:
        lines.append("the last line has no newline yet: flume reads it once it is whole")
    if found.prompts:
        from rich import box
        from rich.console import Console
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("line", justify="right", no_wrap=True)
        table.add_column("timestamp", no_wrap=True)
        table.add_column("text", no_wrap=True)
        for prompt in found.prompts:
            table.add_row(str(prompt.line), prompt.timestamp or "", shorten(prompt.text))
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(table)
        lines.extend(line.rstrip() for line in console.export_text().splitlines() if line.strip())
    lines.append(f"agent state at the end: {found.state.value}")
    return lines


@inspect_app.command(cls=Command)
def transcript(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", help="A Claude Code transcript or a Codex rollout (.jsonl)."
        ),
    ],
    *,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """List the messages typed by the user, and the agent's state.

    The lines flume takes as typed by a person, and the state it reads at the end of the file.
    A file none of whose lines is a transcript's is bad input (exit status 2).
    """
    from flume import api

    try:
        found = api.inspect(file)
    except UsageError as error:
        _fail(error)
    if as_json:
        typer.echo(inspection_json(found))
        return
    for line in inspection_text(found):
        typer.echo(line)
