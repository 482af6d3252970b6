"""A spread block's lanes, shell side, with real git and real journals (no Temporal here).

What the fleet's hosts do for spread lanes (WF-SPREAD), each part alone: the outbox keeps the
run's words in order; the run's host journals what the fleet brings of a lane only for the lane
its run named and runs, each piece of news once; its merge fetches the lanes' branches from the
remote, refuses one not at the head it ended at, merges in declared order and pushes the run's
branch; a lane's host follows its base copy only forward, never a branch checked out, and lets
it go only once no place stands on it and the remote holds it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyrsistent import pvector

from flume.core.actions import LaunchLane, MergeLanes
from flume.core.ids import BranchName, Instant, PlaceName, Sha
from flume.core.observations import (
    ActionFailed,
    ChildNews,
    LaneEnded,
    LanesMerged,
    Launched,
    Observation,
)
from flume.core.place import LaneState
from flume.core.settings import Settings
from flume.core.step import replay
from flume.shell.commands import spread
from flume.shell.perform import lanes
from flume.shell.store import journal, outbox, places
from flume.shell.tools import git
from tests.integration.places_kit import commit, repository, run_git
from tests.model.test_lanes import LANES, sliced
from tests.model.test_orchestrate import crew, spawn, world_of
from tests.model.world import FakeWorld

NOW = Instant(1000.0)


def test_the_outbox_keeps_words_in_order_and_names_one_it_cannot_read() -> None:
    """Words come back in the order written; a torn one reads as None; a strange kind refused."""
    for path, _word in outbox.waiting():
        outbox.done(path)
    written = [
        outbox.Word(kind="launch", place=f"p{n}", run="r", repository="/src", line="{}")
        for n in range(3)
    ]
    for word in written:
        outbox.put(word)
    (outbox.folder() / "99999999999999999999-bad.json").write_text("{not json", encoding="utf-8")
    found = outbox.waiting()
    assert [word for _path, word in found] == [*written, None]
    with pytest.raises(ValueError, match="no word the fleet carries"):
        outbox.put(outbox.Word(kind="shout", place="p", run="r", repository="/src"))
    for path, _word in found:
        outbox.done(path)
    assert outbox.waiting() == []


def _run_journal(clone: Path, world: FakeWorld) -> Path:
    """The run of ``world``, its journal written in ``clone``'s journals."""
    place = world.place
    assert place is not None
    path = places.journals_dir(clone) / place.launch.place / places.JOURNAL
    first, *rest = world.journal
    journal.create(path, first)
    for seen in rest:
        journal.append(path, seen)
    return path


def _read(path: Path) -> list[Observation]:
    return list(journal.read(path).observations)


def test_the_run_s_host_journals_a_lane_s_news_once_and_its_end_only_for_the_lane_it_named(
    tmp_path: Path,
) -> None:
    """A child's news and end for the child the run runs are journaled once; a stranger's never.

    A parallel's lane has no news for its run (only its end); one that could not be launched
    is said so, and ended unfinished.
    """
    clone = repository(tmp_path / "clone")
    crew_world = world_of(crew(spread=True))
    assert spawn(crew_world) is None
    path = _run_journal(clone, crew_world)
    run = crew_world.place
    assert run is not None
    child = run.lanes["coder-1"]
    name, told = run.launch.place, [("started", "started"), ("passed:x", "passed x")]
    assert spread.tell_run(clone, name, "coder-1", child.place, NOW, told=told) == 2
    assert spread.tell_run(clone, name, "coder-1", child.place, NOW, told=told) == 0
    stranger = f"{child.place}@2"
    end = LaneEnded(at=NOW, lane="coder-1", finished=True, head=Sha("c1111"), turns=3)
    assert spread.tell_run(clone, name, "coder-1", stranger, NOW, told=[], end=end) == 0
    assert spread.tell_run(clone, "nowhere--x", "coder-1", child.place, NOW, told=[], end=end) == 0
    assert spread.tell_run(clone, name, "coder-1", child.place, NOW, told=[], end=end) == 1
    assert spread.tell_run(clone, name, "coder-1", child.place, NOW, told=[], end=end) == 0
    seen = _read(path)
    assert [each.id for each in seen if isinstance(each, ChildNews)] == ["started", "passed:x"]
    assert [each.head for each in seen if isinstance(each, LaneEnded)] == ["c1111"]
    after = replay(Settings(), seen)
    assert after.lanes["coder-1"].state is LaneState.FINISHED
    lanes_world = FakeWorld(settings=Settings(), kind=sliced(spread=True))
    assert lanes_world.launch() is None
    path = _run_journal(clone, lanes_world)
    run = lanes_world.place
    assert run is not None
    name, a = run.launch.place, run.lanes["slice-a"].place
    assert spread.tell_run(clone, name, "slice-a", a, NOW, told=told) == 0
    failed = "its entry could not be pushed"
    b = run.lanes["slice-b"].place
    assert spread.tell_run(clone, name, "slice-b", b, NOW, told=[], failed=failed) == 2
    last = _read(path)[-2:]
    assert isinstance(last[0], ActionFailed)
    assert failed in last[0].output
    assert last[1] == LaneEnded(at=NOW, lane="slice-b", finished=False)


def _fleet_clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bare remote, and two clones of it marked as fleet hosts' (``flume.fleetRemote``)."""
    origin = repository(tmp_path / "origin")
    remote = tmp_path / "remote.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(origin), str(remote))
    clones = []
    for name in ("run-host", "lane-host"):
        clone = tmp_path / name
        run_git(tmp_path, "clone", "-q", str(remote), str(clone))
        run_git(clone, "config", git.FLEET_REMOTE, "origin")
        clones.append(clone)
    return remote, clones[0], clones[1]


