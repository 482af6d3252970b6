"""Parallel blocks, the shell's part, in this process: lanes launched, ended, ordered, merged.

The supervisor runs tick by tick with the test's clock and echo agents (``places_kit``); the
test commits in each lane's worktree as its agent would. The performers' own cases (a merge
passed over, a conflict undone, an order given once, a launch refused) are met head on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import attrs
from pyrsistent import pvector

from flume.core.actions import LaneOrder, LaunchLane, MergeLanes, OrderLane
from flume.core.choices import AgentName
from flume.core.ids import BranchName, Instant, PlaceName, Sha, WorkName
from flume.core.launch import AgentSettings
from flume.core.observations import (
    ActionFailed,
    DropAsked,
    LaneEnded,
    LanesMerged,
    Launched,
    MergeConflicted,
    MergeRefused,
)
from flume.core.place import Fanned, LaneState, Life, PauseCause, Paused, Working
from flume.core.settings import Settings
from flume.shell.commands import tidying
from flume.shell.declared.kinds import read_kind_file
from flume.shell.perform import lanes, launcher
from flume.shell.perform.performer import Performer
from flume.shell.store import journal, places
from flume.shell.tools import git
from tests.integration.agents_kit import decided
from tests.integration.places_kit import Harness, commit, repository, run_git

KIND = """\
[kind]
name = "wf"
body = ["slices", "check"]

[parallel.slices]
branches = ["slice-a", "slice-b"]
join = "all"
merge = "merge"
cap = 2

[step.slice-a]
prompt = "Build slice a; commit."
gate = "commit"

[step.slice-b]
prompt = "Build slice b; commit."
gate = "commit"

[step.check]
prompt = "Check the slices; commit."
gate = "commit"
"""


def _launch(host: Path, repo: Path, name: str = "feat") -> Path:
    """Launch the kind, its agents the test agent's (never started: the echo agents stand in)."""
    kind_file = host / "kind.toml"
    kind_file.write_text(KIND, encoding="utf-8")
    read = read_kind_file(kind_file)
    request = launcher.Request(
        repository=repo,
        kind="wf",
        name=name,
        brief="Build it.",
        carried=read.kind,
        agent=AgentSettings(agent=AgentName.TEST),
    )
    return launcher.launch(request, Settings(), time.time).journal


def _lane(repo: Path, lane: str, name: str = "feat") -> Path:
    return places.journals_dir(repo) / f"wf--{name}+{lane}" / places.JOURNAL


def _working(harness: Harness, path: Path) -> Path:
    """The worktree of the place at ``path``, once its step's agent works."""
    place = harness.place(path)
    assert isinstance(place.stage.phase, Working), place.stage.phase
    return Path(place.path)


def _finish(harness: Harness, path: Path, file: str) -> None:
    """Commit in the place's worktree as its agent would; its turn ends, its step passes."""
    commit(_working(harness, path), file, f"{file}\n")
    harness.settle()
    harness.pass_time(Settings().quiet_seconds + 1)


def test_a_run_fans_out_its_lanes_joins_them_and_merges_them_in_order(
    host: Path, harness: Harness
) -> None:
    """Each lane journaled as a launch, followed at once, told ended, merged, then tidied."""
    repo = repository(host / "repo")
    path = _launch(host, repo)
    harness.settle()
    run = harness.place(path)
    assert isinstance(run.stage.phase, Fanned)
    for lane in ("slice-a", "slice-b"):
        first = journal.read(_lane(repo, lane)).observations[0]
        assert isinstance(first, Launched)
        assert first.launch.parent == "wf--feat"
        assert first.launch.base == "wf/feat"
        assert first.launch.host == run.launch.host
        assert first.board == run.board
    # Both lanes' agents work at once (cap 2), each in its own worktree.
    a, b = _working(harness, _lane(repo, "slice-a")), _working(harness, _lane(repo, "slice-b"))
    assert a != b
    _finish(harness, _lane(repo, "slice-b"), "b.md")
    run = harness.place(path)
    assert run.lanes["slice-b"].state is LaneState.FINISHED
    assert run.lanes["slice-a"].state is LaneState.RUNNING
    _finish(harness, _lane(repo, "slice-a"), "a.md")
    run = harness.place(path)
    assert run.stage.name == "check", run.stage
    subjects = run_git(repo, "log", "--first-parent", "--format=%s", "wf/feat").splitlines()
    assert subjects[:2] == [
        "Merge lane slice-b (wf/feat+slice-b) into wf/feat",
        "Merge lane slice-a (wf/feat+slice-a) into wf/feat",
    ]
    ended = [s for s in journal.read(path).observations if isinstance(s, LaneEnded)]
    assert [(s.lane, s.finished) for s in ended] == [("slice-b", True), ("slice-a", True)]
    for lane in ("slice-a", "slice-b"):
        assert harness.place(_lane(repo, lane)).life is Life.TIDIED
        assert f"wf/feat+{lane}" not in run_git(repo, "branch", "--list")
    assert Path(run.board, "task.md").is_file()


