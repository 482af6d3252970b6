"""Workflows of steps, sequences and loops, run end to end: launch, real git, real tmux.

flume's test agent runs every step; its script writes a step's verdict in the place's board
(``$board/...``, the folder flume adds to the agent's with ``--add-dir``) and commits. Each test
follows the place's journal through the real supervisor to its end, and reads what the rules
decided over it (the events, the prompts' markers, the tells), as ``flume events`` would.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import attrs
import pytest

from flume.core.actions import Event, Report, SendPrompt, SendTell
from flume.core.ids import SessionId
from flume.core.observations import ApproveAsked, Launched
from flume.core.place import AwaitingWord, Judging, Life, PauseCause, Paused
from flume.core.settings import Settings
from flume.core.step import step
from flume.shell.agents import claude, codex, scripted
from flume.shell.panes.tmux import Tmux
from flume.shell.perform import launcher
from flume.shell.store import places
from flume.testing import scenario
from tests.integration.agents_kit import (
    TIMING,
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

REVIEW_LOOP = """\
[kind]
name = "wf"
body = ["review-loop"]

[loop.review-loop]
body = ["review", "fix"]
until = "review"
max = 3

[step.review]
prompt = "Review $brief against $base, pass $pass of $max. Write $verdict: done, or revise."
gate = "verdict"

[step.fix]
prompt = "Mend the findings in $board/review/verdict.json; commit."
gate = "commit"
"""

#: Pass 1's review says revise, its fix commits; pass 2's review says done. A fix in pass 2 would
#: commit fix-2.md: it must never run.
REVIEW_SCRIPT = """
[[turn]]
match = ":review-loop@1/review:1"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "revise"}'}}]

[[turn]]
match = ":review-loop@1/fix:1"
steps = [{write = {path = "fix-1.md", text = "mended\\n"}}, {commit = "Mend the review's findings"}]

[[turn]]
match = ":review-loop@2/review:1"
steps = [{write = {path = "$board/review/verdict.json", text = '{"result": "done"}'}}]

[[turn]]
match = ":review-loop@2/fix:1"
steps = [{write = {path = "fix-2.md", text = "never\\n"}}, {commit = "A fix after done"}]
"""


def _launch(tmp_path: Path, repo: Path, kind_text: str, script_text: str, name: str) -> Path:
    """Launch the kind ``kind_text`` carries, run by the test agent; the place's journal."""
    kind_file = tmp_path / "kind.toml"
    kind_file.write_text(kind_text, encoding="utf-8")
    agent_script = script(tmp_path, script_text)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", name,
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"wf--{name}" / places.JOURNAL


def _events(path: Path) -> list[tuple[Event, str]]:
    """The events the rules reported over the journal, with their words."""
    return [(r.event, r.text) for r in decided(path, Report) if isinstance(r, Report)]


def _markers(path: Path) -> list[str]:
    """The markers of every prompt sent, in order (a send typed twice is one send)."""
    found: list[str] = []
    for action in decided(path, SendPrompt):
        if isinstance(action, SendPrompt) and action.marker not in found:
            found.append(action.marker)
    return found


