"""The core's less travelled branches, each with the behaviour it stands for."""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pvector

from flume.core.actions import (
    ActionName,
    DeleteBranch,
    Event,
    GatherTidyFacts,
    KeepBranch,
    KeepPlace,
    MakeWorktree,
    RemoveWorktree,
    Report,
)
from flume.core.delivery import infer_activity, send_prompt
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, KindName, Sha, StageName
from flume.core.kinds import BUILTIN_KINDS, Commit, Kind, Sequence, Step, next_stage, stage_named
from flume.core.launch import AgentSettings, Panes, branch_problems, check_launch
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentStateSeen,
    Author,
    BranchDeleted,
    BranchFacts,
    ChecksFailed,
    DropAsked,
    Landed,
    Launched,
    NeedsSaid,
    RetryAsked,
    StopAsked,
    SubmitAsked,
    TidyAsked,
    TidyFactsSeen,
    TranscriptEntry,
    WorktreeFacts,
    WorktreeRemoved,
)
from flume.core.place import (
    Life,
    Short,
    Submission,
    TidyGathering,
    TidyNotWanted,
    TidyWanted,
    Working,
    evolve,
)
from flume.core.step import pending, step, trace
from flume.core.tidy import plan
from tests.model.test_rules import (
    FIX,
    SESSION,
    SUBMIT_SESSION,
    S,
    launch,
    made,
    run,
    submitting,
    typed,
    working,
)


def test_send_prompt_refuses_a_third_send() -> None:
    """DELIVERY-TWO-SENDS holds in the sender itself: with two sends made, nothing is sent."""
    place = working()
    spent = evolve(place, stage=attrs.evolve(place.stage, sends=2))
    assert send_prompt(spent, SESSION) == (spent, ())


@pytest.mark.parametrize(
    ("fields", "known", "expected"),
    [
        ({"author": Author.SYSTEM, "ends_turn": True}, Activity.WORKING, Activity.WAITING),
        ({"author": Author.SYSTEM}, Activity.WORKING, Activity.WORKING),
        ({"author": Author.SYSTEM}, Activity.ASKING, Activity.ASKING),
        ({"author": Author.AGENT, "asks": True}, Activity.WORKING, Activity.ASKING),
        (
            {"author": Author.AGENT, "asks": True, "ends_turn": True},
            Activity.WORKING,
            Activity.ASKING,
        ),
        ({"author": Author.AGENT, "ends_turn": True}, Activity.WORKING, Activity.WAITING),
        ({"author": Author.AGENT}, Activity.WAITING, Activity.WORKING),
        # The tool call that opened a permission dialog, read after the hook said it asks.
        ({"author": Author.AGENT}, Activity.ASKING, Activity.ASKING),
        ({"author": Author.TOOL}, Activity.ASKING, Activity.WORKING),
        ({"author": Author.TOOL}, Activity.WAITING, Activity.WORKING),
        ({"author": Author.PERSON}, Activity.WAITING, Activity.WORKING),
        # Its prompt, pasted before the dialog opened and read in the same look as the hook's
        # word that it asks (seen under load: a tell then held, not refused).
        ({"author": Author.PERSON}, Activity.ASKING, Activity.ASKING),
    ],
)
def test_activity_from_one_line(
    fields: dict[str, object], known: Activity, expected: Activity
) -> None:
    """What one transcript line says of the agent, and what it leaves as it was."""
    entry = TranscriptEntry(at=Instant(0), session=SESSION, **fields)  # type: ignore[arg-type]
    assert infer_activity(entry, known) is expected


def test_asking_for_a_stage_the_kind_lacks_is_a_key_error() -> None:
    """The kind walkers refuse names the kind does not hold (the core never asks for one)."""
    with pytest.raises(KeyError):
        stage_named(FIX, StageName("nope"))
    with pytest.raises(KeyError):
        next_stage(FIX, StageName("nope"))
    assert next_stage(FIX, StageName("submit")) is None


