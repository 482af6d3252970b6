"""Messages end to end: an agent reports progress and asks; a person answers through the CLI.

flume's test agent runs the step: it runs ``flume progress`` and ``flume ask`` in its place (as
Claude Code would through its Bash tool), then waits. The run shows itself paused, ``question``;
``flume answer`` sends the answer, which the agent's transcript must hold; the agent then
commits and the run finishes. Through the real supervisor in tmux.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flume.core.actions import Event, JudgeGate, Report
from flume.core.place import Life
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from tests.integration.agents_kit import (
    agent_repository,
    decided,
    place_of,
    script,
    typed_lines,
    wait_for,
)
from tests.integration.places_kit import flume_process

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes

KIND = """\
[kind]
name = "wf"
body = ["code"]

[step.code]
prompt = "Build $brief; commit. If anything is unclear, ask with flume ask."
gate = "commit"
may = ["progress", "ask"]
"""

SCRIPT = """
[[turn]]
match = ":code:1"
steps = [
    {run = ["flume", "progress", "read the greeting"]},
    {run = ["flume", "ask", "Hello or Hi?", "--option", "Hello", "--option", "Hi"]},
]

[[turn]]
match = "The answer to your question q1"
steps = [{write = {path = "GREETING.md", text = "Hello\\n"}}, {commit = "Say hello"}]
"""


def _status(repo: Path) -> dict[str, Any]:
    shown = flume_process("status", "--json", "--repository", str(repo))
    assert shown.returncode == 0, shown.stderr
    (row,) = [r for r in json.loads(shown.stdout)["places"] if r["place"] == "wf--talk"]
    assert isinstance(row, dict)
    return row


def test_a_question_pauses_the_run_and_the_answer_reaches_the_agent(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-ASK-PAUSES-WITHOUT-LEAD, WF-ASK-DEFERS-GATE, WF-MESSAGE-TRANSCRIPT through the CLI."""
    del panes
    repo = agent_repository(tmp_path)
    kind = tmp_path / "wf.toml"
    kind.write_text(KIND, encoding="utf-8")
    agent_script = script(tmp_path, SCRIPT)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind), "--name", "talk",
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    path = places.journals_dir(repo) / "wf--talk" / places.JOURNAL
    wait_for(lambda: _status(repo).get("paused") == "question", 60, "the question")
    row = _status(repo)
    assert row["paused_words"] == "q1: Hello or Hi? (options: Hello, Hi)"
    assert row["resolve"] == 'flume answer wf--talk q1 "..."'
    assert row["progress"] == "read the greeting"
    table = flume_process("status", "--repository", str(repo)).stdout
    assert "paused (question): q1: Hello or Hi?" in table
    assert not [a for a in decided(path, JudgeGate) if isinstance(a, JudgeGate)]
    unknown = flume_process("answer", "wf--talk", "q9", "Hello", "--repository", str(repo))
    assert unknown.returncode == 2
    assert "has no question 'q9'" in unknown.stderr
    answered = flume_process(
        "answer", "wf--talk", "q1", "Hello, please.", "--repository", str(repo)
    )
    assert answered.returncode == 0, answered.stderr
    again = flume_process("answer", "wf--talk", "q1", "Hi", "--repository", str(repo))
    assert again.returncode == 1
    assert "answered already" in again.stderr
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the run to finish")
    place = place_of(path)
    (session,) = {q.session for q in place.questions}
    (said,) = typed_lines(place, session, "The answer to your question q1 (Hello or Hi?)")
    message = said["message"]
    assert isinstance(message, dict)
    assert "Hello, please." in str(message["content"])
    events = [(r.event, r.text) for r in decided(path, Report) if isinstance(r, Report)]
    assert (Event.PROGRESS, "code: read the greeting") in events
    assert (Event.ANSWERED, "question q1 answered; the answer goes to the agent of code") in events
    assert (repo / "places" / "wf--talk" / "GREETING.md").read_text() == "Hello\n"


def test_an_ask_from_a_step_without_the_edge_is_refused(tmp_path: Path, panes: Tmux) -> None:
    """WF-EDGES: ``flume ask`` from a step that may not ask exits 1; the step goes on."""
    del panes
    repo = agent_repository(tmp_path)
    kind = tmp_path / "wf.toml"
    kind.write_text(KIND.replace('may = ["progress", "ask"]', 'may = ["progress"]'), "utf-8")
    refusing = """
[[turn]]
match = ":code:1"
steps = [
    {run = ["sh", "-c", "flume ask 'Hello or Hi?' > asked.txt 2>&1; echo $? >> asked.txt"]},
    {write = {path = "GREETING.md", text = "Hello\\n"}},
    {commit = "Say hello"},
]
"""
    agent_script = script(tmp_path, refusing)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind), "--name", "talk",
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    path = places.journals_dir(repo) / "wf--talk" / places.JOURNAL
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the run to finish")
    said = (repo / "places" / "wf--talk" / "asked.txt").read_text(encoding="utf-8")
    assert "step code of wf--talk may not ask: its may is [progress]" in said
    assert said.rstrip().endswith("1")
    assert len(place_of(path).questions) == 0
