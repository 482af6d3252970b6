"""Codex rollout lines in the rules' words (reference/codex.md §2), written by hand per version."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from flume.core.delivery import infer_activity, is_typed_by_user
from flume.core.ids import Instant, SessionId
from flume.core.observations import Activity, Author, TranscriptEntry
from flume.shell.agents.codex_lines import (
    read_from,
    read_line,
    session_meta_cwd,
    session_meta_started,
)
from flume.shell.store.codec import decode, encode
from flume.shell.store.transcript_words import Content, Words, words_of

SESSION = SessionId("01a228a7-6e67-72b1-9c1e-000000000001")
NOW = Instant(100.0)
STAMP = "2026-11-29T10:00:00.000Z"
PROMPT = "Fix the parser.\n\n[flume:fix--parser:code:1]"


def rollout_line(kind: str, payload: dict[str, object]) -> str:
    """One rollout line as Codex writes it: timestamp, type, payload (and 0.171's ordinal)."""
    return json.dumps({"timestamp": STAMP, "type": kind, "payload": payload, "ordinal": 3})


def user_item(text: str, provenance: str | None = None) -> str:
    """A ``response_item`` user message; 0.171 adds each content item's provenance."""
    payload: dict[str, object] = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
    }
    if provenance is not None:
        payload["internal_chat_message_metadata_passthrough"] = {
            "content_item_metadata": [{"provenance": {"type": provenance}}],
        }
    return rollout_line("response_item", payload)


def event(event_type: str, /, **fields: object) -> str:
    """An ``event_msg`` line."""
    return rollout_line("event_msg", {"type": event_type, **fields})


def call(name: str) -> str:
    """A ``function_call`` response item."""
    return rollout_line(
        "response_item",
        {"type": "function_call", "name": name, "arguments": "{}", "call_id": "call_1"},
    )


def output() -> str:
    """A ``function_call_output`` response item."""
    return rollout_line(
        "response_item", {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
    )


def assistant(text: str) -> str:
    """The model's text: a ``response_item`` assistant message."""
    return rollout_line(
        "response_item",
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        },
    )


META = rollout_line(
    "session_meta",
    {"id": SESSION, "session_id": SESSION, "cwd": "/src/app/places/fix--parser", "source": "cli"},
)
ENVIRONMENT = user_item("<environment_context>\n  <cwd>/src/app</cwd>\n</environment_context>")
#: A 0.171 turn: context, the prompt twice (item and its echo), a tool, the answer, the end.
TURN_0171 = [
    META,
    rollout_line("turn_context", {"cwd": "/src/app", "model": "gpt-5"}),
    ENVIRONMENT,
    event("task_started", turn_id="t1", started_at=1, model_context_window=200000),
    user_item(PROMPT, "user"),
    event(
        "item_completed",
        item={"type": "UserMessage", "content": [{"type": "text", "text": PROMPT}]},
    ),
    call("exec_command"),
    output(),
    assistant("Fixed."),
    event("token_count", info=None),
    event("task_complete", last_agent_message="Fixed.", duration_ms=5000),
]
#: The same turn as rollouts were written in 2025 (0.46): the prompt echoed as user_message.
TURN_OLD = [
    META,
    user_item("<user_instructions>\nBe brief.\n</user_instructions>"),
    ENVIRONMENT,
    user_item(PROMPT),
    event("user_message", message=PROMPT, kind="plain"),
    call("shell"),
    output(),
    assistant("Fixed."),
    event("task_complete", last_agent_message="Fixed."),
]


def read(line: str) -> TranscriptEntry | None:
    """One line read as the agent's session, now."""
    return read_line(line, session=SESSION, at=NOW)


def entries(lines: list[str]) -> list[TranscriptEntry]:
    """The observations a list of lines makes, the skipped ones left out."""
    return [entry for entry in map(read, lines) if entry is not None]


def fold(lines: list[str]) -> Activity:
    """The agent's state after the lines, as the core infers it from unknown."""
    activity = Activity.UNKNOWN
    for entry in entries(lines):
        activity = infer_activity(entry, activity)
    return activity


@pytest.mark.parametrize("provenance", [None, "user"])
def test_a_typed_prompt_is_a_user_string_line(provenance: str | None) -> None:
    """The prompt's response item, with 0.171's provenance or without, is typed by the user."""
    entry = read(user_item(PROMPT, provenance))
    assert entry == TranscriptEntry(at=NOW, session=SESSION, author=Author.PERSON, text=PROMPT)
    assert words_of(entry) == Words(line_type="user", content=Content.STRING, text=PROMPT)
    assert is_typed_by_user(entry)


