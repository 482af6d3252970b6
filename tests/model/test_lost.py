"""A place whose worktree or branch is deleted under it: stopped short, named, never worked in."""

from __future__ import annotations

import attrs
import pytest

from flume.core.actions import (
    ActionName,
    EndAgent,
    Event,
    KeepBranch,
    KeepPlace,
    MakeWorktree,
    Report,
    StartAgent,
)
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, KindName, SessionId, Sha, StageName
from flume.core.observations import (
    ActionFailed,
    AgentExited,
    BranchFacts,
    BranchHead,
    BranchVanished,
    DropAsked,
    PaneOutput,
    ProceedAsked,
    RetryAsked,
    SetupFinished,
    StopAsked,
    Tick,
    WorktreeFacts,
    WorktreeLost,
    WorktreeMade,
)
from flume.core.place import AwaitingWord, Life, Short, ShortCause, TidyWanted, evolve
from flume.core.status import PhaseWord, status
from flume.core.step import pending, step
from flume.core.tidy import plan
from tests.model.test_rules import SESSION, S, committed_and_waiting, made, run, started, working

PATH = "/src/app/places/fix--typo"
BRANCH = BranchName("fix/typo")


def test_a_deleted_worktree_stops_the_stage_short_and_ends_the_agent() -> None:
    """Status names the lost worktree and the way out; the agent working there is ended."""
    decision = step(S, working(), WorktreeLost(at=Instant(9), path=PATH, how="its folder is gone"))
    phase = decision.place.stage.phase
    assert isinstance(phase, Short)
    assert phase.cause is ShortCause.WORKTREE_GONE
    assert "its folder is gone" in phase.words
    assert "flume drop fix--typo, then flume tidy" in phase.words
    assert [a.session for a in decision.actions if isinstance(a, EndAgent)] == [SESSION]
    shown = status(decision.place)
    assert (shown.short_cause, shown.phase) == ("worktree-gone", PhaseWord.SHORT)


def test_a_lost_worktree_is_added_again_by_retry_before_its_agent_starts() -> None:
    """PLACE-REBUILT: retry asks the worktree again on its branch; the agent starts once it is.

    Its status names the way (retry adds it again from its branch, at its head) beside drop;
    nothing starts in the missing folder; once the shell says it made it, the retried attempt
    starts. Drop is still taken, and tidy follows.
    """
    lost = step(S, working(), WorktreeLost(at=Instant(9), path=PATH)).place
    assert isinstance(lost.stage.phase, Short)
    assert (
        f"no agent starts there until flume retry fix--typo adds it again from its branch "
        f"{BRANCH} at {lost.head}, its commits kept; or flume drop fix--typo, then flume tidy"
    ) in lost.stage.phase.words
    retried = step(S, lost, RetryAsked(at=Instant(10)))
    (again,) = [a for a in retried.actions if isinstance(a, MakeWorktree)]
    assert (again.path, again.branch, again.again) == (PATH, BRANCH, True)
    assert not any(isinstance(a, StartAgent) for a in retried.actions)
    assert not retried.place.worktree_gone
    assert (retried.place.rebuilding, retried.place.ready) == (True, False)
    assert [a.again for a in pending(retried.place) if isinstance(a, MakeWorktree)] == [True]
    # The shell's look, before the make is seen, finds the folder still gone: nothing new.
    looked = step(S, retried.place, WorktreeLost(at=Instant(10), path=PATH))
    assert (looked.place, looked.actions) == (retried.place, ())
    assert retried.place.stage.attempt == lost.stage.attempt + 1
    waiting = step(S, retried.place, Tick(at=Instant(11)))
    assert not any(isinstance(a, StartAgent) for a in waiting.actions)
    gone = step(S, waiting.place, AgentExited(at=Instant(12), session=SESSION)).place
    made_again = WorktreeMade(at=Instant(12), path=PATH, branch=BRANCH, head=Sha("c2"))
    ready = step(S, gone, made_again)
    assert (ready.place.made, ready.place.ready, ready.place.head) == (True, True, Sha("c2"))
    assert (
        Report(
            event=Event.PLACE_MADE,
            text=f"worktree {PATH} made again on its branch, its commits kept, at c2",
        )
        in ready.actions
    )
    started = [*ready.actions, *step(S, ready.place, Tick(at=Instant(13))).actions]
    assert [a.attempt for a in started if isinstance(a, StartAgent)][:1] == [
        retried.place.stage.attempt
    ]
    dropped = step(S, lost, DropAsked(at=Instant(10))).place
    assert dropped.life is Life.DROPPED
    assert dropped.tidy == TidyWanted(force=False)