def test_a_restart_launches_and_orders_nothing_twice(host: Path, harness: Harness) -> None:
    """RESTART-PENDING for lanes: a launch and an order performed again change nothing.

    A supervisor started anew over the journals performs what is pending; so does performing
    every launch and order the run's journal decided once more, and a drop of a tidied lane.
    """
    repo = repository(host / "repo")
    path = _launch(host, repo)
    harness.settle()
    _finish(harness, _lane(repo, "slice-a"), "a.md")
    _finish(harness, _lane(repo, "slice-b"), "b.md")
    run = harness.place(path)
    lane_paths = (_lane(repo, "slice-a"), _lane(repo, "slice-b"))
    lines = {each: journal.read(each).observations for each in lane_paths}
    head = run_git(repo, "rev-parse", "wf/feat").strip()
    restarted = Harness.make()
    try:
        restarted.settle()
    finally:
        restarted.close()
    performer = Performer(clock=time.time)
    again = decided(path, LaunchLane) + decided(path, OrderLane)
    assert len(again) == 4  # two launches, two tidies
    drop = OrderLane(
        repository=str(repo), place=PlaceName("wf--feat+slice-a"), order=LaneOrder.DROP
    )
    for action in (*again, drop):
        assert performer.perform(run, action) == []
    assert run_git(repo, "rev-parse", "wf/feat").strip() == head
    assert {each: journal.read(each).observations for each in lane_paths} == lines
    named = sorted(p.name for p in places.journals_dir(repo).iterdir() if p.name.startswith("w"))
    assert named == ["wf--feat", "wf--feat+slice-a", "wf--feat+slice-b"]


def test_a_lane_is_dropped_once_and_tidied_only_when_finished(host: Path, harness: Harness) -> None:
    """An order is given as its command would be, only where the lane takes it, and only once.

    A working lane takes no tidy; dropped, it takes no second drop; a lane with no journal takes
    nothing. ``flume tidy`` keeps a finished lane its run has yet to merge, naming its run.
    """
    repo = repository(host / "repo")
    path = _launch(host, repo)
    harness.settle()
    a, b = _lane(repo, "slice-a"), _lane(repo, "slice-b")
    at = Instant(time.time())

    def order(lane: str, what: LaneOrder) -> OrderLane:
        return OrderLane(repository=str(repo), place=PlaceName(f"wf--feat+{lane}"), order=what)

    before = len(journal.read(a).observations)
    assert lanes.order(order("slice-a", LaneOrder.TIDY), at) == []
    assert len(journal.read(a).observations) == before
    assert lanes.order(order("slice-a", LaneOrder.DROP), at) == []
    assert lanes.order(order("slice-a", LaneOrder.DROP), at) == []
    assert lanes.order(order("slice-c", LaneOrder.DROP), at) == []
    given = journal.read(a).observations[before:]
    assert [type(seen) for seen in given] == [DropAsked]
    _finish(harness, b, "b.md")
    assert harness.place(b).life is Life.FINISHED
    found = [f for f in places.places_of(repo, Settings()) if f.journal == b]
    (kept,) = tidying.plans(found, force=False, settings=Settings())
    assert kept.state is tidying.TidyResult.KEPT
    assert "a lane of wf--feat, which merges it" in kept.kept[0].reason
    harness.settle()
    run = harness.place(path)
    # a was dropped: join all pauses the run, named; b's commit stays on its branch.
    assert run.lanes["slice-a"].state is LaneState.ENDED
    phase = run.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.LANE_DROPPED
    assert "wf/feat+slice-b" in run_git(repo, "branch", "--list")


def _lanes_repository(host: Path) -> Path:
    """A repository whose main worktree is on ``run``, with lanes ``a`` and ``b`` cut from it."""
    repo = repository(host / "repo", files={"shared.md": "one\n"})
    run_git(repo, "checkout", "-q", "-b", "run")
    for lane in ("a", "b"):
        run_git(repo, "branch", f"lane-{lane}")
    return repo


def _commit_on(repo: Path, branch: str, name: str, text: str) -> None:
    run_git(repo, "checkout", "-q", branch)
    commit(repo, name, text)
    run_git(repo, "checkout", "-q", "run")


def _merge(repo: Path) -> MergeLanes:
    return MergeLanes(
        path=str(repo),
        branch=BranchName("run"),
        lanes=pvector(["a", "b"]),
        branches=pvector([BranchName("lane-a"), BranchName("lane-b")]),
    )


