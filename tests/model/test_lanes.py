"""A parallel block's lanes: capped, joined all or first, merged in order, tidied, restarted.

The run is the FakeWorld's place; each lane is a place of its own, which the world stands in
for (``FakeLane``): launched, it runs until the machine finishes or drops it, and the world
tells the run so (``LaneEnded``), as the supervisor does when it reads the lane's journal. The
world merges as git would (a lane drawn to conflict conflicts until merged by hand or by the
merge step's agent), and restarts the shell: the run replayed from its journal, its pending
actions performed again.
"""

from __future__ import annotations

from collections import Counter

import attrs
import pytest
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pyrsistent import pmap, pvector

from flume.core.actions import Event, LaneOrder, LaunchLane, MergeLanes, OrderLane, StartAgent
from flume.core.errors import UsageError
from flume.core.ids import BlockName, KindName, Sha, StageName
from flume.core.judging import program_of, unregistered_asks
from flume.core.kinds import (
    Budgets,
    Commit,
    Join,
    Kind,
    Loop,
    Merge,
    Parallel,
    Sequence,
    Step,
    Verdict,
)
from flume.core.launch import check_launch
from flume.core.observations import (
    AgentExited,
    DropAsked,
    LaneEnded,
    LanesMerged,
    Launched,
    MergeConflicted,
    ResolveAsked,
    RetryAsked,
)
from flume.core.place import (
    Fanned,
    LaneState,
    Life,
    Merging,
    PauseCause,
    Paused,
    Place,
    Queued,
    Short,
    current_step,
    evolve,
)
from flume.core.settings import Settings
from flume.core.stage import _block_step
from flume.core.status import status
from flume.core.step import pending, replay, step
from flume.core.workflow.lanes import (
    fan_when_free,
    lane_ended,
    lane_for,
    lanes_ended,
    launch_lane,
    parallel_of,
    takes_order,
)
from tests.model.world import FakeWorld

S = Settings()
LANES = ("slice-a", "slice-b", "slice-c")


def sliced(  # noqa: PLR0913 (each is one thing a kind of slices is made with)
    *,
    join: Join = Join.ALL,
    merge: Merge = Merge.MERGE,
    cap: int | None = None,
    after: bool = True,
    budgets: Budgets | None = None,
    spread: bool = False,
) -> Kind:
    """Three slices in a parallel (each a commit), then a step after it, if ``after``."""
    slices = Parallel(
        name=BlockName("slices"),
        branches=pvector(
            Step(name=StageName(lane), prompt=f"Build {lane}; commit.", deliverable=Commit())
            for lane in LANES
        ),
        join=join,
        merge=merge,
        cap=cap,
        spread=spread,
    )
    then = [Step(name=StageName("after"), prompt="Check it; commit.", deliverable=Commit())]
    return Kind(
        name=KindName("feature"),
        prefix="feature",
        body=Sequence(blocks=pvector([slices, *(then if after else [])])),
        budgets=budgets or Budgets(),
    )


def world_of(kind: Kind) -> FakeWorld:
    """A world that launched ``kind``; its worktree made, its lanes launched."""
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    return world


def end_lane(world: FakeWorld, lane: str, *, finished: bool) -> None:
    """The lane's place finishes (a commit on its branch) or is dropped; the run is told."""
    found = world.lanes[lane]
    head = world.git.commit(found.branch, world.now) if finished else world.git.head(found.branch)
    found.life = "finished" if finished else "dropped"
    world.now += 1
    assert (
        world.feed(LaneEnded(at=world.instant(), lane=lane, finished=finished, head=head)) is None
    )


def run_after(world: FakeWorld) -> None:
    """The step after the parallel: delivered, a commit, its turn's end."""
    assert world.deliver()
    assert world.commit() is None
    assert world.end_turn() is None


def orders(world: FakeWorld, order: LaneOrder) -> list[str]:
    """The lanes given ``order``, in the order given."""
    return [
        action.place.rpartition("+")[2]
        for action in world.actions
        if isinstance(action, OrderLane) and action.order is order
    ]


# --- examples, one per rule ---------------------------------------------------------------------


