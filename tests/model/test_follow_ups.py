"""The follow-ups' order (``step.FOLLOW_UPS``): what one step finishes, deterministic, one by one.

Each test pins one reason the order gives in ``flume/core/step.py``; swapping the two follow-ups
it names leaves the work to the next observation, and the test fails.
"""

from __future__ import annotations

from flume.core.actions import Event, Report, SendTell, StartAgent
from flume.core.ids import BranchName, Instant, Sha
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentStateSeen,
    BranchHead,
    Tick,
    Told,
)
from flume.core.place import Delivered, Starting
from flume.core.step import step
from tests.model.test_rules import SESSION, S, working

BRANCH = BranchName("fix/typo")


def _events(actions: tuple[object, ...]) -> list[Event]:
    return [action.event for action in actions if isinstance(action, Report)]


def test_a_deliverable_from_a_quiet_agent_ends_its_stage_in_the_step_that_saw_it() -> None:
    """``check_deliverable`` before ``end_when_quiet``: the commit, then the stage's end."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.WAITING)
    ).place
    place = step(S, place, Tick(at=Instant(20))).place
    assert place.stage.name == "code"
    decided = step(S, place, BranchHead(at=Instant(21), branch=BRANCH, sha=Sha("c" * 40)))
    assert _events(decided.actions)[:2] == [Event.DELIVERABLE, Event.STAGE_ENDED]
    assert decided.place.stage.name == "submit"


def test_a_stage_whose_agent_is_gone_ends_and_the_next_starts_in_one_step() -> None:
    """``end_when_quiet`` before ``start_when_free``: no agent to wait for, the next one starts."""
    place = step(S, working(), BranchHead(at=Instant(5), branch=BRANCH, sha=Sha("c" * 40))).place
    assert isinstance(place.stage.phase, Delivered)
    decided = step(S, place, AgentExited(at=Instant(6), session=SESSION))
    assert Event.STAGE_ENDED in _events(decided.actions)
    assert [action.stage for action in decided.actions if isinstance(action, StartAgent)] == [
        "submit"
    ]
    assert isinstance(decided.place.stage.phase, Starting)


def test_a_lost_tell_makes_way_for_the_next_held_one_in_one_step() -> None:
    """``check_deadline`` before ``flush``: tell 1 found lost, tell 2 is sent in that step."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.WAITING)
    ).place
    place = step(S, place, Told(at=Instant(6), text="one")).place
    place = step(S, place, Told(at=Instant(7), text="two")).place
    place = step(S, place, Tick(at=Instant(40))).place
    assert place.sending is not None
    assert place.sending.sends == 2
    decided = step(S, place, Tick(at=Instant(80)))
    assert Event.TELL_LOST in _events(decided.actions)
    sent = [(a.number, a.send) for a in decided.actions if isinstance(a, SendTell)]
    assert sent == [(2, 1)]
