"""An orchestrate block's run, held whole: what its lead is told and asked, refused and reported.

Example tests over the FakeWorld (the run) made from the survivors of the workflow mutation run's
last part (issue 25): each compares a refusal, a report, a tell or the state an observation
leaves whole, where the tests before it read a word or two.
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pmap, pset, pvector

from flume.core.actions import Event, LaunchLane, MergeLanes, NotifyLane, Report
from flume.core.choices import AgentName
from flume.core.errors import Problem, UsageError
from flume.core.ids import BlockName, Instant, KindName, SessionId, Sha, StageName
from flume.core.kinds import Budgets, Finalize, Kind, Merge, Orchestrate
from flume.core.observations import (
    Activity,
    ChildNews,
    ComposeSaid,
    LanesMerged,
    NotifySaid,
    ResolveAsked,
    SpawnSaid,
    Told,
)
from flume.core.place import (
    AwaitingWord,
    JoinStage,
    LaneState,
    Life,
    PauseCause,
    Paused,
    Place,
    Queued,
    Short,
    ShortCause,
    Tell,
    TellSending,
    evolve,
    merge_action,
)
from flume.core.settings import Settings
from flume.core.step import step
from flume.core.workflow.lanes import lane_run
from flume.core.workflow.orchestrate import (
    MOST_WORDS,
    enter_when_started,
    join_when_ready,
    launch_when_free,
)
from flume.core.workflow.orchestrate import pending as orchestrate_pending
from tests.model.test_orchestrate import crew, end_child, spawn, world_of
from tests.model.test_orchestrate_edges import CODER, DOCS, LEAD, composing, kind_of
from tests.model.world import FakeWorld

S = Settings()


def _reports(world: FakeWorld, *events: Event) -> list[tuple[Event, str, str | None]]:
    """The reports of ``events`` the core made, in order, whole."""
    return [
        (action.event, action.text, action.stage)
        for action in world.actions
        if isinstance(action, Report) and action.event in events
    ]


def _told(world: FakeWorld) -> list[str]:
    """What the live lead was sent after its prompt, each without its marker line."""
    agent = world.live_agent()
    assert agent is not None
    return [send.text.rsplit("\n\n", 1)[0] for send in agent.sends[1:]]


def _composed(
    world: FakeWorld, kind: Kind, *, turns: int = 5, tokens: int = 100, base: bool = False
) -> ComposeSaid:
    """The live lead's ``flume compose`` of ``kind``, its slice ``turns`` and ``tokens``."""
    lead = world.live_agent()
    assert lead is not None
    return ComposeSaid(
        at=world.instant(), kind=kind, turns=turns, tokens=tokens, base=base, session=lead.session
    )


def _compose(
    world: FakeWorld, kind: Kind, *, turns: int = 5, tokens: int = 100
) -> UsageError | None:
    """The live lead runs ``flume compose``: the refusal, or None."""
    return world.feed(_composed(world, kind, turns=turns, tokens=tokens))