def test_a_declared_kind_with_a_bad_name_and_prefix_is_refused() -> None:
    """A kind's own name and branch prefix must be safe."""
    kind = Kind(
        name=KindName("Bad Kind"),
        prefix="-x",
        body=Sequence(
            blocks=pvector([Step(name=StageName("a"), prompt="$brief", deliverable=Commit())])
        ),
    )
    with pytest.raises(UsageError) as caught:
        check_launch(launch(kind=kind.name), kind)
    text = str(caught.value)
    assert "is not a kind name" in text
    assert "cannot start a branch name" in text


@pytest.mark.parametrize(
    ("base", "says"), [("a@{1}", "'@{'"), ("@", "'@{'"), ("rel/", "ends in"), ("x//y", "'//'")]
)
def test_more_bad_bases(base: str, says: str) -> None:
    """Bases git would not take are named."""
    (problem,) = branch_problems("base", base)
    assert says in problem.what


def test_a_worktree_that_could_not_be_made_is_made_again_on_retry() -> None:
    """MakeWorktree failed: the stage stops short, and a retry asks for the worktree again."""
    failed = run(
        ActionFailed(at=Instant(1), action=ActionName.MAKE_WORKTREE, output="disk full")
    ).place
    assert isinstance(failed.stage.phase, Short)
    again = step(S, failed, RetryAsked(at=Instant(2)))
    assert any(isinstance(a, MakeWorktree) for a in again.actions)


def test_failed_checks_with_no_agent_to_tell_are_only_reported() -> None:
    """The lander's checks fail after the agent went away: reported, nothing held."""
    place = submitting()
    gone = evolve(place, agent=None)  # type: ignore[arg-type]
    decided = step(S, gone, ChecksFailed(at=Instant(30), reason="tests", output="1 failed"))
    assert decided.place.submission is Submission.CHECKS_FAILED
    assert [a.event for a in decided.actions if isinstance(a, Report)] == [Event.CHECKS_FAILED]
    assert not decided.place.held


def test_a_failed_lander_counts_as_failed_checks() -> None:
    """The lander itself failed: its output goes back to the agent like failed checks."""
    decided = step(
        S, submitting(), ActionFailed(at=Instant(30), action=ActionName.LAND, output="locked")
    )  # type: ignore[arg-type]
    assert decided.place.submission is Submission.CHECKS_FAILED
    assert decided.place.held or decided.place.sending


def test_a_landing_survives_a_retry() -> None:
    """Landed, then the agent stopped short: a retry keeps the landing."""
    place = step(S, submitting(), Landed(at=Instant(30), base_sha=Sha("c3"))).place  # type: ignore[arg-type]
    place = step(S, place, NeedsSaid(at=Instant(31), words="odd", session=SUBMIT_SESSION)).place
    retried = step(S, place, RetryAsked(at=Instant(32))).place
    assert retried.submission is Submission.LANDED


def test_plan_keeps_a_place_in_flight_and_handles_a_vanished_worktree() -> None:
    """Tidy keeps what is in flight; a worktree already gone is not removed again."""
    branch = BranchFacts(
        name=BranchName("fix/x"), exists=True, base=BranchName("main"), head=Sha("a")
    )
    here = WorktreeFacts(path="/p", exists=True, made_by_flume=True)
    kept = plan(
        kind=FIX.name, life=Life.ACTIVE, made=True, worktree=here, branch=branch, force=True
    )
    assert all(isinstance(a, KeepPlace | KeepBranch) for a in kept)
    gone = WorktreeFacts(path="/p", exists=False, made_by_flume=True)
    assert plan(
        kind=FIX.name, life=Life.FINISHED, made=True, worktree=gone, branch=branch, force=False
    ) == (DeleteBranch(branch=BranchName("fix/x"), base=BranchName("main"), head_was=Sha("a")),)
    missing = BranchFacts(name=BranchName("fix/x"), exists=False, base=BranchName("main"))
    assert (
        plan(
            kind=FIX.name, life=Life.FINISHED, made=True, worktree=gone, branch=missing, force=False
        )
        == ()
    )


