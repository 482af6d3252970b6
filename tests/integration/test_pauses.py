"""A person's side of a paused workflow run: flume approve, resume and raise, and what status says.

The places are real (a repository, a worktree, a journal, a supervisor in this process with echo
agents); each runs a workflow kind carried by its launch, the launch, the supervisor and the rules
as they run. The end of an agent's turn, which the transcript readers report, is journaled by the
test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyrsistent import pvector

from flume.core.ids import BlockName, Instant, KindName, StageName
from flume.core.kinds import (
    Approval,
    Artifact,
    Block,
    Budgets,
    Commit,
    Gate,
    Kind,
    Loop,
    Sequence,
    Step,
    Verdict,
)
from flume.core.observations import (
    ApproveAsked,
    BudgetRaised,
    Observation,
    ResumeAsked,
    TurnEnded,
    Usage,
)
from flume.core.place import Judging, PauseCause, Paused, Place, Working
from flume.core.settings import Settings
from flume.shell.commands import herdr_plugin
from flume.shell.perform import launcher
from flume.shell.store import journal
from tests.integration.places_kit import Harness, flume, repository, world_of

PLACE = "feature--pausing"


def _kind(gate: Gate, budgets: Budgets | None = None, first: Block | None = None) -> Kind:
    """A workflow kind: ``build`` gated on ``gate`` (or ``first``), then ``check`` on a commit."""
    steps = (
        first or Step(name=StageName("build"), prompt="Build $brief.", deliverable=gate),
        Step(name=StageName("check"), prompt="Check $brief.", deliverable=Commit()),
    )
    return Kind(
        name=KindName("feature"),
        prefix="feature",
        body=Sequence(blocks=pvector(steps)),
        budgets=budgets or Budgets(),
    )


def _working(harness: Harness, repo: Path, kind: Kind) -> Path:
    """The kind launched and carried to its first step's agent working; the journal."""
    request = launcher.Request(
        repository=repo, kind="feature", name="pausing", brief="the greeting", carried=kind
    )
    path = launcher.launch(request, Settings(), harness.clock).journal
    harness.settle()
    assert isinstance(harness.place(path).stage.phase, Working)
    return path


def _turn_ends(harness: Harness, path: Path, tokens: int | None = None) -> Place:
    """The live agent's turn ends (with ``tokens`` used, if reported); the place after."""
    place = harness.place(path)
    assert place.agent is not None
    harness.clock.now += 1
    usage = None if tokens is None else Usage(input=tokens)
    seen = TurnEnded(at=Instant(harness.clock.now), session=place.agent.session, usage=usage)
    journal.append(path, seen)
    harness.settle()
    return harness.place(path)


def _paused(harness: Harness, repo: Path, kind: Kind, turns: int = 1) -> tuple[Path, Paused]:
    path = _working(harness, repo, kind)
    for _ in range(turns):
        place = _turn_ends(harness, path)
    if isinstance(place.stage.phase, Judging):
        # A deliverable judged at the turn's end waits its evidence window (a commit seen a
        # moment late still counts: WF-DELIVERED-PASSES); then it is judged, or pauses.
        harness.pass_time(Settings().quiet_seconds + 1)
        place = harness.place(path)
    phase = place.stage.phase
    assert isinstance(phase, Paused), phase
    return path, phase


def _lines(path: Path) -> list[Observation]:
    return list(journal.read(path).observations)


def _commands(path: Path) -> list[Observation]:
    """The person's pause commands the journal holds."""
    asked = (ApproveAsked, ResumeAsked, BudgetRaised)
    return [each for each in _lines(path) if isinstance(each, asked)]


def _started(harness: Harness) -> list[tuple[str, int]]:
    return [(stage, attempt) for _path, stage, attempt in harness.agents.started]


def _snapshot(repo: Path, path: Path) -> tuple[dict[str, object], bytes]:
    return world_of(repo), path.read_bytes()


# --- approve ---------------------------------------------------------------------------------


