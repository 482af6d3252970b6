"""Sandboxed steps run by flume's test agent inside bubblewrap: real git, real tmux, real bwrap.

A step that says ``sandbox = true`` runs its agent seeing only what it needs (docs/config.md,
"Sandboxed steps"); here, that it still does its work through the fence (edits, asks, commits,
lands), that its commands to flume go through its inbox, and that nothing runs without
bubblewrap. Every way out tried is in the escape corpus (test_escape.py). Where bubblewrap is
not installed these tests skip, saying so; under scripts/test, which installs it, they fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flume.core.place import Short, ShortCause
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from tests import shared
from tests.integration.agents_kit import (
    agent_repository,
    observations,
    place_of,
    script,
    sessions_started,
    stopped_short,
    transcript_lines,
    wait_for,
)
from tests.integration.places_kit import flume_process, run_git, world_of

#: flume runs here in processes of its own (the daemon, agents in tmux): the second pass.
pytestmark = pytest.mark.processes

KIND = """\
[kind]
name = "sb"
body = ["code"]

[step.code]
prompt = "Mend $brief; commit."
gate = "commit"
sandbox = true
"""


@pytest.fixture
def bubblewrap() -> None:
    """The test needs bwrap: it skips without it (fails, where scripts/test installed it)."""
    shared.sandbox_programs()


def _launch(tmp_path: Path, repo: Path, agent_script: str, name: str) -> Path:
    kind_file = tmp_path / "kind.toml"
    kind_file.write_text(KIND, encoding="utf-8")
    script_path = script(tmp_path, agent_script)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", name,
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"sb--{name}" / places.JOURNAL


def _tool_results(journal: Path) -> list[str]:
    """The text of every tool result in the code step's agent's transcript, in order."""
    place = place_of(journal)
    (session,) = sessions_started(journal)
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


WORKING = """\
[kind]
name = "sb"
body = ["code", "review"]
finalize = { land = true }

[step.code]
prompt = "Mend $brief; commit."
gate = "commit"
may = ["ask"]
sandbox = true

[step.review]
prompt = "Review $brief; write $verdict."
sandbox = true
"""


def test_a_sandboxed_step_does_its_work_asks_is_answered_and_lands(
    tmp_path: Path, panes: Tmux, bubblewrap: None
) -> None:
    """A fenced agent edits, writes on the board, asks, is answered, commits; a review passes.

    Its question waits for a person (no lead above it), the answer reaches it in its transcript,
    and its commit is carried from its fence to its real branch; the review's verdict passes its
    gate, and the run lands on main with the mended file: nothing of the work is lost to the
    fence.
    """
    del panes, bubblewrap
    repo = agent_repository(tmp_path)
    kind_file = tmp_path / "kind.toml"
    kind_file.write_text(WORKING, encoding="utf-8")
    verdict = json.dumps({"result": "done", "summary": "hello it is"})
    agent_script = f"""
[[turn]]
match = ":code:1"
steps = [
  {{write = {{path = "greet.txt", text = "hello\\n"}}}},
  {{write = {{path = "$board/notes.md", text = "a note\\n"}}}},
  {{run = ["flume", "ask", "Hello or Hi?"]}},
]

[[turn]]
match = "Hello, please"
steps = [{{commit = "Say hello, sandboxed"}}]

[[turn]]
match = ":review:1"
steps = [{{write = {{path = "$board/review/verdict.json", text = {json.dumps(verdict)}}}}}]
"""
    script_path = script(tmp_path, agent_script)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "works",
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    journal = places.journals_dir(repo) / "sb--works" / places.JOURNAL
    wait_for(lambda: place_of(journal).questions, 60, "the agent's question")
    assert (Path(place_of(journal).board) / "notes.md").read_text() == "a note\n"
    answered = flume_process(
        "answer", "sb--works", "q1", "Hello, please", "--repository", str(repo)
    )
    assert answered.returncode == 0, answered.stderr
    wait_for(lambda: place_of(journal).landed_at is not None, 90, "the run to land")
    place = place_of(journal)
    assert run_git(repo, "show", "main:greet.txt") == "hello\n"
    assert run_git(repo, "log", "-1", "--format=%s", "main").strip() == "Say hello, sandboxed"
    (session,) = sessions_started(journal)
    typed = [
        line
        for line in transcript_lines(place, session)
        if line.get("type") == "user" and "Hello, please" in str(line.get("message"))
    ]
    assert typed, "the answer never reached the agent's transcript"


def test_flume_needs_reaches_the_place_from_inside_the_sandbox(
    tmp_path: Path, panes: Tmux, bubblewrap: None
) -> None:
    """R8 in a sandbox: the agent's ``flume needs`` journals through its fence; it stops short."""
    del panes, bubblewrap
    repo = agent_repository(tmp_path)
    agent_script = """
[[turn]]
match = ":code:1"
steps = [{run = ["flume", "needs", "the staging key"]}]
"""
    journal = _launch(tmp_path, repo, agent_script, "needy")
    wait_for(stopped_short(journal, ShortCause.NEEDS), 60, "the stage to stop short")
    phase = place_of(journal).stage.phase
    assert isinstance(phase, Short)
    assert phase.words == "the staging key"


MESSAGING = KIND.replace('gate = "commit"', 'gate = "commit"\nmay = ["progress"]')


