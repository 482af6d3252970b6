"""A loop around a parallel block: each pass enters the block anew, its lanes run again.

Found running lanes on real repositories: pass 2 took pass 1's finished lanes for a merge step
retried, and asked their merge again (their branches tidied away) instead of fanning out. Each
pass now fans out afresh, its lanes cut from the run's head at that pass, the first to finish
counted in that pass alone (``pick``).
"""

from __future__ import annotations

from pyrsistent import pvector

from flume.core.actions import LaunchLane, MergeLanes
from flume.core.ids import BlockName, KindName, StageName
from flume.core.kinds import Commit, Join, Kind, Loop, Merge, Parallel, Sequence, Step, Verdict
from flume.core.place import Fanned, LaneState
from flume.core.settings import Settings
from tests.model.test_lanes import end_lane
from tests.model.world import FakeWorld

S = Settings()


def looped() -> Kind:
    """Two slices side by side (pick the first to finish), then a review, in a loop of two."""
    slices = Parallel(
        name=BlockName("slices"),
        branches=pvector(
            Step(name=StageName(lane), prompt=f"Build {lane}; commit.", deliverable=Commit())
            for lane in ("slice-a", "slice-b")
        ),
        join=Join.FIRST,
        merge=Merge.PICK,
    )
    review = Step(name=StageName("review"), prompt="Review. Write $verdict.", deliverable=Verdict())
    rounds = Loop(
        name=BlockName("rounds"),
        body=Sequence(blocks=pvector([slices, review])),
        until=StageName("review"),
        max=2,
    )
    return Kind(name=KindName("feature"), prefix="feature", body=Sequence(blocks=pvector([rounds])))


def test_each_pass_of_a_loop_fans_its_lanes_out_again_from_its_own_head() -> None:
    """Pass 1 picks a, its review says revise; pass 2 fans out anew and picks b, its first."""
    world = FakeWorld(settings=S, kind=looped())
    assert world.launch() is None
    end_lane(world, "slice-a", finished=True)
    assert world.place is not None
    assert world.place.stage.key == "rounds@1/review"
    assert world.deliver()
    world.write_verdict("revise")
    assert world.end_turn() is None
    place = world.place
    assert place is not None
    assert place.stage.key == "rounds@2/slices"
    assert isinstance(place.stage.phase, Fanned)
    assert {run.state for run in place.lanes.values()} == {LaneState.RUNNING}
    assert list(place.finished_lanes) == []
    launches = [a for a in world.actions if isinstance(a, LaunchLane)]
    assert len(launches) == 4
    assert launches[2].start == place.entry != launches[0].start
    assert sum(1 for a in world.actions if isinstance(a, MergeLanes)) == 1
    end_lane(world, "slice-b", finished=True)
    merges = [a for a in world.actions if isinstance(a, MergeLanes)]
    assert [list(a.lanes) for a in merges] == [["slice-a"], ["slice-b"]]
    assert world.place is not None
    assert world.place.stage.key == "rounds@2/review"
