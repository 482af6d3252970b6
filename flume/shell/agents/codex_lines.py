"""Codex rollout lines, read into the :class:`TranscriptEntry` observations the rules read.

A rollout (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``, reference/codex.md §2) is one
``{"timestamp", "type", "payload"}`` object a line. Each rollout line that matters becomes the
neutral facts the core reads, and the rest is skipped:

- a message the person typed (``response_item`` message, role ``user``, ``input_text``) is
  written by :attr:`Author.PERSON`. Codex puts its own context in user-role messages too
  (``<environment_context>``, ``<user_instructions>`` and AGENTS.md text,
  ``<skills_instructions>``, ...): those, and any whose provenance is not the user's, are skipped;
- the model's text (``output_text``) and a tool call (``function_call``, ``custom_tool_call``)
  are the agent's; ``request_user_input``, the model asking the person, asks; a message with
  ``end_turn`` ends the turn; a tool's output is :attr:`Author.TOOL`'s;
- ``task_complete`` and ``turn_aborted`` events end a turn (:attr:`Author.SYSTEM`);
- a ``token_count`` event makes no entry, but reports the usage of one model call
  (``info.last_token_usage``), under the session's running totals (``info.total_token_usage``)
  as its key: Codex writes the same event twice at times, and a turn's sum
  (:mod:`flume.shell.agents.turns`) counts it once. Codex counts cached input inside
  ``input_tokens``; the usage's ``input`` is the rest. ``info`` is null before any call.

The journal spells each entry in Claude Code's words, as flume wrote Codex's lines before the
facts existed (:mod:`flume.shell.store.transcript_words`): each entry here carries those words,
and they read back to the same facts (tests/integration/test_rollout.py).

Each typed prompt is taken once, from its ``response_item``. Codex echoes it as an event too:
``item_completed`` ``UserMessage`` in 0.171, ``user_message`` before (and both lines are written
for one prompt in every version whose rollouts were seen, e.g. 0.46: the ``response_item`` is
what the model was sent, so it is always kept). The echoes are skipped, or every prompt would
count twice.

Like :mod:`flume.shell.agents.claude_lines`, the reader copies and decides nothing; a rollout's tail
is
followed by the same :func:`flume.shell.agents.tail.read_tail`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from flume.core.ids import Instant, SessionId
from flume.core.observations import Author, TranscriptEntry
from flume.shell.agents.tail import Tail, json_line, read_tail
from flume.shell.agents.turns import Counted, Turn, count
from flume.shell.store.transcript_words import ASKING_TOOL, Content, Words

#: How the user-role messages Codex writes itself open (compared without case, as Codex does).
_CONTEXT_OPENINGS = (
    "<environment_context>",
    "<user_instructions>",
    "# agents.md instructions for ",
    "<skills_instructions>",
    "<skill>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
)

#: Codex's tool for asking the person a question.
_ASKING_TOOL = "request_user_input"

#: Events that end a turn.
_TURN_ENDS = frozenset({"task_complete", "turn_aborted"})


def _object(line: str | bytes) -> dict[str, object]:
    data = json_line(line)
    if not isinstance(data, dict):
        message = "a rollout line must be a JSON object"
        raise ValueError(message)  # noqa: TRY004 (the caller counts every unreadable line alike)
    return data


def _texts(content: object, kind: str) -> list[str]:
    """The texts of the ``kind`` items of a message's content."""
    items = content if isinstance(content, list) else []
    return [
        item["text"]
        for item in items
        if isinstance(item, dict) and item.get("type") == kind and isinstance(item.get("text"), str)
    ]


def _provenances(*holders: dict[str, object]) -> Iterator[object]:
    """The provenance types 0.171 records for a message's content items, wherever it put them."""
    for holder in holders:
        passthrough = holder.get("internal_chat_message_metadata_passthrough")
        metadata = passthrough.get("content_item_metadata") if isinstance(passthrough, dict) else []
        for item in metadata if isinstance(metadata, list) else []:
            provenance = item.get("provenance") if isinstance(item, dict) else None
            if isinstance(provenance, dict):
                yield provenance.get("type")


def _is_typed(texts: list[str], line: dict[str, object], payload: dict[str, object]) -> bool:
    """A user-role message the person typed: no context wrapper, no other provenance."""
    if not texts or any(text.lstrip().lower().startswith(_CONTEXT_OPENINGS) for text in texts):
        return False
    return all(kind == "user" for kind in _provenances(payload, line))


def _message(
    line: dict[str, object], payload: dict[str, object], *, session: SessionId, at: Instant
) -> TranscriptEntry | None:
    """A ``message`` item: the person's prompt or the model's text; None for Codex's context."""
    role = payload.get("role")
    if role == "user":
        texts = _texts(payload.get("content"), "input_text")
        if not _is_typed(texts, line, payload):
            return None
        text = "\n".join(texts)
        words = Words(line_type="user", content=Content.STRING, text=text)
        return TranscriptEntry(
            at=at, session=session, author=Author.PERSON, text=text, spelling=words
        )
    texts = _texts(payload.get("content"), "output_text")
    if role != "assistant" or not texts:
        return None
    text, ends = "\n".join(texts), payload.get("end_turn") is True
    words = Words(
        line_type="assistant",
        content=Content.TEXT,
        text=text,
        stop_reason="end_turn" if ends else None,
    )
    return TranscriptEntry(
        at=at,
        session=session,
        author=Author.AGENT,
        text=text,
        ends_turn=ends,
        spelling=words,
    )