def test_a_spread_merge_fetches_each_lane_at_its_end_merges_in_order_and_pushes_the_run(
    tmp_path: Path,
) -> None:
    """WF-MERGE-ORDER through the remote: a lane not at its end is refused; in order, pushed."""
    remote, run_host, lane_host = _fleet_clones(tmp_path)
    run_git(run_host, "worktree", "add", "-q", "-b", "feature/x", str(tmp_path / "run"))
    heads = []
    for lane in LANES[:2]:
        branch = f"feature/x+{lane}"
        run_git(lane_host, "checkout", "-q", "-b", branch, "main")
        heads.append(commit(lane_host, f"{lane}.md"))
        run_git(lane_host, "push", "-q", "origin", branch)
    action = MergeLanes(
        path=str(tmp_path / "run"),
        branch=BranchName("feature/x"),
        lanes=pvector(LANES[:2]),
        branches=pvector(BranchName(f"feature/x+{lane}") for lane in LANES[:2]),
        heads=pvector([heads[0], Sha("0" * 40)]),
        spread=True,
    )
    (failed,) = lanes.merge(action, run_host, NOW)
    assert isinstance(failed, ActionFailed)
    assert "is at" in failed.output
    assert "its host did not push it" in failed.output
    merged = lanes.merge(MergeLanes(**{**_fields(action), "heads": pvector(heads)}), run_host, NOW)
    assert [type(each) for each in merged] == [LanesMerged]
    subjects = run_git(tmp_path / "run", "log", "--first-parent", "--format=%s").splitlines()
    assert subjects[:2] == [
        "Merge lane slice-b (feature/x+slice-b) into feature/x",
        "Merge lane slice-a (feature/x+slice-a) into feature/x",
    ]
    pushed = run_git(remote, "rev-parse", "feature/x").strip()
    assert pushed == run_git(tmp_path / "run", "rev-parse", "HEAD").strip()
    assert run_git(run_host, "for-each-ref", "refs/remotes/origin/feature/x+*") == ""
    unmarked = repository(tmp_path / "plain")
    (refused,) = lanes.merge(action, unmarked, NOW)
    assert isinstance(refused, ActionFailed)
    assert "is no fleet host's clone" in refused.output


def _fields(action: MergeLanes) -> dict[str, object]:
    return {
        "path": action.path,
        "branch": action.branch,
        "lanes": action.lanes,
        "branches": action.branches,
        "heads": action.heads,
        "spread": action.spread,
    }


def test_a_lane_host_s_base_copy_moves_only_forward_and_goes_only_once_the_remote_holds_it(
    tmp_path: Path,
) -> None:
    """follow_base and release_base: never a branch checked out, never backwards, nothing lost."""
    _remote, run_host, lane_host = _fleet_clones(tmp_path)
    base = BranchName("feature/x")
    run_git(run_host, "checkout", "-q", "-b", base, "main")
    entry = run_git(run_host, "rev-parse", "HEAD").strip()
    run_git(lane_host, "update-ref", f"refs/heads/{base}", entry)
    spread.follow_base(lane_host, base)
    assert git.resolve(lane_host, base) == entry  # the remote has no such branch yet
    merged = commit(run_host, "merged.md")
    run_git(run_host, "push", "-q", "origin", base)
    spread.follow_base(lane_host, base)
    assert git.resolve(lane_host, base) == merged
    # A branch checked out here (the run's own, on the run's host) is never moved nor removed.
    ahead = commit(run_host, "ahead.md")
    spread.follow_base(run_host, base)
    assert spread.release_base(run_host, base) is None
    assert git.resolve(run_host, base) == ahead
    # Holding a commit the remote lacks: kept. Held by the remote: released.
    tree = run_git(lane_host, "rev-parse", f"{merged}^{{tree}}").strip()
    own = run_git(lane_host, "commit-tree", tree, "-p", merged, "-m", "Only here").strip()
    run_git(lane_host, "update-ref", f"refs/heads/{base}", own, merged)
    assert spread.release_base(lane_host, base) is None
    assert git.resolve(lane_host, base) == own
    run_git(lane_host, "update-ref", f"refs/heads/{base}", merged, own)
    # Another lane of the run, on this host, still stands on it: kept until that one is tidied.
    world = FakeWorld(settings=Settings(), kind=sliced(spread=True))
    assert world.launch() is None
    other = next(a for a in world.actions if isinstance(a, LaunchLane))
    standing = places.journals_dir(lane_host) / other.launch.place / places.JOURNAL
    journal.create(standing, Launched(at=NOW, launch=other.launch, kind=other.kind))
    assert other.launch.base == base
    assert spread.release_base(lane_host, base) is None
    assert git.resolve(lane_host, base) == merged
    shutil.rmtree(standing.parent)
    said = spread.release_base(lane_host, base)
    assert said is not None
    assert "removed here (origin holds it)" in said
    assert git.resolve(lane_host, base) is None
    assert spread.release_base(lane_host, base) is None
    assert spread.lane_facts("feature--x+slice-a", lane_host) is None
    assert spread.is_tidied("feature--x+slice-a", lane_host)
    assert spread.ended("feature--x+slice-a", lane_host, NOW) is None
    assert spread.news("feature--x+slice-a", lane_host, frozenset(), "") == []
    assert PlaceName("feature--x+slice-a") == "feature--x+slice-a"
