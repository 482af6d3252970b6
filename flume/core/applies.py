"""What a place waits on now, and the command that applies there: what every refusal names.

Theory of operation. A person's command refused in the place's present state says what the place
waits on instead and the one command that does apply there (REFUSAL-NAMES-WAY): ``flume approve``
of a run waiting on a question names ``flume answer``; ``flume tell`` of a finished run names no
``retry`` that would be refused in turn; a pause names the command its cause takes. The command
named is one the rules accept in that state, or none at all when nothing waits on a person (an
agent at work, a finished run): then the refusal says so, and how to see where it stands.

This module reads the place and decides nothing; it imports only the place's state, so that the
rules of a stage, of a tell and of a pause can all refuse through it.

A person's word that lets a run go on (resume, raise) says what starts next, truthfully
(:func:`went_on`): a step that never started "starts", one tried afresh "starts again", a
parallel's lanes start, a finalize goes on with no step run again.

Rule ids: REFUSAL-NAMES-WAY.
"""

from __future__ import annotations

from typing import assert_never

import attrs

from flume.core.actions import Land, OpenPR, Push
from flume.core.errors import UsageError, refused
from flume.core.kinds import orchestrates, parallels
from flume.core.place import (
    AwaitingInput,
    AwaitingWord,
    Delivered,
    Delivering,
    Fanned,
    Finalizing,
    Judging,
    LaneState,
    Life,
    Merging,
    Paused,
    Place,
    Question,
    Queued,
    Short,
    Starting,
    Submission,
    Working,
    finalize_action,
    lanes_in_order,
    leading,
    open_question,
    resolve_command,
)


@attrs.frozen(kw_only=True)
class WayOn:
    """What the place waits on, in words, and the command that lets it go on ("": none)."""

    waits: str
    command: str = ""


def question_words(question: Question) -> str:
    """A question as status and its event say it: its id, its words, the options it offers."""
    offered = f" (options: {', '.join(question.options)})" if question.options else ""
    return f"{question.id}: {question.text}{offered}"


def answer_command(place: Place, question: Question) -> str:
    """The command that answers ``question``."""
    return f'flume answer {place.launch.place} {question.id} "..."'


def unlanded_words(place: Place) -> str | None:
    """A finished run whose work is on its branch and nowhere else: how a person lands it.

    None when it landed, holds no commit of its own, is a lane or child (its run merges it),
    or finalizes (its push and pull request are its landing's way).
    """
    if (
        place.life is not Life.FINISHED
        or place.landed_at is not None
        or place.launch.parent is not None
        or place.kind.finalize is not None
        or place.head is None
        or place.start is None
        or place.head == place.start
    ):
        return None
    base = place.launch.base
    return (
        f"its work is on branch {place.branch}, not landed on {base}: land it with git merge "
        f"{place.branch} in the checkout of {base}, then flume tidy"
    )


def way_on(place: Place) -> WayOn:
    """REFUSAL-NAMES-WAY: what the place waits on now, and the command accepted there."""
    match place.life:
        case Life.MAKING:
            return WayOn(waits="is having its place made")
        case Life.FINISHED:
            unlanded = unlanded_words(place)
            if unlanded is not None:
                return WayOn(waits=f"finished: {unlanded}")
            return WayOn(waits="finished")
        case Life.DROPPED:
            return WayOn(waits="was dropped; flume tidy removes its place")
        case Life.TIDIED:
            return WayOn(waits="was tidied")
        case Life.ACTIVE:
            pass
        case _:
            assert_never(place.life)
    return _stage_way(place)


def _child_waiting(place: Place) -> WayOn | None:
    """A run whose child paused or stopped short waits on that child's way out, there."""
    if leading(place) is None or place.lanes_key != place.stage.key:
        return None
    for run in lanes_in_order(place):
        if run.paused and run.state is LaneState.RUNNING:
            return WayOn(
                waits=f"waits on its child {run.lane} ({run.place}), which {run.paused}",
                command=f"flume status {run.place}",
            )
    return None


