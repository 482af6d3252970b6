"""A parallel block's lanes over random runs: caps, joins, the merge's order, one writer, tidy.

The machine drives the real ``step`` for a run whose body is one parallel block (two to four
lanes, any cap, each join with each merge a kind may declare) and a step after it. It plays the
shell and the lanes: a running lane finishes or is dropped, the merge succeeds or conflicts, a
person resolves by hand, asks an agent where none is wanted, or drops the run, in any order.
The lanes' own places are not run: a lane is where the run says it is, and its end is the
``LaneEnded`` the supervisor would journal into the run's journal. Each invariant holds one of
the rules :mod:`flume.core.lanes` keeps.
"""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pyrsistent import pvector

from flume.core.actions import Action, LaneOrder, LaunchLane, MergeLanes, OrderLane, StartAgent
from flume.core.errors import UsageError
from flume.core.ids import BlockName, BranchName, Instant, KindName, Sha, StageName, WorkName
from flume.core.kinds import Commit, Join, Kind, Merge, Parallel, Sequence, Step, check_kind
from flume.core.launch import AgentSettings, Launch
from flume.core.observations import (
    DropAsked,
    LaneEnded,
    LanesMerged,
    Launched,
    MergeConflicted,
    Observation,
    ResolveAsked,
    WorktreeMade,
)
from flume.core.place import (
    Fanned,
    LaneState,
    Life,
    Merging,
    PauseCause,
    Paused,
    Place,
)
from flume.core.settings import Settings
from flume.core.step import step

S = Settings()
NAMES = ("lane-a", "lane-b", "lane-c", "lane-d")
#: Each join with each merge a kind may declare (a first join merges no more than one lane).
WAYS = [
    (Join.ALL, Merge.MERGE),
    (Join.ALL, Merge.PICK),
    (Join.ALL, Merge.NONE),
    (Join.FIRST, Merge.PICK),
    (Join.FIRST, Merge.NONE),
]


def fanning(count: int, cap: int | None, join: Join, merge: Merge) -> Kind:
    """A run of one parallel block of ``count`` commit-gated lanes, then a step after it."""
    lanes = [
        Step(name=StageName(name), prompt=f"Build {name} of $brief.", deliverable=Commit())
        for name in NAMES[:count]
    ]
    fan = Parallel(name=BlockName("fan"), branches=pvector(lanes), join=join, merge=merge, cap=cap)
    after = Step(name=StageName("after"), prompt="Check $brief.", deliverable=Commit())
    kind = Kind(name=KindName("wide"), prefix="wide", body=Sequence(blocks=pvector([fan, after])))
    check_kind(kind)
    return kind


