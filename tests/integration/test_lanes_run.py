"""Parallel blocks run end to end: lanes, places of their own, joined and merged; git and tmux.

A kind plans, fans out into two slices, each a lane (``wf--<name>+<lane>`` on ``wf/<name>+<lane>``,
cut from the run's head, its base the run's branch), then checks. flume's test agent runs every
step. Each test follows the run's and its lanes' journals through the real supervisor, and reads
what the rules decided over them, as ``flume events`` would.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flume.core.actions import Event, LaunchLane, Report
from flume.core.observations import (
    AgentExited,
    AgentStarted,
    LaneEnded,
    Launched,
    MergeConflicted,
    ResolveAsked,
    Told,
)
from flume.core.place import Life, PauseCause, Paused
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.tools import git
from tests.integration.agents_kit import (
    agent_repository,
    decided,
    observations,
    place_of,
    script,
    wait_for,
)
from tests.integration.places_kit import flume_process, run_git

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes


def _kind(*, join: str = "all", merge: str = "merge", cap: int = 2) -> str:
    """Plan, two slices side by side (each a commit), then a check that commits too."""
    return f"""\
[kind]
name = "wf"
body = ["plan", "slices", "check"]

[step.plan]
prompt = "Plan $brief; commit PLAN.md."
gate = "commit"

[parallel.slices]
branches = ["slice-a", "slice-b"]
join = "{join}"
merge = "{merge}"
cap = {cap}

[step.slice-a]
prompt = "Build slice a of PLAN.md; commit."
gate = "commit"

[step.slice-b]
prompt = "Build slice b of PLAN.md; commit."
gate = "commit"

[step.check]
prompt = "Check both slices are in; commit CHECKED.md."
gate = "commit"
"""


def _turn(match: str, path: str, text: str, message: str) -> str:
    steps = f'{{write = {{path = "{path}", text = "{text}"}}}}, {{commit = "{message}"}}'
    return f'[[turn]]\nmatch = "{match}"\nsteps = [{steps}]\n'


PLAN = _turn(":plan:1", "PLAN.md", "a and b\\n", "Plan the slices")
CHECK = _turn(":check:1", "CHECKED.md", "both\\n", "Check the slices")
#: Each slice writes a file of its own.
SLICES = _turn(":slice-a:1", "a.md", "slice a\\n", "Build slice a") + _turn(
    ":slice-b:1", "b.md", "slice b\\n", "Build slice b"
)
#: Both slices write the same line of one file: their merges conflict.
CLASHING = _turn(":slice-a:1", "shared.md", "from a\\n", "Slice a's line") + _turn(
    ":slice-b:1", "shared.md", "from b\\n", "Slice b's line"
)


def _launch(tmp_path: Path, repo: Path, kind_text: str, script_text: str, name: str) -> Path:
    """Launch the kind ``kind_text`` carries, run by the test agent; the run's journal."""
    kind_file = tmp_path / "kind.toml"
    kind_file.write_text(kind_text, encoding="utf-8")
    agent_script = script(tmp_path, script_text)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", name,
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return _journal(repo, f"wf--{name}")


def _journal(repo: Path, place: str) -> Path:
    return places.journals_dir(repo) / place / places.JOURNAL


def _events(path: Path) -> list[tuple[Event, str]]:
    """The events the rules reported over the journal, with their words."""
    return [(r.event, r.text) for r in decided(path, Report) if isinstance(r, Report)]


def _subjects(repo: Path, branch: str, *, first_parent: bool = False) -> list[str]:
    """The branch's commits, oldest first, as their subjects (``first_parent``: its own line)."""
    line = ("--first-parent",) if first_parent else ()
    return run_git(repo, "log", *line, "--reverse", "--format=%s", branch).splitlines()


def _branches(repo: Path) -> list[str]:
    return run_git(repo, "branch", "--list", "--format=%(refname:short)").splitlines()


def _status(repo: Path, place: str) -> dict[str, Any]:
    """The place's status, as ``flume status --json`` prints it."""
    shown = flume_process("status", "--json", "--repository", str(repo))
    assert shown.returncode == 0, shown.stderr
    (found,) = [p for p in json.loads(shown.stdout)["places"] if p["place"] == place]
    assert isinstance(found, dict)
    return found


