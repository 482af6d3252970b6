"""R10 against real git (L2): tidy never loses a commit, on histories Hypothesis makes up.

A state machine drives a real repository and flume's real supervisor (in this process, with
agents that take every prompt at once and a lander that lands for real): commits on main and on
place branches, landings by rebase, merge and squash, landings by hand, drops, worktrees made by
hand, uncommitted and untracked files, on fixes, changes and questions. After every step it
runs tidy and checks that no commit reachable before is unreachable after, that every branch
tidy deleted had ``git rev-list --count main..branch`` equal to 0, that nothing made by hand was
touched, and, as each place ends tidied, that its branch is left exactly when the rules say:
when it holds commits main lacks, or it is a dropped change's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import attrs
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from flume.core.actions import DeleteBranch, RemoveWorktree
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant
from flume.core.observations import BranchDeleted, DropAsked, Observation, SubmitAsked
from flume.core.place import Life, Place, Working
from flume.core.settings import Settings
from flume.shell.commands import tidying
from flume.shell.perform import launcher
from flume.shell.perform.performer import Performer
from flume.shell.store import places
from flume.shell.tools import git
from tests.integration.places_kit import (
    GIT_IDENTITY,
    GitLander,
    Harness,
    commit,
    repository,
    run_git,
)

CI = os.environ.get("HYPOTHESIS_PROFILE") == "ci"


@attrs.define
class Watched(Performer):
    """The supervisor's performer, watched: what each removal of tidy's did to the history."""

    #: (branch, git rev-list --count base..branch) just before each branch deletion asked.
    deletions: list[tuple[str, int | None]] = attrs.field(factory=list)
    #: Commits reachable before a removal and not after it.
    lost: list[str] = attrs.field(factory=list)

    def _reachable(self, repository: Path) -> set[str]:
        return set(run_git(repository, "rev-list", "--all").split())

    def delete_branch(self, place: Place, action: DeleteBranch) -> list[Observation]:
        """Delete as the shell does, recording the count and any commit lost."""
        repository = Path(place.launch.repository)
        before = self._reachable(repository)
        count = git.lacks(repository, action.branch, action.base)
        observed = super().delete_branch(place, action)
        if any(isinstance(seen, BranchDeleted) for seen in observed):
            self.deletions.append((action.branch, count))
        self.lost.extend(sorted(before - self._reachable(repository)))
        return observed

    def remove_worktree(self, place: Place, action: RemoveWorktree) -> list[Observation]:
        """Remove as the shell does, recording any commit lost."""
        repository = Path(place.launch.repository)
        before = self._reachable(repository)
        observed = super().remove_worktree(place, action)
        self.lost.extend(sorted(before - self._reachable(repository)))
        return observed


MAIN = BranchName("main")


class TidyOnRealGit(RuleBasedStateMachine):
    """Places and hand-made worktrees in one real repository, tidied after every step."""

    places = Bundle("places")
    hand_made = Bundle("hand_made")

    @initialize(target=places)
    def repository(self) -> MultipleResults[str]:
        """A fresh host and repository, a supervisor following it, two fixes and a change launched.

        Launching here (and not only in a rule) means every example has places to work on:
        Hypothesis turns rules off at random per example, and a run with ``launch`` off would
        do nothing else.
        """
        self.saved = {name: os.environ.get(name) for name in ("XDG_STATE_HOME", *GIT_IDENTITY)}
        self.folder = Path(tempfile.mkdtemp(prefix="flume-tidy-git-"))
        os.environ["XDG_STATE_HOME"] = str(self.folder / "state")
        os.environ.update(GIT_IDENTITY)
        self.repo = repository(self.folder / "repo")
        self.harness = Harness.make(GitLander())
        old = self.harness.supervisor.performer
        self.watched = Watched(clock=old.clock, agents=old.agents, lander=old.lander)
        self.harness.supervisor.performer = self.watched
        self.count = 0
        #: Worktrees made by hand: path -> the files in them that must survive.
        self.hand: dict[Path, str] = {}
        #: Branches deleted by tidy, with what main lacked of each just before.
        self.deleted: list[tuple[str, int]] = []
        #: Places seen tidied, and each one's branch judged against the rules as it was tidied.
        self.tidied: set[str] = set()
        #: Places tidied whose branch the rules and git disagree on, with why.
        self.misjudged: list[str] = []
        return multiple(self._launch(), self._launch(), self._launch("change"))

    def teardown(self) -> None:
        """Stop the supervisor's workers, restore the environment, remove the folder."""
        if hasattr(self, "harness"):
            self.harness.close()
            for name, value in self.saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            shutil.rmtree(self.folder, ignore_errors=True)

    # --- helpers ---------------------------------------------------------------------------

    def _journal(self, name: str) -> Path:
        return places.journals_dir(self.repo) / name / places.JOURNAL

    def _place(self, name: str) -> Place | None:
        path = self._journal(name)
        return self.harness.place(path) if path.exists() else None

    def _reachable(self) -> set[str]:
        return set(run_git(self.repo, "rev-list", "--all").split())

    def _lacks(self) -> dict[str, int]:
        counts = {}
        for branch in git.heads(self.repo):
            if branch != "main":
                found = git.lacks(self.repo, branch, MAIN)
                assert found is not None
                counts[branch] = found
        return counts

    def _tidy(self, *, force: bool) -> None:
        """Tidy every finished or dropped place as ``flume tidy`` does, checking R10 around it."""
        reachable, lacks = self._reachable(), self._lacks()
        changed = set()
        for found in places.places_of(self.repo, Settings()):
            path = Path(found.place.path) if found.place else None
            if path is not None and path.is_dir():
                changes = git.changes(path)
                if changes.dirty or changes.untracked:
                    changed.add(path)
            tidying.ask(found, force=force, settings=Settings(), clock=self.harness.clock)
        self.harness.settle()
        if not force:
            gone = sorted(str(path) for path in changed if not path.exists())
            assert not gone, f"tidy removed places with changes, without force: {gone}"
        after = set(git.heads(self.repo))
        for branch, count in lacks.items():
            if branch not in after:
                self.deleted.append((branch, count))
        lost = reachable - self._reachable()
        assert not lost, f"tidy left commits unreachable: {sorted(lost)}"
        self._judge_newly_tidied()

    def _judge_newly_tidied(self) -> None:
        """Judge each place tidied since the last look: is its branch left as R10 says.

        Judged at once, on the history tidy decided on (nothing has moved since this step's
        settle): kept when it holds commits main lacks (L2), or it is a dropped change's (the
        seed); deleted otherwise, so a dropped fix or question frees its name.
        """
        heads = git.heads(self.repo)
        for found in places.places_of(self.repo, Settings()):
            place = found.place
            if place is None or place.life is not Life.TIDIED or str(found.journal) in self.tidied:
                continue
            self.tidied.add(str(found.journal))
            dropped_change = place.launch.kind == "change" and place.landed_at is None
            ahead = place.branch in heads and (git.lacks(self.repo, place.branch, MAIN) or 0) > 0
            should_stay = ahead or dropped_change
            if (place.branch in heads) != should_stay:
                kept = "kept" if place.branch in heads else "deleted"
                self.misjudged.append(
                    f"{place.branch} {kept}, ahead={ahead}, kind={place.launch.kind}"
                )

    # --- the world -------------------------------------------------------------------------

    @rule(target=places, kind=st.sampled_from(["fix", "change", "question"]))
    def launch(self, kind: str) -> str:
        """Launch a place; the supervisor makes it and starts its first stage."""
        return self._launch(kind)

    def _launch(self, kind: str = "fix") -> str:
        self.count += 1
        request = launcher.Request(
            repository=self.repo, kind=kind, name=f"p{self.count}", brief="Mend it."
        )
        made = launcher.launch(request, Settings(), self.harness.clock)
        self.harness.settle()
        self._tidy(force=False)
        return made.place

    @rule(target=hand_made, inside=st.booleans())
    def make_by_hand(self, inside: bool) -> Path:
        """Someone adds a worktree of their own, under places/ or beside the repository."""
        self.count += 1
        where = (self.repo / "places" if inside else self.folder) / f"hand-{self.count}"
        run_git(self.repo, "worktree", "add", "-q", "-b", f"hand/{self.count}", str(where))
        commit(where, "mine.txt", "keep me\n")
        self.hand[where] = "mine.txt"
        self._tidy(force=False)
        return where

    @rule(name=places)
    def commit_in_place(self, name: str) -> None:
        """Someone (the agent, or a person) commits in the place, if it is still there."""
        place = self._place(name)
        if place is not None and Path(place.path).is_dir():
            self.count += 1
            commit(Path(place.path), f"work-{self.count}.txt")
            self.harness.settle()
        self._tidy(force=False)

    @rule()
    def commit_on_main(self) -> None:
        """Someone else lands on main."""
        self.count += 1
        commit(self.repo, f"main-{self.count}.txt")
        self.harness.settle()
        self._tidy(force=False)

    @rule(name=places, how=st.sampled_from(["rebase", "merge", "squash"]))
    def land_by_hand(self, name: str, how: str) -> None:
        """Someone lands the place's branch on main by hand, without flume."""
        place = self._place(name)
        if place is not None and place.branch in git.heads(self.repo):
            GitLander(how).land_branch(self.repo, Path(place.path), place.branch, MAIN)
            self.harness.settle()
        self._tidy(force=False)

    @rule(name=places, how=st.sampled_from(["rebase", "merge", "squash"]))
    def carry_to_landing(self, name: str, how: str) -> None:
        """The fix's stages run to its landing through flume, landed one way or another."""
        place = self._place(name)
        if (
            place is not None
            and place.life is Life.ACTIVE
            and place.stage.name == "code"
            and isinstance(place.stage.phase, Working)
        ):
            self.harness.lander.how = how
            self.count += 1
            commit(Path(place.path), f"fix-{self.count}.txt")
            self.harness.settle()
            self.harness.pass_time(Settings().quiet_seconds + 1)
            place = self._place(name)
            assert place is not None
            assert place.agent is not None
            seen = SubmitAsked(at=Instant(self.harness.clock()), session=place.agent.session)
            places.command(self._journal(name), seen, Settings())
            self.harness.settle()
            self.harness.pass_time(Settings().quiet_seconds + 1)
            self.harness.pass_time(1)
        self._tidy(force=False)

    @rule(name=places)
    def drop(self, name: str) -> None:
        """The caller drops the work, where the rules allow it."""
        with contextlib.suppress(UsageError, FileNotFoundError):
            places.command(
                self._journal(name), DropAsked(at=Instant(self.harness.clock())), Settings()
            )
        self.harness.settle()
        self._tidy(force=False)

    @rule(name=places, tracked=st.booleans())
    def leave_changes(self, name: str, tracked: bool) -> None:
        """Someone leaves uncommitted or untracked changes in the place."""
        place = self._place(name)
        if place is not None and Path(place.path).is_dir():
            target = Path(place.path) / ("README.md" if tracked else "scratch.txt")
            target.write_text("unsaved\n", encoding="utf-8")
        self._tidy(force=False)

    @precondition(lambda self: bool(self.hand))
    @rule(where=hand_made, tracked=st.booleans())
    def leave_changes_by_hand(self, where: Path, tracked: bool) -> None:
        """Someone leaves changes in a worktree of their own."""
        (where / ("mine.txt" if tracked else "scratch.txt")).write_text(
            "edited\n", encoding="utf-8"
        )
        self._tidy(force=False)

    @rule()
    def tidy_with_force(self) -> None:
        """The caller tidies with --force: changes in finished places may go, commits never."""
        self._tidy(force=True)

    # --- what must hold --------------------------------------------------------------------

    @invariant()
    def deleted_branches_were_on_main(self) -> None:
        """L2: every branch tidy deleted had git rev-list --count main..branch equal to 0.

        Checked at each deletion (the supervisor tidies by itself, not only when asked), and
        across each tidy asked; and no removal of tidy's left a commit unreachable.
        """
        if hasattr(self, "watched"):
            assert all(count == 0 for _branch, count in self.watched.deletions), self.watched
            assert not self.watched.lost, self.watched.lost
            assert all(count == 0 for _branch, count in self.deleted), self.deleted

    @invariant()
    def tidied_branches_are_left_as_the_rules_say(self) -> None:
        """A tidied place's branch stays exactly when it holds work, or is a dropped change's.

        Work is commits main lacks; a dropped fix's or question's branch holding nothing new is
        gone with its place.
        """
        if hasattr(self, "misjudged"):
            assert not self.misjudged, self.misjudged

    @invariant()
    def hand_made_worktrees_are_untouched(self) -> None:
        """A worktree made by hand is never removed, nor its branch deleted."""
        if not hasattr(self, "hand"):
            return
        heads = git.heads(self.repo)
        for where, name in self.hand.items():
            assert (where / name).exists(), where
            assert where.resolve() in {p.resolve() for p in git.worktree_paths(self.repo)}
        assert all(f"hand/{where.name.removeprefix('hand-')}" in heads for where in self.hand)


TidyOnRealGit.TestCase.settings = hypothesis_settings(
    max_examples=25 if CI else 8,
    stateful_step_count=12 if CI else 8,
    deadline=None,
)
TestTidyOnRealGit = TidyOnRealGit.TestCase