def test_lanes_fan_out_from_the_run_s_head_each_a_place_of_its_own() -> None:
    """The parallel's lanes are launched as ``<name>+<lane>`` on the run's branch's head."""
    world = world_of(sliced())
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, Fanned)
    launched = [a for a in world.actions if isinstance(a, LaunchLane)]
    assert [a.lane for a in launched] == list(LANES)
    first = launched[0]
    assert first.launch.name == "x+slice-a"
    assert first.launch.place == "feature--x+slice-a"
    assert first.launch.base == place.branch
    assert first.launch.parent == place.launch.place
    assert first.start == place.entry == world.git.head(place.branch)
    assert first.board == place.board
    assert first.kind.body == sliced().body.blocks[0].branches[0]  # type: ignore[union-attr]
    assert place.agent is None
    view = status(place)
    assert view.phase == "lanes"
    lanes = [block for block in view.tree if block.block == "lane"]
    assert [(b.path, b.state, b.lane) for b in lanes] == [
        (f"slices/{lane}", "running", f"feature--x+{lane}") for lane in LANES
    ]


def test_a_cap_launches_lanes_in_order_as_running_ones_end() -> None:
    """WF-CAP: cap 1 runs one lane at a time, in declared order."""
    world = world_of(sliced(cap=1))
    assert list(world.lanes) == ["slice-a"]
    end_lane(world, "slice-a", finished=True)
    assert list(world.lanes) == ["slice-a", "slice-b"]
    end_lane(world, "slice-b", finished=True)
    assert list(world.lanes) == list(LANES)


def test_join_all_merges_every_lane_in_declared_order_then_goes_on() -> None:
    """WF-JOIN-ALL, WF-MERGE-ORDER, WF-TIDY-LANES: all merged, in declared order.

    Whatever finished first, the merge takes the lanes in declared order; each merged lane is
    tidied; the next step's commit counts from the merged head.
    """
    world = world_of(sliced())
    for lane in reversed(LANES):
        end_lane(world, lane, finished=True)
    assert world.merges == [LANES]
    place = world.place
    assert place is not None
    assert place.stage.name == "after"
    assert place.head == world.git.head(place.branch)
    assert orders(world, LaneOrder.TIDY) == list(LANES)
    lane_commits = {world.git.head(world.lanes[lane].branch) for lane in LANES}
    assert lane_commits <= set(world.git.branches[place.branch])
    started = [a for a in world.actions if isinstance(a, StartAgent)]
    assert [a.stage for a in started] == ["after"]
    run_after(world)
    assert world.place is not None
    assert world.place.life is Life.FINISHED
    tree = {block.path: block.state for block in status(world.place).tree}
    assert tree["slices"] == "done"
    assert tree["slices/slice-b"] == "finished"


def test_join_first_picks_the_first_to_finish_and_drops_the_rest() -> None:
    """WF-JOIN-FIRST: the first lane to finish is merged (pick), the rest are dropped.

    The running ones are ordered dropped, the waiting one is never launched; tidy is asked of
    the picked lane and not of the dropped.
    """
    world = world_of(sliced(join=Join.FIRST, merge=Merge.PICK, cap=2))
    assert list(world.lanes) == ["slice-a", "slice-b"]
    end_lane(world, "slice-b", finished=True)
    assert world.merges == [("slice-b",)]
    assert orders(world, LaneOrder.DROP) == ["slice-a"]
    assert "slice-c" not in world.lanes
    assert orders(world, LaneOrder.TIDY) == ["slice-b"]
    assert world.place is not None
    assert world.place.stage.name == "after"


def test_merge_none_merges_nothing_and_tidy_keeps_the_lanes_branches() -> None:
    """WF-MERGE-ORDER: none merges no lane; the lanes are tidied, whose tidy keeps commits."""
    world = world_of(sliced(merge=Merge.NONE, after=False))
    for lane in LANES:
        end_lane(world, lane, finished=True)
    assert world.merges == []
    assert orders(world, LaneOrder.TIDY) == list(LANES)
    assert world.place is not None
    assert world.place.life is Life.FINISHED


def test_a_lane_dropped_under_join_all_pauses_the_run_named() -> None:
    """WF-JOIN-ALL: a lane ended unfinished pauses the run; only a drop resolves it."""
    world = world_of(sliced())
    end_lane(world, "slice-a", finished=False)
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, Paused)
    assert place.stage.phase.cause is PauseCause.LANE_DROPPED
    assert status(place).resolve == "flume drop feature--x"
    refused = world.feed(ResolveAsked(at=world.instant()))
    assert isinstance(refused, UsageError)
    assert world.feed(DropAsked(at=world.instant())) is None
    assert sorted(orders(world, LaneOrder.DROP)) == ["slice-b", "slice-c"]


