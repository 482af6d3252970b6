"""SIGKILL trials of the supervisor through whole runs of a kind (L1), shared by tests and benches.

One trial: a fresh host and repository; a run of a kind launched with flume's test agent (half
the trials with an agent that loses its first input); the supervisor killed with SIGKILL once the
journal holds a random number of lines (over the run's whole length), then started again. The
run must complete after the restart, and every promise of L1 hold: no prompt sent more than
twice, none delivered twice, never two agents for one attempt nor two live at once, the worktree
made once. Sends are counted twice over: as the rules decided them, and as the agents received
them (every input the test agent's terminal submitted, lost ones too). Live agents are counted
twice over too: replaying the journal (no agent started while another is live), and sampling
the tmux server's live panes through the trial.

Four kinds are carried: ``FIX`` (code commits, submit lands through the embedded lander, tidy
removes the place), ``WORKFLOW`` (examples/kinds/reviewed.toml: a plan behind an artifact gate, a
review loop whose review says revise on pass 1 and done on pass 2, and a sign-off the trial
approves with ``flume approve`` when it pauses for it), ``LANES`` (examples/kinds/slices.toml:
a plan, two commit-gated lanes side by side, merged in order, then the same review loop) and
``FINALIZE`` (one commit-gated step, then the kind's finalize: the run's branch pushed to a bare
``origin`` on local disk, and a pull request command that is a real program of the trial, which
records each run and takes a moment, so that kills land while it runs: WF-FINALIZE-ONCE).

A run with lanes is three places, each with a journal of its own: the run and a lane a slice.
Every promise is a place's, so each is counted place by place: the sends of each place's prompts,
the agents live at once in each (the journal's replay, and the live panes of its tmux window:
two lanes' agents live side by side, never two in one lane), the worktree each made. The kill
point counts the lines of every journal of the run, its lanes' with its own, so that a kill
falls as often while the lanes work (their journals grow, the run's waits) as before or after.
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from flume.core.actions import Event, LaunchLane, OpenPR, Report, SendPrompt
from flume.core.ids import BranchName
from flume.core.observations import (
    AgentStarted,
    ApproveAsked,
    Launched,
    Observation,
    WorktreeMade,
)
from flume.core.place import Finalizing, Life, PauseCause, Paused, Place
from flume.core.settings import Settings
from flume.core.step import replay, step
from flume.shell import process
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.supervisor import client
from flume.shell.tools import git
from tests.integration.agents_kit import (
    agent_repository,
    decided,
    launch_test_agent,
    observations,
    place_of,
    script,
    wait_for,
)
from tests.integration.places_kit import GIT_IDENTITY, flume_process

CONFIG = "[timing]\nquiet = 0.3\nconfirm = 2\nready = 20\n"
FIX_SCRIPT = """
[[turn]]
match = ":code:1]"
steps = [{write = {path = "fixed.txt", text = "fixed\\n"}}, {commit = "Mend it"}]

[[turn]]
match = ":submit:1]"
steps = [{run = ["flume", "submit"]}]
"""

#: The one-lane example workflow, run as shipped.
REVIEWED = Path(__file__).resolve().parents[2] / "examples" / "kinds" / "reviewed.toml"
#: Pass 1's review says revise and its fix commits; pass 2's review says done, so pass 2's fix
#: (which would commit fix-2.md) never runs.
WORKFLOW_SCRIPT = """
[[turn]]
match = ":plan:1]"
steps = [{write = {path = "PLAN.md", text = "a plan\\n"}}]

[[turn]]
match = ":review-loop@1/review:1]"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "revise"}'}}]

[[turn]]
match = ":review-loop@1/fix:1]"
steps = [{write = {path = "fix-1.md", text = "mended\\n"}}, {commit = "Mend the findings"}]

[[turn]]
match = ":review-loop@2/review:1]"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "done"}'}}]

[[turn]]
match = ":review-loop@2/fix:1]"
steps = [{write = {path = "fix-2.md", text = "never\\n"}}, {commit = "A fix after done"}]

[[turn]]
match = ":sign-off:1]"
steps = [{say = "Planned, reviewed twice, mended once."}]
"""
WORKFLOW_MARKERS = (
    "plan:1",
    "review-loop@1/review:1",
    "review-loop@1/fix:1",
    "review-loop@2/review:1",
    "sign-off:1",
)


#: The example with lanes, run as shipped: a plan, two slices in lanes of their own, a review loop.
SLICES = Path(__file__).resolve().parents[2] / "examples" / "kinds" / "slices.toml"
#: Each lane commits a file of its own (their merges never conflict); then the review loop as
#: WORKFLOW's: pass 1's review says revise and its fix commits, pass 2's says done.
LANES_SCRIPT = """
[[turn]]
match = ":plan:1]"
steps = [{write = {path = "PLAN.md", text = "a: a.md; b: b.md\\n"}}]

[[turn]]
match = ":slice-a:1]"
steps = [{write = {path = "a.md", text = "slice a\\n"}}, {commit = "Build slice a"}]

[[turn]]
match = ":slice-b:1]"
steps = [{write = {path = "b.md", text = "slice b\\n"}}, {commit = "Build slice b"}]

[[turn]]
match = ":review-loop@1/review:1]"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "revise"}'}}]

[[turn]]
match = ":review-loop@1/fix:1]"
steps = [{write = {path = "fix-1.md", text = "mended\\n"}}, {commit = "Mend the findings"}]

[[turn]]
match = ":review-loop@2/review:1]"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "done"}'}}]

