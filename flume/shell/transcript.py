"""Claude Code transcript lines, read into :class:`TranscriptEntry` observations.

The reader copies what a JSONL line says (its ``type``, the shape of ``message.content``, the
flags Claude Code sets) and decides nothing: whether a line is a message typed by the user is
:func:`flume.core.delivery.is_typed_by_user`'s call. See reference/claude-code.md §2.

A transcript is followed by its tail (:func:`read_from`): the shell keeps the byte offset after
the last whole line it read and reads only what was appended since, so a look costs what was
written, not what the file holds (P4). A line is whole once its newline is written; a torn last line
is read on a later look. :func:`read_tail` is the one tail reader, for Claude Code
transcripts and Codex rollouts (:mod:`flume.shell.rollout`) alike.

:func:`inspect` says, for a person, which lines of a whole transcript flume takes as messages
typed by the user and what it makes of the agent's state at the end (``flume inspect``).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import attrs

from flume.core.delivery import infer_activity, is_typed_by_user
from flume.core.errors import UsageError
from flume.core.ids import Instant, SessionId
from flume.core.observations import Activity, Content, TranscriptEntry


def _content(message: object) -> tuple[Content, str, str | None]:
    """The content's shape, its text, and the tool a tool_use block names."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return Content.STRING, content, None
    blocks = (
        [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    )
    kinds = {block.get("type") for block in blocks}
    texts = [block.get("text") for block in blocks if block.get("type") == "text"]
    text = "\n".join(part for part in texts if isinstance(part, str))
    tools = [block.get("name") for block in blocks if block.get("type") == "tool_use"]
    tool = tools[0] if tools and isinstance(tools[0], str) else None
    if "tool_result" in kinds:
        shape = Content.TOOL_RESULT
    elif "tool_use" in kinds:
        shape = Content.TOOL_USE
    elif texts and kinds <= {"text", "image"}:
        shape = Content.TEXT
    elif "thinking" in kinds:
        shape = Content.THINKING
    else:
        shape = Content.NONE
    return shape, text, tool if shape is Content.TOOL_USE else None


def read_line(line: str | bytes, *, session: SessionId, at: Instant) -> TranscriptEntry:
    """One transcript line as an observation; ``ValueError`` when it is not a JSON object."""
    data = json.loads(line)
    if not isinstance(data, dict):
        message = "a transcript line must be a JSON object"
        raise ValueError(message)  # noqa: TRY004 (the caller counts every unreadable line alike)
    line_type = data.get("type")
    message_data = data.get("message")
    content, text, tool = _content(message_data)
    stop_reason = message_data.get("stop_reason") if isinstance(message_data, dict) else None
    row_source = data.get("rowSource")
    subtype = data.get("subtype")
    return TranscriptEntry(
        at=at,
        session=session,
        line_type=line_type if isinstance(line_type, str) else "",
        content=content,
        text=text,
        is_meta=data.get("isMeta") is True,
        is_compact_summary=data.get("isCompactSummary") is True,
        is_sidechain=data.get("isSidechain") is True,
        row_source=row_source if isinstance(row_source, str) else None,
        tool_name=tool,
        stop_reason=stop_reason if isinstance(stop_reason, str) else None,
        subtype=subtype if isinstance(subtype, str) else None,
    )


# --- following a transcript's tail ---------------------------------------------------------------

#: The ``at`` of lines read with no clock at hand (a whole file inspected after the fact).
_NEVER = Instant(0.0)


class LineReader(Protocol):
    """Reads one line into an observation: None for a line to skip, ``ValueError`` if unreadable.

    :func:`read_line` and :func:`flume.shell.rollout.read_line` are the two there are.
    """

    def __call__(
        self, line: bytes, /, *, session: SessionId, at: Instant
    ) -> TranscriptEntry | None:
        """The observation one line makes, if any."""
        ...


@attrs.frozen(kw_only=True)
class Tail:
    """What a look at a transcript's tail found, and where the next look starts."""

    entries: tuple[TranscriptEntry, ...]
    #: The byte offset just after the last whole line read: a torn last line is left unread.
    offset: int
    #: Lines that are not JSON objects: skipped and counted (a TranscriptUnreadable's count).
    unreadable: int = 0


def _whole_lines(chunk: bytes) -> tuple[list[bytes], int]:
    """The whole lines in ``chunk`` (each ended by a newline, which is dropped), and their length.

    A newline byte is never part of a multi-byte UTF-8 character: cutting there splits none.
    """
    end = chunk.rfind(b"\n") + 1
    return chunk[: end - 1].split(b"\n") if end else [], end


def read_tail(
    path: Path, offset: int, read: LineReader, *, session: SessionId, at: Instant
) -> Tail:
    """The whole lines written to ``path`` after byte ``offset``, each read by ``read``.

    It reads from ``offset`` to the end of the file and no more: the cost is the bytes appended
    since the last look. Blank lines are skipped. A file that does not exist yet (Claude Code
    and Codex create it when the first prompt is submitted) is an empty tail at ``offset``.
    """
    try:
        if path.stat().st_size <= offset:
            return Tail(entries=(), offset=offset)  # nothing appended: one stat, no read
        with path.open("rb") as file:
            file.seek(offset)
            chunk = file.read()
    except FileNotFoundError:
        return Tail(entries=(), offset=offset)
    lines, length = _whole_lines(chunk)
    entries: list[TranscriptEntry] = []
    unreadable = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = read(line, session=session, at=at)
        except ValueError:
            unreadable += 1
            continue
        if entry is not None:
            entries.append(entry)
    return Tail(entries=tuple(entries), offset=offset + length, unreadable=unreadable)


def read_from(path: Path, offset: int, *, session: SessionId, at: Instant) -> Tail:
    """The Claude Code transcript lines appended to ``path`` after byte ``offset``."""
    return read_tail(path, offset, read_line, session=session, at=at)


def entries_of(path: Path, *, session: SessionId | None = None, at: Instant = _NEVER) -> Tail:
    """Every whole line of a Claude Code transcript; ``offset`` is where to follow it from.

    ``session`` defaults to the file's name without ``.jsonl``, which Claude Code makes the
    session id (reference/claude-code.md §1).
    """
    return read_from(path, 0, session=session or SessionId(path.stem), at=at)


# --- inspecting a whole transcript ---------------------------------------------------------------


class TranscriptFormat(enum.Enum):
    """Which agent wrote a transcript."""

    CLAUDE_CODE = "claude-code"  #: ``~/.claude/projects/<slug>/<session-id>.jsonl``
    CODEX = "codex"  #: a Codex rollout: its first line is ``session_meta``


@attrs.frozen(kw_only=True)
class Prompt:
    """A line flume takes as a message typed by the user."""

    #: The line's number in the file, from 1, blank lines counted.
    line: int
    #: The line's own ``timestamp`` (ISO-8601), when it has one.
    timestamp: str | None
    text: str


@attrs.frozen(kw_only=True)
class Inspection:
    """What flume makes of a whole transcript: the user's messages, and the agent's state."""

    path: Path
    format: TranscriptFormat
    #: Whole lines in the file, blank ones included.
    lines: int
    #: Lines that are not JSON objects.
    unreadable: int
    prompts: tuple[Prompt, ...]
    #: The state :func:`flume.core.delivery.infer_activity` reaches over every line, in order.
    state: Activity
    #: The file ends in a line with no newline yet: flume reads it once it is whole.
    torn: bool = False


def _format_of(lines: list[bytes]) -> TranscriptFormat:
    """A Codex rollout opens with its ``session_meta`` line; anything else is read as Claude's."""
    first = next((line for line in lines if line.strip()), b"")
    try:
        data = json.loads(first)
    except ValueError:
        return TranscriptFormat.CLAUDE_CODE
    if isinstance(data, dict) and data.get("type") == "session_meta":
        return TranscriptFormat.CODEX
    return TranscriptFormat.CLAUDE_CODE


def _numbered(lines: list[bytes]) -> Iterator[tuple[int, bytes]]:
    """The lines that are not blank, with their numbers from 1."""
    return ((number, line) for number, line in enumerate(lines, 1) if line.strip())


def _timestamp(line: bytes) -> str | None:
    data = json.loads(line)
    stamp = data.get("timestamp") if isinstance(data, dict) else None
    return stamp if isinstance(stamp, str) else None


#: What ``flume inspect transcript`` expects, said when it is given something else.
_A_TRANSCRIPT = (
    "name a Claude Code transcript (~/.claude/projects/<slug>/<session-id>.jsonl) or "
    "a Codex rollout ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl)"
)


def inspect(path: Path) -> Inspection:
    """Read a whole transcript as flume reads one it follows; :class:`UsageError` if unreadable.

    A file that cannot be read, or whose lines are none of them a transcript's, is bad input.

    The lines are those :func:`read_tail` takes (whole lines only), each read by the reader of
    the transcript's format and judged by the core's :func:`is_typed_by_user`.
    """
    # rollout.py builds on this module's read_tail, so this module names it only when it runs.
    from flume.shell import rollout  # noqa: PLC0415 (a top-level import would be a cycle)

    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError.one(
            str(path), f"cannot be read ({error.strerror or error})", _A_TRANSCRIPT
        ) from error
    lines, length = _whole_lines(data)
    found = _format_of(lines)
    read: LineReader = rollout.read_line if found is TranscriptFormat.CODEX else read_line
    session = SessionId(path.stem)
    state = Activity.UNKNOWN
    unreadable = 0
    prompts: list[Prompt] = []
    for number, line in _numbered(lines):
        try:
            entry = read(line, session=session, at=_NEVER)
        except ValueError:
            unreadable += 1
            continue
        if entry is None:
            continue
        state = infer_activity(entry, state)
        if is_typed_by_user(entry):
            prompts.append(Prompt(line=number, timestamp=_timestamp(line), text=entry.text))
    if unreadable and unreadable == sum(1 for _ in _numbered(lines)):
        # Lines, and not one a transcript's: another file named by mistake (a README, a log).
        raise UsageError.one(
            str(path),
            f"no line of it is a transcript's ({unreadable} lines, none a JSON object)",
            _A_TRANSCRIPT,
        )
    return Inspection(
        path=path,
        format=found,
        lines=len(lines),
        unreadable=unreadable,
        prompts=tuple(prompts),
        state=state,
        torn=length < len(data),
    )