def test_a_conflict_pauses_naming_its_files_and_by_hand_goes_on() -> None:
    """A merge that conflicts pauses merge-conflict, naming the lane and its files.

    Resolved by hand, the merge is asked again (the shell passes over what is merged).
    """
    world = world_of(sliced())
    world.conflicting.add("slice-b")
    for lane in LANES:
        end_lane(world, lane, finished=True)
    place = world.place
    assert place is not None
    phase = place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.MERGE_CONFLICT
    assert "slice-b" in phase.words
    assert "a.txt" in phase.words
    assert "--by-hand" in (status(place).resolve or "")
    assert orders(world, LaneOrder.TIDY) == []
    # A person merges slice-b by hand in the run's worktree, then says so.
    world.conflicting.discard("slice-b")
    assert world.feed(ResolveAsked(at=world.instant())) is None
    assert world.merges == [LANES, LANES]
    assert world.place is not None
    assert world.place.stage.name == "after"


def test_resolved_by_an_agent_its_merge_step_runs_then_the_merge_again() -> None:
    """``--agent``: the merge step's agent runs, then the merge is asked again.

    It starts in the run's worktree, told the lanes' branches in order and why; its commit
    asks the merge again.
    """
    world = world_of(sliced())
    world.conflicting.add("slice-a")
    for lane in LANES:
        end_lane(world, lane, finished=True)
    assert world.feed(ResolveAsked(at=world.instant(), agent=True)) is None
    place = world.place
    assert place is not None
    assert place.stage.resolving
    assert isinstance(place.stage.phase, Merging) is False  # its agent was started
    start = next(a for a in reversed(world.actions) if isinstance(a, StartAgent))
    assert start.stage == "slices"
    step = current_step(place)
    assert isinstance(step.deliverable, Commit)
    assert "feature/x+slice-a, feature/x+slice-b, feature/x+slice-c" in step.prompt
    assert "conflicted in a.txt" in step.prompt
    world.conflicting.discard("slice-a")
    run_after(world)
    assert world.merges == [LANES, LANES]
    assert world.place is not None
    assert world.place.stage.name == "after"


def test_the_merge_step_s_agent_is_read_as_the_launch_s_program() -> None:
    """The merge step names no agent of its own: its agent is the launch's program.

    The supervisor asks which program a live agent runs before it reads its transcript, hooks
    and screen (``program_of``); the parallel's stage is no step of the kind's, and is answered
    all the same, before the agent starts and while it lives.
    """
    world = world_of(sliced())
    world.conflicting.add("slice-a")
    for lane in LANES:
        end_lane(world, lane, finished=True)
    assert world.feed(ResolveAsked(at=world.instant(), agent=True)) is None
    place = world.place
    assert place is not None
    assert program_of(evolve(place, agent=None)) is place.launch.agent.agent
    assert place.agent is not None
    assert place.agent.stage == "slices"
    assert program_of(place) is place.launch.agent.agent
    assert not unregistered_asks(place, registered=True, now=world.instant())


def test_a_restart_launches_no_lane_twice_and_merges_again() -> None:
    """RESTART-PENDING: replayed, the run asks again what it may not have seen done.

    Fanned out, its running lanes' launches (the shell launches none twice); merging, the merge.
    """
    world = world_of(sliced(cap=2))
    again = replay(S, world.journal)
    assert again == world.place
    assert [a.lane for a in pending(again) if isinstance(a, LaunchLane)] == ["slice-a", "slice-b"]
    world.conflicting.add("slice-a")
    for lane in LANES[:2]:
        end_lane(world, lane, finished=True)
    end_lane(world, "slice-c", finished=True)
    merging = attrs.evolve(world.place.stage, phase=Merging(since=world.instant()))  # type: ignore[union-attr]
    assert [type(a) for a in pending(attrs.evolve(world.place, stage=merging))] == [  # type: ignore[misc]
        MergeLanes,
    ]


def test_a_dropped_run_drops_its_running_lanes() -> None:
    """A dropped run's lanes are dropped with it: no lane works on for nothing.

    One that finished, unmerged, is tidied (its tidy keeps its commits, named).
    """
    world = world_of(sliced(cap=2))
    end_lane(world, "slice-a", finished=True)
    assert world.feed(DropAsked(at=world.instant())) is None
    assert orders(world, LaneOrder.DROP) == ["slice-b", "slice-c"]
    assert orders(world, LaneOrder.TIDY) == ["slice-a"]


def test_a_lane_launch_carries_only_the_waits_of_its_own_steps() -> None:
    """A lane's launch keeps the caller's words-to-wait for its own steps, none of the run's."""
    world = world_of(sliced())
    place = world.place
    assert place is not None
    parallel = sliced().body.blocks[0]  # type: ignore[union-attr]
    assert isinstance(parallel, Parallel)
    waits = attrs.evolve(place.launch, waits=place.launch.waits.add(StageName("slice-a")))
    launched = launch_lane(attrs.evolve(place, launch=waits), parallel, "slice-a")
    assert set(launched.launch.waits) == {"slice-a"}
    assert set(launch_lane(place, parallel, "slice-b").launch.waits) == set()


