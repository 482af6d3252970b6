"""``flume status`` printed from its plain data: the form ``status --json`` prints.

The places come as the dicts the journal's converter makes of each place's status view
(docs/status.md), whether this process read the journals or the supervisor answered: so a status
the supervisor answers needs neither the core nor the converter here. The table fits the terminal
(:func:`status_table`) and is the one rich draws (:func:`places_table`); when every cell is plain
printable ASCII and the table fits unnarrowed, it is written out directly, exactly as rich would,
since rich takes longer to draw 200 rows than the whole command may take. Anything else (wide or
markup characters, a table rich must narrow) is drawn by rich itself.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from rich.console import JustifyMethod, RenderableType
    from rich.table import Table
    from rich.text import Text

#: Wide enough for any row: output that is no terminal's is never wrapped or cut.
UNBOUNDED = 10_000
#: The lives whose stages still run: the words under the table are for them.
_RUNNING = frozenset({"making", "active"})
#: How many lines of a stage's words ``flume status`` shows under its table.
WORDS_SHOWN = 10
#: Cells drawn directly: printable ASCII, without rich's markup and emoji marks or its escape.
_PLAIN = re.compile(r"[ -~]*")
_NOT_PLAIN = re.compile(r"[\[\]:\\]")

View = Mapping[str, Any]


def status_json(document: Mapping[str, Any]) -> str:
    """``flume status --json``: format 2, its fields in :data:`STATUS_FIELDS`."""
    return json.dumps(document, ensure_ascii=False, indent=2)


#: ``status --json``'s fields of a place, each row the fields and their meaning (Markdown).
STATUS_FIELDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("place",),
        "`<kind>--<name>`",
    ),
    (
        ("name", "kind", "repository", "path", "branch", "base", "mark"),
        "from the launch (`mark` may be null)",
    ),
    (
        ("life",),
        "`making`, `active`, `finished`, `dropped` or `tidied`",
    ),
    (
        ("stage", "attempt"),
        "the current stage and which attempt of it (retries count up)",
    ),
    (
        ("sends",),
        "how many times this attempt's prompt was sent (at most 2)",
    ),
    (
        ("phase",),
        (
            "`waits-word`, `queued`, `starting`, `delivering`, `working`, `delivered`, `short`; a "
            "workflow run's also `judging`, `paused`, `lanes` (its parallel's lanes run, each a "
            "place of its own) and `merging` (their branches are being merged into the run's); once"
            " the place is no longer active, its life"
        ),
    ),
    (
        ("agent",),
        "`working`, `waiting`, `asking` (a person), `stopped`, or `unknown`",
    ),
    (
        ("deliverable",),
        "the stage's deliverable in words",
    ),
    (
        ("deliverable_exists",),
        "whether it exists, made since the stage started (false for a stage not yet started)",
    ),
    (
        ("submission", "submission_note"),
        (
            "`none`, `submitted`, `checks-failed` (with why), `blocked` (the base repository's "
            "state keeps it from landing: why, the way out and git's words, one a line; flume tries"
            " again), `landed` (with where)"
        ),
    ),
    (
        ("tasks",),
        "`[ticked, total]` for a change, else null",
    ),
    (
        ("validation",),
        (
            "for a committed OpenSpec change: `valid` or `invalid` as the OpenSpec CLI said, or "
            "`skipped` when no CLI was there to validate it (flume then read the files itself); "
            "null before one is seen. The table shows `(not validated)` by the tasks"
        ),
    ),
    (
        ("short_cause", "needs"),
        (
            "why the stage stopped short (`needs`, `stopped`, `never-began`, `setup-failed`, "
            "`agent-exited`, `failed`, `worktree-gone`, `branch-gone`: see [When something goes "
            "wrong](../troubleshooting.md)) and its words, else null: for `needs`, "
            "the agent's own words; for the others, flume's (a failed setup's output, say)"
        ),
    ),
    (
        ("waits_on_caller",),
        "the stage waits on the caller's word (`flume proceed PLACE` releases it)",
    ),
    (
        ("completed",),
        "the stages done, in order",
    ),
    (
        ("tells_held",),
        "tells not yet confirmed in the transcript",
    ),
    (
        ("updated_at",),
        "seconds since the epoch of the last thing seen",
    ),
    (
        ("host",),
        (
            "present only for a place another host launched (another state folder, another user): "
            "that host's state folder; its supervisor carries the place, not this host's"
        ),
    ),
    (
        (
            "key",
            "paused",
            "asking",
            "paused_words",
            "resolve",
            "budgets",
            "turns_spent",
            "tokens_spent",
            "maxed",
            "progress",
            "pushed",
            "pr_url",
        ),
        (
            "a workflow run's alone, each present only when it says something (a fix's, a change's "
            "or any kind of stages without budgets has none of them, so a reader of format 1 reads "
            "those unchanged): `key` the attempt's place in the tree when it is not the stage's "
            "name (`review-loop@2/review`); `paused` the cause of a pause (`approval`, `gate-"
            "blocked`, `budget`, `loop-max`, `stalled`, `merge-conflict`, `lane-dropped`, "
            "`finalize-failed`; `phase` is then `paused`; or `question`, an agent's question "
            "waiting for `flume answer`, its agent live and `phase` its own; or `child-paused`, an "
            "orchestrate run whose child is paused or stopped short, named in `paused_words`, its "
            "lead live); `asking` an orchestrate child's open question, which its lead answers, "
            "`paused_words` its words, `resolve` the command that lets it go on; `budgets` the "
            "budgets the kind sets with what was spent of each, in words, `turns_spent` and "
            "`tokens_spent` the counts; `maxed` the loops that ran their `max` passes without done;"
            " `progress` the last progress an agent reported; `pushed` the head finalize's remote "
            "holds the run's branch at, `pr_url` the address the pull request command printed "
            "(empty if none). `phase` may also be `judging`: the agent's turn ended and its step's "
            "gate is being read, or `finalizing`: the body is done and finalize pushes, opens the "
            "pull request or lands"
        ),
    ),
    (
        ("tree",),
        (
            "a workflow run's alone: each named block of its kind, in the order it runs, as `{path,"
            " block, state, runs, passes, max, gate, lane}`: `path` its name under the loops and "
            "parallels around it (`review-loop/review`, `slices/slice-a`); `block` `step`, `loop`, "
            "`parallel`, `lane`, `orchestrate`, `child` (a child of an orchestrate block, with its "
            "`goal` and its last `news`) or `run` (a child run a lead composed); `state` `not run`,"
            " `done`, the phase word of the block the run is in (a loop running: `running`; a loop "
            "that ran out of passes: `max`), and for a lane `waiting`, `running`, `finished` or "
            "`ended`; `runs` a step's passed attempts, `passes`/`max` a loop's passes begun and its"
            " cap, `gate` a step's gate in words, `lane` a lane's place (`<kind>--<name>+<lane>`, "
            "itself a row of the status)"
        ),
    ),
    (
        ("transcript", "transcripts"),
        (
            "present once flume found an agent's transcript (absent before, and for a journal of a "
            "flume older than them): `transcript` is the current attempt's (its agent's file; null "
            "while that agent has written none), `transcripts` every attempt's found, in the order "
            "their agents started, each `{key, stage, attempt, agent, session, path}`: `key` the "
            "attempt's place in the tree (a step's name outside loops), `agent` the program it ran "
            "(`claude`, `codex`, `test`), `path` its agent's own file. `flume transcript` replays "
            "them ([its command](commands.md#command-flume-transcript)); tidy never removes one"
        ),
    ),
    (
        ("fault",),
        (
            "what keeps the host's supervisor from carrying the place on, and the way out: its "
            "journal cannot be written (the path and the system's words), or the supervisor cannot "
            "follow it (not yet read since a mend); absent when nothing does, or no supervisor "
            "answers"
        ),
    ),
)

#: What format 2 is to a reader of format 1, and when the number changes.
STATUS_FORMAT_WORDS = (
    "Format 2 is format 1 with every place's `transcript` and `transcripts` (present only once a "
    "transcript was found, so a place whose journal names none reads as before), and a workflow "
    "run's fields (`key`, `paused`, `paused_words`, `resolve`, `budgets`, `turns_spent`, "
    "`tokens_spent`, `maxed`, `tree`, `progress`, `pushed`, `pr_url`) and phases (`judging`, "
    "`paused`, `lanes`, `merging`, `finalizing`) added. A place of a kind of stages (a fix, a "
    "change, a question, or a declared kind of stages without budgets) carries format 1's fields "
    "alone besides those two, each meaning what it meant, so a reader of format 1 reads it "
    "unchanged; a reader that meets a phase it does not know should show it as it is. The format "
    "number changes when a field is removed or changes meaning, or a value a reader must know "
    "about is added."
)


class Column(NamedTuple):
    """A column of a table of places."""

    heading: str
    #: A state or a number: its words are never cut (it wraps at spaces only, if at all).
    whole: bool = True
    justify: JustifyMethod = "left"


#: ``flume status``'s columns, when the terminal holds them all.
WIDE = (
    Column("place", whole=False),
    Column("kind"),
    Column("stage"),
    Column("phase"),
    Column("agent"),
    Column("deliverable"),
    Column("submission"),
    Column("tasks"),
    Column("repository", whole=False),
)
#: Its columns when it does not: the kind goes, stage and phase share a column.
NARROW = (
    Column("place", whole=False),
    Column("stage"),
    Column("agent"),
    Column("deliverable"),
    Column("submission"),
    Column("tasks"),
)


def _stage(view: View) -> str:
    """The stage and its attempt; a workflow's attempt by its key (``review-loop@2/review#1``)."""
    return f"{view.get('key') or view['stage']}#{view['attempt']}"


