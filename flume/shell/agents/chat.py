"""An agent's conversation, read whole from its own transcript, for a person to read again.

Theory of operation. ``flume transcript`` replays an attempt's chat from the file its agent
wrote (the seed: "each step attempt's chat is preserved and replayable forever"). The rules
read transcripts as facts (:mod:`~flume.shell.agents.claude_lines`,
:mod:`~flume.shell.agents.codex_lines`); this reads them as a conversation, in four parts:

- the prompts typed into the agent (flume's prompts and tells are typed): the lines the rules
  take as typed by a person, so that a prompt shown here is one delivery counted;
- the agent's own text, whole;
- each tool call on one line: the tool's name and a short form of its input (a command, a
  file, a pattern...);
- each tool's result summarised on one line: its first line, and how many more there are.

Thinking, injected context, bookkeeping and subagents' lines (Claude Code's sidechains) are
left out. Claude Code's format (reference/claude-code.md §2) is read by :func:`read_claude`,
which flume's test agent writes too; Codex's rollouts (reference/codex.md §2) by
:func:`read_codex`. Each agent's module names its reader (the agent port's ``chat``). Lines that
are not JSON objects are skipped and counted, never fatal. Nothing here writes a file.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterator
from pathlib import Path

import attrs

from flume.core.delivery import is_typed_by_user
from flume.core.ids import Instant, SessionId
from flume.shell.agents import claude_lines, codex_lines

#: How long a tool call's input or a result's summary may be, in characters, before it is cut.
SHORT = 120
#: The input field that says most of a tool call, in the order they are looked for: a shell
#: command, a file, a search, a page, a subagent's task (Claude Code's and Codex's tools).
_TELLING = (
    "command",
    "cmd",
    "file_path",
    "notebook_path",
    "pattern",
    "path",
    "url",
    "query",
    "description",
    "prompt",
    "task_id",
)
#: Claude Code's wrapper around a long paste (reference/claude-code.md §2).
_PASTED = re.compile(
    r'\n*<pasted_content id="[^"]*">\n?(.*?)\n?</pasted_content id="[^"]*">\n*', re.DOTALL
)
_NOBODY = SessionId("")
_NEVER = Instant(0.0)


class Part(enum.StrEnum):
    """What a line of a conversation is."""

    PROMPT = "prompt"  #: typed into the agent: flume's prompt or tell, or a person's words
    TEXT = "text"  #: the agent's own words
    TOOL = "tool"  #: a tool the agent called, with a short form of its input
    RESULT = "result"  #: what a tool gave back, in one line


@attrs.frozen(kw_only=True)
class ChatLine:
    """One part of a conversation, with its time as the agent wrote it (None if it wrote none)."""

    part: Part
    text: str
    at: str | None = None


@attrs.frozen(kw_only=True)
class Chat:
    """A conversation as read: its lines in order, and how many lines could not be read."""

    lines: tuple[ChatLine, ...]
    unreadable: int = 0


def short(text: str, limit: int = SHORT) -> str:
    """``text`` on one line (its runs of white space made one space), cut to ``limit``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def tool_line(name: str, given: object) -> str:
    """A tool call on one line: its name and the input field that says most of it."""
    if isinstance(given, str):
        with_json = _json(given)
        given = with_json if isinstance(with_json, dict) else given
    if isinstance(given, dict):
        questions = given.get("questions")
        if isinstance(questions, list) and questions and isinstance(questions[0], dict):
            return short(f"{name}: {questions[0].get('question', '')}")
        for field in _TELLING:
            value = given.get(field)
            if isinstance(value, list) and all(isinstance(each, str) for each in value):
                value = " ".join(value)
            if isinstance(value, str) and value.strip():
                return short(f"{name}: {value}")
        shown = json.dumps(given, ensure_ascii=False, separators=(",", ":"))
        return short(f"{name}: {shown}") if given else name
    if isinstance(given, str) and given.strip():
        return short(f"{name}: {given.strip().splitlines()[0]}")
    return name