def _lane_place(run: Place, lane: str) -> Place:
    """The lane ``lane`` of ``run`` as its own journal would have it: launched, then finished."""
    asked = launch_lane(run, parallel_of(run) or sliced().body.blocks[0], lane)  # type: ignore[arg-type]
    seen = Launched(at=run.now, launch=asked.launch, kind=asked.kind, start=asked.start)
    found = step(S, None, seen).place
    return evolve(found, life=Life.FINISHED, completed=found.completed.append(found.stage.key))


# --- the machine --------------------------------------------------------------------------------


class LanesMachine(RuleBasedStateMachine):
    """A run's parallel block against lanes that finish, drop, conflict, and shells that die."""

    world: FakeWorld

    @initialize(
        join=st.sampled_from(list(Join)),
        merge=st.sampled_from(list(Merge)),
        cap=st.none() | st.integers(min_value=1, max_value=3),
        conflicting=st.sets(st.sampled_from(LANES), max_size=2),
        spread=st.booleans(),
    )
    def launch(
        self, join: Join, merge: Merge, cap: int | None, conflicting: set[str], spread: bool
    ) -> None:
        """Launch the kind with its join, merge, cap and spread drawn (first never with merge)."""
        if join is Join.FIRST and merge is Merge.MERGE:
            merge = Merge.PICK
        self.kind = sliced(join=join, merge=merge, cap=cap, spread=spread)
        self.join, self.merge, self.cap = join, merge, cap or len(LANES)
        self.spread = spread
        self.world = world_of(self.kind)
        self.world.conflicting = set(conflicting)
        self.finished: list[str] = []

    def _running(self) -> list[str]:
        return [lane for lane, found in self.world.lanes.items() if found.life == "running"]

    def _at_block(self) -> bool:
        place = self.world.place
        return place is not None and place.life is Life.ACTIVE and place.stage.name == "slices"

    @precondition(lambda self: self._running())
    @rule(data=st.data())
    def a_lane_finishes(self, data: st.DataObject) -> None:
        """A running lane's place finishes its branch (a commit), and the run hears of it."""
        lane = data.draw(st.sampled_from(self._running()))
        self.finished.append(lane)
        end_lane(self.world, lane, finished=True)

    @precondition(lambda self: self._running())
    @rule(data=st.data())
    def a_lane_is_dropped(self, data: st.DataObject) -> None:
        """A person drops a running lane's place."""
        lane = data.draw(st.sampled_from(self._running()))
        end_lane(self.world, lane, finished=False)

    @rule()
    def a_person_merges_by_hand(self) -> None:
        """A person merges in the run's worktree and says so: taken only by a paused run."""
        place = self.world.place
        refused = self.world.feed(ResolveAsked(at=self.world.instant()))
        paused = place is not None and isinstance(place.stage.phase, Paused)
        if refused is None:
            assert paused
        self.world.conflicting.clear()

    @rule()
    def an_agent_merges(self) -> None:
        """A person asks for the merge step's agent, which merges and commits."""
        if self.world.feed(ResolveAsked(at=self.world.instant(), agent=True)) is None:
            self.world.conflicting.clear()
            run_after(self.world)

    @precondition(
        lambda self: self.world.place is not None and self.world.place.stage.name == "after"
    )
    @rule()
    def the_step_after_runs(self) -> None:
        """The step after the block does its work: delivered, a commit, its turn's end."""
        if self.world.live_agent() is not None:
            run_after(self.world)

    @rule()
    def the_shell_restarts(self) -> None:
        """SIGKILL: the run replayed from its journal, its pending actions performed again."""
        self.world.restart()

    # --- what must hold ---------------------------------------------------------------------

    @invariant()
    def at_most_cap_lanes_run(self) -> None:
        """WF-CAP: never more than ``cap`` lanes launched and not ended."""
        assert len(self._running()) <= self.cap
        place = self.world.place
        assert place is not None
        running = [r for r in place.lanes.values() if r.state is LaneState.RUNNING]
        assert len(running) <= self.cap

    @invariant()
    def one_writer_per_lane(self) -> None:
        """WF-ONE-WRITER-PER-LANE: each lane launched once; no agent in the run's worktree.

        While its lanes run or are merged, the run's own worktree has no agent but the merge
        step's, asked for by a person.
        """
        decided = Counter(
            action.lane
            for _before, _seen, decision in self.world.steps
            for action in decision.actions
            if isinstance(action, LaunchLane)
        )
        assert all(count == 1 for count in decided.values()), decided
        place = self.world.place
        assert place is not None
        if isinstance(place.stage.phase, Fanned) or (
            isinstance(place.stage.phase, Merging) and not place.stage.resolving
        ):
            assert self.world.live_agent() is None

    @invariant()
    def joined_as_declared(self) -> None:
        """WF-JOIN-ALL / WF-JOIN-FIRST: the block ends only once its join is met."""
        ended = [r for r in self.world.reports_of(Event.STAGE_ENDED) if r.stage == "slices"]
        if not ended:
            return
        if self.join is Join.ALL:
            assert all(found.life == "finished" for found in self.world.lanes.values())
            assert set(self.world.lanes) == set(LANES)
        else:
            # The first lane to finish met the join: no lane is launched from that step on.
            met = next(
                index
                for index, (before, seen, _decision) in enumerate(self.world.steps)
                if isinstance(seen, LaneEnded)
                and seen.finished
                and before is not None
                and seen.lane in before.lanes
                and before.lanes[seen.lane].state is LaneState.RUNNING
            )
            later = [
                action
                for _before, _seen, decision in self.world.steps[met:]
                for action in decision.actions
                if isinstance(action, LaunchLane)
            ]
            assert later == []

    @invariant()
    def merged_in_declared_order(self) -> None:
        """WF-MERGE-ORDER: what each merge takes, in order.

        ``merge``: every finished lane in declared order; ``pick``: the first; ``none``: nothing.
        """
        for merged in self.world.merges:
            if self.merge is Merge.MERGE:
                assert list(merged) == [lane for lane in LANES if lane in self.finished]
            elif self.merge is Merge.PICK:
                assert list(merged) == self.finished[:1]
            else:
                pytest.fail(f"merge none merged {merged}")

    @invariant()
    def lanes_tidied_once_merged(self) -> None:
        """WF-TIDY-LANES: tidy goes to the finished lanes, all of them once the block is over.

        A drop is never ordered for a lane the run knew finished.
        """
        tidied = set(orders(self.world, LaneOrder.TIDY))
        assert tidied <= set(self.finished)
        for before, _seen, decision in self.world.steps:
            for action in decision.actions:
                if isinstance(action, OrderLane) and action.order is LaneOrder.DROP:
                    assert before is not None
                    lane = before.lanes.get(action.place.rpartition("+")[2])
                    assert lane is None or lane.state is not LaneState.FINISHED
        place = self.world.place
        assert place is not None
        if place.stage.name == "after" or place.life is Life.FINISHED:
            assert tidied == {
                lane for lane, found in self.world.lanes.items() if found.life == "finished"
            }

    @invariant()
    def spread_lanes_go_through_the_fleet(self) -> None:
        """WF-SPREAD: each launch, order and merge of a spread block's lanes says it spreads.

        None of a block that does not. A merge names, for each lane, the head the run was told
        it ended at (the head the fleet's remote must hold); and the run is never told of a
        spread lane from a journal of it, which the fleet may have put on the run's own host.
        """
        told = {
            seen.lane: seen.head
            for before, seen, _decision in self.world.steps
            if isinstance(seen, LaneEnded)
            and before is not None
            and seen.lane in before.lanes
            and before.lanes[seen.lane].state is LaneState.RUNNING
        }
        for action in self.world.actions:
            match action:
                case LaunchLane():
                    assert action.launch.spread is self.spread
                case OrderLane():
                    assert action.spread is self.spread
                case MergeLanes():
                    assert action.spread is self.spread
                    assert list(action.heads) == [told[lane] for lane in action.lanes]
                case _:
                    pass
        place = self.world.place
        assert place is not None
        assert all(run.spread is self.spread for run in place.lanes.values())
        if self.spread:
            seen = {
                run.place: _lane_place(place, run.lane)
                for run in place.lanes.values()
                if run.state is LaneState.RUNNING
            }
            assert lanes_ended(place, seen, self.world.instant()) == []

    @invariant()
    def nothing_waits_silently(self) -> None:
        """Nothing waits silently at a parallel: finished, paused named, lanes or agent at work.

        Or work owed. The rule is the workflow machine's (its invariant names it), held here too.
        """
        place = self.world.place
        assert place is not None
        if place.life is not Life.ACTIVE:
            return
        phase = place.stage.phase
        if isinstance(phase, Paused):
            view = status(place)
            assert view.paused == phase.cause.value
            assert (view.resolve or "").startswith("flume ")
            return
        if isinstance(phase, Fanned):
            assert self._running() or pending(place), place.lanes
            return
        assert self.world.live_agent() is not None or pending(place), phase


