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
transcript`` reads them. Nothing here decides anything else: no stage moves on a transcript
found (delivery is read from its lines, :mod:`flume.core.delivery`).

Rule ids: TRANSCRIPT-KEPT.
"""

from __future__ import annotations

import attrs

from flume.core.actions import Event, Report
from flume.core.ids import SessionId
from flume.core.judging import program_of
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
