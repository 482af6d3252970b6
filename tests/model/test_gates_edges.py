"""The gates' edges the workflow mutation run found unpinned (issue 25), one example each.

``tests/model/world.py`` checks two properties at every step of every world these examples
(and the machines) drive: each report of a stage names it, and an active run's clock of active
time is stopped while, and only while, it waits on a person. The examples here reach paths no
other example reached (a step that never began, a deliverable seen after its attempt paused, a
raise, a resume, an approval before another step) and pin the words and state each leaves.
"""

from __future__ import annotations

import attrs
from pyrsistent import pvector

from flume.core.actions import Event, JudgeGate, SendPrompt, SendTell
from flume.core.ids import Instant, KindName, PlaceName, StageName
from flume.core.kinds import (
    Approval,
    Budgets,
    Commit,
    Kind,
    Landing,
    PassingTests,
    Sequence,
    Step,
    Verdict,
)
from flume.core.observations import (
    Activity,
    AgentReady,
    AgentStateSeen,
    ApproveAsked,
    BudgetRaised,
    GateRead,
    ResumeAsked,
    RetryAsked,
    Tick,
    TurnEnded,
)
from flume.core.place import (
    JoinStage,
    Judging,
    Life,
    PauseCause,
    Paused,
    Queued,
    Short,
    ShortCause,
    Submission,
    Tell,
    evolve,
)
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import Decision, step
from flume.core.workflow.budget import active_minutes
from flume.core.workflow.gates import judge_gate, judged_here
from tests.model.test_gates import _one
from tests.model.test_orchestrate import crew, spawn
from tests.model.test_orchestrate import world_of as crew_world
from tests.model.test_workflow_run import S, review, reviewed, through_plan, world_of


def test_a_step_that_never_began_stops_the_clock_until_its_retry() -> None:
    """WF-BUDGET-PAUSES: an hour waiting on a retry after a prompt never began is no active time.

    The agent takes input but its transcript never shows the prompt, sent twice: the step stops
    short, waiting on a person, as a pause does; retried an hour later, the run has been active
    the minute of its two sends, not 61, and goes on under its ten-minute budget.
    """
    world = world_of(_one(Verdict(), Budgets(wall_minutes=10)))
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentReady(at=world.instant(), session=agent.session))
    for _ in range(2):
        world.now += S.confirm_seconds
        world.feed(Tick(at=world.instant()))
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Short)
    assert phase.cause is ShortCause.NEVER_BEGAN
    world.now += 3600
    assert active_minutes(world.place.spent, world.instant()) == 2 * S.confirm_seconds / 60
    assert world.feed(RetryAsked(at=world.instant())) is None
    world.feed(Tick(at=world.instant()))
    assert not isinstance(world.place.stage.phase, Paused)
    assert status(world.place).budgets == "wall minutes 1 of 10"


def test_a_raise_of_the_wall_clock_budget_spent_resumes_the_run() -> None:
    """WF-BUDGET-RAISE-RESUMES: paused on wall_minutes, a raise of it (and others) lets it go on.

    A raise of budgets the kind sets none of is refused first, naming them all.
    """
    world = world_of(_one(Verdict(), Budgets(wall_minutes=1, retries=1, turns_per_attempt=5)))
    assert world.deliver()
    world.now += 61
    world.feed(Tick(at=world.instant()))
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.spent == "wall_minutes"
    needless = world.feed(BudgetRaised(at=world.instant(), turns=5, tokens=9))
    assert needless is not None
    assert needless.problems[0].what == (
        "one--x sets no turns or tokens budget to raise; it is paused at only: budget "
        "wall_minutes spent"
    )
    raised = BudgetRaised(at=world.instant(), wall_minutes=5, retries=2, turns_per_attempt=3)
    assert world.feed(raised) is None
    assert [r.text for r in world.reports_of(Event.RESUMED)] == [
        "one--x resumed at only: budgets raised (wall minutes 1 of 6, retries 0 of 3)"
    ]
    assert world.place.budgets == Budgets(wall_minutes=6, retries=3, turns_per_attempt=8)
    assert not isinstance(world.place.stage.phase, Paused)


def test_a_commit_seen_after_its_attempt_paused_stalled_passes_it_and_restarts_the_clock() -> None:
    """WF-DELIVERED-PASSES: the commit of a stalled attempt, seen late, passes its step, said so.

    The hour the run stood paused is no active time: the clock runs again from the pass.
    """
    world = world_of(_one(Commit(), Budgets(wall_minutes=600)))
    assert world.deliver()
    world.now += 2 * S.stall_seconds + 1
    world.feed(Tick(at=world.instant()))
    world.now += S.stall_seconds + 1
    world.feed(Tick(at=world.instant()))
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.STALLED
    paused_at = world.now
    world.now += 3600
    assert world.commit() is None
    world.feed(Tick(at=world.instant()))
    said = "one--x goes on past only: the deliverable of attempt 1 was seen after it paused"
    resumed = [(r.text, r.stage) for r in world.reports_of(Event.RESUMED)]
    assert resumed == [(f"{said} (stalled)", "only")]
    passed = [(r.text, r.stage) for r in world.reports_of(Event.GATE_PASSED)]
    assert passed == [("the gate of only passed", "only")]
    assert world.place.spent.paused_seconds == world.now - paused_at


