"""A parallel block's launch and join, said and kept whole: its lanes, its reports, its pauses.

Each example drives the model's world (``tests/model/world.py``) through a parallel block, as
``test_lanes.py`` does, and compares whole what the run decided: every lane's record, each
launch asked, each report the block made, the pause it came to. A word a person reads, or a
field the shell acts on, that changed would fail here (issue 25: the mutation run's survivors
of the block's launch and join, ``docs/mutation.md``).
"""

from __future__ import annotations

import attrs
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pyrsistent import pmap, pset, pvector

from flume.core.actions import Event, LaunchLane, Report
from flume.core.ids import (
    BlockName,
    BranchName,
    Instant,
    KindName,
    PlaceName,
    SessionId,
    Sha,
    StageName,
    WorkName,
)
from flume.core.kinds import (
    Budgets,
    Commit,
    Join,
    Kind,
    Merge,
    Orchestrate,
    Parallel,
    Sequence,
    Step,
    Verdict,
)
from flume.core.observations import Activity, LaneEnded, ResolveAsked, RetryAsked, Tick
from flume.core.place import (
    Agent,
    AwaitingWord,
    Fanned,
    LaneRun,
    LaneState,
    Life,
    PauseCause,
    Paused,
    Place,
    Queued,
    Short,
    evolve,
)
from flume.core.step import step
from flume.core.workflow.lanes import (
    children,
    fan_when_free,
    is_merging,
    lane_for,
    launch_lane,
    parallel_of,
)
from tests.model.test_lanes import LANES, S, end_lane, sliced, world_of
from tests.model.test_orchestrate_run import merge_conflicted
from tests.model.world import FakeWorld

#: The events a parallel block reports of its own lanes and its join.
BLOCK_EVENTS = frozenset(
    {Event.STAGE_STARTED, Event.LANE_LAUNCHED, Event.LANE_ENDED, Event.MERGED, Event.PAUSED}
)


def said(world: FakeWorld) -> list[tuple[Event, str, StageName | None]]:
    """The block's reports, in order, each whole."""
    return [
        (action.event, action.text, action.stage)
        for action in world.actions
        if isinstance(action, Report) and action.event in BLOCK_EVENTS
    ]


def merged(world: FakeWorld) -> list[tuple[Event, str, StageName | None]]:
    """The block's reports of its merge."""
    return [report for report in said(world) if report[0] is Event.MERGED]


def at(world: FakeWorld) -> Place:
    """The world's place, which it has once launched."""
    place = world.place
    assert place is not None
    return place


def launched(lane: str) -> tuple[Event, str, StageName]:
    """The report of ``lane``'s launch, in the run ``feature--x``."""
    text = f"lane {lane} launched: feature--x+{lane} on feature/x+{lane}"
    return Event.LANE_LAUNCHED, text, StageName("slices")


def spend(world: FakeWorld, lane: str, *, finished: bool, turns: int) -> Sha:
    """``lane``'s place ends (finished with a commit, or dropped), having spent ``turns``."""
    found = world.lanes[lane]
    head = world.git.commit(found.branch, world.now) if finished else world.git.head(found.branch)
    found.life = "finished" if finished else "dropped"
    world.now += 1
    seen = LaneEnded(at=world.instant(), lane=lane, finished=finished, head=head, turns=turns)
    assert world.feed(seen) is None
    return head


def test_a_lane_named_with_its_passes_is_for_its_place() -> None:
    """STEP-NAMED: a lane's name with the passes after its ``@`` (one or more) is that lane's."""
    world = world_of(sliced(after=False))
    lane = at(world).lanes["slice-a"].place
    assert lane_for(at(world), "slice-a@2") == (lane, "slice-a@2")
    assert lane_for(at(world), "slices/slice-a@2@3/check") == (lane, "slice-a@2@3/check")


def test_a_budget_of_turns_per_attempt_holds_back_no_lane() -> None:
    """A turns-per-attempt budget bounds each agent's attempt, not the run: every lane runs."""
    world = world_of(sliced(budgets=Budgets(turns_per_attempt=1)))
    place = at(world)
    assert isinstance(place.stage.phase, Fanned)
    assert {run.state for run in place.lanes.values()} == {LaneState.RUNNING}
    assert said(world)[1:] == [launched(lane) for lane in LANES]


