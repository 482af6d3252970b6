"""Parallel blocks: each branch in a lane of its own, joined, then merged into the run's branch.

Theory of operation. A lane is a place of its own: ``<kind>--<name>+<lane>`` on the branch
``<prefix>/<name>+<lane>``, cut from the run's head when the block was entered, its base the
run's branch, its board the run's, its body the branch's block, its journal its own. So every
rule a place keeps holds in each lane unchanged: one live agent a worktree (R4 is
WF-ONE-WRITER-PER-LANE), prompts proven delivered, gates judged at a turn's end, budgets that
pause, tidy that never loses a commit. The run itself waits in :class:`~flume.core.place.Fanned`
with no agent in its own worktree, and learns of its lanes only from observations the shell
journals into its journal (``LaneEnded``), so its replay depends on its journal alone.

The rules:

- WF-CAP: at most ``cap`` of the block's lanes run at once; the rest wait, launched in declared
  order as running ones end.
- WF-JOIN-ALL: ``join = "all"`` is met when every lane finished; a lane that ends unfinished
  (dropped) pauses the run, named (``lane-dropped``), with a person's choices: launch the lane
  again (``flume retry RUN --step LANE``: a fresh lane, a place of its own, from the block's
  entry) or go on without it (``flume resolve RUN --without LANE``, a person's decision).
- WF-JOIN-FIRST: ``join = "first"`` is met by the first lane to finish; the others are dropped
  (their agents end) and those not launched never are.
- WF-MERGE-ORDER: ``merge = "merge"`` merges every finished lane in declared order, ``pick`` the
  first to finish, ``none`` none; the merge runs in the run's worktree with no agent live. The
  first lane that conflicts pauses the run (``merge-conflict``) naming its files; ``flume
  resolve --by-hand`` merges again (what a person merged is passed over), ``--agent`` first
  runs an agent on the merge step (:func:`flume.core.place.current_step`). A merge git refuses
  for a reason that is not a conflict (a lock, the lane's branch gone) is named as what it is,
  never as a conflict (``merge-failed``, git's words, the lock's path or the command that
  restores the branch); resumed once mended, flume merges again.
- WF-FINISHED-HOLDS-ITS-WORK: ``resolve --by-hand`` is taken only when no merge is under way in
  the run's worktree and the run's head holds each lane it claims merged (the one paused on and
  those before it): its head in the run's history, and its changes in the run's tree, as the
  shell found them; else it is refused, naming the lane and the commands that mend it.
- WF-TIDY-LANES: a merged lane is tidied (its branch, in the run's, goes with its worktree); a
  lane not merged is tidied too, and tidy keeps its branch, named, since the run's branch lacks
  its commits (R10). A dropped run drops its running lanes.
- WF-SPREAD: a block that spreads (``spread = true``) makes each of its lanes a fleet place,
  carried by whichever host of the fleet takes it (docs/fleet.md). Every launch, order and
  note for such a lane says so (the shell hands it to the fleet, not to a journal here), the
  run hears of it only through the fleet (never from a journal this host may hold of it), and
  its merge names the head the lane ended at, which the shell fetches from the fleet's remote.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import assert_never

import attrs
from pyrsistent import pmap, pset, pvector

from flume.core import stage
from flume.core.actions import Action, Event, LaneOrder, LaunchLane, OrderLane, Report
from flume.core.applies import refuse
from flume.core.choices import AgentName
from flume.core.errors import refused
from flume.core.ids import Instant, PlaceName, WorkName
from flume.core.kinds import Join, Kind, Merge, Parallel, lane_kind, lane_names, parallels, steps
from flume.core.launch import lane_work_name, place_branch, place_name
from flume.core.observations import (
    LaneEnded,
    LanesMerged,
    MergeConflicted,
    MergeRefused,
    ResolveAsked,
    RetryAsked,
)
from flume.core.place import (
    Fanned,
    JoinStage,
    LaneRun,
    LaneState,
    Life,
    Merging,
    Outcome,
    PauseCause,
    Paused,
    Place,
    Queued,
    TidyNotWanted,
    accepts,
    evolve,
    lanes_in_order,
    leading,
    merge_action,
    resolve_command,
)
from flume.core.settings import Settings
from flume.core.text import shell_word
from flume.core.workflow import budget


def children(place: Place) -> list[LaneRun]:
    """The current orchestrate block's children, in order; none before its entry."""
    if leading(place) is None or place.lanes_key != place.stage.key:
        return []
    return lanes_in_order(place)


def passes(place: Place) -> tuple[int, ...]:
    """The passes of the loops around the run's current block, outermost first."""
    position = place.stage.position
    return () if position is None else tuple(each.number for each in position.passes)


