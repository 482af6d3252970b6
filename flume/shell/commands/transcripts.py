"""``flume transcript``, shell side: each chosen attempt's conversation, read from its agent's file.

Theory of operation. Which attempts a place had, which agent ran each and where its transcript
is are in the place's journal (TRANSCRIPT-KEPT); which of them a caller asks for is the core's
to say (:func:`flume.core.transcripts.chosen`). Here the place is found, live or tidied, and
each chosen attempt's transcript is read whole through its agent's module (the agent port's
``conversation``), so that Claude Code's and Codex's read alike.

A tidied place is still replayable: ``flume tidy`` sets its journal aside
(``<git-common-dir>/flume/.tidied/<place>.*/<place>/journal.jsonl``) and never touches an
agent's transcript, which is the agent's own file outside the worktree. A name with no live
place is looked for there, the latest set aside first.

An attempt whose transcript cannot be read (never found: its agent wrote none; named and never
read: never written, its agent died first; read once and gone: removed since, as Claude Code
removes transcripts older than its ``cleanupPeriodDays``) is returned
with why, and the others still are. Nothing here writes anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from flume.core.errors import UsageError, refused
from flume.core.place import Attempt, Place
from flume.core.settings import Settings
from flume.core.step import replay
from flume.core.transcripts import chosen
from flume.shell.agents import of
from flume.shell.agents.chat import ChatLine
from flume.shell.store import journal, places

#: The version of ``flume transcript --json`` (docs/commands.md).
TRANSCRIPT_FORMAT = 1
#: Where ``flume tidy`` sets a tidied place's journal aside, in the repository's journals.
_TIDIED = ".tidied"


@attrs.frozen(kw_only=True)
class AttemptChat:
    """One attempt of a place: which agent ran it, where its transcript is, and what it says."""

    place: str
    repository: str
    #: The attempt's place in the tree (``review-loop@2/review``); a step's name if no loop.
    key: str
    stage: str
    attempt: int
    #: The program its agent ran: ``claude``, ``codex`` or ``test``.
    agent: str
    session: str
    #: When its agent started, in seconds since the epoch.
    started_at: float
    #: Its agent's transcript; None when none was found.
    transcript: str | None
    #: Why its conversation could not be read; None when it was.
    missing: str | None
    #: Its conversation, in order: prompts typed, the agent's text, tool calls and results.
    lines: tuple[ChatLine, ...] = ()
    #: Lines of the transcript that were not JSON objects: skipped and counted.
    unreadable: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The attempt as JSON-ready data, the form docs/commands.md documents."""
        return {
            "key": self.key,
            "stage": self.stage,
            "attempt": self.attempt,
            "agent": self.agent,
            "session": self.session,
            "started_at": self.started_at,
            "transcript": self.transcript,
            "missing": self.missing,
            "unreadable": self.unreadable,
            "lines": [
                {"part": line.part.value, "text": line.text, "at": line.at} for line in self.lines
            ],
        }


def transcripts(
    name: str,
    repository: Path | None,
    settings: Settings,
    *,
    step: str = "",
    attempt: int | None = None,
) -> list[AttemptChat]:
    """The chosen attempts of the place ``name`` (live, else tidied), each with its conversation.

    A :class:`UsageError` when no place has that name, or the step or attempt names none
    (:func:`~flume.core.transcripts.chosen`); nothing is written either way.
    """
    place = _place(name, repository, settings)
    return [_read(place, each) for each in chosen(place, step, attempt)]


def _place(name: str, repository: Path | None, settings: Settings) -> Place:
    """The live place called ``name``; with none, the one tidied latest."""
    try:
        found = places.find(name, repository, settings)
    except UsageError:
        tidied = _tidied(name, repository, settings)
        if tidied is None:
            raise
        return tidied
    if found.place is None:
        raise refused(
            "place",
            f"the journal of {name}, {found.journal}, cannot be read: {found.problem}",
            "mend it (flume daemon status names what is wrong), then ask again",
        )
    return found.place


def _tidied(name: str, repository: Path | None, settings: Settings) -> Place | None:
    """The place called ``name`` whose journal a tidy set aside latest; None if there is none."""
    repositories = [places.repository_of(repository)] if repository else places.remembered()
    journals: list[Path] = []
    for where in repositories:
        folder = places.journals_dir(where) / _TIDIED
        if not folder.is_dir():
            continue
        # A name, not a pattern: what a caller typed is never globbed.
        journals.extend(
            each / name / places.JOURNAL
            for each in folder.iterdir()
            if each.name.startswith(f"{name}.") and (each / name / places.JOURNAL).is_file()
        )
    for path in sorted(journals, key=lambda each: each.stat().st_mtime, reverse=True):
        try:
            return replay(settings, journal.read(path).observations)
        except (journal.JournalError, UsageError, OSError):
            continue
    return None


def _read(place: Place, attempt: Attempt) -> AttemptChat:
    """One attempt with its conversation, or why it could not be read."""
    made = AttemptChat(
        place=place.launch.place,
        repository=place.launch.repository,
        key=attempt.key,
        stage=attempt.stage,
        attempt=attempt.attempt,
        agent=attempt.agent.value,
        session=attempt.session,
        started_at=float(attempt.started_at),
        transcript=attempt.transcript,
        missing=None,
    )
    if attempt.transcript is None:
        return attrs.evolve(
            made,
            missing=(
                "no transcript was found for it: its agent wrote none (it ended before its "
                "first prompt), or it ran before flume kept transcripts"
            ),
        )
    try:
        chat = of(attempt.agent).conversation(Path(attempt.transcript))
    except FileNotFoundError:
        if not attempt.read:
            # Named where it would be, and never a line read from it: the agent died first.
            return attrs.evolve(
                made,
                missing=(
                    f"its transcript {attempt.transcript} was never written: its agent ended "
                    "before writing a line (flume events names how it ended, with its exit "
                    "status and the last lines its pane showed)"
                ),
            )
        return attrs.evolve(
            made,
            missing=(
                f"its transcript {attempt.transcript} is gone: the agent's own file was removed "
                "(Claude Code removes transcripts older than its cleanupPeriodDays setting)"
            ),
        )
    except OSError as error:
        return attrs.evolve(
            made,
            missing=f"its transcript {attempt.transcript} cannot be read: {error.strerror}",
        )
    return attrs.evolve(made, lines=chat.lines, unreadable=chat.unreadable)
