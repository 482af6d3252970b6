"""``flume status`` printed from its plain data: the form ``status --json`` prints.

The places come as the dicts the journal's converter makes of each place's status view
(docs/status.md), whether this process read the journals or the supervisor answered: so a status
the supervisor answers needs neither the core nor the converter here. The table is the one rich
draws (``box.SIMPLE_HEAD``, no outer padding, 200 columns); when every cell is plain printable
ASCII and the table fits, it is written out directly, as rich would, since rich takes longer to
draw 200 rows than the whole command may take. Anything else (wide or markup characters, a table
that must fold) is drawn by rich itself.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

#: The width the table is drawn at.
WIDTH = 200
HEADINGS = (
    "place",
    "kind",
    "stage",
    "phase",
    "agent",
    "deliverable",
    "submission",
    "tasks",
    "repository",
)
#: The lives whose stages still run: the words under the table are for them.
_RUNNING = frozenset({"making", "active"})
#: How many lines of a stage's words ``flume status`` shows under its table.
WORDS_SHOWN = 10
#: Cells drawn directly: printable ASCII, without rich's markup and emoji marks or its escape.
_PLAIN = re.compile(r"[ -~]*")
_NOT_PLAIN = re.compile(r"[\[\]:\\]")

View = Mapping[str, Any]


def status_json(document: Mapping[str, Any]) -> str:
    """``flume status --json``: format 1, documented in docs/status.md."""
    return json.dumps(document, ensure_ascii=False, indent=2)


def cells(view: View) -> list[str]:
    """One place's row of the table."""
    tasks = view["tasks"]
    return [
        view["place"],
        view["kind"],
        f"{view['stage']}#{view['attempt']}",
        view["phase"] + (f" ({view['short_cause']})" if view["short_cause"] else ""),
        view["agent"],
        "yes" if view["deliverable_exists"] else "no",
        view["submission"],
        (f"{tasks[0]}/{tasks[1]}" if tasks else "")
        + (" (not validated)" if view["validation"] == "skipped" else ""),
        view["repository"],
    ]


def status_table(views: Sequence[View], unreadable: Iterable[Sequence[str]]) -> Iterator[str]:
    """``flume status`` for a person: one row a place, then what waits on the caller."""
    unreadable = list(unreadable)
    if not views and not unreadable:
        yield "no places: launch one with flume launch"
        return
    yield from table([cells(view) for view in views])
    yield from waiting_lines(views)
    for journal, problem in unreadable:
        yield f"unreadable journal {journal}: {problem}"


def table(rows: list[list[str]]) -> list[str]:
    """The table's lines, right-trimmed, blank ones left out."""
    widths = [len(heading) for heading in HEADINGS]
    for row in rows:
        for column, cell in enumerate(row):
            widths[column] = max(widths[column], len(cell))
    plain = all(
        _PLAIN.fullmatch(cell) and not _NOT_PLAIN.search(cell) for row in rows for cell in row
    )
    # Two edges, and a space each side of every divider between columns.
    if not plain or sum(widths) + 3 * (len(widths) - 1) + 2 > WIDTH:
        return _drawn_by_rich(rows)

    def line(row: Sequence[str]) -> str:
        return (
            " " + "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()

    rule = " " + "─" * (sum(widths) + 3 * (len(widths) - 1))
    drawn = [line(HEADINGS), rule, *(line(row) for row in rows)]
    return [each for each in drawn if each]


def _drawn_by_rich(rows: list[list[str]]) -> list[str]:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    drawn = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for heading in HEADINGS[:-1]:
        drawn.add_column(heading, no_wrap=True)
    drawn.add_column(HEADINGS[-1], overflow="fold")
    for row in rows:
        drawn.add_row(*row)
    console = Console(width=WIDTH, record=True, file=io.StringIO())
    console.print(drawn)
    return [line.rstrip() for line in console.export_text().splitlines() if line.strip()]


def waiting_lines(views: Sequence[View]) -> Iterator[str]:
    """What waits on the caller, under the status table: words of short stages, stages on hold.

    A stage that stopped short shows its cause and its words (R8: "the words reach whoever
    waits on the stage"); a stage that waits on the caller's word names the command that
    releases it.
    """
    for view in views:
        if view["life"] not in _RUNNING:
            continue
        where = f"{view['place']} {view['stage']}"
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
        if view["submission"] == "checks-failed" and view["submission_note"]:
            yield f"{where}: the submission's checks failed: {view['submission_note']}"