def result_line(text: str, *, error: bool = False) -> str:
    """A tool's result on one line: its first line that says anything, and how many follow."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        said = "(no output)"
    else:
        more = len(lines) - 1
        said = short(lines[0]) + (f" (+{more} line{'s' if more > 1 else ''})" if more else "")
    return f"error: {said}" if error else said


def _json(text: str | bytes) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _lines(path: Path) -> Iterator[bytes]:
    """The file's whole lines: a last line without its newline counts once it is whole JSON.

    One that is not yet (still being written, or torn by a crash) is left out, not counted.
    """
    with path.open("rb") as file:
        for line in file:
            if not line.strip():
                continue
            if line.endswith(b"\n") or _json(line) is not None:
                yield line


def _stamp(data: dict[str, object]) -> str | None:
    stamp = data.get("timestamp")
    return stamp if isinstance(stamp, str) else None


# --- Claude Code ---------------------------------------------------------------------------------


def read_claude(path: Path) -> Chat:
    """A Claude Code transcript's conversation (the test agent's too).

    ``OSError`` when the file cannot be read (the caller says so for its attempt).
    """
    lines: list[ChatLine] = []
    unreadable = 0
    for raw in _lines(path):
        data = _json(raw)
        if not isinstance(data, dict):
            unreadable += 1
            continue
        lines.extend(_claude_line(raw, data))
    return Chat(lines=tuple(lines), unreadable=unreadable)


def _claude_line(raw: bytes, data: dict[str, object]) -> Iterator[ChatLine]:
    if data.get("isSidechain") is True:
        return  # a subagent's conversation, not the agent's
    at = _stamp(data)
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = (
        [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    )
    match data.get("type"):
        case "user":
            entry = claude_lines.read_line(raw, session=_NOBODY, at=_NEVER)
            if is_typed_by_user(entry):
                yield ChatLine(part=Part.PROMPT, text=_PASTED.sub(r"\1", entry.text), at=at)
                return
            for block in blocks:
                if block.get("type") == "tool_result":
                    said = _claude_result_text(block.get("content"))
                    error = block.get("is_error") is True
                    yield ChatLine(part=Part.RESULT, text=result_line(said, error=error), at=at)
        case "assistant":
            yield from (ChatLine(part=part, text=text, at=at) for part, text in _said(blocks))
        case _:
            return


def _said(blocks: list[dict[str, object]]) -> Iterator[tuple[Part, str]]:
    """What an assistant line's blocks say: its text, and the tools it calls."""
    for block in blocks:
        text, name = block.get("text"), block.get("name")
        if block.get("type") == "text" and isinstance(text, str) and text.strip():
            yield Part.TEXT, text.strip()
        elif block.get("type") == "tool_use":
            yield (
                Part.TOOL,
                tool_line(name if isinstance(name, str) else "tool", block.get("input")),
            )


def _claude_result_text(content: object) -> str:
    """A ``tool_result``'s content as text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(text for text in texts if isinstance(text, str))
    return ""


# --- Codex ---------------------------------------------------------------------------------------


def read_codex(path: Path) -> Chat:
    """A Codex rollout's conversation. ``OSError`` when the file cannot be read."""
    lines: list[ChatLine] = []
    unreadable = 0
    for raw in _lines(path):
        data = _json(raw)
        if not isinstance(data, dict):
            unreadable += 1
            continue
        payload = data.get("payload")
        if data.get("type") == "response_item" and isinstance(payload, dict):
            lines.extend(_codex_item(raw, data, payload))
    return Chat(lines=tuple(lines), unreadable=unreadable)


def _codex_item(
    raw: bytes, data: dict[str, object], payload: dict[str, object]
) -> Iterator[ChatLine]:
    at = _stamp(data)
    kind = payload.get("type")
    name = payload.get("name")
    match kind:
        case "message":
            entry = codex_lines.read_line(raw, session=_NOBODY, at=_NEVER)
            if entry is not None and is_typed_by_user(entry):
                yield ChatLine(part=Part.PROMPT, text=entry.text, at=at)
            elif entry is not None and entry.text.strip():
                yield ChatLine(part=Part.TEXT, text=entry.text.strip(), at=at)
        case "function_call" | "custom_tool_call":
            given = payload.get("arguments") if kind == "function_call" else payload.get("input")
            called = name if isinstance(name, str) else str(kind).removesuffix("_call")
            yield ChatLine(part=Part.TOOL, text=tool_line(called, given), at=at)
        case "local_shell_call":
            action = payload.get("action")
            given = action.get("command") if isinstance(action, dict) else None
            yield ChatLine(part=Part.TOOL, text=tool_line("shell", {"command": given}), at=at)
        case "function_call_output" | "custom_tool_call_output" | "local_shell_call_output":
            said = _codex_output(payload.get("output"))
            yield ChatLine(part=Part.RESULT, text=result_line(said), at=at)
        case _:
            return


def _codex_output(output: object) -> str:
    """A tool's output as Codex recorded it: text, or (before 0.171) JSON holding ``output``."""
    if isinstance(output, dict):
        output = output.get("output", output.get("content", ""))
    if isinstance(output, list):
        texts = [item.get("text") for item in output if isinstance(item, dict)]
        return "\n".join(text for text in texts if isinstance(text, str))
    if not isinstance(output, str):
        return ""
    inner = _json(output) if output.lstrip().startswith("{") else None
    if isinstance(inner, dict) and isinstance(inner.get("output"), str):
        return str(inner["output"])
    return output