def test_a_worktree_git_will_not_add_again_stops_short_and_a_retry_asks_it_again() -> None:
    """PLACE-LOST-STOPS-SHORT: the make again refused (a folder stands there) is named; retry."""
    lost = step(S, working(), WorktreeLost(at=Instant(9), path=PATH)).place
    retried = step(S, lost, RetryAsked(at=Instant(10))).place
    output = f"{PATH} already exists and is not the place's worktree"
    failed = step(
        S, retried, ActionFailed(at=Instant(11), action=ActionName.MAKE_WORKTREE, output=output)
    ).place
    assert isinstance(failed.stage.phase, Short)
    assert failed.stage.phase.cause is ShortCause.FAILED
    assert output in failed.stage.phase.words
    again = step(S, failed, RetryAsked(at=Instant(12)))
    assert [a.again for a in again.actions if isinstance(a, MakeWorktree)] == [True]


def test_a_lost_worktree_whose_branch_is_gone_too_is_retried_once_it_is_restored() -> None:
    """PLACE-LOST-STOPS-SHORT: both gone, retry is refused naming the command that restores it."""
    lost = step(S, working(), WorktreeLost(at=Instant(9), path=PATH)).place
    both = step(S, lost, BranchVanished(at=Instant(10), branch=BRANCH)).place
    with pytest.raises(UsageError) as refused:
        step(S, both, RetryAsked(at=Instant(11)))
    assert refused.value.exit_status == 1
    assert (
        f"restore it (git -C /src/app update-ref refs/heads/{BRANCH} {lost.head}), then flume "
        "retry fix--typo"
    ) in str(refused.value)
    back = step(S, both, BranchHead(at=Instant(12), branch=BRANCH, sha=Sha(str(lost.head))))
    retried = step(S, back.place, RetryAsked(at=Instant(13)))
    assert [a.again for a in retried.actions if isinstance(a, MakeWorktree)] == [True]


@pytest.mark.parametrize(
    "seen",
    [
        WorktreeLost(at=Instant(9), path="/elsewhere"),
        BranchVanished(at=Instant(9), branch=BranchName("other")),
    ],
)
def test_what_is_lost_elsewhere_changes_nothing(seen: WorktreeLost | BranchVanished) -> None:
    """Another place's worktree or branch is not this place's."""
    place = working()
    assert step(S, place, seen).place.stage == place.stage


def test_a_place_not_yet_made_or_already_lost_is_not_stopped_again() -> None:
    """Before its worktree is made there is nothing to lose; a second loss says nothing new."""
    unmade = run().place
    assert not step(S, unmade, WorktreeLost(at=Instant(1), path=PATH)).place.worktree_gone
    lost = step(S, working(), WorktreeLost(at=Instant(9), path=PATH)).place
    again = step(S, lost, WorktreeLost(at=Instant(10), path=PATH))
    assert again.place.stage == lost.stage
    assert again.actions == ()
    dropped = step(S, working(), DropAsked(at=Instant(9))).place
    assert not step(S, dropped, WorktreeLost(at=Instant(10), path=PATH)).place.worktree_gone


def test_setup_ending_after_the_worktree_is_lost_keeps_the_cause() -> None:
    """A setup or action failing in a lost place does not hide why it stopped."""
    setting_up = run(made(), setup=(("make",),)).place
    lost = step(S, setting_up, WorktreeLost(at=Instant(2), path=PATH)).place
    assert lost.life is Life.ACTIVE
    for seen in (
        SetupFinished(at=Instant(3), ok=False, output="no Makefile"),
        ActionFailed(at=Instant(3), action=ActionName.RUN_SETUP, output="no folder"),
    ):
        after = step(S, lost, seen).place
        assert isinstance(after.stage.phase, Short)
        assert after.stage.phase.cause is ShortCause.WORKTREE_GONE


