"""A parallel block's merge, resolve, retry and lanes' ends: what each says and leaves, whole.

Each example compares a refusal, a report or the state an observation leaves whole (the
lane's branch in a conflict's words, every lane a refusal names, the pause's lane, the attempt
a retry starts), where the machines of ``test_lanes.py`` look only at the way the run goes on.
"""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap, pvector

from flume.core.actions import Event, LaneOrder, MergeLanes, OrderLane, Report
from flume.core.errors import Problem, UsageError
from flume.core.ids import BranchName, Instant, Sha, StageName
from flume.core.kinds import Join, Merge, Parallel
from flume.core.observations import (
    DropAsked,
    LaneEnded,
    Launched,
    MergeConflicted,
    Observation,
    ResolveAsked,
    RetryAsked,
)
from flume.core.place import (
    Fanned,
    LaneState,
    Life,
    Merging,
    PauseCause,
    Paused,
    Place,
    Queued,
    evolve,
    merge_action,
)
from flume.core.step import step
from flume.core.workflow.lanes import (
    drop_lanes,
    lane_ended,
    lane_for,
    lanes_ended,
    launch_lane,
    on_lane_retry,
    on_merge_conflicted,
    on_resolve,
    parallel_of,
    pending,
    relaunches,
)
from tests.model.test_lanes import LANES, S, end_lane, orders, run_after, sliced, world_of
from tests.model.test_orchestrate import crew, end_child, spawn
from tests.model.test_orchestrate import world_of as orchestrate_world
from tests.model.world import FakeWorld

NAME = "feature--x"
PATH = "/src/app/places/feature--x"


def _place(world: FakeWorld) -> Place:
    """The world's run, which it launched."""
    assert world.place is not None
    return world.place


def _refusal(place: Place, seen: Observation) -> tuple[int, tuple[Problem, ...]]:
    """The exit status and the problems ``seen`` is refused with at ``place``."""
    try:
        step(S, place, seen)
    except UsageError as error:
        return error.exit_status, error.problems
    raise AssertionError(f"{seen!r} was taken")


def _ended(
    outcomes: dict[str, bool], *, join: Join = Join.ALL, merge: Merge = Merge.MERGE
) -> FakeWorld:
    """A world whose lanes ended in the order given, each finished or not."""
    world = world_of(sliced(join=join, merge=merge))
    for lane, finished in outcomes.items():
        end_lane(world, lane, finished=finished)
    return world


def _conflicted(lane: str) -> FakeWorld:
    """A world whose lanes all finished and whose merge conflicted on ``lane``."""
    world = world_of(sliced())
    world.conflicting.add(lane)
    for each in LANES:
        end_lane(world, each, finished=True)
    return world


def test_a_merge_is_reported_naming_every_lane_merged_or_none() -> None:
    """A merge names its lanes, in order, and the head; a block that merges none says none."""
    for merge, said in ((Merge.MERGE, ", ".join(LANES)), (Merge.NONE, "none")):
        world = _ended(dict.fromkeys(LANES, True), merge=merge)
        head = world.git.head(_place(world).branch)
        merged = [report.text for report in world.reports_of(Event.MERGED)]
        assert merged == [f"lanes merged into feature/x: {said}; its head is {head}"]


def test_a_conflict_pauses_naming_the_lane_s_branch_every_file_and_the_merge_undone() -> None:
    """A conflict's report and pause say the lane, its branch, each file (or that none is named)."""
    world = _conflicted("slice-b")
    merging = next(before for before, seen, _ in world.steps if isinstance(seen, MergeConflicted))
    assert merging is not None
    for files, said in (
        (pvector(["a.txt", "b c.txt"]), "a.txt, b c.txt"),
        (pvector(), "files git did not name"),
    ):
        seen = MergeConflicted(at=world.instant(), lane="slice-b", files=files)
        place, actions = on_merge_conflicted(merging, seen)
        words = (
            f"merging lane slice-b (feature/x+slice-b) into feature/x conflicted in {said}; "
            "the merge was undone"
        )
        assert actions[0] == Report(
            event=Event.MERGE_CONFLICT, text=words, stage=StageName("slices")
        )
        assert place.stage.phase == Paused(
            cause=PauseCause.MERGE_CONFLICT, words=words, lane="slice-b"
        )