def is_spread(place: Place) -> bool:
    """WF-SPREAD: the run's current block (a parallel or an orchestrate) spreads its lanes."""
    block = parallel_of(place) or leading(place)
    return block is not None and block.spread


def lane_run(  # noqa: PLR0913 (a lane's fields, each a keyword)
    place: Place,
    lane: str,
    index: int,
    goal: str = "",
    agent: AgentName | None = None,
    *,
    tries: int = 1,
) -> LaneRun:
    """Lane ``lane`` of the run's current block, waiting, with the place and branch it will have.

    A parallel's lane or an orchestrate's child alike: ``<kind>--<name>+<lane>`` on
    ``<prefix>/<name>+<lane>``, the passes of the loops around the block after an ``@``; a lane
    launched again, ``.<tries>`` after (a place of its own: its first place stays as it ended);
    a fleet place if the block spreads.
    """
    work = lane_work_name(place.launch.name, lane, passes(place))
    if tries > 1:
        work = WorkName(f"{work}.{tries}")
    return LaneRun(
        lane=lane,
        index=index,
        place=place_name(place.kind.name, work),
        branch=place_branch(place.kind, work),
        goal=goal,
        agent=agent,
        tries=tries,
        spread=is_spread(place),
    )


def children_merging(place: Place) -> bool:
    """The run merges its orchestrate block's finished children."""
    return leading(place) is not None and place.join is JoinStage.MERGING


def parallel_of(place: Place) -> Parallel | None:
    """The parallel block the place's current stage is, if it is one."""
    return parallels(place.kind.body).get(place.stage.name)


def lane_for(place: Place, named: str) -> tuple[PlaceName, str] | None:
    """STEP-NAMED: the lane a command naming step ``named`` is for, and the step it names there.

    A run standing at a parallel has no agent of its own; its lanes' places have. ``slice-a``
    (a branch's name), ``slices/slice-a`` (its path in the tree) or a key inside the branch
    (``slices/checks@2/lint``) is for that lane's place, as the step from the branch's name on
    (empty for the branch itself: whatever step the lane is at). None: no lane is named, or the
    run stands at no parallel; the run's own step is then checked against ``named``. An
    orchestrate block's child is named the same way (``coder-1``, ``build/coder-1``); its lead
    is the run's own step.
    """
    if not named or (parallel_of(place) is None and not children(place)):
        return None
    parts = named.split("/")
    for index, part in enumerate(parts):
        run = place.lanes.get(part.split("@", 1)[0])
        if run is not None and _relaunches(place, run.lane):
            # The run paused on this lane's end: launching it again is the run's to do.
            return None
        if run is not None:
            inner = "/".join(parts[index:])
            return run.place, "" if inner == run.lane else inner
    return None


def _runs(place: Place, parallel: Parallel) -> dict[str, LaneRun]:
    """Each lane of ``parallel``, waiting, with the place and branch it will have."""
    return {lane: lane_run(place, lane, index) for index, lane in enumerate(lane_names(parallel))}


def fan_when_free(settings: Settings, place: Place, now: Instant) -> Outcome:
    """A queued parallel block fans out once the run is ready and no agent lives in it.

    Its lanes are cut from the run's head now (the block's entry commit); WF-CAP bounds how
    many are launched at once.
    """
    del settings
    parallel = parallel_of(place)
    if (
        parallel is None
        or place.stage.resolving
        or place.life is not Life.ACTIVE
        or place.worktree_gone
        or place.branch_gone
        or not place.ready
        or place.agent is not None
        or not isinstance(place.stage.phase, Queued)
    ):
        return place, ()
    ran = place.stage.attempt > 1 and any(
        lane in place.lanes and place.lanes[lane].state is not LaneState.WAITING
        for lane in lane_names(parallel)
    )
    working = {LaneState.WAITING, LaneState.RUNNING}
    if ran and not any(run.state in working for run in place.lanes.values()):
        # Its lanes ran already: a merge step stopped short and was retried, or a merge git
        # refused was resumed; merge again. (A loop's next pass enters the block anew, at
        # attempt 1: its lanes run again, below.) Never while a lane runs: the run retried
        # once its worktree or branch was back, its lanes still at work, waits on them
        # (WF-FINISHED-HOLDS-ITS-WORK).
        place = evolve(place, stage=attrs.evolve(place.stage, phase=Merging(since=now)))
        return place, (merge_action(place),)
    spent = budget.spent_budget(place.budgets, place.spent, 0, now)
    if spent is not None:
        # WF-BUDGET-PAUSES: over a budget, no lane is launched; the block waits, queued.
        paused = Paused(cause=PauseCause.BUDGET, words=f"budget {spent} spent", spent=spent)
        return stage.pause_stage(place, paused)
    if ran:
        # A lane launched again (WF-JOIN-ALL), or lanes still at work: the block fans out anew
        # for those waiting alone, from the head it was entered at, and waits on those running;
        # the lanes that finished stay finished.
        run = attrs.evolve(place.stage, phase=Fanned(since=now), turns=0)
        place, launched = _launch_more(evolve(place, stage=run), parallel)
        return place, launched
    run = attrs.evolve(
        place.stage, phase=Fanned(since=now), started_at=now, start_head=place.head, turns=0
    )
    place = evolve(
        place,
        stage=run,
        lanes=pmap(_runs(place, parallel)),
        entry=place.head,
        finished_lanes=pvector(),
    )
    most = parallel.cap or len(parallel.branches)
    report = Report(
        event=Event.STAGE_STARTED,
        text=f"parallel {parallel.name} fans out into {len(parallel.branches)} lanes "
        f"({', '.join(lane_names(parallel))}), at most {most} at once, from {place.head}",
        stage=run.name,
    )
    place, launched = _launch_more(place, parallel)
    return place, (report, *launched)