def _tidied(path: Path) -> Callable[[], bool]:
    """Whether the lane of journal ``path`` is tidied, asked each time."""
    return lambda: place_of(path).life is Life.TIDIED


def test_two_lanes_run_side_by_side_and_merge_into_the_run_in_declared_order(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-MERGE-ORDER and WF-TIDY-LANES through the shell: each slice in a lane, merged, tidied.

    Both lanes are cut from the plan's commit, their commits reach the run's branch through
    merge commits in declared order (a, then b), the check runs after the merge, and each lane's
    place and branch are gone once the run goes on; the run's board is the lanes' and stays.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, _kind(), PLAN + SLICES + CHECK, "feat")
    wait_for(lambda: place_of(path).life is Life.FINISHED, 50, "the run to finish")
    run = place_of(path)
    assert list(run.completed) == ["plan", "slices", "check"]
    subjects = _subjects(repo, "wf/feat", first_parent=True)
    assert subjects == [
        "start",
        "Plan the slices",
        "Merge lane slice-a (wf/feat+slice-a) into wf/feat",
        "Merge lane slice-b (wf/feat+slice-b) into wf/feat",
        "Check the slices",
    ], subjects
    # Each merge's second parent is its lane's commit.
    for back, built in ((1, "Build slice b"), (2, "Build slice a")):
        second = run_git(repo, "log", "-1", "--format=%s", f"wf/feat~{back}^2").strip()
        assert second == built
    # Each lane was launched once, cut from the plan's commit, its base the run's branch.
    launches = [a for a in decided(path, LaunchLane) if isinstance(a, LaunchLane)]
    plan = run_git(repo, "rev-parse", "wf/feat~3").strip()
    assert {(a.lane, a.start, a.launch.base) for a in launches} == {
        ("slice-a", plan, "wf/feat"),
        ("slice-b", plan, "wf/feat"),
    }
    for lane in ("slice-a", "slice-b"):
        lane_path = _journal(repo, f"wf--feat+{lane}")
        first = observations(lane_path)[0]
        assert isinstance(first, Launched)
        assert first.launch.parent == "wf--feat"
        assert first.board == run.board
        wait_for(_tidied(lane_path), 30, f"{lane} to be tidied")
        assert not (repo / "places" / f"wf--feat+{lane}").exists()
        assert f"wf/feat+{lane}" not in _branches(repo)
    assert (Path(run.board) / "task.md").is_file()
    ended = [seen for seen in observations(path) if isinstance(seen, LaneEnded)]
    assert sorted((seen.lane, seen.finished) for seen in ended) == [
        ("slice-a", True),
        ("slice-b", True),
    ]
    # status --json: the parallel done, each lane named with its place; the lanes' rows too.
    tree = {view["path"]: view for view in _status(repo, "wf--feat")["tree"]}
    assert tree["slices"]["state"] == "done"
    assert tree["slices/slice-a"]["lane"] == "wf--feat+slice-a"
    assert tree["slices/slice-b"]["state"] == "finished"
    table = flume_process("status", "--repository", str(repo))
    assert table.returncode == 0, table.stderr
    assert "wf--feat+slice-a" in table.stdout
    # The run's journal, run again by flume simulate, tells what flume events told of it.
    told = flume_process("events", "wf--feat", "--repository", str(repo)).stdout.splitlines()
    traced = [
        line.strip().removeprefix("-> Report ")
        for line in flume_process("simulate", "--journal", str(path)).stdout.splitlines()
        if line.strip().startswith("-> Report ")
    ]
    assert len(told) == len(traced) > 0
    for line, report in zip(told, traced, strict=True):
        assert line.endswith(report.splitlines()[0]), (line, report)
    assert any(" merged: lanes merged into wf/feat: slice-a, slice-b" in line for line in told)


