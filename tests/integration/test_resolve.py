"""A person's side of a merge that conflicted: flume resolve --by-hand or --agent, and its refusals.

The run's journal is a real one in a real repository, launched as ``flume launch`` launches it,
then carried by hand to where each test needs it: the facts a supervisor would journal (its
worktree made, each lane ended, the merge conflicted) are appended as it would append them, so
no lane is run and no agent started. The commands are the real CLI's, the supervisor's wake-up
recorded instead of done.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from pyrsistent import pvector

from flume.core.actions import MergeLanes, StartAgent
from flume.core.ids import BlockName, Instant, KindName, Sha, StageName
from flume.core.kinds import Commit, Join, Kind, Merge, Parallel, Sequence, Step
from flume.core.observations import (
    ApproveAsked,
    LaneEnded,
    MergeConflicted,
    Observation,
    ResolveAsked,
    ResumeAsked,
    WorktreeMade,
)
from flume.core.place import Fanned, Merging, PauseCause, Paused, Place, Starting
from flume.core.settings import Settings
from flume.core.step import pending, replay
from flume.shell.commands import herdr_plugin
from flume.shell.perform import launcher
from flume.shell.store import journal
from tests.integration.places_kit import Clock, commit, flume, repository, run_git, world_of

PLACE = "feature--fan"


def _kind(join: Join = Join.ALL) -> Kind:
    """Two lanes, each a commit-gated step, merged in order; a last step after them."""
    lanes = [
        Step(name=StageName(name), prompt=f"Build {name} of $brief; commit.", deliverable=Commit())
        for name in ("slice-a", "slice-b")
    ]
    slices = Parallel(
        name=BlockName("slices"),
        branches=pvector(lanes),
        join=join,
        merge=Merge.MERGE if join is Join.ALL else Merge.PICK,
        cap=2,
    )
    after = Step(name=StageName("check"), prompt="Check $brief.", deliverable=Commit())
    return Kind(
        name=KindName("feature"), prefix="feature", body=Sequence(blocks=pvector([slices, after]))
    )


def _place(path: Path) -> Place:
    return replay(Settings(), journal.read(path).observations)


def _lines(path: Path) -> list[Observation]:
    return list(journal.read(path).observations)


def _snapshot(repo: Path, path: Path) -> tuple[dict[str, object], bytes]:
    return world_of(repo), path.read_bytes()


def _fanned(repo: Path, join: Join = Join.ALL) -> Path:
    """The run launched and its worktree made: its parallel fans out into its lanes; the journal.

    The worktree is made as the supervisor makes it, on the run's branch at the base's head.
    """
    clock = Clock()
    request = launcher.Request(
        repository=repo, kind="feature", name="fan", brief="both slices", carried=_kind(join)
    )
    made = launcher.launch(request, Settings(), clock)
    head = Sha(run_git(repo, "rev-parse", "main").strip())
    run_git(repo, "worktree", "add", "-q", "-b", made.branch, str(made.path), head)
    seen = WorktreeMade(at=Instant(1), path=str(made.path), branch=made.branch, head=head)
    journal.append(made.journal, seen)
    assert isinstance(_place(made.journal).stage.phase, Fanned)
    return made.journal


def _lane_ends(path: Path, lane: str, *, finished: bool = True) -> Place:
    """The lane's place ends: finished, its branch a real one with a commit of its own."""
    place = _place(path)
    head = _lane_branch(place, lane) if finished else None
    journal.append(path, LaneEnded(at=Instant(2), lane=lane, finished=finished, head=head))
    return _place(path)


def _lane_branch(run: Place, lane: str) -> Sha:
    """The lane's branch, cut from the run's entry, with a commit adding ``<lane>.txt``."""
    repo = Path(run.launch.repository)
    branch = run.lanes[lane].branch
    where = repo.parent / f"lane-{lane}"
    run_git(repo, "worktree", "add", "-q", "-b", branch, str(where), str(run.entry))
    head = commit(where, f"{lane}.txt", f"{lane}\n")
    run_git(repo, "worktree", "remove", "--force", str(where))
    return head


