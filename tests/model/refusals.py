"""A person's commands given to a place as it stands, and the command each refusal names.

The machines check with :func:`check_refusals` that a person's command the rules refuse names,
as its way out, a command the rules accept in that same state (or none, where nothing waits on
a person): "every refusal names the command that does apply".
"""

from __future__ import annotations

import re

from flume.core.errors import UsageError
from flume.core.ids import Instant
from flume.core.observations import (
    AnswerGiven,
    ApproveAsked,
    BudgetRaised,
    DropAsked,
    Observation,
    PassAsked,
    ProceedAsked,
    ResolveAsked,
    ResumeAsked,
    RetryAsked,
    StopAsked,
    Told,
)
from flume.core.place import Place
from flume.core.settings import Settings
from flume.core.step import step

#: The option of ``flume raise`` and the budget it raises.
_RAISES = {
    "--turns": "turns",
    "--tokens": "tokens",
    "--wall": "wall_minutes",
    "--retries": "retries",
    "--turns-per-attempt": "turns_per_attempt",
}
#: Commands that read, or tidy: accepted in every state, nothing to step.
_READS = frozenset({"status", "tidy", "events", "transcript"})


def person_commands(at: Instant) -> list[Observation]:
    """Each of a person's commands, well formed, as the CLI would journal it."""
    return [
        ApproveAsked(at=at),
        ResumeAsked(at=at),
        PassAsked(at=at, why="the verdict is wrong"),
        BudgetRaised(at=at, turns=5),
        BudgetRaised(at=at, tokens=50),
        RetryAsked(at=at, words="try again"),
        ProceedAsked(at=at),
        StopAsked(at=at),
        Told(at=at, text="mind the README"),
        ResolveAsked(at=at),
    ]


def named(mend: str, at: Instant) -> Observation | None:
    """The command a refusal's way out names first, as it would be journaled; None: a read.

    Raises AssertionError for a way out that names a verb no person gives.
    """
    match = re.search(r"flume ([a-z]+) (\S+)(.*)", mend)
    assert match is not None, mend
    verb, _place, rest = match.groups()
    if verb in _READS:
        return None
    options = rest.split()
    found: dict[str, Observation] = {
        "approve": ApproveAsked(at=at),
        "resume": ResumeAsked(at=at),
        "pass": PassAsked(at=at, why="a person's word"),
        "retry": RetryAsked(at=at, words="again"),
        "proceed": ProceedAsked(at=at),
        "drop": DropAsked(at=at),
        "resolve": ResolveAsked(at=at, agent="--agent" in options[:1]),
    }
    if verb in found:
        return found[verb]
    if verb == "raise":
        budget = _RAISES[options[0]]
        return BudgetRaised(at=at, **{budget: 5})
    assert verb == "answer", mend
    return AnswerGiven(at=at, question=options[0], text="the answer")


def check_refusals(settings: Settings, place: Place | None) -> None:
    """Each of a person's commands the place refuses names a way out the place accepts.

    A refusal for bad input (exit 2) is not the place's; one naming no command (nothing waits
    on a person) says where to look instead.
    """
    if place is None:
        return
    at = Instant(place.now + 0.5)
    for seen in person_commands(at):
        try:
            step(settings, place, seen)
        except UsageError as error:
            if error.exit_status != 1:
                continue
            (problem,) = error.problems
            if "flume " not in problem.mend:
                continue
            way = named(problem.mend, at)
            if way is None:
                continue
            try:
                step(settings, place, way)
            except UsageError as again:
                message = f"{seen} refused: {problem.render()}; its way out refused: {again}"
                raise AssertionError(message) from again