[[turn]]
match = ":review-loop@2/fix:1]"
steps = [{write = {path = "fix-2.md", text = "never\\n"}}, {commit = "A fix after done"}]
"""
#: The run's place and its lanes', as slices.toml launched with ``--name k`` names them.
LANES_RUN = "slices--k"
LANE_PLACES = {"slice-a": "slices--k+slice-a", "slice-b": "slices--k+slice-b"}
#: Each place's prompts, by marker past the place's name.
LANES_MARKERS = {
    LANES_RUN: {
        "plan:1",
        "review-loop@1/review:1",
        "review-loop@1/fix:1",
        "review-loop@2/review:1",
    },
    LANE_PLACES["slice-a"]: {"slice-a:1"},
    LANE_PLACES["slice-b"]: {"slice-b:1"},
}


#: The pull request command of FINALIZE's kind, run by flume with no shell: it writes a line
#: (its arguments, when it started) to the record file it is given at its start, takes a moment
#: (so that a kill lands while it runs as often as a journal line's kill point allows), writes
#: when it ended to the record's ``.ended`` file, and prints the pull request's URL.
PR_PROGRAM = """\
import json, sys, time
record, args = sys.argv[1], sys.argv[2:]
with open(record, "a", encoding="utf-8") as out:
    out.write(json.dumps({"argv": args, "started": time.time()}) + "\\n")
time.sleep(0.4)
with open(record + ".ended", "a", encoding="utf-8") as out:
    out.write(f"{time.time()}\\n")
print("Creating pull request for ship/k into main")
print("https://example.test/acme/app/pull/7")
"""
PR_URL = "https://example.test/acme/app/pull/7"
#: The run's place and branch, as FINALIZE's kind launched with ``--name k`` names them.
FINALIZE_RUN = "ship--k"
FINALIZE_BRANCH = "ship/k"
#: One step: the test agent writes a file and its handoff, and commits.
FINALIZE_SCRIPT = """
[[turn]]
match = ":code:1]"
steps = [
    {write = {path = "GREETING.md", text = "hello\\n"}},
    {write = {path = "$board/code/handoff.md", text = "Said hello."}},
    {commit = "Say hello"},
]
"""


@attrs.frozen(kw_only=True)
class Kind:
    """What a trial launches, how far its run goes, and what it must show at the end."""

    name: str
    #: Launch the run in ``repo`` with the test agent on ``script_path``: the journal.
    launch: Callable[[Path, Path, Path], Path]
    script: str
    #: The journal lines of a whole run, about: the kill comes after 1 to this many.
    lines: int
    #: What the trial waits for after the restart, and its words.
    done: Callable[[Place], bool]
    waiting: str
    #: Called while waiting, with the repository and journal: a person's word the run needs.
    answer: Callable[[Path, Path], None] = lambda _repo, _path: None
    #: Every promise of the kind's end the run broke: (repo, journal) -> problems.
    ends: Callable[[Path, Path], list[str]] = lambda _repo, _path: []
    #: The places of the run besides its own, as ``<kind>--<name>+<lane>``: its lanes.
    lanes: tuple[str, ...] = ()
    #: The runs of a command the kind drives (its pull request command), from the repository:
    #: each run's start and end (None: not ended), wall-clock seconds. None: it drives none.
    commands: Callable[[Path], list[tuple[float, float | None]]] | None = None
    #: The files the run's final tree must hold, by path, with their text: each lane's and
    #: child's change, present in the run's head once it finished (WF-FINISHED-HOLDS-ITS-WORK).
    tree: dict[str, str] = attrs.field(factory=dict)
    #: The kind never lands: the base must not move, and every commit (the repository's
    #: post-commit hook logs where each was made) is made in a place's worktree, on its branch.
    base_fixed: bool = False
    #: The share of kills aimed at the PR command in flight (its start recorded, its end not).
    aim_at_command: float = 0.0


@attrs.frozen(kw_only=True)
class Trial:
    """What one trial saw."""

    kill_at: int
    lost_first: bool
    seconds: float
    problems: tuple[str, ...]
    #: Sends a kill left decided and untyped, typed after the restart (DELIVERY-RETYPE-UNTYPED).
    retyped: int = 0
    #: The most sends of one marker's prompt the agents received.
    most_sends: int = 0
    #: The most live agents at once in one place: in its journal's replay, and in the live
    #: panes of its tmux window sampled.
    most_agents: int = 0
    #: The most live agents at once in the trial's tmux server, every place's together.
    most_panes: int = 0
    #: The worktrees made for each place (WorktreeMade lines), by place.
    worktrees: tuple[int, ...] = ()
    finished: bool = False
    #: The runs of the kind's command (its ``commands``), and whether the kill fell while one ran.
    command_runs: int = 0
    killed_mid_command: bool = False
    #: Where the run stood at its journal's kill point (its first ``kill_at`` lines): finished,
    #: finalizing (pushed or not), or its phase's name.
    stood: str = ""
    #: The kill was aimed at the PR command in flight (not at a journal line).
    aimed: bool = False
    #: The supervisor was alive at the kill point and SIGKILLed (not: the run had already ended).
    killed: bool = False


def _fix_launch(folder: Path, repo: Path, script_path: Path) -> Path:
    del folder
    return launch_test_agent(repo, "k", script_path, brief="Mend it.")


def _fix_ends(repo: Path, path: Path) -> list[str]:
    del path
    on_main = git.run(repo, "log", "--format=%s", "main").out.splitlines()
    return [] if "Mend it" in on_main else [f"the fix's commit is not on main: {on_main}"]


def _workflow_launch(folder: Path, repo: Path, script_path: Path) -> Path:
    del folder
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(REVIEWED), "--name", "k",
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / "reviewed--k" / places.JOURNAL


def _approve_when_asked(repo: Path, path: Path) -> None:
    """A person's ``flume approve`` once the sign-off waits for it (and only once)."""
    phase = place_of(path).stage.phase
    asked = any(isinstance(seen, ApproveAsked) for seen in observations(path))
    if isinstance(phase, Paused) and phase.cause is PauseCause.APPROVAL and not asked:
        ran = flume_process("approve", "reviewed--k", "--repository", str(repo))
        assert ran.returncode == 0, ran.stderr