def test_a_budget_spent_while_lanes_wait_pauses_the_block_naming_it() -> None:
    """WF-BUDGET-PAUSES: the lane that ended spent the run's turns; those waiting are held."""
    world = world_of(sliced(cap=1, budgets=Budgets(turns=2)))
    head = spend(world, "slice-a", finished=True, turns=2)
    words = "budget turns spent, and lanes of parallel slices wait to be launched"
    assert at(world).stage.phase == Paused(
        cause=PauseCause.BUDGET, words=words, spent="turns", again=True
    )
    assert said(world)[-2] == (
        Event.LANE_ENDED,
        f"lane slice-a finished at {head}",
        StageName("slices"),
    )
    assert {lane: run.state for lane, run in at(world).lanes.items()} == {
        "slice-a": LaneState.FINISHED,
        "slice-b": LaneState.WAITING,
        "slice-c": LaneState.WAITING,
    }


def test_lanes_dropped_under_join_all_are_named_in_order_in_its_pause() -> None:
    """WF-JOIN-ALL: each lane's end is said as it ended; the pause names the unfinished in order."""
    world = world_of(sliced())
    end_lane(world, "slice-c", finished=False)
    end_lane(world, "slice-b", finished=True)
    end_lane(world, "slice-a", finished=False)
    words = "lane slice-a, slice-c ended unfinished, and parallel slices joins all its lanes"
    assert at(world).stage.phase == Paused(
        cause=PauseCause.LANE_DROPPED, words=words, lane="slice-a"
    )
    head = world.git.head(world.lanes["slice-b"].branch)
    assert [report for report in said(world) if report[0] is Event.LANE_ENDED] == [
        (Event.LANE_ENDED, text, StageName("slices"))
        for text in (
            "lane slice-c ended unfinished",
            f"lane slice-b finished at {head}",
            "lane slice-a ended unfinished",
        )
    ]


def test_a_first_join_with_no_lane_left_pauses_on_the_last_lane_ended() -> None:
    """WF-JOIN-FIRST: every lane ended unfinished; the pause names the last, to launch again."""
    world = world_of(sliced(join=Join.FIRST, merge=Merge.PICK, cap=2))
    for lane in LANES:
        end_lane(world, lane, finished=False)
    words = "every lane of parallel slices ended unfinished"
    assert at(world).stage.phase == Paused(
        cause=PauseCause.LANE_DROPPED, words=words, lane="slice-c"
    )


def test_a_merge_of_none_reports_none_merged_at_the_run_s_head() -> None:
    """WF-MERGE-ORDER: ``merge = "none"`` merges nothing, and says so with the head it keeps."""
    world = world_of(sliced(merge=Merge.NONE))
    head = at(world).head
    for lane in LANES:
        end_lane(world, lane, finished=True)
    text = f"lanes merged into feature/x: none; its head is {head}"
    assert merged(world) == [(Event.MERGED, text, StageName("slices"))]


def test_a_merge_reports_the_lanes_merged_and_the_head_they_made() -> None:
    """WF-MERGE-ORDER: the lanes merged, in declared order, and the run's head after them."""
    world = world_of(sliced())
    heads = {lane: Sha("") for lane in LANES}
    for lane in reversed(LANES):
        end_lane(world, lane, finished=True)
        heads[lane] = world.git.head(world.lanes[lane].branch)
    head = world.git.head(BranchName("feature/x"))
    assert at(world).head == head
    text = f"lanes merged into feature/x: {', '.join(LANES)}; its head is {head}"
    assert merged(world) == [(Event.MERGED, text, StageName("slices"))]
    assert dict(at(world).lanes) == {
        lane: LaneRun(
            lane=lane,
            place=PlaceName(f"feature--x+{lane}"),
            branch=BranchName(f"feature/x+{lane}"),
            index=index,
            state=LaneState.FINISHED,
            head=heads[lane],
        )
        for index, lane in enumerate(LANES)
    }