def test_removals_of_other_things_change_nothing() -> None:
    """A worktree removed elsewhere, or another branch deleted, does not tidy this place."""
    place = working()
    assert (
        step(S, place, WorktreeRemoved(at=Instant(9), path="/elsewhere")).place.life is Life.ACTIVE
    )
    other = step(S, place, BranchDeleted(at=Instant(9), branch=BranchName("other")))
    assert not other.place.branch_gone


def test_a_trace_goes_on_past_a_refusal() -> None:
    """Simulate's trace records a refused command and carries on."""
    rows = list(
        trace(
            S,
            [
                Launched(at=Instant(0), launch=launch(), kind=FIX),
                NeedsSaid(at=Instant(1), words="?"),
                made(),
            ],
        ),
    )
    assert [row.refusal is None for row in rows] == [True, False, True]


def test_a_second_submit_waits_for_the_lander() -> None:
    """Submitting twice is refused while the lander has the first."""
    with pytest.raises(UsageError, match="already submitted"):
        step(S, submitting(), SubmitAsked(at=Instant(26), session=SUBMIT_SESSION))  # type: ignore[arg-type]


def test_a_worktree_already_gone_is_tidied_without_removal() -> None:
    """Tidy finds the dropped place's worktree gone: the place is tidied, nothing removed."""
    from flume.core.observations import AgentExited, DropAsked, TidyFactsSeen  # noqa: PLC0415

    place = step(S, working(), DropAsked(at=Instant(5))).place
    place = step(S, place, AgentExited(at=Instant(6), session=SESSION)).place
    facts = TidyFactsSeen(
        at=Instant(7),
        worktree=WorktreeFacts(path=place.path, exists=False, made_by_flume=True),
        # A commit main lacks keeps the branch, so nothing at all is left to remove.
        branch=BranchFacts(name=place.branch, exists=True, base=BranchName("main"), base_lacks=1),
    )
    decided = step(S, place, facts)
    assert decided.place.life is Life.TIDIED
    assert not any(type(a).__name__ == "RemoveWorktree" for a in decided.actions)


def test_a_launch_dropped_before_its_worktree_exists_is_tidied_once_it_does() -> None:
    """Dropped while its worktree was being made: once made, tidy asks for its facts."""
    from flume.core.actions import GatherTidyFacts  # noqa: PLC0415
    from flume.core.observations import DropAsked  # noqa: PLC0415

    asked = run(DropAsked(at=Instant(0.5)))
    assert asked.place.life is Life.DROPPED
    assert any(isinstance(a, GatherTidyFacts) for a in asked.actions)
    made_place = step(S, asked.place, made()).place
    facts = TidyFactsSeen(
        at=Instant(2),
        worktree=WorktreeFacts(path=made_place.path, exists=True, made_by_flume=True),
        branch=BranchFacts(name=made_place.branch, exists=True, base=BranchName("main")),
    )
    decided = step(S, made_place, facts)
    assert any(isinstance(a, RemoveWorktree) for a in decided.actions)


def test_a_place_never_made_is_tidied_with_nothing_removed() -> None:
    """Its making failed, then it was dropped: tidy finds nothing of flume's and is done.

    A worktree seen made after that (a make that was in flight) is tidied in its turn.
    """
    failed = run(
        ActionFailed(at=Instant(1), action=ActionName.MAKE_WORKTREE, output="no room")
    ).place
    dropped = step(S, failed, DropAsked(at=Instant(2))).place
    facts = TidyFactsSeen(
        at=Instant(3),
        worktree=WorktreeFacts(path=dropped.path, exists=False, made_by_flume=True),
        branch=BranchFacts(name=dropped.branch, exists=True, base=BranchName("main")),
    )
    decided = step(S, dropped, facts)
    assert decided.place.life is Life.TIDIED
    assert not any(isinstance(a, RemoveWorktree | DeleteBranch) for a in decided.actions)
    (kept,) = (a for a in decided.actions if isinstance(a, KeepBranch))
    assert "flume did not make its place" in kept.reason
    gone = plan(
        kind=FIX.name,
        life=Life.DROPPED,
        made=False,
        worktree=facts.worktree,
        branch=BranchFacts(name=dropped.branch, exists=False, base=BranchName("main")),
        force=False,
    )
    assert gone == ()
    again = step(S, decided.place, made(at=4.0))
    assert again.place.life is Life.DROPPED
    assert any(isinstance(a, GatherTidyFacts) for a in again.actions)


