"""NEXT-DEADLINE: when time alone changes a place, and that no ``Tick`` before it does.

The supervisor keeps each place's deadline in a priority queue and looks at no place before its
own: a deadline said late would leave a rule unheard until the next observation. The machine
drives places of every kind (built-in, declared, a workflow with budgets and stalls) with
fitting observations and with ticks at, just before and between their deadlines; the examples
pin each threshold and the floating-point edge.
"""

from __future__ import annotations

import math

import attrs
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pyrsistent import pset, pvector

from flume.core.deadlines import _first, first_instant, thresholds
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, WorkName
from flume.core.kinds import Budgets, Commit
from flume.core.launch import Launch
from flume.core.observations import (
    Activity,
    AgentStateSeen,
    Launched,
    PaneOutput,
    Tick,
    Told,
)
from flume.core.place import (
    AwaitingInput,
    Delivered,
    Judging,
    Place,
    Question,
    Queued,
    Tell,
    TellSending,
    Working,
    evolve,
)
from flume.core.settings import Settings
from flume.core.step import next_deadline, step
from flume.core.workflow.gates import stall_since
from tests.model.test_landing import BLOCKED
from tests.model.test_rules import SESSION, S, made, run, started, submitting, working
from tests.model.test_ways_out import _kind, _launched, _step
from tests.model.test_workflow_run import reviewed
from tests.strategies import any_places, fitting, launched

BOARD = "/src/app/places/.flume/boards/x"
#: Short stall and confirmation windows, so the workflow's clocks run out within a few ticks.
QUICK = Settings(quiet_seconds=5, confirm_seconds=30, ready_seconds=60, stall_seconds=90)


def _changes(place: Place, at: float) -> bool:
    """A ``Tick`` at ``at`` calls for an action or changes the place beyond its clock."""
    decided = step(place.settings, place, Tick(at=Instant(at)))
    return bool(decided.actions) or evolve(decided.place, now=place.now) != place


def _holds_until_its_deadline(place: Place) -> None:
    """NEXT-DEADLINE's promise for one place: nothing before its deadline, a change at it."""
    due = next_deadline(place)
    if due is None:
        for later in (place.now, place.now + 1.0, place.now + 3600.0, place.now + 10.0**7):
            assert not _changes(place, later), later
        return
    assert due >= place.now
    assert _changes(place, due)
    before = math.nextafter(due, -math.inf)
    if before >= place.now:
        assert not _changes(place, before)
        assert not _changes(place, place.now)


# --- examples, one a threshold -------------------------------------------------------------------


def test_an_agent_slow_to_take_input_is_due_when_its_wait_runs_out() -> None:
    """R5: a started agent not yet taking input is due ``ready_seconds`` after its start."""
    place = run(made(), started(at=2.0)).place
    assert isinstance(place.stage.phase, AwaitingInput)
    assert next_deadline(place) == place.stage.phase.since + S.ready_seconds
    _holds_until_its_deadline(place)


def test_a_send_is_due_when_its_confirmation_window_closes() -> None:
    """R5: a prompt sent and not yet found is due ``confirm_seconds`` after the send."""
    place = step(
        S,
        run(made(), started(at=2.0)).place,
        AgentStateSeen(at=Instant(3.0), session=SESSION, activity=Activity.WAITING),
    ).place
    assert next_deadline(place) == Instant(3.0 + S.confirm_seconds)
    _holds_until_its_deadline(place)


def test_a_working_agent_of_a_fix_waits_on_nothing_but_what_it_does() -> None:
    """An agent at work on a fix's code stage: no instant of the clock's alone moves it."""
    place = working()
    assert isinstance(place.stage.phase, Working)
    assert next_deadline(place) is None
    _holds_until_its_deadline(place)


def test_a_delivered_stage_is_due_once_its_agent_is_quiet() -> None:
    """R7: delivered, the stage ends once the agent waited and its pane was still, both long."""
    place = step(
        S,
        working(),
        AgentStateSeen(at=Instant(11.0), session=SESSION, activity=Activity.WAITING),
    ).place
    shown = PaneOutput(at=Instant(12.0), session=SESSION, last_output_at=Instant(12))
    place = step(S, place, shown).place
    place = attrs.evolve(place, stage=attrs.evolve(place.stage, phase=Delivered(at=Instant(12))))
    assert next_deadline(place) == Instant(12.0 + S.quiet_seconds)
    _holds_until_its_deadline(place)


