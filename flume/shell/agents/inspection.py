"""``flume inspect transcript``: which lines of a whole transcript flume takes as typed by a person.

It also says what flume makes of the agent's state at the end. Claude Code transcripts and Codex
rollouts alike, each read by its agent's reader, as flume reads one it follows.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from pathlib import Path

import attrs

from flume.core.delivery import infer_activity, is_typed_by_user
from flume.core.errors import UsageError
from flume.core.ids import SessionId
from flume.core.observations import Activity
from flume.shell.agents import claude_lines, codex_lines
from flume.shell.agents.tail import NEVER, LineReader, whole_lines


class TranscriptFormat(enum.Enum):
    """Which agent wrote a transcript."""

    CLAUDE_CODE = "claude-code"  #: ``~/.claude/projects/<slug>/<session-id>.jsonl``
    CODEX = "codex"  #: a Codex rollout: its first line is ``session_meta``


@attrs.frozen(kw_only=True)
class TypedLine:
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
    prompts: tuple[TypedLine, ...]
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

    The lines are those :func:`~flume.shell.agents.tail.read_tail` takes (whole lines only), each
    read by the reader of the transcript's format and judged by the core's
    :func:`is_typed_by_user`.
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError.one(
            str(path), f"cannot be read ({error.strerror or error})", _A_TRANSCRIPT
        ) from error
    lines, length = whole_lines(data)
    found = _format_of(lines)
    read: LineReader = (
        codex_lines.read_counted if found is TranscriptFormat.CODEX else claude_lines.read_counted
    )
    session = SessionId(path.stem)
    state = Activity.UNKNOWN
    unreadable = 0
    prompts: list[TypedLine] = []
    for number, line in _numbered(lines):
        try:
            entry, _ = read(line, session=session, at=NEVER)
        except ValueError:
            unreadable += 1
            continue
        if entry is None:
            continue
        state = infer_activity(entry, state)
        if is_typed_by_user(entry):
            prompts.append(TypedLine(line=number, timestamp=_timestamp(line), text=entry.text))
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