def _stage_way(place: Place) -> WayOn:  # noqa: PLR0911 (one arm a phase)
    """The way on of an active place: its pause, question, child, or its stage's phase."""
    name = place.launch.place
    phase = place.stage.phase
    key = place.stage.key
    match phase:
        case Paused():
            return WayOn(
                waits=f"is paused at {key} ({phase.cause.value}: {phase.words})",
                command=resolve_command(place, phase),
            )
        case Short():
            if place.worktree_gone:
                return WayOn(
                    waits=f"stopped short at {key}: its worktree is gone",
                    command=f"flume drop {name}",
                )
            return WayOn(
                waits=f"stopped short at {key} ({phase.cause.value})",
                command=f'flume retry {name} --words "..."',
            )
        case AwaitingWord():
            return WayOn(
                waits=f"waits on your word to start {key}", command=f"flume proceed {name}"
            )
        case Queued() | Starting():
            return WayOn(waits=f"is starting the agent of {key}")
        case AwaitingInput() | Delivering() | Working() | Delivered() | Judging():
            return _live_way(place)
        case Fanned():
            return WayOn(waits=f"runs the lanes of {key}")
        case Merging():
            return WayOn(waits=f"is merging the lanes of {key}")
        case Finalizing():
            return WayOn(waits="is finalizing (its push, pull request or landing)")
        case _:
            assert_never(phase)


def _live_way(place: Place) -> WayOn:
    """A stage whose agent runs: its question, its lead's child, its landing, or its work."""
    key = place.stage.key
    if place.agent is None or place.agent.ending:
        return WayOn(waits=f"has no agent live at {key}: one is ending, or none started yet")
    asked = open_question(place)
    if asked is not None and asked.answer is None and not place.launch.led:
        return WayOn(
            waits=f"waits on a question ({question_words(asked)})",
            command=answer_command(place, asked),
        )
    if asked is not None and asked.answer is None:
        return WayOn(waits=f"asks its lead {asked.id}, which its lead answers")
    child = _child_waiting(place)
    if child is not None:
        return child
    if place.submission is Submission.SUBMITTED:
        return WayOn(waits=f"is landing {key}")
    return WayOn(waits=f"works on {key}")


def refuse(place: Place, verb: str, wanted: str, *, said: str = "") -> UsageError:
    """REFUSAL-NAMES-WAY: ``flume <verb>`` refused here, naming what applies (exit status 1).

    ``wanted``: what the verb would answer, in words (``an approval``); ``said``: why it is
    refused, where the rule has its own words for it (``no agent is live``). The mend is the
    command that applies now, or, where nothing waits on a person, where to see how it stands.
    """
    name = place.launch.place
    way = way_on(place)
    what = (
        f"{said}: {name} {way.waits}"
        if said
        else f"{name} {way.waits}; nothing there waits on {wanted}"
    )
    mend = way.command or f"nothing waits on you now: flume status {name} shows where it stands"
    return refused(verb, what, mend)


def went_on(before: Place | None, after: Place, how: str) -> str:  # noqa: PLR0911 (one return a way the run goes on)
    """What a person's word that let the run go on did, in words: what starts next, truly.

    ``before``: the place as it stood when the word was given; ``how``: the word, done
    (``resumed``). The run ends, finalizes, pauses again, or its current step starts: "again"
    only when it is the step that stood paused, as a new attempt of it.
    """
    name = after.launch.place
    run = after.stage
    if after.life is not Life.ACTIVE:
        unlanded = unlanded_words(after)
        tail = f"; {unlanded}" if unlanded is not None else ""
        return f"{name}: {how}; nothing was left to run, so the run ends{tail}"
    phase = run.phase
    if isinstance(phase, Paused):
        return f"{name}: {how}, but it is paused again at {run.key}: {phase.words}"
    if isinstance(phase, Finalizing):
        act = finalize_action(after)
        doing = {
            Push: "its branch is pushed",
            OpenPR: "its pull request command runs",
            Land: "its branch is landed",
        }.get(type(act), "it finishes")
        return f"{name}: {how}; its finalize goes on: {doing} (no step runs again)"
    if run.name in parallels(after.kind.body):
        if isinstance(phase, Merging):
            # Its lanes ended already (a merge refused, resumed): merged again, none started.
            return f"{name}: {how}; flume merges the lanes of parallel {run.key} again"
        return f"{name}: {how}; the lanes of parallel {run.key} start"
    block = (
        "the lead of its orchestrate, " if run.name in orchestrates(after.kind.body) else "step "
    )
    if before is not None and before.stage.key == run.key and run.attempt > before.stage.attempt:
        return f"{name}: {how}; {block}{run.key} starts again (attempt {run.attempt})"
    return f"{name}: {how}; {block}{run.key} starts (attempt {run.attempt})"
