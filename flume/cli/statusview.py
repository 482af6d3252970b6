"""``flume status`` printed from its plain data: the form ``status --json`` prints.

The places come as the dicts the journal's converter makes of each place's status view
(docs/status.md), whether this process read the journals or the supervisor answered: so a status
the supervisor answers needs neither the core nor the converter here. What is shown of each
place, in which order, and what a person must read of it, is the view model's
(:mod:`flume.views`), which ``flume watch`` and the monitor render too.

The table fits the terminal (:func:`status_table`) by leaving columns out, never by folding a
cell: a word is never broken across lines and a heading never cut (:data:`LAYOUTS`, tried in
order until one fits). It is the one rich draws (:func:`places_table`); when every cell is plain
printable ASCII, it is written out directly, exactly as rich would, since rich takes longer to
draw 200 rows than the whole command may take. Anything else (wide or markup characters) is
drawn by rich itself.
"""

from __future__ import annotations

import io
import json
import re
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from flume import views

if TYPE_CHECKING:
    from rich.console import JustifyMethod, RenderableType
    from rich.table import Table
    from rich.text import Text

#: Wide enough for any row: output that is no terminal's is never wrapped or cut.
UNBOUNDED = 10_000
#: Cells drawn directly: printable ASCII, without rich's markup and emoji marks or its escape.
_PLAIN = re.compile(r"[ -~]*")
_NOT_PLAIN = re.compile(r"[\[\]:\\]")

View = Mapping[str, Any]


def status_json(document: Mapping[str, Any]) -> str:
    """``flume status --json``: format 2, its fields in :data:`STATUS_FIELDS`."""
    return json.dumps(document, ensure_ascii=False, indent=2)


#: What a person runs when the supervisor is not running (issue 25, 2.6).
SUPERVISOR_MEND = (
    "flume daemon start (flume daemon install has systemd keep it running, where systemd runs)"
)


def supervisor_json(*, running: bool) -> dict[str, Any]:
    """``flume status --json``'s ``supervisor``: whether it runs, and the command if it does not.

    Not running, no place is followed: what an agent does is unknown, and no timer, tell,
    landing or tidy moves until it runs again.
    """
    return {
        "running": running,
        "follows_places": running,
        "mend": None if running else SUPERVISOR_MEND,
    }


