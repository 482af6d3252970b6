"""A place's worktree or branch deleted by hand while its agent works (issue 15, items 1 and 7).

Each fault is injected against the real daemon (started by the real CLI), real git and the test
agent in a tmux pane of the test's own. Each test ends with the place stopped short with the
fault named in ``flume status --json`` and the way out in ``flume status``, or tidied.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from pyrsistent import pset

from flume.core.actions import StartAgent
from flume.core.ids import BranchName, Instant, KindName, StageName, WorkName
from flume.core.kinds import BUILTIN_KINDS
from flume.core.launch import AgentSettings, Launch, place_path
from flume.core.observations import ActionFailed, Launched, WorktreeMade
from flume.core.place import Place, Short, ShortCause, Working
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.panes.tmux import Tmux
from flume.shell.perform.performer import Performer
from tests.integration.agents_kit import (
    agent_repository,
    launch_test_agent,
    place_of,
    script,
    sessions_started,
    stopped_short,
    wait_for,
)
from tests.integration.places_kit import flume_process, run_git

#: An agent that says a word, then works for a minute: long enough to be deleted under.
BUSY = """
[[turn]]
steps = [{say = "Reading the code."}, {work = 60}]
"""

#: An agent that commits on its branch, then goes on working.
COMMITS_THEN_BUSY = """
[[turn]]
steps = [
  {write = {path = "README.md", text = "hello\\n"}},
  {commit = "Say hello, not hullo"},
  {say = "Checking the rest."},
  {work = 60},
]
"""


def _committed(tmp_path: Path, repo: Path, name: str) -> Path:
    """Launch ``fix--<name>``, its agent committing then working on; once its commit is seen."""
    journal_path = launch_test_agent(repo, name, script(tmp_path, COMMITS_THEN_BUSY))

    def committed() -> bool:
        place = place_of(journal_path)
        return place.head is not None and place.head != place.stage.start_head

    wait_for(committed, 60, "the agent's commit")
    return journal_path


def _working(journal_path: Path) -> bool:
    return isinstance(place_of(journal_path).stage.phase, Working)


def _shown(repo: Path, name: str) -> dict[str, object]:
    """The place as ``flume status --json`` shows it."""
    ran = flume_process("status", "--json", "--repository", str(repo))
    assert ran.returncode == 0, ran.stderr
    (view,) = [v for v in json.loads(ran.stdout)["places"] if v["place"] == name]
    assert isinstance(view, dict)
    return view


def _status_text(repo: Path) -> str:
    ran = flume_process("status", "--repository", str(repo))
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def _no_traceback(ran: object) -> None:
    assert "Traceback" not in getattr(ran, "stdout", "") + getattr(ran, "stderr", "")


def test_a_deleted_worktree_stops_short_named_and_no_agent_starts_in_the_plain_folder(
    tmp_path: Path, panes: Tmux
) -> None:
    """Deleted by rm -rf under a working agent: named; stop and retry start nothing; tidied.

    A plain folder made where it was (the agent wrote there) is never made over: the retry
    stops short naming it, and no agent starts.
    """
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "gone", script(tmp_path, BUSY))
    wait_for(lambda: _working(journal_path), 60, "the prompt delivered")
    folder = Path(place_of(journal_path).path)
    shutil.rmtree(folder)

    wait_for(stopped_short(journal_path, ShortCause.WORKTREE_GONE), 30, "the loss to be named")
    wait_for(lambda: place_of(journal_path).agent is None, 30, "the agent to be ended")
    view = _shown(repo, "fix--gone")
    assert view["short_cause"] == "worktree-gone"
    said = " ".join(_status_text(repo).split())
    assert "flume retry fix--gone adds it again from its branch fix/gone at" in said
    assert "flume drop fix--gone, then flume tidy" in said

    # The agent's next write would make a plain folder, where git answers for the main
    # repository on main: neither stop nor retry may start an agent there.
    folder.mkdir()
    (folder / "notes.txt").write_text("written after the worktree went\n", encoding="utf-8")
    stopped = flume_process("stop", "fix--gone", "--repository", str(repo))
    retried = flume_process("retry", "fix--gone", "--repository", str(repo))
    assert stopped.returncode != 0
    assert retried.returncode == 0, retried.stderr
    _no_traceback(retried)
    wait_for(stopped_short(journal_path, ShortCause.FAILED), 30, "the make refused")
    phase = place_of(journal_path).stage.phase
    assert isinstance(phase, Short)
    assert f"{folder} already exists and is not the place's worktree" in phase.words
    assert sessions_started(journal_path, "code", 2) == set()
    assert (folder / "notes.txt").exists()
    assert run_git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"

    dropped = flume_process("drop", "fix--gone", "--repository", str(repo))
    assert dropped.returncode == 0, dropped.stderr
    # The plain folder holds what the agent wrote: never removed, and never called hand-made.
    kept = flume_process("tidy", "--repository", str(repo))
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "plain folder" in kept.stdout
    assert "made by hand" not in kept.stdout
    assert (folder / "notes.txt").exists()
    shutil.rmtree(folder)
    tidied = flume_process("tidy", "--repository", str(repo))
    assert tidied.returncode == 0, tidied.stdout + tidied.stderr
    assert "fix--gone: tidied" in tidied.stdout
    assert "failed" not in tidied.stdout
    assert str(folder) not in run_git(repo, "worktree", "list", "--porcelain")
    # A dropped fix whose branch holds nothing its base lacks loses it with its place (R10).
    assert run_git(repo, "branch", "--list", "fix/gone").strip() == ""


def test_a_deleted_worktree_is_added_again_by_retry_from_its_branch_with_its_commit(
    tmp_path: Path, panes: Tmux
) -> None:
    """PLACE-REBUILT: rm -rf after a commit; flume retry adds it again there, a fresh agent in it.

    The branch, kept at its head, is checked out again at the place's path (git still listed
    the removed folder); the retried attempt's agent starts in it, and the commit is there.
    """
    del panes
    repo = agent_repository(tmp_path)
    journal_path = _committed(tmp_path, repo, "again")
    head = place_of(journal_path).head
    folder = Path(place_of(journal_path).path)
    shutil.rmtree(folder)
    wait_for(stopped_short(journal_path, ShortCause.WORKTREE_GONE), 30, "the loss to be named")

    retried = flume_process("retry", "fix--again", "--repository", str(repo))
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout == (
        "fix--again: stage code starts again (attempt 2) with a fresh agent, once its worktree "
        f"is added again from its branch fix/again at {head}\n"
    )
    wait_for(lambda: sessions_started(journal_path, "code", 2) != set(), 60, "attempt 2 started")
    assert run_git(folder, "rev-parse", "HEAD").strip() == head
    assert run_git(folder, "rev-parse", "--abbrev-ref", "HEAD").strip() == "fix/again"
    assert (folder / "README.md").read_text(encoding="utf-8") == "hello\n"
    assert not place_of(journal_path).worktree_gone
    dropped = flume_process("drop", "fix--again", "--repository", str(repo))
    assert dropped.returncode == 0, dropped.stderr


def test_a_worktree_removed_with_git_is_tidied_and_its_commits_branch_kept(
    tmp_path: Path, panes: Tmux
) -> None:
    """Removed by git worktree remove --force: named; tidy keeps the branch it cannot lose."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = _committed(tmp_path, repo, "removed")
    folder = place_of(journal_path).path
    run_git(repo, "worktree", "remove", "--force", folder)

    wait_for(stopped_short(journal_path, ShortCause.WORKTREE_GONE), 30, "the loss to be named")
    assert _shown(repo, "fix--removed")["short_cause"] == "worktree-gone"
    dropped = flume_process("drop", "fix--removed", "--repository", str(repo))
    assert dropped.returncode == 0, dropped.stderr
    tidied = flume_process("tidy", "--repository", str(repo))
    assert tidied.returncode == 0, tidied.stdout + tidied.stderr
    assert "fix--removed: tidied" in tidied.stdout
    assert "made by hand" not in tidied.stdout
    assert "fix/removed holds 1 commit main lacks: kept" in tidied.stdout
    assert run_git(repo, "branch", "--list", "fix/removed").strip() != ""