@pytest.mark.parametrize(
    "text",
    [
        "<environment_context>\n  <cwd>/src/app</cwd>\n</environment_context>",
        "<user_instructions>\nBe brief.\n</user_instructions>",
        "# AGENTS.md instructions for /src/app\n\n<INSTRUCTIONS>\nBe brief.\n</INSTRUCTIONS>",
        "<skills_instructions>\n## Skills\n</skills_instructions>",
        "  <ENVIRONMENT_CONTEXT>upper case, indented</ENVIRONMENT_CONTEXT>",
        "<turn_aborted>\nThe user interrupted the previous turn.\n</turn_aborted>",
    ],
)
def test_codex_context_in_user_messages_is_not_a_prompt(text: str) -> None:
    """The wrappers Codex writes itself as user-role messages are skipped, even quoting a prompt."""
    assert read(user_item(f"{text}\n{PROMPT}")) is None


def test_a_user_message_of_other_provenance_is_not_a_prompt() -> None:
    """0.171's provenance names who wrote each item: anyone but the user is not a prompt."""
    assert read(user_item(PROMPT, "system")) is None


def test_developer_messages_are_not_prompts() -> None:
    """Developer-role messages (permissions, skills) are Codex's, whatever they say."""
    line = rollout_line(
        "response_item",
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": PROMPT}],
        },
    )
    assert read(line) is None


@pytest.mark.parametrize("turn", [TURN_0171, TURN_OLD], ids=["0.171", "0.46"])
def test_each_prompt_counts_once(turn: list[str]) -> None:
    """Codex writes a prompt twice (item, then echo event): exactly one typed line results."""
    typed = [entry.text for entry in entries(turn) if is_typed_by_user(entry)]
    assert typed == [PROMPT]


@pytest.mark.parametrize(
    "echo",
    [
        event("user_message", message=PROMPT, kind="plain"),
        event(
            "item_completed",
            item={"type": "UserMessage", "content": [{"type": "text", "text": PROMPT}]},
        ),
    ],
    ids=["user_message", "item_completed"],
)
def test_the_prompt_echo_events_are_skipped(echo: str) -> None:
    """Both echo forms (before 0.171 and 0.171) come with the response item: they are skipped."""
    assert read(echo) is None


def test_the_model_text_is_an_assistant_text_line() -> None:
    """``output_text`` is the assistant's text: it keeps the agent working, never typed."""
    entry = read(assistant(PROMPT))
    assert entry is not None
    assert (entry.author, entry.text, entry.asks, entry.ends_turn) == (
        Author.AGENT,
        PROMPT,
        False,
        False,
    )
    assert words_of(entry) == Words(line_type="assistant", content=Content.TEXT, text=PROMPT)
    assert not is_typed_by_user(entry)
    assert infer_activity(entry, Activity.WAITING) is Activity.WORKING


def test_a_tool_call_is_an_assistant_tool_use() -> None:
    """A function call names its tool; the agent is working until the turn ends."""
    entry = read(call("exec_command"))
    assert entry is not None
    assert (entry.author, entry.asks, entry.ends_turn) == (Author.AGENT, False, False)
    assert words_of(entry) == Words(
        line_type="assistant", content=Content.TOOL_USE, tool_name="exec_command"
    )
    assert infer_activity(entry, Activity.WAITING) is Activity.WORKING


def test_asking_the_person_reads_as_asking() -> None:
    """``request_user_input`` is the model asking a person: named as Claude's question tool."""
    entry = read(call("request_user_input"))
    assert entry is not None
    assert (entry.author, entry.asks) == (Author.AGENT, True)
    assert words_of(entry).tool_name == "AskUserQuestion"
    assert infer_activity(entry, Activity.WORKING) is Activity.ASKING


def test_a_tool_output_is_a_user_tool_result() -> None:
    """A function's output is a tool result: the agent works on, and it is never typed."""
    entry = read(output())
    assert entry is not None
    assert entry.author is Author.TOOL
    assert words_of(entry) == Words(line_type="user", content=Content.TOOL_RESULT)
    assert not is_typed_by_user(entry)
    assert infer_activity(entry, Activity.ASKING) is Activity.WORKING


@pytest.mark.parametrize("kind", ["task_complete", "turn_aborted"])
def test_a_finished_or_aborted_turn_ends_the_turn(kind: str) -> None:
    """``task_complete`` and ``turn_aborted`` are the end-of-turn system line: waiting."""
    entry = read(event(kind, last_agent_message="Fixed."))
    assert entry is not None
    assert (entry.author, entry.ends_turn) == (Author.SYSTEM, True)
    assert words_of(entry) == Words(line_type="system", subtype="turn_duration")
    assert infer_activity(entry, Activity.WORKING) is Activity.WAITING


