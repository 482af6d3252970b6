"""The gates' clocks at their edges (issue 25): a turn's end, the windows, a budget, a stall.

The clocks every machine reaches (``on_turn_ended``, ``judge_evidence``, ``judge_when_waiting``,
``pause_when_spent``, ``nudge_when_stalled`` and the stall clock's start) were pinned only where
a machine's run happened to land; the workflow mutation run found edges no example named. Each
example here steps the core at one edge (a window of exactly its seconds, one second short of
it, an agent doing anything but working or waiting) and compares what was decided whole: the
state the observation leaves, the tell typed, the report said.
"""

from __future__ import annotations

from pyrsistent import pvector

from flume.core.actions import Event, JudgeGate, Report, SendTell
from flume.core.ids import Instant, SessionId, StageName
from flume.core.kinds import Budgets, Commit, Verdict
from flume.core.observations import (
    Activity,
    AgentStateSeen,
    DropAsked,
    PaneOutput,
    Tick,
    TurnEnded,
    Usage,
)
from flume.core.place import (
    Judging,
    Life,
    PauseCause,
    Paused,
    Place,
    Question,
    Tell,
    TellSending,
    Working,
    evolve,
)
from flume.core.settings import Settings
from flume.core.step import Decision, step
from flume.core.tell import tell_marker
from flume.core.workflow.gates import stall_since
from tests.model.test_gates import _one
from tests.model.test_workflow_run import reviewed, world_of
from tests.model.world import FakeWorld, fix_world

S = Settings()


def _at_work(world: FakeWorld, activity: Activity = Activity.WORKING) -> SessionId:
    """The live agent takes its prompt, then says it does ``activity``; its session."""
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=activity))
    return agent.session


def _tick(place: Place | None, at: float) -> Decision:
    """The core's look at ``place`` at ``at``, nothing performed."""
    assert place is not None
    return step(S, place, Tick(at=Instant(at)))


def _reports(decision: Decision) -> list[Report]:
    """The reports a step decided."""
    return [action for action in decision.actions if isinstance(action, Report)]


# --- on_turn_ended ----------------------------------------------------------------------------


def test_a_turn_s_reported_usage_counts_its_tokens_and_no_turn_unreported() -> None:
    """WF-BUDGET-PAUSES: a turn whose model reported usage adds its tokens, none unreported."""
    world = world_of(_one(Verdict(), Budgets(tokens=1000)))
    session = _at_work(world)
    world.write_verdict("done", "all good")
    usage = Usage(input=3, output=4, cache_read=5, cache_creation=6)
    world.feed(AgentStateSeen(at=world.instant(), session=session, activity=Activity.WAITING))
    assert world.feed(TurnEnded(at=world.instant(), session=session, usage=usage)) is None
    assert world.place is not None
    spent = world.place.spent
    assert (spent.turns, spent.tokens, spent.unreported) == (1, 18, 0)


def test_a_turn_s_end_in_a_kind_of_stages_is_reported_and_judges_nothing() -> None:
    """A fix's stage is judged on its evidence, never at a turn's end: the end is only said."""
    world = fix_world(S)
    assert world.launch() is None
    session = _at_work(world, Activity.WAITING)
    place = world.place
    assert place is not None
    decision = step(S, place, TurnEnded(at=world.instant(), session=session, usage=None))
    said = Report(
        event=Event.TURN_ENDED, text="turn ended: usage not reported", stage=StageName("code")
    )
    assert decision.actions == (said,)
    assert decision.place.stage.phase == place.stage.phase
    assert isinstance(decision.place.stage.phase, Working)


# --- judge_evidence ---------------------------------------------------------------------------


def test_a_workflow_gate_s_reading_is_waited_for_past_the_evidence_window() -> None:
    """WF-DELIVERABLE-AT-TURN-END is the five deliverables': a verdict waits on its reading.

    The turn ended and the verdict file was asked for; its reading not yet back after
    ``quiet_seconds``, nothing is decided: the gate is not judged failed on time alone.
    """
    world = world_of(_one(Verdict()))
    session = _at_work(world, Activity.WAITING)
    assert world.record(TurnEnded(at=world.instant(), session=session, usage=None)) is None
    assert world.place is not None
    judging = world.place.stage.phase
    assert isinstance(judging, Judging)
    decision = _tick(world.place, world.now + 10 * S.quiet_seconds)
    assert decision.actions == ()
    assert decision.place.stage.phase == judging


