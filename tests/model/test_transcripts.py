"""TRANSCRIPT-KEPT model-checked: each attempt's agent and transcript, kept for the place's life."""

from __future__ import annotations

import re

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule
from pyrsistent import pvector

from flume.core.actions import Event, Report
from flume.core.choices import AgentName
from flume.core.errors import UsageError
from flume.core.ids import Instant, SessionId, StageName
from flume.core.observations import (
    AgentExited,
    AgentStarted,
    Author,
    NeedsSaid,
    RetryAsked,
    TidyAsked,
    TranscriptEntry,
    TranscriptFound,
)
from flume.core.place import Attempt, Place, evolve
from flume.core.status import TranscriptView, status
from flume.core.step import step
from flume.core.transcripts import chosen, current_transcript, wants_transcript
from tests.model.test_rules import S, made, run, started, working
from tests.model.test_stop_short import StopShortMachine


def _path(session: str, take: int = 1) -> str:
    """Where an agent of ``session`` keeps its transcript (a take beyond 1: a wrong report)."""
    return f"/home/me/.claude/projects/-r-places-fix--x/{session}.jsonl" + "~" * (take - 1)


class TranscriptMachine(StopShortMachine):
    """A fix whose agents' transcripts are found, late, twice or for strangers, as it runs.

    The caller stops, retries, drops and tidies it (the rules of :class:`StopShortMachine`);
    what it kept of each attempt is checked after every step.
    """

    @precondition(lambda self: self.has_agent())
    @rule(take=st.sampled_from([1, 1, 2]))
    def transcript_found(self, take: int) -> None:
        """The shell finds the live agent's transcript (again, after a restart; or another)."""
        agent = self.agent()
        assert agent is not None
        path = _path(agent.session, take)
        self.world.feed(TranscriptFound(at=self.world.instant(), session=agent.session, path=path))

    @rule(session=st.sampled_from(["s1", "s2", "s3", "stranger"]))
    def transcript_found_late(self, session: str) -> None:
        """A transcript is reported for a session that may have ended, or never was the place's."""
        seen = TranscriptFound(
            at=self.world.instant(), session=SessionId(session), path=_path(session)
        )
        self.world.feed(seen)

    @rule(force=st.booleans())
    def caller_tidies(self, *, force: bool) -> None:
        """The caller asks for a tidy (refused while the place is in flight)."""
        self.world.feed(TidyAsked(at=self.world.instant(), force=force))

    @invariant()
    def attempts_are_kept_with_their_transcripts(self) -> None:
        """TRANSCRIPT-KEPT: each agent the place took is an attempt, kept with its transcript.

        In the order the agents started, with their stage, attempt and session; the first
        transcript found for each, and only for a session that is one of them; reported once;
        never removed, whatever came after (an exit, a stop, a retry, a drop, a tidy). Status
        shows those found, the current attempt's first.
        """
        taken: list[tuple[str, int, SessionId]] = []
        first: dict[SessionId, str] = {}
        for before, seen, decision in self.world.steps:
            prior = before.attempts if before is not None else pvector()
            after = decision.place.attempts
            assert len(after) >= len(prior)
            for old, new in zip(prior, after, strict=False):
                blank = {"transcript": None, "read": False}
                assert attrs.evolve(old, **blank) == attrs.evolve(new, **blank)
                assert old.transcript is None or new.transcript == old.transcript
                # Read once, always read; read only on a line of its own session's.
                wrote = isinstance(seen, TranscriptEntry) and seen.session == new.session
                assert new.read is (old.read or wrote)
            if isinstance(seen, AgentStarted) and len(after) > len(prior):
                taken.append((seen.stage, seen.attempt, seen.session))
            told = [
                a for a in decision.actions if isinstance(a, Report) and a.event is Event.TRANSCRIPT
            ]
            fresh = (
                isinstance(seen, TranscriptFound)
                and seen.session in {session for *_, session in taken}
                and seen.session not in first
            )
            if isinstance(seen, TranscriptFound) and fresh:
                first[seen.session] = seen.path
                assert seen.path in told[0].text
            assert len(told) == (1 if fresh else 0)
        place = self.world.place
        assert place is not None
        assert [(a.stage, a.attempt, a.session) for a in place.attempts] == taken
        assert [a.transcript for a in place.attempts] == [first.get(s) for *_, s in taken]
        assert all(a.agent is AgentName.CLAUDE for a in place.attempts)
        assert not any(wants_transcript(place, session) for session in first)
        view = status(place)
        assert [v.session for v in view.transcripts] == [s for *_, s in taken if s in first]
        assert view.transcript == current_transcript(place)


TestTranscripts = TranscriptMachine.TestCase


# --- examples --------------------------------------------------------------------------------


def _found(
    place: Place, session: str = "s1", path: str | None = None
) -> tuple[Place, list[Report]]:
    """The place after the transcript of ``session`` is found, and the reports it made."""
    seen = TranscriptFound(at=Instant(5), session=SessionId(session), path=path or _path(session))
    decided = step(S, place, seen)
    return decided.place, [a for a in decided.actions if isinstance(a, Report)]


