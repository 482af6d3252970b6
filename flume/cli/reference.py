"""The manual's reference pages, drawn from what flume itself reads and runs, never by hand.

Theory of operation. Each page is Markdown made from a declaration the code uses:

- ``commands``: every command, argument and option of the ``flume`` app, from the app itself
  (``typer.main.get_command``), as ``flume COMMAND --help`` says them;
- ``kind-file``: every table and key of a kind file, its type, default and meaning, and the gate
  words and prompt fields, from :mod:`flume.core.kindfile`, whose keys the reader takes;
- ``board``: the board's files and the verdict file, from the data beside their reader and judge;
- ``status``: ``flume status --json``'s fields, from :mod:`flume.cli.statusview`;
- ``events``: the events and their JSON form, from :mod:`flume.shell.store.events`;
- ``test-agent``: the test agent's script, from :mod:`flume.testing.agent`, whose parser takes
  its keys from the same lists.

The manual's build (``scripts/docs``, through ``docs/_ext/flume_reference.py``) writes them into
``docs/reference/`` before Sphinx reads its pages; they are never committed, so an option added to
a command is in the next build's page with no one editing a page. No command imports this module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flume.core.kindfile import Table

#: The characters a text's words are escaped from, so Markdown shows them as they are.
_MARKUP = re.compile(r"([\\`*_{}\[\]<>|$~#])")
#: A code span, kept whole when the rest of a text is made safe for a table.
_SPAN = re.compile(r"(`[^`]*`)")


def plain(text: str) -> str:
    """``text`` as Markdown that shows it as it is: every markup character escaped."""
    return _MARKUP.sub(r"\\\1", text)


def code(text: str) -> str:
    """``text`` as a code span (a backtick inside it made safe)."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: str) -> str:
    """Markdown written in the data (code spans kept) made safe for a table's cell."""
    parts = _SPAN.split(text)
    return "".join(
        part.replace("|", "\\|") if part.startswith("`") else re.sub(r"([<>|])", r"\\\1", part)
        for part in parts
    ).replace("\n", " ")


