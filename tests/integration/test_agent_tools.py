"""An agent's tools are an agent's: a person's verbs are refused from inside an agent's session.

approve, raise, resume, resolve, answer (of a question its own agent asked) and drop (of another
place) are a person's. An agent flume started runs with its session's mark
(``$FLUME_SESSION``); whatever path its call comes by (the CLI in its terminal, an MCP server it
started, the Python API), each verb is refused, exit 1, naming why, and nothing is journaled. The
same verbs from a person's terminal are judged by the rules as ever. Here the test agent runs
each through the CLI, beside a second place it tries to drop.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flume import api
from flume.core.errors import UsageError
from flume.core.observations import ApproveAsked, BudgetRaised, DropAsked, ResumeAsked
from flume.shell.panes.tmux import Tmux
from tests.integration.agents_kit import (
    agent_repository,
    launch_test_agent,
    observations,
    place_of,
    script,
    sessions_started,
    transcript_lines,
    wait_for,
)

#: flume runs here in processes of its own (the daemon, agents in tmux): the second pass.
pytestmark = pytest.mark.processes

#: Each person's verb, as the agent of ``fix--agent`` runs it.
VERBS = {
    "approve": ["flume", "approve", "fix--agent"],
    "raise": ["flume", "raise", "fix--agent", "--turns", "5"],
    "resume": ["flume", "resume", "fix--agent"],
    "resolve": ["flume", "resolve", "fix--agent", "--by-hand"],
    "drop": ["flume", "drop", "fix--other"],
    "answer": ["flume", "answer", "fix--agent", "q1", "yes"],
}


def _results(journal: Path) -> list[str]:
    place = place_of(journal)
    started = sessions_started(journal)
    if not started:
        return []
    (session,) = started
    found: list[str] = []
    for line in transcript_lines(place, session):
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            found.extend(
                str(block.get("content"))
                for block in content
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
    return found


def test_a_person_s_verbs_run_by_an_agent_are_refused(tmp_path: Path, panes: Tmux) -> None:
    """Each of approve, raise, resume, resolve, drop (another's), answer: exit 1, the reason."""
    del panes
    repo = agent_repository(tmp_path)
    idle = script(tmp_path, '[[turn]]\nmatch = ":code:1"\nsteps = [{work = 600}]\n', "idle.toml")
    other = launch_test_agent(repo, "other", idle)
    steps = ",\n  ".join("{run = " + json.dumps(argv) + "}" for argv in VERBS.values())
    tries = script(tmp_path, f'[[turn]]\nmatch = ":code:1"\nsteps = [\n  {steps},\n]\n')
    journal = launch_test_agent(repo, "agent", tries)
    wait_for(lambda: len(_results(journal)) == len(VERBS), 60, "the agent's commands")
    for verb, said in zip(VERBS, _results(journal), strict=True):
        assert said.startswith("Exit code 1\n"), (verb, said)
        assert f"flume {verb} is a person's word" in said, (verb, said)
        assert "from inside the agent session" in said, (verb, said)
    asked = (ApproveAsked, BudgetRaised, ResumeAsked, DropAsked)
    for path in (journal, other):
        assert not any(isinstance(seen, asked) for seen in observations(path))
    assert place_of(other).life.value == "active"


@pytest.mark.parametrize(
    ("verb", "call"),
    [
        ("approve", lambda: api.approve("fix--x")),
        ("resume", lambda: api.resume("fix--x")),
        ("raise", lambda: api.raise_budgets("fix--x", turns=1)),
        ("resolve", lambda: api.resolve("fix--x", agent=False)),
        ("drop", lambda: api.drop("fix--x")),
    ],
)
def test_the_api_refuses_a_person_s_verb_in_an_agent_s_session_before_looking_at_anything(
    verb: str, call: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the API (as the MCP server calls it) too: refused, exit 1, no place looked up."""
    monkeypatch.setenv("FLUME_SESSION", "5e55-0001")
    monkeypatch.setenv("FLUME_PLACE", "fix--mine")
    with pytest.raises(UsageError) as raised:
        call()  # type: ignore[operator]
    assert raised.value.exit_status == 1
    (problem,) = raised.value.problems
    assert f"flume {verb} is a person's word" in problem.what
    assert "5e55-0001 of fix--mine" in problem.what


def test_an_agent_may_drop_its_own_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping its own place is not another's: the guard lets it through to the rules."""
    monkeypatch.setenv("FLUME_SESSION", "5e55-0001")
    monkeypatch.setenv("FLUME_PLACE", "fix--mine")
    with pytest.raises(UsageError) as raised:
        api.drop("fix--mine", repository="/nonexistent-repository-for-this-test")
    assert "a person's word" not in str(raised.value)
