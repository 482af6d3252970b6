"""Gates, budgets and the tree's walk, case by case: each reading a gate can get, each budget.

The machine of ``test_workflow_run.py`` holds the rules over random runs; these examples name
the cases one by one (and keep every branch of the workflow code covered by example tests).
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pvector

from flume.core.actions import Event, JudgeGate, Report, SendTell, StartAgent
from flume.core.choices import AgentName
from flume.core.errors import UsageError
from flume.core.ids import BlockName, Instant, KindName, SessionId, StageName
from flume.core.kinds import (
    Budgets,
    Commit,
    Kind,
    Loop,
    OnMax,
    Orchestrate,
    Parallel,
    PassingTests,
    Sequence,
    Step,
    StepAgent,
    Verdict,
)
from flume.core.launch import AgentSettings
from flume.core.observations import (
    Activity,
    AgentStateSeen,
    GateRead,
    PaneOutput,
    ResumeAsked,
    Tick,
    TurnEnded,
)
from flume.core.place import (
    Delivered,
    Judging,
    Life,
    PauseCause,
    Paused,
    Place,
    Question,
    Starting,
    Tell,
    TellSending,
    Working,
    evolve,
    open_question,
)
from flume.core.settings import Settings
from flume.core.stage import agent_for
from flume.core.status import status
from flume.core.step import pending, step
from flume.core.workflow.budget import Spent, budget_words
from flume.core.workflow.gates import judge
from flume.core.workflow.tree import (
    Advanced,
    LoopMax,
    Pass,
    Position,
    advance,
    first,
    position_of,
)
from tests.model.test_workflow_run import reviewed, through_plan, world_of
from tests.model.world import FakeWorld

S = Settings()


def _one(
    gate: object,
    budgets: Budgets | None = None,
    agent: StepAgent | None = None,
    *,
    sandbox: bool = False,
) -> Kind:
    only = Step(
        name=StageName("only"), prompt="Do $brief.", deliverable=gate, agent=agent, sandbox=sandbox
    )  # type: ignore[arg-type]
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
    assert judge(world.place, Commit(), blocked).reason == (  # type: ignore[union-attr]
        "the gate Commit is not read"
    )


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
    """Nudged, then a word from its hooks before the window ends again: the run goes on."""
    world = world_of(reviewed())
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    world.now += S.stall_seconds
    world.feed(Tick(at=world.instant()))
    assert len(world.reports_of(Event.NUDGED)) == 1
    world.now += S.stall_seconds / 2
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    world.now += S.stall_seconds / 2 + 1
    world.feed(Tick(at=world.instant()))
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Working)
    assert len(world.reports_of(Event.NUDGED)) == 1


def test_a_pane_that_keeps_moving_does_not_hide_a_stall() -> None:
    """A spinner renews the pane every second, the agent says nothing: nudged, then stalled.

    Claude Code waiting on a model that never answers: its pane moves, its transcript and
    hooks are still. The stall clock reads only what the agent says.
    """
    world = world_of(reviewed())
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    end = world.now + 2 * S.stall_seconds
    while world.now < end:
        world.now += 60
        world.feed(
            PaneOutput(at=world.instant(), session=agent.session, last_output_at=world.instant())
        )
        world.feed(Tick(at=world.instant()))
    assert len(world.reports_of(Event.NUDGED)) == 1
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.STALLED


@pytest.mark.parametrize(
    ("stall", "said"),
    [(20.0, "20 seconds"), (119.0, "119 seconds"), (120.0, "2 minutes"), (3600.0, "60 minutes")],
)
def test_a_short_stall_window_is_told_in_seconds(stall: float, said: str) -> None:
    """``[timing] stall = 20``: frozen at launch, the nudge comes at 20 s and says so.

    Below two minutes a window is said in seconds; from two minutes on, in minutes.
    """
    world = FakeWorld(settings=Settings(stall_seconds=stall), kind=reviewed())
    assert world.launch() is None
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    world.now += stall
    world.feed(Tick(at=world.instant()))
    (nudge,) = [a for a in world.actions if isinstance(a, SendTell)]
    assert f"flume has seen nothing from you for {said}." in nudge.text


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


def test_a_sandboxed_step_s_agent_is_started_sandboxed_and_others_are_not() -> None:
    """The seed's Step is "one sandboxed agent": a step's sandbox goes with its agent's start."""
    world = world_of(_one(Commit(), sandbox=True))
    (start,) = [a for a in world.actions if isinstance(a, StartAgent)]
    assert start.sandbox
    assert world.place is not None
    # A restart between the start's line and the agent's: the start asked again is sandboxed.
    starting = attrs.evolve(
        world.place,
        agent=None,
        stage=attrs.evolve(world.place.stage, phase=Starting(since=Instant(1))),
    )
    (restarted,) = [a for a in pending(starting) if isinstance(a, StartAgent)]
    assert restarted.sandbox
    plain = world_of(_one(Commit()))
    (start,) = [a for a in plain.actions if isinstance(a, StartAgent)]
    assert not start.sandbox