def test_a_lead_hears_its_children_s_ends_in_one_tell_then_the_join_whole() -> None:
    """Three ends while the lead works join one tell; the join's tell and reports are said whole."""
    world = world_of(crew(most=3))
    for goal in ("a", "b", "c"):
        assert spawn(world, goal) is None
    end_child(world, "coder-1", finished=True)
    end_child(world, "coder-2", finished=False)
    end_child(world, "coder-3", finished=True)
    one, three = (world.git.head(world.lanes[lane].branch) for lane in ("coder-1", "coder-3"))
    place = world.place
    assert place is not None
    news = (
        f"News of your children:\n- coder-1: finished at {one}\n"
        f"- coder-2: ended unfinished (dropped)\n- coder-3: finished at {three}"
    )
    assert (place.held, place.tells_given, place.news_tell) == (
        pvector([Tell(number=1, text=news, asked_at=Instant(1.0))]),
        1,
        1,
    )
    for _ in range(2):
        world.end_turn()
        world.deliver()
    place = world.place
    assert place is not None
    assert (place.join, place.join_tell, place.tells_given, place.held) == (
        JoinStage.TOLD,
        2,
        2,
        pvector(),
    )
    assert world.merges == [("coder-1", "coder-3")]
    assert _told(world) == [
        news,
        (
            "All children of build are terminal:\n- coder-1: finished\n- coder-2: ended\n"
            "- coder-3: finished\nMerged into crew/x: coder-1, coder-3. Write your verdict now."
        ),
    ]
    launched = [
        (Event.LANE_LAUNCHED, f"child {lane} launched: crew--x+{lane} on crew/x+{lane}", "lead")
        for lane in ("coder-1", "coder-2", "coder-3")
    ]
    assert _reports(world, Event.SPAWNED, Event.LANE_LAUNCHED, Event.LANE_ENDED, Event.JOINED) == [
        (Event.SPAWNED, "lead spawned coder-1 (1 of 3): a", "lead"),
        launched[0],
        (Event.SPAWNED, "lead spawned coder-2 (2 of 3): b", "lead"),
        launched[1],
        (Event.SPAWNED, "lead spawned coder-3 (3 of 3): c", "lead"),
        launched[2],
        (Event.LANE_ENDED, f"child coder-1 finished at {one}", "lead"),
        (Event.LANE_ENDED, "child coder-2 ended unfinished (dropped)", "lead"),
        (Event.LANE_ENDED, f"child coder-3 finished at {three}", "lead"),
        (
            Event.JOINED,
            "every child of build is terminal; merged: coder-1, coder-3; the lead is told",
            "lead",
        ),
    ]


def said(refused: UsageError | None) -> tuple[int, tuple[Problem, ...]]:
    """A refusal whole: its exit status and its problems (field, what is wrong, the mend)."""
    assert refused is not None
    return refused.exit_status, refused.problems


def _spawn_as(world: FakeWorld, goal: str, agent: AgentName | None = None) -> UsageError | None:
    """The live lead runs ``flume spawn --goal`` (with ``--agent`` when given)."""
    lead = world.live_agent()
    assert lead is not None
    seen = SpawnSaid(at=world.instant(), goal=goal, session=lead.session, agent=agent)
    return world.feed(seen)