def test_a_review_loop_leaves_on_done_and_the_fix_after_it_never_runs(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-LOOP-EXITS-ON-DONE through the shell: revise on pass 1, done on pass 2, then finished.

    The review's verdict is read from the board the launch made (task.md in it), pass 1's is
    archived before pass 2's review starts, and the run finishes without pass 2's fix.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, REVIEW_LOOP, REVIEW_SCRIPT, "loop")
    launched = observations(path)[0]
    assert isinstance(launched, Launched)
    board = Path(launched.board)
    assert board == repo / "places" / ".boards" / "wf--loop"
    assert "places" not in run_git(repo, "status", "--porcelain")
    assert "the greeting" in (board / "task.md").read_text(encoding="utf-8")
    wait_for(lambda: place_of(path).life is Life.FINISHED, 90, "the workflow to finish")
    place = place_of(path)
    assert _markers(path) == [
        "flume:wf--loop:review-loop@1/review:1",
        "flume:wf--loop:review-loop@1/fix:1",
        "flume:wf--loop:review-loop@2/review:1",
    ]
    passed = [text for event, text in _events(path) if event is Event.GATE_PASSED]
    assert passed == [
        "the gate of review-loop@1/review passed (verdict: revise)",
        "the gate of review-loop@2/review passed (verdict: done)",
    ]
    started = [text for event, text in _events(path) if event is Event.STAGE_STARTED]
    assert started == [
        "stage review-loop@1/review starts (attempt 1)",
        "stage review-loop@1/fix starts (attempt 1)",
        "stage review-loop@2/review starts (attempt 1)",
    ]
    assert _events(path)[-1] == (Event.FINISHED, "wf--loop finished")
    assert not any(event is Event.GATE_FAILED for event, _ in _events(path))
    # flume events says which pass each event is of: its key, beside the stage's name.
    shown = flume_process("events", "wf--loop", "--repository", str(repo), "--json")
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    delivered = [(row["stage"], row["key"]) for row in rows if row["event"] == "prompt-delivered"]
    assert delivered == [
        ("review", "review-loop@1/review"),
        ("fix", "review-loop@1/fix"),
        ("review", "review-loop@2/review"),
    ]
    printed = flume_process("events", "wf--loop", "--repository", str(repo)).stdout
    assert " review-loop@2/review#1 prompt-delivered" in printed
    # Pass 1's revise was moved aside before pass 2's review could be judged on it.
    (archived,) = (board / "review" / "history").iterdir()
    assert json.loads(archived.read_text(encoding="utf-8"))["result"] == "revise"
    assert json.loads((board / "review" / "verdict.json").read_text())["result"] == "done"
    log = run_git(repo, "log", "--format=%s", f"{place.branch}")
    assert "Mend the review's findings" in log
    assert "A fix after done" not in log
    assert not (Path(place.path) / "fix-2.md").exists()
    # R10: tidy removes the clean worktree, and the board with it (flume's own notes); the
    # branch holds the fix, so it stays.
    tidied = flume_process("tidy", "--repository", str(repo))
    assert tidied.returncode == 0, tidied.stderr
    wait_for(lambda: not Path(place.path).exists(), 30, "tidy to remove the place")
    assert not board.exists()
    # The last board gone, no empty .boards is left in places/, where it would read as a place.
    assert not board.parent.exists()
    assert "wf/loop" in run_git(repo, "branch", "--list", "wf/loop")


VERDICT_ONLY = """\
[kind]
name = "wf"
body = ["judge"]

[step.judge]
prompt = "Judge $brief. Write $verdict."
gate = "verdict"
"""

#: The agent ends every turn saying only "ok": no verdict is ever written.
SILENT_SCRIPT = """
[[turn]]
steps = [{say = "ok"}]
"""


def test_a_verdict_step_without_a_verdict_is_told_once_then_pauses(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-GATE-REPROMPT-ONCE through the shell: told why once, then paused gate-blocked.

    The tell names the verdict file the gate looked for; status --json shows the pause, its
    words and the command that resolves it.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, VERDICT_ONLY, SILENT_SCRIPT, "silent")

    def paused() -> bool:
        phase = place_of(path).stage.phase
        return isinstance(phase, Paused)

    wait_for(paused, 60, "the step to pause")
    place = place_of(path)
    phase = place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.GATE_BLOCKED
    board = repo / "places" / ".boards" / "wf--silent"
    reason = f"no verdict was written at {board}/judge/verdict.json"
    assert reason in phase.words
    failed = [text for event, text in _events(path) if event is Event.GATE_FAILED]
    assert len(failed) == 1, failed
    assert reason in failed[0]
    tells = [a.text for a in decided(path, SendTell) if isinstance(a, SendTell)]
    assert len({*tells}) == 1, tells
    assert reason in tells[0]
    assert any(event is Event.PAUSED for event, _ in _events(path))
    shown = flume_process("status", "--json", "--repository", str(repo))
    assert shown.returncode == 0, shown.stderr
    (status,) = [p for p in json.loads(shown.stdout)["places"] if p["place"] == "wf--silent"]
    assert status["phase"] == "paused"
    assert status["paused"] == "gate-blocked"
    assert reason in status["paused_words"]
    assert status["resolve"].startswith("flume ")
    assert "wf--silent" in status["resolve"]
    # Paused, it stays so: nothing more is sent while it waits on a person.
    sent = len(tells), len(_markers(path))
    assert place_of(path).life is Life.ACTIVE
    assert (len(tells), len(_markers(path))) == sent


PLAN_THEN_SIGN = """\
[kind]
name = "wf"
body = ["plan", "sign"]

[step.plan]
prompt = "Plan $brief: write PLAN.md."
gate = "artifact:PLAN.md"

[step.sign]
prompt = "Say the plan in PLAN.md is ready for a person's approval."
gate = "approval"
"""

#: The plan's first turn writes the wrong file; told the artifact is missing, it writes it.
PLAN_SCRIPT = """
[[turn]]
match = ":plan:1"
steps = [{write = {path = "PLAN.txt", text = "a plan\\n"}}]

[[turn]]
match = "PLAN.md does not exist"
steps = [{write = {path = "PLAN.md", text = "a plan\\n"}}]

[[turn]]
match = ":sign:1"
steps = [{say = "The plan is ready."}]
"""