def test_the_walk_stands_at_a_parallel_and_finds_any_step_s_first_run() -> None:
    """A run enters a Parallel as one position, its lanes running its branches, and leaves it.

    position_of finds a step in a loop, a lane, a parallel by name, or nowhere.
    """
    a = Step(name=StageName("a"), prompt="a", deliverable=Commit())
    fan = Parallel(name=BlockName("fan"), branches=pvector([a]))
    assert first(fan) == Position(step=StageName("fan"))
    assert advance(fan, Position(step=StageName("fan")), done=False).position is None
    body = reviewed().body
    looped = Position(
        step=StageName("fix"), passes=(Pass(loop=BlockName("review-loop"), number=1),)
    )
    assert position_of(body, StageName("fix")) == looped
    assert position_of(fan, StageName("a")) == Position(step=StageName("a"))
    assert position_of(fan, StageName("fan")) == Position(step=StageName("fan"))
    assert position_of(body, StageName("nowhere")) is None


def test_a_parallel_or_an_orchestrate_lead_in_a_loop_is_found_in_the_loop_s_first_pass() -> None:
    """position_of and first find a parallel block and an orchestrate block's lead in a loop.

    Each stands in the loop's first pass, as a step does; a name the lead does not have is not
    found in an orchestrate block.
    """
    a = Step(name=StageName("a"), prompt="a", deliverable=Commit())
    fan = Parallel(name=BlockName("fan"), branches=pvector([a]))
    lead = Step(name=StageName("lead"), prompt="lead", deliverable=Commit())
    crew = Orchestrate(name=BlockName("crew"), lead=lead)
    loop = Loop(
        name=BlockName("again"),
        body=Sequence(blocks=pvector([fan, crew])),
        until=StageName("a"),
        max=2,
    )
    first_pass = (Pass(loop=BlockName("again"), number=1),)
    assert position_of(loop, StageName("fan")) == Position(step=StageName("fan"), passes=first_pass)
    assert position_of(loop, StageName("lead")) == Position(
        step=StageName("lead"), passes=first_pass
    )
    assert position_of(crew, StageName("lead")) == Position(step=StageName("lead"))
    assert first(loop) == Position(step=StageName("fan"), passes=first_pass)
    led = attrs.evolve(loop, body=crew)
    assert first(led) == Position(step=StageName("lead"), passes=first_pass)
    assert position_of(crew, StageName("crew")) is None


def test_a_loop_in_a_loop_goes_round_its_own_passes_and_its_max_is_said_as_the_outer_goes_on() -> (
    None
):
    """WF-LOOP-CAP in nested loops: the inner loop's passes are its own; maxed, it is reported.

    The outer loop then goes round again, its inner loop from its first pass.
    """
    review = Step(name=StageName("review"), prompt="Review.", deliverable=Verdict())
    inner = Loop(name=BlockName("inner"), body=review, until=StageName("review"), max=2)
    outer = Loop(name=BlockName("outer"), body=inner, until=StageName("review"), max=2)

    def at(outer_pass: int, inner_pass: int) -> Position:
        passes = (Pass(loop=BlockName("outer"), number=outer_pass),)
        return Position(
            step=StageName("review"),
            passes=(*passes, Pass(loop=BlockName("inner"), number=inner_pass)),
        )

    assert advance(outer, at(1, 1), done=False) == Advanced(position=at(1, 2))
    assert advance(outer, at(1, 2), done=False) == Advanced(
        position=at(2, 1), maxed=(LoopMax(loop=BlockName("inner"), passes=2, pause=False),)
    )


def test_a_loop_is_found_by_name_and_an_unknown_one_is_a_key_error() -> None:
    """The core asks only for loops it took from the kind: any other name is a bug, said so."""
    from flume.core.kinds import loop_named  # noqa: PLC0415 (the one test of it)

    kind = reviewed()
    assert loop_named(kind, BlockName("review-loop")).max == 3
    with pytest.raises(KeyError, match="has no loop nowhere"):
        loop_named(kind, BlockName("nowhere"))


