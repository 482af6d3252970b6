"""The status table written out directly is, line for line, the one rich draws at that width."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flume.cli import statusview

_CELL = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30)
_ANY_CELL = st.text(max_size=40)
_WIDTH = st.none() | st.integers(min_value=20, max_value=240)
_COLUMNS = st.sampled_from([statusview.WIDE, statusview.NARROW])


def by_rich(
    columns: tuple[statusview.Column, ...], rows: list[list[str]], width: int | None
) -> list[str] | None:
    """The table as rich draws it ``width`` wide; None when it would have to be narrowed."""
    drawn = statusview.places_table(columns, rows)
    if width is not None and statusview.width_of(drawn) > width:
        return None
    return list(statusview.lines_of(drawn, width))


@st.composite
def tables(
    draw: st.DrawFn, cell: st.SearchStrategy[str], most: int
) -> tuple[tuple[statusview.Column, ...], list[list[str]]]:
    """The wide or the narrow columns, and up to ``most`` rows of ``cell``."""
    columns = draw(_COLUMNS)
    size = len(columns)
    return columns, draw(st.lists(st.lists(cell, min_size=size, max_size=size), max_size=most))


@given(tables(_CELL, 6), _WIDTH)
def test_plain_tables_match_rich(
    table: tuple[tuple[statusview.Column, ...], list[list[str]]], width: int | None
) -> None:
    """Printable ASCII cells, as places, kinds, stages and most paths are, at any width."""
    columns, rows = table
    assert statusview.table(columns, rows, width) == by_rich(columns, rows, width)


@given(tables(_ANY_CELL, 4), _WIDTH)
def test_any_table_matches_rich(
    table: tuple[tuple[statusview.Column, ...], list[list[str]]], width: int | None
) -> None:
    """Any text at all: what is not drawn directly is drawn by rich."""
    columns, rows = table
    assert statusview.table(columns, rows, width) == by_rich(columns, rows, width)


def test_the_cases_that_need_rich_match_it() -> None:
    """A path wider than the terminal, markup, an emoji code, a wide character, no rows."""
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
        for width in (None, 80, 200):
            expected = by_rich(statusview.WIDE, rows, width)
            assert statusview.table(statusview.WIDE, rows, width) == expected, (rows, width)


def test_a_plain_table_is_written_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is taken: a plain table that fits is not drawn by rich at all."""
    row = ["fix--typo", "fix", "code#1", "working", "working", "no", "none", "", "/r"]
    expected = by_rich(statusview.WIDE, [row], 200)

    def no_rich(*_args: object) -> object:
        raise AssertionError("drawn by rich")

    monkeypatch.setattr(statusview, "places_table", no_rich)
    drawn = statusview.table(statusview.WIDE, [row], 200)
    assert drawn == expected
    assert drawn == [
        "place      kind  stage   phase    agent    deliverable  submission  tasks  repository",
        "─" * 85,
        "fix--typo  fix   code#1  working  working  no           none               /r",
    ]


@given(_CELL | _ANY_CELL, _WIDTH)
def test_the_repository_heading_is_never_folded(repository: str, width: int | None) -> None:
    """Above each narrow table, its repository's line: whole if it fits, else its end, one line.

    A path is never folded onto a second line (a word broken); one too long keeps its end.
    """
    heading = f"{repository}:".rstrip()
    (line,) = statusview.heading_lines(repository, width)
    if width is None or statusview.cell_width(f"{repository}:") <= width:
        assert line == heading
    else:
        assert line.startswith("…")
        assert statusview.cell_width(line) <= width
        assert f"{repository}:".endswith(line[1:])


def test_a_plain_repository_heading_is_written_without_rich(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A path of plain characters is written directly, colon and all."""

    def no_rich(*_args: object) -> object:
        raise AssertionError("drawn by rich")

    monkeypatch.setattr(statusview, "places_table", no_rich)
    assert statusview.heading_lines("/home/me/repository", 80) == ["/home/me/repository:"]


def test_a_plain_table_too_wide_is_refused_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain table wider than the terminal is known to need narrowing without drawing it."""
    row = ["fix--typo", "fix", "code#1", "working", "working", "no", "none", "", "/r"]
    assert by_rich(statusview.WIDE, [row], 60) is None

    def no_rich(*_args: object) -> object:
        raise AssertionError("drawn by rich")

    monkeypatch.setattr(statusview, "places_table", no_rich)
    assert statusview.table(statusview.WIDE, [row], 60) is None