def test_a_commit_gate_is_judged_failed_when_its_window_closes_not_a_second_before() -> None:
    """WF-DELIVERABLE-AT-TURN-END: a turn ended without a commit waits exactly ``quiet_seconds``.

    Judged at 100 s, the step is left be at 104 s; at 105 s the agent is told once, in words
    naming the gate.
    """
    world = world_of(_one(Commit(), Budgets(turns=10)))
    session = _at_work(world)
    world.now = 100.0
    world.feed(AgentStateSeen(at=world.instant(), session=session, activity=Activity.WAITING))
    assert world.feed(TurnEnded(at=world.instant(), session=session, usage=None)) is None
    assert world.place is not None
    assert world.place.stage.phase == Judging(session=session, since=Instant(100.0))
    early = _tick(world.place, 100.0 + S.quiet_seconds - 1)
    assert early.actions == ()
    assert early.place == evolve(world.place, now=Instant(100.0 + S.quiet_seconds - 1))
    due = _tick(world.place, 100.0 + S.quiet_seconds)
    reason = (
        "its gate is a new commit on the place's branch, and none was seen made since the step "
        "started"
    )
    assert _reports(due) == [
        Report(
            event=Event.GATE_FAILED,
            text=f"the gate of only (attempt 1) did not pass: {reason}; the agent is told once",
            stage=StageName("only"),
        )
    ]
    assert due.place.sending is not None
    told = f"The gate of your step did not pass: {reason}. Mend it, then end your turn."
    assert due.place.sending.tell.text == told


# --- judge_when_waiting -----------------------------------------------------------------------


def test_a_kind_of_stages_agent_long_found_waiting_is_not_judged_as_at_a_turn_s_end() -> None:
    """WF-NO-SILENT-WAIT reads a gate judged at a turn's end: a fix's stage waits on evidence."""
    world = fix_world(S)
    assert world.launch() is None
    _at_work(world, Activity.WAITING)
    decision = _tick(world.place, world.now + 10 * S.confirm_seconds)
    assert decision.actions == ()
    assert isinstance(decision.place.stage.phase, Working)


def test_an_agent_at_work_without_a_word_for_the_wait_window_is_not_judged() -> None:
    """Only an agent found waiting is judged by the wait clock: one working silently goes on.

    Silent mid-turn less than the stall window, it is neither judged nor nudged.
    """
    world = world_of(_one(Verdict()))
    _at_work(world)
    decision = _tick(world.place, world.now + S.stall_seconds - 1)
    assert decision.actions == ()
    assert isinstance(decision.place.stage.phase, Working)


def test_the_wait_clock_runs_from_the_pane_s_last_output() -> None:
    """An agent found waiting whose pane then showed output is judged a window after that output.

    Waiting since 0 s, its pane moving at 10 s: not read at 30 s, read at 40 s.
    """
    world = world_of(_one(Verdict()))
    session = _at_work(world, Activity.WAITING)
    world.now = 10.0
    world.feed(PaneOutput(at=world.instant(), session=session, last_output_at=world.instant()))
    early = _tick(world.place, S.confirm_seconds)
    assert early.actions == ()
    assert isinstance(early.place.stage.phase, Working)
    due = _tick(world.place, 10.0 + S.confirm_seconds)
    assert [type(action) for action in due.actions] == [JudgeGate]
    assert due.place.stage.phase == Judging(
        session=session, since=Instant(10.0 + S.confirm_seconds)
    )


# --- pause_when_spent -------------------------------------------------------------------------


def test_a_dropped_run_past_its_budget_is_not_paused() -> None:
    """WF-BUDGET-PAUSES is an active run's: one dropped mid-step never pauses on its minutes."""
    world = world_of(_one(Verdict(), Budgets(wall_minutes=1)))
    _at_work(world)
    place = world.place
    assert place is not None
    dropped = step(S, place, DropAsked(at=world.instant())).place
    assert dropped.life is Life.DROPPED
    decision = _tick(dropped, world.now + 3600)
    assert decision.actions == ()
    assert decision.place.stage == dropped.stage


def test_a_run_over_its_minutes_mid_step_pauses_for_a_new_attempt_naming_the_budget() -> None:
    """WF-BUDGET-PAUSES: past ``wall_minutes`` the agent is ended and the run pauses, said whole.

    The pause is for a new attempt (its agent was ended mid-step) on the budget it names.
    """
    world = world_of(_one(Verdict(), Budgets(wall_minutes=1)))
    session = _at_work(world)
    decision = _tick(world.place, 60.0)
    assert decision.place.stage.phase == Paused(
        cause=PauseCause.BUDGET, words="budget wall_minutes spent", again=True, spent="wall_minutes"
    )
    assert _reports(decision) == [
        Report(
            event=Event.PAUSED,
            text="one--x paused at only (budget): budget wall_minutes spent; "
            "flume raise one--x --wall +N",
            stage=StageName("only"),
        )
    ]
    assert decision.place.agent is not None
    assert decision.place.agent.session == session
    assert decision.place.agent.ending