def _workflow_ends(repo: Path, path: Path) -> list[str]:
    """The loop left on done at pass 2, each verdict read its attempt's; pass 2's fix never ran."""
    problems: list[str] = []
    place = place_of(path)
    reports = [r for r in decided(path, Report) if isinstance(r, Report)]
    passed = _judged_gates(reports)
    expected = [
        "the gate of plan passed",
        "the gate of review-loop@1/review passed (verdict: revise)",
        "the gate of review-loop@2/review passed (verdict: done)",
    ]
    if [text for text in passed if "sign-off" not in text] != expected:
        problems.append(f"gates passed: {passed}")
    if any(r.event in {Event.LOOP_MAX, Event.GATE_FAILED} for r in reports):
        problems.append("a gate failed or the loop ran out of passes")
    asked = sum(isinstance(seen, ApproveAsked) for seen in observations(path))
    if asked != 1:
        problems.append(f"{asked} approvals journaled")
    prompts = [a for a in decided(path, SendPrompt) if isinstance(a, SendPrompt)]
    sent = {str(a.marker).split(":", 2)[2] for a in prompts}
    if sent != set(WORKFLOW_MARKERS):
        problems.append(f"prompts sent: {sorted(sent)}")
    problems.extend(_verdicts(Path(place.board)))
    log = git.run(repo, "log", "--format=%s", place.branch).out.splitlines()
    if "Mend the findings" not in log or "A fix after done" in log:
        problems.append(f"the branch's commits: {log}")
    problems.extend(_worktrees_left(repo))
    return problems


#: The gates the review loop's run passes, in order: the loop left on done at pass 2.
LOOP_GATES = [
    "the gate of plan passed",
    "the gate of review-loop@1/review passed (verdict: revise)",
    "the gate of review-loop@2/review passed (verdict: done)",
]


def _judged_gates(reports: list[Report]) -> list[str]:
    """The gates reported passed, less pass 1's fix, whose report depends on timing.

    A commit gate is reported passed only when judged at its turn's end, its commit seen a
    moment after (WF-DELIVERABLE-AT-TURN-END: a kill can delay the look); otherwise it passes
    as its commit is seen, unreported.
    """
    fix = "the gate of review-loop@1/fix passed"
    return [r.text for r in reports if r.event is Event.GATE_PASSED and r.text != fix]


def _verdicts(board: Path) -> list[str]:
    """Each verdict read its attempt's: pass 1's revise archived, pass 2's done the latest."""
    problems: list[str] = []
    history = board / "review" / "history"
    archived = sorted(history.iterdir()) if history.is_dir() else []
    verdicts = [json.loads(p.read_text(encoding="utf-8")).get("result") for p in archived]
    if verdicts != ["revise"]:
        problems.append(f"the review's history holds {verdicts}, not pass 1's revise alone")
    latest = board / "review" / "verdict.json"
    if not latest.is_file() or json.loads(latest.read_text(encoding="utf-8"))["result"] != "done":
        problems.append("the review's verdict is not pass 2's done")
    return problems


def _worktrees_left(repo: Path) -> list[str]:
    """The repository's worktrees at the end: its own and the run's, none else (lanes tidied)."""
    listed = git.run(repo, "worktree", "list", "--porcelain").out
    worktrees = [line for line in listed.splitlines() if line.startswith("worktree ")]
    if len(worktrees) != 2:
        return [f"git worktree list holds {len(worktrees)} worktrees, not main and one"]
    return []


def _lanes_launch(folder: Path, repo: Path, script_path: Path) -> Path:
    del folder
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(SLICES), "--name", "k",
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / LANES_RUN / places.JOURNAL


def _lanes_tidied(repo: Path) -> bool:
    """Every lane's place is tidied (its run ordered it once the lanes were merged)."""
    folder = places.journals_dir(repo)
    paths = [folder / lane / places.JOURNAL for lane in LANE_PLACES.values()]
    return all(path.is_file() and place_of(path).life is Life.TIDIED for path in paths)


