"""Sandboxed steps run by flume's test agent inside bubblewrap: real git, real tmux, real bwrap.

A step that says ``sandbox = true`` runs its agent with the disk read-only but its worktree, its
board and what git needs to commit there (docs/config.md, "Sandboxed steps"). The test agent's
script tries to write outside them and inside them; what it wrote, and what it was refused,
are read from the disk, git and its own transcript. Where bubblewrap is not installed these
tests skip, saying so; under scripts/test, which installs it, they fail instead. Claude Code's
own sandbox is tested in test_claude.py.
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


def test_a_sandboxed_step_writes_its_worktree_and_board_and_nothing_else(
    tmp_path: Path, panes: Tmux, bubblewrap: None
) -> None:
    """A sandboxed step's agent is refused writes outside; its own writes are kept and committed.

    It writes a file beside the repository and one in the main worktree (``../../escaped.md``):
    each is refused ("Read-only file system") and neither is on the disk. Its board note and
    its commit on its own branch are kept, and the commit passes the step's gate; moving the
    base to that commit with git is refused, and the base has not moved.
    """
    del panes, bubblewrap
    repo = agent_repository(tmp_path)
    base = run_git(repo, "rev-parse", "main").strip()
    beside = tmp_path / "beside.md"
    agent_script = f"""
[[turn]]
match = ":code:1"
steps = [
  {{run = ["sh", "-c", "echo out > {beside}"]}},
  {{write = {{path = "../../escaped.md", text = "out\\n"}}}},
  {{write = {{path = "$board/notes.md", text = "a note\\n"}}}},
  {{write = {{path = "mended.md", text = "mended\\n"}}}},
  {{commit = "Mend the greeting, sandboxed"}},
  {{run = ["git", "update-ref", "refs/heads/main", "HEAD"]}},
]
"""
    journal = _launch(tmp_path, repo, agent_script, "fenced")
    wait_for(lambda: "code" in place_of(journal).completed, 60, "the sandboxed step to commit")

    wait_for(lambda: len(_tool_results(journal)) == 6, 30, "the agent's last command")
    place = place_of(journal)
    results = _tool_results(journal)
    assert "Read-only file system" in results[0], results
    assert "Read-only file system" in results[1], results
    assert "File created" in results[2], results
    assert "refs/heads/main" in results[-1], results
    assert "Read-only file system" in results[-1], results
    assert not beside.exists()
    assert not (repo / "escaped.md").exists()
    assert run_git(repo, "rev-parse", "main").strip() == base
    assert (Path(place.board) / "notes.md").read_text() == "a note\n"
    assert (
        run_git(repo, "log", "-1", "--format=%s", place.branch).strip()
        == "Mend the greeting, sandboxed"
    )
    assert run_git(repo, "show", f"{place.branch}:mended.md") == "mended\n"


def test_a_sandboxed_agent_moves_only_its_own_branch(
    tmp_path: Path, panes: Tmux, bubblewrap: None
) -> None:
    """Git's refs: only the branch's own folder is writable, and the base beside it is kept.

    The base, ``sb/base``, is kept only in ``packed-refs`` and sits beside the step's branch
    (``sb/refs``). Renaming the refs' folders (the trick that bypassed a kept file: ``mv
    refs/heads refs/old``, then a new ``refs/heads/main``), renaming the branch's own folder,
    writing ``packed-refs``, making another branch or a tag, and moving the base to its commit
    are each refused; the agent's commit on its own branch is kept, and no ref but its branch
    moved.
    """
    del panes, bubblewrap
    repo = agent_repository(tmp_path)
    run_git(repo, "branch", "sb/base", "main")
    run_git(repo, "pack-refs", "--all")
    before = run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    git_dir = run_git(repo, "rev-parse", "--absolute-git-dir").strip()
    tries = [
        "mv refs/heads refs/old",
        "mv refs refs-old",
        "mv logs/refs logs/old",
        "mv refs/heads/sb refs/heads/sb-old",
        "echo x > refs/heads/main",
        "echo x >> packed-refs",
        "git update-ref refs/heads/other $mine",
        "git update-ref refs/tags/v1 $mine",
        "git update-ref refs/heads/sb/base $mine",
        "mv refs/heads/sb/base refs/heads/sb/base-old",
        "rm -f logs/refs/heads/sb/base",
    ]
    shell = [f"mine=$(git rev-parse HEAD) && cd {git_dir} && {each}; echo rc=$?" for each in tries]
    steps = "\n".join(f'  {{run = ["sh", "-c", {json.dumps(each)}]}},' for each in shell)
    agent_script = f"""
[[turn]]
match = ":code:1"
steps = [
  {{write = {{path = "mended.md", text = "mended\\n"}}}},
  {{commit = "Mend the greeting, on its own branch"}},
{steps}
]
"""
    kind_file = tmp_path / "kind.toml"
    kind_file.write_text(KIND, encoding="utf-8")
    script_path = script(tmp_path, agent_script)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "refs",
        "--brief", "the greeting", "--agent", "test", "--base", "sb/base",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    journal = places.journals_dir(repo) / "sb--refs" / places.JOURNAL
    wait_for(lambda: "code" in place_of(journal).completed, 60, "the sandboxed step to commit")
    wait_for(lambda: len(_tool_results(journal)) == len(tries) + 2, 30, "its last command")

    place = place_of(journal)
    assert place.branch == "sb/refs"
    results = _tool_results(journal)
    for tried, said in zip(tries, results[2:], strict=True):
        assert "rc=0" not in said, (tried, said)
        assert "Read-only file system" in said or "Device or resource busy" in said, (tried, said)
    after = run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    moved = set(after.splitlines()) - set(before.splitlines())
    assert {line.split()[0] for line in moved} == {"refs/heads/sb/refs"}, (before, after)
    assert not Path(git_dir, "refs", "old").exists()
    assert run_git(repo, "show", f"{place.branch}:mended.md") == "mended\n"


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
        assert "Read-only file system" in refused_write, results
        assert "rc=0" not in refused_write, results
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