def test_by_hand_is_refused_whole_while_a_merge_is_under_way_or_the_head_lacks_a_lane_claimed() -> (
    None
):
    """By hand claims the paused lane and those before it merged; the lanes after are flume's."""
    place = _place(_conflicted("slice-b"))
    at = Instant(100.0)
    assert _refusal(place, ResolveAsked(at=at, under_way=True)) == (
        1,
        (
            Problem(
                "resolve",
                f"a merge is under way in {PATH} (git's MERGE_HEAD), concluded by no commit",
                f"conclude it (git -C {PATH} commit) or undo it (git -C {PATH} merge --abort), "
                f"then flume resolve {NAME} --by-hand",
            ),
        ),
    )
    lacking = ResolveAsked(at=at, missing=pmap({"slice-a": "its head is not in the history"}))
    assert _refusal(place, lacking) == (
        1,
        (
            Problem(
                "resolve",
                "the head of feature/x does not hold lane slice-a (feature/x+slice-a): its head "
                "is not in the history",
                f"merge it (git -C {PATH} merge --no-ff feature/x+slice-a); then flume resolve "
                f"{NAME} --by-hand; or flume resolve {NAME} --agent",
            ),
        ),
    )
    later = ResolveAsked(at=at, missing=pmap({"slice-c": "its head is not in the history"}))
    decision = step(S, place, later)
    assert [type(action) for action in decision.actions] == [Report, MergeLanes]
    assert decision.actions[0] == Report(
        event=Event.RESUMED,
        text=f"{NAME} resumed at slices: merged by hand",
        stage=StageName("slices"),
    )


def test_going_on_without_a_lane_that_did_not_end_unfinished_is_refused_whole() -> None:
    """The refusal lists every lane ended unfinished and names the first in declared order.

    Under a first join the run pauses on the last lane to end; the mend still names the first.
    """
    paused_on: list[str] = []
    for world, ended in (
        (_ended({"slice-a": False, "slice-b": False, "slice-c": True}), "slice-a, slice-b"),
        (
            _ended(dict.fromkeys(LANES, False), join=Join.FIRST, merge=Merge.PICK),
            "slice-a, slice-b, slice-c",
        ),
    ):
        place = _place(world)
        assert isinstance(place.stage.phase, Paused)
        what = f"{NAME} has no lane 'slice-z' that ended unfinished (ended: {ended})"
        without = ResolveAsked(at=world.instant(), without="slice-z")
        assert _refusal(place, without) == (
            1,
            (
                Problem(
                    "resolve",
                    what,
                    f"name it: flume resolve {NAME} --without slice-a, or launch it again: "
                    f"flume retry {NAME} --step slice-a",
                ),
            ),
        )
        retry = RetryAsked(at=world.instant(), step="slice-z")
        assert _refusal(place, retry) == (
            1,
            (Problem("retry", what, f"flume retry {NAME} --step slice-a"),),
        )
        paused_on.append(place.stage.phase.lane)
    assert paused_on == ["slice-a", "slice-c"]


def test_going_on_without_a_lane_merges_only_what_the_block_s_merge_chooses() -> None:
    """Merge none asks a merge of no lane; pick, of the first lane to finish alone."""
    world = _ended({"slice-a": False, "slice-b": True, "slice-c": True}, merge=Merge.NONE)
    start = world.git.head(BranchName("feature/x"))
    decision = step(S, _place(world), ResolveAsked(at=world.instant(), without="slice-a"))
    asked = [action for action in decision.actions if isinstance(action, MergeLanes)]
    assert [action.lanes for action in asked] == [pvector()]
    assert decision.place.merging == pvector()
    assert world.feed(ResolveAsked(at=world.instant(), without="slice-a")) is None
    assert world.merges == [()]
    assert _place(world).stage.name == "after"
    assert world.git.head(BranchName("feature/x")) == start
    assert orders(world, LaneOrder.TIDY) == ["slice-b", "slice-c"]
    world = _ended({"slice-c": True, "slice-a": False, "slice-b": True}, merge=Merge.PICK)
    assert world.feed(ResolveAsked(at=world.instant(), without="slice-a")) is None
    assert world.merges == [("slice-c",)]