def _running(place: Place) -> int:
    return sum(1 for run in place.lanes.values() if run.state is LaneState.RUNNING)


def _launch_more(place: Place, parallel: Parallel) -> Outcome:
    """WF-CAP: launch waiting lanes, in declared order, while fewer than ``cap`` run.

    WF-BUDGET-PAUSES: none is launched over a spent budget, as for an orchestrate's children:
    the block holds the waiting ones while others run; once none runs, the run pauses on the
    budget, and a raise launches them.
    """
    spent = budget.spent_budget(place.budgets, place.spent, 0, place.now)
    if spent is not None:
        if _running(place) or not any(
            run.state is LaneState.WAITING for run in place.lanes.values()
        ):
            return place, ()
        words = f"budget {spent} spent, and lanes of parallel {parallel.name} wait to be launched"
        paused = Paused(cause=PauseCause.BUDGET, words=words, spent=spent, again=True)
        return stage.pause_stage(place, paused)
    room = (parallel.cap or len(parallel.branches)) - _running(place)
    actions: list[Action] = []
    for lane in lane_names(parallel):
        run = place.lanes[lane]
        if room <= 0:
            break
        if run.state is not LaneState.WAITING:
            continue
        running = attrs.evolve(run, state=LaneState.RUNNING)
        place = evolve(place, lanes=place.lanes.set(lane, running))
        room -= 1
        actions.append(launch_lane(place, parallel, lane))
        actions.append(
            Report(
                event=Event.LANE_LAUNCHED,
                text=f"lane {lane} launched: {run.place} on {run.branch}",
                stage=place.stage.name,
            )
        )
    return place, tuple(actions)


def launch_lane(place: Place, parallel: Parallel, lane: str) -> LaunchLane:
    """The launch of ``lane``: the run's own, named ``<name>+<lane>``, based on the run's branch."""
    return lane_launch(place, lane, lane_kind(place.kind, parallel, lane))


def lane_launch(
    place: Place, lane: str, kind: Kind, *, goal: str = "", led: bool = False
) -> LaunchLane:
    """The launch of a lane (or an orchestrate's child, ``led``) running ``kind``."""
    # A lane may spend at most what its run has left: its spend is the run's once it ends.
    budgets = place.budgets
    kind = attrs.evolve(
        kind,
        budgets=attrs.evolve(
            budgets,
            turns=None if budgets.turns is None else max(1, budgets.turns - place.spent.turns),
            tokens=None if budgets.tokens is None else max(1, budgets.tokens - place.spent.tokens),
        ),
    )
    names = {step.name for step in steps(kind.body)}
    run = place.lanes.get(lane)
    tries = run.tries if run is not None else 1
    work = lane_work_name(place.launch.name, lane, passes(place))
    launch = attrs.evolve(
        place.launch,
        name=WorkName(f"{work}.{tries}") if tries > 1 else work,
        base=place.branch,
        waits=pset(wait for wait in place.launch.waits if wait in names),
        mark=None,
        parent=place.launch.place,
        lane=lane,
        goal=goal,
        led=led,
        spread=run.spread if run is not None else is_spread(place),
    )
    return LaunchLane(
        repository=place.launch.repository,
        parent=place.launch.place,
        lane=lane,
        launch=launch,
        kind=kind,
        setup=place.setup,
        copy=place.copy,
        start=place.entry,
        settings=place.settings,
        board=place.board,
        tests=place.tests,
    )


