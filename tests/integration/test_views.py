"""The view model status, watch and the monitor share, and the terminal's board at 80x24.

Places come as ``flume status --json`` gives them; the properties hold over generated places:
those that need a person come first, then those at work, then the rest; at 80 columns no word
is broken across lines and no heading is cut; on a 24-line board the places at work and those
that need a person stay on screen, the done ones folded.
"""

from __future__ import annotations

import io
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from flume import views
from flume.cli import board, statusview

_NAME = st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True)
#: (life, phase, short cause, paused cause, waits on the word, agent): one place's standing.
_STATES = [
    ("active", "working", None, None, False, "working"),
    ("active", "delivering", None, None, False, "unknown"),
    ("active", "lanes", None, None, False, "stopped"),
    ("active", "short", "needs", None, False, "stopped"),
    ("active", "paused", None, "gate-blocked", False, "stopped"),
    ("active", "waits-word", None, None, True, "stopped"),
    ("active", "working", None, None, False, "asking"),
    ("making", "queued", None, None, False, "stopped"),
    ("finished", "finished", None, None, False, "stopped"),
    ("dropped", "dropped", None, None, False, "stopped"),
    ("tidied", "tidied", None, None, False, "stopped"),
]


def view(name: str, state: tuple[Any, ...], kind: str = "fix", **more: Any) -> dict[str, Any]:
    """A place's status in plain data, as ``flume status --json`` prints it."""
    life, phase, short, paused, waits, agent = state
    made = {
        "place": f"{kind}--{name}",
        "name": name,
        "kind": kind,
        "repository": "/src/app",
        "path": f"/src/app/places/{kind}--{name}",
        "branch": f"{kind}/{name}",
        "base": "main",
        "mark": None,
        "life": life,
        "stage": "code",
        "attempt": 1,
        "sends": 1,
        "phase": phase,
        "agent": agent,
        "deliverable": "a new commit on the place's branch",
        "deliverable_exists": False,
        "submission": "none",
        "submission_note": "",
        "tasks": None,
        "validation": None,
        "short_cause": short,
        "needs": "the staging key" if short else None,
        "waits_on_caller": waits,
        "completed": [],
        "tells_held": 0,
        "updated_at": 1000.0,
    }
    if paused is not None:
        made.update(
            paused=paused,
            paused_words="no verdict was written",
            resolve=f"flume resume {kind}--{name}",
        )
    made.update(more)
    return made


@st.composite
def places(draw: st.DrawFn, most: int = 40) -> list[dict[str, Any]]:
    """Up to ``most`` places, each its own name, in any standing."""
    names = draw(st.lists(_NAME, min_size=1, max_size=most, unique=True))
    return [view(name, draw(st.sampled_from(_STATES))) for name in names]


@given(places())
def test_those_that_need_a_person_come_first_then_those_at_work(
    found: list[dict[str, Any]],
) -> None:
    """Needs-you, then active, then done; each standing in the order given."""
    shown = views.ordered(found)
    ranks = [views.ORDER.index(views.standing(each)) for each in shown]
    assert ranks == sorted(ranks)
    for standing in views.ORDER:
        assert [each for each in shown if views.standing(each) is standing] == [
            each for each in found if views.standing(each) is standing
        ]
    active = views.chosen(found, views.Which.ACTIVE)
    assert all(views.standing(each) is not views.Standing.DONE for each in active)
    assert len(views.chosen(found, views.Which.ALL)) == len(found)


@settings(max_examples=60)
@given(places())
def test_status_at_80_columns_breaks_no_word_and_cuts_no_heading(
    found: list[dict[str, Any]],
) -> None:
    """Every line fits 80 columns; every place's name is whole; the headings are whole words."""
    lines = list(statusview.status_table(found, [], width=80, now=2000.0))
    assert all(len(line) <= 80 for line in lines), lines
    words = {word for line in lines for word in line.split()}
    for each in found:
        assert each["place"] in words
    headings = [line.split() for line in lines if line.split()[:1] == ["place"]]
    for heading in headings:
        assert set(heading) <= {"place", "kind", "stage", "phase", "agent", "deliverable",
                                "submission", "tasks", "repository"}  # fmt: skip


def test_the_board_folds_the_done_places_and_keeps_the_live_ones_on_screen() -> None:
    """30 done and 3 at work on 24 lines: the 3 shown, the 30 folded into one line; --all not."""
    done = [view(f"old-{n}", _STATES[8]) for n in range(30)]
    live = [view(f"live-{n}", _STATES[0]) for n in range(3)]
    paused = [view("stuck", _STATES[4])]
    found = [*done, *live, *paused]
    lines = _lines(found, views.Which.FOLDED, height=24)
    assert len(lines) <= 24, lines
    assert lines[3].startswith("fix--stuck ")
    for each in (*live, *paused):
        assert any(line.startswith(f"{each['place']} ") for line in lines)
    assert not any(line.startswith("fix--old-") for line in lines)
    assert any(line.startswith("30 done (finished, dropped or tidied), folded") for line in lines)
    every = _lines(found, views.Which.ALL, height=24)
    assert sum(line.startswith("fix--old-") for line in every) == 30
    active = _lines(found, views.Which.ACTIVE, height=24)
    assert not any("fix--old-" in line or "folded" in line for line in active)


def test_a_short_board_is_not_folded() -> None:
    """Room enough on the screen: the done places are listed, after the live ones."""
    found = [view("old", _STATES[8]), view("live", _STATES[0])]
    lines = _lines(found, views.Which.FOLDED, height=24)
    starts = [line.split()[0] for line in lines[3:5]]
    assert starts == ["fix--live", "fix--old"]


def _lines(found: list[dict[str, Any]], which: views.Which, *, height: int) -> list[str]:
    """The board of ``found`` on an 80 x ``height`` terminal, as text lines."""
    console = Console(width=80, height=height, record=True, file=io.StringIO())
    drawn = board.drawn(found, heading="flume watch", width=80, height=height, which=which)
    console.print(drawn)
    return console.export_text().splitlines()


@settings(max_examples=60)
@given(places(most=60))
def test_the_board_at_80x24_keeps_the_places_at_work_on_screen(
    found: list[dict[str, Any]],
) -> None:
    """At most 24 lines of at most 80 columns; every place that needs you or works is shown.

    While they fit (20 of them): then the first 20, those needing you first; names whole.
    """
    lines = _lines(found, views.Which.FOLDED, height=24)
    assert len(lines) <= 24, lines
    assert all(len(line) <= 80 for line in lines), lines
    live = [
        each for each in views.ordered(found) if views.standing(each) is not views.Standing.DONE
    ]
    starts = {line.split()[0] for line in lines if line.split()}
    if len(live) <= 20:
        assert all(each["place"] in starts for each in live), (live, lines)
    else:
        assert all(each["place"] in starts for each in live[:19])