def test_a_deleted_branch_stops_short_naming_the_command_that_restores_it() -> None:
    """The way out is git's command with the head flume last saw; retry waits for it."""
    place = step(S, working(), BranchHead(at=Instant(8), branch=BRANCH, sha=Sha("b2"))).place
    decision = step(S, place, BranchVanished(at=Instant(9), branch=BRANCH))
    phase = decision.place.stage.phase
    assert isinstance(phase, Short)
    assert phase.cause is ShortCause.BRANCH_GONE
    assert "git -C /src/app update-ref refs/heads/fix/typo b2" in phase.words
    assert any(isinstance(a, EndAgent) for a in decision.actions)
    with pytest.raises(UsageError, match="restore it"):
        step(S, decision.place, RetryAsked(at=Instant(10)))
    again = step(S, decision.place, BranchVanished(at=Instant(10), branch=BRANCH))
    assert again.actions == ()


def test_a_restored_branch_lets_the_stage_be_retried() -> None:
    """Once the branch is back, status says so and a retry starts a fresh agent."""
    gone = step(S, working(), BranchVanished(at=Instant(9), branch=BRANCH)).place
    back = step(S, gone, BranchHead(at=Instant(10), branch=BRANCH, sha=Sha("a1"))).place
    assert not back.branch_gone
    assert isinstance(back.stage.phase, Short)
    assert "is back at a1: flume retry fix--typo" in back.stage.phase.words
    retried = step(S, back, RetryAsked(at=Instant(11)))
    assert any(isinstance(a, StartAgent) for a in retried.actions) or retried.place.agent


def test_a_branch_back_after_another_short_keeps_that_short() -> None:
    """A lost worktree outranks a lost branch; the branch seen again changes the head only."""
    gone = step(S, working(), BranchVanished(at=Instant(9), branch=BRANCH)).place
    lost = step(S, gone, WorktreeLost(at=Instant(10), path=PATH)).place
    assert isinstance(lost.stage.phase, Short)
    assert lost.stage.phase.cause is ShortCause.WORKTREE_GONE  # its way out is drop and tidy
    back = step(S, lost, BranchHead(at=Instant(11), branch=BRANCH, sha=Sha("c3"))).place
    assert back.head == Sha("c3")
    assert back.stage.phase == lost.stage.phase


def test_a_branch_lost_with_its_worktree_gone_is_named_not_a_second_cause() -> None:
    """Once the worktree is gone, its branch vanishing leaves the stage as it stopped short.

    WF-NO-LOST-COMMIT: but it is named, with the command that restores it at its last head,
    rather than lost in silence until a tidy finds it gone.
    """
    lost = step(S, working(), WorktreeLost(at=Instant(9), path=PATH)).place
    after = step(S, lost, BranchVanished(at=Instant(10), branch=BRANCH))
    assert after.place.branch_gone
    assert after.place.stage == lost.stage
    (report,) = after.actions
    assert isinstance(report, Report)
    assert report.event is Event.BRANCH_GONE
    assert report.text.endswith(f"update-ref refs/heads/{BRANCH} {lost.head}")


def test_branch_back_when_it_was_deleted_by_tidy_changes_no_stage() -> None:
    """A branch seen again once it went by tidy's hand is a head, not a restored place."""
    gone = step(S, working(), BranchVanished(at=Instant(9), branch=BRANCH)).place
    dropped = step(S, gone, DropAsked(at=Instant(10))).place
    back = step(S, dropped, BranchHead(at=Instant(11), branch=BRANCH, sha=Sha("a1"))).place
    assert not back.branch_gone
    assert back.stage.phase == dropped.stage.phase


def test_tidy_never_removes_the_plain_folder_left_where_its_worktree_was() -> None:
    """TIDY-ONLY-OURS holds for a deleted worktree: the plain folder there is kept and named."""
    worktree = WorktreeFacts(path=PATH, exists=True, made_by_flume=False, plain=True)
    branch = BranchFacts(name=BRANCH, exists=True, base=BranchName("main"), head=Sha("a1"))
    actions = plan(
        kind=KindName("fix"),
        life=Life.DROPPED,
        made=True,
        worktree=worktree,
        branch=branch,
        force=True,
    )
    assert [type(a) for a in actions] == [KeepPlace, KeepBranch]
    assert isinstance(actions[0], KeepPlace)
    assert "plain folder" in actions[0].reason
    assert "made by hand" not in actions[0].reason