def test_a_verdict_kind_launched_with_no_board_is_refused() -> None:
    """No blackboard: no verdict could be archived or read where told; the launch is refused."""
    from flume.core.observations import Launched  # noqa: PLC0415 (the one launch made by hand)

    world = FakeWorld(settings=S, kind=_one(Verdict()))
    assert world.launch() is None
    assert world.journal
    seen = world.journal[0]
    assert isinstance(seen, Launched)
    with pytest.raises(UsageError) as refusal:
        step(S, None, attrs.evolve(seen, board=""))
    assert refusal.value.exit_status == 2
    assert "names no blackboard" in str(refusal.value)


# --- the reviewer's cases (each once a fault) -------------------------------------------------


def test_a_gate_reading_that_fails_stops_the_stage_short_named() -> None:
    """JudgeGate failed (a tests script that cannot run): short, failed, its agent ended."""
    from flume.core.actions import ActionName, EndAgent  # noqa: PLC0415
    from flume.core.observations import ActionFailed  # noqa: PLC0415
    from flume.core.place import Short, ShortCause  # noqa: PLC0415

    world = world_of(_one(Verdict()))
    assert world.deliver()
    assert world.place is not None
    agent = world.live_agent()
    assert agent is not None
    judging = attrs.evolve(
        world.place.stage, phase=Judging(session=agent.session, since=Instant(1))
    )
    place = attrs.evolve(world.place, stage=judging)
    failed = ActionFailed(at=Instant(2), action=ActionName.JUDGE_GATE, output="exec format error")
    decided = step(S, place, failed)
    phase = decided.place.stage.phase
    assert isinstance(phase, Short)
    assert phase.cause is ShortCause.FAILED
    assert any(isinstance(a, EndAgent) for a in decided.actions)
    starting = attrs.evolve(
        world.place,
        agent=None,
        stage=attrs.evolve(world.place.stage, phase=Starting(since=Instant(1))),
    )
    archive = ActionFailed(at=Instant(2), action=ActionName.ARCHIVE_VERDICT, output="read-only")
    assert isinstance(step(S, starting, archive).place.stage.phase, Short)


def test_a_lost_re_prompt_or_an_unread_turn_end_is_judged_once_the_agent_waits() -> None:
    """No turn end read: the agent found waiting confirm_seconds is judged as at a turn's end."""
    world = world_of(_one(Verdict()))
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WAITING))
    world.now += S.confirm_seconds - 1
    world.feed(Tick(at=world.instant()))
    assert world.readings == []
    world.now += 1
    world.feed(Tick(at=world.instant()))
    assert [r.key for r in world.readings] == ["only"]
    # Told why; the tell never reaches the transcript (lost): judged again, then paused.
    for _ in range(4):
        world.now += S.confirm_seconds
        world.feed(Tick(at=world.instant()))
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.GATE_BLOCKED
    assert world.reports_of(Event.TELL_LOST)


def test_a_restart_before_the_start_archives_the_old_verdict_again() -> None:
    """Killed between the start's line and its archive: the restart moves the verdict first."""
    from flume.core.actions import ArchiveVerdict  # noqa: PLC0415

    world = world_of(_one(Verdict()))
    assert world.place is not None
    starting = attrs.evolve(
        world.place,
        agent=None,
        stage=attrs.evolve(world.place.stage, phase=Starting(since=Instant(1))),
    )
    assert [type(a) for a in pending(starting)] == [ArchiveVerdict, StartAgent]


def test_nothing_is_sent_once_a_budget_is_spent_even_the_first_prompt() -> None:
    """wall_minutes = 1 spent before the agent takes input: no prompt; the stage pauses."""
    from flume.core.actions import SendPrompt  # noqa: PLC0415
    from flume.core.observations import AgentReady  # noqa: PLC0415

    world = world_of(_one(Verdict(), Budgets(wall_minutes=1)))
    agent = world.live_agent()
    assert agent is not None
    world.now += 61
    world.feed(AgentReady(at=world.instant(), session=agent.session))
    assert [a for a in world.actions if isinstance(a, SendPrompt)] == []
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Paused)