def test_every_refusal_of_spawn_is_said_whole_and_a_goal_at_the_limit_is_taken() -> None:
    """Spawn's refusals compared whole, each journaling nothing; a goal of the most words is one."""
    waits = FakeWorld(settings=S, kind=crew(), waits=frozenset({StageName("lead")}))
    assert waits.launch() is None
    assert said(waits.feed(SpawnSaid(at=waits.instant(), goal="a"))) == (
        1,
        (
            Problem(
                "spawn",
                "no lead of crew--x is running",
                "flume spawn is for the lead of a running orchestrate block",
            ),
        ),
    )
    world = world_of(crew(most=2, budgets=Budgets(turns_per_attempt=1)))
    journaled = len(world.journal)
    other = SpawnSaid(at=world.instant(), goal="a", session=SessionId("s-other"))
    assert said(world.feed(other)) == (
        1,
        (
            Problem(
                "spawn",
                "session s-other is not the live agent of crew--x",
                "flume spawn is for the agent of the place's running step",
            ),
        ),
    )
    assert world.place is not None
    not_running = Problem(
        "spawn",
        "no lead of crew--x is running",
        "flume spawn is for the lead of a running orchestrate block",
    )
    lead = world.live_agent()
    assert lead is not None
    for gone in (
        evolve(world.place, life=Life.FINISHED),
        evolve(world.place, stage=attrs.evolve(world.place.stage, phase=Queued())),
    ):
        with pytest.raises(UsageError) as refused:
            step(S, gone, SpawnSaid(at=world.instant(), goal="a", session=lead.session))
        assert said(refused.value) == (1, (not_running,))
    empty = Problem("spawn", "the goal is empty or over 4000 characters", "say what it builds")
    assert said(_spawn_as(world, " ")) == (1, (empty,))
    assert said(_spawn_as(world, "g" * (MOST_WORDS + 1))) == (1, (empty,))
    assert len(world.journal) == journaled
    goal = "g" * MOST_WORDS
    assert _spawn_as(world, f" {goal} ", AgentName("codex")) is None
    assert _spawn_as(world, goal) is None  # the same goal: no second child
    assert _spawn_as(world, "b") is None
    place = world.place
    assert place is not None
    assert {run.lane: (run.spawned, run.agent, run.state) for run in place.lanes.values()} == {
        "coder-1": (goal, AgentName("codex"), LaneState.RUNNING),
        "coder-2": ("b", None, LaneState.RUNNING),
    }  # a budget of turns per attempt is the lead's own: its children start
    assert _reports(world, Event.SPAWNED) == [
        (Event.SPAWNED, f"lead spawned coder-1 (1 of 2): {goal}", "lead"),
        (Event.SPAWNED, "lead spawned coder-2 (2 of 2): b", "lead"),
    ]
    journaled = len(world.journal)
    assert said(_spawn_as(world, "c")) == (
        1,
        (
            Problem(
                "spawn",
                "build may spawn 2 coder children at most, and 2 are spawned",
                "give more to a child that runs (flume notify), or wait for the children you have",
            ),
        ),
    )
    assert len(world.journal) == journaled
    over = world_of(crew(most=2, budgets=Budgets(turns=5)))
    lead = over.live_agent()
    assert lead is not None
    assert over.place is not None
    spent = evolve(over.place, spent=attrs.evolve(over.place.spent, turns=5))
    with pytest.raises(UsageError) as refused:
        step(S, spent, SpawnSaid(at=over.instant(), goal="c", session=lead.session))
    assert said(refused.value) == (
        1,
        (Problem("spawn", "the run's budget turns is spent", "no child starts over it"),),
    )
    joined = evolve(place, join=JoinStage.TOLD)
    with pytest.raises(UsageError) as refused:
        step(S, joined, SpawnSaid(at=over.instant(), goal="c", session=lead.session))
    assert said(refused.value) == (
        1,
        (Problem("spawn", "every child of build is terminal and joined", "write your verdict"),),
    )


def test_every_refusal_of_compose_is_said_whole_and_the_composed_run_is_launched_whole() -> None:
    """Compose's refusals compared whole; the run it starts: the run's name, its slice, deeper."""
    shallow = world_of(composing(depth=1))
    assert said(_compose(shallow, DOCS)) == (
        1,
        (
            Problem(
                "compose",
                "a run composed by crew--x would be at depth 2, and runs nest 1 deep at most",
                "do the work here, or spawn a child of the block's template",
            ),
        ),
    )
    world = world_of(composing(runs=1))
    deeper = kind_of(
        Orchestrate(
            name=BlockName("inner"),
            lead=attrs.evolve(LEAD, may=pset(["compose"])),
            compose_runs=1,
        )
    )
    assert said(_compose(world, deeper)) == (
        1,
        (
            Problem(
                "compose",
                "the fragment crew lets its lead compose, which would nest runs 3 deep",
                "leave compose out of the fragment's orchestrate block",
            ),
        ),
    )
    other = attrs.evolve(_composed(world, DOCS), session=SessionId("s-other"))
    assert said(world.feed(other)) == (
        1,
        (
            Problem(
                "compose",
                "session s-other is not the live agent of crew--x",
                "flume compose is for the agent of the place's running step",
            ),
        ),
    )
    slice_ = Problem("compose", "a slice is at least 1 turn and 1 token", "give --turns, --tokens")
    assert said(_compose(world, DOCS, turns=0)) == (1, (slice_,))
    assert said(_compose(world, DOCS, tokens=0)) == (1, (slice_,))
    fragment = attrs.evolve(
        DOCS, budgets=Budgets(tokens=40), finalize=Finalize(land=True), fenced=True
    )
    assert _compose(world, fragment, turns=1, tokens=1) is None
    place = world.place
    assert place is not None
    (launched,) = [a for a in world.actions if isinstance(a, LaunchLane)]
    assert (
        launched.kind,
        launched.launch.depth,
        launched.launch.goal,
        launched.launch.led,
        launched.start,
    ) == (
        attrs.evolve(
            fragment,
            name=KindName("crew"),
            prefix="crew",
            finalize=None,
            budgets=Budgets(turns=1, tokens=1),
        ),
        2,
        "Mend the greeting.",
        True,
        place.head,
    )
    # A fenced run's composed run is fenced, though its fragment says nothing of it.
    fenced = world_of(attrs.evolve(composing(), fenced=True))
    assert _compose(fenced, DOCS) is None
    (inside,) = [a for a in fenced.actions if isinstance(a, LaunchLane)]
    assert inside.kind.fenced
    assert _reports(world, Event.COMPOSED) == [
        (
            Event.COMPOSED,
            "lead composed run-1 (docs, depth 2), reserving 1 turns and 1 tokens",
            "lead",
        ),
    ]
    assert said(_compose(world, DOCS)) == (
        1,
        (
            Problem(
                "compose",
                "build may compose 1 runs, and 1 are composed",
                "spawn a child of the block's template instead",
            ),
        ),
    )
    joined = evolve(place, join=JoinStage.TOLD)
    with pytest.raises(UsageError) as refused:
        step(S, joined, _composed(world, DOCS))
    assert said(refused.value) == (
        1,
        (Problem("compose", "every child of build is terminal and joined", "write your verdict"),),
    )