def _lanes_ends(repo: Path, path: Path) -> list[str]:
    """Both lanes merged in order and tidied, each launched once; the loop left on done at pass 2.

    The run's rules launched each lane once and were told each finished once; each place sent
    its own prompts; the run's branch holds each lane's commit through its merge, a's before b's
    (its only merges), and pass 1's fix, never pass 2's.
    """
    problems: list[str] = []
    try:
        wait_for(lambda: _lanes_tidied(repo), 30, "the lanes to be tidied after the merge")
    except AssertionError as error:
        problems.append(str(error))
    place = place_of(path)
    reports = [r for r in decided(path, Report) if isinstance(r, Report)]
    passed = _judged_gates(reports)
    if passed != LOOP_GATES:
        problems.append(f"gates passed: {passed}")
    if any(r.event in {Event.LOOP_MAX, Event.GATE_FAILED} for r in reports):
        problems.append("a gate failed or the loop ran out of passes")
    ended = sorted(r.text.split(" at ")[0] for r in reports if r.event is Event.LANE_ENDED)
    if ended != [f"lane {lane} finished" for lane in LANE_PLACES]:
        problems.append(f"lanes ended, as the run was told: {ended}")
    launches = [a.lane for a in decided(path, LaunchLane) if isinstance(a, LaunchLane)]
    if sorted(launches) != sorted(LANE_PLACES):
        problems.append(f"lanes launched by the run's rules: {launches}")
    problems.extend(_verdicts(Path(place.board)))
    folder = places.journals_dir(repo)
    for name, markers in LANES_MARKERS.items():
        journaled = folder / name / places.JOURNAL
        prompts = decided(journaled, SendPrompt) if journaled.is_file() else []
        sent = {str(a.marker).split(":", 2)[2] for a in prompts if isinstance(a, SendPrompt)}
        if sent != markers:
            problems.append(f"{name}'s prompts sent: {sorted(sent)}")
    # Its only merge commits are the lanes', in order: no later commit made a merge by a merge
    # state a kill left behind.
    merges = git.run(repo, "log", "--merges", "--reverse", "--format=%s", place.branch)
    merged = merges.out.splitlines()
    if merged != [f"Merge lane {lane} (slices/k+{lane}) into slices/k" for lane in LANE_PLACES]:
        problems.append(f"the run's merge commits: {merged}")
    log = git.run(repo, "log", "--format=%s", place.branch).out.splitlines()
    wanted = {"Build slice a", "Build slice b", "Mend the findings"}
    if not wanted <= set(log) or "A fix after done" in log:
        problems.append(f"the branch's commits: {log}")
    problems.extend(_lanes_made_once(repo, place))
    problems.extend(_worktrees_left(repo))
    return problems


def _lanes_made_once(repo: Path, run: Place) -> list[str]:
    """Each lane launched once, cut from the run's entry, and tidied: its place and branch gone.

    Launched once: one ``Launched`` in its journal, naming its run; no journal of its name set
    aside; and the supervisor's log says it journaled the lane once at most (a kill can fall
    between the line and the log's).
    """
    problems: list[str] = []
    folder = places.journals_dir(repo)
    set_aside = folder / ".tidied"
    aside = sorted(p.name for p in set_aside.iterdir()) if set_aside.is_dir() else []
    if aside:
        problems.append(f"journals set aside: {aside}")
    log = client.log_path()
    said = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    for lane, name in LANE_PLACES.items():
        path = folder / name / places.JOURNAL
        seen = observations(path) if path.is_file() else []
        launched = [each for each in seen if isinstance(each, Launched)]
        if len(launched) != 1 or launched[0].launch.parent != LANES_RUN:
            problems.append(f"{name}: {len(launched)} launches journaled")
        elif launched[0].start != run.entry:
            problems.append(f"{name} was cut from {launched[0].start}, not {run.entry}")
        if said.count(f"lane {name} of {LANES_RUN} launched") > 1:
            problems.append(f"{name}: journaled more than once, as the supervisor's log says")
        if (repo / "places" / name).exists():
            problems.append(f"{name}'s worktree is left")
        if git.resolve(repo, BranchName(f"slices/k+{lane}")) is not None:
            problems.append(f"{name}'s branch is left")
    return problems


def _finalize_files(repo: Path) -> tuple[Path, Path, Path]:
    """FINALIZE's bare origin, PR program and record file, beside the trial's repository."""
    folder = repo.parent
    return folder / "origin.git", folder / "pr.py", folder / "pr-runs.jsonl"


def _finalize_launch(folder: Path, repo: Path, script_path: Path) -> Path:
    """A bare origin, the PR program and a one-step kind that finalizes through them; launched."""
    origin, program, record = _finalize_files(repo)
    assert git.run(folder, "init", "-q", "--bare", str(origin)).ok
    assert git.run(repo, "remote", "add", "origin", str(origin)).ok
    program.write_text(PR_PROGRAM, encoding="utf-8")
    argv = [
        sys.executable, str(program), str(record), "--base", "{base}", "--head", "{branch}",
        "--title", "{title}", "--body-file", "{body}",
    ]  # fmt: skip
    kind = folder / "ship.toml"
    kind.write_text(
        f"""\
[kind]
name = "ship"
body = ["code"]
finalize = {{ push = "origin", pr = {json.dumps(argv)} }}

[step.code]
prompt = "Build $brief; commit."
gate = "commit"
""",
        encoding="utf-8",
    )
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind), "--name", "k",
        "--brief", "Say hello\nin GREETING.md", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / FINALIZE_RUN / places.JOURNAL


def _pr_runs(repo: Path) -> list[tuple[float, float | None]]:
    """Each run of the PR program: when it started, and when it ended (None: not yet)."""
    _origin, _program, record = _finalize_files(repo)
    ended_file = record.with_name(record.name + ".ended")
    started = record.read_text(encoding="utf-8").splitlines() if record.is_file() else []
    ended = ended_file.read_text(encoding="utf-8").splitlines() if ended_file.is_file() else []
    runs: list[tuple[float, float | None]] = []
    for number, line in enumerate(started):
        end = float(ended[number]) if number < len(ended) else None
        runs.append((float(json.loads(line)["started"]), end))
    return runs