def test_lanes_merge_in_order_and_a_merge_again_passes_over_them(host: Path) -> None:
    """Two merge commits, a's then b's; asked again, nothing is merged and the head is the same."""
    repo = _lanes_repository(host)
    _commit_on(repo, "lane-a", "a.md", "a\n")
    _commit_on(repo, "lane-b", "b.md", "b\n")
    (merged,) = lanes.merge(_merge(repo), repo, Instant(1))
    head = Sha(run_git(repo, "rev-parse", "HEAD").strip())
    assert merged == LanesMerged(at=Instant(1), head=head)
    subjects = run_git(repo, "log", "--first-parent", "--format=%s", "run").splitlines()
    assert subjects[:2] == ["Merge lane b (lane-b) into run", "Merge lane a (lane-a) into run"]
    assert lanes.merge(_merge(repo), repo, Instant(2)) == [LanesMerged(at=Instant(2), head=head)]


def test_a_conflict_is_undone_named_and_passed_over_once_merged_by_hand(host: Path) -> None:
    """B conflicts with a: aborted, the files named, a's merge kept; merged by hand, passed over."""
    repo = _lanes_repository(host)
    _commit_on(repo, "lane-a", "shared.md", "from a\n")
    _commit_on(repo, "lane-b", "shared.md", "from b\n")
    (conflicted,) = lanes.merge(_merge(repo), repo, Instant(1))
    assert conflicted == MergeConflicted(at=Instant(1), lane="b", files=pvector(["shared.md"]))
    assert run_git(repo, "status", "--porcelain") == ""
    assert (repo / "shared.md").read_text(encoding="utf-8") == "from a\n"
    assert not git.merging(repo)
    assert not git.run(repo, "merge", "lane-b").ok
    (repo / "shared.md").write_text("from a\nfrom b\n", encoding="utf-8")
    run_git(repo, "commit", "-q", "-am", "merged by hand")
    head = Sha(run_git(repo, "rev-parse", "HEAD").strip())
    assert lanes.merge(_merge(repo), repo, Instant(2)) == [LanesMerged(at=Instant(2), head=head)]


def test_a_merge_a_kill_cut_short_after_its_commit_is_passed_over_and_the_next_merged(
    host: Path,
) -> None:
    """A supervisor killed mid-merge: its git merge, orphaned, commits, then dies writing to it.

    Git moves the branch before it prints what it merged; the pipe's reader is gone, so the
    print kills it (SIGPIPE) before it clears its merge state (MERGE_HEAD, MERGE_MSG). Asked
    again after the restart, the merge passes over a's, held by the head, clears what a's left,
    and merges b: no merge refused over a's state, read as a conflict naming no file.
    """
    repo = _lanes_repository(host)
    _commit_on(repo, "lane-a", "a.md", "a\n")
    _commit_on(repo, "lane-b", "b.md", "b\n")
    # Git as the supervisor ran it, its output a pipe whose reader (the supervisor) is dead.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        argv = ["git", "merge", "--no-ff", "--no-edit", "-m", "Merge lane a (lane-a) into run"]
        cut = subprocess.run(  # noqa: S603 (git, with our own arguments)
            [*argv, "lane-a"], cwd=repo, stdout=writer, stderr=writer, check=False
        )
    finally:
        os.close(writer)
    assert cut.returncode == -signal.SIGPIPE
    assert git.merging(repo)
    assert run_git(repo, "log", "-1", "--format=%s", "run").strip() == argv[-1]
    (merged,) = lanes.merge(_merge(repo), repo, Instant(1))
    head = Sha(run_git(repo, "rev-parse", "HEAD").strip())
    assert merged == LanesMerged(at=Instant(1), head=head)
    subjects = run_git(repo, "log", "--first-parent", "--format=%s", "run").splitlines()
    assert subjects[:2] == ["Merge lane b (lane-b) into run", "Merge lane a (lane-a) into run"]
    assert not git.merging(repo)
    assert run_git(repo, "status", "--porcelain") == ""


def test_a_merge_git_refuses_is_named_as_such_with_its_words_and_changes_nothing(
    host: Path,
) -> None:
    """An untracked file b would overwrite: refused (no conflict); nothing left, nothing changed.

    git will not start the merge: no merge is left under way.
    """
    repo = _lanes_repository(host)
    _commit_on(repo, "lane-b", "b.md", "b\n")
    (repo / "b.md").write_text("mine\n", encoding="utf-8")
    head = Sha(run_git(repo, "rev-parse", "HEAD").strip())
    (failed,) = lanes.merge(_merge(repo), repo, Instant(1))
    assert isinstance(failed, MergeRefused)
    assert failed.lane == "b"
    assert failed.reason.startswith("git merge of lane b (lane-b) refused: ")
    assert "b.md" in failed.reason
    assert (failed.lock, failed.missing, failed.under_way) == ("", False, False)
    assert run_git(repo, "rev-parse", "HEAD").strip() == head
    assert not git.merging(repo)
    assert (repo / "b.md").read_text(encoding="utf-8") == "mine\n"