def test_a_child_s_news_shows_on_its_run_and_joins_the_news_held_behind_a_person_s_tells() -> None:
    """Each piece once: started, asked, paused, answered; told in one news tell after two others."""
    world = world_of(crew(most=2))
    assert spawn(world, "a") is None
    for words in ("one", "two"):
        assert world.feed(Told(at=world.instant(), text=words)) is None
    world.now = 3.0
    asks = "asks q1: Which? Answer it"
    paused = "paused (stalled): quiet; flume resume crew--x+coder-1"
    shown = []
    for ident, text in (
        ("started", "started (crew--x+coder-1)"),
        ("q1", asks),
        ("paused:coder#1:stalled", paused),
        ("answered:q1", "q1 answered"),
        ("q1", "asked again"),
    ):
        assert (
            world.feed(ChildNews(at=world.instant(), lane="coder-1", id=ident, text=text)) is None
        )
        world.now += 1
        place = world.place
        assert place is not None
        run = place.lanes["coder-1"]
        shown.append((len(run.news), run.note, run.paused, run.asking, run.asking_since))
    assert shown == [
        (1, "started (crew--x+coder-1)", "", "", None),
        (2, asks, "", asks, 4.0),
        (3, paused, paused, asks, 4.0),
        (4, paused, "", "", None),
        (4, paused, "", "", None),
    ]
    place = world.place
    assert place is not None
    news = (
        "News of your children:\n- coder-1: started (crew--x+coder-1)\n"
        f"- coder-1: {asks}\n- coder-1: {paused}"
    )
    assert (place.held, place.tells_given, place.news_tell) == (
        pvector(
            [
                Tell(number=1, text="one", asked_at=Instant(0.0)),
                Tell(number=2, text="two", asked_at=Instant(0.0)),
                Tell(number=3, text=news, asked_at=Instant(3.0)),
            ]
        ),
        3,
        3,
    )
    assert _reports(world, Event.CHILD) == [
        (Event.CHILD, "coder-1: started (crew--x+coder-1)", "lead"),
        (Event.CHILD, f"coder-1: {asks}", "lead"),
        (Event.CHILD, f"coder-1: {paused}", "lead"),
        (Event.CHILD, "coder-1: q1 answered", "lead"),
    ]
    # Asking and paused again, then ended: its run shows neither any more.
    for ident, text in (("q2", "asks q2: Why?"), ("paused:coder#2:stalled", paused)):
        assert (
            world.feed(ChildNews(at=world.instant(), lane="coder-1", id=ident, text=text)) is None
        )
    end_child(world, "coder-1", finished=False)
    assert world.place is not None
    run = world.place.lanes["coder-1"]
    assert (run.state, run.note, run.paused, run.asking, run.asking_since) == (
        LaneState.ENDED,
        "ended unfinished (dropped)",
        "",
        "",
        None,
    )


