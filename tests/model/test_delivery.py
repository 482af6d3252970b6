"""R5 delivery, model-checked: two sends at most, never began only after two, transcript only."""

from __future__ import annotations

from collections import Counter

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from flume.core.actions import Event, Report, SendPrompt
from flume.core.delivery import is_typed_by_user
from flume.core.ids import SessionId
from flume.core.observations import NeedsSaid, RetryAsked, TranscriptEntry
from flume.core.place import Delivering, Short, Working
from flume.core.settings import MAX_SENDS
from tests.model.machine import PlaceMachine


class DeliveryMachine(PlaceMachine):
    """A fix's stages delivered against an agent that takes, loses and quotes what it is sent."""

    @precondition(
        lambda self: (
            self.world.place is not None and isinstance(self.world.place.stage.phase, Short)
        )
    )
    @rule()
    def caller_retries(self) -> None:
        """The caller retries a stage that ended short, so delivery starts over."""
        assert self.world.feed(RetryAsked(at=self.world.instant(), words="try again")) is None

    @precondition(lambda self: self.has_agent())
    @rule(words=st.sampled_from(["the API key", "a decision"]))
    def agent_needs(self, words: str) -> None:
        """The agent runs ``flume needs`` at once, maybe before its prompt's line is read."""
        self.world.feed(NeedsSaid(at=self.world.instant(), words=words))

    @invariant()
    def a_prompt_taken_is_reported_once(self) -> None:
        """DELIVERY-LATE-PROOF: an agent that took its prompt is reported delivered once.

        Once, whether the line was read while delivering or after the stage stopped short or
        moved on (``flume needs`` heard first); never for an agent that took none.
        """
        took: set[SessionId] = set()
        reported: Counter[SessionId] = Counter()
        for before, seen, decision in self.world.steps:
            delivered = sum(
                isinstance(action, Report) and action.event is Event.PROMPT_DELIVERED
                for action in decision.actions
            )
            if not isinstance(seen, TranscriptEntry):
                assert delivered == 0
                continue
            reported[seen.session] += delivered
            agent = before.agent if before is not None else None
            sent = (
                self.world.agents[seen.session].sends if seen.session in self.world.agents else []
            )
            markers = {send.marker for send in sent if isinstance(send, SendPrompt)}
            if (
                agent is not None
                and agent.session == seen.session
                and is_typed_by_user(seen)
                and any(marker in seen.text for marker in markers)
            ):
                took.add(seen.session)
        assert {session for session, count in reported.items() if count} == took
        assert all(count == 1 for count in reported.values() if count)

    @invariant()
    def delivery_state_is_consistent(self) -> None:
        """R5: an attempt delivering has sent once or twice; a working one, at least once."""
        place = self.world.place
        assert place is not None
        phase = place.stage.phase
        if isinstance(phase, Delivering):
            assert 1 <= place.stage.sends <= MAX_SENDS
        if isinstance(phase, Working):
            assert place.stage.sends >= 1

    @invariant()
    def at_most_two_sends(self) -> None:
        """DELIVERY-TWO-SENDS: no stage attempt's prompt is ever sent a third time."""
        assert all(count <= MAX_SENDS for count in self.world.sends_per_attempt().values())

    @invariant()
    def never_began_only_after_two_misses(self) -> None:
        """DELIVERY-NEVER-BEGAN: "never began" is reported only after two sends went missing."""
        sends = self.world.sends_per_attempt()
        attempt: dict[str, int] = {}
        missing: Counter[tuple[str, int]] = Counter()
        for action in self.world.actions:
            if isinstance(action, SendPrompt):
                attempt[action.stage] = action.attempt
            if isinstance(action, Report) and action.stage is not None:
                key = (action.stage, attempt.get(action.stage, 0))
                if action.event is Event.PROMPT_MISSING:
                    missing[key] += 1
                if action.event is Event.NEVER_BEGAN:
                    assert sends[key] == MAX_SENDS
                    assert missing[key] == MAX_SENDS

    @invariant()
    def delivered_only_when_typed(self) -> None:
        """DELIVERY-TRANSCRIPT-ONLY: delivered only once the transcript holds the prompt, typed."""
        last_marker: dict[str, str] = {}
        for action in self.world.actions:
            if isinstance(action, SendPrompt):
                last_marker[action.stage] = action.marker
            if isinstance(action, Report) and action.event is Event.PROMPT_DELIVERED:
                assert action.stage is not None
                assert last_marker[action.stage] in self.world.typed_markers


TestDelivery = DeliveryMachine.TestCase
