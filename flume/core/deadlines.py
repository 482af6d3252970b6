"""The instants at which time alone can change a place: what the rules compare the clock with.

Theory of operation. Between two observations a place changes only when the clock passes one of
the instants its rules compare it with: an agent slow to take input (R5), a send or a tell not
found in time (R5, R6), an agent quiet long enough for its delivered stage to end (R7), a gate
to read of an agent long found waiting, a gate's evidence awaited at a turn's end, an agent
silent mid-turn or outside it (WF-STALL-NUDGES-ONCE, WF-NO-SILENT-WAIT), a led child's
question left unanswered, a blocked landing's wait (LAND-BASE-BLOCKED-WAITS), a run's
wall-clock budget (WF-BUDGET-PAUSES). :func:`thresholds` lists those instants, each the first
one at which its rule's own comparison holds. It decides nothing and need not be exact about
which rule would act: :func:`flume.core.step.next_deadline` tries a ``Tick`` at each, in
order, and the first that changes the place is its deadline.

Every rule compares the clock as ``now - since >= span`` (or its negation): in floating point,
``since + span`` is not always the first instant that holds, so :func:`first_instant` finds it
by the comparison itself. A threshold said too late would let the shell sleep past a rule; said
too early, it costs one ``Tick`` tried for nothing. The model checks both over generated places
(tests/model/test_deadlines.py): no ``Tick`` before the deadline changes a place, one at it does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from flume.core.ids import Instant
from flume.core.place import (
    Agent,
    AwaitingInput,
    Delivered,
    Delivering,
    Judging,
    Place,
    Working,
    open_question,
)
from flume.core.workflow.budget import active_minutes
from flume.core.workflow.gates import stall_since

#: Where a bracket's search starts: a few units in the last place of a clock's reading.
_NARROW = 2.0**-50
_INFINITY = float("inf")


def first_instant(since: float, span: float) -> Instant | None:
    """The first instant ``t`` at which ``t - since >= span``, as the rules compute it.

    None when no finite instant does (a span of infinity).
    """
    return _first(lambda t: t - since >= span, since + span)


def _first(holds: Callable[[float], bool], guess: float) -> Instant | None:
    """The least float at which ``holds``, which holds from some instant near ``guess`` on.

    ``holds`` must be monotone: false up to an instant, true from it on. The search brackets
    the instant around ``guess`` (widening until it does), then halves the bracket until its
    ends are neighbours.
    """
    if guess != guess or abs(guess) == _INFINITY:  # noqa: PLR0124 (NaN is the one float unequal to itself)
        return None
    width = max(abs(guess), 1.0) * _NARROW
    low = high = guess
    while holds(low):
        low -= width
        width *= 2
    while not holds(high):
        high += width
        width *= 2
        if abs(high) == _INFINITY:
            return None
    while True:
        middle = (low + high) / 2
        if middle in {low, high}:
            return Instant(high)
        if holds(middle):
            high = middle
        else:
            low = middle


def thresholds(place: Place) -> Iterator[Instant]:
    """Each instant at which one of the rules' comparisons with the clock turns, for ``place``.

    Listed only where the rule could look (its phase, its agent, its tell); whether it then acts
    is the rule's to say, so an instant listed may change nothing.
    """
    settings = place.settings
    phase = place.stage.phase
    # R5 (delivery.check_deadlines): sent anyway once slow to take input; resent, or missing.
    if isinstance(phase, AwaitingInput):
        yield from _maybe(first_instant(phase.since, settings.ready_seconds))
    if isinstance(phase, Delivering):
        yield from _maybe(first_instant(phase.sent_at, settings.confirm_seconds))
    # WF-DELIVERED-PASSES (gates.judge_evidence): a deliverable gate judged at the turn's end
    # waits quiet_seconds for its evidence (a commit seen a moment late), then is judged failed.
    if isinstance(phase, Judging):
        yield from _maybe(first_instant(phase.since, settings.quiet_seconds))
    # R6 (tell.check_deadline): the tell in flight sent once more, or found lost.
    if place.sending is not None:
        yield from _maybe(first_instant(place.sending.sent_at, settings.confirm_seconds))
    if place.agent is not None:
        yield from _agent(place, place.agent)
    # WF-CHILD-ASKING-SURFACES (messages.overdue_when_unanswered): a led child's question its
    # lead leaves unanswered for stall_seconds falls to the caller.
    asked = open_question(place)
    if asked is not None and asked.answer is None and not asked.overdue:
        yield from _maybe(first_instant(asked.asked_at, settings.stall_seconds))
    # LAND-BASE-BLOCKED-WAITS (stage.land_again): the blocked landing tried again.
    if place.land_retry_at is not None:
        yield place.land_retry_at
    # WF-BUDGET-PAUSES: a run's active minutes reach its wall-clock budget (paused, they do not
    # move: no instant of the clock's spends them).
    limit = place.budgets.wall_minutes
    spent = place.spent
    if limit is not None and spent.paused_at is None:
        guess = spent.began_at + spent.paused_seconds + 60.0 * limit
        yield from _maybe(_first(lambda t: active_minutes(spent, Instant(t)) >= limit, guess))


def _agent(place: Place, agent: Agent) -> Iterator[Instant]:
    """The instants of a live agent: quiet (R7), and its silence, in a turn or outside it."""
    settings = place.settings
    phase = place.stage.phase
    # R7 (is_quiet, for end_when_quiet): waited, and the pane still, for quiet_seconds.
    yield from _maybe(first_instant(agent.activity_since, settings.quiet_seconds))
    yield from _maybe(first_instant(agent.last_output_at, settings.quiet_seconds))
    if isinstance(phase, Working):
        yield from _working(place, agent)
    elif isinstance(phase, AwaitingInput | Delivering | Delivered):
        # WF-NO-SILENT-WAIT (gates.nudge_when_stalled, outside a turn): silent a window after
        # its deliverable, ended; twice the window before its prompt was found, paused.
        last = stall_since(place, agent)
        yield from _maybe(first_instant(last, settings.stall_seconds))
        yield from _maybe(first_instant(last, 2 * settings.stall_seconds))


def _working(place: Place, agent: Agent) -> Iterator[Instant]:
    """A working stage's agent: its gate read once long found waiting; its stall's nudge, pause."""
    settings = place.settings
    run = place.stage
    # gates.judge_when_waiting: found waiting for confirm_seconds, since its gate was last read.
    waited = max(agent.activity_since, agent.last_output_at, run.judged_at or run.started_at)
    yield from _maybe(first_instant(waited, settings.confirm_seconds))
    # WF-STALL-NUDGES-ONCE (gates.nudge_when_stalled): silent for stall_seconds, nudged once;
    # silent as long again after the nudge, paused.
    last = stall_since(place, agent)
    yield from _maybe(first_instant(last, settings.stall_seconds))
    if run.nudged_at is not None:
        yield from _maybe(first_instant(max(last, run.nudged_at), settings.stall_seconds))


def _maybe(instant: Instant | None) -> Iterator[Instant]:
    if instant is not None:
        yield instant
