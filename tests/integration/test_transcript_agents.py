"""Each attempt's chat kept and replayed, end to end: the test agent through the real supervisor.

The real CLI launches a fix whose stages run flume's test agent in panes of the test's own tmux
server; the real supervisor finds each agent's transcript and journals where it is. Then
``flume transcript`` replays the chat from the agent's own file, ``status --json`` and ``flume
events`` name the file, and the place dropped and tidied keeps every transcript, still replayed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flume.core.observations import TranscriptFound
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from tests.integration.agents_kit import (
    agent_repository,
    launch_test_agent,
    observations,
    place_of,
    script,
    sessions_started,
    wait_for,
)
from tests.integration.places_kit import flume_process

pytestmark = pytest.mark.processes

SCRIPT = """
[[turn]]
steps = [
  {say = "Mending the greeting."},
  {write = {path = "README.md", text = "hello\\n"}},
  {commit = "Say hello, not hullo"},
  {say = "Done."},
]
"""


def _found(journal_path: Path) -> list[TranscriptFound]:
    return [seen for seen in observations(journal_path) if isinstance(seen, TranscriptFound)]


def test_each_attempt_s_chat_is_kept_replayed_and_survives_tidy(
    tmp_path: Path, panes: Tmux
) -> None:
    """The code agent's transcript is journaled once, replayed, and outlives drop and tidy."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "greet", script(tmp_path, SCRIPT))
    wait_for(lambda: "code" in place_of(journal_path).completed, 60, "the code stage to end")
    (session,) = sessions_started(journal_path)
    (found,) = [seen for seen in _found(journal_path) if seen.session == session]
    transcript = Path(found.path)
    assert transcript.name == f"{session}.jsonl"
    assert transcript.is_relative_to(places.state_dir() / "test-agent")

    status = json.loads(flume_process("status", "--json", "fix--greet").stdout)["places"][0]
    assert status["transcripts"][0] == {
        "key": "code",
        "stage": "code",
        "attempt": 1,
        "agent": "test",
        "session": session,
        "path": str(transcript),
    }
    events = flume_process("events", "fix--greet", "--json").stdout.splitlines()
    told = [json.loads(line) for line in events if '"event": "transcript"' in line]
    assert told[0]["stage"] == "code"
    assert str(transcript) in told[0]["text"]

    shown = flume_process("transcript", "fix--greet", "code")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"== fix--greet code#1 (test, session {session})"
    assert lines[1] == f"   transcript: {transcript}"
    assert lines[2].startswith("prompt | ")
    assert any("[flume:fix--greet:code:1]" in line for line in lines)
    assert "text   | Mending the greeting." in lines
    assert "text   | Done." in lines
    assert any(line.startswith("tool   | ") for line in lines)

    assert flume_process("drop", "fix--greet").returncode == 0
    wait_for(lambda: place_of(journal_path).agent is None, 30, "the agent to be ended")
    tidied = flume_process("tidy", "--force", "--repository", str(repo))
    assert tidied.returncode == 0, tidied.stderr
    assert not journal_path.exists()  # set aside by tidy: the name is free
    assert not (repo / "places" / "fix--greet").exists()
    assert transcript.is_file()  # tidy never removes a transcript
    again = flume_process("transcript", "fix--greet", "code", "--attempt", "1", "--json")
    assert again.returncode == 0, again.stderr
    (attempt,) = json.loads(again.stdout)["attempts"]
    assert attempt["transcript"] == str(transcript)
    assert attempt["missing"] is None
    assert {"part": "text", "text": "Done."} in [
        {"part": line["part"], "text": line["text"]} for line in attempt["lines"]
    ]
