"""Rendering for people and for programs: the simulate trace as text or JSON lines."""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import attrs
from attrs import AttrsInstance

from flume.cli import statusview
from flume.core.actions import ACTION_TYPES, Action, Report, SendPrompt, SendTell, StartAgent
from flume.core.errors import Problem
from flume.core.observations import Launched, Observation
from flume.core.settings import MAX_SENDS
from flume.core.status import PlaceStatus, status
from flume.core.step import TraceRow
from flume.core.workflow.versions import Decided
from flume.shell.declared.scenario import Restarted
from flume.shell.host import STATUS_FORMAT
from flume.shell.store.codec import FORMAT, codec

if TYPE_CHECKING:
    from flume.api_records import Versioned
    from flume.shell.commands.tidying import TidyOutcome
    from flume.shell.commands.transcripts import AttemptChat
    from flume.shell.store.events import PlaceEvent

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
    cause = view.short_cause or view.paused
    short = f" ({cause})" if cause else ""
    return (
        f"place {view.life.value} | stage {view.key or view.stage}#{view.attempt} "
        f"{view.phase.value}{short}"
        f" | sends {view.sends} | agent {view.agent.value}"
        f" | deliverable {'yes' if view.deliverable_exists else 'no'}"
        f" | submission {view.submission.value}{tasks}"
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


def summarize(rows: Iterable[TraceRow | Restarted]) -> Summary:
    """Count sends per stage attempt and refusals, and take the final state."""
    sends: Counter[str] = Counter()
    refused = 0
    last: PlaceStatus | None = None
    never_began = False
    for row in rows:
        if isinstance(row, Restarted):
            continue
        if row.refusal is not None:
            refused += 1
            continue
        assert row.decision is not None  # noqa: S101 (a row has a decision or a refusal)
        last = status(row.decision.place)
        for action in row.decision.actions:
            if isinstance(action, SendPrompt):
                # The marker names the attempt's key (flume:<place>:<key>:<attempt>): a step
                # run in two passes of a loop counts its sends apart.
                sends[f"{action.marker.split(':')[-2]}#{action.attempt}"] += 1
        never_began = never_began or last.short_cause == "never-began"
    return Summary(
        place=last.place if last else None,
        life=last.life.value if last else None,
        stage=f"{last.key or last.stage}#{last.attempt} {last.phase.value}" if last else None,
        sends=dict(sends),
        refused=refused,
        never_began=never_began,
    )


def trace_text(rows: list[TraceRow | Restarted]) -> Iterator[str]:
    """The trace for a person: each observation, the state it led to, the actions."""
    previous = ""
    for row in rows:
        if isinstance(row, Restarted):
            yield (
                f"[{row.at:8.1f}] Restart: the supervisor, started anew, reads the journal and "
                "performs again what the place waits to see"
            )
            for action in row.pending:
                yield f"           -> {describe(action)}"
            if not row.pending:
                yield "           (nothing to perform again)"
            continue
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


def trace_json(rows: list[TraceRow | Restarted], *, scenario: str | None = None) -> Iterator[str]:
    """The trace for a program: one JSON object a line, then a summary line naming ``scenario``."""
    for row in rows:
        if isinstance(row, Restarted):
            restart = {
                "format": FORMAT,
                "row": "restart",
                "at": row.at,
                "actions": [codec().unstructure(a, Action) for a in row.pending],
            }
            yield json.dumps(restart, ensure_ascii=False)
            continue
        record: dict[str, Any] = {
            "format": FORMAT,
            "row": "step",
            "at": row.seen.at,
            "seen": codec().unstructure(row.seen, Observation),
        }
        if row.refusal is not None:
            record["refused"] = [p._asdict() for p in row.refusal.problems]
        else:
            assert row.decision is not None  # noqa: S101 (a row has a decision or a refusal)
            record["status"] = codec().unstructure(status(row.decision.place))
            record["actions"] = [codec().unstructure(a, Action) for a in row.decision.actions]
        yield json.dumps(record, ensure_ascii=False)
    summary = codec().unstructure(summarize(rows))
    named = {"scenario": scenario} if scenario is not None else {}
    yield json.dumps({"format": FORMAT, "row": "summary", **named, **summary}, ensure_ascii=False)


def status_json(
    views: list[PlaceStatus], unreadable: list[tuple[str, str]], *, running: bool = False
) -> str:
    """``flume status --json``: format 2, documented in docs/status.md."""
    return statusview.status_json(status_document(views, unreadable, running=running))


def status_document(
    views: Iterable[PlaceStatus], unreadable: Iterable[tuple[str, str]], *, running: bool = False
) -> dict[str, Any]:
    """What ``flume status --json`` prints, as plain data; ``running``: the supervisor runs."""
    return {
        "format": STATUS_FORMAT,
        "places": [codec().unstructure(view) for view in views],
        "unreadable": [{"journal": journal, "problem": problem} for journal, problem in unreadable],
        "supervisor": statusview.supervisor_json(running=running),
    }


def status_table(
    views: list[PlaceStatus], unreadable: list[tuple[str, str]], *, width: int | None = None
) -> Iterator[str]:
    """``flume status`` for a person: one row a place, fitted to ``width`` columns.

    :func:`flume.cli.statusview.status_table` of the views as plain data (None: unbounded).
    """
    plain = [codec().unstructure(view) for view in views]
    return statusview.status_table(plain, unreadable, width=width)


def waiting_lines(views: list[PlaceStatus]) -> Iterator[str]:
    """What waits on the caller, under the status table: words of short stages, stages on hold."""
    return statusview.waiting_lines([codec().unstructure(view) for view in views])


def event_text(event: PlaceEvent) -> str:
    """``flume events`` for a person: one line an event, its time local; long words cut."""
    when = datetime.fromtimestamp(event.at).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    named = event.key or event.stage
    stage = f"{named}#{event.attempt}" if named and event.attempt else named
    lines = event.text.strip().splitlines() or [""]
    more = f" (+{len(lines) - 1} lines; --json has them all)" if len(lines) > 1 else ""
    return f"{when} {event.place} {stage or '-'} {event.event.value}: {lines[0]}{more}".rstrip()


#: Each part of a conversation's label, as wide as the widest, so that its text lines up.
_PART_WIDTH = len("prompt")


def transcript_text(chats: list[AttemptChat]) -> Iterator[str]:
    """``flume transcript`` for a person: a header per attempt, then its conversation.

    Each line of a part is labelled with the part (prompt, text, tool, result), so a reader's
    eye, and grep, find each prompt and each tool call; an attempt not read says why.
    """
    for index, chat in enumerate(chats):
        if index:
            yield ""
        yield f"== {chat.place} {chat.key}#{chat.attempt} ({chat.agent}, session {chat.session})"
        yield f"   transcript: {chat.transcript or '(none found)'}"
        if chat.missing is not None:
            yield f"   not shown: {chat.missing}"
            continue
        if chat.unreadable:
            yield f"   {chat.unreadable} line(s) could not be read and were skipped"
        for line in chat.lines:
            label = line.part.value.ljust(_PART_WIDTH)
            for number, text in enumerate(line.text.splitlines() or [""]):
                yield f"{label if number == 0 else ' ' * _PART_WIDTH} | {text}".rstrip()


def transcript_json(place: str, chats: list[AttemptChat]) -> str:
    """``flume transcript --json``: format 1, documented in docs/commands.md."""
    from flume.shell.commands.transcripts import TRANSCRIPT_FORMAT

    document = {
        "format": TRANSCRIPT_FORMAT,
        "place": place,
        "attempts": [chat.as_dict() for chat in chats],
    }
    return json.dumps(document, ensure_ascii=False, indent=2)


def tidy_json(outcomes: list[TidyOutcome], *, dry_run: bool) -> str:
    """``flume tidy --json``: format 1, documented in docs/places.md."""
    document = {
        "format": FORMAT,
        "dry_run": dry_run,
        "places": [codec().unstructure(outcome) for outcome in outcomes],
    }
    return json.dumps(document, ensure_ascii=False, indent=2)


def tidy_text(outcomes: list[TidyOutcome], *, dry_run: bool) -> Iterator[str]:
    """``flume tidy`` for a person: per place, what went and what stayed, with why."""
    if not outcomes:
        yield "nothing to tidy"
        return
    for outcome in outcomes:
        would = "would remove" if dry_run and not outcome.earlier else "removed"
        state = f"{outcome.state.value} earlier" if outcome.earlier else outcome.state.value
        state = f"{state} (dry run)" if dry_run else state
        yield f"{outcome.place}: {state}   [{outcome.repository}]"
        for removed in outcome.removed:
            yield f"  {would} {removed}"
        for kept in outcome.kept:
            yield f"  kept {kept.what}: {kept.reason}"
        for failed in outcome.failed:
            yield f"  failed: {failed}"


# --- a journal under a changed definition (simulate --journal J --kind-file NEW) ----------

#: Instants before 2001 are a scenario's seconds from its launch, not a journal's clock.
_SINCE_2001 = 978_307_200
#: How much of a long text either side of where two texts part is shown.
_AROUND = 30


def _when(at: float) -> str:
    """An observation's instant: the local time of a journal's, the seconds of a scenario's."""
    if at < _SINCE_2001:
        return f"{at:g} s"
    local = datetime.fromtimestamp(at).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    return f"{local} ({at:.3f})"


def _value(value: object) -> str:
    """One side of a difference, in a line: a record described, text quoted, nothing named."""
    if value is None:
        return "(none)"
    if isinstance(value, ACTION_TYPES):
        return describe(value)
    return _short(value)


def _parted(one: str, other: str) -> tuple[str, str]:
    """Two texts shown around where they part, so a change past the first words is seen."""
    common = next(
        (index for index, (a, b) in enumerate(zip(one, other, strict=False)) if a != b),
        min(len(one), len(other)),
    )
    start = max(0, common - _AROUND)

    def cut(text: str) -> str:
        shown = text[start : common + 2 * _AROUND]
        before = "…" if start else ""
        after = "…" if common + 2 * _AROUND < len(text) else ""
        return before + json.dumps(shown, ensure_ascii=False) + after

    return cut(one), cut(other)


def _decided_lines(decided: Decided) -> Iterator[str]:
    for problem in decided.refused:
        yield f"    refused: {problem.render()}"
    for action in decided.actions:
        yield f"    -> {describe(action)}"
    if not decided.refused and not decided.actions:
        yield "    (nothing)"


def versions_text(versioned: Versioned) -> Iterator[str]:
    """``simulate --kind-file`` for a person: "same", or the first decision that differs."""
    compared = versioned.comparison
    yield f"journal: {versioned.journal}"
    yield f"compared with: {versioned.kind_file} (kind {versioned.file_kind})"
    if versioned.file_kind != versioned.journal_kind:
        yield (
            f"  the names differ: the journal's kind is {versioned.journal_kind}, the file "
            f"declares {versioned.file_kind}; the file's kind is folded under the journal's name"
        )
    if versioned.lane:
        yield (
            f"  the journal is lane {versioned.lane}'s: the file's block for {versioned.lane} is "
            "folded, under the lane's budgets as launched"
        )
    first = compared.first
    if first is None:
        yield f"same: {compared.observations} observations, every decision the same"
        return
    number = first.index + 1
    line = f" (journal line {number})" if versioned.whole else ""
    yield (
        f"differs at observation {number} of {compared.observations}{line}, "
        f"at {_when(first.seen.at)}:"
    )
    yield f"  seen: {describe(first.seen)}"
    yield "  the journal's definition decided:"
    yield from _decided_lines(first.journaled)
    yield f"  {versioned.kind_file} decides:"
    yield from _decided_lines(first.changed)
    yield "  where they differ (the journal's | the file's):"
    for difference in first.differences:
        one, other = difference.journaled, difference.changed
        if isinstance(one, str) and isinstance(other, str):
            shown = _parted(one, other)
        else:
            shown = (_value(one), _value(other))
        yield f"    {difference.path}: {shown[0]} | {shown[1]}"


def _plain(value: object) -> object:
    """A value of a difference as JSON data: an action or observation with its type."""
    if isinstance(value, ACTION_TYPES):
        return codec().unstructure(value, Action)
    if isinstance(value, Problem):
        return value._asdict()
    return codec().unstructure(value)


def _decided_json(decided: Decided) -> dict[str, Any]:
    return {
        "actions": [codec().unstructure(action, Action) for action in decided.actions],
        "refused": [problem._asdict() for problem in decided.refused],
    }


def versions_json(versioned: Versioned) -> str:
    """``simulate --kind-file --json``: one JSON object a journal (docs/scenarios.md)."""
    compared = versioned.comparison
    first = compared.first
    found: dict[str, Any] | None = None
    if first is not None:
        found = {
            "observation": first.index + 1,
            "line": first.index + 1 if versioned.whole else None,
            "at": first.seen.at,
            "seen": codec().unstructure(first.seen, Observation),
            "journal": _decided_json(first.journaled),
            "file": _decided_json(first.changed),
            "differences": [
                {"path": each.path, "journal": _plain(each.journaled), "file": _plain(each.changed)}
                for each in first.differences
            ],
        }
    document = {
        "format": FORMAT,
        "row": "versions",
        "journal": versioned.journal,
        "kind_file": versioned.kind_file,
        "journal_kind": versioned.journal_kind,
        "file_kind": versioned.file_kind,
        "lane": versioned.lane or None,
        "observations": compared.observations,
        "same": first is None,
        "first": found,
    }
    return json.dumps(document, ensure_ascii=False)