def _conflicted(repo: Path) -> tuple[Path, Paused]:
    """The run's lanes both finished; merging slice-b conflicted in greeting.txt: paused."""
    path = _fanned(repo)
    _lane_ends(path, "slice-a")
    assert isinstance(_lane_ends(path, "slice-b").stage.phase, Merging)
    files = pvector(["greeting.txt"])
    journal.append(path, MergeConflicted(at=Instant(3), lane="slice-b", files=files))
    phase = _place(path).stage.phase
    assert isinstance(phase, Paused), phase
    assert phase.cause is PauseCause.MERGE_CONFLICT
    return path, phase


# --- the pause, as status and the sidebar show it ---------------------------------------------


def test_a_merge_conflict_pause_names_its_files_and_the_resolve_command(
    host: Path, woken: list[str]
) -> None:
    """status, status --json and herdr's row name the pause, its files and flume resolve."""
    repo = repository(host / "repo")
    _conflicted(repo)
    shown = flume("status").stdout
    assert "slices#1  paused (merge-conflict)  " in shown
    assert f"{PLACE} slices: paused (merge-conflict): " in shown
    assert "greeting.txt" in shown
    assert f"flume resolve {PLACE} --by-hand" in shown
    assert f"flume resolve {PLACE} --agent lets it go on" in shown
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert (view["phase"], view["paused"]) == ("paused", "merge-conflict")
    assert view["resolve"].startswith(f"flume resolve {PLACE} --by-hand")
    (flight,) = herdr_plugin.in_flight([repo])
    assert herdr_plugin.waits_on_caller(flight)
    assert f"{PLACE} slices#1 paused (merge-conflict): flume resolve" in herdr_plugin.row(flight)
    assert woken == []


def test_the_lanes_and_merging_phases_are_shown_by_their_words(host: Path) -> None:
    """While its lanes run, the run's phase is lanes; once they joined, merging."""
    repo = repository(host / "repo")
    path = _fanned(repo)
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["phase"] == "lanes"
    assert "slices#1  lanes  " in flume("status").stdout
    assert "slices#1  lanes  " in flume("watch", "--once").stdout
    (flight,) = herdr_plugin.in_flight([repo])
    assert not herdr_plugin.waits_on_caller(flight)
    assert herdr_plugin.row(flight) == f"{PLACE} slices#1 lanes: 2 running"
    _lane_ends(path, "slice-a")
    (flight,) = herdr_plugin.in_flight([repo])
    assert herdr_plugin.row(flight) == f"{PLACE} slices#1 lanes: 1 running, 1 finished"
    _lane_ends(path, "slice-b")
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["phase"] == "merging"
    assert "slices#1  merging  " in flume("status").stdout
    (flight,) = herdr_plugin.in_flight([repo])
    assert herdr_plugin.row(flight) == f"{PLACE} slices#1 merging its lanes"
    events = flume("events", PLACE).stdout
    for word in ("lane-launched: lane slice-a launched", "lane-ended: lane slice-b finished"):
        assert word in events, events


# --- resolve ---------------------------------------------------------------------------------


def _merged_by_hand(place: Place, *lanes: str, ours: bool = False) -> None:
    """A person merges ``lanes`` in the run's worktree and commits (``ours``: none of it kept)."""
    for lane in lanes:
        how = ("-s", "ours") if ours else ()
        branch = place.lanes[lane].branch
        run_git(Path(place.path), "merge", "--no-ff", "-q", "--no-edit", *how, branch)


def test_resolve_by_hand_asks_the_merge_again(host: Path, woken: list[str]) -> None:
    """--by-hand: journaled, the run merges again (what was merged by hand is passed over)."""
    repo = repository(host / "repo")
    path, _ = _conflicted(repo)
    _merged_by_hand(_place(path), "slice-a", "slice-b")
    ran = flume("resolve", PLACE, "--by-hand")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == (
        f"{PLACE}: merged by hand; the merge of the lanes of parallel slices goes on, passing "
        "over what is merged already\n"
    )
    assert _lines(path)[-1] == ResolveAsked(at=_lines(path)[-1].at, agent=False)
    place = _place(path)
    assert isinstance(place.stage.phase, Merging)
    (merge,) = [each for each in pending(place) if isinstance(each, MergeLanes)]
    assert list(merge.lanes) == ["slice-a", "slice-b"]
    events = flume("events", PLACE).stdout
    assert "merge-conflict: " in events
    assert "resumed: " in events
    assert "merged by hand" in events
    assert woken == ["wake"]