def test_a_lane_the_run_paused_on_is_the_run_s_to_launch_again_the_others_their_places() -> None:
    """STEP-NAMED: a lane ended unfinished is the run's while the run pauses on it, else its own.

    Before the pause, and once let go, a lane is its place's; a finished one is, always.
    """
    world = world_of(sliced())
    end_lane(world, "slice-a", finished=False)
    end_lane(world, "slice-b", finished=False)
    fanned = _place(world)
    assert isinstance(fanned.stage.phase, Fanned)
    assert lane_for(fanned, "slice-a") == ("feature--x+slice-a", "")
    end_lane(world, "slice-c", finished=True)
    paused = _place(world)
    assert lane_for(paused, "slice-a") is None
    assert lane_for(paused, "slice-c") == ("feature--x+slice-c", "")
    assert world.feed(ResolveAsked(at=world.instant(), without="slice-a")) is None
    let_go = _place(world)
    assert isinstance(let_go.stage.phase, Paused)
    assert let_go.stage.phase.lane == "slice-b"
    assert lane_for(let_go, "slice-a") == ("feature--x+slice-a", "")
    assert lane_for(let_go, "slice-b") is None


def test_a_lane_s_retry_outside_its_pause_is_refused_naming_retry() -> None:
    """A lane's retry where the run waits on no lane's end is refused, as the retry it is."""
    place = _place(world_of(sliced()))
    try:
        on_lane_retry(place, RetryAsked(at=Instant(1.0)))
    except UsageError as error:
        refused = error
    else:
        raise AssertionError("the retry was taken")
    assert (refused.exit_status, refused.problems) == (
        1,
        (
            Problem(
                "retry",
                f"{NAME} runs the lanes of slices; nothing there waits on a lane's retry",
                f"nothing waits on you now: flume status {NAME} shows where it stands",
            ),
        ),
    )


def test_a_retry_naming_no_step_launches_every_lane_ended_unfinished_again_as_one_attempt() -> None:
    """Each lane that ended unfinished, none that finished, as a place of its own; one attempt."""
    world = _ended({"slice-a": False, "slice-b": False, "slice-c": True})
    place = _place(world)
    decision = step(S, place, RetryAsked(at=world.instant()))
    again = decision.place
    assert again.stage.attempt == place.stage.attempt + 1
    assert isinstance(again.stage.phase, Queued | Fanned)
    assert decision.actions[0] == Report(
        event=Event.RETRIED,
        text=(
            "lane slice-a (feature--x+slice-a.2), slice-b (feature--x+slice-b.2) launched again "
            f"from {place.entry}"
        ),
        stage=StageName("slices"),
    )
    tries = {run.lane: run.tries for run in again.lanes.values()}
    assert tries == {"slice-a": 2, "slice-b": 2, "slice-c": 1}
    assert again.lanes["slice-c"] == place.lanes["slice-c"]


def test_a_retry_names_a_lane_by_its_path_or_by_its_name_before_the_first_at() -> None:
    """``--step`` names a lane by its path in the tree, or its name up to the first ``@``."""
    for named in ("slices/slice-b", "slice-b@2", "slice-b@2@3", "slices@1/slice-b"):
        world = _ended({"slice-a": False, "slice-b": False, "slice-c": True})
        decision = step(S, _place(world), RetryAsked(at=world.instant(), step=named))
        relaunched = [run.lane for run in decision.place.lanes.values() if run.tries > 1]
        assert relaunched == ["slice-b"], named


def _run_and_lane(lane: str) -> tuple[Place, Place]:
    """A run fanned out, and its lane ``lane``'s place as its own journal has it: launched."""
    world = world_of(sliced())
    run = _place(world)
    parallel = parallel_of(run)
    assert isinstance(parallel, Parallel)
    asked = launch_lane(run, parallel, lane)
    seen = Launched(at=world.instant(), launch=asked.launch, kind=asked.kind, start=asked.start)
    return run, step(S, None, seen).place


