"""A place whose worktree or branch is deleted under it: stopped short, named, never worked in."""

from __future__ import annotations

import pytest

from flume.core.actions import (
    ActionName,
    EndAgent,
    Event,
    KeepBranch,
    KeepPlace,
    Report,
    StartAgent,
)
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, KindName, Sha
from flume.core.observations import (
    ActionFailed,
    BranchFacts,
    BranchHead,
    BranchVanished,
    DropAsked,
    RetryAsked,
    SetupFinished,
    WorktreeFacts,
    WorktreeLost,
)
from flume.core.place import Life, Short, ShortCause, TidyWanted
from flume.core.status import PhaseWord, status
from flume.core.step import step
from flume.core.tidy import plan
from tests.model.test_rules import SESSION, S, made, run, working

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


def test_a_lost_worktree_is_never_retried_in_and_drop_tidies_it() -> None:
    """Retry is refused (no agent starts in the plain folder); drop is taken and tidy follows."""
    lost = step(S, working(), WorktreeLost(at=Instant(9), path=PATH)).place
    with pytest.raises(UsageError, match="flume drop fix--typo, then flume tidy"):
        step(S, lost, RetryAsked(at=Instant(10)))
    dropped = step(S, lost, DropAsked(at=Instant(10))).place
    assert dropped.life is Life.DROPPED
    assert dropped.tidy == TidyWanted(force=False)


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