def _finalized(repo: Path, path: Path, run: str, branch: str) -> list[str]:
    """WF-FINALIZE-ONCE, WF-PUSH-ONLY-RUN-BRANCH: one push, one PR command run, its URL shown.

    Origin holds the run's branch alone, at the run's head (the base never pushed); the PR
    program ran once, given the run's base, branch and title; the rules asked for the PR once
    (never a second try: no finalize failed) and told of one push and one pull request opened;
    ``flume status`` shows the URL the program printed.
    """
    problems: list[str] = []
    origin, _program, record = _finalize_files(repo)
    place = place_of(path)
    heads = git.run(origin, "for-each-ref", "--format=%(refname) %(objectname)").out.splitlines()
    tip = git.resolve(repo, BranchName(branch))
    if heads != [f"refs/heads/{branch} {place.head}"] or tip != place.head:
        problems.append(f"origin holds {heads}; the run's head {place.head}, its branch {tip}")
    runs = record.read_text(encoding="utf-8").splitlines() if record.is_file() else []
    if len(runs) != 1:
        problems.append(f"the PR command ran {len(runs)} times")
    for line in runs:
        argv = json.loads(line)["argv"]
        if argv[:6] != ["--base", "main", "--head", branch, "--title", "Say hello"]:
            problems.append(f"the PR command was given {argv}")
    reports = [r for r in decided(path, Report) if isinstance(r, Report)]
    told = [r.event for r in reports if r.event in {Event.PUSHED, Event.PR_OPENED}]
    if told != [Event.PUSHED, Event.PR_OPENED]:
        problems.append(f"finalize's reports: {[event.value for event in told]}")
    tries = [a.attempt for a in decided(path, OpenPR) if isinstance(a, OpenPR)]
    if set(tries) != {1}:
        problems.append(f"PR command tries asked: {tries}")
    shown = flume_process("status", "--json", "--repository", str(repo))
    rows = json.loads(shown.stdout)["places"] if shown.returncode == 0 else []
    urls = [row.get("pr_url") for row in rows if row.get("place") == run]
    if urls != [PR_URL]:
        problems.append(f"flume status shows the PR's URL as {urls} ({shown.stderr.strip()})")
    return problems


def _finalize_ends(repo: Path, path: Path) -> list[str]:
    """:func:`_finalized` of FINALIZE's run."""
    return _finalized(repo, path, FINALIZE_RUN, FINALIZE_BRANCH)


FIX = Kind(
    name="fix",
    launch=_fix_launch,
    script=FIX_SCRIPT,
    lines=24,
    done=lambda place: place.life is Life.TIDIED,
    waiting="the fix to land and be tidied",
    ends=_fix_ends,
)
WORKFLOW = Kind(
    name="workflow",
    launch=_workflow_launch,
    script=WORKFLOW_SCRIPT,
    lines=78,
    done=lambda place: place.life is Life.FINISHED,
    waiting="the workflow to finish",
    answer=_approve_when_asked,
    ends=_workflow_ends,
    tree={"fix-1.md": "mended\n"},
    base_fixed=True,
)
LANES = Kind(
    name="lanes",
    launch=_lanes_launch,
    script=LANES_SCRIPT,
    lines=115,
    done=lambda place: place.life is Life.FINISHED,
    waiting="the run with lanes to finish",
    ends=_lanes_ends,
    lanes=tuple(LANE_PLACES.values()),
    tree={"a.md": "slice a\n", "b.md": "slice b\n", "fix-1.md": "mended\n"},
    base_fixed=True,
)


FINALIZE = Kind(
    name="finalize",
    launch=_finalize_launch,
    script=FINALIZE_SCRIPT,
    #: 23 lines a run, 27 when the agent loses its first input: the last two Pushed and
    #: PROpened, the PR command running between them.
    lines=27,
    done=lambda place: place.life is Life.FINISHED,
    waiting="the run to push, open its pull request and finish",
    ends=_finalize_ends,
    commands=_pr_runs,
    tree={"GREETING.md": "hello\n"},
    base_fixed=True,
)


#: The issue's example, run as shipped but for its PR command (the recording program above):
#: a plan, a lead that spawns three coders (one asks, the lead answers), a review, a push to a
#: bare origin and the PR command.
CREW = Path(__file__).resolve().parents[2] / "examples" / "kinds" / "crew.toml"
CREW_RUN = "crew--k"
CREW_BRANCH = "crew/k"
CREW_CHILDREN = {f"coder-{n}": f"crew--k+coder-{n}" for n in (1, 2, 3)}
CREW_SCRIPT = """
[[turn]]
match = ":plan:1]"
steps = [{write = {path = "PLAN.md", text = "a\\nb\\nc\\n"}}]

[[turn]]
match = ":lead:1]"
steps = [
    {run = ["flume", "spawn", "--goal", "slice a"]},
    {run = ["flume", "spawn", "--goal", "slice b"]},
    {run = ["flume", "spawn", "--goal", "slice c"]},
]

[[turn]]
match = "Build: slice a."
steps = [{write = {path = "a.md", text = "a\\n"}}, {commit = "Slice a"}]

[[turn]]
match = "Build: slice b."
steps = [{run = ["flume", "ask", "Hello or Hi?"]}]

[[turn]]
match = "The answer to your question q1"
steps = [{write = {path = "b.md", text = "Hello\\n"}}, {commit = "Slice b"}]

[[turn]]
match = "Build: slice c."
steps = [{write = {path = "c.md", text = "c\\n"}}, {commit = "Slice c"}]

[[turn]]
match = "asks q1: Hello or Hi?"
steps = [{run = ["flume", "answer", "crew--k+coder-2", "q1", "Hello"]}]

[[turn]]
match = "All children of build are terminal"
steps = [{write = {path = "$board/lead/verdict.json", text = '{"result": "done"}'}}]

[[turn]]
match = ":review-loop@1/review:1]"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "done"}'}}]
"""