def test_an_artifact_gate_waits_for_its_file_and_an_approval_for_a_persons_word(
    tmp_path: Path, panes: Tmux
) -> None:
    """WF-ARTIFACT-BLOCKS and the approval gate through the shell.

    PLAN.txt does not pass artifact:PLAN.md: the agent is told, writes PLAN.md, and the gate
    passes. The sign step pauses for approval once its turn ends, and nothing goes on until a
    person approves (``flume approve``); then the run finishes.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = _launch(tmp_path, repo, PLAN_THEN_SIGN, PLAN_SCRIPT, "plan")

    def awaits_approval() -> bool:
        phase = place_of(path).stage.phase
        return isinstance(phase, Paused) and phase.cause is PauseCause.APPROVAL

    wait_for(awaits_approval, 60, "the sign step to wait for approval")
    failed = [text for event, text in _events(path) if event is Event.GATE_FAILED]
    assert len(failed) == 1, failed
    assert "PLAN.md does not exist in the worktree" in failed[0]
    assert "the gate of plan passed" in [t for e, t in _events(path) if e is Event.GATE_PASSED]
    shown = flume_process("status", "--json", "--repository", str(repo))
    (status,) = [p for p in json.loads(shown.stdout)["places"] if p["place"] == "wf--plan"]
    assert (status["phase"], status["paused"]) == ("paused", "approval")
    assert status["resolve"] == "flume approve wf--plan"
    assert place_of(path).life is Life.ACTIVE
    approved = flume_process("approve", "wf--plan", "--repository", str(repo))
    assert approved.returncode == 0, approved.stderr
    assert sum(isinstance(seen, ApproveAsked) for seen in observations(path)) == 1
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the approved run to finish")
    assert list(place_of(path).completed) == ["plan", "sign"]
    # R10: the plan was never committed, so tidy keeps the place, and its board with it.
    kept = flume_process("tidy", "--repository", str(repo))
    assert kept.returncode == 0, kept.stderr
    assert "untracked" in kept.stdout
    assert Path(place_of(path).path).exists()
    board = repo / "places" / ".boards" / "wf--plan"
    assert (board / "task.md").is_file()


def test_every_agent_is_given_the_board_to_write_in(tmp_path: Path) -> None:
    """Every agent is started with ``--add-dir <board>``: Claude Code, Codex, the test agent.

    With no board (a launch journaled before boards), without it. The launch's check makes
    nothing: the board is made only when the launch is journaled.
    """
    repo = agent_repository(tmp_path)
    request = launcher.Request(repository=repo, kind="fix", name="argv", brief="Mend it.")
    launched = launcher.check(request, Settings(), time.time)
    assert launched.board == str(repo / "places" / ".boards" / "fix--argv")
    assert not Path(launched.board).exists()
    place = step(Settings(), None, launched).place
    unboarded = step(Settings(), None, attrs.evolve(launched, board="")).place
    session = SessionId("0" * 8 + "-0000-4000-8000-" + "0" * 12)
    for module in (claude, codex, scripted):
        argv = module.command(place, session, None)
        assert argv[argv.index("--add-dir") + 1] == place.board, module.__name__
        assert "--add-dir" not in module.command(unboarded, session, None), module.__name__


TESTS_GATED = """\
[kind]
name = "wf"
body = ["build"]

[step.build]
prompt = "Build $brief."
gate = "tests"
"""

ONE_COMMIT = """\
[kind]
name = "wf"
body = ["work"]

[step.work]
prompt = "Do $brief; commit."
gate = "commit"
"""

BOTH_SCRIPT = """
[[turn]]
match = ":build:1"
steps = [{say = "Built."}]

