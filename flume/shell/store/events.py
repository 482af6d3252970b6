"""Place events: the ``Report`` actions the rules decide, read back from the places' journals.

Theory of operation. A journal holds observations; what happened to a place is what ``step``
decides when it folds them, and the ``Report`` actions among its decisions are the place's events
(:class:`flume.core.actions.Event`). So the events are derived, never journaled: each journal is
folded through ``step`` from its first line, as the supervisor folds it, and each ``Report`` of
each decision becomes a :class:`PlaceEvent` stamped with the place's instant after that
observation (the observation's own, or the place's last when a clock stepped back, so that a
place's events never go back in time), its place, repository, mark and stage.

The journals are read by the one :class:`~flume.shell.store.follower.Follower` (the supervisor
reads with it too): each :meth:`EventStream.poll` finds the journals there are now (places
launched since included) and folds only the whole lines appended to each since the last poll, so
a poll costs what was appended, not what the journals hold. A journal whose file changed
identity (a tidied name launched again) is followed anew from its start.

Every event carries a cursor: its instant, its journal's identity (a digest of the journal's
first line, the launch, which stays the same wherever the journal is moved), the number of the
observation in the journal and the report's index among that observation's reports. Cursors
order events: by time across places and by journal order within one (a place's instants never
go back). ``after`` passes over every event up to a cursor, so a reader that stops can go on
where it stopped without repeats; a stream passes over what it told of a journal in the same way
when it reads that journal anew (mended after it was given up). Nothing here writes a journal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from flume.core.actions import Event, Report
from flume.core.errors import UsageError
from flume.core.place import Place
from flume.core.settings import Settings
from flume.shell.store.follower import Folded, Followed, Follower

#: The version of an event's plain-data form (docs/events.md); bumped on any change a reader
#: must know about.
EVENTS_FORMAT = 1

#: ``flume events --json``'s fields, each row the fields and their meaning (Markdown).
EVENT_FIELDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("format",),
        (
            "the version of this form: 1. It changes when a field is removed or changes meaning; "
            "new fields and new events may appear without a change"
        ),
    ),
    (
        ("cursor",),
        (
            "the event's place in the stream; give it to `--after` (the guide to `flume events` "
            "says its parts; "
            "treat it as opaque)"
        ),
    ),
    (
        ("at",),
        "seconds since the epoch: the instant of the observation the event came from",
    ),
    (
        ("place",),
        "`<kind>--<name>`",
    ),
    (
        ("repository", "kind", "name", "mark"),
        "from the launch (`mark` may be null; `kind` is the kind's own name)",
    ),
    (
        ("stage", "attempt"),
        (
            "the stage the event is about and which attempt of it; null for the place as a whole "
            "(`launched`, `place-made`, `dropped` names its stage, `tidied` and `kept` do not)"
        ),
    ),
    (
        ("key",),
        (
            "present only for a workflow's step in a loop: the attempt's place in the tree, each "
            "loop's pass then the step (`review-loop@2/review`), so pass 1's and pass 2's events "
            "tell apart; `flume events` prints it in the stage's column"
        ),
    ),
    (
        ("event",),
        "what happened (below)",
    ),
    (
        ("text",),
        (
            "flume's words for it; for `stopped-short`, `setup-failed` and `never-began`, the "
            "words that reach whoever waits on the stage ([R8](../rules.md)): the agent's own for"
            " `flume needs`"
        ),
    ),
    (
        ("journal",),
        "the journal the event was read from",
    ),
)

#: What each event means: when it is reported (Markdown).
EVENT_MEANINGS: dict[Event, str] = {
    Event.LAUNCHED: "the launch was journaled",
    Event.PLACE_MADE: "the worktree exists, on its branch",
    Event.SETUP_FAILED: "the repository's setup failed; the stage stops short with its output",
    Event.STAGE_STARTED: "a stage starts with a fresh agent (R4)",
    Event.STAGE_WAITS: "the next stage waits on the caller's word (`flume proceed`)",
    Event.PROCEEDED: "the caller's word released it",
    Event.PROMPT_DELIVERED: "the agent's transcript holds the stage's prompt (R5)",
    Event.PROMPT_MISSING: "a send was not found in the transcript in time; it is sent once more",
    Event.PROMPT_RETYPED: (
        "a send decided but never shown typed (the supervisor was killed) is typed again, as "
        "the same send"
    ),
    Event.NEVER_BEGAN: "the prompt was missing twice: the stage stops short (R5)",
    Event.DELIVERABLE: (
        "the stage's deliverable exists, made since it started; it ends once the agent is "
        "quiet (R7)"
    ),
    Event.STAGE_ENDED: "the stage is done",
    Event.STOPPED_SHORT: (
        "the stage stopped short: the agent ran `flume needs` (its words), the caller ran "
        "`flume stop`, the agent exited, or an action it needed failed (R8)"
    ),
    Event.RETRIED: "the caller retried a stage that stopped short (R9)",
    Event.TELL_HELD: (
        "a tell held while the agent works, found in the transcript, missing twice, or "
        "dropped with its agent (R6)"
    ),
    Event.TELL_DELIVERED: (
        "a tell held while the agent works, found in the transcript, missing twice, or "
        "dropped with its agent (R6)"
    ),
    Event.TELL_LOST: (
        "a tell held while the agent works, found in the transcript, missing twice, or "
        "dropped with its agent (R6)"
    ),
    Event.TELL_DROPPED: (
        "a tell held while the agent works, found in the transcript, missing twice, or "
        "dropped with its agent (R6)"
    ),
    Event.SUBMITTED: "the agent ran `flume submit`; the branch goes to the lander",
    Event.CHECKS_FAILED: (
        "the lander refused the submission (why in `text`); the output goes back to the agent"
    ),
    Event.LANDING_HELD: (
        "a run with sandboxed steps is held before landing: its own commits change files that "
        "run outside a sandbox (`.flume.toml`, a kind file or script it names, a hooks folder, "
        "`.claude/`, `.mcp.json`, `.codex/`, `.envrc`); `text` names them, and the run pauses "
        "(`approval`) until `flume approve` (`LAND-HELD-FOR-A-PERSON`)"
    ),
    Event.LANDING_BLOCKED: (
        "the base repository's state keeps the landing from moving the base (a lock git left,"
        " the base checked out with uncommitted changes): `text` holds why, the way out and "
        "git's words; nothing goes to the agent, and flume tries again (`LAND-BASE-BLOCKED-"
        "WAITS`)"
    ),
    Event.LANDED: "the base holds the branch's work",
    Event.FINISHED: "the last stage ended",
    Event.DROPPED: "the caller dropped the work",
    Event.KEPT: "tidy left the worktree or the branch, and says why (R10)",
    Event.TIDIED: "tidy is done: the worktree is gone",
    Event.FAILED: "an action failed (`text` names it and what it said)",
    Event.UNREADABLE: "transcript lines could not be read and were skipped (counted)",
    Event.TRANSCRIPT: (
        "flume found the attempt's agent's transcript, its own file: `text` names the "
        "attempt's key, its number, the agent and the path (`the transcript of code (attempt "
        "1, claude) is /home/me/.claude/projects/.../0d9c....jsonl`). Once an attempt "
        "([TRANSCRIPT-KEPT](../rules.md)); `flume transcript` replays it"
    ),
    Event.TURN_ENDED: (
        "the agent's turn ended (Claude Code's `stop_hook_summary` or `turn_duration` line, "
        "an interrupt; Codex's `task_complete` or `turn_aborted`): `text` gives the tokens "
        "its model reported for the turn, `turn ended: 1234 tokens (input 10, output 200, "
        "cache read 1000, cache written 24)`, each message counted once, or `turn ended: "
        "usage not reported` when the agent reported none (`TURN-ENDED-ONLY-REPORTED`)"
    ),
    Event.GATE_PASSED: (
        "the step's gate passed when its agent's turn ended (a verdict's result named), or a "
        "person approved it (`flume approve`)"
    ),
    Event.GATE_FAILED: (
        "the gate did not pass; the agent is told why, once (`WF-GATE-REPROMPT-ONCE`)"
    ),
    Event.LOOP_MAX: (
        "a loop ran its `max` passes without its `until` step's verdict saying done: it ends "
        'and the run goes on, or, with `on_max = "pause"`, the run pauses'
    ),
    Event.PAUSED: (
        "the run pauses for a person: `text` names the cause (approval, gate-blocked, budget,"
        " loop-max, stalled, merge-conflict, lane-dropped, finalize-failed, question: an "
        "agent asked and waits, live, for `flume answer`), its words and the command that "
        "lets it go on"
    ),
    Event.RESUMED: (
        "a person let it go on (`flume resume`, `flume raise`, `flume resolve`: `text` says "
        "by hand or by an agent)"
    ),
    Event.NUDGED: (
        "a step's agent said nothing mid-turn (no transcript line, no hook) for `[timing] "
        "stall` seconds; flume nudged it once (again silent as long, the run pauses, "
        "`stalled`)"
    ),
    Event.LANE_LAUNCHED: (
        "a lane was launched as a place of its own: `text` names its place and branch (`WF-"
        "CAP` launches them in declared order)"
    ),
    Event.LANE_ENDED: "a lane finished its branch (at its head), or ended unfinished (dropped)",
    Event.MERGED: (
        "the lanes chosen were merged into the run's branch: `text` names them (or none) and "
        "its new head; the run goes on past the block"
    ),
    Event.MERGE_CONFLICT: (
        "merging a lane conflicted and was undone: `text` names the lane, its branch and the "
        "files; a `paused` event follows (`flume resolve`)"
    ),
    Event.PROGRESS: (
        "a step's agent reported progress (`flume progress`): `text` is the step's key and "
        "its words"
    ),
    Event.ANSWERED: (
        "a person answered a question (`flume answer`); the answer goes to the agent that "
        "asked, as a message its transcript must hold"
    ),
    Event.SPAWNED: (
        "a lead spawned a child (`flume spawn`): `text` names the child, how many of the "
        "block's max, and its goal"
    ),
    Event.NOTIFIED: (
        "a lead's words went to its children (`flume notify`): those running are told them, "
        "those waiting read them in their prompt"
    ),
    Event.CHILD: (
        "news of a child (started, passed a gate, asked, progress, paused, stopped short, "
        "going on again) went to its lead, unasked"
    ),
    Event.ASKED: (
        "a child of an orchestrate block asked a question; it goes to its lead, which answers"
        " it (`flume answer`)"
    ),
    Event.COMPOSED: (
        "a lead composed a child run (`flume compose`): `text` names it, its fragment, its "
        "depth and the slice of turns and tokens reserved for it"
    ),
    Event.JOINED: (
        "every child of an orchestrate block is terminal; the finished ones are merged and "
        "the lead is told to write its verdict"
    ),
    Event.PUSHED: (
        "finalize: the run's branch is on its remote at the run's head (pushed, or found there)"
    ),
    Event.PR_OPENED: (
        "finalize: the pull request command ran to success, once; `text` has the address it printed"
    ),
}

#: The events in the reference's groups, each group's title first.
EVENT_GROUPS: tuple[tuple[str, tuple[Event, ...]], ...] = (
    (
        "Every place's",
        (
            Event.LAUNCHED,
            Event.PLACE_MADE,
            Event.SETUP_FAILED,
            Event.STAGE_STARTED,
            Event.STAGE_WAITS,
            Event.PROCEEDED,
            Event.PROMPT_DELIVERED,
            Event.PROMPT_MISSING,
            Event.PROMPT_RETYPED,
            Event.NEVER_BEGAN,
            Event.DELIVERABLE,
            Event.STAGE_ENDED,
            Event.STOPPED_SHORT,
            Event.RETRIED,
            Event.TELL_HELD,
            Event.TELL_DELIVERED,
            Event.TELL_LOST,
            Event.TELL_DROPPED,
            Event.SUBMITTED,
            Event.CHECKS_FAILED,
            Event.LANDING_HELD,
            Event.LANDING_BLOCKED,
            Event.LANDED,
            Event.FINISHED,
            Event.DROPPED,
            Event.KEPT,
            Event.TIDIED,
            Event.FAILED,
            Event.UNREADABLE,
            Event.TRANSCRIPT,
            Event.TURN_ENDED,
        ),
    ),
    (
        "A workflow run's steps add these",
        (
            Event.GATE_PASSED,
            Event.GATE_FAILED,
            Event.LOOP_MAX,
            Event.PAUSED,
            Event.RESUMED,
            Event.NUDGED,
        ),
    ),
    (
        "A run at a parallel or orchestrate block adds these",
        (
            Event.LANE_LAUNCHED,
            Event.LANE_ENDED,
            Event.MERGED,
            Event.MERGE_CONFLICT,
            Event.PROGRESS,
            Event.ANSWERED,
            Event.SPAWNED,
            Event.NOTIFIED,
            Event.CHILD,
            Event.ASKED,
            Event.COMPOSED,
            Event.JOINED,
            Event.PUSHED,
            Event.PR_OPENED,
        ),
    ),
)

#: A cursor's fields: the form's version, the instant in microseconds, the journal's identity,
#: the observation's number, the report's index.
_CURSOR_FIELDS = 5
_DIGITS = re.compile(r"[0-9]+")
_WORD = re.compile(r"[0-9a-zA-Z]+")


@attrs.frozen(kw_only=True, order=True)
class Cursor:
    """Where an event stands in the stream of every place's events; cursors sort as events do."""

    #: The event's instant, in whole microseconds since the epoch.
    at_us: int
    #: The journal's identity: a digest of its first line, the launch.
    journal: str
    #: The observation's number in the journal (1 is the launch), counting the lines read.
    line: int
    #: The report's index among the reports that observation led to.
    index: int

    def __str__(self) -> str:
        return f"{EVENTS_FORMAT}:{self.at_us}:{self.journal}:{self.line}:{self.index}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """The cursor ``text`` names; a :class:`UsageError` (exit 2) when it names none."""
        parts = text.strip().split(":")
        bad = UsageError.one(
            "after",
            f"{text!r} is not a cursor flume events gave",
            "pass the cursor of an event as flume events --json printed it",
        )
        if len(parts) != _CURSOR_FIELDS or parts[0] != str(EVENTS_FORMAT):
            raise bad
        version, at_us, identity, line, index = parts
        del version
        numbers = (at_us, line, index)
        # ASCII digits and letters only: str.isdigit() takes "²", which int() refuses.
        if not all(_DIGITS.fullmatch(part) for part in numbers) or not _WORD.fullmatch(identity):
            raise bad
        return cls(at_us=int(at_us), journal=identity, line=int(line), index=int(index))


@attrs.frozen(kw_only=True)
class PlaceEvent:
    """One event of one place: a ``Report`` the rules decided, and where and when."""

    cursor: Cursor
    #: Seconds since the epoch: the instant of the observation that led to it.
    at: float
    place: str
    repository: str
    kind: str
    name: str
    mark: str | None
    #: The stage the event is about; None for the place as a whole (launched, place made).
    stage: str | None
    #: The attempt of that stage, when there is one.
    attempt: int | None
    event: Event
    text: str
    journal: str
    #: The attempt's place in a workflow's tree (``review-loop@2/review``) when it is not the
    #: stage's name: which pass of a loop the event is of.
    key: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The event as JSON-ready data, the form documented in docs/events.md."""
        keyed = {} if self.key is None else {"key": self.key}
        return {
            "format": EVENTS_FORMAT,
            "cursor": str(self.cursor),
            "at": self.at,
            "place": self.place,
            "repository": self.repository,
            "kind": self.kind,
            "name": self.name,
            "mark": self.mark,
            "stage": self.stage,
            "attempt": self.attempt,
            **keyed,
            "event": self.event.value,
            "text": self.text,
            "journal": self.journal,
        }