TestLanesMachine = LanesMachine.TestCase
TestLanesMachine.settings = hypothesis_settings(max_examples=200, stateful_step_count=40)
TestLanesMachine = pytest.mark.hypothesis(TestLanesMachine)


# --- what is ignored or refused -----------------------------------------------------------------


def test_what_is_not_the_run_s_to_hear_changes_nothing() -> None:
    """A lane ended twice, a lane not its own, a merge's outcome when none was asked: ignored."""
    world = world_of(sliced(cap=1))
    end_lane(world, "slice-a", finished=True)
    place = world.place
    assert place is not None
    for seen in (
        LaneEnded(at=world.instant(), lane="slice-a", finished=True),
        LaneEnded(at=world.instant(), lane="nowhere", finished=True),
        LanesMerged(at=world.instant(), head=Sha("c9999")),
        MergeConflicted(at=world.instant(), lane="slice-a"),
    ):
        assert step(S, place, seen).place == evolve(place, now=place.now)


def test_resolve_is_refused_where_nothing_conflicts() -> None:
    """Resolve with no merge conflict waiting: refused, exit 1, nothing journaled."""
    world = world_of(sliced())
    refused = world.feed(ResolveAsked(at=world.instant()))
    assert isinstance(refused, UsageError)
    assert refused.exit_status == 1
    assert "not paused" in str(refused)