def test_a_cap_of_one_runs_one_lane_agent_at_a_time(tmp_path: Path, panes: Tmux) -> None:
    """WF-CAP through the shell: with cap 1, slice b's lane is launched only once a's agent is gone.

    Each lane's agent lives from its start to its exit, as its journal holds them: the two
    spans never overlap, and b's lane is journaled after a's agent exited.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, _kind(cap=1), PLAN + SLICES + CHECK, "capped")
    wait_for(lambda: place_of(path).life is Life.FINISHED, 50, "the run to finish")
    a = observations(_journal(repo, "wf--capped+slice-a"))
    b = observations(_journal(repo, "wf--capped+slice-b"))
    a_started = min(seen.at for seen in a if isinstance(seen, AgentStarted))
    a_exited = max(seen.at for seen in a if isinstance(seen, AgentExited))
    b_launched = b[0].at
    b_started = min(seen.at for seen in b if isinstance(seen, AgentStarted))
    assert a_started < a_exited <= b_launched <= b_started, (a_exited, b_launched, b_started)
    launches = [a.lane for a in decided(path, LaunchLane) if isinstance(a, LaunchLane)]
    assert launches == ["slice-a", "slice-b"]
    assert _subjects(repo, "wf/capped")[-1] == "Check the slices"


def test_a_merge_conflict_pauses_naming_the_file_and_a_person_resolves_it(
    tmp_path: Path, panes: Tmux
) -> None:
    """A conflicting merge is undone and pauses the run, naming the file; nothing is lost.

    A person merges by hand in the run's worktree and says so (``flume resolve --by-hand``): the
    merge goes on past what they merged, and the run finishes.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, _kind(), PLAN + CLASHING + CHECK, "clash")

    def paused() -> bool:
        phase = place_of(path).stage.phase
        return isinstance(phase, Paused) and phase.cause is PauseCause.MERGE_CONFLICT

    wait_for(paused, 50, "the merge to conflict")
    run = place_of(path)
    phase = run.stage.phase
    assert isinstance(phase, Paused)
    assert "shared.md" in phase.words
    (conflicted,) = [seen for seen in observations(path) if isinstance(seen, MergeConflicted)]
    assert (conflicted.lane, list(conflicted.files)) == ("slice-b", ["shared.md"])
    worktree = Path(run.path)
    # Undone: a clean worktree holding slice a's merge; slice b's commit kept on its branch.
    assert run_git(worktree, "status", "--porcelain") == ""
    assert (worktree / "shared.md").read_text(encoding="utf-8") == "from a\n"
    assert "Slice b's line" in _subjects(repo, "wf/clash+slice-b")
    status = _status(repo, "wf--clash")
    assert (status["phase"], status["paused"]) == ("paused", "merge-conflict")
    # A person merges by hand, then says so.
    ran = git.run(worktree, "merge", "--no-edit", "wf/clash+slice-b")
    assert not ran.ok
    (worktree / "shared.md").write_text("from a\nfrom b\n", encoding="utf-8")
    run_git(worktree, "add", "shared.md")
    run_git(worktree, "commit", "-q", "--no-edit")
    resolved = flume_process("resolve", "wf--clash", "--by-hand", "--repository", str(repo))
    assert resolved.returncode == 0, resolved.stderr
    (asked,) = [seen for seen in observations(path) if isinstance(seen, ResolveAsked)]
    assert not asked.agent
    wait_for(lambda: place_of(path).life is Life.FINISHED, 40, "the resolved run to finish")
    assert (worktree / "shared.md").read_text(encoding="utf-8") == "from a\nfrom b\n"
    assert _subjects(repo, "wf/clash")[-1] == "Check the slices"
    for lane in ("slice-a", "slice-b"):
        lane_path = _journal(repo, f"wf--clash+{lane}")
        wait_for(_tidied(lane_path), 30, f"{lane} to be tidied")
        assert f"wf/clash+{lane}" not in _branches(repo)


#: The merge step's agent (``flume resolve --agent``): slice b's merge conflicts, so it writes
#: both lines and commits the merge (git's own message, as ``git commit --no-edit`` would).
MERGER = """
[[turn]]
match = "Merge these branches"
steps = [
  {run = ["git", "merge", "--no-ff", "--no-edit", "wf/byagent+slice-b"]},
  {write = {path = "shared.md", text = "from a\\nfrom b\\n"}},
  {run = ["git", "add", "shared.md"]},
  {run = ["git", "commit", "-q", "--no-edit"]},
]
"""


