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

import functools
from pathlib import Path

from flume.core.ids import Instant, SessionId
from flume.core.observations import TranscriptEntry
from flume.shell.agents.tail import NEVER, Tail, json_line, read_tail
from flume.shell.agents.turns import Counted, Turn, count
from flume.shell.store.transcript_words import Content, Words, entry_of

#: The block kinds of a content that is text: text blocks, and images pasted beside them.
_TEXT_KINDS = frozenset({"text", "image"})


def _blocks(content: list[object]) -> tuple[set[object], list[object], list[object]]:
    """The kinds of the content's blocks, the texts of text blocks, the names of tool_use blocks.

    One pass over the blocks gathers all three: this runs for every line of a transcript.
    """
    kinds: set[object] = set()
    texts: list[object] = []
    tools: list[object] = []
    for block in content:
        if isinstance(block, dict):
            kind = block.get("type")
            kinds.add(kind)
            if kind == "text":
                texts.append(block.get("text"))
            elif kind == "tool_use":
                tools.append(block.get("name"))
    return kinds, texts, tools


def _content(message: object) -> tuple[Content, str, str | None]:
    """The content's shape, its text, and the tool a tool_use block names."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return Content.STRING, content, None
    if not isinstance(content, list):
        return Content.NONE, "", None
    kinds, texts, tools = _blocks(content)
    text = "\n".join([part for part in texts if isinstance(part, str)]) if texts else ""
    tool = tools[0] if tools and isinstance(tools[0], str) else None
    if "tool_result" in kinds:
        shape = Content.TOOL_RESULT
    elif "tool_use" in kinds:
        shape = Content.TOOL_USE
    elif texts and kinds <= _TEXT_KINDS:
        shape = Content.TEXT
    elif "thinking" in kinds:
        shape = Content.THINKING
    else:
        shape = Content.NONE
    return shape, text, tool if shape is Content.TOOL_USE else None


#: What a line says but its text, in the order of :class:`Words`'s fields after ``text``:
#: ``line_type``, ``content``, ``is_meta``, ``is_compact_summary``, ``is_sidechain``,
#: ``row_source``, ``tool_name``, ``stop_reason``, ``subtype``.
_Said = tuple[str, Content, bool, bool, bool, str | None, str | None, str | None, str | None]


def _words(text: str, said: _Said) -> Words:
    line_type, content, is_meta, is_compact_summary, is_sidechain = said[:5]
    row_source, tool_name, stop_reason, subtype = said[5:]
    return Words(
        line_type=line_type,
        content=content,
        text=text,
        is_meta=is_meta,
        is_compact_summary=is_compact_summary,
        is_sidechain=is_sidechain,
        row_source=row_source,
        tool_name=tool_name,
        stop_reason=stop_reason,
        subtype=subtype,
    )


@functools.lru_cache(maxsize=512)
def _shared_words(said: _Said) -> Words:
    """The words of a line with no text, made once for each thing said and then shared.

    Most of a transcript's lines have no text (progress and other bookkeeping, tool calls, tool
    results) and say the same few things, so their words repeat; :class:`Words` is frozen, so
    the lines that say the same can hold one. A line with text has words of its own.
    """
    return _words("", said)


def usage_of(line_type: object, message: object) -> Counted | None:
    """The usage an assistant line's message reports, under the message's ``id``; else None."""
    if line_type != "assistant" or not isinstance(message, dict):
        return None
    usage, key = message.get("usage"), message.get("id")
    if not isinstance(usage, dict) or not isinstance(key, str):
        return None
    get = usage.get
    return key, (
        count(get("input_tokens")),
        count(get("output_tokens")),
        count(get("cache_read_input_tokens")),
        count(get("cache_creation_input_tokens")),
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
    data = json_line(line)
    if not isinstance(data, dict):
        message = "a transcript line must be a JSON object"
        raise ValueError(message)  # noqa: TRY004 (the caller counts every unreadable line alike)
    line_type = data.get("type")
    message_data = data.get("message")
    content, text, tool = _content(message_data)
    stop_reason = message_data.get("stop_reason") if isinstance(message_data, dict) else None
    row_source = data.get("rowSource")
    subtype = data.get("subtype")
    said: _Said = (
        line_type if isinstance(line_type, str) else "",
        content,
        data.get("isMeta") is True,
        data.get("isCompactSummary") is True,
        data.get("isSidechain") is True,
        row_source if isinstance(row_source, str) else None,
        tool,
        stop_reason if isinstance(stop_reason, str) else None,
        subtype if isinstance(subtype, str) else None,
    )
    words = _words(text, said) if text else _shared_words(said)
    counted = usage_of(line_type, message_data) if line_type == "assistant" else None
    return entry_of(words, at=at, session=session), counted


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