def test_a_first_join_whose_every_lane_ended_unfinished_pauses() -> None:
    """WF-JOIN-FIRST: a lane dropped lets the next waiting one run; none left, the run pauses."""
    world = world_of(sliced(join=Join.FIRST, merge=Merge.PICK, cap=2))
    end_lane(world, "slice-a", finished=False)
    assert list(world.lanes) == list(LANES)
    end_lane(world, "slice-b", finished=False)
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, Fanned)
    end_lane(world, "slice-c", finished=False)
    place = world.place
    assert place is not None
    assert isinstance(place.stage.phase, Paused)
    assert place.stage.phase.cause is PauseCause.LANE_DROPPED
    assert "every lane of parallel slices ended unfinished" in place.stage.phase.words


def test_a_merge_step_that_stopped_short_is_retried_as_the_merge_again() -> None:
    """The merge step's agent exited: retried, the block asks its merge again, not its lanes."""
    world = world_of(sliced())
    world.conflicting.add("slice-c")
    for lane in LANES:
        end_lane(world, lane, finished=True)
    assert world.feed(ResolveAsked(at=world.instant(), agent=True)) is None
    agent = world.live_agent()
    assert agent is not None
    assert world.feed(AgentExited(at=world.instant(), session=agent.session)) is None
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Short)
    world.conflicting.clear()
    assert world.feed(RetryAsked(at=world.instant(), words="merge it")) is None
    assert world.merges == [LANES, LANES]
    assert sum(1 for a in world.actions if isinstance(a, LaunchLane)) == len(LANES)
    assert world.place is not None
    assert world.place.stage.name == "after"


def test_a_lane_is_launched_only_as_its_run_names_it() -> None:
    """A lane's launch is ``<name>+<lane>`` with its parent named; anything else is refused."""
    world = world_of(sliced())
    launched = next(a for a in world.actions if isinstance(a, LaunchLane))
    check_launch(launched.launch, launched.kind)
    for bad in (
        attrs.evolve(launched.launch, name="x+other"),
        attrs.evolve(launched.launch, parent=None),
        attrs.evolve(launched.launch, name="x+slice a"),
    ):
        with pytest.raises(UsageError, match="name"):
            check_launch(bad, launched.kind)
    nested = attrs.evolve(launched.launch, name="x+outer+slice-a")
    check_launch(nested, launched.kind)
    # A later pass of a loop around the block: its passes after an '@', one not the first.
    for later in ("x+slice-a@2", "x+slice-a@1-2", "x+slice-a@10", "x+outer@2+slice-a"):
        check_launch(attrs.evolve(launched.launch, name=later), launched.kind)
    for bad_pass in (
        "x+slice-a@",
        "x+slice-a@1",
        "x+slice-a@1-1",
        "x+slice-a@02",
        "x+slice-a@2-",
        "x@2+slice-a",
    ):
        with pytest.raises(UsageError, match="is launched as"):
            check_launch(attrs.evolve(launched.launch, name=bad_pass), launched.kind)