def events_of(
    before: Place | None, after: Place, reports: list[Report], *, line: int, followed: Followed
) -> Iterator[PlaceEvent]:
    """The events of one observation's decision: ``before`` and ``after`` are the place's states.

    ``line`` is the observation's number in the journal ``followed``.
    """
    instant = after.now
    for index, report in enumerate(reports):
        yield PlaceEvent(
            cursor=Cursor(
                at_us=round(instant * 1_000_000), journal=followed.digest, line=line, index=index
            ),
            at=float(instant),
            place=after.launch.place,
            repository=after.launch.repository,
            kind=after.kind.name,
            name=after.launch.name,
            mark=after.launch.mark,
            stage=report.stage,
            attempt=_attempt(before, after, report),
            event=report.event,
            text=report.text,
            journal=str(followed.journal),
            key=_key(before, after, report),
        )


def _attempt(before: Place | None, after: Place, report: Report) -> int | None:
    """The attempt of the stage a report is about: the place's now, or the one just ended."""
    if report.stage is None:
        return None
    if after.stage.name == report.stage:
        return after.stage.attempt
    if before is not None and before.stage.name == report.stage:
        return before.stage.attempt
    return None


def _key(before: Place | None, after: Place, report: Report) -> str | None:
    """The key of the attempt a report is about, when a loop makes it more than the stage's name."""
    for place in (after, before):
        if place is not None and report.stage is not None and place.stage.name == report.stage:
            return place.stage.key if place.stage.key != place.stage.name else None
    return None


