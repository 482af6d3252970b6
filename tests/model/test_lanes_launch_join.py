"""A parallel block's launch and join, said and kept whole: its lanes, its reports, its pauses.

Each example drives the model's world (``tests/model/world.py``) through a parallel block, as
``test_lanes.py`` does, and compares whole what the run decided: every lane's record, each
launch asked, each report the block made, the pause it came to. A word a person reads, or a
field the shell acts on, that changed would fail here (issue 25: the mutation run's survivors
of the block's launch and join, ``docs/mutation.md``).
"""

from __future__ import annotations

from flume.core.actions import Event, Report
from flume.core.ids import BranchName, PlaceName, Sha, StageName
from flume.core.kinds import Budgets, Join, Merge
from flume.core.observations import LaneEnded
from flume.core.place import Fanned, LaneRun, LaneState, PauseCause, Paused, Place
from flume.core.workflow.lanes import lane_for
from tests.model.test_lanes import LANES, end_lane, sliced, world_of
from tests.model.world import FakeWorld

#: The events a parallel block reports of its own lanes and its join.
BLOCK_EVENTS = frozenset(
    {Event.STAGE_STARTED, Event.LANE_LAUNCHED, Event.LANE_ENDED, Event.MERGED, Event.PAUSED}
)


def said(world: FakeWorld) -> list[tuple[Event, str, StageName | None]]:
    """The block's reports, in order, each whole."""
    return [
        (action.event, action.text, action.stage)
        for action in world.actions
        if isinstance(action, Report) and action.event in BLOCK_EVENTS
    ]


def merged(world: FakeWorld) -> list[tuple[Event, str, StageName | None]]:
    """The block's reports of its merge."""
    return [report for report in said(world) if report[0] is Event.MERGED]


def at(world: FakeWorld) -> Place:
    """The world's place, which it has once launched."""
    place = world.place
    assert place is not None
    return place


def launched(lane: str) -> tuple[Event, str, StageName]:
    """The report of ``lane``'s launch, in the run ``feature--x``."""
    text = f"lane {lane} launched: feature--x+{lane} on feature/x+{lane}"
    return Event.LANE_LAUNCHED, text, StageName("slices")


def spend(world: FakeWorld, lane: str, *, finished: bool, turns: int) -> Sha:
    """``lane``'s place ends (finished with a commit, or dropped), having spent ``turns``."""
    found = world.lanes[lane]
    head = world.git.commit(found.branch, world.now) if finished else world.git.head(found.branch)
    found.life = "finished" if finished else "dropped"
    world.now += 1
    seen = LaneEnded(at=world.instant(), lane=lane, finished=finished, head=head, turns=turns)
    assert world.feed(seen) is None
    return head


def test_a_lane_named_with_its_passes_is_for_its_place() -> None:
    """STEP-NAMED: a lane's name with the passes after its ``@`` (one or more) is that lane's."""
    world = world_of(sliced(after=False))
    lane = at(world).lanes["slice-a"].place
    assert lane_for(at(world), "slice-a@2") == (lane, "slice-a@2")
    assert lane_for(at(world), "slices/slice-a@2@3/check") == (lane, "slice-a@2@3/check")


def test_a_budget_of_turns_per_attempt_holds_back_no_lane() -> None:
    """A turns-per-attempt budget bounds each agent's attempt, not the run: every lane runs."""
    world = world_of(sliced(budgets=Budgets(turns_per_attempt=1)))
    place = at(world)
    assert isinstance(place.stage.phase, Fanned)
    assert {run.state for run in place.lanes.values()} == {LaneState.RUNNING}
    assert said(world)[1:] == [launched(lane) for lane in LANES]


def test_a_budget_spent_while_lanes_wait_pauses_the_block_naming_it() -> None:
    """WF-BUDGET-PAUSES: the lane that ended spent the run's turns; those waiting are held."""
    world = world_of(sliced(cap=1, budgets=Budgets(turns=2)))
    head = spend(world, "slice-a", finished=True, turns=2)
    words = "budget turns spent, and lanes of parallel slices wait to be launched"
    assert at(world).stage.phase == Paused(
        cause=PauseCause.BUDGET, words=words, spent="turns", again=True
    )
    assert said(world)[-2] == (
        Event.LANE_ENDED,
        f"lane slice-a finished at {head}",
        StageName("slices"),
    )
    assert {lane: run.state for lane, run in at(world).lanes.items()} == {
        "slice-a": LaneState.FINISHED,
        "slice-b": LaneState.WAITING,
        "slice-c": LaneState.WAITING,
    }


def test_lanes_dropped_under_join_all_are_named_in_order_in_its_pause() -> None:
    """WF-JOIN-ALL: the pause names every lane that ended unfinished, in declared order."""
    world = world_of(sliced())
    end_lane(world, "slice-c", finished=False)
    end_lane(world, "slice-b", finished=True)
    end_lane(world, "slice-a", finished=False)
    words = "lane slice-a, slice-c ended unfinished, and parallel slices joins all its lanes"
    assert at(world).stage.phase == Paused(
        cause=PauseCause.LANE_DROPPED, words=words, lane="slice-a"
    )


def test_a_first_join_with_no_lane_left_pauses_on_the_last_lane_ended() -> None:
    """WF-JOIN-FIRST: every lane ended unfinished; the pause names the last, to launch again."""
    world = world_of(sliced(join=Join.FIRST, merge=Merge.PICK, cap=2))
    for lane in LANES:
        end_lane(world, lane, finished=False)
    words = "every lane of parallel slices ended unfinished"
    assert at(world).stage.phase == Paused(
        cause=PauseCause.LANE_DROPPED, words=words, lane="slice-c"
    )


def test_a_merge_of_none_reports_none_merged_at_the_run_s_head() -> None:
    """WF-MERGE-ORDER: ``merge = "none"`` merges nothing, and says so with the head it keeps."""
    world = world_of(sliced(merge=Merge.NONE))
    head = at(world).head
    for lane in LANES:
        end_lane(world, lane, finished=True)
    text = f"lanes merged into feature/x: none; its head is {head}"
    assert merged(world) == [(Event.MERGED, text, StageName("slices"))]


def test_a_merge_reports_the_lanes_merged_and_the_head_they_made() -> None:
    """WF-MERGE-ORDER: the lanes merged, in declared order, and the run's head after them."""
    world = world_of(sliced())
    heads = {lane: Sha("") for lane in LANES}
    for lane in reversed(LANES):
        end_lane(world, lane, finished=True)
        heads[lane] = world.git.head(world.lanes[lane].branch)
    head = world.git.head(BranchName("feature/x"))
    assert at(world).head == head
    text = f"lanes merged into feature/x: {', '.join(LANES)}; its head is {head}"
    assert merged(world) == [(Event.MERGED, text, StageName("slices"))]
    assert dict(at(world).lanes) == {
        lane: LaneRun(
            lane=lane,
            place=PlaceName(f"feature--x+{lane}"),
            branch=BranchName(f"feature/x+{lane}"),
            index=index,
            state=LaneState.FINISHED,
            head=heads[lane],
        )
        for index, lane in enumerate(LANES)
    }