def test_a_sandboxed_agent_cannot_write_its_journal_and_its_commands_go_through_its_inbox(
    tmp_path: Path, panes: Tmux, bubblewrap: None
) -> None:
    """Its journal is read-only to it; its commands reach the place through the supervisor.

    Appending a line to its journal, or moving the journal's folder's file, is refused.
    ``flume progress`` prints what it prints outside a sandbox, and ``flume ask`` (an edge the
    step lacks) is refused with the same words and exit status; each is journaled, or not, by
    the rules. Requests it forges in its inbox, for a command it may not send or for another
    session, are refused and journal nothing; the progress request sent again is not carried
    out again.
    """
    del panes, bubblewrap
    repo = agent_repository(tmp_path)
    journal = places.journals_dir(repo) / "sb--inbox" / places.JOURNAL
    request = '{"kind": "%s", "words": "halfway", "session": "%s"}'
    forged = (
        'cd "$FLUME_INBOX" && for sent in *.answer; do '
        f'printf \'{request}\' progress "$FLUME_SESSION" > "${{sent%.answer}}.json"; done && '
        f"printf '{request}' approve \"$FLUME_SESSION\" > {'a' * 32}.json && "
        f"printf '{request}' needs other > {'b' * 32}.json && echo forged"
    )
    agent_script = f"""
[[turn]]
match = ":code:1"
steps = [
  {{run = ["sh", "-c", "echo '{{}}' >> {journal}; echo rc=$?"]}},
  {{run = ["sh", "-c", "mv {journal} {journal}.moved; echo rc=$?"]}},
  {{run = ["flume", "progress", "halfway"]}},
  {{run = ["flume", "ask", "Hello or Hi?"]}},
  {{run = ["sh", "-c", {json.dumps(forged)}]}},
  {{run = ["flume", "needs", "the staging key"]}},
]
"""
    kind_file = tmp_path / "kind.toml"
    kind_file.write_text(MESSAGING, encoding="utf-8")
    script_path = script(tmp_path, agent_script)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "inbox",
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    wait_for(stopped_short(journal, ShortCause.NEEDS), 60, "the stage to stop short")
    wait_for(lambda: len(_tool_results(journal)) == 6, 30, "the agent's last command")

    results = _tool_results(journal)
    for refused_write in results[:2]:
        assert "rc=0" not in refused_write, results
    assert "{}" not in journal.read_text(encoding="utf-8").splitlines()
    assert results[2].strip() == "flume: sb--inbox: progress noted", results
    assert results[3] == (
        "Exit code 1\nflume: ask: step code of sb--inbox may not ask: its may is [progress]; "
        'declare may = ["ask"] on the step to let its agent ask\n'
    ), results
    assert "forged" in results[4], results
    assert results[5].strip() == "flume: sb--inbox stops short: the staging key", results
    seen = [type(each).__name__ for each in observations(journal)]
    assert seen.count("ProgressSaid") == 1, seen
    assert seen.count("NeedsSaid") == 1, seen
    assert "AskSaid" not in seen, seen
    assert not journal.with_name(journal.name + ".moved").exists()
    (session,) = sessions_started(journal)
    inbox = places.state_dir() / "agents" / f"{session}.inbox"
    answered = [inbox / f"{name * 32}.answer" for name in ("a", "b")]
    wait_for(lambda: all(path.exists() for path in answered), 30, "the forged requests' answers")
    refused = {name: json.loads((inbox / f"{name * 32}.answer").read_text()) for name in ("a", "b")}
    assert refused["a"]["status"] == 2, refused
    assert "'approve' is not a command" in str(refused["a"]["problems"]), refused
    assert refused["b"]["status"] == 2, refused
    assert "names the session other" in str(refused["b"]["problems"]), refused
    assert not list(inbox.glob("*.json")), list(inbox.iterdir())


def test_a_sandboxed_step_is_refused_at_launch_without_bubblewrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never silently unsandboxed: with no bwrap on PATH the launch is refused, nothing made."""
    repo = agent_repository(tmp_path)
    before = world_of(repo)
    bare = tmp_path / "bin"
    bare.mkdir()
    for name in ("git", "tmux"):
        (bare / name).symlink_to(Path("/usr/bin", name))
    monkeypatch.setenv("PATH", str(bare))
    kind_file = tmp_path / "kind.toml"
    kind_file.write_text(KIND, encoding="utf-8")
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "bare",
        "--brief", "the greeting", "--agent", "test",
    )  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert "step code is sandboxed, but bubblewrap (bwrap) is not installed" in ran.stderr
    assert "apt-get install bubblewrap" in ran.stderr
    assert world_of(repo) == before


def test_a_sandboxed_step_whose_agent_s_endpoint_cannot_be_named_is_refused_at_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code on Bedrock: flume cannot name the host its fence must reach; exit 2, none made.

    A sandboxed agent reaches only its model's endpoint; one flume cannot name would leave it a
    network flume did not choose, or none at all.
    """
    shared.sandbox_programs()
    repo = agent_repository(tmp_path)
    before = world_of(repo)
    monkeypatch.setenv("FLUME_CLAUDE", "/bin/true")
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    kind_file = tmp_path / "kind.toml"
    kind_file.write_text(KIND, encoding="utf-8")
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "bedrock",
        "--brief", "the greeting", "--agent", "claude",
    )  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert "CLAUDE_CODE_USE_BEDROCK is set" in ran.stderr
    assert "ANTHROPIC_BASE_URL" in ran.stderr
    assert world_of(repo) == before