def test_a_merge_conflict_resolved_by_an_agent_finishes_the_run(
    tmp_path: Path, panes: Tmux
) -> None:
    """``flume resolve --agent``: the merge step's agent merges in the run's worktree, commits.

    Its agent is the launch's program, watched as any agent is (the parallel's stage names no
    step of the kind's); its commit asks the merge again, which passes over what it merged, and
    the run finishes, both lanes tidied.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, _kind(), PLAN + CLASHING + MERGER + CHECK, "byagent")

    def paused() -> bool:
        phase = place_of(path).stage.phase
        return isinstance(phase, Paused) and phase.cause is PauseCause.MERGE_CONFLICT

    wait_for(paused, 50, "the merge to conflict")
    resolved = flume_process("resolve", "wf--byagent", "--agent", "--repository", str(repo))
    assert resolved.returncode == 0, resolved.stderr
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the resolved run to finish")
    worktree = Path(place_of(path).path)
    assert (worktree / "shared.md").read_text(encoding="utf-8") == "from a\nfrom b\n"
    subjects = _subjects(repo, "wf/byagent", first_parent=True)
    merged = "Merge branch 'wf/byagent+slice-b' into wf/byagent"
    assert subjects[-2:] == [merged, "Check the slices"]
    for lane in ("slice-a", "slice-b"):
        wait_for(_tidied(_journal(repo, f"wf--byagent+{lane}")), 30, f"{lane} to be tidied")
        assert f"wf/byagent+{lane}" not in _branches(repo)


def test_a_first_join_picks_the_first_lane_and_drops_the_other_keeping_its_commits(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-JOIN-FIRST with pick: the first lane to finish is merged; the other is dropped.

    Slice b commits, then its turn waits on a file the test never writes before the end: a's
    lane finishes first, is merged alone, and b is dropped (its agent ended); its tidy removes
    its place and keeps its branch, whose commit the run's branch lacks.
    """
    del panes
    repo = agent_repository(tmp_path)
    release = tmp_path / "release"
    waits = f'while [ ! -f "{release}" ]; do sleep 0.05; done'
    held_b = (
        '[[turn]]\nmatch = ":slice-b:1"\nsteps = [{write = {path = "b.md", text = "slice b\\n"}}, '
        f'{{commit = "Build slice b"}}, {{run = ["sh", "-c", {json.dumps(waits)}]}}]\n'
    )
    fast_a = _turn(":slice-a:1", "a.md", "slice a\\n", "Build slice a")
    kind = _kind(join="first", merge="pick")
    try:
        path = _launch(tmp_path, repo, kind, PLAN + fast_a + held_b + CHECK, "pick")
        wait_for(lambda: place_of(path).life is Life.FINISHED, 50, "the run to finish")
        subjects = _subjects(repo, "wf/pick")
        assert "Merge lane slice-a (wf/pick+slice-a) into wf/pick" in subjects
        assert not any("slice b" in subject for subject in subjects), subjects
        b_path = _journal(repo, "wf--pick+slice-b")
        wait_for(lambda: place_of(b_path).life is Life.TIDIED, 30, "slice b's lane to be tidied")
    finally:
        release.write_text("", encoding="utf-8")
    events = _events(b_path)
    assert (Event.DROPPED, "wf--pick+slice-b dropped") in events
    kept = [text for event, text in events if event is Event.KEPT]
    assert any("wf/pick+slice-b holds 1 commit wf/pick lacks" in text for text in kept), kept
    assert "wf/pick+slice-b" in _branches(repo)
    assert not (repo / "places" / "wf--pick+slice-b").exists()
    a_path = _journal(repo, "wf--pick+slice-a")
    wait_for(lambda: place_of(a_path).life is Life.TIDIED, 30, "slice a's lane to be tidied")
    assert "wf/pick+slice-a" not in _branches(repo)
    ended = [seen for seen in observations(path) if isinstance(seen, LaneEnded)]
    assert [(seen.lane, seen.finished) for seen in ended] == [("slice-a", True)]


LOOPED = """\
[kind]
name = "wf"
body = ["rounds"]

[loop.rounds]
body = ["slices", "review"]
until = "review"
max = 2

[parallel.slices]
branches = ["slice-a"]

[step.slice-a]
prompt = "Build slice a; commit."
gate = "commit"

[step.review]
prompt = "Review pass $pass. Write $verdict: done, or revise."
gate = "verdict"
"""