def test_a_lead_that_spawned_nothing_is_told_none_was_spawned_nor_merged() -> None:
    """The join with no child: the lead's tell and the report say none, whole."""
    world = world_of(crew(most=2))
    world.end_turn()
    world.deliver()
    place = world.place
    assert place is not None
    assert (place.join, place.join_tell) == (JoinStage.TOLD, 1)
    assert _told(world) == [
        (
            "All children of build are terminal:\n- none was spawned\n"
            "Merged into crew/x: none. Write your verdict now."
        )
    ]
    assert _reports(world, Event.JOINED) == [
        (Event.JOINED, "every child of build is terminal; merged: none; the lead is told", "lead"),
    ]


def test_a_block_entered_anew_forgets_the_last_block_s_children_and_join() -> None:
    """A spawn entering the block: children, entry, finished, merging and join all set afresh."""
    world = world_of(crew(most=2))
    place = world.place
    assert place is not None
    assert place.head is not None
    # What an earlier block of the run left: its child, entry, merge and join.
    stale = evolve(
        place,
        lanes=pmap({"old-1": lane_run(place, "old-1", 0, goal="old")}),
        lanes_key="before",
        entry=Sha("e" * 40),
        finished_lanes=pvector(["old-1"]),
        merging=pvector(["old-1"]),
        join=JoinStage.TOLD,
        join_tell=7,
    )
    lead = world.live_agent()
    assert lead is not None
    after = step(S, stale, SpawnSaid(at=world.instant(), goal="a", session=lead.session))
    entered = after.place
    assert (
        sorted(entered.lanes),
        entered.lanes_key,
        entered.entry,
        entered.finished_lanes,
        entered.merging,
        entered.join,
        entered.join_tell,
    ) == (["coder-1"], place.stage.key, place.head, pvector(), pvector(), JoinStage.OPEN, None)
    (launched,) = [a for a in after.actions if isinstance(a, LaunchLane)]
    assert launched.start == place.head


def _one_waiting_with_room() -> tuple[Place, Place]:
    """A lead with cap 1: as spawned (coder-1 runs, coder-2 waits); then coder-1 ended.

    Ended as the run holds it before the rules saw its end: coder-2 waits, with room.
    """
    world = world_of(crew(most=2, cap=1))
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    place = world.place
    assert place is not None
    ended = attrs.evolve(place.lanes["coder-1"], state=LaneState.FINISHED)
    return place, evolve(place, lanes=place.lanes.set("coder-1", ended))


def test_a_block_is_entered_once_at_an_active_ready_lead_with_a_head() -> None:
    """A lead not ready, with no head or waiting to start enters nothing; entered, nothing again."""
    place, entered = _one_waiting_with_room()
    now = place.now
    assert place.lanes["coder-2"].state is LaneState.WAITING
    assert enter_when_started(S, entered, now) == (entered, ())
    fresh = evolve(place, lanes=pmap(), lanes_key="", entry=None)
    for short in (
        evolve(fresh, ready=False),
        evolve(fresh, head=None),
        evolve(fresh, stage=attrs.evolve(fresh.stage, phase=Queued())),
        evolve(fresh, stage=attrs.evolve(fresh.stage, phase=AwaitingWord())),
        evolve(fresh, life=Life.FINISHED),
    ):
        assert enter_when_started(S, short, now) == (short, ())
    began, actions = enter_when_started(S, fresh, now)
    assert (began.lanes_key, began.entry, actions) == (place.stage.key, place.head, ())


