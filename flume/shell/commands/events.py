"""Place events: the ``Report`` actions the rules decide, read back from the places' journals.

Theory of operation. A journal holds observations; what happened to a place is what ``step``
decides when it folds them, and the ``Report`` actions among its decisions are the place's events
(:class:`flume.core.actions.Event`). So the events are derived, never journaled: each journal is
folded through ``step`` from its first line, as the supervisor folds it, and each ``Report`` of
each decision becomes a :class:`PlaceEvent` stamped with the place's instant after that
observation (the observation's own, or the place's last when a clock stepped back, so that a
place's events never go back in time), its place, repository, mark and stage.

A :class:`Follower` keeps, for every journal it follows, the file's identity, the byte offset it
has read to, how many observations it has folded and the place they fold to. Each
:meth:`Follower.poll` finds the journals there are now (places launched since included), and
reads only the whole lines appended to each since its offset (:func:`flume.shell.store.journal.
read_from`): a poll costs what was appended, not what the journals hold. A journal whose file
changed identity (a tidied name launched again) is followed anew from its start.

Every event carries a cursor: its instant, its journal's identity (a digest of the journal's
first line, the launch, which stays the same wherever the journal is moved), the number of the
observation in the journal and the report's index among that observation's reports. Cursors
order events: by time across places and by journal order within one (a place's instants never
go back). ``after`` passes over every event up to a cursor, so a follower that stops can go on
where it stopped without repeats. Nothing here writes a journal.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from flume.core.actions import Event, Report
from flume.core.errors import UsageError
from flume.core.launch import place_name
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.store import journal, places
from flume.shell.tools import git

#: The version of an event's plain-data form (docs/events.md); bumped on any change a reader
#: must know about.
EVENTS_FORMAT = 1
#: A cursor's fields: the form's version, the instant in microseconds, the journal's identity,
#: the observation's number, the report's index.
_CURSOR_FIELDS = 5
_DIGEST_LENGTH = 16
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

    def as_dict(self) -> dict[str, Any]:
        """The event as JSON-ready data, the form documented in docs/events.md."""
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
            "event": self.event.value,
            "text": self.text,
            "journal": self.journal,
        }


@attrs.define(eq=False)
class Followed:
    """One journal a :class:`Follower` follows: how far it has read, and the place so far."""

    path: Path
    #: The file's (device, inode): another file at the path is another launch, read anew.
    identity: tuple[int, int] | None = None
    offset: int = 0
    #: Observations folded so far.
    lines: int = 0
    #: A digest of the journal's first line: its identity in cursors.
    digest: str = ""
    place: Place | None = None
    #: The instant of the launch.
    launched_at: float | None = None
    #: Why the journal is no longer followed (damaged, or a line the rules refuse).
    problem: str | None = None

    def restart(self, identity: tuple[int, int]) -> None:
        """Follow the file now at the path, another journal, from its start."""
        self.identity, self.offset, self.lines, self.place = identity, 0, 0, None
        self.digest, self.launched_at, self.problem = "", None, None


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
            place=place_name(after.launch.kind, after.launch.name),
            repository=after.launch.repository,
            kind=after.kind.name,
            name=after.launch.name,
            mark=after.launch.mark,
            stage=report.stage,
            attempt=_attempt(before, after, report),
            event=report.event,
            text=report.text,
            journal=str(followed.path),
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


class Follower:
    """Follows the journals of one repository, or of every repository flume knows.

    ``place`` keeps one place's journals (``<kind>--<name>``); ``mark`` keeps the events of
    places launched with that mark; ``after`` passes over every event up to and including that
    cursor. ``on_problem`` hears of each journal that cannot be followed, once.
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
        self.settings = settings
        self.repository = repository
        self.place = place
        self.mark = mark
        self.after = after
        self.on_problem = on_problem
        self.followed: dict[Path, Followed] = {}
        self._folders: dict[Path, Path] = {}

    def poll(self) -> list[PlaceEvent]:
        """The events of the lines appended since the last poll, in cursor order."""
        found: list[PlaceEvent] = []
        for each in self._discover():
            found.extend(self._read(each))
        found.sort(key=lambda event: event.cursor)
        return found

    def places(self) -> list[Followed]:
        """Every place followed now, read to the last poll, in name order (``mark`` applied)."""
        return sorted(
            (
                each
                for each in self.followed.values()
                if each.place is not None
                and (self.mark is None or each.place.launch.mark == self.mark)
            ),
            key=lambda each: (each.path.parent.name, str(each.path)),
        )

    def _discover(self) -> list[Followed]:
        """The journals there are now; the ones gone are forgotten."""
        repositories = [self.repository] if self.repository is not None else places.remembered()
        seen: list[Followed] = []
        for repository in repositories:
            folder = self._folders.get(repository)
            if folder is None:
                try:
                    folder = places.journals_dir(repository)
                except git.GitError:
                    continue
                self._folders[repository] = folder
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
                    # Dot folders are not places: a launch's staging, tidied places set aside.
                    if entry.name.startswith(".") or not entry.is_dir():
                        continue
                    if self.place is not None and entry.name != self.place:
                        continue
                    path = Path(entry.path) / places.JOURNAL
                    each = self.followed.get(path)
                    if each is None:
                        each = self.followed[path] = Followed(path=path)
                    seen.append(each)
        kept = {each.path for each in seen}
        for path in [path for path in self.followed if path not in kept]:
            del self.followed[path]
        return seen

    def _read(self, each: Followed) -> list[PlaceEvent]:
        """The events of the whole lines appended to one journal since its offset."""
        try:
            stat = each.path.stat()
        except FileNotFoundError:
            return []
        identity = (stat.st_dev, stat.st_ino)
        if each.identity != identity or stat.st_size < each.offset:
            # Another journal at the path (the name launched again): read from its start.
            each.restart(identity)
        if each.problem is not None or stat.st_size <= each.offset:
            return []
        try:
            if not each.digest:
                each.digest = _digest(each.path)
            tail = journal.read_from(each.path, each.offset)
        except (OSError, journal.JournalError) as error:
            self._give_up(each, str(error))
            return []
        return self._fold(each, tail)

    def _fold(self, each: Followed, tail: journal.Tail) -> list[PlaceEvent]:
        """Step each new line, and keep the events of its reports that pass the filters."""
        found: list[PlaceEvent] = []
        for seen in tail.observations:
            before = each.place
            try:
                decision = step(self.settings, before, seen)
            except UsageError as error:
                self._give_up(each, f"a line the rules refuse: {error}")
                return found
            each.lines += 1
            each.place = decision.place
            if each.launched_at is None:
                each.launched_at = float(seen.at)
            reports = [action for action in decision.actions if isinstance(action, Report)]
            if self.mark is not None and decision.place.launch.mark != self.mark:
                continue
            found.extend(
                event
                for event in events_of(
                    before, decision.place, reports, line=each.lines, followed=each
                )
                if self.after is None or event.cursor > self.after
            )
        each.offset = tail.offset
        return found

    def _give_up(self, each: Followed, problem: str) -> None:
        """Follow the journal no more, and say why once."""
        each.problem = problem
        if self.on_problem is not None:
            self.on_problem(each.path, problem)


def _digest(path: Path) -> str:
    """A journal's identity: a digest of its first line, the launch, wherever the file moves."""
    with path.open("rb") as file:
        first = file.readline()
    return hashlib.sha256(first).hexdigest()[:_DIGEST_LENGTH]
