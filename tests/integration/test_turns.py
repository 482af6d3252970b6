"""A turn's end and the tokens it used, read from Claude Code transcripts and Codex rollouts.

Claude Code writes one line per content block of a model message, each repeating the message's
usage: a turn's usage counts each message once. Codex writes a ``token_count`` event after each
model call, at times twice: each is counted once. A turn whose lines report no usage ends with
its usage unknown (None), never zero. The journal keeps the turn's end and ``flume events`` shows
it; a real test agent in a private tmux writes usage, and the journal holds what it wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flume.core.actions import Event, Report
from flume.core.ids import Instant, SessionId
from flume.core.observations import TurnEnded, Usage
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.agents import claude_lines, codex_lines
from flume.shell.agents.turns import Turn
from flume.shell.panes.tmux import Tmux
from flume.shell.store.codec import decode, encode
from tests import shared
from tests.integration.agents_kit import (
    agent_repository,
    launch_test_agent,
    observations,
    place_of,
    script,
    sessions_started,
    taken_and_waiting,
    transcript_lines,
    wait_for,
)
from tests.integration.test_rollout import META, PROMPT, assistant, event, user_item
from tests.model.test_rules import working

SESSION = SessionId("4d5611e5-241a-462a-8d15-5122611a9569")
NOW = Instant(100.0)


def line(data: dict[str, object]) -> str:
    """One transcript line, as Claude Code writes it."""
    return json.dumps(data)


def prompt(text: str = "Mend the greeting.") -> str:
    """A prompt a person typed."""
    return line({"type": "user", "message": {"role": "user", "content": text}})


def block(  # noqa: PLR0913 (a message's id, its text and the four counts)
    message: str,
    text: str,
    output: int,
    *,
    cache_read: int = 100,
    fresh: int = 3,
    cache_creation: int = 7,
) -> str:
    """One assistant line of ``message``: a text block and the message's usage so far."""
    return line(
        {
            "type": "assistant",
            "message": {
                "id": message,
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "usage": {
                    "input_tokens": fresh,
                    "output_tokens": output,
                    "cache_read_input_tokens": cache_read,
                    "cache_creation_input_tokens": cache_creation,
                },
            },
        }
    )


def tool_result() -> str:
    """A tool's result handed back to the model: the next message begins."""
    return line(
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]},
        }
    )


def system(subtype: str) -> str:
    """A ``system`` line: ``stop_hook_summary`` and ``turn_duration`` close a turn."""
    return line({"type": "system", "subtype": subtype})


def written(tmp_path: Path, lines: list[str], name: str = "t.jsonl") -> Path:
    """``lines`` written to a file, each with its newline."""
    path = tmp_path / name
    path.write_text("".join(each + "\n" for each in lines), encoding="utf-8")
    return path


def claude_turns(path: Path) -> list[TurnEnded]:
    """The turns' ends a whole Claude Code transcript holds."""
    return [ended for _, ended in claude_lines.read_from(path, 0, session=SESSION, at=NOW).turns]


def codex_turns(path: Path) -> list[TurnEnded]:
    """The turns' ends a whole Codex rollout holds."""
    return [ended for _, ended in codex_lines.read_from(path, 0, session=SESSION, at=NOW).turns]


def test_a_message_whose_usage_repeats_over_its_lines_is_counted_once(tmp_path: Path) -> None:
    """Three blocks of one message and two of the next: each message's latest usage, once."""
    path = written(
        tmp_path,
        [
            prompt(),
            block("msg_a", "thinking it over", 1),
            block("msg_a", "looking", 4),
            block("msg_a", "found it", 9),
            tool_result(),
            block("msg_b", "mending", 2, cache_read=200),
            block("msg_b", "done", 5, cache_read=200),
            system("stop_hook_summary"),
            system("turn_duration"),
        ],
    )
    (ended,) = claude_turns(path)
    assert ended == TurnEnded(
        at=NOW,
        session=SESSION,
        usage=Usage(input=6, output=14, cache_read=300, cache_creation=14),
    )
    tail = claude_lines.read_from(path, 0, session=SESSION, at=NOW)
    # It comes right after the line that closed the turn, the stop hook's summary.
    assert [type(seen).__name__ for seen in tail.observations()][-3:] == [
        "TranscriptEntry",
        "TurnEnded",
        "TranscriptEntry",
    ]


def test_a_turn_with_no_usage_reported_ends_with_it_unknown_not_zero(tmp_path: Path) -> None:
    """A prompt and an interrupt, no model message: the turn ends, its usage None."""
    interrupt = line(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "[Request interrupted by user]"}],
            },
        }
    )
    path = written(tmp_path, [prompt(), interrupt, system("turn_duration")])
    (ended,) = claude_turns(path)
    assert ended.usage is None
    # Zero reported is zero, not unknown.
    nothing = block("msg_z", "ok", 0, cache_read=0, fresh=0, cache_creation=0)
    path = written(tmp_path, [prompt(), nothing, system("turn_duration")], "zero.jsonl")
    (zero,) = claude_turns(path)
    assert zero.usage == Usage()
    # The journal keeps the difference, and the event says it.
    assert decode(encode(ended)) == ended
    assert decode(encode(zero)) == zero
    assert '"usage"' not in encode(ended)
    said = step(Settings(), working(), ended).actions
    assert said == (
        Report(event=Event.TURN_ENDED, text="turn ended: usage not reported", stage="code"),
    )
    said = step(Settings(), working(), zero).actions
    assert [each.text for each in said if isinstance(each, Report)] == [
        "turn ended: 0 tokens (input 0, output 0, cache read 0, cache written 0)"
    ]


