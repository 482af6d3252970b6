"""LAND-BASE-BLOCKED-WAITS and LAND-HELD-FOR-A-PERSON model-checked: a landing that waits.

The machine starts with a fix submitted (its code stage done, its branch handed to the lander)
and lets the lander land, the base's state block the landing, the lander hold it for a person
(a fenced run's change to what runs outside), time pass, and the agent and the caller do what
they may meanwhile, approving among it.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from flume.core.actions import Event, Land, Report, SendTell
from flume.core.errors import UsageError
from flume.core.ids import Instant, Sha
from flume.core.observations import (
    AgentReady,
    ApproveAsked,
    Author,
    DropAsked,
    Landed,
    LandingBlocked,
    LandingHeld,
    NeedsSaid,
    RetryAsked,
    SubmitAsked,
    Tick,
    Told,
    TranscriptEntry,
)
from flume.core.place import Life, PauseCause, Paused, Submission, Working
from flume.core.settings import LAND_RETRY_MOST_SECONDS
from flume.core.status import status
from flume.core.step import step
from tests.model.machine import PlaceMachine
from tests.model.test_rules import SUBMIT_SESSION, S, submitting


class LandingMachine(PlaceMachine):
    """A fix whose submission the lander lands, or the base repository's state blocks."""

    #: How many of the world's steps the invariant has looked at.
    checked: int = 0
    #: How many of them the hold's invariant has looked at.
    held_checked: int = 0
    #: The heads a person approved landing, at a landing held for them.
    approved: frozenset[Sha] = frozenset()

    @initialize()
    def launch(self) -> None:
        """Launch a fix, carry its code stage through, and let the agent submit."""
        super().launch()
        assert self.world.drive_stage()
        submit = self.world.live_agent()
        assert submit is not None
        self.world.feed(AgentReady(at=self.world.instant(), session=submit.session))
        assert submit.sends
        self.world.feed(
            TranscriptEntry(
                at=self.world.instant(),
                session=submit.session,
                author=Author.PERSON,
                text=submit.sends[-1].text,
            ),
        )
        assert self.world.feed(SubmitAsked(at=self.world.instant())) is None
        assert self.world.landing

    @rule()
    def caller_tells(self) -> None:
        """The caller tells the agent something (refused when no agent takes it)."""
        self.world.feed(Told(at=self.world.instant(), text="the lock is mine"))

    @rule()
    def caller_drops(self) -> None:
        """The caller drops the work."""
        self.world.feed(DropAsked(at=self.world.instant()))

    @rule(head=st.sampled_from([Sha("h1"), Sha("h2")]))
    def lander_holds_it_for_a_person(self, head: Sha) -> None:
        """The lander holds the landing: its change touches what runs outside a sandbox."""
        self.world.feed(LandingHeld(at=self.world.instant(), head=head, files=[".flume.toml"]))

    @rule()
    def caller_approves(self) -> None:
        """The caller approves (refused unless something waits on approval)."""
        place = self.world.place
        paused = place.stage.phase if place is not None else None
        try:
            self.world.feed(ApproveAsked(at=self.world.instant()))
        except UsageError:
            return
        if isinstance(paused, Paused) and paused.landing is not None:
            self.approved |= {paused.landing}

    @rule()
    def caller_retries(self) -> None:
        """The caller retries (refused unless the stage stopped short)."""
        self.world.feed(RetryAsked(at=self.world.instant()))

    @invariant()
    def a_blocked_landing_waits_untold_and_is_tried_again(self) -> None:
        """LAND-BASE-BLOCKED-WAITS: a landing the base repository's state blocks is not the agent's.

        Nothing goes to the agent (no tell held or typed), status names the wait with the way
        out, and once its wait is over the next tick asks for the landing again.
        """
        for before, seen, decision in self.world.steps[self.checked :]:
            after = decision.place
            if (
                isinstance(seen, LandingBlocked)
                and before is not None
                and before.submission is Submission.SUBMITTED
            ):
                assert after.submission is Submission.BLOCKED
                assert after.held == before.held
                assert after.sending == before.sending
                assert not any(isinstance(a, SendTell) for a in decision.actions)
                shown = status(after)
                assert shown.submission is Submission.BLOCKED
                assert seen.reason in shown.submission_note
                assert seen.way_out in shown.submission_note
                assert after.land_retry_at is not None
                assert after.land_retry_at > seen.at
            if (
                isinstance(seen, Tick)
                and before is not None
                and before.life is Life.ACTIVE
                and before.submission is Submission.BLOCKED
                and isinstance(before.stage.phase, Working)
                and before.land_retry_at is not None
            ):
                due = Instant(max(before.now, seen.at)) >= before.land_retry_at
                asked = any(isinstance(a, Land) for a in decision.actions)
                assert asked == due
                assert (after.submission is Submission.SUBMITTED) == due
        self.checked = len(self.world.steps)

    @invariant()
    def a_held_landing_lands_only_what_a_person_approved(self) -> None:
        """LAND-HELD-FOR-A-PERSON: a held landing pauses for a person; it lands what they read.

        Held while submitted, the run pauses (``approval``) naming the files, its agent ended,
        and nothing more is landed until a person approves; every landing asked carries either
        no approval or a head a person approved at such a pause.
        """
        for before, seen, decision in self.world.steps[self.held_checked :]:
            after = decision.place
            for action in decision.actions:
                if isinstance(action, Land):
                    assert action.reviewed is None or action.reviewed in self.approved
            if (
                isinstance(seen, LandingHeld)
                and before is not None
                and before.submission is Submission.SUBMITTED
            ):
                phase = after.stage.phase
                assert isinstance(phase, Paused)
                assert phase.cause is PauseCause.APPROVAL
                assert phase.landing == seen.head
                assert all(name in phase.words for name in seen.files)
                assert after.agent is None or after.agent.ending
                assert not any(isinstance(a, Land) for a in decision.actions)
        self.held_checked = len(self.world.steps)