# --- nudge_when_stalled, stall_since, _stalled_outside_a_turn ---------------------------------


def test_an_agent_asking_in_a_dialog_is_never_nudged_nor_paused_stalled() -> None:
    """WF-STALL-NUDGES-ONCE counts a working agent's silence: one in a dialog waits on a person."""
    world = world_of(reviewed())
    _at_work(world, Activity.ASKING)
    decision = _tick(world.place, world.now + 3 * S.stall_seconds)
    assert decision.actions == ()
    assert isinstance(decision.place.stage.phase, Working)
    assert decision.place.stage.nudged_at is None


def test_the_nudge_is_tell_one_typed_once_and_said_whole() -> None:
    """WF-STALL-NUDGES-ONCE: silent a whole window mid-turn, the agent is typed the next tell.

    The tell numbered after the last given, sent once at that instant, in flight; the nudge is
    said naming the attempt and the window.
    """
    world = world_of(reviewed())
    session = _at_work(world)
    place = world.place
    assert place is not None
    assert place.tells_given == 0
    at = Instant(world.now + S.stall_seconds)
    decision = _tick(place, at)
    nudge = Tell(
        number=1,
        text="flume has seen nothing from you for 10 minutes. Go on with your step; if you are "
        "stuck, say so with flume needs.",
        asked_at=at,
    )
    assert decision.place.sending == TellSending(tell=nudge, sends=1, sent_at=at)
    assert decision.place.tells_given == 1
    assert decision.place.stage.nudged_at == at
    marker = tell_marker(decision.place, 1)
    assert decision.actions == (
        Report(
            event=Event.NUDGED,
            text="the agent of plan (attempt 1) said nothing for 600s mid-turn; nudged once",
            stage=StageName("plan"),
        ),
        SendTell(
            session=session, number=1, send=1, marker=marker, text=f"{nudge.text}\n\n[{marker}]"
        ),
    )


def test_a_tell_typed_unread_taken_as_the_nudge_is_said_of_its_stage() -> None:
    """WF-STALL-NUDGES-ONCE: the tell in flight is the nudge; the report names its stage whole."""
    world = world_of(reviewed())
    _at_work(world)
    place = world.place
    assert place is not None
    typed = Tell(number=1, text="Mind the tests.", asked_at=world.instant())
    place = evolve(
        place, sending=TellSending(tell=typed, sends=1, sent_at=world.instant()), tells_given=1
    )
    decision = _tick(place, world.now + S.stall_seconds)
    assert decision.actions == (
        Report(
            event=Event.NUDGED,
            text="the agent of plan (attempt 1) said nothing for 600s mid-turn, tell 1 typed to "
            "it unread; that is its nudge",
            stage=StageName("plan"),
        ),
    )


def test_an_answer_held_restarts_the_stall_clock_from_when_it_was_given() -> None:
    """WF-ASK-DEFERS-GATE: silent since 0 s, answered at 300 s: nudged at 900 s, not at 600 s."""
    world = world_of(reviewed())
    session = _at_work(world)
    place = world.place
    assert place is not None
    answer = Tell(number=1, text="The answer to your question q1: yes", asked_at=Instant(300.0))
    asked = Question(
        id="q1",
        text="Which?",
        key=place.stage.key,
        attempt=1,
        session=session,
        asked_at=world.instant(),
        answer="yes",
        tell=1,
    )
    held = evolve(place, questions=pvector([asked]), held=pvector([answer]), tells_given=1)
    assert held.agent is not None
    assert stall_since(held, held.agent) == Instant(300.0)
    early = _tick(held, 300.0 + S.stall_seconds - 1)
    assert early.actions == ()
    due = _tick(held, 300.0 + S.stall_seconds)
    assert [report.event for report in _reports(due)] == [Event.NUDGED]


def test_an_agent_silent_before_its_prompt_is_found_pauses_two_windows_after_its_start() -> None:
    """WF-NO-SILENT-WAIT: launched at 1000 s, working unproven: paused at 2200 s, not before.

    The pause is for a new attempt, its words naming the two windows it waited.
    """
    world = FakeWorld(settings=S, kind=reviewed())
    world.now = 1000.0
    assert world.launch() is None
    place = world.place
    assert place is not None
    agent = place.agent
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    assert world.place is not None
    assert not isinstance(world.place.stage.phase, Working)
    early = _tick(world.place, 1000.0 + 2 * S.stall_seconds - 1)
    assert not isinstance(early.place.stage.phase, Paused)
    due = _tick(world.place, 1000.0 + 2 * S.stall_seconds)
    assert due.place.stage.phase == Paused(
        cause=PauseCause.STALLED,
        words="the agent worked 1200s saying nothing, before its prompt was found",
        again=True,
    )