def test_read_in_small_tails_the_turn_sums_the_same(tmp_path: Path) -> None:
    """Read a few bytes at a time, with the turn saved and loaded between looks: the same sums.

    What a supervisor does tick by tick, killed between ticks and restarted with the offsets
    and the turn it saved.
    """
    lines = [
        prompt(),
        block("msg_a", "one", 1),
        block("msg_a", "two", 6),
        tool_result(),
        block("msg_b", "three", 4),
        system("stop_hook_summary"),
        prompt("again"),
        block("msg_c", "four", 8),
        system("turn_duration"),
    ]
    whole = claude_turns(written(tmp_path, lines, "whole.jsonl"))
    assert len(whole) == 2
    path = tmp_path / "growing.jsonl"
    data = "".join(each + "\n" for each in lines).encode()
    offset, turn, found = 0, Turn(), []
    for end in range(0, len(data) + 37, 37):
        path.write_bytes(data[:end])
        tail = claude_lines.read_from(path, offset, session=SESSION, at=NOW, turn=turn)
        found += [ended for _, ended in tail.turns]
        offset = tail.offset
        turn = Turn.load(json.loads(json.dumps(turn.saved())))
    assert found == whole


def test_codex_token_counts_are_each_counted_once(tmp_path: Path) -> None:
    """Two calls, the second's event written twice, and a null ``info``: two calls' usage.

    Codex counts cached input inside ``input_tokens``: the usage's input is the rest.
    """

    def count(total: int, last_input: int, cached: int, output: int) -> str:
        last = {
            "input_tokens": last_input,
            "cached_input_tokens": cached,
            "output_tokens": output,
            "reasoning_output_tokens": 0,
            "total_tokens": last_input + output,
        }
        totals = {**last, "total_tokens": total}
        info = {"total_token_usage": totals, "last_token_usage": last}
        return event("token_count", info={**info, "model_context_window": 258400})

    rollout = [
        META,
        event("task_started", turn_id="t1"),
        user_item(PROMPT, "user"),
        event("token_count", info=None),
        count(1000, 900, 200, 100),
        count(2500, 1400, 1000, 100),
        count(2500, 1400, 1000, 100),
        assistant("Fixed."),
        event("task_complete", last_agent_message="Fixed.", duration_ms=5000),
        event("task_started", turn_id="t2"),
        user_item("And the other one.", "user"),
        event("token_count", info=None),
        event("turn_aborted", reason="interrupted"),
    ]
    first, second = codex_turns(written(tmp_path, rollout))
    assert first.usage == Usage(input=700 + 400, output=200, cache_read=1200)
    assert second.usage is None


def _by_message_once(lines: list[dict[str, object]]) -> Usage | None:
    """The usage of these lines as a person would add it up: each message's last, once."""
    last: dict[str, dict[str, int]] = {}
    for data in lines:
        message = data.get("message")
        if data.get("type") == "assistant" and isinstance(message, dict):
            last[str(message["id"])] = message["usage"]
    if not last:
        return None
    return Usage(
        input=sum(each.get("input_tokens", 0) for each in last.values()),
        output=sum(each.get("output_tokens", 0) for each in last.values()),
        cache_read=sum(each.get("cache_read_input_tokens", 0) for each in last.values()),
        cache_creation=sum(each.get("cache_creation_input_tokens", 0) for each in last.values()),
    )


def test_real_transcripts_sum_each_message_once() -> None:
    """Over the real transcripts, the turns' usage adds up to each message's usage once.

    Thousands of lines, most messages written over several lines with their output growing:
    the turns' sums are the messages' last usage, and never the sum over lines.
    """
    corpus = shared.corpus()
    for path in sorted(corpus.glob("*.jsonl")):
        data = [json.loads(each) for each in path.read_text(encoding="utf-8").splitlines()]
        turns = claude_turns(path)
        assert turns, path.name
        summed = sum((ended.usage or Usage() for ended in turns), Usage())
        assert summed == _by_message_once(data), path.name
        over_lines = sum(
            each["message"]["usage"].get("output_tokens", 0)
            for each in data
            if each.get("type") == "assistant"
        )
        assert summed.output < over_lines, path.name


TWO_MESSAGES = """
[[turn]]
steps = [
  {say = "Mending the greeting."},
  {say = "Looking at it once more."},
  {write = {path = "NOTES.md", text = "noted\\n"}},
  {say = "Noted."},
]
"""


@pytest.mark.processes
def test_the_journal_holds_the_usage_the_test_agent_wrote(tmp_path: Path, panes: Tmux) -> None:
    """A real test agent in a private tmux: its turn's end is journaled with what it wrote.

    Its turn writes two messages (the first over three lines, its usage repeated and growing):
    the journal's TurnEnded holds each message's last usage, once.
    """
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "tokens", script(tmp_path, TWO_MESSAGES))
    wait_for(taken_and_waiting(journal_path), 60, "the agent to take the prompt and wait")

    def ended() -> list[TurnEnded]:
        return [seen for seen in observations(journal_path) if isinstance(seen, TurnEnded)]

    wait_for(ended, 30, "the turn's end in the journal")
    (session,) = sessions_started(journal_path)
    lines = transcript_lines(place_of(journal_path), session)
    ids = [each["message"]["id"] for each in lines if each.get("type") == "assistant"]  # type: ignore[index]
    assert len(ids) > len(set(ids)) == 2, "a message written over several lines"
    (turn,) = ended()
    assert turn.session == session
    assert turn.usage is not None
    assert turn.usage.total > 0
    assert turn.usage == _by_message_once(lines)
