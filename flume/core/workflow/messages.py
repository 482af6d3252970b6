"""Messages along a step's declared edges: progress reported, questions asked and answered.

Theory of operation. A step declares the edges its agent may message along (``may``, WF-EDGES); its
agent runs them in its place, found by ``$FLUME_SESSION`` as ``flume needs`` is. ``flume progress``
is journaled and shown in status. ``flume ask`` asks a question: with no lead above the asker (no
orchestrate block's lead over it), the caller is the one who answers (WF-ASK-ONE-ANSWERER; an
orchestrate's child's question goes to its lead, who alone answers it:
:mod:`flume.core.workflow.orchestrate`) and the run shows itself paused, ``question``, naming it and
the command that answers it (WF-ASK-PAUSES-WITHOUT-LEAD); the asker's agent stays live, waiting.
While its question is open, its gate is not judged at the end of a turn and its stall clock stops
(WF-ASK-DEFERS-GATE). ``flume answer`` gives the answer once: it goes to the asker as a tell, so it
counts only when the asker's transcript holds it, sent twice at most (WF-MESSAGE-TRANSCRIPT, as R6).
Commands the edges or the place's state do not allow are refused, journaling nothing.
"""

from __future__ import annotations

import attrs

from flume.core import tell
from flume.core.actions import Event, Report
from flume.core.errors import UsageError, refused
from flume.core.observations import AnswerGiven, AskSaid, ProgressSaid
from flume.core.place import (
    Life,
    Outcome,
    Place,
    Question,
    accepts,
    current_step,
    evolve,
    open_question,
)

#: How many options a question may offer, and how long a question or its answer may be.
MOST_OPTIONS = 10


def may(place: Place, edge: str, session: object) -> None:
    """WF-EDGES: refused unless the live agent's step declares ``edge``."""
    name = place.launch.place
    agent = place.agent
    if session is not None and (agent is None or agent.session != session):
        raise refused(
            edge,
            f"session {session} is not the live agent of {name}",
            f"flume {edge} is for the agent of the place's running step",
        )
    step = current_step(place)
    if edge not in step.may:
        raise refused(
            edge,
            f"step {place.stage.key} of {name} may not {edge}: its may is "
            f"[{', '.join(sorted(step.may))}]",
            f'declare may = ["{edge}"] on the step to let its agent {edge}',
        )


def on_progress(place: Place, seen: ProgressSaid) -> Outcome:
    """The agent's progress: journaled, shown in status and as an event; nothing else moves."""
    if place.life is not Life.ACTIVE or not accepts(place.stage.phase, ProgressSaid):
        raise refused(
            "progress",
            f"no step of {place.launch.place} is running",
            "flume progress is for the agent of a running step",
        )
    may(place, "progress", seen.session)
    if not seen.words.strip():
        raise refused("progress", "the words are empty", "say what you have done")
    report = Report(
        event=Event.PROGRESS,
        text=f"{place.stage.key}: {seen.words.strip()}",
        stage=place.stage.name,
    )
    return evolve(place, progress=seen.words.strip()), (report,)


def on_ask(place: Place, seen: AskSaid) -> Outcome:
    """WF-ASK-PAUSES-WITHOUT-LEAD: a question with no lead above waits, named, for the caller."""
    if (
        place.life is not Life.ACTIVE
        or not accepts(place.stage.phase, AskSaid)
        or place.agent is None
    ):
        raise refused(
            "ask",
            f"no step of {place.launch.place} is running",
            "flume ask is for the agent of a running step",
        )
    may(place, "ask", seen.session)
    if not seen.question.strip():
        raise refused("ask", "the question is empty", "say what you want to know")
    if len(seen.options) > MOST_OPTIONS or any(not each.strip() for each in seen.options):
        raise refused(
            "ask",
            f"a question offers 1-{MOST_OPTIONS} options, none empty",
            "give fewer options, each with words",
        )
    if open_question(place) is not None:
        raise refused(
            "ask",
            f"{place.launch.place} has a question open already",
            "wait for its answer, then ask the next",
        )
    number = len(place.questions) + 1
    question = Question(
        id=f"q{number}",
        text=seen.question.strip(),
        options=seen.options,
        key=place.stage.key,
        attempt=place.stage.attempt,
        session=place.agent.session,
        asked_at=seen.at,
    )
    place = evolve(place, questions=place.questions.append(question))
    if place.launch.led:
        # WF-ASK-ONE-ANSWERER: the nearest lead answers; the run tells it (ChildNews).
        report = Report(
            event=Event.ASKED,
            text=f"{question_words(question)}; it goes to the lead of {place.launch.parent}",
            stage=place.stage.name,
        )
        return place, (report,)
    report = Report(
        event=Event.PAUSED,
        text=f"{place.launch.place} paused at {place.stage.key} (question): "
        f"{question_words(question)}; {answer_command(place, question)}",
        stage=place.stage.name,
    )
    return place, (report,)


def on_answer(place: Place, seen: AnswerGiven) -> Outcome:
    """WF-ASK-ONE-ANSWERER, WF-MESSAGE-TRANSCRIPT: the one answer, sent to the asker as a tell."""
    name = place.launch.place
    # What the question is says most: one answered already is that, whatever the run does now.
    found = next((each for each in place.questions if each.id == seen.question), None)
    if found is None:
        asked = ", ".join(each.id for each in place.questions) or "none"
        raise UsageError.one(
            "question",
            f"{name} has no question {seen.question!r} (its questions: {asked})",
            f"see the open question with flume status {name}",
        )
    if found.answer is not None:
        raise refused(
            "answer",
            f"question {found.id} of {name} is answered already",
            "a question is answered once",
        )
    if place.life is not Life.ACTIVE or not accepts(place.stage.phase, AnswerGiven):
        raise refused(
            "answer",
            f"no step of {name} is running: nothing waits on an answer",
            f"see what {name} waits on with flume status {name}",
        )
    if place.launch.led and not (seen.by_lead or seen.no_lead):
        # WF-SPREAD: a fleet place's lead is on the host of its run, where who answers is judged.
        mend = (
            f"answer it on the host that carries {place.launch.parent} (flume status --fleet "
            "names it): its lead answers there, or you while no lead of it is live"
            if place.launch.spread
            else "the lead answers it, from its own session (you may, while no lead of it is live)"
        )
        raise refused(
            "answer",
            f"question {found.id} of {name} goes to the lead of {place.launch.parent}, "
            "the nearest lead above it",
            mend,
        )
    if found is not open_question(place):
        raise refused(
            "answer",
            f"the agent that asked {found.id} of {name} is gone",
            f"tell the step's agent instead (flume tell {name})",
        )
    if not seen.text.strip():
        raise refused("answer", "the answer is empty", "give the answer as text")
    text = f"The answer to your question {found.id} ({found.text}):\n\n{seen.text.strip()}"
    place, told = tell.on_told(place, text, seen.at)
    answered = attrs.evolve(found, answer=seen.text.strip(), tell=place.tells_given)
    questions = place.questions.set(place.questions.index(found), answered)
    report = Report(
        event=Event.ANSWERED,
        text=f"question {found.id} answered; the answer goes to the agent of {found.key}",
        stage=place.stage.name,
    )
    return evolve(place, questions=questions), (report, *told)


def question_words(question: Question) -> str:
    """A question as status and its event say it: its id, its words, the options it offers."""
    offered = f" (options: {', '.join(question.options)})" if question.options else ""
    return f"{question.id}: {question.text}{offered}"


def answer_command(place: Place, question: Question) -> str:
    """The command that answers ``question``."""
    return f'flume answer {place.launch.place} {question.id} "..."'