TestLanding = LandingMachine.TestCase


# --- examples -----------------------------------------------------------------------------------

BLOCKED = LandingBlocked(
    at=Instant(30),
    reason="main cannot be moved forward: git's lock /r/.git/index.lock is held",
    output="/r/.git/index.lock exists: a git process running there holds it",
    way_out="remove the lock /r/.git/index.lock if no git process runs there",
)


def test_a_blocked_landing_is_named_for_the_caller_and_not_told_to_the_agent() -> None:
    """The wait shows in status with why, the way out and git's words; the agent hears nothing."""
    place = submitting()
    decided = step(S, place, BLOCKED)
    after = decided.place
    assert after.submission is Submission.BLOCKED
    assert after.submission_note.splitlines() == [BLOCKED.reason, BLOCKED.way_out, BLOCKED.output]
    assert not after.held
    assert after.sending is None
    reports = [a for a in decided.actions if isinstance(a, Report)]
    assert [(r.event, r.text) for r in reports] == [(Event.LANDING_BLOCKED, after.submission_note)]
    assert not any(isinstance(a, (SendTell, Land)) for a in decided.actions)
    assert status(after).submission is Submission.BLOCKED


def test_a_blocked_landing_is_tried_again_after_a_wait_that_doubles() -> None:
    """2 s after the first block, 4 s after the second; the same words are reported once."""
    place = step(S, submitting(), BLOCKED).place
    assert place.land_retry_at == Instant(32)
    early = step(S, place, Tick(at=Instant(31.9)))
    assert not early.actions
    assert early.place.submission is Submission.BLOCKED
    due = step(S, place, Tick(at=Instant(32)))
    (land,) = [a for a in due.actions if isinstance(a, Land)]
    assert land == Land(
        path=place.path, branch=place.branch, base=place.launch.base, start=place.start
    )
    assert due.place.submission is Submission.SUBMITTED
    # still the caller's to see while tried
    assert status(due.place).submission is Submission.BLOCKED
    again = step(S, due.place, attrs.evolve(BLOCKED, at=Instant(33)))
    assert again.place.land_retry_at == Instant(37)
    assert not any(isinstance(a, Report) for a in again.actions)
    other = attrs.evolve(BLOCKED, at=Instant(33), reason="main is checked out dirty in /r")
    reported = step(S, due.place, other)
    assert [a.event for a in reported.actions if isinstance(a, Report)] == [Event.LANDING_BLOCKED]


def test_the_wait_between_tries_stops_growing_at_its_most() -> None:
    """However long the base stays blocked, it is looked at again at least every 30 s."""
    place = submitting()
    at = 30.0
    for _ in range(40):
        place = step(S, place, attrs.evolve(BLOCKED, at=Instant(at))).place
        assert place.land_retry_at is not None
        assert place.land_retry_at - at <= LAND_RETRY_MOST_SECONDS
        at = place.land_retry_at
        place = step(S, place, Tick(at=Instant(at))).place
        assert place.submission is Submission.SUBMITTED
    assert place.land_blocked == 40


def test_a_block_seen_when_nothing_waits_on_the_lander_changes_nothing() -> None:
    """A late report of a block after the landing, or before any submission, is ignored."""
    place = step(S, submitting(), Landed(at=Instant(29), base_sha=Sha("b1"))).place
    assert step(S, place, BLOCKED).place.submission is Submission.LANDED


def test_a_blocked_landing_of_a_stage_that_stopped_short_waits_for_its_retry() -> None:
    """The agent stopped short while the landing waited: nothing lands until a retry."""
    place = step(S, submitting(), BLOCKED).place
    short = step(S, place, NeedsSaid(at=Instant(31), words="stuck", session=SUBMIT_SESSION))
    later = step(S, short.place, Tick(at=Instant(60)))
    assert not any(isinstance(a, Land) for a in later.actions)
    assert later.place.submission is Submission.BLOCKED


HELD = LandingHeld(at=Instant(30), head=Sha("c3"), files=[".flume.toml", ".githooks/pre-push"])


def test_a_held_landing_pauses_for_a_person_and_lands_the_head_they_approved() -> None:
    """Held, the run pauses naming the files; approved, the stage runs again, landing that head."""
    held = step(S, submitting(), HELD)
    place = held.place
    phase = place.stage.phase
    assert isinstance(phase, Paused)
    assert (phase.cause, phase.landing) == (PauseCause.APPROVAL, Sha("c3"))
    assert ".flume.toml, .githooks/pre-push" in phase.words
    assert place.submission is Submission.HELD
    assert "flume approve" in (status(place).resolve or "")
    approved = step(S, place, ApproveAsked(at=Instant(31)))
    assert approved.place.reviewed == Sha("c3")
    # No longer held: the stage's new attempt submits afresh.
    assert approved.place.submission is Submission.NONE
    assert approved.place.stage.attempt == place.stage.attempt + 1
    assert next(a.event for a in approved.actions if isinstance(a, Report)) is Event.RESUMED


def test_a_hold_seen_when_nothing_waits_on_the_lander_changes_nothing() -> None:
    """A hold reported after the landing is ignored."""
    place = step(S, submitting(), Landed(at=Instant(29), base_sha=Sha("b1"))).place
    assert step(S, place, HELD).place.submission is Submission.LANDED