def test_a_lane_cut_from_the_run_s_base_is_heard_of_against_the_run_s_start() -> None:
    """A lane from the base is told once its place, started at the run's start, ended."""
    run, found = _run_and_lane("slice-a")
    based = run.lanes.set("slice-a", attrs.evolve(run.lanes["slice-a"], from_base=True))
    moved = evolve(run, lanes=based, start=Sha("d" * 40))
    done = evolve(found, life=Life.FINISHED, start=moved.start)
    assert done.start != moved.entry
    told = lanes_ended(moved, {done.launch.place: done}, Instant(50.0))
    assert [each.lane for each in told] == ["slice-a"]


def test_a_lane_s_end_carries_its_head_and_spend_finished_only_once_its_step_passed() -> None:
    """lane_ended, whole: head, turns and tokens; finished if not dropped and its step passed."""
    run, found = _run_and_lane("slice-a")
    spent = attrs.evolve(found.spent, turns=3, tokens=40)
    passed = found.completed.append(StageName(found.stage.key))
    head = Sha("e" * 40)
    now = Instant(50.0)
    for life, completed, finished in (
        (Life.FINISHED, passed, True),
        (Life.TIDIED, passed, True),
        (Life.FINISHED, found.completed, False),
        (Life.DROPPED, passed, False),
    ):
        ended = evolve(found, life=life, completed=completed, spent=spent, head=head)
        assert lane_ended("slice-a", ended, now) == LaneEnded(
            at=now, lane="slice-a", finished=finished, head=head, turns=3, tokens=40
        )
    assert run.lanes["slice-a"].state is LaneState.RUNNING


def test_resolve_is_refused_whole_where_its_way_is_not_the_pause_s() -> None:
    """A lane-dropped pause takes no merge's resolve; a merge's pause no ``--without``."""
    dropped = _place(_ended({"slice-a": False, "slice-b": True, "slice-c": True}))
    assert _refusal(dropped, ResolveAsked(at=Instant(100.0))) == (
        1,
        (
            Problem(
                "resolve",
                f"{NAME} is paused for lane-dropped: lane slice-a ended unfinished, and no merge "
                "waits to be resolved",
                f"flume retry {NAME} --step slice-a (a fresh lane from the block's entry) or "
                f"flume resolve {NAME} --without slice-a (go on without it)",
            ),
        ),
    )
    conflicted = _place(_conflicted("slice-b"))
    assert _refusal(conflicted, ResolveAsked(at=Instant(100.0), without="slice-b")) == (
        1,
        (
            Problem(
                "resolve",
                f"{NAME} is paused for merge-conflict: no lane ended unfinished to go without",
                f"flume resolve {NAME} --by-hand (merge it yourself in {PATH} and commit) or "
                f"flume resolve {NAME} --agent",
            ),
        ),
    )


def test_a_resolve_by_hand_merges_again_and_its_pause_leaves_the_clock() -> None:
    """By hand: said resumed, merging since the word, the merge asked again, the pause ended."""
    paused = _place(_conflicted("slice-b"))
    assert paused.spent.paused_at is not None
    later = evolve(paused, now=Instant(paused.spent.paused_at + 30.0))
    place, actions = on_resolve(later, ResolveAsked(at=later.now))
    assert place.stage == attrs.evolve(paused.stage, phase=Merging(since=later.now))
    assert actions == (
        Report(
            event=Event.RESUMED,
            text=f"{NAME} resumed at slices: merged by hand",
            stage=StageName("slices"),
        ),
        merge_action(place),
    )
    assert (place.spent.paused_at, place.spent.paused_seconds) == (
        None,
        paused.spent.paused_seconds + 30.0,
    )