def test_a_failed_gate_is_told_once_numbered_and_a_resumed_attempt_starts_afresh() -> None:
    """WF-GATE-REPROMPT-ONCE: the first failure is told (tell 1, a retry spent), said whole.

    The second pauses the run gate-blocked; resumed, attempt 2 carries nothing of attempt 1's:
    no tell awaited, no reading, no turns, and its prompt is sent as send 1 of its own.
    """
    world = world_of(_one(Verdict()))
    assert world.deliver()
    world.end_turn()
    assert world.place is not None
    why = f"no verdict was written at {world.place.board}/only/verdict.json"
    said = f"the gate of only (attempt 1) did not pass: {why}; the agent is told once"
    assert [(r.text, r.stage) for r in world.reports_of(Event.GATE_FAILED)] == [(said, "only")]
    assert (world.place.tells_given, world.place.stage.retold) == (1, 1)
    assert [t.number for t in world.actions if isinstance(t, SendTell)] == [1]
    assert world.place.spent.retries == 1
    assert world.deliver()
    world.end_turn()
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.GATE_BLOCKED
    # Resumed before its agent's end is seen, the attempt waits queued: its turns are none yet.
    ending = next(d.place for _, _, d in world.steps if isinstance(d.place.stage.phase, Paused))
    assert ending.agent is not None
    queued = step(S, ending, ResumeAsked(at=world.instant())).place.stage
    assert (type(queued.phase), queued.attempt, queued.turns) == (Queued, 2, 0)
    assert world.feed(ResumeAsked(at=world.instant())) is None
    resumed = [(r.text, r.stage) for r in world.reports_of(Event.RESUMED)]
    assert resumed == [("one--x resumed at only: resumed by a person", "only")]
    run = world.place.stage
    assert run.attempt == 2
    assert (run.retold, run.judged_at, run.turns, run.sends, run.reprompted) == (
        None,
        None,
        0,
        0,
        False,
    )
    assert world.deliver()
    prompts = [a for a in world.actions if isinstance(a, SendPrompt)]
    assert (prompts[-1].attempt, prompts[-1].send) == (2, 1)


def test_a_retry_s_words_go_to_its_attempt_alone_not_to_one_resumed_after() -> None:
    """R9: a retry's words are in its attempt's prompt; one resumed after has the first prompt."""
    world = world_of(_one(Verdict()))

    def blocked() -> None:
        """The attempt's agent writes no verdict, twice: the run pauses gate-blocked."""
        for _ in range(2):
            assert world.deliver()
            world.end_turn()
        assert world.place is not None
        assert isinstance(world.place.stage.phase, Paused)

    blocked()
    assert world.feed(RetryAsked(at=world.instant(), words="Mind the cache.")) is None
    blocked()
    assert world.feed(ResumeAsked(at=world.instant())) is None
    assert world.deliver()
    prompts = {
        a.attempt: a.text for a in world.actions if isinstance(a, SendPrompt) and a.send == 1
    }
    assert sorted(prompts) == [1, 2, 3]
    assert ["Mind the cache." in prompts[n] for n in (1, 2, 3)] == [False, True, False]
    assert prompts[3] == prompts[1].replace("only:1]", "only:3]")


def test_an_approval_restarts_the_clock_for_the_step_after() -> None:
    """WF-BUDGET-PAUSES: the hour a step waited on its approval is no active time after it."""
    sign = Step(name=StageName("sign"), prompt="Say what you will do.", deliverable=Approval())
    code = Step(name=StageName("code"), prompt="Do it.", deliverable=Commit())
    kind = Kind(
        name=KindName("two"),
        prefix="two",
        body=Sequence(blocks=pvector([sign, code])),
        budgets=Budgets(wall_minutes=30),
    )
    world = world_of(kind)
    assert world.deliver()
    world.end_turn()
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Paused)
    waited = world.now
    world.now += 3600
    assert world.feed(ApproveAsked(at=world.instant())) is None
    assert world.place.stage.name == "code"
    assert world.place.spent.paused_seconds == world.now - waited
    assert status(world.place).budgets == "wall minutes 0 of 30"


def test_a_tests_gate_is_read_by_running_the_commands_frozen_at_launch() -> None:
    """The reading asked of a tests gate carries the tests and deadline frozen at launch."""
    world = world_of(_one(PassingTests()))
    assert world.place is not None
    tests = pvector([pvector(["pytest", "-q"])])
    place = evolve(world.place, tests=tests, settings=Settings(tests_seconds=42.0))
    asked = judge_gate(place)
    assert (asked.gate, asked.tests, asked.deadline) == (PassingTests(), tests, 42.0)