@pytest.mark.parametrize(
    "line",
    [
        META,
        event("task_started", turn_id="t1"),
        event("token_count", info=None),
        event("agent_message", message="Fixed."),
        rollout_line("turn_context", {"cwd": "/src/app"}),
        rollout_line("world_state", {}),
        rollout_line("response_item", {"type": "reasoning", "summary": []}),
        json.dumps({"type": "response_item"}),
        json.dumps({"type": "event_msg", "payload": "not an object"}),
    ],
)
def test_other_lines_are_skipped(line: str) -> None:
    """Bookkeeping, reasoning and kinds not known yet make no observation."""
    assert read(line) is None


@pytest.mark.parametrize("line", ["", "{", "[1, 2]", '"text"', "null"])
def test_lines_that_are_not_objects_raise_value_error(line: str) -> None:
    """A line that is not a JSON object is a ValueError, for the tail reader to count."""
    with pytest.raises(ValueError):  # noqa: PT011 (json's own errors are ValueErrors too)
        read(line)


@pytest.mark.parametrize("turn", [TURN_0171, TURN_OLD], ids=["0.171", "0.46"])
def test_a_whole_turn_ends_waiting(turn: list[str]) -> None:
    """Working from the prompt to the end of the turn, then waiting."""
    assert fold(turn[: turn.index(output())]) is Activity.WORKING
    assert fold(turn) is Activity.WAITING


def test_a_question_mid_turn_leaves_the_agent_asking() -> None:
    """A turn that stops at a question for the person reads as asking until it is answered."""
    lines = [*TURN_0171[:6], call("request_user_input")]
    assert fold(lines) is Activity.ASKING
    assert fold([*lines, output()]) is Activity.WORKING


def test_the_session_meta_names_the_cwd() -> None:
    """The first line of a rollout says where its session started; other lines say nothing."""
    assert session_meta_cwd(META) == "/src/app/places/fix--parser"
    assert session_meta_cwd(META.encode()) == "/src/app/places/fix--parser"
    assert session_meta_cwd(user_item(PROMPT)) is None
    assert session_meta_cwd(rollout_line("session_meta", {"id": SESSION})) is None
    assert session_meta_cwd("{torn") is None
    assert session_meta_cwd("[]") is None


def test_the_session_meta_says_when_the_session_began() -> None:
    """A rollout is taken for a stage only if its session began after the stage did."""
    began = session_meta_started(META)
    assert began == datetime.fromisoformat(STAMP).timestamp()
    unstamped = json.dumps({"type": "session_meta", "payload": {"timestamp": "nonsense"}})
    assert session_meta_started(unstamped) is None
    assert session_meta_started(user_item(PROMPT)) is None
    assert session_meta_started("{torn") is None


def test_a_rollout_tail_is_followed_like_a_transcript(tmp_path: Path) -> None:
    """Whole lines only, a torn one waits, unreadable ones are counted, skipped lines move on."""
    path = tmp_path / "rollout-2026-11-29T10-00-00-x.jsonl"
    head = "\n".join([*TURN_0171[:5], "{torn"]) + "\n"
    path.write_text(head + TURN_0171[5][:20], encoding="utf-8")
    tail = read_from(path, 0, session=SESSION, at=NOW)
    assert [entry.text for entry in tail.entries] == [PROMPT]
    assert tail.offset == len(head.encode())
    assert tail.unreadable == 1
    with path.open("a", encoding="utf-8") as file:
        file.write(TURN_0171[5][20:] + "\n" + "\n".join(TURN_0171[6:]) + "\n")
    rest = read_from(path, tail.offset, session=SESSION, at=NOW)
    assert [words_of(entry).line_type for entry in rest.entries] == [
        "assistant",
        "user",
        "assistant",
        "system",
    ]
    assert rest.offset == path.stat().st_size
    assert read_from(tmp_path / "not-yet.jsonl", 0, session=SESSION, at=NOW).entries == ()


@pytest.mark.parametrize("lines", [TURN_0171, TURN_OLD], ids=["0.171", "older"])
def test_a_rollout_entry_reads_back_from_the_journal_as_the_same_facts(lines: list[str]) -> None:
    """Codex's entries are journaled in Claude Code's words, which read back to the same facts.

    The journal spells every transcript line in those words (format 1): a replay of a Codex
    place must see what the live supervisor saw.
    """
    read_entries = entries([*lines, call("request_user_input"), event("turn_aborted")])
    assert {entry.author for entry in read_entries} == set(Author)
    for entry in read_entries:
        line = encode(entry)
        back = decode(line)
        assert isinstance(back, TranscriptEntry)
        assert (back.author, back.text, back.asks, back.ends_turn) == (
            entry.author,
            entry.text,
            entry.asks,
            entry.ends_turn,
        )
        assert encode(back) == line
