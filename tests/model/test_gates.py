"""Gates, budgets and the tree's walk, case by case: each reading a gate can get, each budget.

The machine of ``test_workflow_run.py`` holds the rules over random runs; these examples name
the cases one by one (and keep every branch of the workflow code covered by example tests).
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pvector

from flume.core.actions import Event, JudgeGate, SendTell, StartAgent
from flume.core.budget import Spent, budget_words
from flume.core.choices import AgentName
from flume.core.gates import judge
from flume.core.ids import BlockName, Instant, KindName, SessionId, StageName
from flume.core.kinds import (
    Budgets,
    Commit,
    Kind,
    Loop,
    OnMax,
    Parallel,
    PassingTests,
    Sequence,
    Step,
    StepAgent,
    Verdict,
)
from flume.core.launch import AgentSettings
from flume.core.observations import GateRead, ResumeAsked, Tick, TurnEnded
from flume.core.place import Judging, Life, PauseCause, Paused, Working
from flume.core.settings import Settings
from flume.core.stage import agent_for
from flume.core.status import status
from flume.core.step import pending, step
from flume.core.workflow import Pass, Position, advance, first, position_of
from tests.model.test_workflow_run import reviewed, world_of
from tests.model.world import FakeWorld

S = Settings()


def _one(gate: object, budgets: Budgets | None = None, agent: StepAgent | None = None) -> Kind:
    only = Step(name=StageName("only"), prompt="Do $brief.", deliverable=gate, agent=agent)  # type: ignore[arg-type]
    return Kind(
        name=KindName("one"),
        prefix="one",
        body=Sequence(blocks=pvector([only])),
        budgets=budgets or Budgets(),
    )


def _judging(world: FakeWorld) -> None:
    """The only step's agent takes its prompt and ends its turn: its gate is read."""
    assert world.deliver()
    world.end_turn()


@pytest.mark.parametrize(
    ("reading", "told"),
    [
        (GateRead(at=Instant(0), key="only", attempt=1, found=True, code=3, summary="1 failed"),
         "the tests failed (exit status 3):\n1 failed"),
        (GateRead(at=Instant(0), key="only", attempt=1, found=False, problem="ran past"),
         "the tests did not finish: ran past"),
    ],
)  # fmt: skip
def test_a_tests_gate_fails_on_a_failing_or_unfinished_run(reading: GateRead, told: str) -> None:
    """A failing run, or one killed at its deadline, does not pass; the agent is told why."""
    world = world_of(_one(PassingTests()))
    world.tests_pass = False
    assert world.place is not None
    assert judge(world.place, PassingTests(), reading).reason == told  # type: ignore[union-attr]
    _judging(world)
    (action,) = [a for a in world.actions if isinstance(a, JudgeGate)]
    assert action.deadline == S.tests_seconds
    assert "the tests failed (exit status 1)" in world.reports_of(Event.GATE_FAILED)[0].text


def test_a_tests_gate_passes_on_a_clean_run() -> None:
    """Exit status 0: the step passes and the place finishes."""
    world = world_of(_one(PassingTests()))
    _judging(world)
    assert world.place is not None
    assert world.place.life is Life.FINISHED


@pytest.mark.parametrize(
    ("reading", "said"),
    [
        (GateRead(at=Instant(0), key="only", attempt=1, found=True, problem="it is not JSON"),
         "cannot be read: it is not JSON"),
        (GateRead(at=Instant(0), key="only", attempt=1, found=True, result="maybe"),
         "says result 'maybe'; write \"done\", \"revise\" or \"blocked\""),
    ],
)  # fmt: skip
def test_an_unreadable_or_unknown_verdict_is_told(reading: GateRead, said: str) -> None:
    """A verdict that is not JSON, or says no result flume knows, fails with why."""
    world = world_of(_one(Verdict()))
    assert world.place is not None
    assert said in judge(world.place, Verdict(), reading).reason  # type: ignore[union-attr]


def test_blocked_without_a_summary_says_so_and_other_gates_are_not_read() -> None:
    """blocked, no summary: the words say so. A deliverable gate is never read by the shell."""
    world = world_of(_one(Verdict()))
    assert world.place is not None
    blocked = GateRead(at=Instant(0), key="only", attempt=1, found=True, result="blocked")
    assert judge(world.place, Verdict(), blocked).words == (  # type: ignore[union-attr]
        "the verdict says blocked, with no summary"
    )
    assert "is not read" in judge(world.place, Commit(), blocked).reason  # type: ignore[union-attr]


def test_a_turn_of_another_session_spends_nothing() -> None:
    """A turn's end from a session that is not the live agent's counts nothing, judges nothing."""
    world = world_of(_one(Verdict()))
    assert world.deliver()
    assert world.place is not None
    before = world.place
    decided = step(S, before, TurnEnded(at=Instant(1), session=SessionId("other")))
    assert decided.place.spent == before.spent
    assert isinstance(decided.place.stage.phase, Working)


def test_a_restart_while_judging_reads_the_gate_again() -> None:
    """RESTART-PENDING for a gate: a Judging stage's reading is asked again after a restart."""
    world = world_of(_one(Verdict()))
    assert world.deliver()
    assert world.place is not None
    judging = attrs.evolve(
        world.place.stage, phase=Judging(session=SessionId("s1"), since=Instant(1))
    )
    place = attrs.evolve(world.place, stage=judging)
    assert [type(a) for a in pending(place)] == [JudgeGate]