def test_a_brief_that_is_not_utf8_text_is_refused() -> None:
    """A brief holding a lone surrogate (bytes that were not UTF-8) is bad input."""
    with pytest.raises(UsageError, match="not UTF-8 text"):
        check_launch(launch(brief="half \udce9 a character"), FIX)


@pytest.mark.parametrize(
    ("model", "flags", "field"),
    [
        ("", (), "model"),
        ("son\0net", (), "model"),
        (None, ("--effort", ""), "agent-arg"),
        (None, ("a\0b",), "agent-arg"),
    ],
)
def test_an_empty_or_nul_agent_setting_is_refused(
    model: str | None, flags: tuple[str, ...], field: str
) -> None:
    """Each agent setting becomes one argv entry: an empty one or one holding NUL is refused."""
    agent = AgentSettings(model=model, flags=pvector(flags))
    with pytest.raises(UsageError) as raised:
        check_launch(attrs.evolve(launch(), agent=agent), FIX)
    assert [problem.field for problem in raised.value.problems] == [field]


@pytest.mark.parametrize("key", ["\x1b", "\x03", "\x00", "\x7f"])
def test_a_brief_holding_a_key_is_refused(key: str) -> None:
    """A brief is pasted into an agent: an ESC (which could end the paste) or other key is bad."""
    with pytest.raises(UsageError, match="control character"):
        check_launch(attrs.evolve(launch(), brief=f"Mend it.{key}[201~\r!rm -rf x"), FIX)


def test_tabs_and_line_breaks_are_text_in_a_brief() -> None:
    """Tabs, LF and CR (a brief written on Windows) are text."""
    check_launch(attrs.evolve(launch(), brief="Mend it:\r\n\tthe greeting.\n"), FIX)


def test_a_printed_agents_brief_fits_one_argument() -> None:
    """--panes print puts the prompt on a command line: a brief over 100 KiB is refused there."""
    big = "x" * (100 * 1024 + 1)
    printed = AgentSettings(panes=Panes.PRINT)
    with pytest.raises(UsageError, match="command-line argument"):
        check_launch(attrs.evolve(launch(), brief=big, agent=printed), FIX)
    check_launch(attrs.evolve(launch(), brief=big), FIX)
    check_launch(attrs.evolve(launch(), brief=big[:-1], agent=printed), FIX)


def test_a_good_model_and_agent_arguments_pass() -> None:
    """A named model and non-empty arguments are no problem."""
    agent = AgentSettings(model="sonnet", flags=pvector(["--effort", "high"]))
    check_launch(attrs.evolve(launch(), agent=agent), FIX)