def test_resolve_by_an_agent_queues_the_merge_step(host: Path, woken: list[str]) -> None:
    """--agent: journaled, the parallel's merge step waits for a fresh agent (attempt 2)."""
    repo = repository(host / "repo")
    path, _ = _conflicted(repo)
    ran = flume("resolve", PLACE, "--agent")
    assert ran.returncode == 0, ran.stderr
    assert f"{PLACE}: an agent merges the lanes of parallel slices (attempt 2)" in ran.stdout
    seen = _lines(path)[-1]
    assert isinstance(seen, ResolveAsked)
    assert seen.agent
    place = _place(path)
    assert isinstance(place.stage.phase, Starting)
    assert (place.stage.attempt, place.stage.resolving) == (2, True)
    (start,) = [each for each in pending(place) if isinstance(each, StartAgent)]
    assert (start.stage, start.path) == ("slices", place.path)
    assert woken == ["wake"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ((), "resolve: none of them is given; give one: --by-hand"),
        (("--by-hand", "--agent"), "resolve: --by-hand and --agent are given; give one"),
    ],
)
def test_resolve_takes_exactly_one_way_else_exit_2(
    host: Path, woken: list[str], argv: tuple[str, ...], says: str
) -> None:
    """Neither way, or both: exit 2 naming the two options; nothing journaled, nobody woken."""
    repo = repository(host / "repo")
    path, _ = _conflicted(repo)
    before = _snapshot(repo, path)
    ran = flume("resolve", PLACE, *argv)
    assert ran.returncode == 2, ran.stderr
    assert says in ran.stderr
    assert "--agent (an agent merges it)" in ran.stderr
    assert _snapshot(repo, path) == before
    assert woken == []


def test_resolve_with_nothing_waiting_on_it_is_refused(host: Path, woken: list[str]) -> None:
    """Lanes running, or a fix's place: exit 1, nothing journaled; no such place: exit 2."""
    repo = repository(host / "repo")
    path = _fanned(repo)
    for way in ("--by-hand", "--agent"):
        before = _snapshot(repo, path)
        ran = flume("resolve", PLACE, way)
        assert ran.returncode == 1, ran.stderr
        assert f"{PLACE} runs the lanes of slices; nothing there waits on a resolve" in ran.stderr
        assert f"nothing waits on you now: flume status {PLACE} shows" in ran.stderr
        assert _snapshot(repo, path) == before
    request = launcher.Request(repository=repo, kind="fix", name="plain", brief="Mend it.")
    plain = launcher.launch(request, Settings(), Clock()).journal
    before = _snapshot(repo, plain)
    ran = flume("resolve", "fix--plain", "--by-hand")
    assert ran.returncode == 1, ran.stderr
    assert "nothing there waits on a resolve: no merge conflict" in ran.stderr
    assert _snapshot(repo, plain) == before
    missing = flume("resolve", "feature--nowhere", "--agent")
    assert missing.returncode == 2, missing.stderr
    assert woken == []


def test_the_other_pause_commands_name_resolve_and_resolve_names_the_lane_s_ways(
    host: Path, woken: list[str]
) -> None:
    """Approve and resume on a merge conflict point at resolve; a lane-dropped pause names two.

    Launch the lane again (retry --step) or go on without it (resolve --without): resolve by
    hand there is refused naming both, nothing journaled.
    """
    repo = repository(host / "repo")
    path, _ = _conflicted(repo)
    before = _snapshot(repo, path)
    for word in ("approve", "resume"):
        ran = flume(word, PLACE)
        assert ran.returncode == 1, ran.stderr
        assert f"{PLACE} is paused at slices (merge-conflict: " in ran.stderr
        assert f"; flume resolve {PLACE} --by-hand" in ran.stderr
    assert _snapshot(repo, path) == before
    assert not any(isinstance(each, ApproveAsked | ResumeAsked) for each in _lines(path))
    dropped = repository(host / "dropped")
    lanes = _fanned(dropped)
    _lane_ends(lanes, "slice-a", finished=False)
    phase = _lane_ends(lanes, "slice-b").stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.LANE_DROPPED
    before = _snapshot(dropped, lanes)
    ran = flume("resolve", PLACE, "--by-hand", "--repository", str(dropped))
    assert ran.returncode == 1, ran.stderr
    assert "paused for lane-dropped: lane slice-a ended unfinished" in ran.stderr
    assert f"flume retry {PLACE} --step slice-a" in ran.stderr
    assert f"flume resolve {PLACE} --without slice-a" in ran.stderr
    assert f"flume drop {PLACE}" not in ran.stderr
    assert _snapshot(dropped, lanes) == before
    assert woken == []


