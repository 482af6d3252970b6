"""Conversations read back for ``flume transcript``: real Claude Code transcripts, and Codex's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flume.core.choices import AgentName
from flume.shell.agents import of
from flume.shell.agents.chat import (
    SHORT,
    ChatLine,
    Part,
    read_claude,
    read_codex,
    result_line,
    tool_line,
)
from tests import shared
from tests.integration.test_corpus import TYPED
from tests.integration.test_rollout import (
    ENVIRONMENT,
    META,
    PROMPT,
    TURN_0171,
    TURN_OLD,
    assistant,
    rollout_line,
    user_item,
)


def _blocks(path: Path, line_type: str, block_type: str) -> int:
    """How many blocks of ``block_type`` the file's ``line_type`` lines hold, subagents' aside."""
    found = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if (
            data.get("type") != line_type
            or data.get("isSidechain")
            or not isinstance(content, list)
        ):
            continue
        found += sum(1 for b in content if isinstance(b, dict) and b.get("type") == block_type)
    return found


@pytest.mark.parametrize("name", sorted(TYPED))
def test_a_real_transcript_reads_as_its_prompts_text_and_one_line_tool_calls(name: str) -> None:
    """The typed prompts alone are prompts; each tool call and each result is one short line."""
    path = shared.corpus() / name
    chat = read_claude(path)
    assert chat.unreadable == 0
    prompts = [line.text for line in chat.lines if line.part is Part.PROMPT]
    assert len(prompts) == len(TYPED[name])
    for text, opening in zip(prompts, TYPED[name], strict=True):
        assert text.startswith(opening)
    tools = [line for line in chat.lines if line.part is Part.TOOL]
    results = [line for line in chat.lines if line.part is Part.RESULT]
    assert len(tools) == _blocks(path, "assistant", "tool_use") > 20
    assert len(results) == _blocks(path, "user", "tool_result")
    for line in [*tools, *results]:
        assert "\n" not in line.text
        assert len(line.text) <= SHORT + len(" (+99999 lines)") + len("error: ")
    assert any(line.text.startswith("Bash: ") for line in tools)
    assert any(line.text.startswith("Read: /") for line in tools)
    texts = [line for line in chat.lines if line.part is Part.TEXT]
    assert texts
    assert all(line.text == line.text.strip() and line.text for line in texts)
    assert all(line.at is not None for line in chat.lines)


def test_every_corpus_transcript_reads_whole() -> None:
    """Every real transcript in the corpus reads with no line lost, each with a prompt."""
    found = sorted(shared.corpus().glob("*.jsonl"))
    assert found
    for path in found:
        chat = read_claude(path)
        assert chat.unreadable == 0
        assert any(line.part is Part.PROMPT for line in chat.lines), path.name


def test_claude_code_and_the_test_agent_are_read_by_the_claude_reader(tmp_path: Path) -> None:
    """Each agent's module reads its own format: the test agent writes Claude Code's."""
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_claude_lines()) + "\n", encoding="utf-8")
    for agent in (AgentName.CLAUDE, AgentName.TEST):
        assert of(agent).conversation(path) == read_claude(path)
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("\n".join(TURN_0171) + "\n", encoding="utf-8")
    assert of(AgentName.CODEX).conversation(rollout) == read_codex(rollout)


def _claude_lines() -> list[str]:
    """A short Claude Code session: a pasted prompt, a tool call failing, words, a subagent."""
    prompt = (
        '\n\n<pasted_content id="p1">\nFix it.\n[flume:fix--a:code:1]\n</pasted_content id="p1">\n'
    )
    return [
        json.dumps(
            {"type": "user", "timestamp": "T1", "message": {"role": "user", "content": prompt}}
        ),
        json.dumps({"type": "user", "isMeta": True, "message": {"content": "Caveat: ignore"}}),
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {"type": "thinking", "thinking": "hmm"},
                        {"type": "tool_use", "name": "Bash", "input": {"command": "make\n test"}},
                    ]
                },
            }
        ),
        json.dumps(
            {
                "type": "user",
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "is_error": True,
                            "content": [{"type": "text", "text": "\nfailed\nline 2\nline 3"}],
                        }
                    ]
                },
            }
        ),
        json.dumps(
            {
                "type": "assistant",
                "isSidechain": True,
                "message": {"content": [{"type": "text", "text": "sub"}]},
            }
        ),
        json.dumps(
            {"type": "assistant", "message": {"content": [{"type": "text", "text": " Done. \n"}]}}
        ),
        "not json",
        json.dumps({"type": "system", "subtype": "turn_duration"}),
        '{"type": "user", "message": {"content": "torn',
    ]


def test_a_claude_session_reads_as_its_parts(tmp_path: Path) -> None:
    """A paste unwrapped, meta and thinking and subagents left out, a bad line counted."""
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_claude_lines()), encoding="utf-8")  # the last line still torn
    chat = read_claude(path)
    assert chat.unreadable == 1
    assert chat.lines == (
        ChatLine(part=Part.PROMPT, text="Fix it.\n[flume:fix--a:code:1]", at="T1"),
        ChatLine(part=Part.TOOL, text="Bash: make test"),
        ChatLine(part=Part.RESULT, text="error: failed (+2 lines)"),
        ChatLine(part=Part.TEXT, text="Done."),
    )


def test_a_last_line_whole_but_without_its_newline_is_read(tmp_path: Path) -> None:
    """An agent's last words on a line it wrote whole, with no newline after it, are kept."""
    path = tmp_path / "t.jsonl"
    last = {"type": "assistant", "message": {"content": [{"type": "text", "text": "Bye."}]}}
    path.write_text("\n".join([*_claude_lines()[:-1], json.dumps(last)]), encoding="utf-8")
    chat = read_claude(path)
    assert chat.lines[-1] == ChatLine(part=Part.TEXT, text="Bye.")
    assert chat.unreadable == 1  # the "not json" line, read whole; the torn one is gone


