"""Claude Code transcript lines, read into :class:`TranscriptEntry` observations.

The reader copies what a JSONL line says (its ``type``, the shape of ``message.content``, the
flags Claude Code sets) into :class:`~flume.shell.store.transcript_words.Words`, which
:func:`~flume.shell.store.transcript_words.entry_of` reads into the neutral facts the core
reads: who wrote the line (a person only when no flag or injected tag says otherwise), whether
it asks a person (``AskUserQuestion``), whether it ends a turn (``end_turn``, a
``turn_duration`` line, an interrupt's note). Those words are also how the journal spells the
line, so that mapping lives beside the codec (the store sits below the agents). See
reference/claude-code.md §2.

Each assistant line also carries its message's usage (``message.usage``), repeated on every line
of the message: :func:`read_counted` gives it under the message's ``id``, so that a turn's sum
(:mod:`flume.shell.agents.turns`) counts each message once.

A transcript is followed by its tail (:func:`read_from`, with the one tail reader of
:mod:`flume.shell.agents.tail`), reading only what was appended since the last look.
"""

from __future__ import annotations

import json
from pathlib import Path

from flume.core.ids import Instant, SessionId
from flume.core.observations import TranscriptEntry
from flume.shell.agents.tail import NEVER, Tail, read_tail
from flume.shell.agents.turns import Counted, Tokens, Turn
from flume.shell.store.transcript_words import Content, Words, entry_of


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


def _tokens(usage: dict[str, object], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_of(line_type: object, message: object) -> Counted | None:
    """The usage an assistant line's message reports, under the message's ``id``; else None."""
    if line_type != "assistant" or not isinstance(message, dict):
        return None
    usage, key = message.get("usage"), message.get("id")
    if not isinstance(usage, dict) or not isinstance(key, str):
        return None
    return Counted(
        key,
        Tokens(
            _tokens(usage, "input_tokens"),
            _tokens(usage, "output_tokens"),
            _tokens(usage, "cache_read_input_tokens"),
            _tokens(usage, "cache_creation_input_tokens"),
        ),
    )


def read_line(line: str | bytes, *, session: SessionId, at: Instant) -> TranscriptEntry:
    """One transcript line as an observation; ``ValueError`` when it is not a JSON object."""
    return read_counted(line, session=session, at=at)[0]


def read_counted(
    line: str | bytes, *, session: SessionId, at: Instant
) -> tuple[TranscriptEntry, Counted | None]:
    """One transcript line as an observation, and the usage it reports (:func:`usage_of`).

    ``ValueError`` when it is not a JSON object.
    """
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
    words = Words(
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
    return entry_of(words, at=at, session=session), usage_of(line_type, message_data)


def read_from(
    path: Path, offset: int, *, session: SessionId, at: Instant, turn: Turn | None = None
) -> Tail:
    """The Claude Code transcript lines appended to ``path`` after byte ``offset``.

    ``turn`` is the turn open at ``offset``, which the lines' usage is added to (a new one when
    not given): the tail's :attr:`~flume.shell.agents.tail.Tail.turns` are the turns they close.
    """
    return read_tail(path, offset, read_counted, session=session, at=at, turn=turn)


def entries_of(path: Path, *, session: SessionId | None = None, at: Instant = NEVER) -> Tail:
    """Every whole line of a Claude Code transcript; ``offset`` is where to follow it from.

    ``session`` defaults to the file's name without ``.jsonl``, which Claude Code makes the
    session id (reference/claude-code.md §1).
    """
    return read_from(path, 0, session=session or SessionId(path.stem), at=at)