def test_an_agent_s_resolve_is_a_fresh_attempt_of_the_merge_step_told_the_conflict() -> None:
    """``--agent`` again after its agent's merge conflicted: the attempt's counts start afresh.

    The merge step's last attempt sent, took turns, was nudged, judged and told its gate; the
    next is told the conflict the run paused on, and nothing of the last is carried over.
    """
    world = _conflicted("slice-a")
    assert world.feed(ResolveAsked(at=world.instant(), agent=True)) is None
    run_after(world)
    again = _place(world)
    phase = again.stage.phase
    assert isinstance(phase, Paused)
    assert again.spent.paused_at is not None
    assert (again.stage.sends, again.stage.turns) == (1, 1)
    now = Instant(again.spent.paused_at + 30.0)
    used = attrs.evolve(
        again.stage,
        words="merge them gently",
        reprompted=True,
        retold=1,
        judged_at=Instant(2.0),
        nudged_at=Instant(2.5),
    )
    place, actions = on_resolve(
        evolve(again, stage=used, now=now), ResolveAsked(at=now, agent=True)
    )
    assert place.stage == attrs.evolve(
        used,
        phase=Merging(since=now),
        attempt=used.attempt + 1,
        resolving=True,
        words=phase.words,
        sends=0,
        turns=0,
        reprompted=False,
        retold=None,
        judged_at=None,
        nudged_at=None,
    )
    assert actions == (
        Report(
            event=Event.RESUMED,
            text=f"{NAME} resumed at slices: an agent merges the lanes",
            stage=StageName("slices"),
        ),
    )
    assert (place.spent.paused_at, place.spent.paused_seconds) == (
        None,
        again.spent.paused_seconds + 30.0,
    )


def test_resolve_where_no_merge_or_lane_waits_is_refused_whole_naming_what_does() -> None:
    """A resolve of a run that runs, is dropped, or pauses for another cause names what waits."""
    place = _place(world_of(sliced()))
    at = Instant(9.0)
    idle = f"nothing waits on you now: flume status {NAME} shows where it stands"
    nothing = "nothing there waits on a resolve: no merge conflict"
    spent = Paused(cause=PauseCause.BUDGET, words="turns 1 of 1", spent="turns")
    for where, what, mend in (
        (place, f"{NAME} runs the lanes of slices; {nothing}", idle),
        (
            evolve(place, life=Life.DROPPED),
            f"{NAME} was dropped; flume tidy removes its place; {nothing}",
            idle,
        ),
        (
            evolve(place, stage=attrs.evolve(place.stage, phase=spent)),
            f"{NAME} is paused for budget, which resolve does not resolve",
            f"flume raise {NAME} --turns +N",
        ),
    ):
        for agent in (False, True):
            seen = ResolveAsked(at=at, agent=agent)
            assert _refusal(where, seen) == (1, (Problem("resolve", what, mend),))


def _order(place: Place, lane: str, order: LaneOrder) -> OrderLane:
    """The order ``order`` for lane ``lane`` of ``place``, as the run gives it."""
    run = place.lanes[lane]
    return OrderLane(repository="/src/app", place=run.place, order=order, spread=False)


def test_a_retry_launches_lanes_again_only_where_the_run_pauses_on_a_parallel_s_lane() -> None:
    """relaunches: an active run paused lane-dropped at a parallel, and no other."""
    fanned = world_of(sliced())
    end_lane(fanned, "slice-a", finished=False)
    assert not relaunches(_place(fanned))
    world = _ended({"slice-a": False, "slice-b": True, "slice-c": True})
    paused = _place(world)
    assert relaunches(paused)
    assert not relaunches(evolve(paused, life=Life.DROPPED))
    assert not relaunches(_place(_conflicted("slice-a")))
    assert world.feed(RetryAsked(at=world.instant())) is None
    end_lane(world, "slice-a", finished=True)
    past = _place(world)
    assert past.stage.name == "after"
    phase = attrs.evolve(past.stage, phase=paused.stage.phase)
    assert not relaunches(evolve(past, stage=phase))


def test_a_dropped_run_ends_its_running_lanes_and_tidies_the_finished_only_at_its_block() -> None:
    """drop_lanes, whole: a running lane dropped and ended, a finished one tidied, in order.

    Past the block its finished lanes were tidied when merged: a drop orders nothing more.
    """
    world = world_of(sliced(cap=2))
    end_lane(world, "slice-a", finished=True)
    end_lane(world, "slice-b", finished=False)
    place = _place(world)
    ended = attrs.evolve(place.lanes["slice-c"], state=LaneState.ENDED)
    assert drop_lanes(place) == (
        evolve(place, lanes=place.lanes.set("slice-c", ended)),
        (_order(place, "slice-a", LaneOrder.TIDY), _order(place, "slice-c", LaneOrder.DROP)),
    )
    past = _place(_ended(dict.fromkeys(LANES, True)))
    assert past.stage.name == "after"
    assert drop_lanes(past) == (past, ())