def test_a_waiting_child_starts_only_at_an_open_block_whose_lead_runs() -> None:
    """launch_when_free: a lead paused, short, queued, gone past or joined starts no child."""
    place, free = _one_waiting_with_room()
    now = place.now
    ended = free.lanes["coder-1"]
    started, actions = launch_when_free(S, free, now)
    assert started.lanes["coder-2"].state is LaneState.RUNNING
    assert [a.lane for a in actions if isinstance(a, LaunchLane)] == ["coder-2"]
    # Both waiting, with room for one: the first starts.
    waiting = attrs.evolve(ended, state=LaneState.WAITING)
    both = evolve(place, lanes=place.lanes.set("coder-1", waiting))
    _, actions = launch_when_free(S, both, now)
    assert [a.lane for a in actions if isinstance(a, LaunchLane)] == ["coder-1"]
    # Three waiting, with room for two: the first two start, in order.
    roomy = world_of(crew(most=3, cap=2))
    for goal in ("a", "b", "c"):
        assert spawn(roomy, goal) is None
    assert roomy.place is not None
    lanes = roomy.place.lanes
    for lane in ("coder-1", "coder-2"):
        lanes = lanes.set(lane, attrs.evolve(lanes[lane], state=LaneState.WAITING))
    _, actions = launch_when_free(S, evolve(roomy.place, lanes=lanes), now)
    assert [a.lane for a in actions if isinstance(a, LaunchLane)] == ["coder-1", "coder-2"]
    stage = free.stage
    for held in (
        evolve(free, life=Life.FINISHED),
        evolve(free, lanes_key=""),
        evolve(free, join=JoinStage.MERGING),
        evolve(free, stage=attrs.evolve(stage, phase=Paused(cause=PauseCause.STALLED, words="w"))),
        evolve(free, stage=attrs.evolve(stage, phase=Short(cause=ShortCause.NEEDS, words="w"))),
        evolve(free, stage=attrs.evolve(stage, phase=AwaitingWord())),
        evolve(free, stage=attrs.evolve(stage, phase=Queued())),
        evolve(free, lanes=free.lanes.set("coder-2", attrs.evolve(ended, lane="coder-2"))),
    ):
        assert launch_when_free(S, held, now) == (held, ())


def _join_ready(most: int, merge: Merge = Merge.MERGE) -> Place:
    """A lead whose ``most`` children all finished, its first turn ended, its agent waiting.

    The place as ``join_when_ready`` found it: the step that asked the merge, its join undone.
    """
    block = Orchestrate(name=BlockName("build"), lead=LEAD, template=CODER, max=most, merge=merge)
    world = world_of(kind_of(block))
    for goal in ("a", "b", "c")[:most]:
        assert spawn(world, goal) is None
    for lane in (f"coder-{most - index}" for index in range(most)):
        end_child(world, lane, finished=True)
    for _ in range(2):
        world.end_turn()
        world.deliver()
    merged = [
        d.place for _b, _s, d in world.steps if any(isinstance(a, MergeLanes) for a in d.actions)
    ]
    return evolve(merged[0], join=JoinStage.OPEN, merging=pvector())


def test_the_join_merges_once_every_child_is_terminal_and_the_lead_waits_with_nothing_held() -> (
    None
):
    """join_when_ready: after the lead's first turn, merge or pick; short of any condition, not."""
    ready = _join_ready(2)
    assert ready.stage.turns == 1
    now = ready.now
    merging, actions = join_when_ready(S, ready, now)
    assert (merging.join, merging.merging, actions) == (
        JoinStage.MERGING,
        pvector(["coder-1", "coder-2"]),
        (merge_action(merging),),
    )
    picked, _ = join_when_ready(S, _join_ready(2, Merge.PICK), now)
    assert picked.merging == pvector(["coder-2"])  # the first to finish
    agent = ready.agent
    assert agent is not None
    tell = Tell(number=9, text="t", asked_at=now)
    running = attrs.evolve(ready.lanes["coder-1"], state=LaneState.RUNNING)
    for short in (
        evolve(ready, life=Life.FINISHED),
        evolve(ready, join=JoinStage.TOLD),
        evolve(ready, lanes_key=""),
        evolve(ready, stage=attrs.evolve(ready.stage, phase=Queued())),
        evolve(ready, stage=attrs.evolve(ready.stage, turns=0)),
        evolve(ready, agent=None),
        evolve(ready, agent=attrs.evolve(agent, ending=True)),
        evolve(ready, agent=attrs.evolve(agent, activity=Activity.WORKING)),
        evolve(ready, held=pvector([tell])),
        evolve(ready, sending=TellSending(tell=tell, sends=1, sent_at=now)),
        evolve(ready, lanes=ready.lanes.set("coder-1", running)),
    ):
        assert join_when_ready(S, short, now) == (short, ())


