"""An orchestrate block: a lead spawning children, hearing their news, told the join, judged last.

The run is the FakeWorld's place, its lead the world's agent; each child is a place of its own,
which the world stands in for (``FakeLane``): launched, it runs until the machine ends it, and
the world tells the run so (``LaneEnded``, ``ChildNews``), as the supervisor does when it reads
the child's journal. The world restarts the shell at any line: the run replayed from its
journal, its pending actions performed again.
"""

from __future__ import annotations

from collections import Counter

import attrs
import pytest
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pyrsistent import pset, pvector

from flume.core.actions import Event, JudgeGate, LaneOrder, LaunchLane, NotifyLane, OrderLane
from flume.core.delivery import render_prompt
from flume.core.errors import UsageError
from flume.core.ids import BlockName, KindName, StageName
from flume.core.kinds import (
    Budgets,
    Commit,
    Kind,
    Orchestrate,
    Sequence,
    Step,
    Verdict,
    check_kind,
)
from flume.core.observations import (
    ChildNews,
    ComposeSaid,
    DropAsked,
    LaneEnded,
    NotifySaid,
    SpawnSaid,
)
from flume.core.place import JoinStage, LaneState, Life, Place, evolve, leading
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.workflow.lanes import children
from flume.core.workflow.orchestrate import PAUSED, launch_child, spawned_child
from tests.model.world import FakeWorld

S = Settings()


def crew(
    *,
    most: int = 3,
    cap: int | None = None,
    runs: int = 0,
    budgets: Budgets | None = None,
    spread: bool = False,
) -> Kind:
    """A lead (a verdict) that may spawn coders (each a commit), notify them, compose ``runs``."""
    lead = Step(
        name=StageName("lead"),
        prompt="Spawn a coder a slice; when all are done, write $verdict.",
        deliverable=Verdict(),
        may=pset(["spawn", "notify", *(["compose"] if runs else [])]),
    )
    coder = Step(
        name=StageName("coder"),
        prompt="Build: $goal. Commit.",
        deliverable=Commit(),
        may=pset(["progress", "ask"]),
    )
    block = Orchestrate(
        name=BlockName("build"),
        lead=lead,
        template=coder,
        max=most,
        cap=cap,
        compose_runs=runs,
        spread=spread,
    )
    kind = Kind(
        name=KindName("crew"),
        prefix="crew",
        body=Sequence(blocks=pvector([block])),
        budgets=budgets or Budgets(),
    )
    check_kind(kind)
    return kind


#: A fragment a lead composes: one step, a commit.
DOCS = Kind(
    name=KindName("docs"),
    prefix="docs",
    body=Sequence(
        blocks=pvector([Step(name=StageName("write"), prompt="Write.", deliverable=Commit())])
    ),
)


def world_of(kind: Kind) -> FakeWorld:
    """A world that launched ``kind``; its lead started and told its prompt."""
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    assert world.deliver()
    return world


def spawn(world: FakeWorld, goal: str = "slice a") -> UsageError | None:
    """The lead runs ``flume spawn --goal``."""
    agent = world.live_agent()
    assert agent is not None
    return world.feed(SpawnSaid(at=world.instant(), goal=goal, session=agent.session))


def end_child(world: FakeWorld, lane: str, *, finished: bool) -> None:
    """The child's place finishes (a commit on its branch) or is dropped; the run is told."""
    found = world.lanes[lane]
    head = world.git.commit(found.branch, world.now) if finished else world.git.head(found.branch)
    found.life = "finished" if finished else "dropped"
    world.now += 1
    seen = LaneEnded(at=world.instant(), lane=lane, finished=finished, head=head)
    assert world.feed(seen) is None


