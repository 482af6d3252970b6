"""Each attempt's chat, kept: which agent ran each stage attempt, and where its transcript is.

Theory of operation. The seed asks that "each step attempt's chat is preserved and replayable
forever". The chat is the agent's own transcript (Claude Code's session file, Codex's rollout):
flume neither copies it nor removes it. What flume keeps is which file it is, in the journal, so
that a replay of the journal alone knows every attempt's transcript (TRANSCRIPT-KEPT):

- each agent started for a stage attempt (an ``AgentStarted`` R4 takes) is an
  :class:`~flume.core.place.Attempt` of the place: its key in the tree, its stage and attempt,
  the program it runs and its session;
- a ``TranscriptFound`` for that session names its transcript, once: the first found stands
  (an agent writes one transcript, and a supervisor restarted may report it again), and a
  ``transcript`` event says where it is;
- a transcript found for a session that is no attempt of the place's is passed over;
- nothing removes an attempt: not its agent's end, a retry, a drop or a tidy.

Status shows the attempts whose transcript was found (:mod:`flume.core.status`); ``flume
transcript`` reads them, chosen by :func:`chosen` (a step's key or name, an attempt's number).
Nothing here decides anything else: no stage moves on a transcript found (delivery is read
from its lines, :mod:`flume.core.delivery`).

Rule ids: TRANSCRIPT-KEPT.
"""

from __future__ import annotations

import attrs

from flume.core.actions import Event, Report
from flume.core.errors import UsageError, refused
from flume.core.ids import SessionId
from flume.core.judging import program_of
from flume.core.kinds import block_name, blocks_of
from flume.core.observations import TranscriptFound
from flume.core.place import Agent, Attempt, Outcome, Place, evolve


def begun(place: Place, agent: Agent) -> Place:
    """TRANSCRIPT-KEPT: the agent just started for the place's stage is one of its attempts.

    ``place`` holds ``agent`` already: the program is its step's (:func:`program_of`).
    """
    attempt = Attempt(
        key=agent.key or agent.stage,
        stage=agent.stage,
        attempt=agent.attempt,
        agent=program_of(place),
        session=agent.session,
        started_at=agent.activity_since,
    )
    return evolve(place, attempts=place.attempts.append(attempt))


def on_transcript_found(place: Place, seen: TranscriptFound) -> Outcome:
    """TRANSCRIPT-KEPT: the attempt of the session keeps the transcript found first, and says so.

    A session no attempt of the place's ran, or one whose transcript is known, changes nothing.
    """
    for index in range(len(place.attempts) - 1, -1, -1):
        attempt = place.attempts[index]
        if attempt.session != seen.session:
            continue
        if attempt.transcript is not None:
            return place, ()
        kept = attrs.evolve(attempt, transcript=seen.path)
        report = Report(
            event=Event.TRANSCRIPT,
            text=(
                f"the transcript of {attempt.key} (attempt {attempt.attempt}, "
                f"{attempt.agent.value}) is {seen.path}"
            ),
            stage=attempt.stage,
        )
        return evolve(place, attempts=place.attempts.set(index, kept)), (report,)
    return place, ()


def on_entry(place: Place, session: SessionId) -> Place:
    """TRANSCRIPT-KEPT: the attempt of the session wrote its transcript: a line of it was read.

    ``flume transcript`` then says a file gone was removed since; one never read was never
    written (its agent died before writing it).
    """
    for index in range(len(place.attempts) - 1, -1, -1):
        attempt = place.attempts[index]
        if attempt.session == session:
            if attempt.read:
                return place
            return evolve(
                place, attempts=place.attempts.set(index, attrs.evolve(attempt, read=True))
            )
    return place


def wants_transcript(place: Place, session: SessionId) -> bool:
    """The session is an attempt of the place's whose transcript is not known yet.

    The shell reports a transcript it found only then: once journaled, never again.
    """
    return any(
        attempt.session == session and attempt.transcript is None for attempt in place.attempts
    )


def found(place: Place) -> list[Attempt]:
    """The place's attempts whose transcript was found, in the order their agents started."""
    return [attempt for attempt in place.attempts if attempt.transcript is not None]


def current_transcript(place: Place) -> str | None:
    """The transcript of the current stage attempt's agent (the last started for it), if found."""
    stage = place.stage
    for attempt in reversed(place.attempts):
        if attempt.key == stage.key and attempt.attempt == stage.attempt:
            return attempt.transcript
    return None


def chosen(place: Place, step: str = "", number: int | None = None) -> list[Attempt]:
    """The attempts ``flume transcript`` shows, in the order their agents started.

    ``step`` names a step as status shows it: its key (``review-loop@2/review``: that pass), its
    key without passes (``review-loop/review``) or its name (``review``: every pass), or a
    block around steps (``review-loop``, ``review-loop@2``); empty: every attempt. ``number``
    picks the attempts of that number among them, and needs a step. A name no block of the
    kind has, a number without a step, or one no attempt has, is bad input (exit status 2); a
    step or place no agent ran in yet has nothing to show (refused, exit status 1).
    """
    name = place.launch.place
    attempts = list(place.attempts)
    if not step and number is not None:
        raise UsageError.one(
            "attempt",
            f"--attempt {number} picks an attempt of one step, and no step is named",
            f"name the step too: flume transcript {name} STEP --attempt {number}",
        )
    if step:
        attempts = [attempt for attempt in attempts if _is_of(attempt, step)]
        if not attempts:
            names = {block_name(block) for block in blocks_of(place.kind.body)} - {None}
            if not {part.split("@", 1)[0] for part in step.split("/")} <= names:
                raise UsageError.one(
                    "step",
                    f"{name} has no step {step}",
                    f"name one of its steps ({', '.join(sorted(str(n) for n in names))}) or a "
                    "key as flume status shows it (review-loop@2/review)",
                )
            raise refused(
                "step",
                f"no agent has run {step} in {name} yet",
                f"see where it stands with flume status {name}",
            )
    if number is not None:
        there = sorted({attempt.attempt for attempt in attempts})
        attempts = [attempt for attempt in attempts if attempt.attempt == number]
        if not attempts:
            raise UsageError.one(
                "attempt",
                f"{step} has no attempt {number} in {name}: its attempts are "
                f"{', '.join(map(str, there))}",
                "pick one of those",
            )
    if not attempts:
        raise refused(
            "place",
            f"no agent has run in {name} yet",
            f"see where it stands with flume status {name}",
        )
    return attempts


def _is_of(attempt: Attempt, step: str) -> bool:
    """The attempt is of the step (or block) ``step`` names: see :func:`chosen`."""
    passless = "/".join(part.split("@", 1)[0] for part in attempt.key.split("/"))
    return (
        step in {attempt.key, passless, attempt.stage}
        or attempt.key.startswith(f"{step}/")
        or passless.startswith(f"{step}/")
    )