def test_each_pass_of_a_loop_around_a_parallel_has_lanes_of_their_own() -> None:
    """Pass 2 enters the block anew: its lanes are ``+slice-a@2`` on branches of their own.

    So a lane branch pass 1 kept (its commits unmerged under ``merge = "none"``) is never the
    one pass 2 is told of, nor in its way.
    """
    block = sliced(merge=Merge.NONE, after=False).body.blocks[0]
    review = Step(name=StageName("review"), prompt="Review. Write $verdict.", deliverable=Verdict())
    kind = Kind(
        name=KindName("feature"),
        prefix="feature",
        body=Sequence(
            blocks=pvector(
                [
                    Loop(
                        name=BlockName("rounds"),
                        body=Sequence(blocks=pvector([block, review])),
                        until=StageName("review"),
                        max=2,
                    )
                ]
            )
        ),
    )
    world = world_of(kind)
    first = [a.launch.name for a in world.actions if isinstance(a, LaunchLane)]
    assert first == ["x+slice-a", "x+slice-b", "x+slice-c"]
    for lane in LANES:
        end_lane(world, lane, finished=True)
    assert world.place is not None
    world.feed(LanesMerged(at=world.instant(), head=world.git.head("feature/x")))
    assert world.place.stage.key == "rounds@1/review"
    assert world.deliver()
    world.write_verdict("revise")
    world.end_turn()
    assert world.place.stage.key == "rounds@2/slices"
    later = [a for a in world.actions if isinstance(a, LaunchLane)][3:]
    assert [a.launch.name for a in later] == ["x+slice-a@2", "x+slice-b@2", "x+slice-c@2"]
    assert world.place.lanes["slice-a"].place == "feature--x+slice-a@2"
    assert world.place.lanes["slice-a"].branch == "feature/x+slice-a@2"
    for each in later:
        check_launch(each.launch, each.kind)


def test_a_name_neither_step_nor_parallel_is_a_key_error() -> None:
    """The core asks only for blocks it took from the kind: any other name is a bug, said so."""
    with pytest.raises(KeyError, match="has no stage nowhere"):
        _block_step(sliced(), StageName("nowhere"))
    assert _block_step(sliced(), StageName("slices")).name == "slices"


def test_a_lane_spends_of_its_run_s_budgets() -> None:
    """WF-BUDGET-PAUSES across lanes: a lane spends of what its run has left.

    What it spent is the run's once it ends; over budget, the step after the block pauses
    before it starts.
    """
    world = world_of(sliced(budgets=Budgets(turns=5, tokens=1000)))
    launched = [a for a in world.actions if isinstance(a, LaunchLane)]
    assert {(a.kind.budgets.turns, a.kind.budgets.tokens) for a in launched} == {(5, 1000)}
    for lane in LANES:
        found = world.lanes[lane]
        head = world.git.commit(found.branch, world.now)
        found.life = "finished"
        ended = LaneEnded(
            at=world.instant(), lane=lane, finished=True, head=head, turns=2, tokens=100
        )
        assert world.feed(ended) is None
    place = world.place
    assert place is not None
    assert (place.spent.turns, place.spent.tokens) == (6, 300)
    assert place.stage.name == "after"
    assert isinstance(place.stage.phase, Paused)
    assert place.stage.phase.cause is PauseCause.BUDGET
    assert not any(isinstance(a, StartAgent) for a in world.actions)


def test_a_block_entered_over_budget_launches_no_lane() -> None:
    """WF-BUDGET-PAUSES: a run whose budget is spent pauses at the block; raised, it fans out."""
    world = FakeWorld(settings=S, kind=sliced(budgets=Budgets(turns=1)))
    assert world.launch() is None
    place = world.place
    assert place is not None
    spent = attrs.evolve(place.spent, turns=1)
    queued = attrs.evolve(place.stage, phase=Queued())
    over = evolve(place, spent=spent, stage=queued, lanes=pmap())
    paused, actions = fan_when_free(S, over, place.now)
    assert isinstance(paused.stage.phase, Paused)
    assert paused.stage.phase.cause is PauseCause.BUDGET
    assert not any(isinstance(a, LaunchLane) for a in actions)
    left = launch_lane(
        evolve(place, spent=attrs.evolve(place.spent, turns=0)),
        sliced().body.blocks[0],  # type: ignore[union-attr, arg-type]
        "slice-a",
    )
    assert left.kind.budgets.turns == 1


