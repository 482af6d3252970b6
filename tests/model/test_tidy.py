"""R10 tidy safety, model-checked: places share one repository with hand-made worktrees."""

from __future__ import annotations

from typing import NamedTuple

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from flume.core.actions import Action, DeleteBranch, KeepBranch, KeepPlace, RemoveWorktree
from flume.core.ids import BranchName, KindName, Sha
from flume.core.kinds import BUILTIN_KINDS
from flume.core.observations import DropAsked, TidyAsked, TidyFactsSeen
from flume.core.place import Life, TidyGathering, TidyWanted
from flume.core.settings import Settings
from flume.core.tidy import CHANGE, plan
from tests.model.world import BASE, CREW, REPOSITORY, FakeGit, FakeWorktree, FakeWorld

#: The kinds launched, a fix twice as often: the built-in ones and a kind a repository declared.
KINDS = ["fix", "fix", "change", "question", "crew"]


class Planned(NamedTuple):
    """One plan tidy made, with what it was made on."""

    facts: TidyFactsSeen
    kind: KindName
    life: Life
    force: bool
    actions: tuple[Action, ...]


class TidyMachine(RuleBasedStateMachine):
    """Flume's places and hand-made worktrees in one repository, committed to, landed, dropped."""

    places = Bundle("places")
    hand_made = Bundle("hand_made")

    @initialize()
    def repository(self) -> None:
        """A repository with one commit on main."""
        self.git = FakeGit()
        self.git.branches[BASE] = [Sha("c0000")]
        self.git.made_at[Sha("c0000")] = 0.0
        self.worktrees: dict[str, FakeWorktree] = {}
        self.worlds: list[FakeWorld] = []
        #: Every plan tidy made, with the facts it was made on.
        self.plans: list[Planned] = []
        self.count = 0

    def _world(self, kind: str = "fix") -> FakeWorld:
        return FakeWorld(
            settings=Settings(),
            kind=CREW if kind == CREW.name else BUILTIN_KINDS[KindName(kind)],
            git=self.git,
            worktrees=self.worktrees,
        )

    @rule(target=places, kind=st.sampled_from(KINDS))
    def launch(self, kind: str) -> FakeWorld:
        """Launch a place of flume's own."""
        self.count += 1
        world = self._world(kind)
        assert world.launch(name=f"p{self.count}") is None
        self.worlds.append(world)
        return world

    @rule(target=hand_made, in_the_way=st.booleans())
    def make_by_hand(self, in_the_way: bool) -> FakeWorktree:
        """Someone makes a worktree of their own under places/, on a branch of their own.

        It may stand where flume's next place would go, so that flume's launch meets it.
        """
        self.count += 1
        branch = BranchName(f"hand/{self.count}")
        self.git.branches[branch] = list(self.git.branches[BASE])
        name = f"p{self.count + 1}" if in_the_way else f"hand{self.count}"
        tree = FakeWorktree(path=f"{REPOSITORY}/places/fix--{name}", branch=branch, by_flume=False)
        self.worktrees[tree.path] = tree
        return tree

    @rule(world=places)
    def commit(self, world: FakeWorld) -> None:
        """The place's agent commits on its branch (if the branch is still there)."""
        assert world.place is not None
        if world.place.branch in self.git.branches:
            world.commit()

    @rule(tree=hand_made)
    def commit_by_hand(self, tree: FakeWorktree) -> None:
        """Someone commits on their hand-made worktree's branch."""
        if tree.branch in self.git.branches:
            self.git.commit(tree.branch, 0.0)

    @rule()
    def base_moves(self) -> None:
        """Someone else lands on main."""
        self.git.commit(BASE, 0.0)

    @rule(world=places)
    def branch_lands(self, world: FakeWorld) -> None:
        """The place's branch is landed on main (every commit of it now on main)."""
        assert world.place is not None
        if world.place.branch in self.git.branches:
            self.git.land(world.place.branch, BASE)

    @rule(world=places, dirty=st.booleans(), untracked=st.booleans())
    def change_files(self, world: FakeWorld, dirty: bool, untracked: bool) -> None:
        """Someone leaves uncommitted changes or untracked files in the place."""
        assert world.place is not None
        tree = self.worktrees.get(world.place.path)
        if tree is not None:
            tree.dirty, tree.untracked = dirty, untracked

    @rule(world=places, dirty=st.booleans(), untracked=st.booleans())
    def swap_worktree_by_hand(self, world: FakeWorld, dirty: bool, untracked: bool) -> None:
        """A person removes flume's worktree of a place and makes their own where it stood.

        Their worktree stands at the very path, on a branch of their own, maybe with changes:
        flume made the place, but what stands there now is not flume's.
        """
        place = world.place
        assert place is not None
        tree = self.worktrees.get(place.path)
        if tree is None or not tree.by_flume:
            return
        self.count += 1
        branch = BranchName(f"hand/{self.count}")
        self.git.branches[branch] = list(self.git.branches[BASE])
        self.worktrees[place.path] = FakeWorktree(
            path=place.path, branch=branch, by_flume=False, dirty=dirty, untracked=untracked
        )

    @rule(world=places, by_hand=st.booleans())
    def untracked_then_dropped(self, world: FakeWorld, by_hand: bool) -> None:
        """Untracked files alone, or a person's worktree, stand in the place; then it is dropped.

        Edges of the force and only-ours rules that chance rarely joins with a drop, which
        tidies at once.
        """
        if by_hand:
            self.swap_worktree_by_hand(world, dirty=False, untracked=False)
        else:
            self.change_files(world, dirty=False, untracked=True)
        self.drop(world)

    @rule(world=places)
    def drop(self, world: FakeWorld) -> None:
        """The caller drops the work; flume tidies it at once."""
        world.feed(DropAsked(at=world.instant()))

    @rule(world=places, force=st.booleans())
    def tidy(self, world: FakeWorld, force: bool) -> None:
        """The caller asks for a tidy, maybe with force."""
        world.feed(TidyAsked(at=world.instant(), force=force))

    @rule(world=places, squash=st.booleans())
    def land_the_fix(self, world: FakeWorld, squash: bool) -> None:
        """A fix's agents do their work: each stage runs to its end through step, to landing.

        The lander may land by squash: base gets one new commit and the branch keeps its own,
        which base lacks (one, when the agent committed once).
        """
        world.squash = squash
        for _stage in range(2):
            if not world.drive_stage():
                return

    @rule(
        tree=consumes(hand_made),
        force=st.booleans(),
        life=st.sampled_from(list(Life)),
        kind=st.sampled_from(KINDS),
    )
    def tidy_hand_made(self, tree: FakeWorktree, force: bool, life: Life, kind: str) -> None:
        """Tidy comes across a hand-made worktree, whatever state and kind it believes it in."""
        world = self._world()
        self.worlds.append(world)
        facts = TidyFactsSeen(
            at=world.instant(),
            worktree=world.worktree_facts(tree.path),
            branch=world.branch_facts(tree.branch, BASE),
        )
        actions = plan(
            kind=KindName(kind),
            life=life,
            made=False,
            worktree=facts.worktree,
            branch=facts.branch,
            force=force,
        )
        self.plans.append(Planned(facts, KindName(kind), life, force, actions))
        for action in actions:
            world.perform(action)

    def _all_plans(self) -> list[Planned]:
        found = list(self.plans)
        for world in self.worlds:
            for before, seen, decision in world.steps:
                if isinstance(seen, TidyFactsSeen) and before is not None:
                    found.append(
                        Planned(
                            seen,
                            before.launch.kind,
                            before.life,
                            isinstance(before.tidy, TidyWanted | TidyGathering)
                            and before.tidy.force,
                            decision.actions,
                        )
                    )
        return found

    @invariant()
    def removes_only_its_own(self) -> None:
        """TIDY-ONLY-OURS: no worktree flume did not make is removed, nor its branch deleted."""
        for world in self.worlds:
            assert all(by_flume for _path, by_flume, _dirty, _force in world.removed)
            assert not any(branch.startswith("hand/") for branch, _lacks in world.deleted)

    @invariant()
    def keeps_branches_ahead_of_base(self) -> None:
        """TIDY-KEEPS-AHEAD-BRANCH: a branch with commits base lacks stays, named with the count."""
        for world in self.worlds:
            assert all(lacks == 0 for _branch, lacks in world.deleted)
        for facts, _kind, _life, _force, actions in self._all_plans():
            branch = facts.branch
            if branch.exists and branch.base_lacks > 0:
                kept = [a for a in actions if isinstance(a, KeepBranch) and a.branch == branch.name]
                assert len(kept) == 1
                deleted = [a for a in actions if isinstance(a, DeleteBranch)]
                assert not deleted

    @invariant()
    def dropped_change_keeps_its_branch(self) -> None:
        """TIDY-DROPPED-CHANGE-KEEPS-BRANCH: a dropped change keeps its branch, loses its place.

        Its clean place goes; its branch stays whatever it holds, as the seed says.
        """
        for facts, kind, life, _force, actions in self._all_plans():
            if life is not Life.DROPPED or kind != CHANGE:
                continue
            assert not any(isinstance(a, DeleteBranch) for a in actions)
            if facts.branch.exists:
                assert any(isinstance(a, KeepBranch) for a in actions)
            clean = not (facts.worktree.dirty or facts.worktree.untracked)
            if facts.worktree.exists and facts.worktree.made_by_flume and clean:
                assert any(isinstance(a, RemoveWorktree) for a in actions)

    @invariant()
    def dropped_empty_branch_goes(self) -> None:
        """TIDY-DROPPED-EMPTY-BRANCH-GOES: other dropped work's empty branch goes with its place.

        A dropped fix, question or declared kind of flume's own, its place clean (or forced),
        whose branch holds nothing its base lacks: the place is removed and the branch deleted,
        so the name is free again. One whose branch holds commits its base lacks keeps it.
        """
        for facts, kind, life, force, actions in self._all_plans():
            worktree, branch = facts.worktree, facts.branch
            clean = force or not (worktree.dirty or worktree.untracked)
            ours = worktree.made_by_flume or not worktree.exists
            if life is not Life.DROPPED or kind == CHANGE or not clean or not ours:
                continue
            if worktree.exists:
                assert any(isinstance(a, RemoveWorktree) for a in actions)
            deleted = [a for a in actions if isinstance(a, DeleteBranch)]
            if branch.exists and branch.base_lacks == 0:
                assert deleted == [
                    DeleteBranch(branch=branch.name, base=branch.base, head_was=branch.head)
                ]
            else:
                assert not deleted

    @invariant()
    def tidied_only_when_nothing_is_left(self) -> None:
        """TIDY-DONE-ON-FACTS: a tidied place left no worktree of flume's; a branch left is named.

        The place is tidied on facts gathered after the removals, never on the removals asked.
        """
        for world in self.worlds:
            place = world.place
            if place is None or place.life is not Life.TIDIED:
                continue
            tree = self.worktrees.get(place.path)
            assert tree is None or not tree.by_flume
            if place.branch in self.git.branches:
                assert any(
                    isinstance(action, KeepBranch) and action.branch == place.branch
                    for action in world.actions
                )

    @invariant()
    def dirty_needs_force(self) -> None:
        """TIDY-DIRTY-NEEDS-FORCE: a worktree with changes is removed only with the force."""
        for world in self.worlds:
            assert all(force or not dirty for _path, _by_flume, dirty, force in world.removed)
        for facts, _kind, _life, force, actions in self._all_plans():
            changed = facts.worktree.dirty or facts.worktree.untracked
            if changed and not force:
                assert not any(isinstance(a, RemoveWorktree) for a in actions)
                assert any(isinstance(a, KeepPlace) for a in actions)

    @invariant()
    def landed_work_is_tidied(self) -> None:
        """R10: a finished, clean place of flume's goes; its branch too when base holds it."""
        for facts, _kind, life, force, actions in self._all_plans():
            worktree, branch = facts.worktree, facts.branch
            clean = force or not (worktree.dirty or worktree.untracked)
            if life is not Life.FINISHED or not worktree.made_by_flume or not clean:
                continue
            if worktree.exists:
                assert any(isinstance(a, RemoveWorktree) for a in actions)
            if branch.exists and branch.base_lacks == 0:
                assert any(isinstance(a, DeleteBranch) for a in actions)


TestTidy = TidyMachine.TestCase
