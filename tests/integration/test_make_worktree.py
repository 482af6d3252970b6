"""``MakeWorktree`` performed on real git, in each state a crash can leave it (RESTART-PENDING).

A supervisor killed while making a place performs the action again once it is back: before the
branch was cut, after it was cut but before its worktree was added, or after both. Each must end
in the one place on the one branch from the launch's start, or in a failure naming what stands
in the way, never in a second branch or worktree. A first make asks git no more than it needs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import attrs
import pytest

from flume.core.actions import MakeWorktree
from flume.core.ids import BranchName, Sha
from flume.core.observations import ActionFailed, Observation, WorktreeMade
from flume.shell import process
from flume.shell.perform.performer import Performer
from flume.shell.tools import git
from tests.integration.places_kit import commit, repository, run_git

BRANCH = BranchName("fix/typo")


def make(repo: Path, *, look_only: bool = False) -> MakeWorktree:
    """The action a launch of ``fix typo`` in ``repo`` asks for, from main's head."""
    start = Sha(run_git(repo, "rev-parse", "main").strip())
    return MakeWorktree(
        repository=str(repo),
        path=str(repo / "places" / "fix--typo"),
        branch=BRANCH,
        base=BranchName("main"),
        start=start,
        look_only=look_only,
    )


def perform(action: MakeWorktree) -> tuple[list[Observation], int]:
    """What the performer reports, and how many git processes it ran."""
    before = process.count.runs["git"]
    seen = Performer(clock=lambda: 1.0).make_worktree(action)
    return seen, process.count.runs["git"] - before


def worktrees(repo: Path) -> dict[Path, BranchName | None]:
    """Every worktree git lists, resolved."""
    return {path.resolve(): branch for path, branch in git.worktree_paths(repo).items()}


def made(action: MakeWorktree, seen: list[Observation]) -> None:
    """The place stands on its branch at the start, and the report says so."""
    assert seen == [WorktreeMade(at=1.0, path=action.path, branch=BRANCH, head=action.start)]
    repo, path = Path(action.repository), Path(action.path)
    assert worktrees(repo)[path.resolve()] == BRANCH
    assert run_git(repo, "rev-parse", BRANCH).strip() == action.start
    assert (path / "README.md").read_text() == "hello\n"


def test_a_first_make_cuts_the_branch_and_adds_the_worktree_in_one_git(tmp_path: Path) -> None:
    """Nothing stands at the path: one ``git worktree add -b``, nothing looked at first.

    ``places/`` is excluded in the repository's own git folder, found without asking git.
    """
    repo = repository(tmp_path / "repo")
    action = make(repo)
    commit(repo, "later.txt")  # the base moved on since the launch: the start stands
    seen, runs = perform(action)
    made(action, seen)
    assert runs == 1
    assert (repo / ".git" / "info" / "exclude").read_text().splitlines().count("/places/") == 1


def test_made_again_after_a_crash_it_reports_the_place_and_makes_nothing(tmp_path: Path) -> None:
    """Performed twice (killed between making and journaling): the same report, one worktree."""
    repo = repository(tmp_path / "repo")
    action = make(repo)
    made(action, perform(action)[0])
    seen, _ = perform(action)
    made(action, seen)
    assert len(worktrees(repo)) == 2
    assert (repo / ".git" / "info" / "exclude").read_text().splitlines().count("/places/") == 1


def test_a_branch_cut_before_a_crash_gets_its_worktree(tmp_path: Path) -> None:
    """Killed after ``git branch`` and before the worktree: the worktree is added on it."""
    repo = repository(tmp_path / "repo")
    action = make(repo)
    run_git(repo, "branch", BRANCH, "main")
    seen, _ = perform(action)
    made(action, seen)


def test_a_branch_elsewhere_or_another_worktree_in_the_way_fails_and_names_it(
    tmp_path: Path,
) -> None:
    """Nothing is moved or made over what someone else left: the failure says what stands."""
    repo = repository(tmp_path / "repo")
    action = make(repo)
    head = commit(repo, "other.txt")
    run_git(repo, "branch", BRANCH, head)
    (failed,) = perform(action)[0]
    assert isinstance(failed, ActionFailed)
    assert failed.output == f"the branch {BRANCH} already exists at {head}, not at {action.start}"
    assert run_git(repo, "rev-parse", BRANCH).strip() == head

    other = repository(tmp_path / "other")
    action = make(other)
    run_git(other, "worktree", "add", "--quiet", "-b", "fix/else", action.path, "main")
    (failed,) = perform(action)[0]
    assert isinstance(failed, ActionFailed)
    assert failed.output == f"a worktree of fix/else already stands at {action.path}"
    assert git.resolve(other, BRANCH) is None