def test_active_minutes_spent_pause_at_a_tick_and_paused_time_is_not_counted() -> None:
    """wall_minutes = 1: a minute of work pauses at the next look; a paused hour counts nothing."""
    world = world_of(_one(Verdict(), Budgets(wall_minutes=1)))
    assert world.deliver()
    world.now += 61
    world.feed(Tick(at=world.instant()))
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert (phase.cause, phase.spent) == (PauseCause.BUDGET, "wall_minutes")
    assert status(world.place).resolve == "flume raise one--x --wall +N"
    world.now += 3600
    assert status(world.place).budgets == "wall minutes 1 of 1"


def test_the_retries_budget_pauses_instead_of_telling_again() -> None:
    """Retries = 1: the first failed gate is told; the next attempt's is not: paused, budget."""
    world = world_of(_one(Verdict(), Budgets(retries=1)))
    _judging(world)
    assert len([a for a in world.actions if isinstance(a, SendTell)]) == 1
    assert world.deliver()
    world.end_turn()
    assert world.place is not None
    world.feed(ResumeAsked(at=world.instant()))
    _judging(world)
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert (phase.cause, phase.spent) == (PauseCause.BUDGET, "retries")
    assert len([a for a in world.actions if isinstance(a, SendTell)]) == 1


def test_unreported_usage_is_named_beside_a_tokens_budget() -> None:
    """Turns whose model reported no usage are counted and named: tokens cannot see them."""
    words = budget_words(Budgets(tokens=100), Spent(tokens=40, unreported=2), Instant(0))
    assert words == "tokens 40 of 100, 2 turns reported no usage (tokens not counted)"


def test_a_silent_agent_that_speaks_after_its_nudge_is_not_paused_yet() -> None:
    """Nudged, then output before the window ends again: the run goes on, no pause."""
    world = world_of(reviewed())
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    from flume.core.observations import Activity, AgentStateSeen, PaneOutput  # noqa: PLC0415

    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    world.now += S.stall_seconds
    world.feed(Tick(at=world.instant()))
    assert len(world.reports_of(Event.NUDGED)) == 1
    world.now += S.stall_seconds / 2
    world.feed(
        PaneOutput(at=world.instant(), session=agent.session, last_output_at=world.instant())
    )
    world.now += S.stall_seconds / 2 + 1
    world.feed(Tick(at=world.instant()))
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Working)


def test_a_loop_last_in_the_body_pauses_at_max_and_resume_finishes() -> None:
    """A loop that ends the body, on_max pause: paused at its max; resumed, the place finishes."""
    review = Step(name=StageName("review"), prompt="Review.", deliverable=Verdict())
    kind = Kind(
        name=KindName("last"),
        prefix="last",
        body=Sequence(
            blocks=pvector(
                [
                    Loop(
                        name=BlockName("again"),
                        body=review,
                        until=StageName("review"),
                        max=1,
                        on_max=OnMax.PAUSE,
                    )
                ]
            )
        ),
    )
    world = world_of(kind)
    assert world.deliver()
    world.write_verdict("revise")
    world.end_turn()
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert (phase.cause, phase.finish) == (PauseCause.LOOP_MAX, True)
    world.feed(ResumeAsked(at=world.instant()))
    assert world.place.life is Life.FINISHED
    assert [r.text for r in world.reports_of(Event.FINISHED)] == ["last--x finished"]


def test_a_step_names_its_own_agent_and_model() -> None:
    """A step's own agent starts in its place: another agent with its model, or the model only."""
    world = world_of(_one(Commit(), agent=StepAgent(agent=AgentName.CODEX, model="o9")))
    (start,) = [a for a in world.actions if isinstance(a, StartAgent)]
    assert start.agent == AgentSettings(agent=AgentName.CODEX, model="o9")
    assert world.place is not None
    same = Step(
        name=StageName("only"),
        prompt="x",
        deliverable=Commit(),
        agent=StepAgent(agent=AgentName.CLAUDE, model="haiku"),
    )
    assert agent_for(world.place, same) == AgentSettings(model="haiku")
    plain = StepAgent(agent=AgentName.CLAUDE)
    assert agent_for(world.place, attrs.evolve(same, agent=plain)) == AgentSettings()


def test_the_walk_refuses_lanes_and_finds_any_step_s_first_run() -> None:
    """One lane cannot enter a Parallel; position_of finds a step in a loop, a lane, or nowhere."""
    a = Step(name=StageName("a"), prompt="a", deliverable=Commit())
    fan = Parallel(name=BlockName("fan"), branches=pvector([a]))
    with pytest.raises(NotImplementedError):
        first(fan)
    with pytest.raises(NotImplementedError):
        advance(fan, Position(step=StageName("a")), done=False)
    body = reviewed().body
    looped = Position(
        step=StageName("fix"), passes=(Pass(loop=BlockName("review-loop"), number=1),)
    )
    assert position_of(body, StageName("fix")) == looped
    assert position_of(fan, StageName("a")) == Position(step=StageName("a"))
    assert position_of(body, StageName("nowhere")) is None


def test_a_loop_is_found_by_name_and_an_unknown_one_is_a_key_error() -> None:
    """The core asks only for loops it took from the kind: any other name is a bug, said so."""
    from flume.core.kinds import loop_named  # noqa: PLC0415 (the one test of it)

    kind = reviewed()
    assert loop_named(kind, BlockName("review-loop")).max == 3
    with pytest.raises(KeyError, match="has no loop nowhere"):
        loop_named(kind, BlockName("nowhere"))