#: Each pass's slice adds a line of its own; pass 1's review says revise, pass 2's done.
LOOPED_SCRIPT = """
[[turn]]
match = ":slice-a:1"
steps = [{run = ["sh", "-c", "echo $$ >> a.md"]}, {commit = "Build slice a"}]

[[turn]]
match = ":rounds@1/review:1"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "revise"}'}}]

[[turn]]
match = ":rounds@2/review:1"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "done"}'}}]
"""


def test_a_loop_around_a_parallel_runs_its_lanes_again_on_each_pass(
    tmp_path: Path, panes: Tmux
) -> None:
    """Pass 2 enters the block again: its lane, ``+slice-a@2``, is launched anew.

    Pass 2's lane is cut from the run's head after pass 1's review, runs, and is told ended from
    its own journal, never pass 1's; each pass's lane is merged and tidied.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, LOOPED, LOOPED_SCRIPT, "loop")
    wait_for(lambda: place_of(path).life is Life.FINISHED, 50, "the run to finish")
    merges = [s for s in _subjects(repo, "wf/loop", first_parent=True) if s.startswith("Merge")]
    assert merges == [
        "Merge lane slice-a (wf/loop+slice-a) into wf/loop",
        "Merge lane slice-a (wf/loop+slice-a@2) into wf/loop",
    ]
    ended = [seen for seen in observations(path) if isinstance(seen, LaneEnded)]
    assert [(seen.lane, seen.finished) for seen in ended] == [("slice-a", True)] * 2
    assert ended[0].head != ended[1].head
    launches = [a for a in decided(path, LaunchLane) if isinstance(a, LaunchLane)]
    assert [a.launch.name for a in launches] == ["loop+slice-a", "loop+slice-a@2"]
    assert len({a.start for a in launches}) == 2
    for place, launch in zip(("wf--loop+slice-a", "wf--loop+slice-a@2"), launches, strict=True):
        lane = _journal(repo, place)
        wait_for(_tidied(lane), 30, f"{place} to be tidied")
        assert place_of(lane).start == launch.start


def test_a_lane_branch_a_pass_kept_does_not_stand_in_the_next_pass_s_way(
    tmp_path: Path, panes: Tmux
) -> None:
    """``merge = "none"`` in a loop: pass 1's lane branch is kept, and pass 2's lane still runs.

    Pass 2's lane is a place of its own (``+slice-a@2``): it commits anew (its head is not pass
    1's), and both lanes' branches, each holding a commit the run lacks, are kept by tidy.
    """
    del panes
    repo = agent_repository(tmp_path)
    kind = LOOPED.replace('branches = ["slice-a"]', 'branches = ["slice-a"]\nmerge = "none"')
    path = _launch(tmp_path, repo, kind, LOOPED_SCRIPT, "loop")
    wait_for(lambda: place_of(path).life is Life.FINISHED, 50, "the run to finish")
    ended = [seen for seen in observations(path) if isinstance(seen, LaneEnded)]
    assert [(seen.lane, seen.finished) for seen in ended] == [("slice-a", True)] * 2
    assert ended[0].head != ended[1].head, "pass 2 was told of pass 1's lane"
    for place in ("wf--loop+slice-a", "wf--loop+slice-a@2"):
        wait_for(_tidied(_journal(repo, place)), 30, f"{place} to be tidied")
    branches = _branches(repo)
    assert "wf/loop+slice-a" in branches
    assert "wf/loop+slice-a@2" in branches
    assert _subjects(repo, "wf/loop+slice-a@2")[-1] == "Build slice a"


#: The parallel first: the run has no commit of its own, so its drop deletes its branch.
FANNED_FIRST = """\
[kind]
name = "wf"
body = ["slices"]

[parallel.slices]
branches = ["slice-a", "slice-b"]

[step.slice-a]
prompt = "Build slice a; commit."
gate = "commit"