def test_a_question_finishes_on_its_conclusion_and_waits_for_tidy() -> None:
    """A question's session ends on conclusion.md; finished, not landed, it asks no tidy."""
    from flume.core.actions import GatherTidyFacts  # noqa: PLC0415
    from flume.core.observations import (  # noqa: PLC0415
        AgentReady,
        AgentStarted,
        Launched,
        ReportSeen,
        Tick,
        WorktreeMade,
    )

    question = BUILTIN_KINDS[KindName("question")]
    place = step(
        S, None, Launched(at=Instant(0), launch=launch(kind=question.name), kind=question)
    ).place
    place = step(
        S,
        place,
        WorktreeMade(at=Instant(1), path=place.path, branch=place.branch, head=Sha("a1")),
    ).place
    place = step(
        S,
        place,
        AgentStarted(
            at=Instant(2), stage=StageName("session"), attempt=1, session=SESSION, pane="%1"
        ),
    ).place
    place = step(S, place, AgentReady(at=Instant(3), session=SESSION)).place
    place = step(S, place, typed("[flume:question--typo:session:1]")).place
    assert isinstance(place.stage.phase, Working)
    place = step(
        S, place, ReportSeen(at=Instant(9), path="conclusion.md", modified_at=Instant(9))
    ).place
    place = step(
        S, place, AgentStateSeen(at=Instant(10), session=SESSION, activity=Activity.WAITING)
    ).place
    decided = step(S, place, Tick(at=Instant(20)))
    assert decided.place.life is Life.FINISHED
    assert not any(isinstance(a, GatherTidyFacts) for a in decided.actions)
    assert decided.place.tidy == TidyNotWanted()


def test_what_a_restart_asks_for_again() -> None:
    """After a restart, each effect the place waits for is asked for again, and nothing else."""
    launched = run().place
    assert [type(a).__name__ for a in pending(launched)] == ["MakeWorktree"]
    with_setup = run(made(), setup=(("make",),)).place
    assert [type(a).__name__ for a in pending(with_setup)] == ["RunSetup"]
    starting = run(made()).place
    assert [type(a).__name__ for a in pending(starting)] == ["StartAgent"]
    assert pending(working()) == ()
    ending = step(S, working(), StopAsked(at=Instant(9))).place
    assert [type(a).__name__ for a in pending(ending)] == ["EndAgent"]
    assert [type(a).__name__ for a in pending(submitting())] == ["Land"]
    dropped = step(S, working(), DropAsked(at=Instant(9))).place
    gone = step(S, dropped, AgentExited(at=Instant(10), session=SESSION)).place
    assert [type(a).__name__ for a in pending(gone)] == ["GatherTidyFacts"]
    failed = step(S, launched, ActionFailed(at=Instant(1), action=ActionName.MAKE_WORKTREE)).place
    assert pending(failed) == ()
    unmade = step(S, launched, DropAsked(at=Instant(1))).place
    look, gather = pending(unmade)
    assert isinstance(look, MakeWorktree)
    assert look.look_only
    assert isinstance(gather, GatherTidyFacts)


def test_tidy_asked_again_while_gathering_waits_for_the_facts_with_the_latest_force() -> None:
    """A tidy asked while tidy gathers facts asks for none again; the latest force decides.

    A drop (no force) then ``tidy --force`` while the first look is out: one look, and its
    facts are judged with force. A drop after a forced tidy keeps the caller's force.
    """
    dropped = step(S, working(), DropAsked(at=Instant(9))).place
    assert dropped.tidy == TidyWanted(force=False)
    gathering = step(S, dropped, AgentExited(at=Instant(10), session=SESSION))
    assert [type(a) for a in gathering.actions] == [GatherTidyFacts]
    assert gathering.place.tidy == TidyGathering(force=False)
    forced = step(S, gathering.place, TidyAsked(at=Instant(11), force=True))
    assert forced.place.tidy == TidyGathering(force=True)
    assert not any(isinstance(a, GatherTidyFacts) for a in forced.actions)
    facts = TidyFactsSeen(
        at=Instant(12),
        worktree=WorktreeFacts(path=forced.place.path, exists=True, made_by_flume=True, dirty=True),
        branch=BranchFacts(
            name=forced.place.branch, exists=True, base=BranchName("main"), base_lacks=0
        ),
    )
    judged = step(S, forced.place, facts)
    assert RemoveWorktree(path=forced.place.path, force=True) in judged.actions
    # Tidy looks again once the removals are done, still with the caller's force.
    assert judged.actions[-1] == GatherTidyFacts(
        path=forced.place.path, branch=forced.place.branch, base=BranchName("main"), force=True
    )
    assert judged.place.tidy == TidyGathering(force=True)