def test_a_restart_asks_again_each_running_child_s_launch_and_notes_and_the_merge() -> None:
    """RESTART-PENDING for children, whole: the running ones' launches, then notes; the merge."""
    world = world_of(crew(most=3, cap=2))
    assert world.place is not None
    assert orchestrate_pending(world.place) == ()  # no child yet
    for goal in ("a", "b", "c"):
        assert spawn(world, goal) is None
    lead = world.live_agent()
    assert lead is not None
    for to, text in (("coder-2", "tabs"), ("all", "spaces")):
        said = NotifySaid(at=world.instant(), to=to, text=text, session=lead.session)
        assert world.feed(said) is None
    place = world.place
    assert place is not None
    launches = [a for a in world.actions if isinstance(a, LaunchLane)]
    notes = [a for a in world.actions if isinstance(a, NotifyLane)]
    assert [a.lane for a in launches] == ["coder-1", "coder-2"]  # coder-3 waits
    assert [a.id for a in notes] == ["crew--x#coder-2#1", "crew--x#coder-1#1", "crew--x#coder-2#2"]
    asked = (*launches, notes[1], notes[0], notes[2])
    assert orchestrate_pending(place) == asked
    merging = evolve(place, join=JoinStage.MERGING, merging=pvector(["coder-1"]))
    assert orchestrate_pending(merging) == (*asked, merge_action(merging))
    assert orchestrate_pending(evolve(place, life=Life.FINISHED)) == ()


def test_a_join_met_while_the_lead_s_agent_ends_is_said_in_its_next_prompt_whole() -> None:
    """Children merged with the lead's agent ending: no tell; the stage's words say the join."""
    ready = _join_ready(2)
    merging, _ = join_when_ready(S, ready, ready.now)
    agent = merging.agent
    assert agent is not None
    ending = evolve(merging, agent=attrs.evolve(agent, ending=True), join_tell=5)
    head = Sha("f" * 40)
    after = step(S, ending, LanesMerged(at=ending.now, head=head)).place
    words = (
        "All children of build are terminal:\n- coder-1: finished\n- coder-2: finished\n"
        "Merged into crew/x: coder-1, coder-2. Write your verdict now."
    )
    assert (after.join, after.join_tell, after.held, after.tells_given, after.head) == (
        JoinStage.TOLD,
        None,
        ending.held,
        ending.tells_given,
        head,
    )
    assert after.stage == attrs.evolve(ending.stage, words=words)


def merge_conflicted() -> FakeWorld:
    """A crew of one coder whose finished child's merge conflicted: the lead paused on it."""
    world = world_of(crew(most=1))
    world.conflicting = {"coder-1"}
    assert spawn(world) is None
    world.end_turn()
    end_child(world, "coder-1", finished=True)
    for _ in range(2):
        world.deliver()
        world.end_turn()
    return world


def test_a_conflict_resolved_by_hand_moves_the_run_s_head_to_the_merge() -> None:
    """A lead's merge resolved by hand: the run's head is the merge's, its lead queued again."""
    world = merge_conflicted()
    world.conflicting.clear()
    assert world.feed(ResolveAsked(at=world.instant())) is None
    merged = [(seen, d.place) for _b, seen, d in world.steps if isinstance(seen, LanesMerged)]
    assert [(place.head, place.stage.attempt) for _seen, place in merged] == [
        (merged[0][0].head, 2)
    ]