def test_a_restart_asks_again_each_launch_merge_drop_and_tidy_the_run_stands_at() -> None:
    """pending, whole: at the block, its running lanes' launches and drops of those ended.

    Merging, the merge; past the block or dropped, the tidy of each finished lane besides. An
    orchestrate block's running children's launches are its module's, none of these.
    """
    world = world_of(sliced(cap=2))
    end_lane(world, "slice-a", finished=True)
    end_lane(world, "slice-b", finished=False)
    place = _place(world)
    parallel = parallel_of(place)
    assert isinstance(parallel, Parallel)
    assert pending(place) == (
        launch_lane(place, parallel, "slice-c"),
        _order(place, "slice-b", LaneOrder.DROP),
    )
    assert world.feed(DropAsked(at=world.instant())) is None
    dropped = _place(world)
    assert pending(dropped) == (
        _order(place, "slice-b", LaneOrder.DROP),
        _order(place, "slice-c", LaneOrder.DROP),
        _order(place, "slice-a", LaneOrder.TIDY),
    )
    conflicted = _conflicted("slice-b")
    merging = next(
        before for before, seen, _ in conflicted.steps if isinstance(seen, MergeConflicted)
    )
    assert merging is not None
    assert pending(merging) == (merge_action(merging),)
    past = _place(_ended(dict.fromkeys(LANES, True)))
    assert pending(past) == tuple(_order(past, lane, LaneOrder.TIDY) for lane in LANES)
    led = orchestrate_world(crew(most=2))
    assert spawn(led, "a") is None
    assert [run.state for run in _place(led).lanes.values()] == [LaneState.RUNNING]
    assert pending(_place(led)) == ()


def test_a_dropped_run_at_an_orchestrate_block_tidies_its_finished_children() -> None:
    """drop_lanes at an orchestrate block: a finished child is tidied, a running one dropped."""
    world = orchestrate_world(crew(most=3))
    assert spawn(world, "a") is None
    assert spawn(world, "b") is None
    end_child(world, "coder-1", finished=True)
    place = _place(world)
    ended = attrs.evolve(place.lanes["coder-2"], state=LaneState.ENDED)
    assert drop_lanes(place) == (
        evolve(place, lanes=place.lanes.set("coder-2", ended)),
        (_order(place, "coder-1", LaneOrder.TIDY), _order(place, "coder-2", LaneOrder.DROP)),
    )


BLOCKS = (
    (Join.ALL, Merge.MERGE),
    (Join.ALL, Merge.PICK),
    (Join.ALL, Merge.NONE),
    (Join.FIRST, Merge.PICK),
)


@settings(max_examples=min(settings().max_examples, 100), deadline=None)
@given(
    block=st.sampled_from(BLOCKS),
    ends=st.permutations(LANES),
    finished=st.lists(st.booleans(), min_size=3, max_size=3),
    picks=st.lists(st.integers(0, 2), max_size=3),
)
def test_a_run_paused_on_a_lane_s_end_always_names_a_lane_ended_unfinished(
    block: tuple[Join, Merge], ends: list[str], finished: list[bool], picks: list[int]
) -> None:
    """WF-JOIN-ALL: paused lane-dropped, the run's lanes ended unfinished hold the pause's lane.

    Whatever order the lanes end in, and whichever of them a person goes on without: so a
    resolve's or retry's refusal always has a lane ended unfinished to name first.
    """
    join, merge = block
    world = world_of(sliced(join=join, merge=merge))
    for lane, done in zip(ends, finished, strict=True):
        if _place(world).lanes[lane].state is LaneState.RUNNING:
            end_lane(world, lane, finished=done)
    for pick in [*picks, None]:
        place = _place(world)
        phase = place.stage.phase
        if not (isinstance(phase, Paused) and phase.cause is PauseCause.LANE_DROPPED):
            break
        ended = [
            run.lane
            for run in place.lanes.values()
            if run.state is LaneState.ENDED and not run.let_go
        ]
        assert phase.lane in ended
        if pick is not None:
            without = sorted(ended)[pick % len(ended)]
            assert world.feed(ResolveAsked(at=world.instant(), without=without)) is None