def _crew_launch(folder: Path, repo: Path, script_path: Path) -> Path:
    """A bare origin, the PR program, and the crew example finalizing through them; launched."""
    origin, program, record = _finalize_files(repo)
    assert git.run(folder, "init", "-q", "--bare", str(origin)).ok
    assert git.run(repo, "remote", "add", "origin", str(origin)).ok
    program.write_text(PR_PROGRAM, encoding="utf-8")
    argv = [
        sys.executable, str(program), str(record), "--base", "{base}", "--head", "{branch}",
        "--title", "{title}", "--body-file", "{body}",
    ]  # fmt: skip
    text = CREW.read_text(encoding="utf-8")
    start = text.index("finalize = ")
    end = text.index("\n", start)
    kind = folder / "crew.toml"
    kind.write_text(
        text[:start] + f'finalize = {{ push = "origin", pr = {json.dumps(argv)} }}' + text[end:],
        encoding="utf-8",
    )
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind), "--name", "k",
        "--brief", "Say hello", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={script_path}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / CREW_RUN / places.JOURNAL


def _crew_ends(repo: Path, path: Path) -> list[str]:
    """Every child launched once and merged in order; one answer; one push and one PR run."""
    problems = _finalized(repo, path, CREW_RUN, CREW_BRANCH)
    place = place_of(path)
    launches = [a.lane for a in decided(path, LaunchLane) if isinstance(a, LaunchLane)]
    if sorted(set(launches)) != sorted(CREW_CHILDREN):
        problems.append(f"children launched by the run's rules: {launches}")
    merges = git.run(repo, "log", "--merges", "--reverse", "--format=%s", place.branch)
    wanted = [
        f"Merge lane {lane} ({CREW_BRANCH}+{lane}) into {CREW_BRANCH}" for lane in CREW_CHILDREN
    ]
    if merges.out.splitlines() != wanted:
        problems.append(f"the run's merge commits: {merges.out.splitlines()}")
    folder = places.journals_dir(repo)
    log = client.log_path()
    said = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    for name in CREW_CHILDREN.values():
        child = folder / name / places.JOURNAL
        seen = observations(child) if child.is_file() else []
        launched = [each for each in seen if isinstance(each, Launched)]
        if len(launched) != 1 or launched[0].launch.parent != CREW_RUN:
            problems.append(f"{name}: {len(launched)} launches journaled")
        if said.count(f"lane {name} of {CREW_RUN} launched") > 1:
            problems.append(f"{name}: journaled more than once, as the supervisor's log says")
    asker = folder / CREW_CHILDREN["coder-2"] / places.JOURNAL
    questions = place_of(asker).questions if asker.is_file() else ()
    if [q.answer for q in questions] != ["Hello"]:
        problems.append(f"coder-2's questions: {[(q.id, q.answer) for q in questions]}")
    return problems


CREW_KIND = Kind(
    name="crew",
    launch=_crew_launch,
    script=CREW_SCRIPT,
    #: Every journal's lines together once the run finished: 189 and 192 in two runs whose agent
    #: lost no input, 209 and 216 in two that lost the first; kills drawn over the first 180
    #: fall before the run's finish (its push, PR command and finish are its last lines): the
    #: PR command in flight is the aimed share's.
    lines=180,
    done=lambda place: place.life is Life.FINISHED,
    waiting="the crew run to push, open its pull request and finish",
    ends=_crew_ends,
    lanes=tuple(CREW_CHILDREN.values()),
    commands=_pr_runs,
    tree={"a.md": "a\n", "b.md": "Hello\n", "c.md": "c\n"},
    base_fixed=True,
    aim_at_command=0.25,
)


class _PaneCount:
    """The most live panes the trial's tmux server held at once, sampled in a thread.

    Counted in all, and window by window: an agent's window is named after its place (its
    ``tidy_name``), so the most in one window is the most agents live at once in one place.
    """

    def __init__(self, socket: Path) -> None:
        self._tmux = Tmux(socket)
        self._stop = threading.Event()
        self.most = 0
        self.most_in_one = 0
        self.window = ""
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            panes = (self._tmux.panes() or {}).values()
            live = [pane.window_name for pane in panes if not pane.dead]
            self.most = max(self.most, len(live))
            for window, count in collections.Counter(live).items():
                if count > self.most_in_one:
                    self.most_in_one, self.window = count, window

    def stop(self) -> tuple[int, int]:
        """Stop sampling: the most live panes in all, and in one window."""
        self._stop.set()
        self._thread.join()
        return self.most, self.most_in_one


def _daemon_pid() -> int | None:
    lock = places.state_dir() / "supervisor.lock"
    text = lock.read_text().strip() if lock.exists() else ""
    return int(text) if text.isdigit() else None


def _journals(path: Path, kind: Kind) -> list[Path]:
    """The journals of the run: its own, then its lanes' (those not launched yet too)."""
    return [path, *(path.parent.parent / lane / places.JOURNAL for lane in kind.lanes)]


def _lines(paths: list[Path]) -> int:
    """The lines the journals hold, together (a lane not launched yet holds none)."""
    return sum(len(observations(each)) for each in paths if each.is_file())