def test_a_tell_in_flight_is_due_when_its_window_closes() -> None:
    """R6: a tell sent and not found is sent again once ``confirm_seconds`` passed."""
    place = step(
        S,
        working(),
        AgentStateSeen(at=Instant(5.0), session=SESSION, activity=Activity.WAITING),
    ).place
    place = step(S, place, Told(at=Instant(6.0), text="one")).place
    assert place.sending is not None
    assert next_deadline(place) == Instant(6.0 + S.confirm_seconds)
    _holds_until_its_deadline(place)


def test_a_place_some_follow_up_would_still_move_is_due_now() -> None:
    """A place left where a follow-up still acts (made by hand here) is due at its own instant."""
    place = working()
    queued = evolve(
        place, agent=None, stage=attrs.evolve(place.stage, phase=Queued()), now=Instant(50.0)
    )
    assert next_deadline(queued) == Instant(50.0)


def test_a_blocked_landing_is_due_when_it_is_to_be_tried_again() -> None:
    """LAND-BASE-BLOCKED-WAITS: a landing the base blocked is due at its retry instant."""
    blocked = step(S, submitting(), BLOCKED).place
    assert blocked.land_retry_at == Instant(32)
    assert next_deadline(blocked) == Instant(32)
    _holds_until_its_deadline(blocked)


def test_a_wall_clock_budget_is_due_when_its_minutes_are_spent() -> None:
    """WF-BUDGET-PAUSES: a run's active minutes reach its wall-clock budget at one instant."""
    kind = reviewed(budgets=Budgets(wall_minutes=2))
    launch = Launch(
        repository="/src/app",
        kind=kind.name,
        name=WorkName("x"),
        brief="Mend it.",
        base=BranchName("main"),
    )
    seen = Launched(at=Instant(0.0), launch=launch, kind=kind, setup=pvector(), board=BOARD)
    place = step(QUICK, None, seen).place
    assert Instant(120.0) in set(thresholds(place))


def test_the_first_instant_is_the_rules_own_comparison_not_a_sum() -> None:
    """Floating point: ``since + span`` may be past the first instant that holds, or before it."""
    for since, span in ((0.1, 5.0), (1764547200.123456, 30.0), (0.0, 0.3), (2.5, 1e-300)):
        first = first_instant(since, span)
        assert first is not None
        assert first - since >= span
        assert math.nextafter(first, -math.inf) - since < span


def test_no_instant_is_first_for_an_endless_span() -> None:
    """A span of infinity (or one no finite clock reaches) has no first instant."""
    assert first_instant(0.0, math.inf) is None
    assert first_instant(1.7e308, 1.7e308) is None
    assert first_instant(0.0, -math.inf) is None


def test_a_search_for_an_instant_that_never_comes_ends() -> None:
    """A comparison no finite instant satisfies: the search gives up at infinity, no instant."""
    assert _first(lambda _t: False, 1.0) is None


def test_a_nudged_stall_is_due_a_stall_after_the_nudge() -> None:
    """WF-STALL-NUDGES-ONCE: nudged at 500, a silent agent is paused a stall's span later."""
    place = working()
    nudged = evolve(place, stage=attrs.evolve(place.stage, nudged_at=Instant(500.0)))
    assert Instant(500.0 + S.stall_seconds) in set(thresholds(nudged))


def test_an_endless_quiet_span_gives_no_instant() -> None:
    """A span of infinity (quiet never long enough) lists no instant for it, and no error."""
    place = working()
    endless = evolve(place, settings=attrs.evolve(place.settings, quiet_seconds=math.inf))
    assert all(math.isfinite(at) for at in thresholds(endless))


# --- properties ----------------------------------------------------------------------------------


@given(any_places())
def test_no_tick_before_any_places_deadline_changes_it(place: Place) -> None:
    """NEXT-DEADLINE over places in any combination of phase, agent, tells and evidence."""
    _holds_until_its_deadline(place)


@given(st.data())
def test_no_tick_between_now_and_the_deadline_changes_a_place(data: st.DataObject) -> None:
    """A ``Tick`` anywhere before the deadline (drawn) changes nothing."""
    place = data.draw(any_places())
    due = next_deadline(place)
    if due == place.now:
        return  # due at once: there is no instant before it to try
    end = due if due is not None else place.now + 10.0**6
    at = data.draw(st.floats(min_value=place.now, max_value=end, exclude_max=due is not None))
    assert not _changes(place, at)