def _order(place: Place, run: LaneRun, order: LaneOrder) -> OrderLane:
    return OrderLane(
        repository=place.launch.repository, place=run.place, order=order, spread=run.spread
    )


def on_lane_ended(place: Place, seen: LaneEnded) -> Outcome:
    """A running lane ended: the join is met, more lanes are launched, or the run pauses."""
    parallel = parallel_of(place)
    run = place.lanes.get(seen.lane)
    if (
        parallel is None
        or place.life is not Life.ACTIVE
        or not isinstance(place.stage.phase, Fanned)
        or run is None
        or run.state is not LaneState.RUNNING
    ):
        return place, ()
    state = LaneState.FINISHED if seen.finished else LaneState.ENDED
    ended = attrs.evolve(run, state=state, head=seen.head)
    spent = attrs.evolve(
        place.spent,
        turns=place.spent.turns + seen.turns,
        tokens=place.spent.tokens + seen.tokens,
    )
    place = evolve(place, lanes=place.lanes.set(seen.lane, ended), spent=spent)
    if seen.finished:
        place = evolve(place, finished_lanes=place.finished_lanes.append(seen.lane))
    how = f"finished at {seen.head}" if seen.finished else "ended unfinished"
    report = Report(event=Event.LANE_ENDED, text=f"lane {seen.lane} {how}", stage=place.stage.name)
    if parallel.join is Join.FIRST:
        if seen.finished:
            place, then = _first_joined(place, parallel)
        else:
            place, then = _lanes_left(place, seen.lane)
        return place, (report, *then)
    place, launched = _launch_more(place, parallel)
    if isinstance(place.stage.phase, Paused) or any(
        each.state in {LaneState.WAITING, LaneState.RUNNING} for each in place.lanes.values()
    ):
        return place, (report, *launched)
    place, joined = _all_ended(place, parallel)
    return place, (report, *launched, *joined)


def _all_ended(place: Place, parallel: Parallel) -> Outcome:
    """WF-JOIN-ALL: every lane ended; one that ended unfinished pauses the run, with choices.

    The pause comes once no lane runs or waits, so a person's choice (launch it again, go on
    without it) is the last thing the block waits on.
    """
    dropped = [
        run.lane for run in lanes_in_order(place) if run.state is LaneState.ENDED and not run.let_go
    ]
    if not dropped:
        return _joined(place, parallel)
    said = ", ".join(dropped)
    paused = Paused(
        cause=PauseCause.LANE_DROPPED,
        words=f"lane {said} ended unfinished, and parallel {parallel.name} joins all its lanes",
        lane=dropped[0],
    )
    return stage.pause_stage(place, paused)


def _lanes_left(place: Place, lane: str) -> Outcome:
    """A first join whose lane ended unfinished: the next waits its turn, or none is left."""
    parallel = parallel_of(place)
    assert parallel is not None  # noqa: S101 (asked only at a parallel's stage)
    place, launched = _launch_more(place, parallel)
    if isinstance(place.stage.phase, Paused) or any(
        run.state in {LaneState.WAITING, LaneState.RUNNING} for run in place.lanes.values()
    ):
        return place, launched
    paused = Paused(
        cause=PauseCause.LANE_DROPPED,
        words=f"every lane of parallel {parallel.name} ended unfinished",
        lane=lane,
    )
    return stage.pause_stage(place, paused)


def _first_joined(place: Place, parallel: Parallel) -> Outcome:
    """WF-JOIN-FIRST: the first lane finished; the others are dropped, the waiting never run."""
    orders: list[Action] = []
    lanes = place.lanes
    for lane in lane_names(parallel):
        run = lanes[lane]
        if run.state is LaneState.RUNNING:
            orders.append(_order(place, run, LaneOrder.DROP))
        if run.state in {LaneState.RUNNING, LaneState.WAITING}:
            lanes = lanes.set(lane, attrs.evolve(run, state=LaneState.ENDED))
    place, joined = _joined(evolve(place, lanes=lanes), parallel)
    return place, (*orders, *joined)


def _joined(place: Place, parallel: Parallel) -> Outcome:
    """The join is met: WF-MERGE-ORDER names the lanes to merge, then the merge is asked."""
    match parallel.merge:
        case Merge.MERGE:
            chosen = [
                lane
                for lane in lane_names(parallel)
                if place.lanes[lane].state is LaneState.FINISHED
            ]
        case Merge.PICK:
            chosen = list(place.finished_lanes[:1])
        case Merge.NONE:
            chosen = []
        case _:
            assert_never(parallel.merge)
    place = evolve(place, merging=pvector(chosen))
    if not chosen:
        return _merged(place, place.head)
    merging = attrs.evolve(place.stage, phase=Merging(since=place.now))
    place = evolve(place, stage=merging)
    return place, (merge_action(place),)