#: The repository's post-commit hook: where each commit was made (the top of the worktree git
#: resolves, its branch, the commit), a line each, to the log its first argument names. Flume's
#: git runs the main configuration's hooks, so flume's own commits (a lane's merge) are logged
#: with the agents'.
COMMIT_HOOK = """#!/bin/sh
printf '%s\\t%s\\t%s\\n' "$(git rev-parse --show-toplevel)" \\
    "$(git symbolic-ref -q --short HEAD)" "$(git rev-parse HEAD)" >> {log}
"""


def _hook_commits(repo: Path, log: Path) -> None:
    """Have every commit made in ``repo`` (in any worktree) logged to ``log``."""
    hook = Path(git.run(repo, "rev-parse", "--git-common-dir").out.strip())
    hook = (hook if hook.is_absolute() else repo / hook) / "hooks" / "post-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(COMMIT_HOOK.format(log=json.dumps(str(log))), encoding="utf-8")
    hook.chmod(0o755)


def _outside(repo: Path, log: Path, base: str, kind: Kind) -> list[str]:
    """The commits made outside a place's worktree, or off its branch; the base moved.

    A kind that never lands leaves the base where it was; every commit is made at the top of a
    place's worktree (``places/<place>``), on that place's branch (``<kind>/<name>[+<lane>]``).
    """
    if not kind.base_fixed:
        return []
    problems: list[str] = []
    now = git.run(repo, "rev-parse", "main").out.strip()
    if now != base:
        problems.append(f"the base moved from {base[:10]} to {now[:10]} with nothing landed")
    made = log.read_text(encoding="utf-8").splitlines() if log.is_file() else []
    if not made:
        problems.append("the post-commit hook logged no commit")
    worktrees = (repo / "places").resolve()
    for line in made:
        top, branch, sha = [*line.split("\t"), "", ""][:3]
        where = Path(top)
        if where.parent != worktrees or branch != where.name.replace("--", "/", 1):
            problems.append(f"commit {sha[:10]} made in {top} on {branch or 'no branch'}")
    return problems


def _tree(repo: Path, path: Path, kind: Kind) -> list[str]:
    """Each file the kind's run must hold, missing from (or other in) its final head's tree."""
    if not kind.tree:
        return []
    head = place_of(path).head
    problems = []
    for name, text in kind.tree.items():
        shown = git.run(repo, "show", f"{head}:{name}")
        if not shown.ok or shown.out != text:
            said = repr(shown.out) if shown.ok else "missing"
            problems.append(f"the run's head {str(head)[:10]} holds {name} {said}, not {text!r}")
    return problems


def _command_in_flight(repo: Path, kind: Kind) -> bool:
    """The kind's command has started a run that has not ended."""
    return kind.commands is not None and any(end is None for _, end in kind.commands(repo))


def run(folder: Path, rng: random.Random, kind: Kind = FIX) -> Trial:  # noqa: PLR0915 (one trial, told in order)
    """One trial in ``folder`` (a fresh host); the caller stops the supervisor afterwards.

    The kill falls once the journals hold a random number of lines, or, for a share of a kind's
    trials (``aim_at_command``), while its PR command runs: a random moment of its run.
    """
    started = time.monotonic()
    os.environ["XDG_STATE_HOME"] = str(folder / "state")
    os.environ["FLUME_TMUX_SOCKET"] = str(folder / "tmux.sock")
    os.environ.update(GIT_IDENTITY)
    lost_first = rng.random() < 0.5
    repo = agent_repository(folder, CONFIG)
    commits = folder / "commits.log"
    _hook_commits(repo, commits)
    base = git.run(repo, "rev-parse", "main").out.strip()
    inputs = folder / "inputs.jsonl"
    head = f"inputs = {json.dumps(str(inputs))}\n" + ("lose = 1\n" if lost_first else "")
    panes = _PaneCount(folder / "tmux.sock")
    path = kind.launch(folder, repo, script(folder, head + kind.script))
    paths = _journals(path, kind)
    aimed = rng.random() < kind.aim_at_command
    kill_at = rng.randint(1, kind.lines)
    killed: float | None = None
    stood_lines = 0
    problems: list[str] = []

    def reached() -> bool:
        kind.answer(repo, path)
        if kind.done(place_of(path)):
            return True
        if aimed:
            return _command_in_flight(repo, kind)
        return _lines(paths) >= kill_at

    try:
        wait_for(reached, 120 if aimed else 60, "the PR command" if aimed else f"{kill_at} lines")
        # A point between lines, maybe mid-action; within the PR command's 0.4 s when aimed.
        time.sleep(rng.uniform(0, 0.35 if aimed else 0.2))
        stood_lines = len(observations(path)) if path.is_file() else 0
        pid = _daemon_pid()
        if pid is not None and process.alive(pid):
            killed = time.time()
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not process.alive(pid), 10, "the supervisor to die")
        if client.ensure(wait=30) is None:
            problems.append("no supervisor answered after the restart")

        def done() -> bool:
            kind.answer(repo, path)
            return kind.done(place_of(path))

        wait_for(done, 120, kind.waiting)
    except AssertionError as error:
        problems.append(str(error))
        problems.extend(_where(each) for each in paths if each.is_file())
    try:
        finished = kind.done(place_of(path))
        # The kind's end may wait on what follows its run's (the lanes' tidy): sampled still.
        problems.extend(kind.ends(repo, path))
        if finished:
            problems.extend(_tree(repo, path, kind))
        problems.extend(_outside(repo, commits, base, kind))
    finally:
        most_panes, most_in_one = panes.stop()
    if most_in_one > 1:
        problems.append(f"{most_in_one} agents' panes live at once in {panes.window}")
    most_sends, sending = _sends(paths, inputs)
    problems.extend(sending)
    most_agents, worktrees, retyped, each_place = _places(paths)
    problems.extend(each_place)
    runs = kind.commands(repo) if kind.commands is not None else []
    mid_command = killed is not None and any(
        start <= killed and (end is None or killed <= end) for start, end in runs
    )
    return Trial(
        kill_at=kill_at,
        lost_first=lost_first,
        seconds=time.monotonic() - started,
        problems=tuple(problems),
        retyped=retyped,
        most_sends=most_sends,
        most_agents=max(most_agents, most_in_one),
        most_panes=most_panes,
        worktrees=worktrees,
        finished=finished,
        command_runs=len(runs),
        killed_mid_command=mid_command,
        stood=_stood(path, stood_lines),
        aimed=aimed,
        killed=killed is not None,
    )


