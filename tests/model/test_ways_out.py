"""Every state of a run has a way out: issue 25's faults and promises, one example each.

The machine of ``test_no_silent_wait.py`` holds the promises over generated workflows; these
pin each fault the issue and its audit found (each failed on the code before its mend) and each
behaviour it lists that no test held, so that a plausible bug in the workflow engine fails a
fast example test, named, and not only a machine under a large profile.
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pmap, pvector

from flume.core.actions import (
    Event,
    JudgeGate,
    LaneOrder,
    LaunchLane,
    MergeLanes,
    OpenPR,
    OrderLane,
    Push,
    Report,
    SendTell,
    StartAgent,
)
from flume.core.applies import went_on
from flume.core.errors import Problem, UsageError
from flume.core.ids import BlockName, BranchName, KindName, PlaceName, Sha, StageName
from flume.core.kinds import (
    Approval,
    Budgets,
    Commit,
    Finalize,
    Kind,
    Merge,
    Orchestrate,
    Parallel,
    Sequence,
    Step,
    Verdict,
)
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentStateSeen,
    AnswerGiven,
    ApproveAsked,
    AskSaid,
    BranchHead,
    BranchVanished,
    BudgetRaised,
    DropAsked,
    LaneEnded,
    MergeRefused,
    Observation,
    ProgressSaid,
    Pushed,
    ResolveAsked,
    ResumeAsked,
    RetryAsked,
    Tick,
)
from flume.core.place import (
    Fanned,
    JoinStage,
    Judging,
    LaneState,
    Life,
    PauseCause,
    Paused,
    Place,
    Short,
    ShortCause,
    TidyWanted,
    evolve,
)
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import pending, step
from tests.model.fleet import Fleet
from tests.model.test_no_silent_wait import NoSilentWaitMachine
from tests.model.world import FakeWorld

S = Settings()


def _step(name: str, gate: Commit | Verdict | Approval, *, may: tuple[str, ...] = ()) -> Step:
    return Step(
        name=StageName(name), prompt=f"Do {name} of $brief.", deliverable=gate, may=pvector(may)
    )


def _kind(
    *blocks: object, budgets: Budgets | None = None, finalize: Finalize | None = None
) -> Kind:
    """A workflow of ``blocks`` (a budget makes even a plain step's kind one)."""
    return Kind(
        name=KindName("wf"),
        prefix="wf",
        body=Sequence(blocks=pvector(blocks)),
        budgets=budgets or Budgets(turns=50),
        finalize=finalize,
    )


def _launched(kind: Kind) -> FakeWorld:
    """A world that launched ``kind``; its first agent started and took its prompt."""
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    assert world.deliver()
    return world


def _window(world: FakeWorld) -> None:
    """The evidence window of a deliverable judged at a turn's end goes by."""
    world.now += S.quiet_seconds + 1
    world.feed(Tick(at=world.instant()))


def _place(world: FakeWorld) -> Place:
    place = world.place
    assert place is not None
    return place


def _paused(place: Place) -> Paused:
    phase = place.stage.phase
    assert isinstance(phase, Paused), phase
    return phase


# --- 2.1: a commit gate is judged at its turn's end ------------------------------------------


def test_a_commit_gate_is_judged_at_the_turn_s_end_told_once_then_paused() -> None:
    """WF-DELIVERABLE-AT-TURN-END: no commit at the turn's end: judged, told once, then paused.

    The fault: the step sat ``working waiting`` for ever, nothing named, no nudge, no pause.
    """
    world = _launched(_kind(_step("build", Commit())))
    assert world.end_turn() is None
    assert isinstance(_place(world).stage.phase, Judging)
    _window(world)
    (told,) = world.reports_of(Event.GATE_FAILED)
    assert "its gate is a new commit on the place's branch, and none was seen made" in told.text
    assert world.deliver()
    assert world.end_turn() is None
    _window(world)
    paused = _paused(_place(world))
    assert paused.cause is PauseCause.GATE_BLOCKED
    assert status(_place(world)).resolve == "flume resume wf--x (or flume retry wf--x with words)"
    assert len(world.reports_of(Event.GATE_FAILED)) == 1


def test_a_commit_seen_a_moment_after_the_turn_s_end_passes_the_gate() -> None:
    """The branch's look reports the commit after the turn's end, within the window: it passes."""
    world = _launched(_kind(_step("build", Commit()), _step("check", Commit())))
    world.git.commit(_place(world).branch, world.now)
    assert world.end_turn() is None
    assert isinstance(_place(world).stage.phase, Judging)
    head = world.git.head(_place(world).branch)
    world.feed(BranchHead(at=world.instant(), branch=_place(world).branch, sha=head))
    assert _place(world).completed == pvector(["build"])
    assert world.reports_of(Event.GATE_FAILED) == []


def test_the_merge_agent_that_merges_nothing_is_told_then_paused_and_resumed_afresh() -> None:
    """``resolve --agent``: its agent saying "ok" without a commit is judged, not left working."""
    lanes = Parallel(name=BlockName("slices"), branches=pvector([_step("a", Commit())]))
    world = FakeWorld(settings=S, kind=_kind(lanes))
    assert world.launch() is None
    world.conflicting.add("a")
    head = world.git.commit(world.lanes["a"].branch, world.now)
    world.feed(LaneEnded(at=world.instant(), lane="a", finished=True, head=head))
    assert _paused(_place(world)).cause is PauseCause.MERGE_CONFLICT
    assert world.feed(ResolveAsked(at=world.instant(), agent=True)) is None
    assert world.deliver()
    for _ in range(2):
        assert world.end_turn() is None
        _window(world)
        world.deliver()
    paused = _paused(_place(world))
    assert paused.cause is PauseCause.GATE_BLOCKED
    assert world.feed(ResumeAsked(at=world.instant())) is None
    starts = [a for a in world.actions if isinstance(a, StartAgent)]
    assert [(a.stage, a.attempt) for a in starts][-1] == ("slices", 3)


# --- 2.2: a deliverable made by an attempt passes, before or after a pause -----------------------


def test_a_commit_seen_after_a_budget_pause_passes_and_a_raise_goes_on() -> None:
    """TurnEnded, the budget spent, then BranchHead: the step passes; raised, the next starts.

    The fault: the run paused on the budget, and ``flume raise`` started the step again (a
    fresh agent redid the work).
    """
    kind = _kind(_step("build", Commit()), _step("check", Commit()), budgets=Budgets(turns=1))
    world = _launched(kind)
    world.git.commit(_place(world).branch, world.now)
    assert world.end_turn() is None
    _window(world)
    paused = _paused(_place(world))
    assert (paused.cause, paused.again) == (PauseCause.BUDGET, True)
    head = world.git.head(_place(world).branch)
    world.feed(BranchHead(at=world.instant(), branch=_place(world).branch, sha=head))
    place = _place(world)
    assert place.completed == pvector(["build"])
    assert place.stage.name == "check"
    assert _paused(place).cause is PauseCause.BUDGET
    assert world.feed(BudgetRaised(at=world.instant(), turns=5)) is None
    starts = [(a.stage, a.attempt) for a in world.actions if isinstance(a, StartAgent)]
    assert starts == [("build", 1), ("check", 1)]


# --- 2.3: a lock is named as a lock; resolve --by-hand checks what the head holds ----------------


def _merging_two(*, conflict: bool = True) -> FakeWorld:
    """A run whose lanes a and b finished: b's merge conflicted; or the merge not yet performed."""
    lanes = Parallel(
        name=BlockName("slices"), branches=pvector([_step("a", Commit()), _step("b", Commit())])
    )
    world = FakeWorld(settings=S, kind=_kind(lanes))
    assert world.launch() is None
    world.conflicting.add("b")
    for lane in ("a", "b"):
        head = world.git.commit(world.lanes[lane].branch, world.now)
        ended = LaneEnded(at=world.instant(), lane=lane, finished=True, head=head)
        if conflict or lane == "a":
            world.feed(ended)
        else:
            # The merge is asked and not carried out yet (the shell performs it later).
            world.record(ended)
    return world


def test_a_merge_refused_for_a_lock_pauses_merge_failed_naming_the_lock() -> None:
    """MergeRefused under a lock: ``merge-failed`` (never a conflict), the lock, resume merges."""
    world = _merging_two(conflict=False)
    place = _place(world)
    lock = f"{place.path}/.git/index.lock"
    seen = MergeRefused(
        at=world.instant(),
        lane="b",
        reason="git could not merge lane b: Unable to write index.",
        lock=lock,
    )
    world.feed(seen)
    paused = _paused(_place(world))
    assert (paused.cause, paused.lane) == (PauseCause.MERGE_FAILED, "b")
    assert f"not for a conflict: git's lock {lock} is held: git could not" in paused.words
    assert f"if no git command runs in {place.path}, the lock is stale: remove {lock}" in (
        paused.words
    )
    assert status(_place(world)).resolve.startswith("flume resume wf--x (once it is mended")
    merges = len(world.merges)
    before = _place(world)
    resumed = ResumeAsked(at=world.instant())
    # What the person reads: the lanes merged again, never "the lanes start" (none does).
    said = went_on(before, step(world.settings, before, resumed).place, "resumed")
    assert said == f"wf--x: resumed; flume merges the lanes of parallel {before.stage.key} again"
    assert world.feed(resumed) is None
    assert len(world.merges) == merges + 1


def test_a_person_s_commit_at_a_paused_merge_never_passes_the_block() -> None:
    """WF-FINISHED-HOLDS-ITS-WORK: a paused merge goes on only by resume or resolve.

    Found trying it as a user: the lock of 2.3 named, then a wrong hand-merge (``git merge -s
    ours``, the lane's history without its file) moved the run's head, and the run went on past
    the block at once ("the deliverable of attempt 1 was seen after it paused"), lacking the
    lane's work: WF-DELIVERED-PASSES took the block's stage for an agent's attempt.
    """
    for cause in ("lock", "conflict"):
        world = _merging_two(conflict=cause == "conflict")
        if cause == "lock":
            reason = "git could not merge lane b: Unable to write index."
            world.feed(MergeRefused(at=world.instant(), lane="b", reason=reason, lock="/l"))
        paused = _paused(_place(world))
        head = world.git.commit(_place(world).branch, world.now)
        world.feed(BranchHead(at=world.instant(), branch=_place(world).branch, sha=head))
        _window(world)
        assert _paused(_place(world)) == paused
        assert _place(world).completed == pvector()
        assert world.reports_of(Event.RESUMED) == []


@pytest.mark.parametrize(
    ("refused", "says"),
    [
        ({"missing": True}, "restore it with git -C /src/app update-ref refs/heads/wf/x+b c"),
        ({}, "not for a conflict: no; mend what git says"),
        ({"under_way": True}, "git left a merge under way there: git -C /src/app/places/wf--x"),
    ],
)
def test_a_merge_refused_names_its_way_out(refused: dict[str, object], says: str) -> None:
    """WF-MERGE-ORDER: a branch gone names its restore; a merge left under way, its abort."""
    world = _merging_two(conflict=False)
    world.feed(MergeRefused(at=world.instant(), lane="b", reason="no", **refused))  # type: ignore[arg-type]
    paused = _paused(_place(world))
    assert paused.cause is PauseCause.MERGE_FAILED
    assert says in paused.words


def test_a_merge_refused_while_none_is_asked_and_wrong_ways_out_change_nothing() -> None:
    """A refusal no merge asked for is passed over; two wrong ways out are refused, exit 1.

    ``resolve --without`` at a merge pause, and ``retry --step`` naming no lane that ended
    unfinished.
    """
    world = _launched(_kind(_step("build", Commit())))
    before = _place(world)
    assert step(S, before, MergeRefused(at=world.instant(), lane="b", reason="no")).actions == ()
    world = _merging_two()
    refused = world.feed(ResolveAsked(at=world.instant(), without="b"))
    assert isinstance(refused, UsageError)
    assert refused.exit_status == 1
    assert "no lane ended unfinished to go without" in str(refused)
    lanes = Parallel(name=BlockName("slices"), branches=pvector([_step("a", Commit())]))
    world = FakeWorld(settings=S, kind=_kind(lanes))
    assert world.launch() is None
    world.feed(LaneEnded(at=world.instant(), lane="a", finished=False))
    assert _paused(_place(world)).cause is PauseCause.LANE_DROPPED
    refused = world.feed(RetryAsked(at=world.instant(), step="zzz"))
    assert isinstance(refused, UsageError)
    assert refused.exit_status == 1
    assert "has no lane 'zzz' that ended unfinished" in str(refused)


def test_a_run_retried_while_its_lanes_work_waits_on_them_before_it_merges() -> None:
    """WF-FINISHED-HOLDS-ITS-WORK: a run retried while its lanes work merges them once they end.

    Its worktree removed and added again by the retry, its lanes still at work: the retried
    block waits on them, and merges both once they finish, never none. Found trying the
    removed worktree's retry as a user: the block merged "none" at once and landed, its two
    lanes still at work.
    """
    lanes = Parallel(
        name=BlockName("slices"), branches=pvector([_step("a", Commit()), _step("b", Commit())])
    )
    world = FakeWorld(settings=S, kind=_kind(lanes))
    assert world.launch() is None
    assert world.delete_worktree_by_hand() is None
    assert isinstance(_place(world).stage.phase, Short)
    assert world.feed(RetryAsked(at=world.instant())) is None
    world.now += 1
    assert world.feed(Tick(at=world.instant())) is None
    place = _place(world)
    assert place.path in world.worktrees
    assert isinstance(place.stage.phase, Fanned), place.stage.phase
    assert world.merges == []
    for lane in ("a", "b"):
        head = world.git.commit(world.lanes[lane].branch, world.now)
        world.feed(LaneEnded(at=world.instant(), lane=lane, finished=True, head=head))
    assert world.merges == [("a", "b")]


@pytest.mark.parametrize("merge", [Merge.MERGE, Merge.PICK])
def test_going_on_without_lanes_one_at_a_time_then_merging_the_rest(merge: Merge) -> None:
    """WF-JOIN-ALL: each lane let go by name; with one still ended, paused; then the merge."""
    lanes = Parallel(
        name=BlockName("slices"),
        branches=pvector([_step(lane, Commit()) for lane in ("a", "b", "c")]),
        merge=merge,
    )
    world = FakeWorld(settings=S, kind=_kind(lanes))
    assert world.launch() is None
    head = world.git.commit(world.lanes["a"].branch, world.now)
    world.feed(LaneEnded(at=world.instant(), lane="a", finished=True, head=head))
    for lane in ("b", "c"):
        world.feed(LaneEnded(at=world.instant(), lane=lane, finished=False))
    assert _paused(_place(world)).cause is PauseCause.LANE_DROPPED
    assert world.feed(ResolveAsked(at=world.instant(), without="b")) is None
    assert _paused(_place(world)).cause is PauseCause.LANE_DROPPED
    assert world.merges == []
    assert world.feed(ResolveAsked(at=world.instant(), without="c")) is None
    assert world.merges == [("a",)]


#: git in the run's worktree, as the commands a refusal names run it.
_GIT = "git -C /src/app/places/wf--x"


@pytest.mark.parametrize(
    ("facts", "says"),
    [
        ({"under_way": True}, "a merge is under way in"),
        ({"missing": pmap({"a": "its head is not in wf/x's history"})}, "does not hold lane a"),
        (
            {"missing": pmap({"b": "its changes to b.txt are not in wf/x's tree"})},
            "does not hold lane b (wf/x+b): its changes to b.txt",
        ),
        (
            {"missing": pmap({"a": "its head is not in wf/x's history"})},
            f"merge it ({_GIT} merge --no-ff wf/x+a); then flume resolve wf--x --by-hand",
        ),
        (
            {
                "missing": pmap({"b": "its changes to b.txt, my c.txt are not in wf/x's tree"}),
                "restore": pmap({"b": pvector(["b.txt", "my c.txt"])}),
            },
            (
                f"take its changes back: {_GIT} checkout wf/x+b -- b.txt 'my c.txt' && {_GIT} "
                "commit --quiet -m 'Take back the changes of lane b'; then flume resolve wf--x "
                "--by-hand"
            ),
        ),
        (
            {
                "missing": pmap({"b": "its changes to b.txt, old.txt are not in wf/x's tree"}),
                "restore": pmap({"b": pvector(["b.txt"])}),
                "remove": pmap({"b": pvector(["old.txt"])}),
            },
            f"{_GIT} checkout wf/x+b -- b.txt && {_GIT} rm --quiet -- old.txt && {_GIT} commit",
        ),
        (
            {
                "missing": pmap({"b": "its changes to old.txt are not in wf/x's tree"}),
                "remove": pmap({"b": pvector(["old.txt"])}),
            },
            f"take its changes back: {_GIT} rm --quiet -- old.txt && {_GIT} commit",
        ),
    ],
)
def test_resolve_by_hand_is_refused_unless_the_head_holds_the_lanes_claimed(
    facts: dict[str, object], says: str
) -> None:
    """WF-FINISHED-HOLDS-ITS-WORK: a merge under way, or a lane claimed the head lacks: exit 1."""
    world = _merging_two()
    assert _paused(_place(world)).cause is PauseCause.MERGE_CONFLICT
    journaled = len(world.journal)
    refused = world.feed(ResolveAsked(at=world.instant(), **facts))  # type: ignore[arg-type]
    assert isinstance(refused, UsageError)
    assert refused.exit_status == 1
    assert says in str(refused)
    assert len(world.journal) == journaled


def test_resolve_by_hand_passes_over_a_lane_it_did_not_claim() -> None:
    """Only the lane paused on and those before it are claimed: a later one's absence is fine."""
    world = _merging_two()
    world.conflicting.clear()
    facts = ResolveAsked(at=world.instant(), missing=pmap({"later": "not merged yet"}))
    assert world.feed(facts) is None
    assert _place(world).completed == pvector(["slices"])


# --- 2.5: a finished lane's branch deleted is named when it happens ----------------------------


def test_a_finished_place_s_branch_deleted_is_named_at_once_with_its_restore() -> None:
    """WF-NO-LOST-COMMIT: BranchVanished of a finished place names the exact update-ref."""
    world = _launched(_kind(_step("build", Commit())))
    world.commit()
    world.end_turn()
    place = _place(world)
    assert place.life is Life.FINISHED
    head = place.head
    world.feed(BranchVanished(at=world.instant(), branch=place.branch))
    (gone,) = world.reports_of(Event.BRANCH_GONE)
    restore = f"git -C /src/app update-ref refs/heads/{place.branch} {head}"
    assert gone.text.endswith(restore)
    shown = status(_place(world))
    assert (shown.paused, shown.resolve) == ("branch-gone", restore)
    world.feed(BranchHead(at=world.instant(), branch=place.branch, sha=Sha(str(head))))
    assert status(_place(world)).paused is None


def test_a_landed_place_s_branch_deleted_changes_nothing_a_dropped_one_s_is_named() -> None:
    """Its work is on the base (landed): nothing to name. Dropped, before tidy: its restore.

    WF-NO-LOST-COMMIT: a dropped place's branch holds what tidy would keep (its commits the
    base lacks); deleted by hand before any tidy looks (the machine found one named by nothing),
    the command that restores it is said once. One tidy is at names it itself, as it finds it.
    """
    world = _launched(_kind(_step("build", Commit())))
    world.commit()
    world.end_turn()
    finished = _place(world)
    gone = BranchVanished(at=world.instant(), branch=finished.branch)
    landed = attrs.evolve(finished, landed_at=finished.now)
    tidying = attrs.evolve(finished, life=Life.DROPPED, tidy=TidyWanted())
    for place in (landed, tidying):
        decided = step(S, place, gone)
        assert not any(isinstance(action, Report) for action in decided.actions)
        assert not decided.place.branch_gone
    dropped = attrs.evolve(finished, life=Life.DROPPED, worktree_gone=True)
    decided = step(S, dropped, gone)
    (report,) = decided.actions
    assert isinstance(report, Report)
    assert report.text == (
        f"its branch {finished.branch} was deleted after it was dropped, its work with it: "
        f"restore it with git -C {finished.launch.repository} update-ref "
        f"refs/heads/{finished.branch} {finished.head}"
    )
    assert decided.place.branch_gone
    assert step(S, decided.place, gone).actions == ()


# --- §2b: what should hold and no test held -----------------------------------------------------


def _three_lanes() -> Kind:
    return _kind(
        Parallel(
            name=BlockName("slices"),
            branches=pvector([_step(name, Commit()) for name in ("a", "b", "c")]),
        )
    )


def test_a_dropped_run_orders_every_running_lane_dropped_again_after_a_restart() -> None:
    """WF-DROP-CASCADES: the shell dies before the drop's orders are carried out: asked again."""
    world = FakeWorld(settings=S, kind=_three_lanes())
    assert world.launch() is None
    world.record(DropAsked(at=world.instant()))
    place = _place(world)
    assert {run.state for run in place.lanes.values()} == {LaneState.ENDED}
    orders = [a for a in pending(place) if isinstance(a, OrderLane)]
    assert sorted((a.place, a.order) for a in orders) == [
        (PlaceName(f"wf--x+{lane}"), LaneOrder.DROP) for lane in ("a", "b", "c")
    ]


def _led(cap: int = 1) -> Kind:
    lead = _step("lead", Verdict())
    block = Orchestrate(
        name=BlockName("build"),
        lead=lead,
        branches=pvector([_step("c1", Commit()), _step("c2", Commit())]),
        cap=cap,
    )
    return _kind(block)


def test_an_orchestrate_join_counts_a_child_still_waiting_for_a_slot() -> None:
    """WF-LEAD-WAITS-JOIN: c1 ended, c2 waits for its slot: no join, no merge, the lead not told."""
    world = _launched(_led())
    head = world.git.commit(world.lanes["c1"].branch, world.now)
    place = _place(world)
    assert place.lanes["c2"].state is LaneState.WAITING
    # c2's slot comes only as c1 ends; its launch is held, as a slow shell would.
    world.crash = (0, 0)
    world.feed(LaneEnded(at=world.instant(), lane="c1", finished=True, head=head))
    world.end_turn()
    place = _place(world)
    assert place.join is JoinStage.OPEN
    assert not any(isinstance(a, MergeLanes) for a in world.actions)


def test_a_gate_is_never_judged_while_its_agent_works_silently() -> None:
    """A verdict gate: an agent working, saying nothing for an hour, is nudged, never judged."""
    world = _launched(_kind(_step("review", Verdict())))
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    for _ in range(6):
        world.now += S.stall_seconds / 4
        world.feed(Tick(at=world.instant()))
    assert not any(isinstance(a, JudgeGate) for a in world.actions)
    assert world.reports_of(Event.NUDGED)


@pytest.mark.parametrize("said", ["progress", "ask"])
def test_edges_are_checked_for_a_command_run_outside_an_agent(said: str) -> None:
    """WF-EDGES: progress or ask with no session (a person's shell): refused unless declared."""
    world = _launched(_kind(_step("build", Commit())))
    seen: Observation = (
        ProgressSaid(at=world.instant(), words="half")
        if said == "progress"
        else AskSaid(at=world.instant(), question="which?")
    )
    refused = world.feed(seen)
    assert isinstance(refused, UsageError)
    assert f"may not {said}" in str(refused)


def test_a_push_naming_another_branch_changes_nothing() -> None:
    """WF-FINALIZE-ONCE: Pushed of a branch not the run's is not the run's push."""
    kind = _kind(_step("build", Commit()), finalize=Finalize(push="origin"))
    world = _launched(kind)
    world.remote_up = False
    world.commit()
    world.end_turn()
    place = _place(world)
    other = Pushed(at=world.instant(), remote="origin", branch=BranchName("main"), head=place.head)
    after = step(S, place, other)
    assert after.place == attrs.evolve(place, now=after.place.now)
    assert after.actions == ()


def test_a_budget_spent_and_a_stall_due_in_one_tick_pause_alone() -> None:
    """WF-BUDGET-PAUSES over WF-STALL-NUDGES-ONCE: the pause alone; no nudge, no tell sent."""
    kind = _kind(_step("build", Commit()), budgets=Budgets(wall_minutes=10))
    world = _launched(kind)
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    sends = len([a for a in world.actions if isinstance(a, SendTell)])
    world.now += max(S.stall_seconds, 600.0) + 1
    world.feed(Tick(at=world.instant()))
    paused = _paused(_place(world))
    assert paused.cause is PauseCause.BUDGET
    assert world.reports_of(Event.NUDGED) == []
    assert len([a for a in world.actions if isinstance(a, SendTell)]) == sends


#: WF-PAUSE-HAS-A-WAY-OUT, written out by hand (not read from place.PAUSE_ACCEPTS): each
#: pause's cause, and the commands that let it go on. Drop and tidy are taken by every pause.
WAYS_OUT: dict[PauseCause, set[str]] = {
    PauseCause.APPROVAL: {"approve", "retry"},
    PauseCause.GATE_BLOCKED: {"resume", "retry"},
    PauseCause.BUDGET: {"raise", "retry"},
    PauseCause.LOOP_MAX: {"resume"},
    PauseCause.STALLED: {"resume", "retry"},
    PauseCause.MERGE_CONFLICT: {"resolve"},
    PauseCause.MERGE_FAILED: {"resume", "resolve"},
    PauseCause.LANE_DROPPED: {"retry", "resolve"},
    PauseCause.FINALIZE_FAILED: {"resume"},
}
COMMANDS = {
    "approve": ApproveAsked,
    "resume": ResumeAsked,
    "raise": BudgetRaised,
    "retry": RetryAsked,
    "resolve": ResolveAsked,
}


def test_every_pause_cause_has_its_ways_out_written_out() -> None:
    """The table below covers every cause: a new cause is given its ways out here, by hand."""
    assert set(WAYS_OUT) == set(PauseCause)


@pytest.mark.parametrize("cause", list(PauseCause), ids=lambda cause: cause.value)
@pytest.mark.parametrize("word", sorted(COMMANDS))
def test_each_pause_takes_its_ways_out_and_refuses_the_rest(cause: PauseCause, word: str) -> None:
    """``approve`` at a gate-blocked pause is refused; each cause's own commands are taken."""
    from flume.core.place import accepts  # noqa: PLC0415 (the rule under test, by name)

    taken = accepts(Paused(cause=cause, words="w"), COMMANDS[word])
    assert taken is (word in WAYS_OUT[cause]), (cause, word)


def test_approve_at_a_gate_blocked_pause_is_refused_naming_resume() -> None:
    """A gate-blocked pause: approve refused (exit 1) naming the command that does apply."""
    world = _launched(_kind(_step("build", Commit())))
    for _ in range(2):
        world.end_turn()
        _window(world)
        world.deliver()
    assert _paused(_place(world)).cause is PauseCause.GATE_BLOCKED
    refused = world.feed(ApproveAsked(at=world.instant()))
    assert isinstance(refused, UsageError)
    assert refused.exit_status == 1
    assert "flume resume wf--x" in str(refused)


def _waiting(kind: Kind) -> Fleet:
    """A fleet that launched ``kind`` and did all it asked, each live agent said to wait."""
    fleet = Fleet(settings=S, kind=kind)
    fleet.launch()
    for _ in range(6):
        for name in sorted(fleet.homes):
            while fleet.homes[name].queue:
                fleet.perform_next(name)
        for agent in [a for a in fleet.agents.values() if a.live]:
            seen = AgentStateSeen(
                at=fleet.instant(), session=agent.session, activity=Activity.WAITING
            )
            fleet.feed(agent.home, seen)
    return fleet


def test_a_parallel_lane_s_question_shows_paused_question_with_its_answer_command() -> None:
    """WF-ASK-PAUSES-WITHOUT-LEAD: a parallel's lane (not a led child) asks its caller."""
    lanes = Parallel(
        name=BlockName("slices"), branches=pvector([_step("a", Commit(), may=("ask",))])
    )
    fleet = _waiting(_kind(lanes))
    lane = PlaceName("wf--x+a")
    (agent,) = fleet.live_agents(lane)
    assert (
        fleet.feed(lane, AskSaid(at=fleet.instant(), question="Which?", session=agent.session))
        is None
    )
    place = fleet.homes[lane].place
    assert place is not None
    assert not place.launch.led
    shown = status(place)
    assert (shown.paused, shown.resolve) == ("question", 'flume answer wf--x+a q1 "..."')
    assert fleet.feed(lane, AnswerGiven(at=fleet.instant(), question="q1", text="this")) is None


def _child_asks() -> tuple[Fleet, PlaceName]:
    """A crew whose static child ``c1`` asked its lead ``Which?``; everything asked is done."""
    block = Orchestrate(
        name=BlockName("build"),
        lead=_step("lead", Verdict()),
        branches=pvector([_step("c1", Commit(), may=("ask",))]),
    )
    fleet = _waiting(_kind(block))
    child = PlaceName("wf--x+c1")
    (agent,) = fleet.live_agents(child)
    fleet.now += 7  # asked a while after the launch: its window counts from the asking
    asked = AskSaid(at=fleet.instant(), question="Which?", session=agent.session)
    assert fleet.feed(child, asked) is None
    return fleet, child


def test_a_child_s_question_its_lead_leaves_unanswered_falls_to_the_caller() -> None:
    """WF-ASK-ONE-ANSWERER: unanswered by its lead a stall window long, the caller may answer.

    A led child's question goes to its lead; refused to the caller at first, it is named
    ``paused (question)`` once ``stall_seconds`` went by unanswered, and the caller's answer
    is then taken.
    """
    fleet, child = _child_asks()
    place = fleet.homes[child].place
    assert place is not None
    assert place.launch.led
    early = fleet.feed(child, AnswerGiven(at=fleet.instant(), question="q1", text="this"))
    assert isinstance(early, UsageError)
    fleet.now += S.stall_seconds + 1
    fleet.feed(child, Tick(at=fleet.instant()))
    place = fleet.homes[child].place
    assert place is not None
    assert place.questions[0].overdue
    assert status(place).paused == "question"
    assert fleet.feed(child, AnswerGiven(at=fleet.instant(), question="q1", text="this")) is None


def _child_reports(fleet: Fleet, child: PlaceName, event: Event) -> list[tuple[str, str | None]]:
    return [(r.text, r.stage) for home, r in fleet.reports() if home == child and r.event is event]


def test_a_led_child_s_question_and_its_refusals_are_said_word_for_word() -> None:
    """A led child's question is said to go to its lead; the caller's answer is refused, whole."""
    fleet, child = _child_asks()
    assert _child_reports(fleet, child, Event.ASKED) == [
        ("q1: Which?; it goes to the lead of wf--x", "c1")
    ]
    early = fleet.feed(child, AnswerGiven(at=fleet.instant(), question="q1", text="this"))
    nearest = "question q1 of wf--x+c1 goes to the lead of wf--x, the nearest lead above it"
    mend = "the lead answers it, from its own session (you may, while no lead of it is live)"
    assert isinstance(early, UsageError)
    assert (early.exit_status, early.problems) == (1, (Problem("answer", nearest, mend),))
    place = fleet.homes[child].place
    assert place is not None
    spread = evolve(place, launch=attrs.evolve(place.launch, spread=True))
    with pytest.raises(UsageError) as elsewhere:
        step(S, spread, AnswerGiven(at=fleet.instant(), question="q1", text="this"))
    on_host = (
        "answer it on the host that carries wf--x (flume status --fleet names it): its lead "
        "answers there, or you while no lead of it is live"
    )
    assert elsewhere.value.problems == (Problem("answer", nearest, on_host),)


def test_a_led_child_s_question_overdue_is_said_once_not_while_its_answer_is_in_flight() -> None:
    """WF-NO-SILENT-WAIT: an overdue question pauses once; an answer in flight is not overdue."""
    fleet, child = _child_asks()
    place = fleet.homes[child].place
    assert place is not None
    asked_at = place.questions[0].asked_at
    assert asked_at > 0
    fleet.now = asked_at + S.stall_seconds - 1
    fleet.feed(child, Tick(at=fleet.instant()))
    assert _child_reports(fleet, child, Event.PAUSED) == []
    fleet.now = asked_at + S.stall_seconds  # due the moment the window ends
    fleet.feed(child, Tick(at=fleet.instant()))
    assert len(_child_reports(fleet, child, Event.PAUSED)) == 1
    fleet.now += S.stall_seconds  # said once, however often looked at
    fleet.feed(child, Tick(at=fleet.instant()))
    said = (
        "wf--x+c1 paused at c1 (question): its lead did not answer q1: Which? in "
        f'{S.stall_seconds:.0f}s; flume answer wf--x+c1 q1 "..."'
    )
    assert _child_reports(fleet, child, Event.PAUSED) == [(said, "c1")]
    fleet, child = _child_asks()
    by_lead = AnswerGiven(at=fleet.instant(), question="q1", text="this", by_lead=True)
    assert fleet.feed(child, by_lead) is None
    fleet.now += S.stall_seconds + 1
    fleet.feed(child, Tick(at=fleet.instant()))
    place = fleet.homes[child].place
    assert place is not None
    assert not place.questions[0].overdue
    assert _child_reports(fleet, child, Event.PAUSED) == []


def _world_runs(fleet: Fleet, *, holding: type, rounds: int = 8) -> None:
    """A well-behaved world carries the fleet, but the run's ``holding`` actions wait in flight.

    Each child commits and ends its turn; the lead ends its turns with its verdict written.
    """
    machine = NoSilentWaitMachine()
    machine.fleet = fleet
    for _ in range(rounds):
        for name in sorted(fleet.homes):
            queue = fleet.homes[name].queue
            while queue and not isinstance(queue[0], holding):
                fleet.perform_next(name)
        for agent in machine.live():
            machine.read(agent)
            home = fleet.homes[agent.home]
            while home.queue and not isinstance(home.queue[0], holding) and agent.live:
                fleet.perform_next(agent.home)
            machine.read(agent)
            machine.do(agent, "gate")
            machine.end_turn(agent, 10)
        fleet.now += S.confirm_seconds + 1
        fleet.tick()


def test_a_lead_s_gate_is_not_judged_while_its_children_s_merge_is_in_flight() -> None:
    """WF-LEAD-WAITS-JOIN: the merge asked and not yet seen: the lead's turns end unjudged."""
    fleet = _led_merging()
    run = fleet.homes[fleet.root]
    place = _root(fleet)
    assert any(isinstance(a, MergeLanes) for a in run.queue)
    assert not any(isinstance(a, JudgeGate) for a in run.queue)
    assert not isinstance(place.stage.phase, Judging)
    assert not [
        each
        for each in fleet.steps
        if each.home == fleet.root and any(isinstance(a, JudgeGate) for a in each.decision.actions)
    ]


def test_a_lead_tried_again_after_its_worktree_went_mid_merge_merges_again() -> None:
    """WF-NO-SILENT-WAIT: a lead retried while its children's merge was asked merges them again.

    Found by the machine under CI's profile: the merge asked, the run's worktree deleted, the
    merge failed for it, the run stopped short (worktree-gone), a person retried: the new lead
    waited, its join still "merging", no merge asked, for ever, nothing named.
    """
    fleet = _led_merging()
    run = fleet.homes[fleet.root]
    del fleet.repo.worktrees[_root(fleet).path]
    while run.queue:
        fleet.perform_next(fleet.root)
    fleet.now += 1
    fleet.tick()
    assert isinstance(_root(fleet).stage.phase, Short)
    assert fleet.feed(fleet.root, RetryAsked(at=fleet.instant(), words="")) is None
    assert _root(fleet).join is JoinStage.OPEN
    _world_runs(fleet, holding=type(None))
    assert _root(fleet).join is not JoinStage.MERGING
    assert _root(fleet).life is Life.FINISHED


def _led_merging() -> Fleet:
    """A led block's run whose children all finished: their merge asked, held in flight."""
    fleet = Fleet(settings=S, kind=_led(cap=2))
    fleet.launch()
    _world_runs(fleet, holding=MergeLanes)
    assert _root(fleet).join is JoinStage.MERGING
    return fleet


def _root(fleet: Fleet) -> Place:
    place = fleet.homes[fleet.root].place
    assert place is not None
    return place


def test_a_head_moved_during_finalize_is_pushed_before_the_pr_is_opened() -> None:
    """WF-FINALIZE-ONCE: the PR failed; a person commits; resumed: pushed again, then the PR."""
    kind = _kind(
        _step("build", Commit()), finalize=Finalize(push="origin", pr=pvector(["gh", "pr"]))
    )
    world = _launched(kind)
    world.pr_ok = False
    world.commit()
    world.end_turn()
    assert _paused(_place(world)).cause is PauseCause.FINALIZE_FAILED
    world.pr_ok = True
    sha = world.git.commit(_place(world).branch, world.now)
    world.feed(BranchHead(at=world.instant(), branch=_place(world).branch, sha=sha))
    assert world.feed(ResumeAsked(at=world.instant())) is None
    acts = [a for a in world.actions if isinstance(a, Push | OpenPR)]
    assert isinstance(acts[-2], Push)
    assert acts[-2].head == sha
    assert isinstance(acts[-1], OpenPR)
    assert _place(world).life is Life.FINISHED


def test_a_raise_launches_the_child_a_spent_budget_held() -> None:
    """WF-CHILDREN-CAP: the child held by a spent budget is launched once a raise lets the lead go.

    The fault (found by the audit): the lead resumed, the waiting child was never launched,
    and the lead waited for ever, "working", nothing named.
    """
    kind = attrs.evolve(_led(), budgets=Budgets(tokens=10))
    world = _launched(kind)
    head = world.git.commit(world.lanes["c1"].branch, world.now)
    world.feed(LaneEnded(at=world.instant(), lane="c1", finished=True, head=head, tokens=10))
    assert _place(world).lanes["c2"].state is LaneState.WAITING
    world.deliver()
    world.end_turn(tokens=1)
    assert _paused(_place(world)).cause is PauseCause.BUDGET
    assert world.feed(BudgetRaised(at=world.instant(), tokens=100)) is None
    world.deliver()
    launched = [a.lane for a in world.actions if isinstance(a, LaunchLane)]
    assert launched == ["c1", "c2"]


def test_a_parallel_launches_no_lane_over_a_spent_budget() -> None:
    """WF-BUDGET-PAUSES: one rule with orchestrate's: a waiting lane is held; raised, launched.

    The fault (found by the audit): a parallel's next waiting lane was launched with the budget
    spent (1 token left), where orchestrate children were held.
    """
    lanes = Parallel(
        name=BlockName("slices"),
        branches=pvector([_step("a", Commit()), _step("b", Commit())]),
        cap=1,
    )
    world = FakeWorld(settings=S, kind=_kind(lanes, budgets=Budgets(tokens=10)))
    assert world.launch() is None
    head = world.git.commit(world.lanes["a"].branch, world.now)
    world.feed(LaneEnded(at=world.instant(), lane="a", finished=True, head=head, tokens=10))
    paused = _paused(_place(world))
    assert paused.cause is PauseCause.BUDGET
    assert [a.lane for a in world.actions if isinstance(a, LaunchLane)] == ["a"]
    assert world.feed(BudgetRaised(at=world.instant(), tokens=100)) is None
    assert [a.lane for a in world.actions if isinstance(a, LaunchLane)] == ["a", "b"]
    assert _place(world).lanes["a"].state is LaneState.FINISHED


# --- 2.7: an agent that dies in a workflow is tried again ----------------------------------


def _exits(world: FakeWorld, status: int = 137) -> None:
    """The live agent's process is gone on its own, its pane showing its last line."""
    agent = world.live_agent()
    assert agent is not None
    agent.live = False
    world.feed(
        AgentExited(at=world.instant(), session=agent.session, status=status, last_words="Killed")
    )


def test_an_agent_that_exits_in_a_workflow_is_tried_again_then_stops_short() -> None:
    """WF-RETRY-EXITED: an exited agent's step starts again, fresh, twice; the third exit stops.

    The fault: tmux killed while a lead waited, every place stopped short ``agent-exited`` at
    once, each needing a person's ``flume retry``, where the seed gives each step 2 retries.
    """
    world = _launched(_kind(_step("build", Commit())))
    for again in (1, 2):
        _exits(world)
        (*_, retried) = world.reports_of(Event.RETRIED)
        assert "exited (exit status 137); its pane showed last:\nKilled" in retried.text
        assert f"retry {again} of 2" in retried.text
        assert world.deliver()
        assert (_place(world).stage.attempt, _place(world).stage.retried) == (1 + again, again)
        assert "exited (exit status 137)" in world.live_agent().sends[-1].text  # type: ignore[union-attr]
    _exits(world)
    phase = _place(world).stage.phase
    assert isinstance(phase, Short), phase
    assert phase.cause is ShortCause.AGENT_EXITED
    assert "tried again 2 times already" in phase.words
    assert len(world.reports_of(Event.RETRIED)) == 2


def test_a_retries_budget_bounds_the_tries_and_a_plain_kind_stops_short_at_once() -> None:
    """WF-RETRY-EXITED: the run's retries budget is the step's tries; plain kinds keep the seed's.

    A kind of plain steps (no workflow's features) stops short at the first exit, as it always
    did; a workflow with ``retries = 1`` at the second.
    """
    plain = Kind(
        name=KindName("plain"),
        prefix="plain",
        body=Sequence(blocks=pvector([_step("build", Commit())])),
    )
    for kind, tries in (
        (plain, 0),
        (_kind(_step("build", Commit()), budgets=Budgets(retries=1)), 1),
    ):
        world = _launched(kind)
        for _ in range(tries):
            _exits(world, status=1)
            assert world.deliver()
        _exits(world, status=1)
        phase = _place(world).stage.phase
        assert isinstance(phase, Short), phase
        assert phase.cause is ShortCause.AGENT_EXITED
        assert len(world.reports_of(Event.RETRIED)) == tries


def test_an_answer_held_past_a_spent_budget_never_keeps_a_met_gate_from_ending() -> None:
    """WF-NO-SILENT-WAIT: its gate met and a budget spent, a held answer is dropped, named.

    Found by the machine (after its first commits): the agent committed, asked, and ended its
    one turn (``turns_per_attempt = 1``); the answer, held as a tell that the spent budget
    never lets go, kept its question open, and the stage sat delivered for ever, nothing named.
    """
    build = _step("build", Commit(), may=("ask",))
    world = _launched(_kind(build, budgets=Budgets(turns_per_attempt=1)))
    agent = world.live_agent()
    assert agent is not None
    assert world.commit() is None
    asked = AskSaid(at=world.instant(), question="Which?", session=agent.session)
    assert world.feed(asked) is None
    assert world.end_turn() is None
    assert world.feed(AnswerGiven(at=world.instant(), question="q1", text="yes")) is None
    _window(world)
    (dropped,) = world.reports_of(Event.TELL_DROPPED)
    assert "a budget is spent, and the stage's gate is met" in dropped.text
    assert _place(world).completed == pvector(["build"])


def test_a_merge_failed_for_a_place_gone_pauses_nothing_over_its_stop_short() -> None:
    """WF-NO-SILENT-WAIT: the run's branch and worktree gone, its merge fails: the stop stands.

    Found by the machine under CI's profile: the merge's failure paused the run merge-failed
    over its stop-short, a person resumed as the pause said, and the run waited, queued, for a
    worktree no one would make again.
    """
    machine = NoSilentWaitMachine()
    machine.launch(kind=_led(cap=2), rounds=[("gate", True, None, 6.0)] * 2)
    machine.person_deletes_a_lane(index=0, run=True, worktree=False)
    machine.agent_takes_a_turn(act="gate", end=True, index=0, tokens=None)
    machine.shell_performs(count=1, index=0)
    machine.agent_takes_a_turn(act="gate", end=True, index=0, tokens=None)
    machine.supervisor_ticks(seconds=1.0)
    machine.shell_performs(count=2, index=0)
    assert isinstance(_root(machine.fleet).stage.phase, Short)
    machine.person_does_as_advised(index=0)
    machine.no_silent_wait()