class DeadlineMachine(RuleBasedStateMachine):
    """A place of any kind, fed what fits it and ticked at, before and between its deadlines."""

    @initialize(
        seen=launched(),
        workflow=st.booleans(),
        budgets=st.builds(
            Budgets,
            turns=st.none() | st.integers(1, 4),
            wall_minutes=st.none() | st.integers(1, 3),
            turns_per_attempt=st.none() | st.integers(1, 2),
        ),
    )
    def launch(self, seen: Launched, *, workflow: bool, budgets: Budgets) -> None:
        """Launch a kind drawn, or a workflow that plans, loops a review, and asks approval."""
        if workflow:
            kind = reviewed(budgets=budgets)
            seen = attrs.evolve(
                seen,
                kind=kind,
                launch=attrs.evolve(seen.launch, kind=kind.name, waits=pset()),
                settings=QUICK,
                board=BOARD,
            )
        self.place = step(QUICK, None, seen).place

    @rule(data=st.data())
    def something_fitting_is_seen(self, data: st.DataObject) -> None:
        """An observation that fits the place: its agent's, its branch's, its stage's."""
        seen = data.draw(fitting(self.place))
        try:
            self.place = step(QUICK, self.place, seen).place
        except UsageError:
            return

    @rule()
    def the_deadline_comes(self) -> None:
        """The clock reaches the place's deadline: the ``Tick`` changes it, as it was said to."""
        due = next_deadline(self.place)
        if due is None:
            return
        decided = step(QUICK, self.place, Tick(at=due))
        assert decided.actions or evolve(decided.place, now=self.place.now) != self.place
        self.place = decided.place

    @rule(fraction=st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
    def the_clock_moves_short_of_the_deadline(self, fraction: float) -> None:
        """A ``Tick`` short of the deadline changes nothing (the place keeps all but its clock)."""
        due = next_deadline(self.place)
        end = due if due is not None else self.place.now + 7200.0
        at = Instant(min(self.place.now + fraction * (end - self.place.now), end))
        if at == due:
            return
        decided = step(QUICK, self.place, Tick(at=at))
        assert not decided.actions
        assert evolve(decided.place, now=self.place.now) == self.place

    @invariant()
    def no_tick_before_the_deadline_changes_the_place(self) -> None:
        """NEXT-DEADLINE: no ``Tick`` before the place's deadline changes it; one at it does.

        None: no instant of the clock's alone will change it, whatever its distance.
        """
        _holds_until_its_deadline(self.place)


TestDeadlines = DeadlineMachine.TestCase


def test_a_gate_judged_at_the_turn_s_end_is_due_when_its_evidence_window_closes() -> None:
    """WF-DELIVERED-PASSES: a commit gate judging at a turn's end waits ``quiet_seconds``."""
    world = _launched(_kind(_step("build", Commit())))
    world.end_turn()
    place = world.place
    assert place is not None
    phase = place.stage.phase
    assert isinstance(phase, Judging), phase
    assert next_deadline(place) == phase.since + S.quiet_seconds
    _holds_until_its_deadline(place)


def test_an_open_question_and_an_answer_in_flight_move_the_deadlines_they_touch() -> None:
    """An unanswered question's window is listed; an answer sent, unread, restarts the stall."""
    world = _launched(_kind(_step("build", Commit())))
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    place = world.place
    assert place is not None
    live = place.agent
    assert live is not None
    asked = Question(
        id="q1",
        text="Which?",
        key=place.stage.key,
        attempt=1,
        session=live.session,
        asked_at=world.instant(),
    )
    unanswered = evolve(place, questions=pvector([asked]))
    assert asked.asked_at + S.stall_seconds in set(thresholds(unanswered))
    _holds_until_its_deadline(unanswered)
    later = Instant(float(world.instant()) + 100)
    answer = Tell(number=1, text="The answer to your question q1: yes", asked_at=later)
    sent = evolve(
        unanswered,
        now=later,
        questions=pvector([attrs.evolve(asked, answer="yes", tell=1)]),
        sending=TellSending(tell=answer, sends=1, sent_at=later),
        tells_given=1,
    )
    assert stall_since(sent, live) == later
    _holds_until_its_deadline(sent)