def test_a_lane_launched_later_is_asked_whole_with_what_its_run_has_left() -> None:
    """WF-CAP, WF-BUDGET-PAUSES: the next lane's launch, whole: its name, base, waits, budgets.

    It is the run's own launch renamed ``x+<lane>``, based on the run's branch, waiting only on
    its own steps, cut from the block's entry, its budgets what the run has left (here one each).
    """
    kind = sliced(cap=1, budgets=Budgets(turns=5, tokens=1000))
    waits = frozenset({StageName("slice-b"), StageName("after")})
    world = FakeWorld(settings=S, kind=kind, waits=waits, setup=(("make", "deps"),))
    assert world.launch() is None
    found = world.lanes["slice-a"]
    head = world.git.commit(found.branch, world.now)
    found.life = "finished"
    seen = LaneEnded(
        at=world.instant(), lane="slice-a", finished=True, head=head, turns=4, tokens=999
    )
    assert world.feed(seen) is None
    run = at(world)
    asked = [action for action in world.actions if isinstance(action, LaunchLane)]
    assert [action.lane for action in asked] == ["slice-a", "slice-b"]
    parallel = parallel_of(run)
    assert parallel is not None
    launch = attrs.evolve(
        run.launch,
        name=WorkName("x+slice-b"),
        base=BranchName("feature/x"),
        waits=pset({StageName("slice-b")}),
        parent=PlaceName("feature--x"),
        lane="slice-b",
    )
    lane_kind = attrs.evolve(
        kind, body=parallel.branches[1], budgets=Budgets(turns=1, tokens=1), finalize=None
    )
    assert asked[1] == LaunchLane(
        repository="/src/app",
        parent=PlaceName("feature--x"),
        lane="slice-b",
        launch=launch,
        kind=lane_kind,
        setup=pvector([pvector(["make", "deps"])]),
        copy=run.copy,
        start=run.entry,
        settings=run.settings,
        board=run.board,
        tests=run.tests,
    )
    assert asked[0].kind.budgets == Budgets(turns=5, tokens=1000)


def test_a_block_fans_out_from_the_run_s_head_and_says_so_whole() -> None:
    """The block's start: its report, its lanes waiting then launched, the head they start at."""
    world = world_of(sliced(cap=2))
    run = at(world)
    entry = run.entry
    assert entry is not None
    assert entry == run.head == run.stage.start_head
    assert run.stage.phase == Fanned(since=Instant(world.now))
    assert run.stage.started_at == Instant(world.now)
    assert run.stage.turns == 0
    assert list(run.finished_lanes) == []
    text = (
        "parallel slices fans out into 3 lanes (slice-a, slice-b, slice-c), at most 2 at once, "
        f"from {entry}"
    )
    assert said(world)[-3:] == [
        (Event.STAGE_STARTED, text, StageName("slices")),
        launched("slice-a"),
        launched("slice-b"),
    ]
    assert dict(run.lanes) == {
        lane: LaneRun(
            lane=lane,
            place=PlaceName(f"feature--x+{lane}"),
            branch=BranchName(f"feature/x+{lane}"),
            index=index,
            state=LaneState.WAITING if lane == "slice-c" else LaneState.RUNNING,
        )
        for index, lane in enumerate(LANES)
    }


def test_a_lane_s_end_heard_while_the_run_stands_short_is_taken_once_it_fans_out_again() -> None:
    """A run stopped short (its worktree gone) takes no lane's end; retried, it does."""
    world = world_of(sliced())
    assert world.delete_worktree_by_hand() is None
    place = at(world)
    assert isinstance(place.stage.phase, Short)
    found = world.lanes["slice-a"]
    head = world.git.commit(found.branch, world.now)
    seen = LaneEnded(at=place.now, lane="slice-a", finished=True, head=head)
    decision = step(S, place, seen)
    assert (decision.place, decision.actions) == (place, ())
    assert world.feed(RetryAsked(at=world.instant())) is None
    world.now += 1
    assert world.feed(Tick(at=world.instant())) is None
    assert isinstance(at(world).stage.phase, Fanned)
    assert world.feed(attrs.evolve(seen, at=world.instant())) is None
    assert at(world).lanes["slice-a"].state is LaneState.FINISHED
    assert list(at(world).finished_lanes) == ["slice-a"]