def test_an_agent_that_would_not_end_stops_the_queued_stage_short_and_the_retry_ends_it() -> None:
    """AGENT-END-FAILED-NAMED: an end that failed is named with the way out, and asked again.

    A stage retried waits, queued, for its old agent's end (R4). Before, the end failing (its
    pane would not close) left it queued for ever with nothing named but an event.
    """
    short = step(S, working(), StopAsked(at=Instant(5))).place
    retried = step(S, short, RetryAsked(at=Instant(6)))
    assert [a.session for a in retried.actions if isinstance(a, EndAgent)] == [SESSION]
    failed = step(
        S,
        retried.place,
        ActionFailed(
            at=Instant(7), action=ActionName.END_AGENT, output="the agent's pane is still open"
        ),
    )
    phase = failed.place.stage.phase
    assert isinstance(phase, Short)
    assert phase.cause is ShortCause.FAILED
    assert phase.words == (
        "flume could not end the agent in pane %1 before stage code starts: the agent's pane "
        "is still open; close it, then flume retry fix--typo"
    )
    assert status(failed.place).phase is PhaseWord.SHORT
    # Retried again, its end is asked again; once it is seen gone, the fresh agent starts.
    again = step(S, failed.place, RetryAsked(at=Instant(8)))
    assert [a for a in again.actions if isinstance(a, EndAgent)] == [
        EndAgent(session=SESSION, reason="the stage is retried")
    ]
    assert not any(isinstance(a, StartAgent) for a in again.actions)
    gone = step(S, again.place, AgentExited(at=Instant(9), session=SESSION))
    assert [a.attempt for a in gone.actions if isinstance(a, StartAgent)] == [3]


def test_a_stray_that_would_not_end_is_named_by_its_session_and_asked_again() -> None:
    """AGENT-END-FAILED-NAMED: a stray agent's end that failed names it; a retry asks again."""
    short = step(S, working(), StopAsked(at=Instant(5))).place
    gone = step(S, short, AgentExited(at=Instant(6), session=SESSION)).place
    stray = step(S, gone, started(at=7.0, session="s9")).place
    assert set(stray.strays) == {SessionId("s9")}
    retried = step(S, stray, RetryAsked(at=Instant(8)))
    assert [a.session for a in retried.actions if isinstance(a, EndAgent)] == ["s9"]
    failed = step(S, retried.place, ActionFailed(at=Instant(9), action=ActionName.END_AGENT))
    phase = failed.place.stage.phase
    assert isinstance(phase, Short)
    assert phase.words == (
        "flume could not end the stray agent s9 before stage code starts; close it, then "
        "flume retry fix--typo"
    )
    # An end that fails with no stage waiting on it (the place stopped short) is only noted.
    again = step(S, failed.place, ActionFailed(at=Instant(9), action=ActionName.END_AGENT))
    assert again.place == evolve(failed.place, end_failed=True)
    assert [type(a).__name__ for a in again.actions] == ["Report"]


def test_an_end_that_failed_before_the_next_stage_waited_is_asked_again_when_it_does() -> None:
    """AGENT-END-FAILED-NAMED: a failed end no stage waited on is asked again once one does.

    The code stage ended, the submit stage waits on the caller's word: the old agent's end
    fails then, holding nothing back. Once the word comes and submit waits to start, the end is
    asked again; failing again, submit stops short, named.
    """
    place = committed_and_waiting()
    place = evolve(
        place, launch=attrs.evolve(place.launch, waits=place.launch.waits.add(StageName("submit")))
    )
    place = step(
        S, place, PaneOutput(at=Instant(11), session=SESSION, last_output_at=Instant(11))
    ).place
    done = step(S, place, Tick(at=Instant(17))).place
    assert isinstance(done.stage.phase, AwaitingWord)
    end = ActionFailed(at=Instant(18), action=ActionName.END_AGENT, output="no pane")
    failed = step(S, done, end)
    assert (failed.place.end_failed, failed.place.stage.phase) == (True, done.stage.phase)
    assert [type(a).__name__ for a in failed.actions] == ["Report"]
    word = step(S, failed.place, ProceedAsked(at=Instant(19)))
    assert [a for a in word.actions if isinstance(a, EndAgent | StartAgent)] == [
        EndAgent(session=SESSION, reason="its end failed; stage submit waits on it")
    ]
    assert not word.place.end_failed
    again = step(S, word.place, attrs.evolve(end, at=Instant(20)))
    phase = again.place.stage.phase
    assert isinstance(phase, Short)
    assert phase.words.startswith("flume could not end the agent in pane %1 before stage submit")
    # Its exit seen at last, a failed end left over asks nothing of a later stage.
    left = evolve(again.place, end_failed=True)
    gone = step(S, left, AgentExited(at=Instant(21), session=SESSION))
    assert not gone.place.end_failed