[step.slice-b]
prompt = "Build slice b; commit."
gate = "commit"
"""


def test_a_run_dropped_mid_lanes_leaves_no_lane_behind_and_keeps_their_commits(
    tmp_path: Path, panes: Tmux
) -> None:
    """A run dropped while its lanes work drops them, and each is tidied, its base gone.

    The run's branch, their base, went first (it held nothing of its own): a lane's commits
    past its entry are kept, named, and a lane with none goes whole. (Its tidy could not
    compare it with a base gone, and left its worktree for ever.)
    """
    del panes
    repo = agent_repository(tmp_path)
    release = tmp_path / "release"
    waits = f'while [ ! -f "{release}" ]; do sleep 0.05; done'
    held_a = (
        '[[turn]]\nmatch = ":slice-a:1"\nsteps = [{write = {path = "a.md", text = "slice a\\n"}}, '
        f'{{commit = "Build slice a"}}, {{run = ["sh", "-c", {json.dumps(waits)}]}}]\n'
    )
    held_b = (
        f'[[turn]]\nmatch = ":slice-b:1"\nsteps = [{{run = ["sh", "-c", {json.dumps(waits)}]}}]\n'
    )
    try:
        path = _launch(tmp_path, repo, FANNED_FIRST, held_a + held_b, "gone")
        a_path, b_path = _journal(repo, "wf--gone+slice-a"), _journal(repo, "wf--gone+slice-b")
        wait_for(
            lambda: (
                "wf/gone+slice-a" in _branches(repo)
                and git.resolve(repo, "wf/gone+slice-a") != git.resolve(repo, "wf/gone")
            ),
            30,
            "slice a's commit",
        )
        wait_for(lambda: b_path.exists() and place_of(b_path).agent is not None, 30, "b's agent")
        dropped = flume_process("drop", "wf--gone", "--repository", str(repo))
        assert dropped.returncode == 0, dropped.stderr
        for each in (path, a_path, b_path):
            wait_for(lambda each=each: place_of(each).life is Life.TIDIED, 60, f"{each} tidied")
    finally:
        release.write_text("", encoding="utf-8")
    assert "wf/gone" not in _branches(repo)
    assert "wf/gone+slice-a" in _branches(repo)
    assert "wf/gone+slice-b" not in _branches(repo)
    assert not any((repo / "places").glob("wf--gone*"))
    kept = [text for event, text in _events(a_path) if event is Event.KEPT]
    assert any("wf/gone+slice-a holds 1 commit" in text for text in kept), kept


def test_a_tell_naming_a_lane_s_step_reaches_that_lane_and_one_for_no_step_there_is_refused(
    tmp_path: Path, panes: Tmux
) -> None:
    """STEP-NAMED through the CLI: the run stands at its parallel with no agent of its own.

    ``flume tell wf--feat --step slice-a`` goes to the lane's place (journaled there, not in the
    run's journal); a step the run is not at is refused, exit 1, and a malformed key exit 2,
    nothing journaled for either.
    """
    del panes
    repo = agent_repository(tmp_path)
    slow_a = (
        '[[turn]]\nmatch = ":slice-a:1"\nsteps = [{work = 6}, '
        '{write = {path = "a.md", text = "slice a\\n"}}, {commit = "Build slice a"}]\n'
    )
    slice_b = _turn(":slice-b:1", "b.md", "slice b\\n", "Build slice b")
    path = _launch(tmp_path, repo, _kind(), PLAN + slow_a + slice_b + CHECK, "feat")
    lane_path = _journal(repo, "wf--feat+slice-a")
    wait_for(
        lambda: (
            lane_path.exists()
            and any(isinstance(seen, AgentStarted) for seen in observations(lane_path))
        ),
        50,
        "slice a's agent to start",
    )
    before = len(observations(path))
    told = flume_process(
        "tell", "wf--feat", "--step", "slices/slice-a", "Mind the README too.",
        "--repository", str(repo),
    )  # fmt: skip
    assert told.returncode == 0, told.stderr
    assert told.stdout.startswith("wf--feat+slice-a: tell 1 is ")
    assert [s.text for s in observations(lane_path) if isinstance(s, Told)] == [
        "Mind the README too."
    ]
    elsewhere = flume_process(
        "tell", "wf--feat", "--step", "check", "Too soon.", "--repository", str(repo)
    )
    assert elsewhere.returncode == 1
    assert "wf--feat is at step slices, not check" in elsewhere.stderr
    malformed = flume_process(
        "tell", "wf--feat", "--step", "Slice A;rm", "Hello.", "--repository", str(repo)
    )
    assert malformed.returncode == 2
    assert "'Slice A;rm' is not a step's key" in malformed.stderr
    assert not [s for s in observations(path)[before:] if isinstance(s, Told)]
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the run to finish")