def _phase(view: View) -> str:
    """The phase, and why a stage stopped short or a run paused (as ``flume watch`` shows it)."""
    cause = view["short_cause"] or view.get("paused")
    return str(view["phase"]) + (f" ({cause})" if cause else "")


def _tasks(view: View) -> str:
    tasks = view["tasks"]
    return (f"{tasks[0]}/{tasks[1]}" if tasks else "") + (
        " (not validated)" if view["validation"] == "skipped" else ""
    )


def _deliverable(view: View) -> str:
    return "yes" if view["deliverable_exists"] else "no"


def cells(view: View) -> list[str]:
    """One place's row of the wide table."""
    return [
        view["place"],
        view["kind"],
        _stage(view),
        _phase(view),
        view["agent"],
        _deliverable(view),
        view["submission"],
        _tasks(view),
        view["repository"],
    ]


def narrow_cells(view: View) -> list[str]:
    """One place's row of the narrow table."""
    return [
        view["place"],
        f"{_stage(view)} {_phase(view)}",
        view["agent"],
        _deliverable(view),
        view["submission"],
        _tasks(view),
    ]


def status_table(
    views: Sequence[View], unreadable: Iterable[Sequence[str]], *, width: int | None = None
) -> Iterator[str]:
    """``flume status`` for a person: one row a place, fitted to ``width`` columns.

    With no width (output to a file or a pipe) every row is one whole line, as wide as it needs.
    A terminal too narrow for the whole table gets a narrower one: the kind goes (the place's
    name holds it), stage and phase share a column, and the places are listed under their
    repository instead of beside it. Then what waits on the caller.
    """
    unreadable = list(unreadable)
    if not views and not unreadable:
        yield "no places: launch one with flume launch"
        return
    wide = table(WIDE, [cells(view) for view in views], width)
    if views and wide is not None:
        yield from wide
    else:
        for repository in dict.fromkeys(view["repository"] for view in views):
            yield from heading_lines(repository, width)
            rows = [narrow_cells(view) for view in views if view["repository"] == repository]
            yield from table(NARROW, rows, width) or lines_of(places_table(NARROW, rows), width)
    yield from waiting_lines(views)
    for view in views:
        if view.get("host") is not None:
            yield (
                f"{view['place']}: host: {view['host']} (another host launched it: that host's "
                "supervisor carries it, and its flume status shows it whole)"
            )
    for journal, problem in unreadable:
        yield (
            f"unreadable journal {journal}: {problem}; mend it so it reads whole (or move it "
            "away): flume follows it again by itself"
        )


