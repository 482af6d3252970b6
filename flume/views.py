"""The view model ``flume status``, ``flume watch`` and the monitor render: one, so they agree.

Each place comes as its status in plain data, the form ``flume status --json`` prints (format 2,
docs/status.md), whether a supervisor answered or the journals were read here; nothing here
decides a rule or reads a journal, and it imports nothing but the standard library, so that a
status answered by the supervisor needs no more than this to be printed (bench/cli.py).

What a person sees, in order:

- each place's **standing**: it needs a person (a pause, a stage stopped short, a stage waiting
  on the caller's word, an agent asking a person, a question for the caller, a journal the
  supervisor cannot follow, a finished run whose work is not landed), it is at work (being made,
  or running), or it is done (finished, dropped, tidied): places are listed in that order, each
  standing keeping the order it was given in;
- each place's **cells**: its stage by key and attempt, its phase with the cause of a stop or a
  pause, its agent, whether its deliverable exists, its submission, its tasks;
- each place's **notes**: what a person must read of it, each with the command that applies
  (a pause's words and its way out, a stop's words, what waits on the caller's word, a question,
  budgets spent of their caps, loops out of passes, checks that failed, a landing that waits,
  what tidy kept and why, work not landed and how to land it, a child asking its lead and for
  how long, the gates a person passed, another host carrying it).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

View = Mapping[str, Any]

#: The lives whose stages still run: a stage's own notes are for them.
RUNNING = frozenset({"making", "active"})
#: How many lines of a stage's words a note carries (``--json`` has them all).
WORDS_SHOWN = 10
_MINUTE, _HOUR, _DAY = 60, 3600, 86400


class Standing(enum.StrEnum):
    """Where a place stands for a person: what the board lists first."""

    NEEDS_YOU = "needs-you"  #: it waits on a person: a pause, a stop, a word, a question
    ACTIVE = "active"  #: it is being made, or its stages run
    DONE = "done"  #: finished, dropped or tidied: nothing more runs


#: The order standings are listed in.
ORDER = (Standing.NEEDS_YOU, Standing.ACTIVE, Standing.DONE)


class Which(enum.StrEnum):
    """Which places a list shows (``--active``, ``--all``), as ``gh run list --status`` narrows."""

    ALL = "all"  #: every place
    ACTIVE = "active"  #: those that need a person or are at work
    FOLDED = "folded"  #: every place, the done ones folded into one line when there are many


class Note(NamedTuple):
    """What a person must read of a place: its kind, its words, and the command that applies.

    ``kind``: ``fault``, ``short``, ``waits``, ``paused``, ``question``, ``asking``,
    ``person-asking``, ``child-asking``, ``budgets``, ``maxed``, ``checks``, ``blocked``,
    ``kept``, ``unlanded``, ``passed``, ``progress`` or ``host``. ``text``: its first line;
    ``more``: the lines after it, at most :data:`WORDS_SHOWN` in all, and ``hidden`` how many
    more there are. ``command``: the one command that applies ("" when none does).
    """

    kind: str
    text: str
    command: str = ""
    more: tuple[str, ...] = ()
    hidden: int = 0


def standing(view: View) -> Standing:
    """Where the place stands for a person."""
    life = view["life"]
    if life not in RUNNING:
        return Standing.NEEDS_YOU if view.get("unlanded") else Standing.DONE
    if (
        view.get("fault")
        or view["short_cause"] is not None
        or view["waits_on_caller"]
        or view.get("paused") is not None
        or view["agent"] == "asking"
    ):
        return Standing.NEEDS_YOU
    return Standing.ACTIVE


def ordered(views: Iterable[View]) -> list[View]:
    """The places, those needing a person first, then those at work, then the rest."""
    found = list(views)
    rank = {each: number for number, each in enumerate(ORDER)}
    return sorted(found, key=lambda view: rank[standing(view)])


def chosen(views: Iterable[View], which: Which) -> list[View]:
    """The places ``which`` shows, in :func:`ordered` order (folding is the renderer's)."""
    found = ordered(views)
    if which is Which.ACTIVE:
        return [view for view in found if standing(view) is not Standing.DONE]
    return found


def stage_cell(view: View) -> str:
    """The stage and its attempt; a workflow's attempt by its key (``review-loop@2/review#1``)."""
    return f"{view.get('key') or view['stage']}#{view['attempt']}"


def phase_cell(view: View) -> str:
    """The phase, with why a stage stopped short or a run paused: ``paused (gate-blocked)``."""
    cause = view["short_cause"] or view.get("paused")
    return str(view["phase"]) + (f" ({cause})" if cause else "")


def deliverable_cell(view: View) -> str:
    """Whether the stage's deliverable exists: yes or no."""
    return "yes" if view["deliverable_exists"] else "no"


def tasks_cell(view: View) -> str:
    """A change's tasks ticked of its total, and whether its CLI could validate it."""
    tasks = view["tasks"]
    return (f"{tasks[0]}/{tasks[1]}" if tasks else "") + (
        " (not validated)" if view["validation"] == "skipped" else ""
    )


def duration(seconds: float) -> str:
    """Seconds in one short word: 42s, 5m, 3h, 2d."""
    seconds = max(0.0, seconds)
    if seconds < _MINUTE:
        return f"{int(seconds)}s"
    if seconds < _HOUR:
        return f"{int(seconds // _MINUTE)}m"
    if seconds < _DAY:
        return f"{int(seconds // _HOUR)}h"
    return f"{int(seconds // _DAY)}d"


def _lines(words: str | None) -> tuple[str, tuple[str, ...], int]:
    """Words as their first line, the next lines shown, and how many more are hidden."""
    lines = (words or "").strip().splitlines() or [""]
    return lines[0], tuple(lines[1:WORDS_SHOWN]), max(0, len(lines) - WORDS_SHOWN)


def notes(view: View, now: float | None = None) -> list[Note]:
    """What a person must read of the place, in the order it matters; ``now`` for how long."""
    found: list[Note] = []
    if view["life"] in RUNNING:
        found.extend(_stage_notes(view, now))
    found.extend(Note("kept", each) for each in view.get("kept") or ())
    if view.get("unlanded"):
        found.append(Note("unlanded", view["unlanded"]))
    found.extend(
        Note("passed", f"a person passed the gate of {each}") for each in view.get("passes") or ()
    )
    if view.get("host") is not None:
        found.append(
            Note(
                "host",
                f"host: {view['host']} (another host launched it: that host's supervisor "
                "carries it, and its flume status shows it whole)",
            )
        )
    return found


def _stage_notes(view: View, now: float | None) -> Iterator[Note]:  # noqa: C901 (one a state)
    """The notes of a place whose stages run: what waits on a person first."""
    place = view["place"]
    if view.get("fault") is not None:
        yield Note("fault", view["fault"])
    if view["short_cause"] is not None:
        first, more, hidden = _lines(view["needs"])
        yield Note(
            "short",
            f"stopped short ({view['short_cause']}): {first}".rstrip(),
            f'flume retry {place} --words "..."',
            more,
            hidden,
        )
    if view["waits_on_caller"]:
        yield Note("waits", "waits on your word", f"flume proceed {place}")
    if view.get("paused") is not None:
        first, more, hidden = _lines(view.get("paused_words"))
        kind = "question" if view["paused"] == "question" else "paused"
        yield Note(
            kind,
            f"paused ({view['paused']}): {first}".rstrip(),
            view.get("resolve") or "",
            more,
            hidden,
        )
    if view["agent"] == "asking":
        yield Note(
            "person-asking",
            "its agent asks a person a question in its pane",
            f"flume attach {place}",
        )
    if view.get("asking"):
        yield Note("asking", f"asks its lead {view['asking']}")
    for child in view.get("children_asking") or ():
        since = child["since"]
        waited = f" for {duration(now - since)}" if now is not None else ""
        question = child["question"].partition(". Answer it: ")[0]
        yield Note(
            "child-asking",
            f"its child {child['lane']} ({child['place']}) waits on its lead's answer{waited}: "
            f"{question}",
        )
    if view.get("budgets"):
        yield Note("budgets", f"budgets: {view['budgets']}")
    if view.get("maxed"):
        yield Note("maxed", f"ran out of passes without done: {', '.join(view['maxed'])}")
    if view["submission"] == "checks-failed" and view["submission_note"]:
        yield Note("checks", f"the submission's checks failed: {view['submission_note']}")
    if view["submission"] == "blocked" and view["submission_note"]:
        first, more, _hidden = _lines(view["submission_note"])
        yield Note("blocked", f"the landing waits, tried again by flume: {first}", more=more)
    if view.get("progress"):
        yield Note("progress", f"progress: {view['progress']}")


def note_lines(view: View, now: float | None = None) -> Iterator[str]:
    """The notes of the place as ``flume status`` prints them under its table, one a line.

    A stage's note is said of the place and its stage (``fix--typo code: stopped short``), a
    place's (budgets, what was kept) of the place alone; a pause's way out on a line of its own.
    """
    place = view["place"]
    where = f"{place} {view.get('key') or view['stage']}"
    for note in notes(view, now):
        said_of = where if note.kind in _OF_THE_STAGE else place
        if note.kind == "waits":
            yield f"{where}: waits on your word; {note.command} releases it"
            continue
        yield f"{said_of}: {note.text}"
        yield from (f"    {line}".rstrip() for line in note.more)
        if note.hidden:
            yield (f"    ... {note.hidden} more lines (flume status {place} --json shows them all)")
        if note.kind in {"paused", "question"}:
            yield f"{where}: {note.command} lets it go on"


#: The notes said of the place and its stage; the others, of the place alone.
_OF_THE_STAGE = frozenset(
    {
        "fault",
        "short",
        "waits",
        "paused",
        "question",
        "person-asking",
        "asking",
        "checks",
        "blocked",
        "progress",
    }
)


def every_note_line(views: Sequence[View], now: float | None = None) -> Iterator[str]:
    """The notes of every place, in the order the places are given."""
    for view in views:
        yield from note_lines(view, now)