def test_approve_passes_an_approval_gate_and_the_run_goes_on(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """An approval gate pauses at the turn's end, named; approve passes it; the next step runs."""
    repo = repository(host / "repo")
    path, phase = _paused(harness, repo, _kind(Approval()))
    assert phase.cause is PauseCause.APPROVAL
    shown = flume("status").stdout
    assert f"{PLACE} build: paused (approval): step build waits for approval" in shown
    assert f"flume approve {PLACE} lets it go on" in shown
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["phase"] == "paused"
    assert view["paused"] == "approval"
    assert view["resolve"] == f"flume approve {PLACE}"
    (flight,) = herdr_plugin.in_flight([repo])
    assert herdr_plugin.waits_on_caller(flight)
    assert herdr_plugin.row(flight) == f"{PLACE} build#1 paused (approval): flume approve {PLACE}"
    for refused in (("resume", PLACE), ("raise", PLACE, "--turns", "+1")):
        before = _snapshot(repo, path)
        ran = flume(*refused)
        assert ran.returncode == 1, ran.stderr
        # REFUSAL-NAMES-WAY: what the run waits on, and the command that applies.
        assert f"{PLACE} is paused at build (approval: step build waits for approval)" in (
            ran.stderr
        )
        assert ran.stderr.rstrip().endswith(f"; flume approve {PLACE}")
        assert _snapshot(repo, path) == before
    ran = flume("approve", PLACE)
    assert ran.returncode == 0, ran.stderr
    assert f"{PLACE}: step build is approved; step check starts (attempt 1)" in ran.stdout
    assert isinstance(_lines(path)[-1], ApproveAsked)
    harness.settle()
    assert _started(harness) == [("build", 1), ("check", 1)]
    assert "paused" not in flume("status").stdout
    before = _snapshot(repo, path)
    again = flume("approve", PLACE)
    assert again.returncode == 1
    assert f"{PLACE} works on check; nothing there waits on an approval" in again.stderr
    assert _snapshot(repo, path) == before
    assert woken == ["wake"]


# --- resume ----------------------------------------------------------------------------------


def test_resume_runs_a_step_paused_on_its_gate_again(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """An artifact never written: told once, then paused gate-blocked; resume starts it again."""
    repo = repository(host / "repo")
    path, phase = _paused(harness, repo, _kind(Artifact(path="PLAN.md")), turns=2)
    assert phase.cause is PauseCause.GATE_BLOCKED
    assert "PLAN.md does not exist in the worktree" in phase.words
    shown = flume("status").stdout
    assert f"{PLACE} build: paused (gate-blocked): PLAN.md does not exist" in shown
    assert f"flume resume {PLACE}" in shown
    events = flume("events", PLACE).stdout
    assert "gate-failed" in events
    assert "paused" in events
    before = _snapshot(repo, path)
    ran = flume("approve", PLACE)
    assert ran.returncode == 1
    assert "nothing there waits on an approval" in ran.stderr
    assert f"flume resume {PLACE} (or flume retry {PLACE} with words)" in ran.stderr
    assert _snapshot(repo, path) == before
    ran = flume("resume", PLACE)
    assert ran.returncode == 0, ran.stderr
    assert f"{PLACE}: resumed; step build starts again (attempt 2)" in ran.stdout
    assert isinstance(_lines(path)[-1], ResumeAsked)
    harness.settle()
    assert _started(harness) == [("build", 1), ("build", 2)]
    assert isinstance(harness.place(path).stage.phase, Working)
    assert "resumed" in flume("events", PLACE).stdout
    before = _snapshot(repo, path)
    again = flume("resume", PLACE)
    assert again.returncode == 1
    assert f"{PLACE} works on build; nothing there waits on flume resume" in again.stderr
    assert _snapshot(repo, path) == before
    assert woken == ["wake"]


# --- status ----------------------------------------------------------------------------------

#: A loop whose review never writes its verdict.
REVIEWED = Loop(
    name=BlockName("review-loop"),
    body=Sequence(
        blocks=pvector([Step(name=StageName("review"), prompt="Review.", deliverable=Verdict())])
    ),
    until=StageName("review"),
    max=2,
)

#: The fields only a workflow's place carries in ``status --json``.
WORKFLOW_FIELDS = {
    "key", "paused", "paused_words", "resolve", "budgets", "turns_spent", "tokens_spent", "maxed",
}  # fmt: skip


def test_status_names_a_paused_attempt_by_its_key_and_its_budgets(
    host: Path, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step in a loop is shown by its key; a pause, its command and the budgets are said.

    The launch writes no board yet, so the verdict is looked for in the folder the test runs in:
    an empty one, where none is ever written.
    """
    monkeypatch.chdir(host)
    repo = repository(host / "repo")
    kind = _kind(Commit(), Budgets(turns=50, retries=3), first=REVIEWED)
    _paused(harness, repo, kind, turns=2)
    shown = flume("status").stdout
    assert "review-loop@1/review#1  paused" in shown
    at = f"{PLACE} review-loop@1/review"
    assert f"{at}: paused (gate-blocked): no verdict was written at " in shown
    assert f"{at}: flume resume {PLACE} (or flume retry {PLACE} with words) lets it go on" in shown
    assert f"{PLACE}: budgets: turns 2 of 50, retries 1 of 3" in shown
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["key"] == "review-loop@1/review"
    assert view["stage"] == "review"
    assert (view["paused"], view["resolve"]) == (
        "gate-blocked",
        f"flume resume {PLACE} (or flume retry {PLACE} with words)",
    )
    assert view["paused_words"].startswith("no verdict was written")
    assert (view["budgets"], view["turns_spent"], view["tokens_spent"]) == (
        "turns 2 of 50, retries 1 of 3",
        2,
        0,
    )


def test_a_linear_place_s_status_json_has_no_workflow_field(host: Path, harness: Harness) -> None:
    """A fix's status carries format 1's fields only: today's readers read it unchanged."""
    repo = repository(host / "repo")
    request = launcher.Request(repository=repo, kind="fix", name="plain", brief="Mend it.")
    launcher.launch(request, Settings(), harness.clock)
    harness.settle()
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["phase"] == "working"
    assert WORKFLOW_FIELDS.isdisjoint(view), sorted(WORKFLOW_FIELDS & set(view))
    shown = flume("status").stdout
    assert "fix--plain code: " not in shown
    assert "budgets" not in shown


# --- raise -----------------------------------------------------------------------------------


def test_raise_lifts_a_spent_budget_and_the_step_starts_again(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """A budget of 1 turn pauses at the first turn's end; raise --turns +5 starts it again."""
    repo = repository(host / "repo")
    path, phase = _paused(harness, repo, _kind(Commit(), Budgets(turns=1, tokens=1000)))
    assert phase.cause is PauseCause.BUDGET
    shown = flume("status").stdout
    assert f"{PLACE} build: paused (budget): budget turns spent" in shown
    assert f"flume raise {PLACE} --turns +N" in shown
    assert "budgets: turns 1 of 1, tokens 0 of 1000" in shown
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["paused"] == "budget"
    assert view["turns_spent"] == 1
    ran = flume("raise", PLACE, "--turns", "+5", "--tokens", "500")
    assert ran.returncode == 0, ran.stderr
    assert f"{PLACE}: budgets raised; step build starts again (attempt 2)" in ran.stdout
    raised = _lines(path)[-1]
    assert isinstance(raised, BudgetRaised)
    assert (raised.turns, raised.tokens, raised.wall_minutes) == (5, 500, None)
    harness.settle()
    assert _started(harness) == [("build", 1), ("build", 2)]
    assert "turns 1 of 6, tokens 0 of 1500" in flume("status").stdout
    before = _snapshot(repo, path)
    again = flume("raise", PLACE, "--turns", "1")
    assert again.returncode == 1
    assert f"{PLACE} works on build; nothing there waits on a raise of its budgets" in (
        again.stderr
    )
    assert _snapshot(repo, path) == before
    assert woken == ["wake"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--turns", "0"), "Invalid value for '--turns': '0' is not a whole number of at least 1"),
        (("--turns", "-3"), "Invalid value for '--turns': '-3' is not a whole number"),
        (("--turns", "abc"), "Invalid value for '--turns': 'abc' is not a whole number"),
        (("--wall", "1.5"), "Invalid value for '--wall': '1.5' is not a whole number"),
        (("--tokens", "+"), "Invalid value for '--tokens': '+' is not a whole number"),
        ((), "raise: no budget is named to raise; name one or more: --turns +N"),
    ],
)
def test_bad_raises_exit_2_naming_the_option_and_journal_nothing(
    host: Path, harness: Harness, woken: list[str], argv: tuple[str, ...], says: str
) -> None:
    """A raise by nothing, 0, a negative or a word: exit 2, mended in words, nothing journaled."""
    repo = repository(host / "repo")
    path, _ = _paused(harness, repo, _kind(Commit(), Budgets(turns=1)))
    before = _snapshot(repo, path)
    ran = flume("raise", PLACE, *argv)
    assert ran.returncode == 2, ran.stderr
    assert says in ran.stderr
    assert "+5" in ran.stderr or "+N" in ran.stderr
    assert _snapshot(repo, path) == before
    assert _commands(path) == []
    assert woken == []


def test_approve_resume_and_raise_of_a_linear_place_are_refused(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """A fix's place is never paused: each command exits 1 and journals nothing."""
    repo = repository(host / "repo")
    request = launcher.Request(repository=repo, kind="fix", name="plain", brief="Mend it.")
    path = launcher.launch(request, Settings(), harness.clock).journal
    harness.settle()
    before = _snapshot(repo, path)
    for argv in (("approve",), ("resume",), ("raise", "--retries", "2")):
        ran = flume(argv[0], "fix--plain", *argv[1:])
        assert ran.returncode == 1, (argv, ran.stderr)
        assert "fix--plain works on code; nothing there waits on" in ran.stderr
        assert "nothing waits on you now: flume status fix--plain shows where it stands" in (
            ran.stderr
        )
    assert _snapshot(repo, path) == before
    assert woken == []
