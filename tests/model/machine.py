"""The behaviours every place machine shares: what the agent, the pane, the lander and time do.

These rules name no rule id: they only move the world. Each family's machine subclasses this and
adds the caller's commands and the invariants its rule ids are about. The one invariant here holds
the transition table to the states the rules reach.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from flume.core.ids import Instant, StageName
from flume.core.kinds import ReportFile
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentReady,
    AgentStateSeen,
    Author,
    LandingBlocked,
    PaneOutput,
    SubmitAsked,
    Tick,
    Told,
    TranscriptEntry,
)
from flume.core.place import (
    AwaitingInput,
    AwaitingWord,
    Delivered,
    Delivering,
    Fanned,
    Finalizing,
    Judging,
    Life,
    Merging,
    Paused,
    Queued,
    Short,
    Starting,
    Working,
    accepts,
    current_step,
    is_live,
)
from flume.core.settings import Settings
from flume.core.status import status
from tests.model.world import FakeAgent, FakeWorld, fix_world

#: Transcript lines that hold a sent prompt's text but were not typed by a person: a tool's
#: result, the agent's words, its program's (Claude Code's meta, compact summary, sidechain,
#: harness and injected lines, its bookkeeping: tests/integration/test_transcript_words.py).
DECOYS: dict[str, dict[str, object]] = {
    "tool_result": {"author": Author.TOOL},
    "agent": {"author": Author.AGENT},
    "system": {"author": Author.SYSTEM},
}


#: Enough stages to reach any kind's report stage by driving the ones before it.
STAGES_AT_MOST = range(4)

#: Each phase and the one word status gives it, as PlaceStatus.phase documents them.
PHASE_WORDS: dict[type, str] = {
    AwaitingWord: "waits-word",
    Queued: "queued",
    Starting: "starting",
    AwaitingInput: "delivering",
    Delivering: "delivering",
    Working: "working",
    Delivered: "delivered",
    Short: "short",
    Judging: "judging",
    Paused: "paused",
    Fanned: "lanes",
    Merging: "merging",
    Finalizing: "finalizing",
}


class PlaceMachine(RuleBasedStateMachine):
    """A place driven through ``step`` against a :class:`FakeWorld`."""

    def make_world(self) -> FakeWorld:
        """The world this machine runs in; subclasses pick the kind and settings."""
        return fix_world(Settings(quiet_seconds=5, confirm_seconds=30, ready_seconds=60))

    @initialize()
    def launch(self) -> None:
        """Launch the place; the world makes it and starts its first stage."""
        self.world = self.make_world()
        assert self.world.launch() is None

    # --- helpers ---------------------------------------------------------------------------------

    def agent(self) -> FakeAgent | None:
        """The live agent, if any."""
        return self.world.live_agent()

    def has_agent(self) -> bool:
        """An agent is live in the world."""
        return self.world.live_agent() is not None

    def has_sends(self) -> bool:
        """The live agent has been sent something."""
        agent = self.world.live_agent()
        return agent is not None and bool(agent.sends)

    def stage(self) -> tuple[StageName, int]:
        """The place's current stage and attempt."""
        assert self.world.place is not None
        return self.world.place.stage.name, self.world.place.stage.attempt

    @invariant()
    def a_live_agent_can_be_told(self) -> None:
        """Wherever an agent is live, its stage's phase accepts a tell (the table's row for it).

        The table refuses a tell for the phase alone only where no agent is live in any state the
        rules reach, so that refusal changes nothing a caller could see.
        """
        place = self.world.place
        assert place is not None
        if is_live(place):
            assert accepts(place.stage.phase, Told), place.stage.phase

    # --- time and the agent ----------------------------------------------------------------------

    @rule(seconds=st.sampled_from([1.0, 4.0, 6.0, 31.0, 61.0]))
    def time_passes(self, seconds: float) -> None:
        """Time passes with nothing seen."""
        self.world.now += seconds
        self.world.feed(Tick(at=self.world.instant()))

    @precondition(has_agent)
    @rule()
    def agent_takes_input(self) -> None:
        """The agent's registry entry says it takes input."""
        agent = self.agent()
        assert agent is not None
        if self.world.activity is not Activity.WAITING:
            self.world.activity, self.world.activity_since = Activity.WAITING, self.world.now
        self.world.feed(AgentReady(at=self.world.instant(), session=agent.session))

    @precondition(has_sends)
    @rule(which=st.integers(min_value=0, max_value=3))
    def agent_takes_a_send(self, which: int) -> None:
        """The agent takes one of the texts pasted to it: the transcript holds it, typed."""
        agent = self.agent()
        assert agent is not None
        sent = agent.sends[min(which, len(agent.sends) - 1)]
        self.world.typed_markers.add(sent.marker)
        self.world.activity, self.world.activity_since = Activity.WORKING, self.world.now
        self.world.last_output = self.world.now
        self.world.feed(
            TranscriptEntry(
                at=self.world.instant(),
                session=agent.session,
                author=Author.PERSON,
                text=f'\n\n<pasted_content id="p1">\n{sent.text}\n</pasted_content id="p1">\n',
            ),
        )

    @precondition(has_sends)
    @rule(decoy=st.sampled_from(sorted(DECOYS)))
    def decoy_line(self, decoy: str) -> None:
        """A transcript line quotes a sent text without being typed by the user."""
        agent = self.agent()
        assert agent is not None
        fields = DECOYS[decoy]
        text = agent.sends[-1].text
        self.world.feed(
            TranscriptEntry(
                at=self.world.instant(),
                session=agent.session,
                text=text,
                **fields,  # type: ignore[arg-type]
            ),
        )

    @precondition(has_agent)
    @rule(activity=st.sampled_from([Activity.WORKING, Activity.WAITING, Activity.ASKING]))
    def agent_says(self, activity: Activity) -> None:
        """A hook says what the agent does."""
        agent = self.agent()
        assert agent is not None
        if activity is not self.world.activity:
            self.world.activity, self.world.activity_since = activity, self.world.now
        self.world.feed(
            AgentStateSeen(at=self.world.instant(), session=agent.session, activity=activity),
        )

    @precondition(has_agent)
    @rule()
    def pane_shows_output(self) -> None:
        """The agent's pane draws something."""
        agent = self.agent()
        assert agent is not None
        self.world.last_output = self.world.now
        self.world.feed(
            PaneOutput(
                at=self.world.instant(),
                session=agent.session,
                last_output_at=self.world.instant(),
            ),
        )

    @precondition(has_agent)
    @rule()
    def agent_commits(self) -> None:
        """The agent commits on the place's branch."""
        self.world.commit()

    @precondition(lambda self: self.has_agent() and self.world.place is not None)
    @rule()
    def agent_writes_report(self) -> None:
        """The agent writes the report its stage names, if it names one."""
        place = self.world.place
        assert place is not None
        deliverable = current_step(place).deliverable
        if isinstance(deliverable, ReportFile):
            self.world.write_report(deliverable.path)

    @rule(earlier=st.sampled_from([0.5, 1.0, 60.0]))
    def old_report_appears(self, earlier: float) -> None:
        """The report the stage names appears, last written before the stage started.

        Left by an earlier attempt or copied back by a person: it is not this stage's work.
        """
        place = self.world.place
        assert place is not None
        deliverable = current_step(place).deliverable
        written = self.world.reports.get(getattr(deliverable, "path", ""))
        if written is not None and written >= place.stage.started_at:
            return  # this stage's own report stands: an older copy never replaces it
        if isinstance(deliverable, ReportFile):
            self.world.write_report(deliverable.path, place.stage.started_at - earlier)

    @rule()
    def old_report_then_quiet(self) -> None:
        """The stages run to one that names a report; an old copy of it appears; all goes quiet.

        The agent takes its prompt and waits long enough to be quiet, having written nothing:
        the report older than the stage must not end it (StageMachine checks what ended).
        """
        for _stage in STAGES_AT_MOST:
            place = self.world.place
            assert place is not None
            if isinstance(current_step(place).deliverable, ReportFile):
                break
            if not self.world.drive_stage():
                return
        self.old_report_appears(1.0)
        if self.has_sends():
            self.agent_takes_a_send(3)
        if self.has_agent():
            self.agent_says(Activity.WAITING)
        self.time_passes(61.0)

    @precondition(has_agent)
    @rule()
    def agent_submits(self) -> None:
        """The agent runs ``flume submit`` (refused outside a landing stage)."""
        self.world.feed(SubmitAsked(at=self.world.instant()))

    @precondition(lambda self: self.world.landing)
    @rule()
    def lander_lands(self) -> None:
        """The lander puts the branch on base."""
        self.world.land()

    @precondition(lambda self: self.world.landing)
    @rule()
    def base_blocks_the_landing(self) -> None:
        """The base repository's state (a lock git left, a dirty checkout) keeps it from moving."""
        self.world.landing = False
        lock = "/r/.git/index.lock"
        self.world.feed(
            LandingBlocked(
                at=self.world.instant(),
                reason=f"main cannot be moved forward: git's lock {lock} is held",
                output=f"fatal: Unable to create '{lock}': File exists.",
                way_out=f"remove the lock {lock} if no git process runs there",
            ),
        )

    @precondition(has_agent)
    @rule()
    def agent_crashes(self) -> None:
        """The agent's process dies on its own."""
        agent = self.agent()
        assert agent is not None
        agent.live = False
        self.world.activity, self.world.activity_since = Activity.STOPPED, self.world.now
        self.world.feed(AgentExited(at=Instant(self.world.now), session=agent.session))

    # --- what every machine checks ---------------------------------------------------------------

    @invariant()
    def phase_has_its_word(self) -> None:
        """Status names an active place's phase by its word; one no longer active, its life."""
        place = self.world.place
        assert place is not None
        said = status(place).phase.value
        if place.life in {Life.MAKING, Life.ACTIVE}:
            assert said == PHASE_WORDS[type(place.stage.phase)]
        else:
            assert said == place.life.value