def test_time_short_or_paused_is_not_active_and_a_retry_resumes_the_clock() -> None:
    """Needs, answered 8 h later by a retry: the 8 h do not count; a budget pause takes retry."""
    from flume.core.observations import NeedsSaid, RetryAsked  # noqa: PLC0415

    world = world_of(_one(Verdict(), Budgets(wall_minutes=60, turns=1)))
    assert world.deliver()
    world.now += 60
    world.feed(NeedsSaid(at=world.instant(), words="which file?"))
    world.now += 8 * 3600
    assert world.feed(RetryAsked(at=world.instant(), words="README.md")) is None
    assert world.place is not None
    assert world.place.spent.paused_seconds == 8 * 3600
    assert world.place.spent.paused_at is None
    assert not isinstance(world.place.stage.phase, Paused)
    assert world.deliver()
    world.end_turn()
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.spent == "turns"
    # A person's retry always gets its attempt, even past the budget (the decision).
    assert world.feed(RetryAsked(at=world.instant(), words="go on")) is None
    assert world.place.stage.attempt == 3


def test_a_resumed_attempt_is_nudged_afresh() -> None:
    """Stalled, resumed: the new attempt's silent agent is nudged before it is paused again."""
    world = world_of(reviewed())

    def silent() -> None:
        agent = world.live_agent()
        assert agent is not None
        world.feed(
            AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING)
        )
        world.now += S.stall_seconds
        world.feed(Tick(at=world.instant()))

    assert world.deliver()
    silent()
    silent()
    world.feed(ResumeAsked(at=world.instant()))
    assert world.deliver()
    silent()
    assert len(world.reports_of(Event.NUDGED)) == 2


def test_a_loop_s_max_before_a_stage_that_waits_on_the_word_waits_on_the_word() -> None:
    """on_max pause, and the next stage waits on the caller: it waits on the word, not twice."""
    from flume.core.place import AwaitingWord  # noqa: PLC0415

    world = FakeWorld(
        settings=S,
        kind=reviewed(most=1, on_max=OnMax.PAUSE),
        waits=frozenset({StageName("sign-off")}),
    )
    assert world.launch() is None
    through_plan(world)
    assert world.deliver()
    world.write_verdict("revise")
    world.end_turn()
    assert world.deliver()
    world.commit()
    world.end_turn()
    world.now += S.quiet_seconds + 1
    world.feed(Tick(at=world.instant()))
    assert world.place is not None
    assert world.place.stage.name == "sign-off"
    assert isinstance(world.place.stage.phase, AwaitingWord)
    assert len(world.reports_of(Event.LOOP_MAX)) == 1


def test_a_finished_workflow_whose_last_step_loops_says_its_deliverable_exists() -> None:
    """Its completed stages are keys: the last one's key is found among them."""
    review = Step(name=StageName("review"), prompt="Review.", deliverable=Verdict())
    loop = Loop(name=BlockName("again"), body=review, until=StageName("review"), max=2)
    kind = Kind(name=KindName("last"), prefix="last", body=Sequence(blocks=pvector([loop])))
    world = world_of(kind)
    assert world.deliver()
    world.write_verdict("done")
    world.end_turn()
    assert world.place is not None
    assert world.place.life is Life.FINISHED
    assert status(world.place).deliverable_exists


def test_a_workflow_commit_step_ends_with_its_turn_not_on_quiet() -> None:
    """The commit is seen, the turn ends: the step ends at once; a held tell waits for quiet."""
    world = world_of(_one(Commit(), Budgets(turns=10)))
    assert world.deliver()
    world.commit()
    world.end_turn()
    assert world.place is not None
    assert world.place.life is Life.FINISHED
    held = world_of(_one(Commit(), Budgets(turns=10)))
    assert held.deliver()
    held.commit()
    from flume.core.observations import Told  # noqa: PLC0415

    agent = held.live_agent()
    assert agent is not None
    held.feed(AgentStateSeen(at=held.instant(), session=agent.session, activity=Activity.WORKING))
    held.feed(Told(at=held.instant(), text="also the docs"))
    held.end_turn()
    assert held.place is not None
    assert held.place.life is Life.ACTIVE


def test_a_tell_typed_unread_when_the_agent_goes_silent_is_its_nudge() -> None:
    """WF-STALL-NUDGES-ONCE: silent mid-turn with a tell typed unread: that tell is its nudge.

    No second tell is typed (tells go one at a time); silent as long again, the run pauses.
    """
    world = world_of(reviewed())
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    place = world.place
    assert place is not None
    world.now += S.stall_seconds
    typed = Tell(number=place.tells_given + 1, text="Mind the tests.", asked_at=world.instant())
    place = evolve(
        place,
        sending=TellSending(tell=typed, sends=1, sent_at=world.instant()),
        tells_given=typed.number,
    )
    after = step(S, place, Tick(at=world.instant()))
    (nudged,) = [a for a in after.actions if isinstance(a, Report) and a.event is Event.NUDGED]
    assert f"tell {typed.number} typed to it unread; that is its nudge" in nudged.text
    assert not [a for a in after.actions if isinstance(a, SendTell)]
    assert after.place.stage.nudged_at == world.instant()


