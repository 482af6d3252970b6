"""``flume simulate`` on the workflow scenarios flume ships: each shows what its description says.

One scenario a rule family: a loop left on done, a loop at max paused, gates judged at a turn's
end, a budget that pauses, an approval, a parallel's join and its merge conflict, and kill and
resume.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flume.cli.app import app
from flume.shell.declared import scenario

SCENARIOS = scenario.SHIPPED
WORKFLOWS = sorted(SCENARIOS.glob("workflow-*.toml"))
runner = CliRunner()


def rows_of(name: str) -> list[dict[str, Any]]:
    """The JSON trace of a shipped scenario, one dict a line."""
    result = runner.invoke(app, ["simulate", "--json", name])
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def actions(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every action the steps decided, in order (restarts' left out)."""
    return [action for row in rows if row["row"] == "step" for action in row.get("actions", [])]


def events(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each Report decided, as (event, text), in order."""
    return [(a["event"], a["text"]) for a in actions(rows) if a["type"] == "Report"]


def named(rows: list[dict[str, Any]], event: str) -> list[str]:
    """The texts of the reports of one event."""
    return [text for each, text in events(rows) if each == event]


def started(rows: list[dict[str, Any]]) -> list[str]:
    """The key and attempt of each stage started, as the stage-started reports say them."""
    return [text.removeprefix("stage ") for text in named(rows, "stage-started")]


def test_every_workflow_family_flume_runs_ships() -> None:
    """A scenario for each rule family: loop, gate, budget, join, merge conflict, kill."""
    assert sorted(path.stem for path in WORKFLOWS) == [
        "workflow-approval",
        "workflow-budget",
        "workflow-gate",
        "workflow-join",
        "workflow-kill-resume",
        "workflow-loop",
        "workflow-loop-max",
        "workflow-merge-conflict",
        "workflow-stall",
    ]


def test_the_join_merges_both_lanes_in_declared_order_and_tidies_them() -> None:
    """slice-b finishes first; the merge takes a then b; both lanes are asked to tidy."""
    rows = rows_of("workflow-join")
    assert named(rows, "lane-launched") == [
        "lane slice-a launched: sliced--greeting+slice-a on sliced/greeting+slice-a",
        "lane slice-b launched: sliced--greeting+slice-b on sliced/greeting+slice-b",
    ]
    assert named(rows, "lane-ended") == [
        "lane slice-b finished at b2b2b2b",
        "lane slice-a finished at c3c3c3c",
    ]
    assert named(rows, "merged") == [
        "lanes merged into sliced/greeting: slice-a, slice-b; its head is d4d4d4d"
    ]


def test_a_merge_conflict_pauses_named_and_by_hand_finishes() -> None:
    """The conflict names lane, file and both ways on; resolved by hand, the merge goes on."""
    rows = rows_of("workflow-merge-conflict")
    (paused,) = named(rows, "paused")
    assert "merge-conflict" in paused
    assert "greeting.txt" in paused
    assert "flume resolve sliced--clash --by-hand" in paused
    assert "flume resolve sliced--clash --agent" in paused
    (conflict,) = named(rows, "merge-conflict")
    assert conflict in paused
    assert "greeting.txt; the merge was undone" in conflict
    assert named(rows, "resumed") == ["sliced--clash resumed at slices: merged by hand"]
    assert named(rows, "finished") == ["sliced--clash finished"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.stem)
def test_every_workflow_scenario_finishes(path: Path) -> None:
    """Each runs through the rules with nothing refused, to a finished run."""
    rows = rows_of(str(path))
    summary = rows[-1]
    assert summary["row"] == "summary"
    assert (summary["life"], summary["refused"]) == ("finished", 0)
    assert named(rows, "finished") == [f"{summary['place']} finished"]


def test_the_loop_leaves_on_done_and_fix_never_runs_after() -> None:
    """Review revises on pass 1, fix commits, review is done on pass 2: no pass-2 fix."""
    rows = rows_of("workflow-loop")
    assert named(rows, "gate-passed") == [
        "the gate of review-loop@1/review passed (verdict: revise)",
        "the gate of review-loop@2/review passed (verdict: done)",
    ]
    assert started(rows) == [
        "review-loop@1/review starts (attempt 1)",
        "review-loop@1/fix starts (attempt 1)",
        "review-loop@2/review starts (attempt 1)",
    ]
    assert named(rows, "loop-max") == []
    markers = [a["marker"] for a in actions(rows) if a["type"] == "SendPrompt"]
    assert markers == [
        "flume:reviewed--greeting:review-loop@1/review:1",
        "flume:reviewed--greeting:review-loop@1/fix:1",
        "flume:reviewed--greeting:review-loop@2/review:1",
    ]
    assert rows[-1]["sends"] == {
        "review-loop@1/review#1": 1,
        "review-loop@1/fix#1": 1,
        "review-loop@2/review#1": 1,
    }


def test_a_loop_at_max_pauses_then_resumes() -> None:
    """Max 2, never done, on_max pause: loop-max after pass 2, paused, no pass 3; resume ends it."""
    rows = rows_of("workflow-loop-max")
    assert [each for each, _text in events(rows)][-5:] == [
        "stage-ended",
        "loop-max",
        "paused",
        "resumed",
        "finished",
    ]
    assert named(rows, "loop-max") == [
        "loop review-loop ran its 2 passes without done; the run pauses"
    ]
    (paused,) = named(rows, "paused")
    assert "paused at review-loop@2/fix (loop-max)" in paused
    assert "flume resume reviewed--greeting" in paused
    assert not any("@3" in each for each in started(rows))
    assert len(started(rows)) == 4
    while_paused = [row for row in rows if row["row"] == "step" and row["seen"]["type"] == "Tick"]
    assert while_paused[-1]["status"]["paused"] == "loop-max"
    assert while_paused[-1]["actions"] == []


def test_a_loop_at_max_that_continues_goes_on_without_a_pause(tmp_path: Path) -> None:
    """The same loop with on_max continue (the default): loop-max noted, the run finishes.

    The person's resume then finds nothing paused, and is refused, changing nothing.
    """
    text = (SCENARIOS / "workflow-loop-max.toml").read_text(encoding="utf-8")
    assert 'on_max = "pause"\n' in text
    path = tmp_path / "loop-max-continue.toml"
    path.write_text(text.replace('on_max = "pause"\n', ""), encoding="utf-8")
    rows = rows_of(str(path))
    assert named(rows, "loop-max") == [
        "loop review-loop ran its 2 passes without done; the run goes on"
    ]
    assert named(rows, "paused") == []
    assert not any("@3" in each for each in started(rows))
    assert [each for each, _text in events(rows)][-3:] == ["stage-ended", "loop-max", "finished"]
    assert rows[-1]["refused"] == 1
    (resume,) = [
        row for row in rows if row["row"] == "step" and row["seen"]["type"] == "ResumeAsked"
    ]
    assert "refused" in resume


def test_a_gate_without_its_verdict_is_told_once_then_pauses() -> None:
    """The artifact gate passes; no verdict: one tell with the reason, then gate-blocked; resume."""
    rows = rows_of("workflow-gate")
    assert named(rows, "gate-passed") == [
        "the gate of plan passed",
        "the gate of review passed (verdict: done)",
    ]
    (failed,) = named(rows, "gate-failed")
    assert failed.startswith("the gate of review (attempt 1) did not pass: no verdict")
    (tell,) = [a for a in actions(rows) if a["type"] == "SendTell"]
    assert "no verdict was written" in tell["text"]
    (paused,) = named(rows, "paused")
    assert "paused at review (gate-blocked)" in paused
    assert named(rows, "resumed") == ["planned--greeting resumed at review: resumed by a person"]
    assert started(rows)[-1] == "review starts (attempt 2)"


def test_a_turns_budget_pauses_before_the_next_start_and_a_raise_resumes() -> None:
    """One turn in all: no agent starts past it, paused (budget); raise --turns +2 resumes."""
    rows = rows_of("workflow-budget")
    steps = [row for row in rows if row["row"] == "step"]
    raised = next(n for n, row in enumerate(steps) if row["seen"]["type"] == "BudgetRaised")
    (paused,) = named(rows, "paused")
    assert "(budget): budget turns spent" in paused
    before = [a for row in steps[:raised] for a in row["actions"]]
    assert [a["stage"] for a in before if a["type"] == "StartAgent"] == ["plan"]
    after = steps[raised]["actions"]
    assert [a["type"] for a in after][-1] == "StartAgent"
    assert after[-1]["stage"] == "review"
    assert named(rows, "resumed") == [
        "planned--greeting resumed at review: budgets raised (turns 1 of 3)"
    ]


def test_an_approval_gate_waits_for_the_word() -> None:
    """The turn ends and the run waits, named, deciding nothing until flume approve."""
    rows = rows_of("workflow-approval")
    (paused,) = named(rows, "paused")
    assert "(approval)" in paused
    assert "flume approve signed--greeting" in paused
    steps = [row for row in rows if row["row"] == "step"]
    approve = next(n for n, row in enumerate(steps) if row["seen"]["type"] == "ApproveAsked")
    waiting = steps[approve - 1]
    assert waiting["seen"]["type"] == "Tick"
    assert (waiting["status"]["paused"], waiting["actions"]) == ("approval", [])
    assert [a["event"] for a in steps[approve]["actions"]] == [
        "gate-passed",
        "stage-ended",
        "finished",
    ]


def test_a_silent_agent_is_nudged_once_then_paused_though_its_pane_moves() -> None:
    """WF-STALL-NUDGES-ONCE: the pane's spinner is no word from the agent; resume finishes."""
    rows = rows_of("workflow-stall")
    assert named(rows, "nudged") == [
        "the agent of review (attempt 1) said nothing for 60s mid-turn; nudged once"
    ]
    (paused,) = named(rows, "paused")
    assert "(stalled): the agent said nothing for 60s after its nudge" in paused
    steps = [row for row in rows if row["row"] == "step"]
    at = {row["at"]: row for row in steps}
    assert [a["type"] for a in at[65.0]["actions"]] == ["Report", "SendTell"]
    assert at[125.0]["status"]["paused"] == "stalled"
    assert started(rows) == ["review starts (attempt 1)", "review starts (attempt 2)"]
    assert rows[-1]["row"] == "summary"


def test_kill_and_resume_asks_again_only_what_is_pending_and_ends_the_same() -> None:
    """Each restart performs again what the place waits to see; the events are an unkilled run's."""
    rows = rows_of("workflow-kill-resume")
    restarts = [row["actions"] for row in rows if row["row"] == "restart"]
    assert [[a["type"] for a in each] for each in restarts] == [["JudgeGate"], ["EndAgent"], []]
    judge, end = restarts[0][0], restarts[1][0]
    assert (judge["key"], judge["attempt"]) == ("review-loop@1/review", 1)
    assert end["session"] == "5e55-0001"
    assert events(rows) == events(rows_of("workflow-loop"))


def test_the_restart_is_printed_for_people() -> None:
    """The text trace names each restart and what it performs again."""
    result = runner.invoke(app, ["simulate", "workflow-kill-resume"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    first = next(n for n, line in enumerate(lines) if "Restart: the supervisor" in line)
    assert lines[first].startswith("[    25.0] Restart")
    assert lines[first + 1].startswith("           -> JudgeGate ")
    assert 'key="review-loop@1/review"' in lines[first + 1]
    assert "(nothing to perform again)" in lines[-3]


#: A step gated on the tests [launch] names, whose turn ends with them failing.
TESTED = """[launch]
repository = "/src/app"
kind = "checked"
name = "x"
base = "main"
brief = "b"
board = "/src/app/places/.boards/checked--x"
tests = [["make", "test"]]

[workflow.kind]
name = "checked"
body = ["build"]

[workflow.step.build]
prompt = "Build it."
gate = "tests"

[[seen]]
at = 1.0
type = "WorktreeMade"
path = "/src/app/places/checked--x"
branch = "checked/x"
head = "a1"

[[seen]]
at = 2.0
type = "AgentStarted"
stage = "build"
attempt = 1
session = "s1"
pane = "%1"

[[seen]]
at = 3.0
type = "AgentReady"
session = "s1"

[[seen]]
at = 4.0
type = "TranscriptEntry"
session = "s1"
line_type = "user"
content = "string"
text = "Build it. [flume:checked--x:build:1]"

[[seen]]
at = 5.0
type = "AgentStateSeen"
session = "s1"
activity = "waiting"

[[seen]]
at = 5.0
type = "TurnEnded"
session = "s1"

[[seen]]
at = 6.0
type = "GateRead"
key = "build"
attempt = 1
found = true
code = 2
summary = "1 failed"
"""


def test_a_tests_gate_runs_the_launch_s_command_and_its_failure_is_told(tmp_path: Path) -> None:
    """[launch] tests reach the gate's JudgeGate; a failing run is told to the agent once."""
    path = tmp_path / "tested.toml"
    path.write_text(TESTED, encoding="utf-8")
    rows = rows_of(str(path))
    assert rows[0]["seen"]["tests"] == [["make", "test"]]
    (judge,) = [a for a in actions(rows) if a["type"] == "JudgeGate"]
    assert judge["tests"] == [["make", "test"]]
    (failed,) = named(rows, "gate-failed")
    assert "the tests failed (exit status 2)" in failed
    assert [a["type"] for a in actions(rows)].count("SendTell") == 1


HEAD = (
    '[launch]\nrepository="/r"\nkind="wf"\nname="x"\nbase="main"\nbrief="b"\n\n'
    '[workflow.kind]\nname = "wf"\nbody = ["review"]\n\n'
)
BAD = {
    "unknown_step_key": (
        HEAD + '[workflow.step.review]\nprompt = "x"\ncolour = "red"\n',
        ":14:",
        "[workflow.step.review] has no key 'colour'",
    ),
    "undeclared_block": (
        HEAD.replace('["review"]', '["review", "fix"]') + '[workflow.step.review]\nprompt = "x"\n',
        ":10:",
        "names block 'fix', which is not declared",
    ),
    "unused_block": (
        HEAD + '[workflow.step.review]\nprompt = "x"\n\n[workflow.step.idle]\nprompt = "y"\n',
        ":15:",
        "block idle is declared but no body or branches name it",
    ),
    "tests_without_command": (
        HEAD + '[workflow.step.review]\nprompt = "x"\ngate = "tests"\n',
        ":14:",
        "gives no tests command",
    ),
    "first_with_merge": (
        HEAD.replace('["review"]', '["both"]')
        + '[workflow.parallel.both]\nbranches = ["a", "b"]\njoin = "first"\n\n'
        '[workflow.step.a]\nprompt = "x"\n\n[workflow.step.b]\nprompt = "y"\n',
        ":12:",
        'with join = "first" use merge = "pick" or "none"',
    ),
    "workflow_not_a_table": (
        'workflow = 3\n[launch]\nrepository="/r"\nkind="wf"\nname="x"\nbase="main"\nbrief="b"\n',
        ":1:",
        "is not a table",
    ),
    "declared_twice": (
        HEAD + '[workflow.step.review]\nprompt = "x"\n\n[kind]\nname = "wf"\n[[kind.stages]]\n'
        'name = "a"\nprompt = "x"\ndeliverable = "commit"\n',
        ":8:",
        "[kind] and [workflow] both declare a kind named wf",
    ),
    "missing_prompt": (
        HEAD + '[workflow.step.review]\ngate = "verdict"\n',
        ":12:",
        "[workflow.step.review] has no prompt",
    ),
    "restart_with_fields": (
        HEAD + '[workflow.step.review]\nprompt = "x"\n\n[[seen]]\nat = 1\ntype = "Restart"\n'
        "session = 'a'\n",
        ":15:",
        "Restart) has unknown keys session",
    ),
    "restart_out_of_order": (
        HEAD + '[workflow.step.review]\nprompt = "x"\n\n[[seen]]\nat = 5\ntype = "Tick"\n\n'
        '[[seen]]\nat = 2\ntype = "Restart"\n',
        ":19:",
        "time order",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_workflow_scenario_names_file_and_line(case: str, tmp_path: Path) -> None:
    """A bad [workflow] or Restart: exit 2, nothing traced, the file and line at fault named."""
    text, where, says = BAD[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["simulate", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"{path}{where}" in result.stderr
    assert says in result.stderr
