"""The status table written out directly is, byte for byte, the one rich draws."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from rich import box
from rich.console import Console
from rich.table import Table

from flume.cli import statusview


def by_rich(rows: list[list[str]]) -> list[str]:
    """The table as ``flume status`` drew it with rich before it was written out directly."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for heading in statusview.HEADINGS[:-1]:
        table.add_column(heading, no_wrap=True)
    table.add_column(statusview.HEADINGS[-1], overflow="fold")
    for row in rows:
        table.add_row(*row)
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(table)
    return [line.rstrip() for line in console.export_text().splitlines() if line.strip()]


_CELL = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30)
_ANY_CELL = st.text(max_size=40)
_ROWS = st.lists(st.lists(_CELL, min_size=9, max_size=9), max_size=6)


@given(_ROWS)
def test_plain_tables_match_rich(rows: list[list[str]]) -> None:
    """Printable ASCII cells, as places, kinds, stages and most paths are."""
    assert statusview.table(rows) == by_rich(rows)


@given(st.lists(st.lists(_ANY_CELL, min_size=9, max_size=9), max_size=4))
def test_any_table_matches_rich(rows: list[list[str]]) -> None:
    """Any text at all: what is not drawn directly is drawn by rich."""
    assert statusview.table(rows) == by_rich(rows)


def test_the_cases_that_need_rich_match_it() -> None:
    """A path that must fold, markup, a wide character, and no rows at all."""
    row = ["fix--typo", "fix", "code#1", "working", "working", "no", "none", "", "/r"]
    cases = [
        [],
        [row],
        [[*row[:-1], "/home/" + "deep/" * 40 + "repository"]],
        [[*row[:-1], "/home/[bold]x[/bold]"]],
        [[*row[:-1], "/home/:smile:/r"]],
        [[*row[:-1], "/home/日本/r"]],
    ]
    for rows in cases:
        assert statusview.table(rows) == by_rich(rows), rows