def test_an_agent_silent_at_work_before_its_prompt_is_found_pauses_stalled() -> None:
    """WF-NO-SILENT-WAIT: working before its prompt is found, silent twice the window: paused.

    Its prompt waits for it to wait, so it cannot be nudged; the pause names why.
    """
    world = world_of(reviewed())
    place = world.place
    assert place is not None
    agent = place.agent
    assert agent is not None
    assert not isinstance(place.stage.phase, Working)
    busy = evolve(place, agent=attrs.evolve(agent, activity=Activity.WORKING))
    at = Instant(float(max(agent.said_at, place.stage.started_at)) + 2 * S.stall_seconds)
    after = step(S, busy, Tick(at=at))
    phase = after.place.stage.phase
    assert isinstance(phase, Paused), phase
    assert phase.cause is PauseCause.STALLED
    assert "before its prompt was found" in phase.words
    early = step(S, busy, Tick(at=Instant(float(at) - 1)))
    assert not isinstance(early.place.stage.phase, Paused)


def _delivered_at_work() -> tuple[Place, Instant]:
    """A workflow step whose deliverable is seen while its agent still works, and since when."""
    world = world_of(reviewed())
    assert world.deliver()
    place = world.place
    assert place is not None
    agent = place.agent
    assert agent is not None
    since = max(agent.said_at, place.stage.started_at)
    delivered = evolve(
        place,
        agent=attrs.evolve(agent, activity=Activity.WORKING),
        stage=attrs.evolve(place.stage, phase=Delivered(at=since)),
    )
    return delivered, since


def test_an_agent_silent_after_its_deliverable_is_ended_only_after_a_whole_window() -> None:
    """R7 in a workflow: a deliverable seen, the agent silent less than the window: left be."""
    delivered, since = _delivered_at_work()
    soon = step(S, delivered, Tick(at=Instant(float(since) + S.stall_seconds - 1)))
    assert isinstance(soon.place.stage.phase, Delivered)
    assert soon.actions == ()
    late = step(S, delivered, Tick(at=Instant(float(since) + S.stall_seconds)))
    assert not isinstance(late.place.stage.phase, Delivered)


def _answered_held(place: Place, session: SessionId, at: Instant) -> Place:
    """The live agent asked q1 and a person answered; the answer is held until it waits."""
    answer = Tell(number=1, text="The answer to your question q1: yes", asked_at=at)
    asked = Question(
        id="q1",
        text="Which?",
        key=place.stage.key,
        attempt=1,
        session=session,
        asked_at=at,
        answer="yes",
        tell=1,
    )
    return evolve(place, questions=pvector([asked]), held=pvector([answer]), tells_given=1)


def test_a_hung_agent_whose_answer_is_held_is_still_nudged() -> None:
    """WF-NO-SILENT-WAIT: answered, the answer held until the agent waits, which it never does.

    Found by the machine over generated workflows: an open question stopped the stall clock
    even once answered, so a hung agent's run waited for ever, saying nothing.
    """
    world = world_of(reviewed())
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    place = world.place
    assert place is not None
    held = _answered_held(place, agent.session, world.instant())
    (asked,) = held.questions
    assert open_question(held) == asked
    after = step(S, held, Tick(at=Instant(float(world.instant()) + S.stall_seconds)))
    assert [a for a in after.actions if isinstance(a, Report) and a.event is Event.NUDGED]
    unanswered = evolve(held, questions=pvector([attrs.evolve(asked, answer=None, tell=None)]))
    later = step(S, unanswered, Tick(at=Instant(float(world.instant()) + S.stall_seconds)))
    assert later.actions == ()


def test_a_hung_agent_past_its_deliverable_whose_answer_is_held_is_ended() -> None:
    """WF-NO-SILENT-WAIT: delivered, then answered, the answer held: silent a window, ended.

    Found by the machine over generated workflows (the ``ci`` profile): an answered question
    whose answer the hung agent never takes deferred the end of a delivered step for ever.
    """
    delivered, since = _delivered_at_work()
    assert delivered.agent is not None
    held = _answered_held(delivered, delivered.agent.session, since)
    after = step(S, held, Tick(at=Instant(float(since) + S.stall_seconds)))
    assert not isinstance(after.place.stage.phase, Delivered)