def test_a_lane_s_launch_carries_its_run_s_settings_copies_and_tests_but_not_its_mark() -> None:
    """A lane's launch takes its run's settings, files to copy and tests; the run's mark, never."""
    world = world_of(sliced())
    run = at(world)
    parallel = parallel_of(run)
    assert parallel is not None
    settings = attrs.evolve(S, stall_seconds=60.0)
    own = evolve(
        run,
        launch=attrs.evolve(run.launch, mark="PROJ-7"),
        copy=pvector([".env"]),
        tests=pvector([pvector(["pytest", "-q"])]),
        settings=settings,
    )
    asked = launch_lane(own, parallel, "slice-c")
    assert asked.launch.mark is None
    assert (asked.copy, asked.tests, asked.settings) == (own.copy, own.tests, settings)
    assert asked.launch == attrs.evolve(
        run.launch,
        name=WorkName("x+slice-c"),
        base=BranchName("feature/x"),
        parent=PlaceName("feature--x"),
        lane="slice-c",
    )


#: An agent live in the run's own worktree (a merge step's, say).
AGENT = Agent(
    session=SessionId("s1"),
    stage=StageName("slices"),
    attempt=1,
    pane="%1",
    activity=Activity.WORKING,
    activity_since=Instant(0),
    last_output_at=Instant(0),
    said_at=Instant(0),
)


def queued_at_block(world: FakeWorld) -> Place:
    """The world's run queued at its parallel again, none of its lanes made yet, turns taken."""
    run = at(world)
    stage = attrs.evolve(run.stage, phase=Queued(), turns=3)
    return evolve(run, stage=stage, lanes=pmap())


def test_a_block_fans_out_only_once_the_run_is_free_of_every_hindrance() -> None:
    """Resolving, not active, its worktree or branch lost, not ready, an agent: each holds it.

    With none, the block queued again fans out anew, its stage started now at the run's head;
    queued again with a lane launched again, it launches that lane alone, its start kept.
    """
    world = world_of(sliced())
    queued = queued_at_block(world)
    later = Instant(world.now + 5)
    held = (
        attrs.evolve(queued, stage=attrs.evolve(queued.stage, resolving=True)),
        evolve(queued, life=Life.FINISHED),
        evolve(queued, worktree_gone=True),
        evolve(queued, branch_gone=True),
        evolve(queued, ready=False),
        evolve(queued, agent=AGENT),
    )
    for place in held:
        assert fan_when_free(S, place, later) == (place, ())
    past = evolve(queued, stage=attrs.evolve(queued.stage, name=StageName("after")))
    assert fan_when_free(S, past, later) == (past, ())
    again = attrs.evolve(queued.stage, attempt=2)
    fanned, actions = fan_when_free(S, evolve(queued, stage=again), later)
    assert fanned.stage == attrs.evolve(
        again, phase=Fanned(since=later), started_at=later, start_head=queued.head, turns=0
    )
    assert fanned.entry == queued.head
    assert [action.lane for action in actions if isinstance(action, LaunchLane)] == list(LANES)
    lanes = at(world).lanes
    for lane in ("slice-b", "slice-c"):
        lanes = lanes.set(lane, attrs.evolve(lanes[lane], state=LaneState.FINISHED))
    fresh = attrs.evolve(lanes["slice-a"], state=LaneState.WAITING, tries=2)
    relaunching = evolve(queued, stage=again, lanes=lanes.set("slice-a", fresh))
    fanned, actions = fan_when_free(S, relaunching, later)
    assert fanned.stage == attrs.evolve(again, phase=Fanned(since=later), turns=0)
    assert fanned.entry == relaunching.entry
    assert [action.lane for action in actions if isinstance(action, LaunchLane)] == ["slice-a"]


