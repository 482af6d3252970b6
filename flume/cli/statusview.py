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
    """``flume status --json``: format 2, documented in docs/status.md."""
    return json.dumps(document, ensure_ascii=False, indent=2)


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


def wrapped(lines: Iterable[str], width: int | None) -> Iterator[str]:
    """Each line wrapped at its spaces to ``width``, set in after its first: no word broken."""
    if width is None:
        yield from lines
        return
    import textwrap

    for line in lines:
        if cell_width(line) <= width:
            yield line
            continue
        lead = " " * min(len(line) - len(line.lstrip(" ")) + 4, max(0, width // 2))
        yield from textwrap.wrap(
            line,
            width=width,
            subsequent_indent=lead,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [line]


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