def test_a_run_is_told_of_a_lane_once_its_place_ended_and_its_agent_is_gone() -> None:
    """lanes_ended: a lane finished or dropped is told; another entry's or none, not.

    A lane tidied once it finished finished all the same; a run not fanned out hears nothing.
    """
    world = world_of(sliced(cap=2))
    run = world.place
    assert run is not None
    launched = {a.lane: a for a in world.actions if isinstance(a, LaunchLane)}

    def lane_place(lane: str) -> Place:
        asked = launched[lane]
        seen = Launched(at=world.instant(), launch=asked.launch, kind=asked.kind, start=asked.start)
        return step(S, None, seen).place

    a, b = lane_place("slice-a"), lane_place("slice-b")
    done = evolve(a, life=Life.FINISHED, completed=a.completed.append(StageName(a.stage.key)))
    dropped = evolve(b, life=Life.DROPPED)
    lanes = {done.launch.place: done, dropped.launch.place: dropped}
    told = lanes_ended(run, lanes, world.instant())
    assert [(e.lane, e.finished) for e in told] == [("slice-a", True), ("slice-b", False)]
    tidied = evolve(done, life=Life.TIDIED)
    assert lanes_ended(run, {tidied.launch.place: tidied}, world.instant())[0].finished
    elsewhere = evolve(done, start=Sha("c9999"))
    assert lanes_ended(run, {elsewhere.launch.place: elsewhere}, world.instant()) == []
    assert lanes_ended(run, {}, world.instant()) == []
    assert lanes_ended(evolve(run, life=Life.DROPPED), lanes, world.instant()) == []


def test_a_lane_takes_an_order_once() -> None:
    """takes_order: a drop for a lane not dropped; a tidy for one finished, none wanted yet."""
    world = world_of(sliced())
    place = world.place
    assert place is not None
    assert takes_order(LaneOrder.DROP, evolve(place, life=Life.ACTIVE))
    assert not takes_order(LaneOrder.DROP, evolve(place, life=Life.DROPPED))
    assert takes_order(LaneOrder.TIDY, evolve(place, life=Life.FINISHED))
    assert not takes_order(LaneOrder.TIDY, evolve(place, life=Life.ACTIVE))


def test_a_step_of_a_lane_is_for_the_lane_s_place() -> None:
    """STEP-NAMED: at a parallel, a lane's name, path or a key inside it is for its place."""
    world = world_of(sliced(after=False))
    assert world.place is not None
    lane = world.place.lanes["slice-a"].place
    assert lane == "feature--x+slice-a"
    assert lane_for(world.place, "slice-a") == (lane, "")
    assert lane_for(world.place, "slices/slice-a") == (lane, "")
    assert lane_for(world.place, "slices/slice-a/inner@2/check") == (
        lane,
        "slice-a/inner@2/check",
    )
    assert lane_for(world.place, "slices") is None  # the block itself: the run's own step
    assert lane_for(world.place, "") is None


def test_no_lane_is_named_where_the_run_stands_at_no_parallel() -> None:
    """STEP-NAMED: past its parallel, a run routes nothing to a lane; its own step is checked."""
    world = world_of(sliced())
    for lane in LANES:
        end_lane(world, lane, finished=True)
    assert world.place is not None
    world.feed(LanesMerged(at=world.instant(), head=world.git.head("feature/x")))
    assert world.place.stage.name == "after"
    assert lane_for(world.place, "slice-a") is None


def test_a_spread_lane_is_heard_of_only_through_the_fleet() -> None:
    """A spread block's lanes say so in their launches, and their journals tell the run nothing.

    The same lanes' places, finished, tell a run that does not spread; a spread run's merge
    names the heads its lanes ended at.
    """
    for spread in (False, True):
        world = world_of(sliced(spread=spread))
        run = world.place
        assert run is not None
        launched = [a for a in world.actions if isinstance(a, LaunchLane)]
        assert {a.launch.spread for a in launched} == {spread}
        lanes = {run.lanes[lane].place: _lane_place(run, lane) for lane in LANES}
        told = lanes_ended(run, lanes, world.instant())
        assert [seen.lane for seen in told] == ([] if spread else list(LANES))
        working = {name: evolve(found, life=Life.ACTIVE) for name, found in lanes.items()}
        assert lanes_ended(run, working, world.instant()) == []
        for lane, found in working.items():
            assert lane_ended(lane, found, world.instant()) is None
        for lane in LANES:
            end_lane(world, lane, finished=True)
        (merge,) = [a for a in world.actions if isinstance(a, MergeLanes)]
        assert merge.spread is spread
        assert list(merge.heads) == [world.git.head(world.lanes[lane].branch) for lane in LANES]
        assert {a.spread for a in world.actions if isinstance(a, OrderLane)} == {spread}