def test_a_codex_rollout_reads_as_its_parts(tmp_path: Path) -> None:
    """0.171's rollout: its context and the prompt's echo left out; the call, its output, text."""
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(TURN_0171) + "\n", encoding="utf-8")
    assert [(line.part, line.text) for line in read_codex(path).lines] == [
        (Part.PROMPT, PROMPT),
        (Part.TOOL, "exec_command"),
        (Part.RESULT, "ok"),
        (Part.TEXT, "Fixed."),
    ]
    path.write_text("\n".join(TURN_OLD) + "\n", encoding="utf-8")
    old = read_codex(path).lines
    assert [line.part for line in old] == [Part.PROMPT, Part.TOOL, Part.RESULT, Part.TEXT]


def test_codex_s_tool_calls_say_their_input_and_outputs_their_first_line(tmp_path: Path) -> None:
    """A command, a patch, an old shell call and JSON-wrapped output each read as one line."""
    call = {"type": "function_call", "name": "exec_command", "call_id": "c1"}
    lines = [
        META,
        ENVIRONMENT,
        user_item(PROMPT, "user"),
        rollout_line("response_item", {**call, "arguments": json.dumps({"cmd": "git status"})}),
        rollout_line(
            "response_item",
            {"type": "function_call_output", "output": json.dumps({"output": "clean\n\nmore"})},
        ),
        rollout_line(
            "response_item",
            {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\nx"},
        ),
        rollout_line("response_item", {"type": "custom_tool_call_output", "output": ""}),
        rollout_line(
            "response_item",
            {"type": "local_shell_call", "action": {"type": "exec", "command": ["ls", "-l"]}},
        ),
        rollout_line("response_item", {"type": "reasoning", "summary": []}),
        rollout_line("event_msg", {"type": "agent_message", "message": "an echo"}),
        assistant("All clean."),
        "[1, 2]",
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    chat = read_codex(path)
    assert chat.unreadable == 1
    assert [(line.part, line.text) for line in chat.lines] == [
        (Part.PROMPT, PROMPT),
        (Part.TOOL, "exec_command: git status"),
        (Part.RESULT, "clean (+1 line)"),
        (Part.TOOL, "apply_patch: *** Begin Patch"),
        (Part.RESULT, "(no output)"),
        (Part.TOOL, "shell: ls -l"),
        (Part.TEXT, "All clean."),
    ]


@pytest.mark.parametrize(
    ("name", "given", "shown"),
    [
        ("Grep", {"pattern": "def x", "path": "src"}, "Grep: def x"),
        ("AskUserQuestion", {"questions": [{"question": "Which?"}]}, "AskUserQuestion: Which?"),
        ("TodoWrite", {"todos": [1]}, 'TodoWrite: {"todos":[1]}'),
        ("Noop", {}, "Noop"),
        ("Noop", None, "Noop"),
        ("Edit", {"file_path": "/a/" + "b" * 200}, "Edit: /a/" + "b" * (SHORT - 10) + "\u2026"),
    ],
)
def test_a_tool_call_is_its_name_and_its_telling_input(
    name: str, given: object, shown: str
) -> None:
    """The input field that says most of a call, on one line, cut to its length."""
    assert tool_line(name, given) == shown


def test_a_result_is_its_first_line_and_how_many_follow() -> None:
    """Blank lines are not counted; an error says so; nothing at all says so."""
    assert result_line("a\n\nb\nc") == "a (+2 lines)"
    assert result_line("  ", error=True) == "error: (no output)"