def supervisor_lines(
    views: Sequence[View], *, running: bool, width: int | None = None
) -> list[str]:
    """The lines under the table when the supervisor is not running and a place is in flight.

    A place landed, dropped or tidied needs no supervisor: with none in flight, nothing is said.
    Wrapped at ``width`` columns, as the table is fitted.
    """
    if running or not any(view["life"] in {"making", "active"} for view in views):
        return []
    said = (
        "supervisor: not running: no place is followed (its agent's state is unknown, and no "
        f"timer, tell or landing moves) until it runs: {SUPERVISOR_MEND}"
    )
    return list(wrapped([said], width, indent="  "))


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
            "blocked`, `budget`, `loop-max`, `stalled`, `merge-conflict`, `merge-failed`, "
            "`lane-dropped`, `finalize-failed`; `phase` is then `paused`; or `question`, an "
            "agent's question "
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
    (
        ("passes",),
        (
            "the gates a person passed (`flume pass`), each `key#attempt: their words`; absent "
            "when none"
        ),
    ),
    (
        ("kept",),
        (
            "what tidy kept of the place at its last look, each `path or branch: why` "
            "(uncommitted changes, commits its base lacks, ...); absent when nothing was kept"
        ),
    ),
    (
        ("unlanded",),
        (
            "a finished run without finalize whose branch holds commits of its own that its base "
            "does not hold: where its work is, and how to land it; absent otherwise (a lane or "
            "child is merged by its run)"
        ),
    ),
    (
        ("children_asking",),
        (
            "an orchestrate run's children whose question their lead has not answered, each "
            "`{lane, place, question, since}` (`since` in seconds since the epoch: how long it "
            "waits is now less that)"
        ),
    ),
    (
        ("caps",),
        (
            "each budget the run sets, `{name, spent, cap}`, named as `flume raise` raises it "
            "(`turns`, `tokens`, `wall_minutes`, `retries`, `turns_per_attempt`)"
        ),
    ),
    (
        ("question",),
        (
            "the question the place waits on a person's answer to, `{id, text, options}` (absent "
            "when none, or when its lead answers it)"
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


def _stage(view: View) -> str:
    return views.stage_cell(view)


def _phase(view: View) -> str:
    return views.phase_cell(view)


def _tasks(view: View) -> str:
    return views.tasks_cell(view)


def _deliverable(view: View) -> str:
    return views.deliverable_cell(view)


def cells(view: View) -> list[str]:
    """One place's row of the wide table."""
    return [_cell(key, view) for key in _WIDE_KEYS]


def narrow_cells(view: View) -> list[str]:
    """One place's row of the narrow table."""
    return [_cell(key, view) for key in _NARROW_KEYS]


#: What each cell key shows of a place (``age`` and ``last`` are the board's, given with it).
_CELLS: dict[str, Callable[[View], str]] = {
    "place": lambda view: str(view["place"]),
    "kind": lambda view: str(view["kind"]),
    "stage": views.stage_cell,
    "phase": views.phase_cell,
    "stage phase": lambda view: f"{views.stage_cell(view)} {views.phase_cell(view)}",
    "agent": lambda view: str(view["agent"]),
    "deliverable": views.deliverable_cell,
    "submission": lambda view: str(view["submission"]),
    "tasks": views.tasks_cell,
    "repository": lambda view: str(view["repository"]),
    "age": lambda view: str(view.get("age", "")),
    "last": lambda view: str(view.get("last", "")),
}
_WIDE_KEYS = ("place", "kind", "stage", "phase", "agent", "deliverable", "submission", "tasks",
              "repository")  # fmt: skip
_NARROW_KEYS = ("place", "stage phase", "agent", "deliverable", "submission", "tasks")


def _cell(key: str, view: View) -> str:
    return _CELLS[key](view)


class Layout(NamedTuple):
    """A table's columns, by cell key, and whether places are listed under their repository.

    ``stacked``: each place's name on a line of its own, the other columns on the next, set in;
    for a terminal too narrow for a name beside where it stands.
    """

    keys: tuple[str, ...]
    by_repository: bool = False
    stacked: bool = False

    @property
    def columns(self) -> tuple[Column, ...]:
        """The layout's columns: each headed by its key (``stage phase`` by ``stage``)."""
        return tuple(_COLUMNS[key] for key in self.keys)


_COLUMNS = {
    **{key: Column(key) for key in _CELLS},
    "place": Column("place", whole=False),
    "repository": Column("repository", whole=False),
    "stage phase": Column("stage"),
    "age": Column("age", justify="right"),
    "last": Column("last", justify="right"),
}


def _narrowing(first: tuple[str, ...], *, rest: tuple[str, ...] = ()) -> tuple[Layout, ...]:
    """The layouts from ``first`` (plus ``rest`` at the end), each leaving out a little more.

    The repository goes to a heading of its own, then the kind (the place's name holds it);
    stage and phase share a column; then the tasks, the deliverable and the submission go, in
    that order; last, each place's name stands on a line of its own above the rest: the place,
    where it stands and its agent are never left out.
    """
    steps = [
        (*first, "repository", *rest),
        (*first, *rest),
        (*(key for key in first if key != "kind"), *rest),
    ]
    keys = tuple(key for key in first if key != "kind")
    keys = tuple("stage phase" if key == "stage" else key for key in keys if key != "phase")
    for gone in ("", "tasks", "deliverable", "submission"):
        keys = tuple(key for key in keys if key != gone)
        steps.append((*keys, *rest))
    stacked = Layout(keys=(*keys, *rest), by_repository=True, stacked=True)
    return (
        *(Layout(keys=keys, by_repository=number > 0) for number, keys in enumerate(steps)),
        stacked,
    )


#: ``flume status``'s layouts, widest first: the first that fits the terminal is drawn.
LAYOUTS = _narrowing(("place", "kind", "stage", "phase", "agent", "deliverable", "submission",
                      "tasks"))  # fmt: skip
#: The wide layout's columns, and the narrow one's of earlier flumes.
WIDE = LAYOUTS[0].columns
NARROW = Layout(keys=_NARROW_KEYS).columns


#: How far a stacked layout sets a place's columns in under its name.
_SET_IN = "  "


def measured(layout: Layout, found: Sequence[View]) -> int:
    """How many columns ``layout`` takes for ``found``, nothing folded."""
    keys = layout.keys[1:] if layout.stacked else layout.keys
    widths = [cell_width(_COLUMNS[key].heading) for key in keys]
    for view in found:
        for number, key in enumerate(keys):
            widths[number] = max(widths[number], cell_width(_cell(key, view)))
    whole = sum(widths) + 2 * (len(widths) - 1)
    if not layout.stacked:
        return whole
    names = max((cell_width(_cell("place", view)) for view in found), default=0)
    return max(names, len(_SET_IN) + whole)


def fitting(layouts: Sequence[Layout], found: Sequence[View], width: int | None) -> Layout:
    """The first layout that fits ``width`` (None: unbounded), or the narrowest."""
    if width is None:
        return layouts[0]
    for layout in layouts:
        if measured(layout, found) <= width:
            return layout
    return layouts[-1]


def cell_width(text: str) -> int:
    """How many terminal columns ``text`` takes."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def status_table(
    found: Sequence[View],
    unreadable: Iterable[Sequence[str]],
    *,
    width: int | None = None,
    now: float | None = None,
    which: views.Which = views.Which.ALL,
) -> Iterator[str]:
    """``flume status`` for a person: one row a place, fitted to ``width`` columns.

    With no width (output to a file or a pipe) every row is one whole line, as wide as it needs.
    The places needing a person come first, then those at work, then the rest (``which``:
    :attr:`~flume.views.Which.ACTIVE` leaves the rest out). A terminal too narrow for the whole
    table gets one with fewer columns (:data:`LAYOUTS`): nothing is folded. Then what a person
    must read of each place (:func:`flume.views.note_lines`).
    """
    unreadable = list(unreadable)
    shown = views.chosen(found, which)
    if not found and not unreadable:
        yield "no places: launch one with flume launch"
        return
    if not shown and found:
        yield (
            f"no place needs you or is at work; {len(found)} done (flume status --all lists them)"
        )
    if shown:
        layout = fitting(LAYOUTS, shown, width)
        yield from layout_lines(layout, shown, width)
    yield from wrapped(views.every_note_line(shown, now), width)
    for journal, problem in unreadable:
        yield (
            f"unreadable journal {journal}: {problem}; mend it so it reads whole (or move it "
            "away): flume follows it again by itself"
        )


def wrapped(lines: Iterable[str], width: int | None, indent: str | None = None) -> Iterator[str]:
    """Each line wrapped at its spaces to ``width``, set in after its first: no word broken.

    Nor a command: the words of each ``flume ...`` or ``git ...`` a line names stay on one line
    (:func:`commands_glued`), so a person copies it whole, whatever the width (a command wider
    than the width is one line over it).
    """
    if width is None:
        yield from lines
        return
    for line in lines:
        if cell_width(line) <= width:
            yield line
            continue
        lead = indent
        if lead is None:
            lead = " " * min(len(line) - len(line.lstrip(" ")) + 4, max(0, width // 2))
        wrapped_lines = textwrap.wrap(
            commands_glued(line),
            width=width,
            subsequent_indent=lead,
            break_long_words=False,
            break_on_hyphens=False,
        )
        yield from (each.replace(_GLUE, " ") for each in wrapped_lines or [line])


#: What joins a command's words while its line is wrapped: no space textwrap breaks at.
_GLUE = "\ue000"
#: flume's commands that take a command of their own (``flume daemon start``).
_GROUPS = frozenset({"daemon", "fleet", "herdr", "inspect"})
#: What ends a command's last word, not part of it.
_CLOSING = ",;:.)"


def commands_glued(line: str) -> str:
    """``line`` with the words of each command it names joined by :data:`_GLUE`.

    A command starts at the word ``flume`` or ``git`` (after an opening parenthesis or a
    backquote, if any) and takes its command word (two for a group: ``daemon start``; for git
    ``-C PATH`` first), then each word that reads as an argument: an option, a quoted string (to
    its closing quote), a placeholder ``<...>``, a word holding a character no plain word does
    (``-`` ``/`` ``+`` ``.`` ``=`` ``@`` ``_`` ``:`` or a digit), or an option's value. The first
    plain word (``lets``, ``or``, ``then``) ends it, as does a word ending in ``,;:.)``.
    """
    words = line.split(" ")
    out: list[str] = []
    index = 0
    while index < len(words):
        end = _command_end(words, index)
        out.append(_GLUE.join(words[index:end]) if end > index + 1 else words[index])
        index = max(end, index + 1)
    return " ".join(out)


def _command_end(words: Sequence[str], start: int) -> int:
    """The index past the last word of the command that starts at ``start``; else ``start``."""
    index = _head_end(words, start)
    if index == start or words[index - 1][-1] in _CLOSING:
        return index
    quoted = False
    while index < len(words):
        word = words[index]
        bare = word.rstrip(_CLOSING + "`")
        if quoted:
            quoted = not bare.endswith(('"', "'"))
        elif bare[:1] in {'"', "'"}:
            quoted = len(bare) == 1 or not bare.endswith(bare[0])
        elif not (_ARGUMENT.search(bare) or _after_option(words[index - 1])):
            return index
        index += 1
        if not quoted and word != bare:
            return index
    return index


def _head_end(words: Sequence[str], start: int) -> int:
    """Past ``flume`` and its command word (two for a group), or ``git [-C PATH]`` and its."""
    program = words[start].lstrip("(`")
    index = start + 1
    if program == "git" and words[index : index + 1] == ["-C"]:
        index += 2
    if program not in {"flume", "git"} or index >= len(words) or not _WORD.fullmatch(words[index]):
        return start
    group = program == "flume" and words[index] in _GROUPS
    index += 1
    if group and index < len(words) and _WORD.fullmatch(words[index]):
        index += 1
    return index


#: A command word: lowercase letters and hyphens, maybe closing a sentence or a clause.
_WORD = re.compile(r"[a-z][a-z-]*[,;:.)`]?")
#: A word no plain word of prose is: it holds one of these.
_ARGUMENT = re.compile(r"^[-<]|[-/+.=@_:0-9<>]")


def _after_option(word: str) -> bool:
    """``word`` is an option that takes a value (``--step``): not ``--flag=value`` or ``-q``."""
    return word.startswith("--") and "=" not in word and word not in _FLAGS


#: Options that take no value: the word after them is not theirs.
_FLAGS = frozenset(
    {"--by-hand", "--agent", "--json", "--all", "--active", "--quiet", "--no-ff", "--abort"}
)


def layout_lines(layout: Layout, found: Sequence[View], width: int | None) -> Iterator[str]:
    """The places' table in ``layout``: under one heading a repository when it says so."""
    if not layout.by_repository:
        yield from _drawn(layout, found)
        return
    for repository in dict.fromkeys(view["repository"] for view in found):
        yield from heading_lines(repository, width)
        yield from _drawn(layout, [view for view in found if view["repository"] == repository])


def _drawn(layout: Layout, found: Sequence[View]) -> list[str]:
    """The table of ``found`` in ``layout``; stacked, each name above its columns, set in."""
    if not layout.stacked:
        rows = [[_cell(key, view) for key in layout.keys] for view in found]
        return _unnarrowed(layout.columns, rows)
    rows = [[_cell(key, view) for key in layout.keys[1:]] for view in found]
    heading, rule, *lines = _unnarrowed(layout.columns[1:], rows)
    drawn = ["place", _SET_IN + heading, _SET_IN + rule]
    for view, line in zip(found, lines, strict=True):
        drawn.extend([_cell("place", view), _SET_IN + line])
    return drawn


def _unnarrowed(columns: Sequence[Column], rows: list[list[str]]) -> list[str]:
    """The table as it is, never narrowed: directly when plain, else as rich draws it."""
    drawn = table(columns, rows, None)
    assert drawn is not None  # noqa: S101 (an unbounded table is always drawn)
    return drawn


def heading_lines(repository: str, width: int | None) -> list[str]:
    """The line naming ``repository`` above its narrow table: whole, or cut at its start.

    A path too long for the terminal keeps its end, where the repository's own name is, behind
    an ellipsis: never folded onto a second line, which would break a word.
    """
    heading = f"{repository}:"
    if width is None or cell_width(heading) <= width:
        return [heading.rstrip()]
    kept = heading
    while kept and cell_width(kept) > max(1, width - 1):
        kept = kept[1:]
    return ["…" + kept]


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


def waiting_lines(found: Sequence[View], now: float | None = None) -> Iterator[str]:
    """What a person must read of each place, under the table (:func:`flume.views.note_lines`)."""
    return views.every_note_line(found, now)