def table(heads: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; cells as given (make them safe with :func:`cell` or :func:`code`)."""
    lines = [
        "| " + " | ".join(heads) + " |",
        "| " + " | ".join("---" for _ in heads) + " |",
    ]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines) + "\n"


def _generated(title: str, source: str) -> list[str]:
    """A page's first lines: its title, and where it is drawn from."""
    return [
        f"# {title}",
        "",
        (
            f"*Drawn from {source} each time the manual is built: it cannot say other than the "
            "code does.*"
        ),
        "",
    ]


# --- Commands -------------------------------------------------------------------------------


def app_command() -> Any:  # noqa: ANN401 (typer's vendored click has no stubs)
    """The ``flume`` app as the command line runs it: its click command, every command in it."""
    import typer

    from flume.cli.app import resolved
    from flume.cli.base import app

    return typer.main.get_command(resolved(app))


def commands(root: Any = None) -> str:  # noqa: ANN401 (typer's vendored click has no stubs)
    """Every command and option of ``flume`` (``root``: the app's command, by default)."""
    from typer import _click as click

    root = app_command() if root is None else root
    context = click.Context(root, info_name="flume")
    lines = _generated("Commands", "the `flume` command-line app")
    lines += [
        (
            "Each command as `flume COMMAND --help` says it: its arguments and options, what they "
            "take, their defaults. The guides say more: [the caller's commands](../commands.md), "
            "[places](../places.md), [status](../status.md), [events](../events.md)."
        ),
        "",
    ]
    lines += _command_section(root, context, depth=2)
    return "\n".join(lines)


def _command_section(command: Any, context: Any, depth: int) -> list[str]:  # noqa: ANN401 (typer's vendored click has no stubs)
    """One command's section, then its subcommands' (a group's) one level down."""
    from typer import _click as click
    from typer.core import TyperGroup

    lines: list[str] = []
    path = context.command_path
    if depth > 2:
        lines += [f"({_anchor(path)})=", f"{'#' * (depth - 1)} `{path}`", ""]
    usage = " ".join([path, *command.collect_usage_pieces(context)])
    lines += ["```text", usage, "```", ""]
    for paragraph in (command.help or "").strip().split("\n\n"):
        lines += [plain(" ".join(paragraph.split())), ""]
    rows = [_param_row(param, context) for param in command.params if not _hidden(param)]
    if rows:
        lines += [table(("argument or option", "takes", "default", "meaning"), rows)]
    if isinstance(command, TyperGroup):
        for name in command.list_commands(context):
            inner = command.get_command(context, name)
            if inner is None or inner.hidden:
                continue
            lines += _command_section(
                inner, click.Context(inner, info_name=name, parent=context), depth + 1
            )
    return lines


def _anchor(path: str) -> str:
    """The label a command's section is linked by: ``command-flume-launch``."""
    return "command-" + path.replace(" ", "-")


def _hidden(param: Any) -> bool:  # noqa: ANN401 (typer's vendored click has no stubs)
    return bool(getattr(param, "hidden", False))


def _param_row(param: Any, context: Any) -> list[str]:  # noqa: ANN401 (typer's vendored click has no stubs)
    """An argument's or option's row: its name(s), what it takes, its default, its help."""
    names = [*param.opts, *getattr(param, "secondary_opts", [])]
    if param.param_type_name == "argument":
        names = [param.make_metavar(context)]
    takes = ""
    if not getattr(param, "is_flag", False):
        choices = getattr(param.type, "choices", None)
        takes = (
            " or ".join(code(str(each)) for each in choices)
            if choices
            else code(param.make_metavar(context))
        )
        if getattr(param, "multiple", False):
            takes += ", repeatable"
    default = ""
    if param.required:
        default = "required"
    elif getattr(param, "show_default", False) and param.default not in (None, False, (), []):
        default = code(str(param.default))
    meaning = cell(plain(" ".join((getattr(param, "help", None) or "").split())))
    return [" ".join(code(name) for name in names), takes, default, meaning]


# --- The kind file --------------------------------------------------------------------------


def kind_file() -> str:
    """Every table and key of a kind file, from :mod:`flume.core.kindfile`."""
    from flume.core import kindfile

    lines = _generated("The kind file", "`flume/core/kindfile.py`, whose keys the reader takes")
    lines += [
        (
            "A kind file declares one kind: `flume launch --kind-file FILE`, a `[[kinds]] file` of "
            "`.flume.toml`, or a fragment a lead composes. It is a workflow (a `[kind]` with a "
            "`body`, and its blocks) or a kind of stages (a `[kind]` with `[[kind.stages]]`). "
            "A key no table takes is refused, named at its line with the nearest key the table "
            "takes; [the config page](../config.md#workflows-loops-parallels-gates-and-budgets) "
            "shows a whole file, and [the first workflow tutorial]"
            "(../tutorials/first-workflow.md) runs one."
        ),
        "",
        "## A workflow",
        "",
    ]
    for each in kindfile.TABLES:
        lines += _table_section(each)
    lines += ["## A kind of stages", ""]
    for each in kindfile.STAGES_TABLES:
        lines += _table_section(each)
    lines += [
        "(gate-words)=",
        "## Gate words",
        "",
        (
            "What a step's `gate` (or a stage's `deliverable`) names. Each counts only when made "
            "since its stage started; a workflow's gates are judged when the agent's turn ends, "
            "never on quiet. A stage of the older form takes the deliverables alone."
        ),
        "",
        table(
            ("word", "a deliverable too", "the step is done when"),
            (
                (code(each.word), "yes" if each.deliverable else "", cell(each.meaning))
                for each in kindfile.GATES
            ),
        ),
        "(prompt-fields)=",
        "## Prompt fields",
        "",
        (
            "A prompt is a template: `$field` or `${field}` is replaced, `$$` is a dollar sign; a "
            "field not listed here is refused (with the nearest one named)."
        ),
        "",
        table(
            ("field", "replaced with"),
            (
                (code(f"${name}"), cell(meaning))
                for name, meaning in kindfile.PROMPT_FIELD_MEANINGS.items()
            ),
        ),
    ]
    return "\n".join(lines)


def _table_section(declared: Table) -> list[str]:
    """A table of the kind file: how it is written, its meaning, and its keys."""
    rows = [
        (
            code(key.name),
            cell(key.type),
            "required" if key.required else cell(key.default or ""),
            cell(key.meaning),
        )
        for key in declared.keys
    ]
    return [
        f"### `{declared.header}`",
        "",
        cell(declared.meaning),
        "",
        table(("key", "type", "default", "meaning"), rows),
    ]


# --- The board and the verdict --------------------------------------------------------------


def board() -> str:
    """The board's files and the verdict file's format."""
    from flume.core.workflow import gates
    from flume.shell.perform import gates as reading

    lines = _generated(
        "The board and the verdict file",
        "`flume/shell/perform/gates.py` and `flume/core/workflow/gates.py`, which read and "
        "judge them",
    )
    lines += [
        (
            "Each place has a board, "
            f"`<repository>/places/{reading.BOARDS}/<place>/`, made at launch beside the worktrees "
            "(git ignores `places/`); a lane and a child share their run's. Every agent is started "
            "with the board added to the folders it may write (`--add-dir`), and a prompt names "
            "its files as `$board`, `$verdict` and `$handoff`. Tidy removes the board with the "
            "place's worktree."
        ),
        "",
        "## Its files",
        "",
        table(
            ("file", "written by", "what it holds"),
            ((code(path), cell(who), cell(what)) for path, who, what in reading.BOARD_FILES),
        ),
        "(verdict)=",
        "## The verdict file",
        "",
        (
            "A step gated on `verdict` is done when its agent's turn ends with "
            "`<board>/<step>/verdict.json` written for this attempt (a verdict an earlier attempt "
            "wrote was moved to `history/` before this one started). It is a JSON object:"
        ),
        "",
        "```json",
        '{"result": "revise", "summary": "greet.py still says hullo on line 2"}',
        "```",
        "",
        table(
            ("key", "meaning"),
            ((code(key), cell(meaning)) for key, meaning in gates.VERDICT_KEYS.items()),
        ),
        "Its `result`:",
        "",
        table(
            ("result", "what follows"),
            ((code(result), cell(meaning)) for result, meaning in gates.VERDICT_RESULTS.items()),
        ),
        (
            "Any other result, a file that is not JSON, or none at all does not pass: the agent is "
            "told why once, then the run pauses (`gate-blocked`)."
        ),
        "",
    ]
    return "\n".join(lines)


# --- Status and events ----------------------------------------------------------------------


def fields(rows: Iterable[tuple[tuple[str, ...], str]]) -> str:
    """A JSON form's table: each row's fields, and what they mean."""
    return table(
        ("field", "meaning"),
        ((", ".join(code(name) for name in names), cell(meaning)) for names, meaning in rows),
    )


def status() -> str:
    """``flume status --json``, format 2: its fields."""
    from flume.cli import statusview
    from flume.shell.host import STATUS_FORMAT

    lines = _generated("`flume status --json`", "`flume/cli/statusview.py`")
    lines += [
        (f"Format {STATUS_FORMAT}; the guide to `flume status` is [its page](../status.md)."),
        "",
        "```json",
        "{",
        f'  "format": {STATUS_FORMAT},',
        '  "places": [ { "...one object a place, below..." } ],',
        '  "unreadable": [ { "journal": "/path/to/journal.jsonl", "problem": "file:line: what" } ]',
        "}",
        "```",
        "",
        "Each place:",
        "",
        fields(statusview.STATUS_FIELDS),
        statusview.STATUS_FORMAT_WORDS,
        "",
    ]
    return "\n".join(lines)


def events() -> str:
    """The events flume reports, and ``flume events --json``'s form."""
    from flume.shell.store import events as stream

    lines = _generated("Events", "`flume/shell/store/events.py`")
    lines += [
        (
            "What `flume events` prints, `--until` waits for, and `flume.api.events` yields; the "
            "guide is [its page](../events.md)."
        ),
        "",
    ]
    for title, said in stream.EVENT_GROUPS:
        lines += [
            f"## {title}",
            "",
            table(
                ("event", "when"),
                ((code(event.value), cell(stream.EVENT_MEANINGS[event])) for event in said),
            ),
        ]
    lines += [
        f"## `--json`, format {stream.EVENTS_FORMAT}",
        "",
        "One JSON object a line, flushed as it is printed:",
        "",
        fields(stream.EVENT_FIELDS),
    ]
    return "\n".join(lines)


# --- The test agent's script ----------------------------------------------------------------


def test_agent() -> str:
    """The test agent's script, from :mod:`flume.testing.agent`."""
    from flume.testing import agent

    def rows(keys: Iterable[agent.ScriptKey]) -> list[tuple[str, str, str, str]]:
        return [
            (
                code(key.name),
                cell(key.type),
                "required" if key.default is None else cell(key.default),
                cell(key.meaning),
            )
            for key in keys
        ]

    (said,) = agent.DEFAULT_TURN.steps
    assert isinstance(said, agent.Say)  # noqa: S101 (the default turn says one thing)
    lines = _generated("The test agent's script", "`flume/testing/agent.py`, which parses it")
    lines += [
        (
            "flume's test agent (`--agent test`) is a real terminal program that plays Claude Code "
            "where flume looks (its screen, its transcript, its live-session file), by a script: "
            "`flume launch --agent test --agent-arg=--script --agent-arg=FILE`. The script is TOML."
        ),
        "",
        "## How a turn is chosen",
        "",
        plain(agent.TURN_CHOICE),
        "",
        "## Where paths are found",
        "",
        plain(agent.RELATIVE_PATHS),
        "",
        "## The script's keys",
        "",
        table(("key", "type", "default", "meaning"), rows(agent.SCRIPT_KEYS)),
        "## A turn's keys (`[[turn]]`)",
        "",
        table(("key", "type", "default", "meaning"), rows(agent.TURN_KEYS)),
        "## Its steps",
        "",
        'Each step is a table of one key: `{say = "..."}`.',
        "",
        table(
            ("step", "takes", "what it does"),
            ((code(key.name), cell(key.type), cell(key.meaning)) for key in agent.STEP_KINDS),
        ),
        f"A prompt no turn is left for is answered {code(said.text)}.",
        "",
    ]
    return "\n".join(lines)


#: Each page's name (``docs/reference/<name>.md``) and what makes it.
PAGES: dict[str, Callable[[], str]] = {
    "commands": commands,
    "kind-file": kind_file,
    "board": board,
    "status": status,
    "events": events,
    "test-agent": test_agent,
}


def pages() -> dict[str, str]:
    """Every reference page's Markdown, by its name."""
    return {name: make() for name, make in PAGES.items()}
