"""A person's word on real places: flume pass, and each refusal naming the command that applies.

As test_pauses.py: real repositories, worktrees and journals, the supervisor in this process
with echo agents, the end of an agent's turn journaled by the test. Each command runs as the
``flume`` a person types.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from pyrsistent import pvector

from flume.core.ids import Instant
from flume.core.kinds import Artifact, Budgets, Commit, Sequence, Step
from flume.core.observations import AskSaid, PassAsked
from flume.core.place import PauseCause, Paused
from flume.core.settings import Settings
from flume.shell.store import journal
from tests.integration.places_kit import Harness, flume, repository, run_git
from tests.integration.test_pauses import (
    PLACE,
    _commands,
    _kind,
    _lines,
    _paused,
    _snapshot,
    _started,
    _turn_ends,
    _working,
)


def test_flume_pass_passes_a_blocked_gate_with_the_person_s_words(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """Gate-blocked: pass journals the person's words; the next step starts; status shows it."""
    repo = repository(host / "repo")
    path, phase = _paused(harness, repo, _kind(Artifact(path="PLAN.md")), turns=2)
    assert phase.cause is PauseCause.GATE_BLOCKED
    ran = flume("pass", PLACE, "--why", "The plan is in the issue, not a file.")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == (
        f"{PLACE}: the gate of build is passed, by your word; step check starts (attempt 1)"
    )
    (passed,) = [each for each in _lines(path) if isinstance(each, PassAsked)]
    assert passed.why == "The plan is in the issue, not a file."
    harness.settle()
    assert _started(harness) == [("build", 1), ("check", 1)]
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["passes"] == ["build#1: The plan is in the issue, not a file."]
    events = flume("events", PLACE).stdout
    assert "build#1 gate-passed: the gate of build (attempt 1) passed by a person" in events
    assert "The plan is in the issue, not a file." in events
    assert woken == ["wake"]


