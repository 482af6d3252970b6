"""Rendering for people and for programs: the simulate trace as text or JSON lines."""

from __future__ import annotations

import enum
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, cast

import attrs
from attrs import AttrsInstance
from rich import box
from rich.console import Console, JustifyMethod, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from flume import api
from flume.core.actions import Action, Report, SendPrompt, SendTell, StartAgent
from flume.core.launch import place_name
from flume.core.observations import Launched, Observation
from flume.core.place import Life, Place, Short
from flume.core.settings import MAX_SENDS
from flume.core.status import PlaceStatus, status
from flume.core.step import Decision, TraceRow
from flume.shell.events import PlaceEvent
from flume.shell.journal import FORMAT, converter
from flume.shell.tidying import Outcome

_LONG = 72


def _short(value: object) -> str:
    if attrs.has(type(value)):
        return _fields(cast("AttrsInstance", value), wrap=True)
    text = value.value if isinstance(value, enum.Enum) else value
    shown = json.dumps(text, ensure_ascii=False) if isinstance(text, str) else str(text)
    return shown if len(shown) <= _LONG else f"{shown[: _LONG - 12]}…({len(str(text))} chars)"


def _fields(record: AttrsInstance, *, wrap: bool = False) -> str:
    """``name=value`` for each field that differs from its default, long text cut short."""
    shown = ", ".join(
        f"{field.name}={_short(getattr(record, field.name))}"
        for field in attrs.fields(type(record))
        if field.name != "at" and getattr(record, field.name) != _default(field)
    )
    return f"{type(record).__name__}({shown})" if wrap else shown


def describe(record: Observation | Action) -> str:
    """One line naming a record and its fields, long text cut short."""
    name = type(record).__name__
    if isinstance(record, Launched):
        launch = record.launch
        waits = f", waits on {', '.join(sorted(launch.waits))}" if launch.waits else ""
        return (
            f"Launched {launch.kind}--{launch.name}: kind {record.kind.name}, base {launch.base}, "
            f"agent {launch.agent.agent.value}{waits}, brief {_short(launch.brief)}"
        )
    if isinstance(record, Report):
        return f"Report {record.event.value}: {record.text}"
    if isinstance(record, StartAgent):
        return (
            f"StartAgent stage {record.stage}#{record.attempt} in {record.path}, "
            f"agent {record.agent.agent.value}"
        )
    if isinstance(record, SendPrompt | SendTell):
        what = (
            f"stage {record.stage}#{record.attempt}"
            if isinstance(record, SendPrompt)
            else (f"tell {record.number}")
        )
        return (
            f"{name} {what}, send {record.send} of {MAX_SENDS}, marker {record.marker}, "
            f"{len(record.text)} chars"
        )
    return f"{name} {_fields(record)}".rstrip()


def _default(field: attrs.Attribute[Any]) -> object:
    """A field's default, or a value nothing equals when it has none."""
    default: Any = field.default
    if default is attrs.NOTHING:
        return object()
    factory = getattr(default, "factory", None)
    return factory() if callable(factory) else default


def _state_line(view: PlaceStatus) -> str:
    tasks = f" | tasks {view.tasks[0]}/{view.tasks[1]}" if view.tasks else ""
    short = f" ({view.short_cause})" if view.short_cause else ""
    return (
        f"place {view.life.value} | stage {view.stage}#{view.attempt} {view.phase}{short}"
        f" | sends {view.sends} | agent {view.agent.value}"
        f" | deliverable {'yes' if view.deliverable_exists else 'no'}"
        f" | submission {view.submission}{tasks}"
    )


@attrs.frozen(kw_only=True)
class Summary:
    """What a whole trace came to."""

    place: str | None
    life: str | None
    stage: str | None
    #: Prompt sends per stage attempt, e.g. {"code#1": 2}.
    sends: dict[str, int]
    refused: int
    never_began: bool


def summarize(rows: Iterable[TraceRow]) -> Summary:
    """Count sends per stage attempt and refusals, and take the final state."""
    sends: Counter[str] = Counter()
    refused = 0
    last: PlaceStatus | None = None
    never_began = False
    for row in rows:
        if row.refusal is not None:
            refused += 1
            continue
        assert row.decision is not None  # noqa: S101 (a row has a decision or a refusal)
        last = status(row.decision.place)
        for action in row.decision.actions:
            if isinstance(action, SendPrompt):
                sends[f"{action.stage}#{action.attempt}"] += 1
        never_began = never_began or last.short_cause == "never-began"
    return Summary(
        place=last.place if last else None,
        life=last.life.value if last else None,
        stage=f"{last.stage}#{last.attempt} {last.phase}" if last else None,
        sends=dict(sends),
        refused=refused,
        never_began=never_began,
    )


