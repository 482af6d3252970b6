"""R6 tells: the caller's words to a place's agent, delivered as a prompt the transcript holds.

Theory of operation. "flume holds a tell while the agent works and sends it once the agent waits,
and refuses it, with nothing typed, when no agent is live or the agent is asking a person a
question. A tell never starts, ends or moves a stage." A tell is delivered like a prompt (R5): a
marker of its own, found in a line typed by the user, at most two sends; a tell missing twice is
reported lost, never assumed taken. Tells are sent one at a time, never while the stage's own
prompt is still unconfirmed.

Rule ids: R6, TELL-HELD-WHILE-WORKING, TELL-REFUSED, TELL-NEVER-MOVES-STAGE.
"""

from __future__ import annotations

import attrs
from pyrsistent import pvector

from flume.core.actions import Event, Report, SendTell
from flume.core.applies import refuse
from flume.core.delivery import is_typed_by_user
from flume.core.errors import refused
from flume.core.ids import Instant, Marker
from flume.core.launch import Panes
from flume.core.observations import Activity, Told, TranscriptEntry
from flume.core.place import (
    Delivered,
    Life,
    Outcome,
    Place,
    Short,
    Tell,
    TellSending,
    Working,
    accepts,
    evolve,
    is_live,
)
from flume.core.settings import MAX_SENDS, Settings
from flume.core.workflow import budget


def tell_marker(place: Place, number: int) -> Marker:
    """The marker of the place's ``number``-th tell."""
    return Marker(f"flume:{place.launch.place}:tell:{number}")


def on_told(place: Place, text: str, now: Instant) -> Outcome:
    """TELL-REFUSED: refuse when no agent is live or it asks a person; else hold the tell.

    A refused tell types nothing; a held one is sent once the agent waits.
    """
    name = place.launch.place
    if not text.strip():
        raise refused("text", "the tell is empty", "say what the agent should hear")
    if (
        place.life is not Life.ACTIVE
        or not accepts(place.stage.phase, Told)
        or not is_live(place)
        or place.agent is None
    ):
        raise refuse(
            place, "tell", "a tell", said=f"no agent is live in {name}, so nothing was typed"
        )
    if place.launch.agent.panes is Panes.PRINT:
        raise refused(
            "tell",
            f"the agent of {name} runs in a terminal of your own (--panes print), where flume "
            "cannot type, so nothing was typed",
            "type your words into that terminal yourself",
        )
    if place.agent.activity is Activity.ASKING:
        raise refused(
            "tell",
            f"the agent of {name} is asking a person a question, so nothing was typed",
            f"answer it in its pane (flume attach {name}), then tell it again",
        )
    number = place.tells_given + 1
    tell = Tell(number=number, text=text, asked_at=now)
    place = evolve(place, held=place.held.append(tell), tells_given=number)
    report = Report(
        event=Event.TELL_HELD,
        text=f"tell {number} is held until the agent waits",
        stage=place.stage.name,
    )
    return place, (report,)


def flush(settings: Settings, place: Place, now: Instant) -> Outcome:
    """TELL-HELD-WHILE-WORKING: send the first held tell once the agent waits, not before.

    WF-BUDGET-PAUSES: a stage whose gate is met ends as it would once a budget is spent, and
    nothing more is sent to its agent: its held tells (an answer among them) are dropped, named,
    so that none keeps it from ending (WF-NO-SILENT-WAIT).
    """
    del settings
    agent = place.agent
    if place.held and isinstance(place.stage.phase, Delivered) and _over_budget(place, now):
        return drop_all(place, "a budget is spent, and the stage's gate is met: it ends")
    if (
        not place.held
        or place.sending is not None
        or agent is None
        or agent.ending
        or agent.activity is not Activity.WAITING
        or not isinstance(place.stage.phase, Working | Delivered | Short)
        or _over_budget(place, now)
    ):
        return place, ()
    tell = place.held[0]
    place = evolve(
        place,
        held=place.held.delete(0),
        sending=TellSending(tell=tell, sends=1, sent_at=now),
    )
    return place, (send_tell(place, tell, 1),)


def _over_budget(place: Place, now: Instant) -> bool:
    """WF-BUDGET-PAUSES: a run over a budget sends nothing more, a tell no more than a prompt.

    Its stage, its gate met, ends as it would (its held tells dropped, named); one short of its
    gate is paused first (:func:`flume.core.workflow.gates.pause_when_spent`).
    """
    return budget.spent_budget(place.budgets, place.spent, place.stage.turns, now) is not None


def send_tell(place: Place, tell: Tell, send: int) -> SendTell:
    """Send ``send`` of ``tell`` to the live agent, its marker last."""
    assert place.agent is not None  # noqa: S101 (callers checked: a tell goes to a live agent)
    return SendTell(
        session=place.agent.session,
        number=tell.number,
        send=send,
        marker=tell_marker(place, tell.number),
        text=f"{tell.text}\n\n[{tell_marker(place, tell.number)}]",
    )


def on_tell_line(place: Place, entry: TranscriptEntry) -> Outcome:
    """The tell in flight is delivered when a line typed by the user holds its marker."""
    sending = place.sending
    if (
        sending is None
        or place.agent is None
        or entry.session != place.agent.session
        or not is_typed_by_user(entry)
        or tell_marker(place, sending.tell.number) not in entry.text
    ):
        return place, ()
    report = Report(
        event=Event.TELL_DELIVERED,
        text=f"the transcript holds tell {sending.tell.number}",
        stage=place.stage.name,
    )
    return evolve(place, sending=None), (report,)


def check_deadline(settings: Settings, place: Place, now: Instant) -> Outcome:
    """A tell missing from the transcript is sent once more, then reported lost.

    TELL-HELD-WHILE-WORKING: the second send, like the first, waits until the agent waits; it
    is never typed while the agent works or asks a person.
    """
    sending = place.sending
    if sending is None or now - sending.sent_at < settings.confirm_seconds:
        return place, ()
    if sending.sends < MAX_SENDS and is_live(place):
        if (
            place.agent is None
            or place.agent.activity is not Activity.WAITING
            or _over_budget(place, now)
        ):
            return place, ()
        again = TellSending(tell=sending.tell, sends=sending.sends + 1, sent_at=now)
        return evolve(place, sending=again), (send_tell(place, sending.tell, again.sends),)
    report = Report(
        event=Event.TELL_LOST,
        text=(
            f"tell {sending.tell.number} was sent {sending.sends} times and the transcript "
            "holds neither; it did not reach the agent"
        ),
        stage=place.stage.name,
    )
    return _reopen(evolve(place, sending=None), sending.tell.number), (report,)


def _reopen(place: Place, number: int) -> Place:
    """WF-MESSAGE-TRANSCRIPT: an answer whose tell was lost leaves its question open, unanswered.

    Its asker never read it, so it may be answered again (its answerer told anew).
    """
    for index, question in enumerate(place.questions):
        if question.tell == number:
            reopened = attrs.evolve(question, answer=None, tell=None, lost=question.lost + 1)
            return evolve(place, questions=place.questions.set(index, reopened))
    return place


def drop_all(place: Place, why: str) -> Outcome:
    """Every held or unconfirmed tell is reported dropped: its agent is gone."""
    dropped = [*place.held]
    if place.sending is not None:
        dropped.insert(0, place.sending.tell)
    reports = tuple(
        Report(
            event=Event.TELL_DROPPED,
            text=f"tell {tell.number} is not known to have reached the agent: {why}",
            stage=place.stage.name,
        )
        for tell in dropped
    )
    return evolve(place, held=pvector(), sending=None), reports