def _response_item(
    line: dict[str, object], payload: dict[str, object], *, session: SessionId, at: Instant
) -> TranscriptEntry | None:
    kind = payload.get("type")
    if kind == "message":
        return _message(line, payload, session=session, at=at)
    if kind in {"function_call", "custom_tool_call", "local_shell_call"}:
        name = payload.get("name")
        tool = name if isinstance(name, str) else str(kind).removesuffix("_call")
        asks = tool == _ASKING_TOOL
        words = Words(
            line_type="assistant",
            content=Content.TOOL_USE,
            tool_name=ASKING_TOOL if asks else tool,
        )
        return TranscriptEntry(
            at=at, session=session, author=Author.AGENT, asks=asks, spelling=words
        )
    if kind in {"function_call_output", "custom_tool_call_output"}:
        words = Words(line_type="user", content=Content.TOOL_RESULT)
        return TranscriptEntry(at=at, session=session, author=Author.TOOL, spelling=words)
    return None


def usage_of(payload: dict[str, object]) -> Counted | None:
    """A ``token_count`` event's call usage, keyed by the running totals; None for the rest."""
    if payload.get("type") != "token_count":
        return None
    info = payload.get("info")
    if not isinstance(info, dict):
        return None
    last, totals = info.get("last_token_usage"), info.get("total_token_usage")
    if not isinstance(last, dict) or not isinstance(totals, dict):
        return None
    cached = count(last.get("cached_input_tokens"))
    fresh = max(count(last.get("input_tokens")) - cached, 0)
    return repr(sorted(totals.items())), (fresh, count(last.get("output_tokens")), cached, 0)


def read_line(line: str | bytes, *, session: SessionId, at: Instant) -> TranscriptEntry | None:
    """One rollout line as an observation, or None for a line the rules need not see.

    ``ValueError`` when the line is not a JSON object.
    """
    return read_counted(line, session=session, at=at)[0]


def read_counted(
    line: str | bytes, *, session: SessionId, at: Instant
) -> tuple[TranscriptEntry | None, Counted | None]:
    """One rollout line as an observation (:func:`read_line`), and the usage it reports.

    ``ValueError`` when the line is not a JSON object.
    """
    data = _object(line)
    payload = data.get("payload")
    if not isinstance(payload, dict):
        return None, None
    if data.get("type") == "event_msg" and (counted := usage_of(payload)) is not None:
        return None, counted
    return _entry(data, payload, session=session, at=at), None


def _entry(
    data: dict[str, object], payload: dict[str, object], *, session: SessionId, at: Instant
) -> TranscriptEntry | None:
    match data.get("type"):
        case "response_item":
            return _response_item(data, payload, session=session, at=at)
        case "event_msg" if payload.get("type") in _TURN_ENDS:
            words = Words(line_type="system", subtype="turn_duration")
            return TranscriptEntry(
                at=at, session=session, author=Author.SYSTEM, ends_turn=True, spelling=words
            )
        case _:
            # task_started, the prompt's echoes (user_message, item_completed), token counts,
            # session_meta, turn_context and kinds not known yet.
            return None


def read_from(
    path: Path, offset: int, *, session: SessionId, at: Instant, turn: Turn | None = None
) -> Tail:
    """The rollout lines appended to ``path`` after byte ``offset`` (whole lines only).

    ``turn`` is the turn open at ``offset``, which their usage is added to (a new one when not
    given): the tail's :attr:`~flume.shell.agents.tail.Tail.turns` are the turns they close.
    """
    return read_tail(path, offset, read_counted, session=session, at=at, turn=turn)


def session_meta_cwd(line: str | bytes) -> str | None:
    """The ``cwd`` a rollout's ``session_meta`` line names; None for any other line.

    A rollout is found by the working directory its session started in (reference/codex.md §1).
    """
    try:
        data = _object(line)
    except ValueError:
        return None
    payload = data.get("payload")
    if data.get("type") != "session_meta" or not isinstance(payload, dict):
        return None
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) else None


def session_meta_started(line: str | bytes) -> float | None:
    """When a rollout's session began (epoch seconds), from its ``session_meta`` line.

    The line's own ``timestamp`` (or the payload's); None when the line has none it can read.
    """
    try:
        data = _object(line)
    except ValueError:
        return None
    payload = data.get("payload")
    if data.get("type") != "session_meta" or not isinstance(payload, dict):
        return None
    for stamp in (payload.get("timestamp"), data.get("timestamp")):
        if isinstance(stamp, str):
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(stamp).timestamp()
    return None