def trace_text(rows: list[TraceRow]) -> Iterator[str]:
    """The trace for a person: each observation, the state it led to, the actions."""
    previous = ""
    for row in rows:
        yield f"[{row.seen.at:8.1f}] {describe(row.seen)}"
        if row.refusal is not None:
            for problem in row.refusal.problems:
                yield f"           refused: {problem.render()}"
            continue
        assert row.decision is not None  # noqa: S101 (a row has a decision or a refusal)
        line = _state_line(status(row.decision.place))
        if line != previous:
            yield f"           {line}"
            previous = line
        for action in row.decision.actions:
            yield f"           -> {describe(action)}"
    summary = summarize(rows)
    sends = ", ".join(f"{stage}: {count}" for stage, count in summary.sends.items()) or "none"
    yield ""
    yield (
        f"end: {summary.place} {summary.life}, stage {summary.stage}; "
        f"prompt sends {sends}; refused commands {summary.refused}"
        + ("; the stage never began" if summary.never_began else "")
    )


def trace_json(rows: list[TraceRow], *, scenario: str | None = None) -> Iterator[str]:
    """The trace for a program: one JSON object a line, then a summary line naming ``scenario``."""
    for row in rows:
        record: dict[str, Any] = {
            "format": FORMAT,
            "row": "step",
            "at": row.seen.at,
            "seen": converter.unstructure(row.seen, Observation),
        }
        if row.refusal is not None:
            record["refused"] = [converter.unstructure(p) for p in row.refusal.problems]
        else:
            assert row.decision is not None  # noqa: S101 (a row has a decision or a refusal)
            record["status"] = converter.unstructure(status(row.decision.place))
            record["actions"] = [converter.unstructure(a, Action) for a in row.decision.actions]
        yield json.dumps(record, ensure_ascii=False)
    summary = converter.unstructure(summarize(rows))
    named = {"scenario": scenario} if scenario is not None else {}
    yield json.dumps({"format": FORMAT, "row": "summary", **named, **summary}, ensure_ascii=False)


def status_json(views: list[PlaceStatus], unreadable: list[tuple[str, str]]) -> str:
    """``flume status --json``: format 1, documented in docs/status.md."""
    document = {
        "format": FORMAT,
        "places": [converter.unstructure(view) for view in views],
        "unreadable": [{"journal": journal, "problem": problem} for journal, problem in unreadable],
    }
    return json.dumps(document, ensure_ascii=False, indent=2)


#: Wide enough for any row: output that is no terminal's is never wrapped or cut.
UNBOUNDED = 10_000


@attrs.frozen
class Column:
    """A column of a table of places."""

    heading: str
    #: A state or a number: its words are never cut (it wraps at spaces only, if at all).
    whole: bool = True
    justify: JustifyMethod = "left"


def places_table(columns: list[Column], rows: list[list[str | Text]]) -> Table:
    """A table of places: a whole column is at least as wide as its longest word, a name folds.

    When the table is wider than the terminal, rich narrows the columns that may fold (names,
    paths) and wraps whole columns at spaces: a state is never cut to ``wa…``.
    """
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    for number, column in enumerate(columns):
        cells = [column.heading, *(str(row[number]) for row in rows)]
        longest = max((len(word) for cell in cells for word in cell.split()), default=0)
        table.add_column(
            column.heading,
            justify=column.justify,
            overflow="fold",
            min_width=longest if column.whole else None,
            # A whole column of single words is never narrowed; one of several words wraps.
            no_wrap=column.whole and not any(" " in cell.strip() for cell in cells),
        )
    for row in rows:
        table.add_row(*row)
    return table


def width_of(table: RenderableType) -> int:
    """How many columns ``table`` takes when nothing narrows it."""
    console = Console(width=UNBOUNDED, file=io.StringIO())
    return Measurement.get(console, console.options, table).maximum


def lines_of(renderable: RenderableType, width: int | None) -> Iterator[str]:
    """``renderable`` as plain text lines, drawn ``width`` columns wide (None: unbounded)."""
    console = Console(width=width or UNBOUNDED, record=True, file=io.StringIO())
    console.print(renderable)
    yield from (line.rstrip() for line in console.export_text().splitlines() if line.strip())


def _stage(view: PlaceStatus) -> str:
    return f"{view.stage}#{view.attempt}"


def _phase(view: PlaceStatus) -> str:
    return view.phase + (f" ({view.short_cause})" if view.short_cause else "")


def _tasks(view: PlaceStatus) -> str:
    tasks = f"{view.tasks[0]}/{view.tasks[1]}" if view.tasks else ""
    return tasks + (" (not validated)" if view.validation == "skipped" else "")


