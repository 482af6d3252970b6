"""A run's budget figures, each function of ``flume.core.workflow.budget`` pinned alone.

The machines (``test_gates.py``, ``test_no_silent_wait.py``) check that a spent budget pauses
the run; these check the figures the pause rests on and the words a person reads: which budget
is spent first, active time with pauses taken out, a raise, and the spent-of lines.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flume.core.ids import Instant
from flume.core.kinds import Budgets
from flume.core.workflow.budget import (
    Spent,
    active_minutes,
    budget_words,
    caps,
    paused_from,
    raised,
    resumed_at,
    retries_left,
    spent_budget,
)

AT = Instant(600.0)


@pytest.mark.parametrize(
    ("budgets", "spent", "attempt_turns", "found"),
    [
        (Budgets(), Spent(turns=99, tokens=99), 99, None),
        (Budgets(turns=3), Spent(turns=2), 0, None),
        (Budgets(turns=3), Spent(turns=3), 0, "turns"),
        (Budgets(tokens=100), Spent(tokens=100), 0, "tokens"),
        (Budgets(tokens=100), Spent(tokens=99), 0, None),
        (Budgets(turns_per_attempt=2), Spent(turns=5), 1, None),
        (Budgets(turns_per_attempt=2), Spent(), 2, "turns_per_attempt"),
        (Budgets(wall_minutes=10), Spent(), 0, "wall_minutes"),
        (Budgets(wall_minutes=11), Spent(), 0, None),
        (Budgets(retries=0), Spent(retries=5), 0, None),
        (Budgets(turns=1, tokens=1), Spent(turns=1, tokens=1), 1, "turns and tokens"),
        (Budgets(turns=9, tokens=1), Spent(turns=1, tokens=1), 1, "tokens"),
        (
            Budgets(tokens=9, turns_per_attempt=1, wall_minutes=1),
            Spent(),
            1,
            "turns_per_attempt and wall_minutes",
        ),
    ],
)
def test_every_budget_spent_is_named_in_order_and_one_reached_is_spent(
    budgets: Budgets, spent: Spent, attempt_turns: int, found: str | None
) -> None:
    """A budget reached is spent; each spent is named: turns, tokens, per attempt, wall."""
    assert spent_budget(budgets, spent, attempt_turns, AT) == found


def test_active_time_leaves_out_ended_pauses_and_the_pause_in_force() -> None:
    """Minutes since the run began, less the pauses ended and the one in force, never below 0."""
    began = Spent(began_at=Instant(60.0))
    assert active_minutes(began, AT) == 9.0
    assert active_minutes(Spent(began_at=Instant(60.0), paused_seconds=120.0), AT) == 7.0
    pausing = Spent(began_at=Instant(60.0), paused_seconds=60.0, paused_at=Instant(480.0))
    assert active_minutes(pausing, AT) == 6.0
    # A clock read before the pause began (or the run began) counts no negative time.
    assert active_minutes(pausing, Instant(420.0)) == 5.0
    assert active_minutes(began, Instant(0.0)) == 0.0


@given(
    began=st.integers(0, 100),
    spans=st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100)), max_size=5),
    open_pause=st.none() | st.integers(0, 100),
    after=st.integers(0, 100),
)
def test_active_time_is_the_time_outside_every_pause(
    began: int, spans: list[tuple[int, int]], open_pause: int | None, after: int
) -> None:
    """Pausing and resuming in turn, active time is the time since the start outside pauses."""
    spent = Spent(began_at=Instant(float(began)))
    now = began
    paused = 0
    for active, idle in spans:
        now += active
        spent = paused_from(spent, Instant(float(now)))
        # A second pause while one is in force keeps the first one's start.
        assert paused_from(spent, Instant(float(now + idle + 1))) == spent
        now += idle
        paused += idle
        spent = resumed_at(spent, Instant(float(now)))
        assert resumed_at(spent, Instant(float(now + 1))) == spent
    if open_pause is not None:
        now += open_pause
        spent = paused_from(spent, Instant(float(now)))
    end = now + after
    counted = end - began - paused - (after if open_pause is not None else 0)
    assert active_minutes(spent, Instant(float(end))) == pytest.approx(counted / 60.0)


def test_a_resume_before_the_pause_began_adds_no_time() -> None:
    """A clock read earlier than the pause's start ends it with no paused time added."""
    spent = Spent(paused_seconds=30.0, paused_at=Instant(100.0))
    assert resumed_at(spent, Instant(90.0)) == Spent(paused_seconds=30.0)


def test_retries_last_while_fewer_were_told_than_the_budget() -> None:
    """No retries budget: always; else while the retries told are fewer than it."""
    assert retries_left(Budgets(), Spent(retries=100))
    assert retries_left(Budgets(retries=2), Spent(retries=1))
    assert not retries_left(Budgets(retries=2), Spent(retries=2))
    assert not retries_left(Budgets(retries=0), Spent())


def test_a_raise_adds_to_each_budget_set_and_leaves_one_not_set_unset() -> None:
    """``flume raise`` adds its amounts; a budget the kind does not set is not made by a raise."""
    budgets = Budgets(turns=3, tokens=100, retries=1)
    assert raised(budgets, turns=2, tokens=None, wall_minutes=30, retries=1) == Budgets(
        turns=5, tokens=100, retries=2
    )
    assert raised(budgets) == budgets


def test_the_budgets_are_said_spent_of_each_and_listed_for_raise() -> None:
    """The words name each budget set and unreported usage; the caps as flume raise names them."""
    budgets = Budgets(turns=4, tokens=1000, wall_minutes=30, retries=2, turns_per_attempt=3)
    spent = Spent(turns=3, tokens=640, retries=1, unreported=2, began_at=Instant(0.0))
    now = Instant(150.0)
    assert budget_words(budgets, spent, now) == (
        "turns 3 of 4, tokens 640 of 1000, wall minutes 2 of 30, retries 1 of 2, "
        "2 turns reported no usage (tokens not counted)"
    )
    assert caps(budgets, spent, 1, now) == [
        ("turns", 3, 4),
        ("tokens", 640, 1000),
        ("wall_minutes", 2, 30),
        ("retries", 1, 2),
        ("turns_per_attempt", 1, 3),
    ]
    # Without a tokens budget, usage not reported is not worth saying.
    assert budget_words(Budgets(turns=4), spent, now) == "turns 3 of 4"
    assert budget_words(Budgets(tokens=9), Spent(), now) == "tokens 0 of 9"
    assert caps(Budgets(), spent, 1, now) == []
