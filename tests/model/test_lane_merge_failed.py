"""A parallel block's merge that git would not start pauses the run, named as what it is.

WF-NO-SILENT-WAIT: the shell reports a ``MergeLanes`` git refused before merging anything (a
file in the way, the worktree gone) as a failed action; the run does not wait in ``merging``
for ever, but pauses ``merge-failed`` (never called a conflict) with git's words, and ``flume
resume`` (once mended) or ``flume resolve --by-hand`` merges again.
"""

from __future__ import annotations

from pyrsistent import pvector

from flume.core.actions import ActionName, LaunchLane, MergeLanes
from flume.core.ids import BlockName, BranchName, Instant, KindName, Sha, StageName, WorkName
from flume.core.kinds import Commit, Kind, Parallel, Sequence, Step
from flume.core.launch import Launch
from flume.core.observations import (
    ActionFailed,
    LaneEnded,
    Launched,
    Observation,
    ResolveAsked,
    ResumeAsked,
    WorktreeMade,
)
from flume.core.place import Merging, PauseCause, Paused, Place
from flume.core.settings import Settings
from flume.core.step import Decision, step

S = Settings()
HEAD = Sha("a" * 40)


def _slice(name: str) -> Step:
    return Step(name=StageName(name), prompt=f"Build {name}; commit.", deliverable=Commit())


KIND = Kind(
    name=KindName("wf"),
    prefix="wf",
    body=Sequence(
        blocks=pvector(
            [Parallel(name=BlockName("slices"), branches=pvector([_slice("a"), _slice("b")]))]
        )
    ),
)


def _fold(observations: list[Observation]) -> tuple[Place, Decision]:
    place: Place | None = None
    decision: Decision | None = None
    for seen in observations:
        decision = step(S, place, seen)
        place = decision.place
    assert place is not None
    assert decision is not None
    return place, decision


def _merging() -> list[Observation]:
    launch = Launch(
        repository="/r",
        kind=KindName("wf"),
        name=WorkName("feat"),
        brief="b",
        base=BranchName("main"),
    )
    return [
        Launched(at=Instant(1), launch=launch, kind=KIND, start=HEAD),
        WorktreeMade(
            at=Instant(2), path="/r/places/wf--feat", branch=BranchName("wf/feat"), head=HEAD
        ),
        LaneEnded(at=Instant(4), lane="a", finished=True, head=Sha("b" * 40)),
        LaneEnded(at=Instant(5), lane="b", finished=True, head=Sha("c" * 40)),
    ]


def test_a_merge_git_refused_pauses_merge_failed_and_resolve_merges_again() -> None:
    """Merging (both lanes finished); git refuses; paused with its words; resolved, asked again."""
    place, decision = _fold(_merging()[:2])
    assert {a.lane for a in decision.actions if isinstance(a, LaunchLane)} == {"a", "b"}
    place, decision = _fold(_merging())
    assert isinstance(place.stage.phase, Merging)
    (merge,) = [a for a in decision.actions if isinstance(a, MergeLanes)]
    assert list(merge.lanes) == ["a", "b"]
    refused = ActionFailed(
        at=Instant(6),
        action=ActionName.MERGE_LANES,
        output="git merge of lane a (wf/feat+a) refused: untracked a.md would be overwritten",
    )
    place, decision = _fold([*_merging(), refused])
    phase = place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.MERGE_FAILED
    assert "untracked a.md would be overwritten" in phase.words
    assert place.agent is None
    resolved = ResolveAsked(at=Instant(7))
    place, decision = _fold([*_merging(), refused, resolved])
    assert isinstance(place.stage.phase, Merging)
    assert [a for a in decision.actions if isinstance(a, MergeLanes)] == [merge]
    resumed = ResumeAsked(at=Instant(7))
    place, decision = _fold([*_merging(), refused, resumed])
    assert isinstance(place.stage.phase, Merging)
    assert [a for a in decision.actions if isinstance(a, MergeLanes)] == [merge]


def test_a_merge_failure_outside_a_merge_changes_nothing_but_its_report() -> None:
    """A MergeLanes failure reported after the run paused (or moved on) is only reported."""
    refused = ActionFailed(at=Instant(6), action=ActionName.MERGE_LANES, output="no")
    place, _ = _fold([*_merging(), refused])
    again, decision = _fold([*_merging(), refused, refused])
    assert again.stage == place.stage
    assert all(type(a).__name__ == "Report" for a in decision.actions)