def is_merging(place: Place) -> bool:
    """The run asked flume to merge its lanes or children (not an agent resolving a conflict)."""
    if place.life is Life.ACTIVE and children_merging(place):
        return True
    return (
        place.life is Life.ACTIVE
        and isinstance(place.stage.phase, Merging)
        and not place.stage.resolving
    )


def on_lanes_merged(place: Place, seen: LanesMerged) -> Outcome:
    """The lanes asked for are merged: WF-TIDY-LANES, and the run goes on past the block.

    A parallel block's merge, asked (:func:`is_merging`): the rule that owns ``LanesMerged``,
    :func:`flume.core.workflow.orchestrate.on_lanes_merged`, checks that, takes an orchestrate
    block's merge, and hands a parallel's here.
    """
    # The merge moved the run's branch: the next step's commits count from here, not from
    # the head before it (its start_head), whenever the branch's own look reports it.
    return _merged(evolve(place, head=seen.head), seen.head)


def _merged(place: Place, head: object) -> Outcome:
    """WF-TIDY-LANES: every finished lane is tidied; the block ends and the run goes on."""
    merged = ", ".join(place.merging) or "none"
    report = Report(
        event=Event.MERGED,
        text=f"lanes merged into {place.branch}: {merged}; its head is {head}",
        stage=place.stage.name,
    )
    orders = tidy_orders(place)
    place, finished = stage.finish_stage(place, place.now, done=False)
    return place, (report, *orders, *finished)


def tidy_orders(place: Place) -> tuple[Action, ...]:
    """WF-TIDY-LANES: tidy each lane that finished (tidy keeps a branch not merged, named)."""
    return tuple(
        _order(place, run, LaneOrder.TIDY)
        for run in lanes_in_order(place)
        if run.state is LaneState.FINISHED
    )


def on_merge_conflicted(place: Place, seen: MergeConflicted) -> Outcome:
    """A lane's merge conflicted and was undone: the run pauses, naming the lane and files."""
    if not is_merging(place):
        return place, ()
    run = place.lanes.get(seen.lane)
    branch = run.branch if run is not None else seen.lane
    files = ", ".join(seen.files) or "files git did not name"
    words = (
        f"merging lane {seen.lane} ({branch}) into {place.branch} conflicted in {files}; "
        "the merge was undone"
    )
    report = Report(event=Event.MERGE_CONFLICT, text=words, stage=place.stage.name)
    paused = Paused(cause=PauseCause.MERGE_CONFLICT, words=words, lane=seen.lane)
    place, pausing = stage.pause_stage(place, paused)
    return place, (report, *pausing)


def on_merge_refused(place: Place, seen: MergeRefused) -> Outcome:
    """WF-MERGE-ORDER: a merge git refused for no conflict is named as what it is, and waits.

    A lock in the way names the lock; a lane's branch gone names the command that restores it
    at the head the lane finished at. Nothing of the lane was merged; resumed once mended,
    flume merges again (the lanes merged already are passed over).
    """
    if not is_merging(place):
        return place, ()
    run = place.lanes.get(seen.lane)
    branch = run.branch if run is not None else seen.lane
    if seen.missing and run is not None and run.head is not None:
        mend = (
            f"restore it with git -C {place.launch.repository} update-ref refs/heads/{branch} "
            f"{run.head}"
        )
    elif seen.lock:
        mend = f"if no git command runs in {place.path}, the lock is stale: remove {seen.lock}"
    else:
        mend = "mend what git says"
    if seen.under_way:
        mend = f"{mend}; git left a merge under way there: git -C {place.path} merge --abort"
    held = f"git's lock {seen.lock} is held: " if seen.lock else ""
    words = (
        f"merging lane {seen.lane} ({branch}) into {place.branch} was refused, not for a "
        f"conflict: {held}{seen.reason.strip()}; {mend}"
    )
    report = Report(event=Event.FAILED, text=words, stage=place.stage.name)
    paused = Paused(cause=PauseCause.MERGE_FAILED, words=words, again=True, lane=seen.lane)
    place, pausing = stage.pause_stage(place, paused)
    return place, (report, *pausing)


def _refuse_resolve(place: Place, command: type[ResolveAsked | RetryAsked], word: str) -> Paused:
    """The pause a resolve or a lane's retry lets go on; refused when there is none."""
    phase = place.stage.phase
    if place.life is not Life.ACTIVE or not isinstance(phase, Paused):
        # REFUSAL-NAMES-WAY: what the place waits on instead, and the command that applies.
        wanted = "a resolve: no merge conflict" if word == "resolve" else "a lane's retry"
        raise refuse(place, word, wanted)
    if not accepts(phase, command):
        raise refused(
            word,
            f"{place.launch.place} is paused for {phase.cause.value}, which {word} does not "
            "resolve",
            resolve_command(place, phase),
        )
    return phase