def _stood(path: Path, lines: int) -> str:
    """Where the run stood once its journal held ``lines`` lines (its own, not its lanes')."""
    seen = observations(path)[:lines] if path.is_file() else []
    if not seen:
        return "unlaunched"
    place = replay(Settings(), seen)
    phase = place.stage.phase
    if place.life is not Life.ACTIVE:
        return place.life.value
    if isinstance(phase, Finalizing):
        return "finalizing, pushed" if place.pushed is not None else "finalizing"
    return type(phase).__name__.lower()


def _places(paths: list[Path]) -> tuple[int, tuple[int, ...], int, list[str]]:
    """Each place's promises, from its journal, and every one broken.

    Returned with them: the most agents live at once in one place, the worktrees each place
    made, and the sends a kill left decided and untyped, typed after the restart.
    """
    problems: list[str] = []
    most_agents = 0
    worktrees: list[int] = []
    retyped = 0
    for each in paths:
        if not each.is_file():
            problems.append(f"{each.parent.name} has no journal: never launched")
            continue
        seen = observations(each)
        most, agents = _agents(seen)
        most_agents = max(most_agents, most)
        problems.extend(f"{each.parent.name}: {problem}" for problem in agents)
        made = sum(isinstance(line, WorktreeMade) for line in seen)
        worktrees.append(made)
        if made != 1:
            problems.append(f"{each.parent.name}'s worktree was made {made} times")
        retyped += sum(
            isinstance(r, Report) and r.event is Event.PROMPT_RETYPED for r in decided(each, Report)
        )
    return most_agents, tuple(worktrees), retyped, problems


def _where(path: Path) -> str:
    """Where a place that did not complete stands: its life, stage, phase and sends."""
    place = place_of(path)
    stage = place.stage
    return (
        f"{path.parent.name} stands {place.life.value}, stage {stage.key}#{stage.attempt}, "
        f"{stage.sends} sends, {stage.phase!r}"
    )


def _sends(paths: list[Path], inputs: Path) -> tuple[int, list[str]]:
    """The most sends of one prompt the agents received; every send promise broken.

    A marker names its place (``flume:<place>:<step>:<attempt>``), so each is one place's.
    """
    problems: list[str] = []
    sends: dict[str, set[int]] = {}
    for path in paths:
        if not path.is_file():
            continue
        for action in decided(path, SendPrompt):
            assert isinstance(action, SendPrompt)
            sends.setdefault(action.marker, set()).add(action.send)
    problems.extend(
        f"{marker}: {len(numbers)} sends of the prompt decided"
        for marker, numbers in sends.items()
        if len(numbers) > 2
    )
    logged = inputs.read_text() if inputs.exists() else ""
    received = [json.loads(line) for line in logged.splitlines()]
    most = 0
    for marker in sends:
        count = sum(1 for text in received if f"[{marker}]" in text)
        most = max(most, count)
        if count > 2:
            problems.append(f"{marker}: the agents received the prompt {count} times")
    return most, problems


def _agents(seen: list[Observation]) -> tuple[int, list[str]]:
    """The most agents live at once in the journal's replay; every agent promise broken.

    R4: an agent starts only when no other is live in the place; one session an attempt; an
    attempt's prompt found delivered once.
    """
    problems: list[str] = []
    sessions: dict[tuple[str, int], set[str]] = {}
    delivered: dict[tuple[str, int], int] = {}
    place: Place | None = None
    most = 0
    for each in seen:
        before = place
        decision = step(Settings(), place, each)
        place = decision.place
        if isinstance(each, AgentStarted) and before is not None:
            key = (before.stage.key, each.attempt)
            sessions.setdefault(key, set()).add(each.session)
            live = 1 + (before.agent is not None and before.agent.session != each.session)
            most = max(most, live)
            if live > 1:
                problems.append(f"{key[0]}#{key[1]} started beside a live agent")
        for report in decision.actions:
            if isinstance(report, Report) and report.event is Event.PROMPT_DELIVERED:
                agent = before.agent if before is not None else None
                if agent is not None:
                    key = (agent.key or agent.stage, agent.attempt)
                    delivered[key] = delivered.get(key, 0) + 1
    problems.extend(
        f"{name}#{attempt}: {len(found)} agents"
        for (name, attempt), found in sessions.items()
        if len(found) > 1
    )
    problems.extend(
        f"{name}#{attempt}: its prompt found delivered {count} times"
        for (name, attempt), count in delivered.items()
        if count > 1
    )
    return most, problems


def cleanup(folder: Path) -> None:
    """Stop the trial's supervisor and tmux server."""
    client.stop(timeout=5.0)
    Tmux(folder / "tmux.sock").kill_server()
