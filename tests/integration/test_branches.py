"""One ``git for-each-ref`` says what a launch asked of git one question at a time.

A launch's checks read every branch head, the base's commit and the remote's HEAD from
:func:`git.branches`. In every shape a repository's refs can take, that listing must answer as
:func:`git.heads`, :func:`git.resolve` and :func:`git.shared_branch` answer asked one by one:
with a remote or none, a remote HEAD pointing at a branch that is gone, one that is not
symbolic, a short name two refs could claim, a branch naming a tag, one naming nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flume.core.ids import BranchName
from flume.core.launch import AgentName, AgentSettings, Panes
from flume.core.settings import Settings
from flume.shell import process
from flume.shell.perform import launcher
from flume.shell.tools import git
from tests.integration.places_kit import commit, repository, run_git


def _plain(repo: Path) -> None:
    """No remote at all."""
    del repo


def _cloned(repo: Path) -> None:
    """origin/HEAD names origin/main, and a local main is there."""
    run_git(repo, "update-ref", "refs/remotes/origin/main", "main")
    run_git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")


def _remote_branch_elsewhere(repo: Path) -> None:
    """origin/HEAD names origin/trunk, which has no local branch; HEAD is on main."""
    run_git(repo, "update-ref", "refs/remotes/origin/trunk", "main")
    run_git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")


def _remote_head_gone(repo: Path) -> None:
    """origin/HEAD names origin/master, pruned; a local master is still there, HEAD on main."""
    run_git(repo, "branch", "master")
    run_git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/master")


def _remote_head_not_symbolic(repo: Path) -> None:
    """origin/HEAD holds a commit, not a branch's name."""
    run_git(repo, "update-ref", "--no-deref", "refs/remotes/origin/HEAD", "main")


def _ambiguous(repo: Path) -> None:
    """A local branch named origin/main makes the remote's short name longer."""
    _cloned(repo)
    run_git(repo, "branch", "origin/main")


def _head_names_a_tag(repo: Path) -> None:
    """A branch whose head is an annotated tag, the remote's HEAD branch among them.

    git makes no such branch itself (update-ref refuses): its ref file is written by hand.
    """
    run_git(repo, "tag", "-a", "-m", "tagged", "v1", "main")
    tag = run_git(repo, "rev-parse", "v1").strip()
    (repo / ".git" / "refs" / "heads" / "tagged").write_text(f"{tag}\n")
    run_git(repo, "update-ref", "refs/remotes/origin/tagged", "main")
    run_git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/tagged")


def _dangling_branch(repo: Path) -> None:
    """A branch that is a symbolic ref to a branch that is gone, and one to main."""
    run_git(repo, "symbolic-ref", "refs/heads/nowhere", "refs/heads/gone")
    run_git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main")


def _detached(repo: Path) -> None:
    """No remote, and the main worktree's HEAD detached."""
    run_git(repo, "checkout", "-q", "--detach", "main")


SHAPES: list[Callable[[Path], None]] = [
    _plain,
    _cloned,
    _remote_branch_elsewhere,
    _remote_head_gone,
    _remote_head_not_symbolic,
    _ambiguous,
    _head_names_a_tag,
    _dangling_branch,
    _detached,
]
NAMES = ["main", "master", "trunk", "tagged", "nowhere", "alias", "origin/main", "fix/x", "gone"]


@pytest.mark.parametrize("shape", SHAPES, ids=[shape.__name__.strip("_") for shape in SHAPES])
def test_the_listing_answers_as_git_asked_one_question_at_a_time(
    tmp_path: Path, shape: Callable[[Path], None]
) -> None:
    """Heads, each name's commit and the shared branch: the same either way."""
    repo = repository(tmp_path / "repo")
    commit(repo, "more.txt")
    run_git(repo, "branch", "fix/x", "main~1")
    shape(repo)
    listed = git.branches(repo)
    assert listed.listed
    assert listed.heads == git.heads(repo)
    for name in map(BranchName, NAMES):
        assert listed.resolve(name) == git.resolve(repo, name), name
    assert git.shared_branch(repo, main=repo, listed=listed) == git.shared_branch(repo, main=repo)


def test_the_shapes_reach_every_way_the_shared_branch_is_found(tmp_path: Path) -> None:
    """The shapes above are not all alike: each way of finding the shared branch is met."""
    found = {}
    for shape in SHAPES:
        repo = repository(tmp_path / shape.__name__)
        shape(repo)
        found[shape.__name__] = git.shared_branch(repo, main=repo, listed=git.branches(repo))
    assert found["_cloned"] == "main"
    assert found["_remote_branch_elsewhere"] == "main"  # origin's trunk has no local branch
    assert found["_remote_head_gone"] == "master"  # gone from origin, still here
    assert found["_ambiguous"] == "origin/main"  # git's short name is remotes/origin/main
    assert found["_head_names_a_tag"] == "tagged"
    assert found["_detached"] is None


def test_a_listing_git_refused_knows_nothing_and_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``for-each-ref`` that failed lists nothing: each question then goes to git itself."""
    repo = repository(tmp_path / "repo")
    _cloned(repo)
    real = git.run

    def refusing(cwd: Path, *args: str, pass_fds: tuple[int, ...] = ()) -> process.Ran:
        if args[0] == "for-each-ref":
            return process.Ran(argv=("git", *args), status=128, out="", err="fatal: refused")
        return real(cwd, *args, pass_fds=pass_fds)

    monkeypatch.setattr(git, "run", refusing)
    listed = git.branches(repo)
    assert not listed.listed
    assert listed.heads == {}
    assert listed.resolve(BranchName("main")) == git.resolve(repo, BranchName("main"))
    assert listed.resolve(BranchName("main")) is not None
    assert git.shared_branch(repo, main=repo, listed=listed) == "main"


def test_a_cloned_repository_s_launch_asks_git_twice(tmp_path: Path) -> None:
    """Where the repository is, then one listing: the remote's HEAD names the base.

    (With no remote, the main worktree's branch is asked too: test_launch counts those.)
    """
    repo = repository(tmp_path / "repo")
    _cloned(repo)
    request = launcher.Request(
        repository=repo,
        kind="fix",
        name="typo",
        brief="Mend it.",
        agent=AgentSettings(agent=AgentName.TEST, panes=Panes.PRINT),
    )
    before = process.count.runs["git"]
    seen = launcher.check(request, Settings(), lambda: 1.0)
    assert process.count.runs["git"] - before == 2
    assert seen.launch.base == "main"
    assert seen.start == git.resolve(repo, BranchName("main"))