[[turn]]
match = ":work:1"
steps = [{write = {path = "work.md", text = "done\\n"}}, {commit = "Do the work"}]
"""


def test_a_long_tests_gate_never_holds_another_places_supervision(
    tmp_path: Path, panes: Tmux
) -> None:
    """A tests gate runs on a worker of its own: another place, launched while it runs, finishes.

    The tests command waits until the test releases it (a file appears), so it is still running
    while the second place is launched, started, judged and finished; released, the first
    passes its gate and finishes too.
    """
    del panes
    release = tmp_path / "release"
    waits = f'while [ ! -f "{release}" ]; do sleep 0.05; done'
    config = TIMING + f'\n[tests]\ncommand = ["sh", "-c", \'{waits}\']\n'
    repo = agent_repository(tmp_path, config)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    held = _launch(tmp_path / "a", repo, TESTS_GATED, BOTH_SCRIPT, "held")
    try:
        assert observations(held)[0].tests == [["sh", "-c", waits]]  # type: ignore[attr-defined]

        def judging() -> bool:
            return isinstance(place_of(held).stage.phase, Judging)

        wait_for(judging, 60, "the tests gate to run")
        free = _launch(tmp_path / "b", repo, ONE_COMMIT, BOTH_SCRIPT, "free")
        wait_for(lambda: place_of(free).life is Life.FINISHED, 60, "the other place to finish")
        assert judging(), "the tests finished before they were released"
        release.write_text("", encoding="utf-8")
        wait_for(lambda: place_of(held).life is Life.FINISHED, 60, "the released place to finish")
    finally:
        # Released whatever came: the waiting tests command never outlives the test.
        release.write_text("", encoding="utf-8")
    passed = [text for event, text in _events(held) if event is Event.GATE_PASSED]
    assert passed == ["the gate of build passed"]


PLAN_BUILD = """\
[kind]
name = "wf"
body = ["plan", "build"]

[step.plan]
prompt = "Plan $brief: write PLAN.md; commit."
gate = "commit"

[step.build]
prompt = "Build what PLAN.md says; commit."
gate = "commit"
"""
EDITED_BUILD = PLAN_BUILD.replace(
    "Build what PLAN.md says;", "Build what PLAN.md says, with tests;"
)

#: Each step writes its file and commits.
PLAN_BUILD_SCRIPT = """
[[turn]]
match = ":plan:1"
steps = [{write = {path = "PLAN.md", text = "a plan\\n"}}, {commit = "Plan the greeting"}]

[[turn]]
match = ":build:1"
steps = [{write = {path = "built.md", text = "built\\n"}}, {commit = "Build the greeting"}]
"""


def test_a_running_place_keeps_the_definition_it_launched_with(tmp_path: Path, panes: Tmux) -> None:
    """VERSION-FROZEN end to end, and issue 14's must-show 7 on a real run's journal.

    The repository declares wf in its own kind file. Its place runs plan, then waits on the
    caller's word before build (``--wait build``); meanwhile the file is edited (build's
    prompt reworded). Told to proceed, build is prompted with the words of the launch, and the
    run finishes. ``flume simulate --journal`` against the edited file names the step that sent
    build its prompt; against the file as it was, "same".
    """
    del panes
    repo = scenario.make_repository(
        tmp_path / "repo",
        {
            ".flume.toml": TIMING + '[[kinds]]\nfile = "flume/wf.toml"\n',
            "flume/wf.toml": PLAN_BUILD,
            "README.md": "hullo\n",
        },
    )
    agent_script = script(tmp_path, PLAN_BUILD_SCRIPT)
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind", "wf", "--name", "frozen",
        "--brief", "the greeting", "--wait", "build", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={agent_script}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    path = places.journals_dir(repo) / "wf--frozen" / places.JOURNAL

    def waits_for_build() -> bool:
        place = place_of(path)
        return place.stage.name == "build" and isinstance(place.stage.phase, AwaitingWord)

    wait_for(waits_for_build, 60, "build to wait on the caller's word")
    kind_file = repo / "flume" / "wf.toml"
    kind_file.write_text(EDITED_BUILD, encoding="utf-8")
    proceeded = flume_process("proceed", "wf--frozen", "--repository", str(repo))
    assert proceeded.returncode == 0, proceeded.stderr
    wait_for(lambda: place_of(path).life is Life.FINISHED, 90, "the run to finish")
    prompts = [a for a in decided(path, SendPrompt) if isinstance(a, SendPrompt)]
    (build,) = {a.text for a in prompts if a.stage == "build"}
    assert build.startswith("Build what PLAN.md says; commit.")
    assert "with tests" not in build
    log = run_git(repo, "log", "--format=%s", "wf/frozen")
    assert "Build the greeting" in log

    compared = flume_process("simulate", "--journal", str(path), "--kind-file", str(kind_file))
    assert compared.returncode == 0, compared.stderr
    assert "differs at observation " in compared.stdout
    assert "-> SendPrompt stage build#1" in compared.stdout
    (line,) = compared.stdout.split("(the journal's | the file's):\n")[1].splitlines()
    assert '"Build what PLAN.md says; commit.' in line
    assert '"Build what PLAN.md says, with tests; commit.' in line
    as_launched = tmp_path / "as-launched.toml"
    as_launched.write_text(PLAN_BUILD, encoding="utf-8")
    same = flume_process("simulate", "--journal", str(path), "--kind-file", str(as_launched))
    assert same.returncode == 0, same.stderr
    count = len(observations(path))
    assert same.stdout.splitlines()[-1] == f"same: {count} observations, every decision the same"