def test_a_tidy_that_failed_exits_non_zero(tmp_path: Path, panes: Tmux) -> None:
    """A worktree git refuses to remove (locked): tidy names git's words and exits 1."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "locked", script(tmp_path, BUSY))
    wait_for(lambda: _working(journal_path), 60, "the prompt delivered")
    folder = place_of(journal_path).path
    run_git(repo, "worktree", "lock", "--reason", "a person's", folder)
    dropped = flume_process("drop", "fix--locked", "--repository", str(repo))
    assert dropped.returncode == 0, dropped.stderr
    tidied = flume_process("tidy", "--repository", str(repo))
    assert tidied.returncode == 1, tidied.stdout + tidied.stderr
    assert "failed: RemoveWorktree" in tidied.stdout
    _no_traceback(tidied)
    assert Path(folder).is_dir()


def test_a_branch_deleted_under_a_working_place_is_named_with_the_command_to_restore_it(
    tmp_path: Path, panes: Tmux
) -> None:
    """Deleted by git update-ref -d under a working agent: named, with the command to restore it."""
    del panes
    repo = agent_repository(tmp_path)
    journal_path = launch_test_agent(repo, "cut", script(tmp_path, BUSY))
    wait_for(lambda: _working(journal_path), 60, "the prompt delivered")
    head = place_of(journal_path).head
    assert head is not None
    run_git(repo, "update-ref", "-d", "refs/heads/fix/cut")

    wait_for(stopped_short(journal_path, ShortCause.BRANCH_GONE), 30, "the loss to be named")
    assert _shown(repo, "fix--cut")["short_cause"] == "branch-gone"
    command = f"git -C {repo} update-ref refs/heads/fix/cut {head}"
    assert command in _status_text(repo)
    refused = flume_process("retry", "fix--cut", "--repository", str(repo))
    assert refused.returncode != 0
    assert sessions_started(journal_path, "code", 2) == set()

    run_git(repo, "update-ref", "refs/heads/fix/cut", head)
    wait_for(lambda: not place_of(journal_path).branch_gone, 30, "the branch seen back")
    assert "is back at" in _status_text(repo)
    retried = flume_process("retry", "fix--cut", "--repository", str(repo))
    assert retried.returncode == 0, retried.stderr
    wait_for(lambda: sessions_started(journal_path, "code", 2), 30, "the retry's agent")


def _made_place(repo: Path, name: str) -> Place:
    """A fix place the core holds made, whose worktree the test made with git."""
    launch = Launch(
        repository=str(repo),
        kind=KindName("fix"),
        name=WorkName(name),
        brief="Mend it.",
        base=BranchName("main"),
        agent=AgentSettings(),
        waits=pset(),
    )
    path = place_path(launch)
    run_git(repo, "worktree", "add", "--quiet", "-b", f"fix/{name}", path, "main")
    head = run_git(repo, "rev-parse", "main").strip()
    kind = BUILTIN_KINDS[KindName("fix")]
    place = step(Settings(), None, Launched(at=Instant(0), launch=launch, kind=kind)).place
    made = WorktreeMade(at=Instant(1), path=path, branch=BranchName(f"fix/{name}"), head=head)  # type: ignore[arg-type]
    return step(Settings(), place, made).place


def _start(place: Place) -> list[object]:
    action = StartAgent(
        path=place.path, stage=StageName("code"), attempt=1, agent=place.launch.agent
    )
    return list(Performer(clock=time.time).perform(place, action))


def test_no_agent_starts_where_the_place_is_not_its_worktree_on_its_branch(
    tmp_path: Path,
) -> None:
    """START-ONLY-IN-PLACE in the shell: each start is checked against git, just before it."""
    repo = agent_repository(tmp_path)
    place = _made_place(repo, "here")
    folder = Path(place.path)

    run_git(folder, "checkout", "--quiet", "--detach")
    (failed,) = _start(place)
    assert isinstance(failed, ActionFailed)
    assert "not on its branch fix/here" in failed.output

    shutil.rmtree(folder)
    (failed,) = _start(place)
    assert isinstance(failed, ActionFailed)
    assert f"the worktree {folder} is gone" in failed.output

    folder.mkdir()
    (failed,) = _start(place)
    assert isinstance(failed, ActionFailed)
    assert f"git there resolves to {repo}" in failed.output
    assert "flume drop fix--here, then flume tidy" in failed.output