class EventStream:
    """The events of the journals of one repository, or of every repository flume knows.

    ``place`` keeps one place's journals (``<kind>--<name>``); ``mark`` keeps the events of
    places launched with that mark; ``after`` passes over every event up to and including that
    cursor. ``on_problem`` hears of each journal that cannot be followed, once (again if it is
    mended, and then breaks again).
    """

    def __init__(  # noqa: PLR0913 (each is one thing a caller narrows the stream by)
        self,
        settings: Settings,
        *,
        repository: Path | None = None,
        place: str | None = None,
        mark: str | None = None,
        after: Cursor | None = None,
        on_problem: Callable[[Path, str], None] | None = None,
    ) -> None:
        self.mark = mark
        self.after = after
        self.follower = Follower(
            settings, repository=repository, place=place, on_problem=on_problem
        )
        #: The last cursor told of each journal (by digest): a journal followed anew (mended
        #: after it was given up, or moved) tells nothing twice.
        self._told: dict[str, Cursor] = {}

    @property
    def followed(self) -> dict[Path, Followed]:
        """The journals followed, by path."""
        return self.follower.followed

    @property
    def repository(self) -> Path | None:
        """The repository whose journals are followed (its main worktree); None for every one."""
        return self.follower.repository

    def poll(self) -> list[PlaceEvent]:
        """The events of the lines appended since the last poll, in cursor order."""
        self.follower.discover()
        found: list[PlaceEvent] = []
        for each in self.follower.followed.values():
            folded = self.follower.read(each)
            if folded is not None:
                found.extend(self._events(each, folded))
        found.sort(key=lambda event: event.cursor)
        return found

    def places(self) -> list[Followed]:
        """Every place followed now, read to the last poll, in name order (``mark`` applied)."""
        return sorted(
            (
                each
                for each in self.follower.followed.values()
                if each.place is not None
                and (self.mark is None or each.place.launch.mark == self.mark)
            ),
            key=lambda each: (each.journal.parent.name, str(each.journal)),
        )

    def _events(self, each: Followed, folded: Folded) -> list[PlaceEvent]:
        """The events of the lines just folded that pass the filters."""
        found: list[PlaceEvent] = []
        told = self._told.get(each.digest, self.after)
        before = folded.before
        for line, decision in enumerate(folded.decisions, start=folded.first):
            after = decision.place
            if self.mark is None or after.launch.mark == self.mark:
                reports = [action for action in decision.actions if isinstance(action, Report)]
                found.extend(
                    event
                    for event in events_of(before, after, reports, line=line, followed=each)
                    if told is None or event.cursor > told
                )
            before = after
        if found:
            self._told[each.digest] = found[-1].cursor
        return found