class LanesMachine(RuleBasedStateMachine):
    """One run fanning out into its lanes, the lanes and the people doing anything they may."""

    place: Place

    @initialize(
        count=st.integers(min_value=2, max_value=4),
        cap=st.none() | st.integers(min_value=1, max_value=4),
        way=st.sampled_from(WAYS),
    )
    def launch(self, count: int, cap: int | None, way: tuple[Join, Merge]) -> None:
        """The run is launched and its worktree made: its parallel fans out at once."""
        self.join, self.merge = way
        self.cap = cap or count
        self.names = NAMES[:count]
        self.now = 0.0
        self.actions: list[Action] = []
        #: The lanes running when the run was dropped, and when the first join was met.
        self.running_at_drop: set[str] | None = None
        self.running_at_join: set[str] | None = None
        #: The lanes that finished, in the order they did.
        self.finished: list[str] = []
        #: The most lanes seen running at once.
        self.most_running = 0
        kind = fanning(count, cap, self.join, self.merge)
        launch = Launch(
            repository="/src/app",
            kind=kind.name,
            name=WorkName("x"),
            brief="Build both.",
            base=BranchName("main"),
            agent=AgentSettings(),
        )
        board = f"/src/app/places/.boards/{launch.place}"
        self._feed(Launched(at=self._instant(), launch=launch, kind=kind, board=board))
        made = WorktreeMade(
            at=self._instant(), path=self.place.path, branch=self.place.branch, head=Sha("c0")
        )
        self._feed(made)
        assert isinstance(self.place.stage.phase, Fanned)

    # --- driving ----------------------------------------------------------------------------

    def _instant(self) -> Instant:
        self.now += 1
        return Instant(self.now)

    def _feed(self, seen: Observation) -> None:
        before = getattr(self, "place", None)
        decision = step(S, before, seen)
        self.place = decision.place
        self.actions.extend(decision.actions)
        self.most_running = max(self.most_running, self._count(LaneState.RUNNING))

    def _refused(self, seen: Observation) -> bool:
        """Feed ``seen``; True when the core refused it (and then nothing changed)."""
        before = self.place
        try:
            self._feed(seen)
        except UsageError:
            assert self.place is before
            return True
        return False

    def _count(self, state: LaneState) -> int:
        return sum(1 for run in self.place.lanes.values() if run.state is state)

    def _running(self) -> list[str]:
        return [lane for lane, run in self.place.lanes.items() if run.state is LaneState.RUNNING]

    def _fanned(self) -> bool:
        return self.place.life is Life.ACTIVE and isinstance(self.place.stage.phase, Fanned)

    def _merging(self) -> bool:
        return self.place.life is Life.ACTIVE and isinstance(self.place.stage.phase, Merging)

    def _orders(self, order: LaneOrder) -> set[str]:
        return {
            action.place
            for action in self.actions
            if isinstance(action, OrderLane) and action.order is order
        }

    # --- the lanes, the merge and the people --------------------------------------------------

    @precondition(lambda self: self._fanned() and self._running())
    @rule(data=st.data(), finished=st.booleans())
    def a_lane_ends(self, data: st.DataObject, *, finished: bool) -> None:
        """A running lane finishes its branch (its head), or ends unfinished (dropped)."""
        lane = data.draw(st.sampled_from(self._running()))
        if finished and self.join is Join.FIRST and not self.finished:
            self.running_at_join = set(self._running())
        if finished:
            self.finished.append(lane)
        head = Sha(f"{lane}-head") if finished else None
        self._feed(LaneEnded(at=self._instant(), lane=lane, finished=finished, head=head))

    @precondition(lambda self: self._merging())
    @rule(conflicts=st.booleans())
    def the_merge_ends(self, *, conflicts: bool) -> None:
        """The merge is done, the run's branch at its new head; or its first lane conflicted."""
        if conflicts:
            lane = self.place.merging[0]
            seen: Observation = MergeConflicted(
                at=self._instant(), lane=lane, files=pvector(["a.txt"])
            )
        else:
            seen = LanesMerged(at=self._instant(), head=Sha("merged"))
        self._feed(seen)

    @rule()
    def a_person_resolves_by_hand(self) -> None:
        """A person resolves by hand: taken only where a merge conflict waits; else refused."""
        phase = self.place.stage.phase
        waits = (
            self.place.life is Life.ACTIVE
            and isinstance(phase, Paused)
            and phase.cause is PauseCause.MERGE_CONFLICT
        )
        refused = self._refused(ResolveAsked(at=self._instant(), agent=False))
        assert refused is not waits
        if waits:
            assert isinstance(self.place.stage.phase, Merging)

    @precondition(
        lambda self: (
            not (
                isinstance(self.place.stage.phase, Paused)
                and self.place.stage.phase.cause is PauseCause.MERGE_CONFLICT
            )
        )
    )
    @rule()
    def a_person_asks_an_agent_to_resolve_nothing(self) -> None:
        """A person asks an agent to resolve where no merge conflict waits: refused, unchanged."""
        assert self._refused(ResolveAsked(at=self._instant(), agent=True))

    @precondition(lambda self: self.place.life is Life.ACTIVE)
    @rule()
    def a_person_drops_the_run(self) -> None:
        """A person drops the run, whatever its lanes are doing."""
        self.running_at_drop = set(self._running())
        self._feed(DropAsked(at=self._instant()))

    # --- the rules ------------------------------------------------------------------------------

    @invariant()
    def cap_bounds_the_lanes_running(self) -> None:
        """WF-CAP: at most cap lanes run at once; the rest wait, launched in declared order.

        While the block runs, a lane waits only when cap lanes run; the lanes were launched in
        the order the block declares them.
        """
        assert self.most_running <= self.cap
        launched = [action.lane for action in self.actions if isinstance(action, LaunchLane)]
        assert launched == list(self.names[: len(launched)])
        if self._fanned() and self._count(LaneState.WAITING):
            assert self._count(LaneState.RUNNING) == self.cap

    @invariant()
    def join_all_waits_for_every_lane(self) -> None:
        """WF-JOIN-ALL: join all merges only once every lane finished; one unfinished pauses.

        A lane that ended unfinished leaves the run paused, lane-dropped, where only a drop
        goes on.
        """
        if self.join is not Join.ALL:
            return
        if (
            any(isinstance(action, MergeLanes) for action in self.actions)
            or self.place.stage.name == "after"
        ):
            assert all(run.state is LaneState.FINISHED for run in self.place.lanes.values())
        dropped = any(run.state is LaneState.ENDED for run in self.place.lanes.values())
        if dropped and self.place.life is Life.ACTIVE:
            phase = self.place.stage.phase
            assert isinstance(phase, Paused)
            assert phase.cause is PauseCause.LANE_DROPPED

    @invariant()
    def join_first_ends_the_other_lanes(self) -> None:
        """WF-JOIN-FIRST: the first lane to finish meets the join; the others are dropped.

        No lane runs or waits after it, and every other lane running then is ordered dropped;
        a lane still waiting is never launched.
        """
        if self.join is not Join.FIRST or self.running_at_join is None:
            return
        assert self._count(LaneState.RUNNING) == self._count(LaneState.WAITING) == 0
        others = self.running_at_join - {self.finished[0]}
        dropped = self._orders(LaneOrder.DROP)
        assert {str(self.place.lanes[lane].place) for lane in others} <= dropped
        assert self.finished == self.finished[:1]

    @invariant()
    def merge_takes_the_lanes_in_declared_order(self) -> None:
        """WF-MERGE-ORDER: merge merges every finished lane in declared order, pick the first.

        none merges nothing; each merge asked names the same lanes, in the same order (asked
        again after a conflict resolved by hand).
        """
        merges = [action for action in self.actions if isinstance(action, MergeLanes)]
        if self.merge is Merge.NONE:
            assert merges == []
            return
        expected = (
            [lane for lane in self.names if lane in self.finished]
            if self.merge is Merge.MERGE
            else self.finished[:1]
        )
        for action in merges:
            assert list(action.lanes) == expected
            assert action.path == self.place.path
            assert action.branch == self.place.branch

    @invariant()
    def each_lane_writes_in_a_place_of_its_own(self) -> None:
        """WF-ONE-WRITER-PER-LANE: each lane is a place of its own; the run's has no agent then.

        The lanes' places and branches are all different, none the run's; each is launched
        as ``<name>+<lane>`` on the run's branch; no agent is started in the run's worktree
        while its lanes run or merge.
        """
        runs = list(self.place.lanes.values())
        places = {run.place for run in runs} | {self.place.launch.place}
        branches = {run.branch for run in runs} | {self.place.branch}
        assert len(places) == len(branches) == len(runs) + 1
        for action in self.actions:
            if isinstance(action, LaunchLane):
                assert action.launch.name == f"{self.place.launch.name}+{action.lane}"
                assert action.launch.base == self.place.branch
        if self._fanned() or self._merging():
            assert self.place.agent is None
            assert not any(
                isinstance(action, StartAgent) and action.stage == "fan" for action in self.actions
            )

    @invariant()
    def lanes_are_tidied_or_dropped(self) -> None:
        """WF-TIDY-LANES: past the block, every finished lane is tidied; a drop drops the rest.

        A dropped run's running lanes are ordered dropped, and none runs after.
        """
        if self.place.stage.name == "after" or (self.place.life is Life.FINISHED):
            tidied = self._orders(LaneOrder.TIDY)
            finished = {
                str(run.place)
                for run in self.place.lanes.values()
                if run.state is LaneState.FINISHED
            }
            assert finished <= tidied
        if self.running_at_drop is not None:
            assert self._count(LaneState.RUNNING) == 0
            dropped = self._orders(LaneOrder.DROP)
            assert {str(self.place.lanes[lane].place) for lane in self.running_at_drop} <= dropped


TestLanes = LanesMachine.TestCase