def on_resolve(place: Place, seen: ResolveAsked) -> Outcome:
    """A person resolved a paused merge: merged by hand, the merge goes on; else an agent's.

    ``--agent``: the merge is the block's merge step's (``resolving``): a fresh agent in the
    run's worktree is told to merge the lanes in order, its gate a commit; once it passes, flume
    merges again, passing over what the agent merged. ``--by-hand``: taken only when the run's
    head holds what the person claims merged (WF-FINISHED-HOLDS-ITS-WORK). ``--without``: a
    lane that ended unfinished is let go (WF-JOIN-ALL).
    """
    phase = _refuse_resolve(place, ResolveAsked, "resolve")
    name = place.launch.place
    if phase.cause is PauseCause.LANE_DROPPED:
        if not seen.without:
            raise refused(
                "resolve",
                f"{name} is paused for lane-dropped: lane {phase.lane or 'a lane'} ended "
                "unfinished, and no merge waits to be resolved",
                resolve_command(place, phase),
            )
        return _go_on_without(place, phase, seen)
    if seen.without:
        raise refused(
            "resolve",
            f"{name} is paused for {phase.cause.value}: no lane ended unfinished to go without",
            resolve_command(place, phase),
        )
    if not seen.agent:
        _check_held(place, phase, seen)
    place = evolve(place, spent=budget.resumed_at(place.spent, place.now))
    how = "an agent merges the lanes" if seen.agent else "merged by hand"
    report = Report(
        event=Event.RESUMED,
        text=f"{name} resumed at {place.stage.key}: {how}",
        stage=place.stage.name,
    )
    merging = attrs.evolve(place.stage, phase=Merging(since=place.now))
    if seen.agent:
        # The merge step's agent starts once free (flume.core.stage.start_when_free); its
        # commit asks the merge again (flume.core.stage.finish_stage).
        run = attrs.evolve(
            merging,
            attempt=place.stage.attempt + 1,
            resolving=True,
            words=phase.words,
            sends=0,
            turns=0,
            reprompted=False,
            retold=None,
            judged_at=None,
            nudged_at=None,
        )
        return evolve(place, stage=run), (report,)
    place = evolve(place, stage=merging)
    return place, (report, merge_action(place))


def _check_held(place: Place, paused: Paused, seen: ResolveAsked) -> None:
    """WF-FINISHED-HOLDS-ITS-WORK: refused unless the head holds each lane claimed merged.

    Claimed: the lane the merge paused on and those before it in the merge's order (flume
    merges the rest). No merge may be under way in the run's worktree either: a commit would
    conclude it with whatever git could write of it.
    """
    name = place.launch.place
    if seen.under_way:
        raise refused(
            "resolve",
            f"a merge is under way in {place.path} (git's MERGE_HEAD), concluded by no commit",
            f"conclude it (git -C {place.path} commit) or undo it (git -C {place.path} merge "
            f"--abort), then flume resolve {name} --by-hand",
        )
    claimed = list(place.merging)
    if paused.lane in claimed:
        claimed = claimed[: claimed.index(paused.lane) + 1]
    for lane in claimed:
        why = seen.missing.get(lane)
        if why is None:
            continue
        run = place.lanes.get(lane)
        branch = run.branch if run is not None else lane
        raise refused(
            "resolve",
            f"the head of {place.branch} does not hold lane {lane} ({branch}): {why}",
            f"{_take_back(place, lane, branch, seen)}; then flume resolve {name} --by-hand; or "
            f"flume resolve {name} --agent",
        )


def _take_back(place: Place, lane: str, branch: str, seen: ResolveAsked) -> str:
    """The exact commands that put lane ``lane``'s work into the run's head.

    A lane whose head is not in the run's history is merged. One merged without its changes
    is in that history already (a merge again does nothing): its files are taken back from
    its branch (``restore``), those it deleted removed (``remove``), and committed.
    """
    git = f"git -C {shell_word(place.path)}"
    restore, remove = seen.restore.get(lane, pvector()), seen.remove.get(lane, pvector())
    if not (restore or remove):
        return f"merge it ({git} merge --no-ff {branch})"
    taken = [f"{git} checkout {branch} -- {_quoted(restore)}"] if restore else []
    taken += [f"{git} rm --quiet -- {_quoted(remove)}"] if remove else []
    message = shell_word(f"Take back the changes of lane {lane}")
    return f"take its changes back: {' && '.join(taken)} && {git} commit --quiet -m {message}"