def test_a_block_entered_over_budget_pauses_naming_the_budget_before_any_lane() -> None:
    """WF-BUDGET-PAUSES: a block queued over budget pauses, naming it, and makes no lane."""
    world = world_of(sliced(budgets=Budgets(tokens=50)))
    queued = queued_at_block(world)
    over = evolve(queued, spent=attrs.evolve(queued.spent, tokens=50))
    paused, _ = fan_when_free(S, over, Instant(world.now))
    assert paused.stage.phase == Paused(
        cause=PauseCause.BUDGET, words="budget tokens spent", spent="tokens"
    )
    assert dict(paused.lanes) == {}


def test_no_lane_of_a_block_passed_is_a_child_of_the_orchestrate_not_yet_entered() -> None:
    """STEP-NAMED: at a lead awaiting its word, a parallel's lane before it names no child."""
    lead = Step(
        name=StageName("lead"),
        prompt="Spawn a coder; write $verdict.",
        deliverable=Verdict(),
        may=pset(["spawn"]),
    )
    coder = Step(name=StageName("coder"), prompt="Build: $goal. Commit.", deliverable=Commit())
    first = sliced(after=False).body
    assert isinstance(first, Sequence)
    block = Orchestrate(name=BlockName("build"), lead=lead, template=coder, max=2)
    kind = Kind(
        name=KindName("feature"),
        prefix="feature",
        body=Sequence(blocks=pvector([*first.blocks, block])),
    )
    world = FakeWorld(settings=S, kind=kind, waits=frozenset({StageName("lead")}))
    assert world.launch() is None
    for lane in LANES:
        end_lane(world, lane, finished=True)
    place = at(world)
    assert isinstance(place.stage.phase, AwaitingWord)
    assert set(place.lanes) == set(LANES)
    assert children(place) == []
    assert lane_for(place, "slice-a") is None


def test_a_restart_while_an_agent_resolves_the_children_s_merge_asks_no_merge() -> None:
    """The children's merge conflicted and an agent merges them: flume merges nothing meanwhile."""
    world = merge_conflicted()
    paused = at(world).stage.phase
    assert isinstance(paused, Paused)
    assert paused.cause is PauseCause.MERGE_CONFLICT
    assert world.feed(ResolveAsked(at=world.instant(), agent=True)) is None
    place = at(world)
    assert place.stage.resolving
    assert not is_merging(place)
    merges = list(world.merges)
    world.restart()
    assert world.merges == merges


@st.composite
def capped_blocks(draw: st.DrawFn) -> tuple[int, int | None, list[int]]:
    """A number of lanes, a cap (None: all at once), and the order their ends are heard in."""
    count = draw(st.integers(min_value=2, max_value=5))
    cap = draw(st.none() | st.integers(min_value=1, max_value=count))
    return count, cap, draw(st.permutations(range(count)))


@given(capped_blocks())
@example((4, 2, [0, 1, 2, 3]))
@hypothesis_settings(max_examples=100)
def test_at_most_cap_lanes_run_and_they_start_in_declared_order(
    block: tuple[int, int | None, list[int]],
) -> None:
    """WF-CAP: as lanes end in any order, no more than the cap run, launched in declared order."""
    count, cap, order = block
    names = [f"slice-{index}" for index in range(count)]
    parallel = Parallel(
        name=BlockName("slices"),
        branches=pvector(
            Step(name=StageName(lane), prompt=f"Build {lane}; commit.", deliverable=Commit())
            for lane in names
        ),
        cap=cap,
    )
    kind = Kind(
        name=KindName("feature"), prefix="feature", body=Sequence(blocks=pvector([parallel]))
    )
    world = world_of(kind)
    most = cap or count
    while True:
        lanes = at(world).lanes
        running = [lane for lane in names if lanes[lane].state is LaneState.RUNNING]
        started = [lane for lane in names if lanes[lane].state is not LaneState.WAITING]
        assert len(running) == min(most, count - (len(started) - len(running)))
        assert started == names[: len(started)]
        assert list(world.lanes) == started
        if not running:
            break
        end_lane(world, min(running, key=lambda lane: order[names.index(lane)]), finished=True)
    assert world.merges == [tuple(names)]
