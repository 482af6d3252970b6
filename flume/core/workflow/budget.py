"""A run's budgets: what it has spent, and whether a budget is spent (WF-BUDGET-PAUSES).

Theory of operation: a kind declares its budgets (:class:`flume.core.kinds.Budgets`), frozen in
the launch; a person raises them in place (``flume raise``). What the run spent is counted from
its journal alone: the turns its agents ended and the tokens their models reported
(``TurnEnded``), the times an agent was told why its gate did not pass (retries), and the
minutes it was active, from its launch, paused time excluded. A budget is spent when the count
reaches it: the rules then start no agent and send nothing, and the run pauses; it is never
failed or dropped. None: no such budget.
"""

from __future__ import annotations

import attrs

from flume.core.ids import Instant
from flume.core.kinds import Budgets

_NONE = Budgets()


@attrs.frozen(kw_only=True)
class Spent:
    """What a run has spent of its budgets."""

    turns: int = 0
    tokens: int = 0
    #: The times an agent was told why its gate did not pass.
    retries: int = 0
    #: Turns whose model reported no usage: a tokens budget cannot count them.
    unreported: int = 0
    #: When the run began: its active time counts from here.
    began_at: Instant = attrs.field(default=Instant(0.0))
    #: Time paused, ended pauses only.
    paused_seconds: float = 0.0
    #: When the pause now in force began; None: not paused.
    paused_at: Instant | None = None


def active_minutes(spent: Spent, now: Instant) -> float:
    """Minutes the run was active up to ``now``: since it began, paused time excluded."""
    paused = spent.paused_seconds
    if spent.paused_at is not None:
        paused += max(0.0, now - spent.paused_at)
    return max(0.0, now - spent.began_at - paused) / 60.0


def spent_budget(budgets: Budgets, spent: Spent, attempt_turns: int, now: Instant) -> str | None:
    """The budgets the run has spent, by name (``turns and tokens``); None while each has some.

    ``attempt_turns``: the turns the current attempt's agent ended. Every budget spent is
    named, so that the pause's way out raises them all at once (WF-PAUSE-HAS-A-WAY-OUT): a
    raise of the first alone would pause the run again at once on the next.
    """
    if budgets == _NONE:
        return None
    checks = (
        ("turns", budgets.turns, spent.turns),
        ("tokens", budgets.tokens, spent.tokens),
        ("turns_per_attempt", budgets.turns_per_attempt, attempt_turns),
        ("wall_minutes", budgets.wall_minutes, active_minutes(spent, now)),
    )
    names = [name for name, limit, used in checks if limit is not None and used >= limit]
    return " and ".join(names) or None


def retries_left(budgets: Budgets, spent: Spent) -> bool:
    """The run may tell an agent once more why its gate did not pass."""
    return budgets.retries is None or spent.retries < budgets.retries


def raised(budgets: Budgets, **more: int | None) -> Budgets:
    """``budgets`` with each named budget raised by its amount; a budget not set stays unset."""
    changes: dict[str, int] = {}
    for name, amount in more.items():
        current = getattr(budgets, name)
        if amount is not None and current is not None:
            changes[name] = current + amount
    return attrs.evolve(budgets, **changes)


def paused_from(spent: Spent, now: Instant) -> Spent:
    """The run paused (or stopped short) at ``now``; a pause already in force keeps its start."""
    if spent.paused_at is not None:
        return spent
    return attrs.evolve(spent, paused_at=now)


def resumed_at(spent: Spent, now: Instant) -> Spent:
    """The pause in force ended at ``now``; its time is excluded from the active time."""
    if spent.paused_at is None:
        return spent
    paused = spent.paused_seconds + max(0.0, now - spent.paused_at)
    return attrs.evolve(spent, paused_seconds=paused, paused_at=None)


def budget_words(budgets: Budgets, spent: Spent, now: Instant) -> str:
    """Each budget set, spent of it and left, in words (``turns 3 of 3``)."""
    parts = []
    for name, limit, used in (
        ("turns", budgets.turns, spent.turns),
        ("tokens", budgets.tokens, spent.tokens),
        ("wall minutes", budgets.wall_minutes, int(active_minutes(spent, now))),
        ("retries", budgets.retries, spent.retries),
    ):
        if limit is not None:
            parts.append(f"{name} {used} of {limit}")
    if budgets.tokens is not None and spent.unreported:
        parts.append(f"{spent.unreported} turns reported no usage (tokens not counted)")
    return ", ".join(parts)


def caps(
    budgets: Budgets, spent: Spent, attempt_turns: int, now: Instant
) -> list[tuple[str, int, int]]:
    """Each budget the run sets: its name (as ``flume raise`` names it), what was spent, its cap.

    ``attempt_turns``: the turns the current attempt's agent ended (``turns_per_attempt``).
    """
    every = (
        ("turns", budgets.turns, spent.turns),
        ("tokens", budgets.tokens, spent.tokens),
        ("wall_minutes", budgets.wall_minutes, int(active_minutes(spent, now))),
        ("retries", budgets.retries, spent.retries),
        ("turns_per_attempt", budgets.turns_per_attempt, attempt_turns),
    )
    return [(name, used, limit) for name, limit, used in every if limit is not None]