def test_a_transcript_found_is_kept_on_its_attempt_and_reported_once() -> None:
    """The live agent's transcript is its attempt's; told as an event once, then passed over."""
    place, reports = _found(working())
    (attempt,) = place.attempts
    assert (attempt.key, attempt.stage, attempt.attempt) == ("code", "code", 1)
    assert (attempt.session, attempt.agent, attempt.transcript) == (
        "s1",
        AgentName.CLAUDE,
        _path("s1"),
    )
    assert [r.event for r in reports] == [Event.TRANSCRIPT]
    assert _path("s1") in reports[0].text
    assert reports[0].stage == "code"
    again, reports = _found(place, path="/elsewhere.jsonl")
    assert again.attempts == place.attempts
    assert reports == []
    view = status(again)
    assert view.transcript == _path("s1")
    assert list(view.transcripts) == [
        TranscriptView(
            key="code",
            stage="code",
            attempt=1,
            agent=AgentName.CLAUDE,
            session="s1",
            path=_path("s1"),
        )
    ]


def test_a_stranger_s_transcript_is_no_attempt_s() -> None:
    """A transcript found for a session the place never took changes nothing."""
    place = working()
    after, reports = _found(place, session="s9")
    assert after.attempts == place.attempts
    assert reports == []


def test_an_attempt_is_read_once_a_line_of_its_own_session_s_is() -> None:
    """A line of the session's marks its attempt read, once; a stranger's line marks none.

    ``flume transcript`` tells a file never written (never read) from one removed since.
    """
    place, _ = _found(working())
    assert place.attempts[0].read  # its prompt's line was read
    place = evolve(place, attempts=pvector([attrs.evolve(place.attempts[0], read=False)]))
    line = TranscriptEntry(at=Instant(6), session=SessionId("s9"), author=Author.AGENT)
    stranger = step(S, place, line).place
    assert not stranger.attempts[0].read
    line = attrs.evolve(line, session=SessionId("s1"))
    read = step(S, place, line).place
    assert read.attempts[0].read
    assert step(S, read, attrs.evolve(line, at=Instant(7))).place.attempts == read.attempts


def test_before_any_transcript_status_shows_none() -> None:
    """An attempt whose transcript is not found adds nothing to status (old journals read so)."""
    place = working()
    assert wants_transcript(place, SessionId("s1"))
    view = status(place)
    assert view.transcript is None
    assert list(view.transcripts) == []


def test_every_attempt_is_kept_past_its_agent_a_retry_and_a_drop() -> None:
    """A retried stage's attempts are both kept; the current one's is the status's transcript."""
    place, _ = _found(working())
    place = step(S, place, NeedsSaid(at=Instant(6), words="a key", session=SessionId("s1"))).place
    place = step(S, place, AgentExited(at=Instant(7), session=SessionId("s1"))).place
    place = step(S, place, RetryAsked(at=Instant(8), words="here it is")).place
    assert current_transcript(place) is None  # no agent started for the second attempt yet
    place = step(S, place, started(at=9, attempt=2, session="s2")).place
    assert current_transcript(place) is None  # the second attempt wrote none yet
    place, _ = _found(place, session="s2")
    assert [(a.attempt, a.transcript) for a in place.attempts] == [
        (1, _path("s1")),
        (2, _path("s2")),
    ]
    assert status(place).transcript == _path("s2")
    dropped = run().place  # a place with no agent has no attempts
    assert list(dropped.attempts) == []


def _attempt(key: str, attempt: int, session: str) -> Attempt:
    """An attempt of the step at ``key``, its agent's transcript found."""
    return Attempt(
        key=key,
        stage=StageName(key.rsplit("/", 1)[-1]),
        attempt=attempt,
        agent=AgentName.CODEX,
        session=SessionId(session),
        started_at=Instant(1),
        transcript=_path(session),
    )


#: A run's attempts: a step before a loop, two passes of the loop's review, one retried.
RUN = (
    _attempt("code", 1, "a"),
    _attempt("loop@1/code", 1, "b"),
    _attempt("loop@2/code", 1, "c"),
    _attempt("loop@2/code", 2, "d"),
)


@pytest.mark.parametrize(
    ("step", "number", "sessions"),
    [
        ("", None, "abcd"),
        ("code", None, "abcd"),
        ("loop@2/code", None, "cd"),
        ("loop/code", None, "bcd"),
        ("loop", None, "bcd"),
        ("loop@1", None, "b"),
        ("code", 1, "abc"),
        ("loop@2/code", 2, "d"),
    ],
)
def test_a_step_s_key_or_name_chooses_its_attempts(
    step: str, number: int | None, sessions: str
) -> None:
    """A key picks its pass, a name or a path every pass, a loop its passes; --attempt one."""
    place = evolve(working(), attempts=pvector(RUN))
    assert [a.session for a in chosen(place, step, number)] == list(sessions)


@pytest.mark.parametrize(
    ("step", "number", "status", "says"),
    [
        ("", 2, 2, "no step is named"),
        ("review", None, 2, "has no step review; name one of its steps (code, submit)"),
        ("loop@2/code", 3, 2, "has no attempt 3 in fix--typo: its attempts are 1, 2"),
        ("submit", None, 1, "no agent has run submit in fix--typo yet"),
    ],
)
def test_what_names_no_attempt_is_refused(
    step: str, number: int | None, status: int, says: str
) -> None:
    """An unknown step or attempt is bad input (2); a step not yet run has nothing (1)."""
    place = evolve(working(), attempts=pvector(RUN))
    with pytest.raises(UsageError, match=re.escape(says)) as raised:
        chosen(place, step, number)
    assert raised.value.exit_status == status


def test_a_place_no_agent_ran_in_has_nothing_to_show() -> None:
    """Before any agent started, there is no attempt to show: refused, exit status 1."""
    with pytest.raises(UsageError, match="no agent has run in fix--typo yet") as raised:
        chosen(run(made()).place)
    assert raised.value.exit_status == 1