def _quoted(paths: Iterable[str]) -> str:
    """Paths as a shell reads them, each one word."""
    return " ".join(shell_word(path) for path in paths)


def _go_on_without(place: Place, paused: Paused, seen: ResolveAsked) -> Outcome:
    """WF-JOIN-ALL: a person lets the run go on without a lane that ended unfinished."""
    name = place.launch.place
    ended = [
        run.lane for run in lanes_in_order(place) if run.state is LaneState.ENDED and not run.let_go
    ]
    run = place.lanes.get(seen.without)
    if run is None or run.lane not in ended:
        lane = ended[0] if ended else paused.lane or "LANE"
        raise refused(
            "resolve",
            f"{name} has no lane {seen.without!r} that ended unfinished (ended: "
            f"{', '.join(ended) or 'none'})",
            f"name it: flume resolve {name} --without {lane}, or launch it again: flume retry "
            f"{name} --step {lane}",
        )
    lanes = place.lanes.set(run.lane, attrs.evolve(run, let_go=True))
    place = evolve(place, lanes=lanes, spent=budget.resumed_at(place.spent, place.now))
    report = Report(
        event=Event.RESUMED,
        text=f"{name} goes on without lane {run.lane} (a person's decision)",
        stage=place.stage.name,
    )
    parallel = parallel_of(place)
    left = [lane for lane in ended if lane != run.lane]
    if parallel is None or left:
        place, pausing = _all_ended(place, parallel) if parallel else (place, ())
        return place, (report, *pausing)
    chosen = [
        lane
        for lane in (lane_names(parallel) if parallel.merge is Merge.MERGE else ())
        if place.lanes[lane].state is LaneState.FINISHED
    ]
    if parallel.merge is Merge.PICK:
        chosen = list(place.finished_lanes[:1])
    place = evolve(
        place,
        merging=pvector(chosen),
        stage=attrs.evolve(place.stage, phase=Merging(since=place.now)),
    )
    return place, (report, merge_action(place))


def relaunches(place: Place) -> bool:
    """The run is paused on lanes that ended unfinished: a retry launches them again."""
    phase = place.stage.phase
    return (
        place.life is Life.ACTIVE
        and isinstance(phase, Paused)
        and phase.cause is PauseCause.LANE_DROPPED
        and parallel_of(place) is not None
    )


def _relaunches(place: Place, lane: str) -> bool:
    """The run is paused on ``lane``'s unfinished end: a retry naming it is the run's."""
    run = place.lanes.get(lane)
    return relaunches(place) and run is not None and run.state is LaneState.ENDED and not run.let_go


def on_lane_retry(place: Place, seen: RetryAsked) -> Outcome:
    """WF-JOIN-ALL: a lane that ended unfinished is launched again: a fresh lane, from the entry.

    ``--step`` names it (its name or its path in the tree); none named, every lane the run
    paused on. Each is a place of its own, ``+<lane>.<n>``; the first stays as it ended.
    """
    phase = _refuse_resolve(place, RetryAsked, "retry")
    name = place.launch.place
    ended = [
        run.lane for run in lanes_in_order(place) if run.state is LaneState.ENDED and not run.let_go
    ]
    named = [part.split("@", 1)[0] for part in seen.step.split("/") if part]
    wanted = [lane for lane in ended if lane in named] if named else ended
    if not wanted:
        lane = ended[0] if ended else phase.lane or "LANE"
        raise refused(
            "retry",
            f"{name} has no lane {seen.step!r} that ended unfinished (ended: "
            f"{', '.join(ended) or 'none'})",
            f"flume retry {name} --step {lane}",
        )
    lanes = place.lanes
    launched: list[str] = []
    for lane in wanted:
        run = lanes[lane]
        fresh = lane_run(place, lane, run.index, run.goal, run.agent, tries=run.tries + 1)
        lanes = lanes.set(lane, fresh)
        launched.append(f"{lane} ({fresh.place})")
    run_stage = attrs.evolve(place.stage, attempt=place.stage.attempt + 1, phase=Queued())
    place = evolve(
        place, lanes=lanes, stage=run_stage, spent=budget.resumed_at(place.spent, place.now)
    )
    report = Report(
        event=Event.RETRIED,
        text=f"lane {', '.join(launched)} launched again from {place.entry}",
        stage=place.stage.name,
    )
    return place, (report,)