def test_a_make_git_refuses_is_a_failure_in_git_s_words(tmp_path: Path) -> None:
    """A worktree git adds but whose checkout hook fails is reported failed, as git said."""
    repo = repository(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho 'the hook says no' >&2\nexit 3\n")
    hook.chmod(0o755)
    action = make(repo)
    (failed,) = perform(action)[0]
    assert isinstance(failed, ActionFailed)
    assert failed.status == 3
    assert failed.output == "the hook says no"
    assert failed.argv is not None
    assert list(failed.argv[5:9]) == ["worktree", "add", "--quiet", "-b"]
    assert git.resolve(repo, BRANCH) is not None  # made, then refused: nothing undone, no retry


def test_a_look_only_make_makes_nothing(tmp_path: Path) -> None:
    """Dropped before it was seen made: nothing made, nothing reported."""
    repo = repository(tmp_path / "repo")
    seen, _ = perform(make(repo, look_only=True))
    assert seen == []
    assert git.resolve(repo, BRANCH) is None
    assert len(worktrees(repo)) == 1


@pytest.mark.parametrize("layout", ["gitfile", "commondir", "environment"])
def test_places_are_excluded_where_git_keeps_the_repository(
    tmp_path: Path, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``.git`` file, a ``.git`` folder sharing another's, ``$GIT_DIR``: git says where, told.

    Only a ``.git`` folder of a repository's own is written to without asking git.
    """
    repo = repository(tmp_path / "repo")
    shared = repository(tmp_path / "shared") / ".git"
    if layout == "gitfile":
        shutil.rmtree(repo / ".git")
        (repo / ".git").write_text(f"gitdir: {shared}\n")
    elif layout == "commondir":
        (repo / ".git" / "commondir").write_text(f"{shared}\n")
    else:
        monkeypatch.setenv("GIT_DIR", str(shared))
    said = run_git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
    assert Path(said.strip()) == shared
    git.exclude(repo, "/places/")
    assert (shared / "info" / "exclude").read_text().splitlines().count("/places/") == 1
    own = repo / ".git" / "info" / "exclude"
    assert not own.exists() or "/places/" not in own.read_text().splitlines()


def test_a_make_git_refuses_with_nothing_standing_is_looked_at_once(tmp_path: Path) -> None:
    """A first make git refuses, having made nothing (the start is no commit): its words, once.

    The look that follows finds nothing of the place's, and asks git to make it no second time.
    """
    repo = repository(tmp_path / "repo")
    action = attrs.evolve(make(repo), start=Sha("0" * 40))
    (failed,), runs = perform(action)
    assert isinstance(failed, ActionFailed)
    assert failed.output == f"fatal: not a valid branch point: '{action.start}'"
    assert runs == 3
    assert git.resolve(repo, BRANCH) is None
    assert len(worktrees(repo)) == 1


def test_a_file_at_the_path_is_looked_at_and_nothing_is_made_over_it(tmp_path: Path) -> None:
    """Something a person left at the path: git is not asked to make the place over it."""
    repo = repository(tmp_path / "repo")
    action = make(repo)
    Path(action.path).parent.mkdir()
    Path(action.path).write_text("mine\n")
    (failed,) = perform(action)[0]
    assert isinstance(failed, ActionFailed)
    said = f"{action.path} already exists and is no worktree; nothing is made over it"
    assert failed.output == said
    assert Path(action.path).read_text() == "mine\n"
    assert git.resolve(repo, BRANCH) is None


def test_a_worktree_added_again_from_a_branch_gone_too_names_the_exact_restore(
    tmp_path: Path,
) -> None:
    """PLACE-REBUILT, WF-NO-LOST-COMMIT: a branch deleted with its worktree is never cut anew.

    The retry's make is refused naming the ``git update-ref`` that restores the branch at the
    head flume last saw; run as named, the same make adds the worktree again with the commit.
    """
    repo = repository(tmp_path / "repo")
    first = make(repo)
    made(first, perform(first)[0])
    head = commit(Path(first.path), "work.txt")
    shutil.rmtree(first.path)
    run_git(repo, "update-ref", "-d", f"refs/heads/{BRANCH}")
    again = attrs.evolve(first, again=True, head=head)
    (failed,) = perform(again)[0]
    assert isinstance(failed, ActionFailed)
    restore = f"git -C {repo} update-ref refs/heads/{BRANCH} {head}"
    assert (
        failed.output
        == f"the branch {BRANCH} does not exist: restore it with {restore}, then retry"
    )
    assert git.resolve(repo, BRANCH) is None
    run_git(repo, "update-ref", f"refs/heads/{BRANCH}", head)
    (rebuilt,) = perform(again)[0]
    assert rebuilt == WorktreeMade(at=1.0, path=first.path, branch=BRANCH, head=head)
    assert (Path(first.path) / "work.txt").is_file()