def test_spawns_past_max_are_refused_and_nothing_is_journaled() -> None:
    """Three coders spawned, the fourth refused (exit 1), journaling and launching nothing."""
    world = world_of(crew(most=3, cap=2))
    for goal in ("a", "b", "c"):
        assert spawn(world, goal) is None
    journaled = len(world.journal)
    refused = spawn(world, "d")
    assert refused is not None
    assert refused.exit_status == 1
    assert "may spawn 3 coder children at most, and 3 are spawned" in str(refused)
    assert len(world.journal) == journaled
    launched = [a for a in world.actions if isinstance(a, LaunchLane)]
    assert [a.lane for a in launched] == ["coder-1", "coder-2"]
    assert all(a.launch.led and a.launch.goal for a in launched)
    end_child(world, "coder-1", finished=True)
    launched = [a for a in world.actions if isinstance(a, LaunchLane)]
    assert [a.lane for a in launched] == ["coder-1", "coder-2", "coder-3"]
    assert launched[-1].launch.goal == "c"


def test_the_lead_is_judged_only_once_the_children_are_merged_and_it_was_told() -> None:
    """The lead's turns end while a child works: no gate read; then merge, tell, verdict."""
    world = world_of(crew(most=2))
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    world.write_verdict("done")
    assert world.end_turn() is None
    assert not [a for a in world.actions if isinstance(a, JudgeGate)]
    end_child(world, "coder-1", finished=True)
    end_child(world, "coder-2", finished=True)
    # The lead waits: each piece of news is sent as it comes, then the join is told.
    for _ in range(2):
        assert world.deliver()
        assert not [a for a in world.actions if isinstance(a, JudgeGate)]
        assert world.end_turn() is None
    assert world.merges == [("coder-1", "coder-2")]
    place = world.place
    assert place is not None
    assert place.join is JoinStage.TOLD
    assert world.deliver()
    told = world.live_agent()
    assert told is not None
    assert "All children of build are terminal" in told.sends[-1].text
    assert world.end_turn() is None
    assert [a.stage for a in world.actions if isinstance(a, JudgeGate)] == ["lead"]
    assert world.place is not None
    assert world.place.life is Life.FINISHED
    orders = [a for a in world.actions if isinstance(a, OrderLane)]
    assert {a.order for a in orders} == {LaneOrder.TIDY}


def test_a_child_s_question_and_pause_reach_the_lead_and_the_run_s_status() -> None:
    """A question's news names the answer command; a paused child shows on the run's status."""
    world = world_of(crew(most=2))
    assert spawn(world) is None
    for ident, text in (
        ("started", "started (crew--x+coder-1)"),
        ("q1", 'asks q1: Hello? Answer it: flume answer crew--x+coder-1 q1 "<your answer>"'),
        (f"{PAUSED}coder#1:budget", "paused (budget): budget turns spent"),
    ):
        assert (
            world.feed(ChildNews(at=world.instant(), lane="coder-1", id=ident, text=text)) is None
        )
    assert world.place is not None
    view = status(world.place)
    assert view.paused == "child-paused"
    assert (
        view.paused_words == "child coder-1 (crew--x+coder-1) paused (budget): budget turns spent"
    )
    assert world.end_turn() is None
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    news = agent.sends[-1].text
    assert news.count("coder-1:") == 3
    assert "flume answer crew--x+coder-1 q1" in news


def test_a_goal_spawned_again_names_its_child_and_starts_none() -> None:
    """A lead retried spawns what it spawned: the same goal is its child's, within max 2.

    The fault trials: a crew lead retried after tmux was killed spawned slice a again, hit its
    max, and the run finished without slice c. Words a notify added do not make it another.
    """
    world = world_of(crew(most=2, cap=1))
    assert world.place is not None
    assert spawned_child(world.place, "slice a") is None  # the block not entered yet
    assert spawn(world, "slice a") is None
    assert spawn(world, "slice b") is None
    agent = world.live_agent()
    assert agent is not None
    assert (
        world.feed(NotifySaid(at=world.instant(), to="all", text="tabs", session=agent.session))
        is None
    )
    launches = [a for a in world.actions if isinstance(a, LaunchLane)]
    lanes = world.place.lanes
    for goal in ("slice a", " slice b "):
        assert spawn(world, goal) is None
    assert world.place.lanes == lanes
    assert [a for a in world.actions if isinstance(a, LaunchLane)] == launches
    twin = spawned_child(world.place, "slice b")
    assert twin is not None
    assert (twin.lane, twin.state) == ("coder-2", LaneState.WAITING)
    # Children of a block the run has left (its lanes kept for another step) are no goal's now.
    assert spawned_child(evolve(world.place, lanes_key="an earlier entry"), "slice b") is None
    assert spawn(world, "slice c") is not None  # past max 2: a third goal is refused


