"""R1-R4, R7 and R11 model-checked: the place, setup, fresh agents, stage end and status."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from flume.core.actions import Event, MakeWorktree, Report, StartAgent
from flume.core.ids import StageName
from flume.core.kinds import Commit, Landing, ReportFile, stage_named, steps
from flume.core.observations import (
    Activity,
    AgentStateSeen,
    ProceedAsked,
    RetryAsked,
    Tick,
    TurnEnded,
    Usage,
)
from flume.core.place import (
    AwaitingWord,
    Delivered,
    Life,
    Short,
    Working,
    evolve,
    has_deliverable,
)
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import replay, step
from tests.model.machine import PlaceMachine
from tests.model.world import BASE, CREW, REPOSITORY, FakeWorld

SETTINGS = Settings(quiet_seconds=5, confirm_seconds=30, ready_seconds=60)
STAGES = [step.name for step in steps(CREW.body)]


class StageMachine(PlaceMachine):
    """A declared four-stage kind, some stages waiting on the caller, with or without setup."""

    @initialize(
        waits=st.sets(st.sampled_from(STAGES[1:])),
        setup=st.booleans(),
        setup_ok=st.booleans(),
    )
    def launch(self, waits: set[str], setup: bool, setup_ok: bool) -> None:  # type: ignore[override]
        """Launch a crew place: its later stages may wait on the caller; its setup may fail."""
        self.world = FakeWorld(
            settings=SETTINGS,
            kind=CREW,
            waits=frozenset(StageName(name) for name in waits),
            setup=(("make", "setup"),) if setup else (),
            setup_ok=setup_ok,
        )
        assert self.world.launch() is None

    @rule(
        usage=st.none()
        | st.builds(
            Usage,
            input=st.integers(0, 10**6),
            output=st.integers(0, 10**6),
            cache_read=st.integers(0, 10**6),
            cache_creation=st.integers(0, 10**6),
        ),
        later=st.sampled_from([0.0, 1.0]),
    )
    def agent_turn_ends(self, usage: Usage | None, later: float) -> None:
        """TURN-ENDED-ONLY-REPORTED: a turn's end, its usage known or not, is reported, once.

        A kind gated by deliverables, with no budgets: the place is the place it was, its clock
        moved to the turn's end and what the turn spent counted, and the one action is the
        ``turn-ended`` report naming the tokens (or that none were reported): no follow-up
        runs, so no decision of the rules changes.
        """
        place = self.world.place
        assert place is not None
        agent = self.agent()
        self.world.now += later
        seen = TurnEnded(
            at=self.world.instant(),
            session=agent.session if agent is not None else None,
            usage=usage,
        )
        decided = step(SETTINGS, place, seen)
        counted = decided.place.spent
        assert decided.place == evolve(
            place,
            now=max(place.now, seen.at),
            spent=counted,
            stage=decided.place.stage,
        )
        assert decided.place.stage == attrs.evolve(place.stage, turns=decided.place.stage.turns)
        ours = agent is not None and place.agent is not None and not place.agent.ending
        ours = ours and place.life is Life.ACTIVE
        assert counted.turns == place.spent.turns + (1 if ours else 0)
        (report,) = decided.actions
        assert isinstance(report, Report)
        assert report.event is Event.TURN_ENDED
        assert report.stage == place.stage.name
        if usage is None:
            assert report.text == "turn ended: usage not reported"
        else:
            assert f"{usage.total} tokens" in report.text
        self.world.feed(seen)

    @rule()
    def caller_proceeds(self) -> None:
        """The caller gives its word (refused unless a stage waits on it)."""
        before = self.world.place
        refusal = self.world.feed(ProceedAsked(at=self.world.instant()))
        if refusal is not None:
            assert self.world.place is before

    @rule()
    def caller_retries(self) -> None:
        """The caller retries a short stage (refused otherwise); a failed setup may now pass."""
        self.world.setup_ok = True
        self.world.feed(RetryAsked(at=self.world.instant(), words=""))

    @precondition(
        lambda self: (
            self.world.place is not None
            and isinstance(self.world.place.stage.phase, Working)
            and not has_deliverable(self.world.place)
            and self.world.live_agent() is not None
        ),
    )
    @rule()
    def pane_goes_quiet_without_deliverable(self) -> None:
        """STAGE-NEVER-ON-QUIET: an agent that waits, silent a long time, ends no stage."""
        before = self.world.place
        agent = self.world.live_agent()
        assert before is not None
        assert agent is not None
        self.world.activity, self.world.activity_since = Activity.WAITING, self.world.now
        self.world.feed(
            AgentStateSeen(
                at=self.world.instant(), session=agent.session, activity=Activity.WAITING
            ),
        )
        self.world.now += 600
        self.world.feed(Tick(at=self.world.instant()))
        after = self.world.place
        assert after is not None
        assert after.stage.name == before.stage.name
        assert after.completed == before.completed
        assert not isinstance(after.stage.phase, Delivered)

    @invariant()
    def place_is_named_by_the_launch(self) -> None:
        """R1: the worktree is places/<kind>--<name> on <prefix>/<name>, cut from the base."""
        made = [a for a in self.world.actions if isinstance(a, MakeWorktree)]
        assert made
        for action in made:
            assert action.path == f"{REPOSITORY}/places/crew--x"
            assert action.branch == "crew/x"
            assert action.base == BASE

    @invariant()
    def setup_before_any_agent(self) -> None:
        """R2: with a setup declared, no agent starts until it succeeded; a failure stops short."""
        if not self.world.setup:
            return
        ready = False
        for before, seen, decision in self.world.steps:
            del before
            if type(seen).__name__ == "SetupFinished":
                ready = ready or seen.ok  # type: ignore[union-attr]
                if not seen.ok:  # type: ignore[union-attr]
                    phase = decision.place.stage.phase
                    assert isinstance(phase, Short)
                    assert phase.cause.value == "setup-failed"
            if any(isinstance(a, StartAgent) for a in decision.actions):
                assert ready

    @invariant()
    def one_place_for_every_stage(self) -> None:
        """R3: every agent of every stage starts in the one place."""
        place = self.world.place
        assert place is not None
        assert all(a.path == place.path for a in self.world.actions if isinstance(a, StartAgent))

    @invariant()
    def fresh_agent_for_each_start(self) -> None:
        """R4: an agent starts only when none is live, and each stage attempt starts once."""
        assert all(count == 0 for count in self.world.live_at_start)
        started = [(a.stage, a.attempt) for a in self.world.actions if isinstance(a, StartAgent)]
        assert len(started) == len(set(started))

    @invariant()
    def stages_run_in_order(self) -> None:
        """R7: the stages completed are a prefix of the kind's stages, in order."""
        place = self.world.place
        assert place is not None
        assert list(place.completed) == STAGES[: len(place.completed)]

    @invariant()
    def deliverable_made_since_start(self) -> None:
        """STAGE-DELIVERABLE-SINCE-START: a stage ends only on a deliverable made since it began."""
        for before, _seen, decision in self.world.steps:
            ended = [
                a
                for a in decision.actions
                if isinstance(a, Report) and a.event is Event.STAGE_ENDED
            ]
            if not ended:
                continue
            assert before is not None
            started = before.stage.started_at
            deliverable = stage_named(CREW, before.stage.name).deliverable
            if isinstance(deliverable, Commit):
                made = [
                    self.world.git.made_at[sha]
                    for sha in self.world.git.branches.get(before.branch, [])
                ]
                assert any(at >= started for at in made)
            elif isinstance(deliverable, ReportFile):
                assert self.world.reports.get(deliverable.path, -1.0) >= started
            elif isinstance(deliverable, Landing):
                assert self.world.landed_at is not None
                assert self.world.landed_at >= started

    @invariant()
    def nothing_counts_before_delivery(self) -> None:
        """STAGE-AFTER-DELIVERY: no deliverable counts before the transcript holds the prompt."""
        attempt: dict[str, int] = {}
        delivered: set[tuple[str, int]] = set()
        for action in self.world.actions:
            if isinstance(action, StartAgent):
                attempt[action.stage] = action.attempt
            if not isinstance(action, Report) or action.stage is None:
                continue
            key = (action.stage, attempt.get(action.stage, 0))
            if action.event is Event.PROMPT_DELIVERED:
                delivered.add(key)
            if action.event in {Event.DELIVERABLE, Event.STAGE_ENDED}:
                assert key in delivered

    @invariant()
    def ends_only_when_quiet(self) -> None:
        """STAGE-ENDS-WHEN-QUIET: a stage ends only once its agent waited quietly long enough."""
        quiet = SETTINGS.quiet_seconds
        for now, activity, since, last_output, live in self.world.ends:
            if not live:
                continue
            assert activity in {Activity.WAITING, Activity.STOPPED}
            assert now - since >= quiet
            assert now - last_output >= quiet

    @invariant()
    def waiting_stage_needs_the_word(self) -> None:
        """STAGE-WAITS-WORD: a stage that waits on the caller starts only after its word."""
        released: set[str] = set()
        for before, seen, decision in self.world.steps:
            if (
                isinstance(seen, ProceedAsked)
                and before is not None
                and isinstance(before.stage.phase, AwaitingWord)
            ):
                released.add(before.stage.name)
            for action in decision.actions:
                if (
                    isinstance(action, StartAgent)
                    and action.attempt == 1
                    and action.stage in self.world.waits
                ):
                    assert action.stage in released

    @invariant()
    def status_is_a_projection(self) -> None:
        """R11: status is a pure projection: the journal's replay gives the same status."""
        place = self.world.place
        assert place is not None
        replayed = replay(SETTINGS, self.world.journal)
        assert replayed == place
        view = status(place)
        assert view == status(replayed)
        assert view.agent in set(Activity)
        if place.life is Life.ACTIVE:
            assert view.deliverable_exists == has_deliverable(place)
        assert view.waits_on_caller == isinstance(place.stage.phase, AwaitingWord)
        if place.agent is None:
            assert view.agent is Activity.STOPPED


TestStage = StageMachine.TestCase