def test_flume_pass_where_no_gate_is_blocked_is_refused_and_journals_nothing(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """Working, and paused on a budget: exit 1, naming what applies; bad words: exit 2."""
    repo = repository(host / "repo")
    path = _working(harness, repo, _kind(Commit(), Budgets(turns=1)))
    before = _snapshot(repo, path)
    ran = flume("pass", PLACE, "--why", "go on")
    assert ran.returncode == 1, ran.stderr
    assert f"pass: {PLACE} works on build; nothing there waits on a person's pass" in ran.stderr
    assert _snapshot(repo, path) == before
    _turn_ends(harness, path)
    # The commit gate is judged at the turn's end after its evidence window (WF-DELIVERED-PASSES).
    harness.pass_time(Settings().quiet_seconds + 1)
    phase = harness.place(path).stage.phase
    assert isinstance(phase, Paused), phase
    assert phase.cause is PauseCause.BUDGET, phase
    before = _snapshot(repo, path)
    budget = flume("pass", PLACE, "--why", "go on")
    assert budget.returncode == 1, budget.stderr
    assert budget.stderr.rstrip().endswith(f"; flume raise {PLACE} --turns +N")
    empty = flume("pass", PLACE, "--why", "  ")
    assert empty.returncode == 2, empty.stderr
    unnamed = flume("pass", PLACE)
    assert unnamed.returncode == 2, unnamed.stderr
    assert "--why" in unnamed.stderr
    assert _snapshot(repo, path) == before
    assert woken == []


def test_flume_pass_from_inside_an_agent_s_session_is_refused(
    host: Path, harness: Harness, woken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's verb: an agent (``$FLUME_SESSION`` set) cannot pass its own gate."""
    repo = repository(host / "repo")
    path, _ = _paused(harness, repo, _kind(Artifact(path="PLAN.md")), turns=2)
    before = _snapshot(repo, path)
    monkeypatch.setenv("FLUME_SESSION", "s-agent")
    monkeypatch.setenv("FLUME_PLACE", PLACE)
    ran = flume("pass", PLACE, "--why", "I say so")
    assert ran.returncode == 1, ran.stderr
    assert "flume pass is a person's word" in ran.stderr
    assert _snapshot(repo, path) == before
    assert woken == []


def test_approve_of_a_run_waiting_on_a_question_names_flume_answer(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """Not "is not paused": it waits on a question, and ``flume answer RUN q1`` applies."""
    repo = repository(host / "repo")
    path = _asking(harness, repo)
    before = _snapshot(repo, path)
    for verb in ("approve", "resume"):
        ran = flume(verb, PLACE)
        assert ran.returncode == 1, ran.stderr
        assert f"{PLACE} waits on a question (q1: Which API? (options: old, new))" in ran.stderr
        assert ran.stderr.rstrip().endswith(f'; flume answer {PLACE} q1 "..."')
    assert _snapshot(repo, path) == before
    assert woken == []


def _asking(harness: Harness, repo: Path) -> Path:
    """The first step (which may ask) asked q1 with two options; the journal."""
    kind = _kind(Commit())
    body = kind.body
    assert isinstance(body, Sequence)
    first = body.blocks[0]
    assert isinstance(first, Step)
    may = attrs.evolve(first, may=first.may.add("ask"))
    kind = attrs.evolve(kind, body=Sequence(blocks=body.blocks.set(0, may)))
    path = _working(harness, repo, kind)
    place = harness.place(path)
    assert place.agent is not None
    harness.clock.now += 1
    seen = AskSaid(
        at=Instant(harness.clock.now),
        question="Which API?",
        options=pvector(["old", "new"]),
        session=place.agent.session,
    )
    journal.append(path, seen)
    harness.settle()
    return path


def test_a_raise_of_a_budget_the_kind_sets_none_of_names_the_spent_budget(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """Paused on turns, no token budget: --tokens is refused naming turns; nothing journaled."""
    repo = repository(host / "repo")
    path, phase = _paused(harness, repo, _kind(Commit(), Budgets(turns=1)))
    assert (phase.cause, phase.spent) == (PauseCause.BUDGET, "turns")
    before = _snapshot(repo, path)
    ran = flume("raise", PLACE, "--tokens", "+1000")
    assert ran.returncode == 1, ran.stderr
    assert f"raise: {PLACE} sets no tokens budget to raise; it is paused at build" in ran.stderr
    assert ran.stderr.rstrip().endswith(f"; flume raise {PLACE} --turns +N")
    assert _snapshot(repo, path) == before
    assert _commands(path) == []
    ran = flume("raise", PLACE, "--turns", "+2")
    assert ran.returncode == 0, ran.stderr
    assert f"{PLACE}: budgets raised; step build starts again (attempt 2)" in ran.stdout
    assert woken == ["wake"]  # the one accepted; the harness's supervisor alone carries it


def test_a_tell_to_a_finished_run_says_its_work_is_not_landed_and_advises_no_retry(
    host: Path, harness: Harness, woken: list[str]
) -> None:
    """A run without finalize finished: its work is on its branch; status and tell say how."""
    repo = repository(host / "repo")
    path, _ = _paused(harness, repo, _kind(Artifact(path="PLAN.md")), turns=2)
    assert flume("pass", PLACE, "--why", "no plan needed").returncode == 0
    harness.settle()
    (repo / "places" / PLACE / "check.txt").write_text("checked\n")
    worktree = repo / "places" / PLACE
    run_git(worktree, "add", "check.txt")
    run_git(worktree, "commit", "-q", "-m", "checked")
    harness.settle()
    harness.pass_time(Settings().quiet_seconds + 1)
    place = harness.place(path)
    assert place.life.value == "finished", place.stage
    (view,) = json.loads(flume("status", "--json").stdout)["places"]
    assert view["unlanded"] == (
        "its work is on branch feature/pausing, not landed on main: land it with git merge "
        "feature/pausing in the checkout of main, then flume tidy"
    )
    table = flume("status").stdout
    assert "its work is on branch feature/pausing, not landed on main" in table
    told = flume("tell", PLACE, "and the docs")
    assert told.returncode == 1, told.stderr
    assert "retry" not in told.stderr
    assert "not landed on main: land it with git merge feature/pausing" in told.stderr
    assert woken == ["wake"]  # the pass alone: no supervisor of its own raced the harness's
