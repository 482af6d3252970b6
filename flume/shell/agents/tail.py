"""Following a transcript's tail: the one reader of Claude Code transcripts and Codex rollouts.

The shell keeps the byte offset after the last whole line it read and reads only what was
appended since, so a look costs what was written, not what the file holds (P4). A line is whole
once its newline is written; a torn last line is read on a later look. Each agent's module gives
the :class:`LineReader` that makes its lines observations and says what usage each reports; the
:class:`~flume.shell.agents.turns.Turn` the caller keeps sums it and gives a
:class:`~flume.core.observations.TurnEnded` where a turn closes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

import attrs

from flume.core.ids import Instant, SessionId
from flume.core.observations import TranscriptEntry, TurnEnded
from flume.shell.agents.turns import Counted, Turn

#: The ``at`` of lines read with no clock at hand (a whole file inspected after the fact).
NEVER = Instant(0.0)


class LineReader(Protocol):
    """Reads one line into an observation and the usage it reports, each None when it has none.

    ``ValueError`` when the line is unreadable. :func:`.claude_lines.read_counted` (Claude Code)
    and :func:`.codex_lines.read_counted` (Codex) are the two there are.
    """

    def __call__(
        self, line: bytes, /, *, session: SessionId, at: Instant
    ) -> tuple[TranscriptEntry | None, Counted | None]:
        """The observation one line makes, if any, and the usage it reports, if any."""
        ...


@attrs.frozen(kw_only=True)
class Tail:
    """What a look at a transcript's tail found, and where the next look starts."""

    entries: tuple[TranscriptEntry, ...]
    #: The byte offset just after the last whole line read: a torn last line is left unread.
    offset: int
    #: Lines that are not JSON objects: skipped and counted (a TranscriptUnreadable's count).
    unreadable: int = 0
    #: The turns that ended in these lines, each after the entry of the line that closed it:
    #: ``(n, turn)`` comes after ``entries[n - 1]``.
    turns: tuple[tuple[int, TurnEnded], ...] = ()

    def observations(self) -> tuple[TranscriptEntry | TurnEnded, ...]:
        """The entries and the turns' ends, in the order of the lines that made them."""
        if not self.turns:
            return self.entries
        seen: list[TranscriptEntry | TurnEnded] = []
        start = 0
        for index, ended in self.turns:
            seen.extend(self.entries[start:index])
            seen.append(ended)
            start = index
        seen.extend(self.entries[start:])
        return tuple(seen)


def whole_lines(chunk: bytes) -> tuple[list[bytes], int]:
    """The whole lines in ``chunk`` (each ended by a newline, which is dropped), and their length.

    A newline byte is never part of a multi-byte UTF-8 character: cutting there splits none.
    The chunk is split as it is and what follows its last newline (a torn line, or nothing)
    dropped, rather than split after copying the whole lines out: a whole transcript is read in
    one chunk, and the copy cost as much as its size.
    """
    end = chunk.rfind(b"\n") + 1
    if not end:
        return [], 0
    lines = chunk.split(b"\n")
    lines.pop()
    return lines, end


#: The decoder :func:`json_line` scans with: json.loads's own configuration.
_DECODER = json.JSONDecoder()


def json_line(line: str | bytes) -> object:
    """``json.loads(line)``, the same value and the same errors, with less work on each line.

    A whole transcript is tens of thousands of lines, and json.loads does more than scan each:
    it detects the bytes' encoding from their opening (a BOM, or the NULs of UTF-16 or UTF-32),
    and skips whitespace before and after the document. A line opening ``{`` with no NUL next is
    UTF-8 to that detection and has no whitespace before it, so it is decoded and scanned here
    at once. Any other line, or one with anything after its document (whitespace, or the extra
    data json.loads refuses), is given to json.loads itself.
    """
    if isinstance(line, bytes) and line[:1] == b"{" and line[1:2] != b"\x00":
        text = line.decode("utf-8", "surrogatepass")
        found, end = _DECODER.raw_decode(text)
        if end == len(text):
            return found
    return json.loads(line)


def read_tail(  # noqa: PLR0913 (the file, where, how to read, whose, when, the turn read on)
    path: Path,
    offset: int,
    read: LineReader,
    *,
    session: SessionId,
    at: Instant,
    turn: Turn | None = None,
) -> Tail:
    """The whole lines written to ``path`` after byte ``offset``, each read by ``read``.

    It reads from ``offset`` to the end of the file and no more: the cost is the bytes appended
    since the last look. Blank lines are skipped. A file that does not exist yet (Claude Code
    and Codex create it when the first prompt is submitted) is an empty tail at ``offset``.
    ``turn`` is the turn open at ``offset`` (a new one when not given): the lines' usage is
    added to it, and it gives the tail's :attr:`Tail.turns`.
    """
    turn = Turn() if turn is None else turn
    try:
        if path.stat().st_size <= offset:
            return Tail(entries=(), offset=offset)  # nothing appended: one stat, no read
        with path.open("rb") as file:
            file.seek(offset)
            chunk = file.read()
    except FileNotFoundError:
        return Tail(entries=(), offset=offset)
    lines, length = whole_lines(chunk)
    entries: list[TranscriptEntry] = []
    turns: list[tuple[int, TurnEnded]] = []
    unreadable = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            entry, counted = read(line, session=session, at=at)
        except ValueError:
            unreadable += 1
            continue
        if entry is not None:
            entries.append(entry)
        # Only a line that reports usage, may open the turn or may close it can change the
        # turn: most lines of an open turn pass by on this test (asked of every line, P4).
        if counted is not None or (entry is not None and (entry.ends_turn or not turn.open)):
            ended = turn.take(entry, counted, session=session, at=at)
            if ended is not None:
                turns.append((len(entries), ended))
    return Tail(
        entries=tuple(entries),
        offset=offset + length,
        unreadable=unreadable,
        turns=tuple(turns),
    )