def test_a_raise_while_an_orchestrate_block_merges_keeps_the_merge_awaited() -> None:
    """A lead paused on its budget mid-merge, raised, still awaits that merge: the join stays.

    Only a merge git refused (merge-failed) opens the join again on a resume.
    """
    world = crew_world(crew(most=1, budgets=Budgets(wall_minutes=1)))
    assert spawn(world) is None
    assert world.place is not None
    merging = evolve(world.place, join=JoinStage.MERGING, merging=pvector(["coder-1"]))
    paused = step(S, merging, Tick(at=Instant(merging.now + 61))).place
    phase = paused.stage.phase
    assert isinstance(phase, Paused)
    assert (phase.cause, paused.join) == (PauseCause.BUDGET, JoinStage.MERGING)
    raised = step(S, paused, BudgetRaised(at=Instant(paused.now + 1), wall_minutes=5)).place
    assert raised.join is JoinStage.MERGING


def test_a_person_s_tell_held_at_a_turn_s_end_does_not_keep_the_gate_unread() -> None:
    """WF-GATE-REPROMPT-ONCE: only the tell saying why the gate failed, still held, defers it.

    The agent took that tell (1); a person's tell (2) held when its next turn ends is no reason
    to leave the gate unread.
    """
    world = world_of(_one(Verdict()))
    assert world.deliver()
    world.end_turn()
    assert world.deliver()
    assert world.place is not None
    agent = world.live_agent()
    assert agent is not None
    assert (world.place.stage.retold, world.place.held) == (1, pvector())
    told = Tell(number=2, text="Mind the cache.", asked_at=world.instant())
    place = evolve(world.place, held=pvector([told]), tells_given=2)
    ended = step(S, place, TurnEnded(at=world.instant(), session=agent.session))
    assert [a.key for a in ended.actions if isinstance(a, JudgeGate)] == ["only"]


def test_an_agent_found_waiting_is_judged_again_only_a_window_after_its_gate_was_last_read() -> (
    None
):
    """WF-NO-SILENT-WAIT: waiting since before its gate was read, the agent's wait counts from then.

    Its hooks said it waits at 100 s, its turn's end was read at 105 s and the gate failed: with
    nothing held or in flight, it is judged again once found waiting ``confirm_seconds`` since
    105 s, not since 100 s.
    """
    world = world_of(_one(Verdict()))
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.now = 100.0
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WAITING))
    world.now = 105.0
    world.feed(TurnEnded(at=world.instant(), session=agent.session))
    assert world.place is not None
    assert world.place.stage.judged_at == Instant(105.0)
    quiet = evolve(world.place, held=pvector(), sending=None)
    early = step(S, quiet, Tick(at=Instant(100.0 + S.confirm_seconds)))
    assert not [a for a in early.actions if isinstance(a, JudgeGate)]
    due = step(S, quiet, Tick(at=Instant(105.0 + S.confirm_seconds)))
    assert [a.attempt for a in due.actions if isinstance(a, JudgeGate)] == [1]


def test_a_verdict_read_is_kept_by_its_attempt_and_a_reading_of_another_attempt_is_not() -> None:
    """WF-VERDICT-SINCE-DELIVERY: each verdict read is kept as its attempt's, named for a file.

    The review's verdict in the loop's first pass is ``review-loop@1--review#1``, said with the
    gate's pass; the plan's artifact and a tests gate's run are no verdicts; a reading for
    another attempt of the step judged, come while this one is, changes nothing.
    """
    world = world_of(reviewed())
    through_plan(world)
    review(world, "revise")
    assert world.place is not None
    assert dict(world.place.verdicts) == {"review": "review-loop@1--review#1"}
    assert [r.text for r in world.reports_of(Event.GATE_PASSED)] == [
        "the gate of plan passed",
        "the gate of review-loop@1/review passed (verdict: revise)",
    ]
    judging = next(d.place for _, _, d in world.steps if isinstance(d.place.stage.phase, Judging))
    other = GateRead(
        at=judging.now, key=judging.stage.key, attempt=judging.stage.attempt + 1, found=True
    )
    assert step(S, judging, other) == Decision(place=judging, actions=())
    tests = world_of(_one(PassingTests()))
    assert tests.deliver()
    tests.end_turn()
    assert tests.place is not None
    assert tests.place.life is Life.FINISHED
    assert dict(tests.place.verdicts) == {}


def test_a_workflow_s_landing_step_is_judged_at_its_turn_s_end_only_while_not_landing() -> None:
    """WF-DELIVERABLE-AT-TURN-END: a landing step's gate is read at a turn's end, unless in flight.

    Before a submission (or after its checks failed) the turn's end reads it; submitted, the
    lander carries it out and its word, not the turn's end, ends the step.
    """
    world = world_of(_one(Landing()))
    assert world.place is not None
    # A lane of a run: a block of its workflow, whatever its one step.
    lane = evolve(world.place, launch=attrs.evolve(world.place.launch, parent=PlaceName("run")))
    said = {
        submission: judged_here(evolve(lane, submission=submission)) for submission in Submission
    }
    assert said == {
        submission: submission in {Submission.NONE, Submission.CHECKS_FAILED}
        for submission in Submission
    }
