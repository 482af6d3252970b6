"""A fleet place carried again on another host, model-checked (FLEET-CARRIED-HEAD).

The fleet moves a place whose host was lost to another host, which launches it anew from the
head the lost host last pushed. The simpler model beside the core: the new place's worktree is
cut at that head (its work goes on from there), and the place's ``start`` stays the base's
revision at launch, which the lander rebases the place's own commits from: every commit since
the launch lands, those made on the lost host among them. A place launched plainly is cut from
the base, as ever. Both hold after a restart, which asks the worktree again from the journal.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from flume.core.actions import Land, MakeWorktree
from flume.core.ids import BranchName, Instant, KindName, Sha, WorkName
from flume.core.kinds import BUILTIN_KINDS
from flume.core.launch import Launch
from flume.core.observations import Launched
from flume.core.settings import Settings
from flume.core.stage import land
from flume.core.step import pending, replay, step

#: The base's revision at each launch, and the heads lost hosts pushed.
BASES = [Sha("b0000"), Sha("b1111")]
PUSHED = [Sha("c0ffee1"), Sha("c0ffee2")]


class CarriedMachine(RuleBasedStateMachine):
    """Fixes launched plainly or carried from a pushed head; each asks for its worktree."""

    @initialize()
    def start(self) -> None:
        """No places yet."""
        #: Each launch: its journal, what its worktree was asked at, and its carried head.
        self.launched: list[tuple[list[Launched], MakeWorktree, Sha | None, Sha]] = []

    @rule(base=st.sampled_from(BASES), carried=st.none() | st.sampled_from(PUSHED))
    def launch(self, base: Sha, carried: Sha | None) -> None:
        """A host launches a fix: plainly, or carried again from a lost host's pushed head."""
        launch = Launch(
            repository="/src/app",
            kind=KindName("fix"),
            name=WorkName(f"p{len(self.launched)}"),
            brief="Mend the greeting.",
            base=BranchName("main"),
            carried=carried,
        )
        seen = Launched(
            at=Instant(0.0), launch=launch, kind=BUILTIN_KINDS[KindName("fix")], start=base
        )
        decision = step(Settings(), None, seen)
        (made,) = [each for each in decision.actions if isinstance(each, MakeWorktree)]
        self.launched.append(([seen], made, carried, base))

    @invariant()
    def a_carried_place_goes_on_from_its_pushed_head(self) -> None:
        """FLEET-CARRIED-HEAD: cut at the pushed head; landing counts from the base at launch.

        The worktree is asked at the carried head when there is one, else at the base's
        revision, on the launch and again after a restart; the place's start, which the
        landing's rebase counts the place's own commits from, is the base's revision.
        """
        for journal, made, carried, base in self.launched:
            wanted = carried if carried is not None else base
            assert made.start == wanted
            place = replay(Settings(), journal)
            assert place.start == base
            asked = [each for each in pending(place) if isinstance(each, MakeWorktree)]
            assert [each.start for each in asked] == [wanted]
            landing: Land = land(place)
            assert landing.start == base


TestCarried = CarriedMachine.TestCase
