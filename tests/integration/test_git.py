"""Keep the fake honest: FakeGit and real git, driven by one rule set, agree (STYLE rule 19).

The tidy machine judges tidy against FakeGit's count of the commits a base lacks; this machine
runs the same commits, branches, merges, squash landings and rebases on a real repository in a
temporary directory and checks, after every step, that ``git rev-list --count base..branch``
says what FakeGit says.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from flume.core.ids import BranchName, Sha
from flume.shell.tools import git
from flume.testing.scenario import make_repository
from tests.model.world import FakeGit

MAIN = BranchName("main")
BRANCHES = [BranchName(name) for name in ("fix/a", "fix/b", "change/c")]


class GitAgreement(RuleBasedStateMachine):
    """The same history made twice, in FakeGit and in a real repository."""

    @initialize()
    def repository(self) -> None:
        """An empty-tree repository with one commit on main, and its fake twin."""
        self.folder = tempfile.TemporaryDirectory(prefix="flume-git-")
        self.path = Path(self.folder.name)
        assert git.run(self.path, "init", "-q", "-b", "main").ok
        self.tree = git.run(self.path, "hash-object", "-t", "tree", "-w", "--stdin").out.strip()
        self.fake = FakeGit()
        self.real: dict[Sha, str] = {}
        root = self._commit_object(parents=[])
        assert git.run(self.path, "update-ref", "refs/heads/main", root).ok
        self.fake.branches[MAIN] = [Sha("root")]
        self.real[Sha("root")] = root

    def teardown(self) -> None:
        """Remove the repository."""
        folder = getattr(self, "folder", None)
        if folder is not None:
            folder.cleanup()

    def _commit_object(self, parents: list[str]) -> str:
        # A message of its own: two commits of one tree, parent and second are otherwise the
        # same object, and git would count them as one.
        self.made = getattr(self, "made", 0) + 1
        message = f"commit {self.made}"
        args = [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit-tree",
            self.tree,
            "-m",
            message,
        ]
        for parent in parents:
            args += ["-p", parent]
        ran = git.run(self.path, *args)
        assert ran.ok, ran.err
        return ran.out.strip()

    def _head(self, branch: BranchName) -> str:
        found = git.resolve(self.path, branch)
        assert found is not None
        return found

    def _move(self, branch: BranchName, sha: str) -> None:
        assert git.run(self.path, "update-ref", f"refs/heads/{branch}", sha).ok

    @precondition(lambda self: len(self.fake.branches) < 1 + len(BRANCHES))
    @rule(branch=st.sampled_from(BRANCHES))
    def cut(self, branch: BranchName) -> None:
        """A place's branch is cut from main's current revision."""
        if branch in self.fake.branches:
            return
        self.fake.branches[branch] = list(self.fake.branches[MAIN])
        self._move(branch, self._head(MAIN))

    @rule(branch=st.sampled_from([MAIN, *BRANCHES]))
    def commit(self, branch: BranchName) -> None:
        """A commit on a branch (main moving on, or an agent's work)."""
        if branch not in self.fake.branches:
            return
        sha = self.fake.commit(branch, 0.0)
        real = self._commit_object(parents=[self._head(branch)])
        self.real[sha] = real
        self._move(branch, real)

    @rule(branch=st.sampled_from(BRANCHES))
    def merge(self, branch: BranchName) -> None:
        """The branch lands by a merge: main holds every commit of it."""
        if branch not in self.fake.branches:
            return
        self.fake.land(branch, MAIN)
        merged = self._commit_object(parents=[self._head(MAIN), self._head(branch)])
        self._move(MAIN, merged)

    @rule(branch=st.sampled_from(BRANCHES))
    def squash(self, branch: BranchName) -> None:
        """The branch lands squashed: main gets a new commit; the branch's own stay unlanded."""
        if branch not in self.fake.branches:
            return
        self.commit(MAIN)

    @rule(branch=st.sampled_from(BRANCHES))
    def rebase(self, branch: BranchName) -> None:
        """The branch is rebased on main: its own commits are made anew on top of main."""
        if branch not in self.fake.branches:
            return
        on_main = set(self.fake.branches[MAIN])
        own = [sha for sha in self.fake.branches[branch] if sha not in on_main]
        self.fake.branches[branch] = list(self.fake.branches[MAIN])
        self._move(branch, self._head(MAIN))
        for _ in own:
            self.commit(branch)

    @invariant()
    def they_agree_on_what_main_lacks(self) -> None:
        """For every branch, FakeGit's count of commits main lacks is git rev-list's."""
        for branch in self.fake.branches:
            assert self.fake.lacks(branch, MAIN) == git.lacks(self.path, branch, MAIN), branch
        assert set(git.heads(self.path)) == set(self.fake.branches)


GitAgreement.TestCase.settings = settings(
    max_examples=min(settings().max_examples, 60),
    stateful_step_count=min(settings().stateful_step_count, 25),
    deadline=None,
)
TestGitAgreement = GitAgreement.TestCase


def test_looking_at_a_worktree_takes_no_lock_and_writes_nothing(tmp_path: Path) -> None:
    """``git.changes`` reads a worktree whose files' times moved, without rewriting its index.

    Plain ``git status`` refreshes the index and writes it back under ``index.lock``: a landing
    looking for that lock at the same moment (or a person's git) would find it held.
    """
    repo = make_repository(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    index = repo / ".git" / "index"
    before = index.stat().st_mtime_ns
    for name in ("a.txt", "b.txt"):  # the same content, newer times: the index is stale
        path = repo / name
        stamp = path.stat().st_mtime_ns + 5_000_000_000
        os.utime(path, ns=(stamp, stamp))
    assert git.changes(repo) == git.WorktreeChanges(dirty=False, untracked=False)
    assert index.stat().st_mtime_ns == before