def drop_lanes(place: Place) -> tuple[Place, tuple[Action, ...]]:
    """A dropped run drops its running lanes and tidies those that finished, unmerged.

    The running ones' agents end; tidy keeps every lane's commits, named, and leaves no
    worktree behind.
    """
    orders: list[Action] = []
    lanes = place.lanes
    at_block = parallel_of(place) is not None or bool(children(place))
    for run in lanes_in_order(place):
        lane = run.lane
        if run.state is LaneState.RUNNING:
            orders.append(_order(place, run, LaneOrder.DROP))
            lanes = lanes.set(lane, attrs.evolve(run, state=LaneState.ENDED))
        elif run.state is LaneState.FINISHED and at_block:
            orders.append(_order(place, run, LaneOrder.TIDY))
    return evolve(place, lanes=lanes), tuple(orders)


def takes_order(order: LaneOrder, lane: Place) -> bool:
    """The lane takes ``order`` now: its rules accept it, and it has not had it already.

    A drop is for a lane not dropped (or tidied) yet; a finished lane is dropped too (a first
    join's other lane that finished as the first did), so that its tidy keeps its commits. A
    tidy is for a finished or dropped lane with no tidy wanted or under way.
    """
    match order:
        case LaneOrder.DROP:
            return lane.life in {Life.MAKING, Life.ACTIVE, Life.FINISHED} and lane.landed_at is None
        case LaneOrder.TIDY:
            return lane.life in {Life.FINISHED, Life.DROPPED} and isinstance(
                lane.tidy, TidyNotWanted
            )
        case _:
            assert_never(order)


def lanes_ended(run: Place, lanes: Mapping[PlaceName, Place], now: Instant) -> list[LaneEnded]:
    """What the run is to be told of its running lanes, from the lanes' places as they stand.

    A lane ended once its place finished its branch's block, or was dropped (or tidied), and
    its agent is seen gone: no lane's agent can commit to a branch being merged, nor outlive
    its turn under the block's cap. Only the place the run named, launched by that run and cut
    from its head at this entry of the block (a loop around the block enters it again). A lane
    a person tidied once it finished finished all the same. What it spent goes with it.

    WF-SPREAD: a lane of a block that spreads is heard of only through the fleet, which tells
    the run once its host pushed the head it ended at: a journal of it this host holds (the
    fleet may have put it here) tells nothing.
    """
    if run.life is not Life.ACTIVE or not (isinstance(run.stage.phase, Fanned) or children(run)):
        return []
    told: list[LaneEnded] = []
    for lane in lanes_in_order(run):
        found = lanes.get(lane.place)
        if (
            lane.state is not LaneState.RUNNING
            or lane.spread
            or found is None
            or found.launch.parent != run.launch.place
            or found.start != (run.start if lane.from_base else run.entry)
        ):
            continue
        ended = lane_ended(lane.lane, found, now)
        if ended is not None:
            told.append(ended)
    return told


def lane_ended(lane: str, found: Place, now: Instant) -> LaneEnded | None:
    """What a run is told of its lane ``lane`` from the lane's place ``found``; None: it runs on.

    Ended once the place finished its branch's block, or was dropped (or tidied), and its agent
    is gone; finished unless dropped, and only if its last step passed its gate. The one
    meaning of a lane's end: the supervisor's, and a fleet host's for a lane it carries.
    """
    if found.life not in {Life.FINISHED, Life.DROPPED, Life.TIDIED} or found.agent is not None:
        return None
    return LaneEnded(
        at=now,
        lane=lane,
        finished=found.life is not Life.DROPPED and found.stage.key in found.completed,
        head=found.head,
        turns=found.spent.turns,
        tokens=found.spent.tokens,
    )


def pending(place: Place) -> tuple[Action, ...]:
    """RESTART-PENDING for lanes: launches and orders asked and perhaps never carried out.

    Each is safe twice: a lane whose journal exists is not launched again, and an order a lane
    has had already (dropped, tidied) is not given again. An orchestrate block's children's
    launches are its module's (:func:`flume.core.workflow.orchestrate.pending`).
    """
    parallel = parallel_of(place)
    found: list[Action] = []
    if place.life is Life.ACTIVE and parallel is not None and isinstance(place.stage.phase, Fanned):
        found.extend(
            launch_lane(place, parallel, run.lane)
            for run in lanes_in_order(place)
            if run.state is LaneState.RUNNING
        )
    if is_merging(place):
        found.append(merge_action(place))
    found.extend(
        _order(place, run, LaneOrder.DROP)
        for run in lanes_in_order(place)
        if run.state is LaneState.ENDED
    )
    if (parallel is None and not children(place)) or place.life is not Life.ACTIVE:
        # Past the block (or the run finished): its finished lanes were asked to tidy.
        found.extend(tidy_orders(place))
    return tuple(found)