def heading_lines(repository: str, width: int | None) -> list[str]:
    """The line naming ``repository`` above its narrow table, folded as rich folds it."""
    heading = f"{repository}:"
    # One colon makes no emoji code: the repository's own characters decide.
    if _plain(repository) and len(heading) <= (width or UNBOUNDED) and heading.strip() != ":":
        return [heading.rstrip()]
    return list(lines_of(_folding(heading), width))


def _plain(cell: str) -> bool:
    """Whether rich draws ``cell`` as its characters, one column each."""
    return bool(_PLAIN.fullmatch(cell)) and not _NOT_PLAIN.search(cell)


def table(columns: Sequence[Column], rows: list[list[str]], width: int | None) -> list[str] | None:
    """The table's lines as rich draws them ``width`` columns wide; None if it must be narrowed.

    Written out directly when every cell is plain (:func:`_plain`): each column as wide as its
    widest cell, two spaces between columns, a rule under the headings; lines right-trimmed,
    blank ones left out. Otherwise drawn by rich.
    """
    headings = [column.heading for column in columns]
    widths = [len(heading) for heading in headings]
    for row in rows:
        for column, cell in enumerate(row):
            widths[column] = max(widths[column], len(cell))
    whole = sum(widths) + 2 * (len(widths) - 1)
    plain = all(_plain(cell) for row in rows for cell in row)
    if plain and width is not None and whole > width:
        return None  # as wide as rich measures it: rich would narrow it
    if not plain or whole > UNBOUNDED:
        by_rich = places_table(columns, rows)
        if width is not None and width_of(by_rich) > width:
            return None
        return list(lines_of(by_rich, width))

    def line(row: Sequence[str]) -> str:
        padded = (
            cell.rjust(size) if column.justify == "right" else cell.ljust(size)
            for cell, size, column in zip(row, widths, columns, strict=True)
        )
        return "  ".join(padded).rstrip()

    drawn = [line(headings), "─" * whole, *(line(row) for row in rows)]
    return [each for each in drawn if each.strip()]