def test_notify_reaches_a_running_child_and_waits_in_the_goal_of_one_not_started() -> None:
    """A running child's journal takes the words; a waiting one's goal holds them."""
    world = world_of(crew(most=2, cap=1))
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    agent = world.live_agent()
    assert agent is not None
    seen = NotifySaid(at=world.instant(), to="all", text="use tabs", session=agent.session)
    assert world.feed(seen) is None
    (notified,) = [a for a in world.actions if isinstance(a, NotifyLane)]
    assert notified.place == "crew--x+coder-1"
    assert "use tabs" in notified.text
    assert world.place is not None
    assert "use tabs" in world.place.lanes["coder-2"].goal
    unknown = NotifySaid(at=world.instant(), to="coder-9", text="hi", session=agent.session)
    refused = world.feed(unknown)
    assert refused is not None
    assert refused.exit_status == 2


class OrchestrateMachine(RuleBasedStateMachine):
    """A lead and its children against news, ends, drops and shells that die."""

    world: FakeWorld

    @initialize(
        most=st.integers(min_value=1, max_value=3),
        cap=st.none() | st.integers(min_value=1, max_value=2),
        runs=st.integers(min_value=0, max_value=2),
    )
    def launch(self, most: int, cap: int | None, runs: int) -> None:
        """Launch the crew with its max, cap and compose runs drawn; its lead told its prompt."""
        self.most, self.cap, self.runs = most, cap or most + runs, runs
        self.budgets = Budgets(turns=30, tokens=10_000)
        self.world = world_of(crew(most=most, cap=cap, runs=runs, budgets=self.budgets))
        self.dropped_at: int | None = None
        #: The model of each child's question its run shows: its news's words and instant.
        self.asking: dict[str, tuple[str, float]] = {}

    def _running(self) -> list[str]:
        return [lane for lane, found in self.world.lanes.items() if found.life == "running"]

    def _place(self) -> Place:
        assert self.world.place is not None
        return self.world.place

    @rule(goal=st.sampled_from(["slice a", "slice b", " slice a", "slice c"]))
    def the_lead_spawns(self, goal: str) -> None:
        """WF-CHILDREN-CAP: at most max spawned, none past it, a refusal journals nothing.

        A goal spawned before (a lead retried spawns again what it spawned) starts nothing and
        is never refused for the cap: the child it names is the one spawned with it.
        """
        if self.world.live_agent() is None:
            return
        before = len(self.world.journal)
        place = self._place()
        spawned = len(children(place))
        twin = spawned_child(place, goal)
        launches = len(self.world.actions)
        refused = spawn(self.world, goal)
        if refused is not None:
            assert len(self.world.journal) == before
            assert twin is None or "children at most" not in str(refused)
            return
        if twin is not None:
            # It starts nothing; what was due anyway (the join, its children all ended, once
            # the lead waits) may come with the step it is journaled in.
            assert self._place().lanes == place.lanes
            assert not any(isinstance(a, LaunchLane) for a in self.world.actions[launches:])
            return
        assert spawned < self.most
        assert len(children(self._place())) == spawned + 1
        assert spawned_child(self._place(), goal) == children(self._place())[-1]

    @precondition(lambda self: self._running())
    @rule(data=st.data(), finished=st.booleans(), turns=st.integers(min_value=0, max_value=12))
    def a_child_ends(self, data: st.DataObject, *, finished: bool, turns: int) -> None:
        """A running child finishes its branch or is dropped, having spent ``turns``.

        A composed run spends no more than its slice (its own budgets are the slice).
        """
        lane = data.draw(st.sampled_from(self._running()))
        run = self._place().lanes[lane]
        spent = min(turns, run.reserved_turns) if run.kind is not None else turns
        found = self.world.lanes[lane]
        head = (
            self.world.git.commit(found.branch, self.world.now)
            if finished
            else self.world.git.head(found.branch)
        )
        found.life = "finished" if finished else "dropped"
        self.world.now += 1
        seen = LaneEnded(
            at=self.world.instant(), lane=lane, finished=finished, head=head, turns=spent
        )
        assert self.world.feed(seen) is None
        self.asking.pop(lane, None)

    @rule(turns=st.integers(min_value=1, max_value=25), deeper=st.booleans())
    def the_lead_composes(self, turns: int, deeper: bool) -> None:
        """WF-DEPTH-CAP: a run at depth 2 never composes, nor one past its block's runs.

        A fragment whose own lead may compose (``deeper``) is refused: a third level. A refused
        compose journals nothing.
        """
        agent = self.world.live_agent()
        if agent is None:
            return
        before = len(self.world.journal)
        composed = sum(1 for run in self._place().lanes.values() if run.kind is not None)
        fragment = crew(runs=1) if deeper else DOCS
        seen = ComposeSaid(
            at=self.world.instant(), kind=fragment, turns=turns, tokens=100, session=agent.session
        )
        refused = self.world.feed(seen)
        if refused is not None:
            assert len(self.world.journal) == before
            return
        assert not deeper
        assert composed < self.runs
        place = self._place()
        run = place.lanes[f"run-{composed + 1}"]
        assert run.kind is fragment
        block = leading(place)
        assert block is not None
        assert launch_child(place, block, run).launch.depth == 2

    @precondition(lambda self: self._running())
    @rule(
        data=st.data(),
        ident=st.sampled_from(
            ["started", "q1", "q1#2", "answered:q1", f"{PAUSED}coder#1:stalled", "progress:x"]
        ),
    )
    def a_child_has_news(self, data: st.DataObject, ident: str) -> None:
        """The supervisor journals a piece of a running child's news into the run's journal."""
        lane = data.draw(st.sampled_from(self._running()))
        seen = ChildNews(at=self.world.instant(), lane=lane, id=ident, text=f"{lane} {ident}")
        place = self._place()
        taken = (
            bool(children(place)) and lane in place.lanes and ident not in place.lanes[lane].news
        )
        assert self.world.feed(seen) is None
        if taken and ident.startswith("q"):
            self.asking[lane] = (seen.text, seen.at)
        elif taken and ident.startswith("answered:"):
            self.asking.pop(lane, None)

    @invariant()
    def a_child_asking_shows_on_its_run(self) -> None:
        """WF-CHILD-ASKING-SURFACES: a child's question unanswered shows on its run, since when.

        The model keeps, per child, the last question its run took news of (``q1``, ``q1#2``)
        and forgets it on the news that it was answered (``answered:q1``) or the child's end:
        the run's status shows exactly those of its running children, with the news's instant.
        """
        place = self._place()
        shown = {each.lane: (each.question, each.since) for each in status(place).children_asking}
        expected = {
            lane: asked
            for lane, asked in self.asking.items()
            if lane in place.lanes and place.lanes[lane].state is LaneState.RUNNING
        }
        assert shown == expected

    @invariant()
    def a_lead_tried_again_reads_every_open_question(self) -> None:
        """WF-LEAD-HEARS-OPEN-QUESTIONS: a lead's next attempt reads each question still open.

        Whatever news came after it: the prompt a fresh lead would be sent now names, on its
        child's line, each question the model knows open.
        """
        place = self._place()
        if place.life is not Life.ACTIVE or leading(place) is None:
            return
        again = evolve(place, stage=attrs.evolve(place.stage, attempt=place.stage.attempt + 1))
        lines = render_prompt(again).splitlines()
        for lane, (question, _since) in self.asking.items():
            if lane in place.lanes and place.lanes[lane].state is LaneState.RUNNING:
                mine = [line for line in lines if line.startswith(f"- {lane} (")]
                assert len(mine) == 1
                assert question in mine[0]

    @rule()
    def the_lead_takes_what_it_is_sent(self) -> None:
        """The lead waits and its transcript holds the last thing sent to it."""
        self.world.deliver()

    @rule()
    def the_lead_writes_done_and_ends_its_turn(self) -> None:
        """The lead writes its verdict, then its turn ends (judged only once the join is told)."""
        if self.world.live_agent() is not None:
            self.world.write_verdict("done")
        self.world.end_turn()

    @rule()
    def the_shell_restarts(self) -> None:
        """SIGKILL: the run replayed from its journal, its pending actions performed again."""
        self.world.restart()

    @rule()
    def the_run_is_dropped(self) -> None:
        """A person drops the run."""
        if self.world.feed(DropAsked(at=self.world.instant())) is None:
            self.dropped_at = len(self.world.actions)

    @invariant()
    def reserved_and_spent_stay_within_the_caps(self) -> None:
        """WF-BUDGET-RESERVE: a slice taken only from what is left, counted as spent till it ends.

        The reservation is counted as spent while its child run runs, and released for what it
        really spent once it ends (here a one-step fragment: never more than its slice).
        """
        place = self._place()
        reserved = sum(
            run.reserved_turns
            for run in place.lanes.values()
            if run.kind is not None and run.state is LaneState.RUNNING
        )
        assert reserved <= place.spent.turns
        for before, seen, decision in self.world.steps:
            if isinstance(seen, ComposeSaid) and before is not None:
                # Taken only where it fits what the run had left, with room for the lead.
                assert place.budgets.turns is not None
                assert before.spent.turns + seen.turns < place.budgets.turns
                assert decision.place.spent.turns == before.spent.turns + seen.turns

    @invariant()
    def no_two_children_share_a_goal(self) -> None:
        """WF-SPAWN-ONCE: no two children of the lead's block were spawned with one goal."""
        goals = [run.spawned for run in children(self._place()) if run.spawned]
        assert len(goals) == len(set(goals))

    @invariant()
    def children_stay_within_max_and_cap(self) -> None:
        """Spawned children never outnumber max; no more than cap run at once."""
        place = self._place()
        running = sum(1 for run in place.lanes.values() if run.state is LaneState.RUNNING)
        assert len(place.lanes) <= self.most + self.runs
        assert running <= self.cap
        assert all(found.launches >= 1 for found in self.world.lanes.values())

    @invariant()
    def the_lead_waits_for_its_children(self) -> None:
        """WF-LEAD-WAITS-JOIN: its gate is read only with every child terminal, and told so."""
        for _before, _seen, decision in self.world.steps:
            if any(isinstance(action, JudgeGate) for action in decision.actions):
                after = decision.place
                assert after.join is JoinStage.TOLD
                assert all(run.state is not LaneState.RUNNING for run in after.lanes.values())

    @invariant()
    def news_goes_to_the_lead_once_in_one_tell(self) -> None:
        """WF-CHILD-NEWS-BATCHED: each piece once; what comes while one is held joins it."""
        place = self._place()
        told = Counter(
            report.text
            for _b, _s, decision in self.world.steps
            for report in decision.actions
            if getattr(report, "event", None) is Event.CHILD
        )
        assert all(count == 1 for count in told.values())
        news = [tell for tell in place.held if tell.text.startswith("News of your children")]
        assert len(news) <= 1

    @invariant()
    def a_paused_child_shows_on_the_run(self) -> None:
        """WF-CHILD-PAUSE-SURFACES: a running child's pause is the run's status, named."""
        place = self._place()
        paused = [run for run in children(place) if run.paused]
        view = status(place)
        if paused and place.life is Life.ACTIVE and view.paused is None:
            pytest.fail(f"child {paused[0].lane} paused, and the run's status does not say so")
        if paused and view.paused == "child-paused":
            assert view.paused_words is not None
            assert paused[0].lane in view.paused_words

    @invariant()
    def a_dropped_run_drops_its_children(self) -> None:
        """WF-DROP-CASCADES: each child running at the drop is dropped; none launched after."""
        if self.dropped_at is None:
            return
        after = self.world.actions[self.dropped_at :]
        assert not [a for a in after if isinstance(a, LaunchLane)]
        for found in self.world.lanes.values():
            assert found.life != "running"


TestOrchestrateMachine = OrchestrateMachine.TestCase
TestOrchestrateMachine.settings = hypothesis_settings(max_examples=200, stateful_step_count=40)
TestOrchestrateMachine = pytest.mark.hypothesis(TestOrchestrateMachine)