# --- resolve --by-hand checks what the run's head holds (issue 25, 2.3) ---------------------


def test_resolve_by_hand_is_refused_until_the_head_holds_each_lane_claimed(
    host: Path, woken: list[str]
) -> None:
    """WF-FINISHED-HOLDS-ITS-WORK: by hand is taken only once the head holds each lane claimed.

    Nothing merged, merged without its changes, a merge left under way: each refused, exit 1,
    naming the lane (or the merge) and the commands that mend it, nothing journaled.
    """
    repo = repository(host / "repo")
    path, _ = _conflicted(repo)
    place = _place(path)
    worktree = Path(place.path)
    before = _snapshot(repo, path)
    ran = flume("resolve", PLACE, "--by-hand")
    assert ran.returncode == 1, ran.stderr
    assert "does not hold lane slice-a (feature/fan+slice-a): its head is not in" in ran.stderr
    assert f"git -C {worktree} merge --no-ff feature/fan+slice-a" in ran.stderr
    assert _snapshot(repo, path) == before
    _merged_by_hand(place, "slice-a")
    _merged_by_hand(place, "slice-b", ours=True)
    ran = flume("resolve", PLACE, "--by-hand")
    assert ran.returncode == 1, ran.stderr
    assert (
        "does not hold lane slice-b (feature/fan+slice-b): its changes to slice-b.txt are not "
        "in feature/fan's tree" in ran.stderr
    )
    # Merged already, a merge again would do nothing: the commands that take its changes back.
    take_back = (
        f"git -C {worktree} checkout feature/fan+slice-b -- slice-b.txt && git -C {worktree} "
        "commit --quiet -m 'Take back the changes of lane slice-b'"
    )
    said = " ".join(ran.stderr.split())
    assert f"take its changes back: {take_back}; then flume resolve {PLACE} --by-hand" in said
    run_git(worktree, "reset", "-q", "--hard", "HEAD~1")
    run_git(worktree, "merge", "--no-commit", "--no-ff", "feature/fan+slice-b")
    ran = flume("resolve", PLACE, "--by-hand")
    assert ran.returncode == 1, ran.stderr
    assert "a merge is under way in" in ran.stderr
    assert f"git -C {worktree} merge --abort" in ran.stderr
    assert not any(isinstance(each, ResolveAsked) for each in _lines(path))
    run_git(worktree, "merge", "--abort")
    _merged_by_hand(place, "slice-b", ours=True)
    for each in take_back.split(" && "):
        subprocess.run(shlex.split(each), check=True, capture_output=True)  # noqa: S603
    ran = flume("resolve", PLACE, "--by-hand")
    assert ran.returncode == 0, ran.stderr
    seen = _lines(path)[-1]
    assert isinstance(seen, ResolveAsked)
    assert (seen.under_way, dict(seen.missing)) == (False, {})
    assert woken == ["wake"]


def test_a_lane_dropped_is_launched_again_or_let_go_through_the_cli(
    host: Path, woken: list[str]
) -> None:
    """WF-JOIN-ALL: retry --step LANE launches it afresh (a place of its own); --without lets go."""
    del woken
    repo = repository(host / "repo")
    path = _fanned(repo)
    _lane_ends(path, "slice-a", finished=False)
    _lane_ends(path, "slice-b")
    ran = flume("retry", PLACE, "--step", "slice-a")
    assert ran.returncode == 0, ran.stderr
    place = _place(path)
    assert isinstance(place.stage.phase, Fanned)
    assert place.lanes["slice-a"].place == f"{PLACE}+slice-a.2"
    other = repository(host / "other")
    path = _fanned(other)
    _lane_ends(path, "slice-a", finished=False)
    _lane_ends(path, "slice-b")
    ran = flume("resolve", PLACE, "--without", "slice-a", "--repository", str(other))
    assert ran.returncode == 0, ran.stderr
    assert "goes on without lane slice-a (your decision)" in ran.stdout
    place = _place(path)
    assert isinstance(place.stage.phase, Merging)
    assert list(place.merging) == ["slice-b"]
    assert "a person's decision" in flume("events", PLACE, "--repository", str(other)).stdout