def status_table(
    views: list[PlaceStatus], unreadable: list[tuple[str, str]], *, width: int | None = None
) -> Iterator[str]:
    """``flume status`` for a person: one row a place, fitted to ``width`` columns.

    With no width (output to a file or a pipe) every row is one whole line, as wide as it needs.
    A terminal too narrow for the whole table gets a narrower one: the kind goes (the place's
    name holds it), stage and phase share a column, and the places are listed under their
    repository instead of beside it.
    """
    if not views and not unreadable:
        yield "no places: launch one with flume launch"
        return
    wide = places_table(
        [
            Column("place", whole=False),
            Column("kind"),
            Column("stage"),
            Column("phase"),
            Column("agent"),
            Column("deliverable"),
            Column("submission"),
            Column("tasks"),
            Column("repository", whole=False),
        ],
        [
            [
                view.place,
                view.kind,
                _stage(view),
                _phase(view),
                view.agent.value,
                "yes" if view.deliverable_exists else "no",
                view.submission,
                _tasks(view),
                view.repository,
            ]
            for view in views
        ],
    )
    if views and (width is None or width_of(wide) <= width):
        yield from lines_of(wide, width)
    else:
        for repository in dict.fromkeys(view.repository for view in views):
            yield from lines_of(Text(f"{repository}:", overflow="fold"), width)
            narrow = places_table(
                [
                    Column("place", whole=False),
                    Column("stage"),
                    Column("agent"),
                    Column("deliverable"),
                    Column("submission"),
                    Column("tasks"),
                ],
                [
                    [
                        view.place,
                        f"{_stage(view)} {_phase(view)}",
                        view.agent.value,
                        "yes" if view.deliverable_exists else "no",
                        view.submission,
                        _tasks(view),
                    ]
                    for view in views
                    if view.repository == repository
                ],
            )
            yield from lines_of(narrow, width)
    yield from waiting_lines(views)
    for journal, problem in unreadable:
        yield (
            f"unreadable journal {journal}: {problem}; mend it so it reads whole (or move it "
            "away): flume follows it again by itself"
        )


#: How many lines of a stage's words ``flume status`` shows under its table.
_WORDS_SHOWN = 10


def waiting_lines(views: list[PlaceStatus]) -> Iterator[str]:
    """What waits on the caller, under the status table: words of short stages, stages on hold.

    A stage that stopped short shows its cause and its words (R8: "the words reach whoever
    waits on the stage"); a stage that waits on the caller's word names the command that
    releases it.
    """
    for view in views:
        if view.life not in {Life.MAKING, Life.ACTIVE}:
            continue
        where = f"{view.place} {view.stage}"
        if view.fault is not None:
            yield f"{where}: {view.fault}"
        if view.short_cause is not None:
            lines = (view.needs or "").strip().splitlines() or [""]
            yield f"{where}: stopped short ({view.short_cause}): {lines[0]}".rstrip()
            yield from (f"    {line}".rstrip() for line in lines[1:_WORDS_SHOWN])
            if len(lines) > _WORDS_SHOWN:
                yield (
                    f"    ... {len(lines) - _WORDS_SHOWN} more lines "
                    f"(flume status {view.place} --json shows them all)"
                )
        if view.waits_on_caller:
            yield f"{where}: waits on your word; flume proceed {view.place} releases it"
        if view.submission == "checks-failed" and view.submission_note:
            yield f"{where}: the submission's checks failed: {view.submission_note}"


def _name(place: Place) -> str:
    return place_name(place.launch.kind, place.launch.name)


def said_needs(decision: Decision) -> str:
    """What ``flume needs`` says to the agent that ran it (R8)."""
    phase = decision.place.stage.phase
    words = phase.words if isinstance(phase, Short) else ""
    return f"flume: {_name(decision.place)} stops short: {words}"


def submitted(decision: Decision) -> str:
    """What ``flume submit`` says to the agent that ran it."""
    place = decision.place
    return (
        f"flume: {_name(place)} submitted: {place.branch} is handed to the lander for "
        f"{place.launch.base}; if its checks fail, their output comes back to you"
    )


def launched_json(made: api.Launched) -> str:
    """``flume launch --json``: the place made, format 1."""
    return json.dumps(made.as_dict(), ensure_ascii=False, indent=2)


def event_text(event: PlaceEvent) -> str:
    """``flume events`` for a person: one line an event, its time local; long words cut."""
    when = datetime.fromtimestamp(event.at).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    stage = f"{event.stage}#{event.attempt}" if event.stage and event.attempt else event.stage
    lines = event.text.strip().splitlines() or [""]
    more = f" (+{len(lines) - 1} lines; --json has them all)" if len(lines) > 1 else ""
    return f"{when} {event.place} {stage or '-'} {event.event.value}: {lines[0]}{more}".rstrip()


def tidy_json(outcomes: list[Outcome], *, dry_run: bool) -> str:
    """``flume tidy --json``: format 1, documented in docs/places.md."""
    document = {
        "format": FORMAT,
        "dry_run": dry_run,
        "places": [converter.unstructure(outcome) for outcome in outcomes],
    }
    return json.dumps(document, ensure_ascii=False, indent=2)


def tidy_text(outcomes: list[Outcome], *, dry_run: bool) -> Iterator[str]:
    """``flume tidy`` for a person: per place, what went and what stayed, with why."""
    if not outcomes:
        yield "nothing to tidy"
        return
    for outcome in outcomes:
        would = "would remove" if dry_run and not outcome.earlier else "removed"
        state = f"{outcome.state} earlier" if outcome.earlier else outcome.state
        state = f"{state} (dry run)" if dry_run else state
        yield f"{outcome.place}: {state}   [{outcome.repository}]"
        for removed in outcome.removed:
            yield f"  {would} {removed}"
        for kept in outcome.kept:
            yield f"  kept {kept.what}: {kept.reason}"
        for failed in outcome.failed:
            yield f"  failed: {failed}"