def test_a_stale_lock_is_named_as_a_lock_never_a_conflict_and_leaves_no_merge(
    host: Path,
) -> None:
    """A stale index.lock: the merge is refused naming the lock, its state cleared, nothing written.

    git leaves MERGE_HEAD with nothing unmerged under the lock, and cannot abort it. Once the
    lock is gone, the merge asked again merges every lane.
    """
    repo = _lanes_repository(host)
    _commit_on(repo, "lane-a", "a.md", "a\n")
    _commit_on(repo, "lane-b", "b.md", "b\n")
    lock = repo / ".git" / "index.lock"
    lock.write_text("", encoding="utf-8")
    head = Sha(run_git(repo, "rev-parse", "HEAD").strip())
    (refused,) = lanes.merge(_merge(repo), repo, Instant(1))
    assert isinstance(refused, MergeRefused), refused
    assert refused.lane == "a"
    assert refused.lock == str(lock)
    assert not refused.under_way
    assert not git.merging(repo)
    assert run_git(repo, "rev-parse", "HEAD").strip() == head
    assert not (repo / "a.md").exists()
    lock.unlink()
    (merged,) = lanes.merge(_merge(repo), repo, Instant(2))
    assert isinstance(merged, LanesMerged)
    assert (repo / "a.md").exists()
    assert (repo / "b.md").exists()


def test_a_lane_merged_without_its_changes_is_not_passed_over(host: Path) -> None:
    """A lane in the run's history without its changes is named, never passed over as merged.

    WF-FINISHED-HOLDS-ITS-WORK: a merge of lane a concluded keeping none of it (git's "ours",
    or a commit under a lock); asked to merge, flume names its changes missing, with the
    commands that restore them.
    """
    repo = _lanes_repository(host)
    start = Sha(run_git(repo, "rev-parse", "HEAD").strip())
    _commit_on(repo, "lane-a", "a.md", "a\n")
    run_git(repo, "merge", "-q", "--no-ff", "--no-edit", "-s", "ours", "lane-a")
    action = attrs.evolve(_merge(repo), starts=pvector([start, start]))
    (refused,) = lanes.merge(action, repo, Instant(1))
    assert isinstance(refused, MergeRefused), refused
    assert refused.lane == "a"
    assert "its changes to a.md are not in its tree" in refused.reason
    assert f"git -C {repo} checkout lane-a -- a.md" in refused.reason


def test_a_repository_naming_nobody_merges_as_flume(host: Path) -> None:
    """No user.email configured: git is run as flume (an identity in the environment still wins).

    A repository that names its user merges as it; git is never left to ask who it is.
    """
    repo = _lanes_repository(host)
    _commit_on(repo, "lane-a", "a.md", "a\n")
    _commit_on(repo, "lane-b", "b.md", "b\n")
    as_flume = git.merge(repo, BranchName("lane-a"), "Merge a", pass_fds=())
    assert as_flume.ok, as_flume.err
    # After the hooks flume's git runs (the main configuration's only: git.held_hooks).
    assert as_flume.argv[1:3] == ("-c", f"core.hooksPath={repo / '.git' / 'hooks'}")
    assert as_flume.argv[3:7] == ("-c", "user.name=flume", "-c", "user.email=flume@localhost")
    run_git(repo, "config", "user.email", "someone@example.com")
    as_them = git.merge(repo, BranchName("lane-b"), "Merge b")
    assert as_them.ok, as_them.err
    assert as_them.argv[3:5] == ("merge", "--no-ff")


def test_a_lane_the_rules_would_refuse_is_reported_ended_never_journaled(
    host: Path, harness: Harness
) -> None:
    """A lane's launch the core refuses: the failure and the lane ended; no journal is made."""
    repo = repository(host / "repo")
    path = _launch(host, repo)
    harness.settle()
    action = decided(path, LaunchLane)[0]
    assert isinstance(action, LaunchLane)
    bad = attrs.evolve(action, launch=attrs.evolve(action.launch, name=WorkName("feat+other")))
    failed, ended = lanes.launch(bad, Instant(1))
    assert isinstance(failed, ActionFailed)
    assert failed.output.startswith(f"lane {action.lane} cannot be launched: ")
    assert ended == LaneEnded(at=Instant(1), lane=action.lane, finished=False)
    assert not (places.journals_dir(repo) / "wf--feat+other").exists()