def places_table(columns: Sequence[Column], rows: Sequence[Sequence[str | Text]]) -> Table:
    """A table of places: a whole column is at least as wide as its longest word, a name folds.

    When the table is wider than the terminal, rich narrows the columns that may fold (names,
    paths) and wraps whole columns at spaces: a state is never cut to ``wa…``.
    """
    from rich import box
    from rich.table import Table

    drawn = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    for number, column in enumerate(columns):
        texts = [column.heading, *(str(row[number]) for row in rows)]
        longest = max((len(word) for text in texts for word in text.split()), default=0)
        drawn.add_column(
            column.heading,
            justify=column.justify,
            overflow="fold",
            min_width=longest if column.whole else None,
            # A whole column of single words is never narrowed; one of several words wraps.
            no_wrap=column.whole and not any(" " in text.strip() for text in texts),
        )
    for row in rows:
        drawn.add_row(*row)
    return drawn


def _folding(text: str) -> Text:
    from rich.text import Text

    return Text(text, overflow="fold")


def width_of(renderable: RenderableType) -> int:
    """How many columns ``renderable`` takes when nothing narrows it."""
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=UNBOUNDED, file=io.StringIO())
    return Measurement.get(console, console.options, renderable).maximum


def lines_of(renderable: RenderableType, width: int | None) -> Iterator[str]:
    """``renderable`` as plain text lines, drawn ``width`` columns wide (None: unbounded)."""
    from rich.console import Console

    console = Console(width=width or UNBOUNDED, record=True, file=io.StringIO())
    console.print(renderable)
    yield from (line.rstrip() for line in console.export_text().splitlines() if line.strip())


def waiting_lines(views: Sequence[View]) -> Iterator[str]:
    """What waits on the caller, under the status table: words of short stages, stages on hold.

    A stage that stopped short shows its cause and its words (R8: "the words reach whoever
    waits on the stage"); a stage that waits on the caller's word names the command that
    releases it; a paused workflow run names its cause, its words and the command that lets it
    go on, and a workflow's budgets and the loops that ran out of passes are said.
    """
    for view in views:
        if view["life"] not in _RUNNING:
            continue
        where = f"{view['place']} {view.get('key') or view['stage']}"
        if view.get("fault") is not None:
            yield f"{where}: {view['fault']}"
        if view["short_cause"] is not None:
            lines = (view["needs"] or "").strip().splitlines() or [""]
            yield f"{where}: stopped short ({view['short_cause']}): {lines[0]}".rstrip()
            yield from (f"    {line}".rstrip() for line in lines[1:WORDS_SHOWN])
            if len(lines) > WORDS_SHOWN:
                yield (
                    f"    ... {len(lines) - WORDS_SHOWN} more lines "
                    f"(flume status {view['place']} --json shows them all)"
                )
        if view["waits_on_caller"]:
            yield f"{where}: waits on your word; flume proceed {view['place']} releases it"
        yield from _workflow_lines(view, where)
        if view["submission"] == "checks-failed" and view["submission_note"]:
            yield f"{where}: the submission's checks failed: {view['submission_note']}"
        if view["submission"] == "blocked" and view["submission_note"]:
            # The base repository's state, not the branch: the reason, the way out, git's words.
            lines = view["submission_note"].strip().splitlines()
            yield f"{where}: the landing waits, tried again by flume: {lines[0]}"
            yield from (f"    {line}".rstrip() for line in lines[1:WORDS_SHOWN])


def _workflow_lines(view: View, where: str) -> Iterator[str]:
    """A workflow run's pause, budgets and loops at their max (fields a linear place lacks)."""
    if view.get("paused") is not None:
        lines = (view.get("paused_words") or "").strip().splitlines() or [""]
        yield f"{where}: paused ({view['paused']}): {lines[0]}".rstrip()
        yield from (f"    {line}".rstrip() for line in lines[1:WORDS_SHOWN])
        if len(lines) > WORDS_SHOWN:
            yield (
                f"    ... {len(lines) - WORDS_SHOWN} more lines "
                f"(flume status {view['place']} --json shows them all)"
            )
        yield f"{where}: {view['resolve']} lets it go on"
    if view.get("asking"):
        yield f"{where}: asks its lead {view['asking']}"
    if view.get("budgets"):
        yield f"{view['place']}: budgets: {view['budgets']}"
    if view.get("maxed"):
        loops = ", ".join(view["maxed"])
        yield f"{view['place']}: ran out of passes without done: {loops}"
