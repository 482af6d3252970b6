"""What the stage rules say and keep, pinned whole: refusals, reports, the state they leave.

The fast selection checked what stage.py decides (a stage stops short, an agent ends) but
rarely the words a person reads (a refusal, a report, a stop short's way out), the stage a
report names, or what an observation leaves in the place (the OpenSpec change's tasks, a
landing's note). Each test here compares them whole; each was written for mutants of
flume/core/stage.py that survived mutation testing, and was seen to fail on them
(docs/mutation.md, "Survivors of stage.py (after)").
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest
from pyrsistent import pset, pvector

from flume.core.actions import (
    ActionName,
    EndAgent,
    Event,
    GatherTidyFacts,
    Land,
    MakeWorktree,
    Report,
    RunSetup,
    SendPrompt,
    SendTell,
    StartAgent,
)
from flume.core.errors import Problem, UsageError
from flume.core.ids import BranchName, Instant, KindName, SessionId, Sha, StageName
from flume.core.kinds import Commit, Kind, ReportFile, Sequence, Step, TasksTicked
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    Author,
    BranchHead,
    BranchVanished,
    ChangeSeen,
    ChecksFailed,
    DropAsked,
    Landed,
    LandingBlocked,
    Launched,
    NeedsSaid,
    PaneOutput,
    ProceedAsked,
    ReportSeen,
    RetryAsked,
    SetupFinished,
    StopAsked,
    SubmitAsked,
    Tick,
    Told,
    TranscriptEntry,
    WorktreeLost,
)
from flume.core.place import (
    Life,
    Place,
    Queued,
    Short,
    ShortCause,
    Submission,
    TidyWanted,
    evolve,
)
from flume.core.settings import Settings
from flume.core.status import PhaseWord, status
from flume.core.step import Decision, step
from tests.model.test_rules import (
    FIX,
    SESSION,
    SUBMIT_SESSION,
    S,
    _ended_fix_code,
    launch,
    made,
    run,
    started,
    submitting,
    typed,
    working,
)

PATH = "/src/app/places/fix--typo"
OTHER = SessionId("s9")
CODE = StageName("code")
SUBMIT = StageName("submit")


def refusal(place: Place, seen: object) -> tuple[Problem, ...]:
    """The problems of the refusal ``seen`` meets in ``place`` (refused in its state: status 1)."""
    with pytest.raises(UsageError) as caught:
        step(S, place, seen)  # type: ignore[arg-type]
    assert caught.value.exit_status == 1
    return caught.value.problems


def reports(decision: Decision) -> list[Report]:
    """The reports among a decision's actions."""
    return [a for a in decision.actions if isinstance(a, Report)]


def with_a_held_tell() -> Place:
    """A working fix whose agent works, with tell 1 held until it waits."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.WORKING)
    ).place
    place = step(S, place, Told(at=Instant(6), text="also the docs")).place
    assert len(place.held) == 1
    return place


def dropped() -> Place:
    """A working fix the caller dropped."""
    return step(S, working(), DropAsked(at=Instant(5))).place


def landed() -> Place:
    """A fix whose submission landed on main at c3."""
    return step(S, submitting(), Landed(at=Instant(30), base_sha=Sha("c3"))).place


def lost() -> Place:
    """A working fix whose worktree was deleted under it, then its branch."""
    place = step(S, working(), WorktreeLost(at=Instant(9), path=PATH)).place
    return step(S, place, BranchVanished(at=Instant(9), branch=BranchName("fix/typo"))).place


def submit_short() -> Place:
    """A fix whose submit stage's agent stopped short after submitting."""
    return step(S, submitting(), NeedsSaid(at=Instant(30), words="?", session=SUBMIT_SESSION)).place


def checks_failed() -> Place:
    """A fix whose submission's checks failed."""
    return step(S, submitting(), ChecksFailed(at=Instant(26), reason="tests failed")).place


def told_text(decision: Decision) -> str:
    """The one tell a decision sent or held: its words as the agent gets them."""
    sent = [a.text for a in decision.actions if isinstance(a, SendTell)]
    held = [t.text for t in decision.place.held]
    sending = [] if decision.place.sending is None else [decision.place.sending.tell.text]
    (text,) = {*sent, *held, *sending}
    return text


# --- the callers' commands refused, their words whole -----------------------------------------


@pytest.mark.parametrize(
    ("place", "seen", "problem"),
    [
        (
            dropped,
            NeedsSaid(at=Instant(6), words="which API?"),
            Problem(
                "needs",
                "no stage of fix--typo is running",
                "flume needs is for the agent of a running stage",
            ),
        ),
        (
            working,
            NeedsSaid(at=Instant(6), words=" \n"),
            Problem("needs", "the words are empty", "say what you need to go on"),
        ),
        (
            working,
            NeedsSaid(at=Instant(6), words="which API?", session=OTHER),
            Problem(
                "needs",
                "session s9 is not the live agent of fix--typo",
                "flume needs is for the agent of the place's running stage",
            ),
        ),
        (
            dropped,
            StopAsked(at=Instant(6)),
            Problem(
                "stop",
                "no agent of fix--typo is running: fix--typo was dropped; flume tidy removes its "
                "place",
                "nothing waits on you now: flume status fix--typo shows where it stands",
            ),
        ),
        (
            working,
            ProceedAsked(at=Instant(6)),
            Problem(
                "proceed",
                "stage code of fix--typo does not wait on your word: fix--typo works on code",
                "nothing waits on you now: flume status fix--typo shows where it stands",
            ),
        ),
        (
            working,
            RetryAsked(at=Instant(6)),
            Problem(
                "retry",
                "stage code of fix--typo has not stopped short; nothing to retry: fix--typo "
                "works on code",
                "nothing waits on you now: flume status fix--typo shows where it stands",
            ),
        ),
        (
            lost,
            RetryAsked(at=Instant(10)),
            Problem(
                "retry",
                "the branch fix/typo of fix--typo is gone",
                "restore it (git -C /src/app update-ref refs/heads/fix/typo a1), then flume retry "
                "fix--typo",
            ),
        ),
        (
            working,
            SubmitAsked(at=Instant(6)),
            Problem(
                "submit",
                "stage code of fix--typo does not land",
                "flume submit belongs to a stage whose deliverable is the landing",
            ),
        ),
        (
            submit_short,
            SubmitAsked(at=Instant(31)),
            Problem("submit", "stage submit of fix--typo is not running", "retry the stage first"),
        ),
        (
            submitting,
            SubmitAsked(at=Instant(26)),
            Problem(
                "submit",
                "fix--typo is already submitted",
                "wait for the lander's answer in flume status",
            ),
        ),
        (
            checks_failed,
            SubmitAsked(at=Instant(27), session=OTHER),
            Problem(
                "submit",
                "session s9 is not the live agent of fix--typo",
                "flume submit is for the agent of the place's running stage",
            ),
        ),
        (
            dropped,
            DropAsked(at=Instant(6)),
            Problem("drop", "fix--typo is dropped", "nothing to drop; tidy cleans it up"),
        ),
        (
            landed,
            DropAsked(at=Instant(31)),
            Problem("drop", "fix--typo is landed", "nothing to drop; tidy cleans it up"),
        ),
    ],
    ids=[
        "needs-not-running",
        "needs-empty",
        "needs-other-session",
        "stop-not-running",
        "proceed-not-waiting",
        "retry-not-short",
        "retry-worktree-and-branch-gone",
        "submit-not-landing",
        "submit-short",
        "submit-already",
        "submit-other-session",
        "drop-dropped",
        "drop-landed",
    ],
)
def test_a_refused_command_names_itself_what_is_wrong_and_the_way_out(
    place: Callable[[], Place], seen: object, problem: Problem
) -> None:
    """Each refusal is one problem: the command, what is wrong, what to do instead."""
    assert refusal(place(), seen) == (problem,)


# --- stop, drop, proceed: what they say and end ------------------------------------------------


def test_stop_says_how_to_go_on() -> None:
    """A stopped stage waits for a retry, and says so in its phase and its report."""
    decision = step(S, working(), StopAsked(at=Instant(6)))
    words = "stopped by the caller; retry to go on"
    assert decision.place.stage.phase == Short(cause=ShortCause.STOPPED, words=words)
    assert reports(decision) == [Report(event=Event.STOPPED_SHORT, text=words, stage=CODE)]
    assert status(decision.place).needs == words


def test_drop_ends_the_agent_and_drops_its_tells_saying_why() -> None:
    """Drop ends the agent and reports each held tell lost, both for the work being dropped."""
    decision = step(S, with_a_held_tell(), DropAsked(at=Instant(7)))
    assert EndAgent(session=SESSION, reason="the work was dropped") in decision.actions
    assert reports(decision) == [
        Report(
            event=Event.TELL_DROPPED,
            text="tell 1 is not known to have reached the agent: the work was dropped",
            stage=CODE,
        ),
        Report(event=Event.DROPPED, text="fix--typo dropped", stage=CODE),
    ]


def test_proceed_reports_the_stage_it_released() -> None:
    """The caller's word releases the waiting stage, and the report names it."""
    waits = Launched(at=Instant(0), launch=launch(waits=pset([StageName("code")])), kind=FIX)
    place = step(S, None, waits).place
    place = step(S, place, made()).place
    decision = step(S, place, ProceedAsked(at=Instant(2)))
    assert reports(decision)[0] == Report(
        event=Event.PROCEEDED, text="the caller's word released stage code", stage=CODE
    )


def test_a_retry_ends_the_agent_and_reports_whether_the_caller_gave_words() -> None:
    """The stopped agent is ended for the retry; the report says the attempt and the words."""
    short = step(S, working(), NeedsSaid(at=Instant(6), words="which API?")).place
    with_words = step(S, short, RetryAsked(at=Instant(7), words="use the v2 API"))
    assert EndAgent(session=SESSION, reason="the stage is retried") in with_words.actions
    assert reports(with_words) == [
        Report(
            event=Event.RETRIED,
            text="stage code retried with the caller's words (attempt 2)",
            stage=CODE,
        )
    ]
    without = step(S, short, RetryAsked(at=Instant(7), words=" "))
    assert reports(without) == [
        Report(event=Event.RETRIED, text="stage code retried (attempt 2)", stage=CODE)
    ]


def test_a_retried_stage_that_waits_on_the_caller_does_not_wait_again() -> None:
    """The retry is the caller's word: the stage is queued for its fresh agent at once."""
    waits = Launched(at=Instant(0), launch=launch(waits=pset([CODE])), kind=FIX)
    place = step(S, None, waits).place
    for seen in (made(), ProceedAsked(at=Instant(2)), started(at=3)):
        place = step(S, place, seen).place
    short = step(S, place, StopAsked(at=Instant(4))).place
    retried = step(S, short, RetryAsked(at=Instant(5))).place
    assert isinstance(retried.stage.phase, Queued)
    assert status(retried).phase is PhaseWord.QUEUED


def test_a_first_attempts_prompt_carries_no_callers_words() -> None:
    """Only a retry's prompt says the stage is tried again with the caller's words."""
    decision = run(made(), started(), AgentReady(at=Instant(3), session=SESSION))
    (prompt,) = [a for a in decision.actions if isinstance(a, SendPrompt)]
    assert "tried again" not in prompt.text
    assert decision.place.stage.words == ""


def test_an_exited_agent_drops_its_tells_and_its_last_words_show() -> None:
    """Its pane's last lines show as they were, indented, the trailing line break trimmed."""
    exited = AgentExited(at=Instant(7), session=SESSION, status=1, last_words="  $ make\nboom\n")
    decision = step(S, with_a_held_tell(), exited)
    words = (
        "the agent exited (exit status 1) before the stage's deliverable existed; retry the "
        "stage. Its pane showed last:\n  $ make\nboom"
    )
    assert decision.place.stage.phase == Short(cause=ShortCause.AGENT_EXITED, words=words)
    assert reports(decision)[0] == Report(
        event=Event.TELL_DROPPED,
        text="tell 1 is not known to have reached the agent: the agent exited",
        stage=CODE,
    )


# --- a place lost from under its stage ---------------------------------------------------------


def test_a_lost_worktree_ends_the_agent_and_drops_its_tells_saying_the_place_is_gone() -> None:
    """With no word from the shell on how, the stop short's words say only what is known."""
    decision = step(S, with_a_held_tell(), WorktreeLost(at=Instant(7), path=PATH))
    words = (
        f"its worktree {PATH} is gone: no agent starts there until flume retry fix--typo adds "
        "it again from its branch fix/typo at a1, its commits kept; or flume drop fix--typo, "
        "then flume tidy"
    )
    assert decision.actions == (
        EndAgent(session=SESSION, reason="its place is gone"),
        Report(
            event=Event.TELL_DROPPED,
            text="tell 1 is not known to have reached the agent: its place is gone",
            stage=CODE,
        ),
        Report(event=Event.STOPPED_SHORT, text=words, stage=CODE),
    )
    assert decision.place.stage.phase == Short(cause=ShortCause.WORKTREE_GONE, words=words)


def test_a_branch_deleted_while_setup_runs_stops_the_place_short_and_its_return_is_named() -> None:
    """A place still being made is in flight: it becomes active, stopped short, until it is whole.

    Its branch restored, the stage says so and a retry is taken once setup is done.
    """
    place = run(made(), setup=(("make",),)).place
    assert place.life is Life.MAKING
    lost = step(S, place, BranchVanished(at=Instant(2), branch=BranchName("fix/typo"))).place
    assert lost.life is Life.ACTIVE
    assert refusal(lost, RetryAsked(at=Instant(3))) == (
        Problem(
            "retry",
            "the branch fix/typo of fix--typo is gone",
            "restore it (git -C /src/app update-ref refs/heads/fix/typo a1), then flume retry "
            "fix--typo",
        ),
    )
    back = step(S, lost, BranchHead(at=Instant(4), branch=BranchName("fix/typo"), sha=Sha("a1")))
    words = "its branch fix/typo is back at a1: flume retry fix--typo to go on"
    assert back.place.stage.phase == Short(cause=ShortCause.BRANCH_GONE, words=words)


# --- setup and failed actions: their output, trimmed -------------------------------------------


SETUP = Launched(
    at=Instant(0),
    launch=launch(),
    kind=FIX,
    setup=pvector([pvector(["make"])]),
    copy=pvector([".env"]),
)


def launched_with_setup() -> Place:
    """A fix launched with a setup command and a file to copy, its worktree made."""
    return step(S, step(S, None, SETUP).place, made()).place


def test_setup_runs_with_the_files_to_copy_from_the_repository() -> None:
    """The setup action names the main worktree to copy from and the files, as launched."""
    decision = step(S, step(S, None, SETUP).place, made())
    setup = [a for a in decision.actions if isinstance(a, RunSetup)]
    assert setup == [
        RunSetup(
            path=PATH,
            commands=pvector([pvector(["make"])]),
            source="/src/app",
            copy=pvector([".env"]),
        )
    ]


def test_a_failed_setup_shows_its_output_without_the_trailing_line_break() -> None:
    """The output as the commands printed it, its last line break trimmed."""
    place = launched_with_setup()
    decision = step(S, place, SetupFinished(at=Instant(2), ok=False, output="make: boom\n"))
    words = "the repository's setup failed:\nmake: boom"
    assert decision.place.stage.phase == Short(cause=ShortCause.SETUP_FAILED, words=words)
    assert reports(decision) == [Report(event=Event.SETUP_FAILED, text=words, stage=CODE)]


def test_a_failed_run_setup_stops_the_unready_place_short() -> None:
    """RunSetup could not run: the place that waited on it stops short, the output trimmed."""
    place = launched_with_setup()
    failed = ActionFailed(at=Instant(2), action=ActionName.RUN_SETUP, status=2, output="no sh\n")
    decision = step(S, place, failed)
    assert decision.place.stage.phase == Short(
        cause=ShortCause.FAILED, words="RunSetup failed: no sh"
    )
    assert reports(decision)[0] == Report(
        event=Event.FAILED, text="RunSetup failed (status 2): no sh", stage=CODE
    )


@pytest.mark.parametrize(
    "action", [ActionName.RUN_SETUP, ActionName.LAND, ActionName.SEND_TELL], ids=str
)
def test_a_failure_nothing_waits_on_is_only_reported(action: ActionName) -> None:
    """A failure nothing waits on is reported with the stage's name; the stage goes on as it was.

    A late RunSetup failure of a ready place, a lander failing with nothing submitted, a tell
    that could not be typed.
    """
    place = working()
    decision = step(S, place, ActionFailed(at=Instant(6), action=action, output="gone\n"))
    assert decision.actions == (
        Report(event=Event.FAILED, text=f"{action.value} failed (status 1): gone", stage=CODE),
    )
    assert decision.place == evolve(place, now=Instant(6))


def test_a_failed_tell_while_submitted_leaves_the_submission_with_the_lander() -> None:
    """Only the lander's own failure counts as failed checks."""
    place = submitting()
    failed = ActionFailed(at=Instant(26), action=ActionName.SEND_TELL, output="gone")
    assert step(S, place, failed).place.submission is Submission.SUBMITTED


# --- the lander's answers ------------------------------------------------------------------------


def mend(reason: str, output: str) -> str:
    """The tell that takes failed checks back to the agent."""
    return (
        f"flume submit: the submission's checks failed ({reason}).\n\n{output}\n\n"
        "Mend the cause, commit, and run `flume submit` again."
    )


def test_failed_checks_go_back_to_the_agent_whole() -> None:
    """Status says why; the report names the stage; the agent hears why, the output, what to do."""
    decision = step(
        S, submitting(), ChecksFailed(at=Instant(26), reason="tests failed", output="1 failed")
    )
    assert decision.place.submission is Submission.CHECKS_FAILED
    assert decision.place.submission_note == "tests failed"
    assert reports(decision)[0] == Report(
        event=Event.CHECKS_FAILED, text="tests failed", stage=SUBMIT
    )
    assert told_text(decision) == mend("tests failed", "1 failed")


def test_a_failed_lander_goes_back_to_the_agent_with_its_output() -> None:
    """The lander itself failed: the agent hears so, with what the lander printed."""
    failed = ActionFailed(at=Instant(26), action=ActionName.LAND, output="index locked")
    decision = step(S, submitting(), failed)
    assert decision.place.submission_note == "the lander failed"
    assert Report(event=Event.CHECKS_FAILED, text="the lander failed", stage=SUBMIT) in (
        reports(decision)
    )
    assert told_text(decision) == mend("the lander failed", "index locked")


def test_a_landing_is_taken_once_with_its_note_and_archive() -> None:
    """The first landing seen counts: status notes where; a second look changes nothing."""
    seen = Landed(at=Instant(30), base_sha=Sha("c3"), change_archived=True)
    decision = step(S, submitting(), seen)
    place = decision.place
    assert place.change_archived
    assert place.submission_note == "main at c3"
    assert reports(decision)[0] == Report(
        event=Event.LANDED, text="fix/typo landed on main at c3", stage=SUBMIT
    )
    again = step(S, place, Landed(at=Instant(31), base_sha=Sha("c4")))
    assert not [r for r in reports(again) if r.event is Event.LANDED]
    assert (again.place.landed_at, again.place.submission_note) == (Instant(30), "main at c3")


def test_a_landing_seen_after_the_work_was_dropped_does_not_count() -> None:
    """Dropped while the lander worked: a landing seen then is not the place's to take."""
    place = step(S, submitting(), DropAsked(at=Instant(26))).place
    decision = step(S, place, Landed(at=Instant(30), base_sha=Sha("c3")))
    assert decision.place.landed_at is None
    assert not [r for r in reports(decision) if r.event is Event.LANDED]


def test_a_blocked_landing_is_reported_for_its_stage_even_with_no_words() -> None:
    """The first block is reported, naming the stage, whatever git said of it."""
    decision = step(S, submitting(), LandingBlocked(at=Instant(30), reason=""))
    assert reports(decision) == [Report(event=Event.LANDING_BLOCKED, text="", stage=SUBMIT)]
    said = step(S, submitting(), LandingBlocked(at=Instant(30), reason="main is dirty"))
    assert reports(said) == [
        Report(event=Event.LANDING_BLOCKED, text="main is dirty", stage=SUBMIT)
    ]


def test_the_lander_is_given_the_bases_revision_at_launch() -> None:
    """Only the place's own commits land: those after the revision its branch was cut from."""
    seen = Launched(at=Instant(0), launch=launch(), kind=FIX, start=Sha("a0"))
    place = step(S, None, seen).place
    for observation in (
        made(),
        started(),
        AgentReady(at=Instant(3), session=SESSION),
        typed("[flume:fix--typo:code:1]"),
        BranchHead(at=Instant(10), branch=BranchName("fix/typo"), sha=Sha("b2")),
        AgentStateSeen(at=Instant(11), session=SESSION, activity=Activity.WAITING),
        Tick(at=Instant(20)),
        AgentExited(at=Instant(21), session=SESSION),
        AgentStarted(
            at=Instant(22), stage=StageName("submit"), attempt=1, session=SUBMIT_SESSION, pane="%2"
        ),
        AgentReady(at=Instant(23), session=SUBMIT_SESSION),
        typed("[flume:fix--typo:submit:1]", at=24, session="s2"),
    ):
        place = step(S, place, observation).place
    decision = step(S, place, SubmitAsked(at=Instant(25), session=SUBMIT_SESSION))
    assert [a for a in decision.actions if isinstance(a, Land)] == [
        Land(path=PATH, branch=BranchName("fix/typo"), base=BranchName("main"), start=Sha("a0"))
    ]


def test_a_submission_again_starts_afresh() -> None:
    """Submitted again after a block: no old note shows, the wait starts again from its first."""
    place = step(S, submitting(), LandingBlocked(at=Instant(30), reason="main is dirty")).place
    assert (place.land_blocked, place.land_retry_at) == (1, Instant(32))
    again = step(S, place, SubmitAsked(at=Instant(31), session=SUBMIT_SESSION))
    assert reports(again)[0] == Report(
        event=Event.SUBMITTED, text="fix/typo handed to the lander for main", stage=SUBMIT
    )
    assert status(again.place).submission_note == ""
    blocked = step(S, again.place, LandingBlocked(at=Instant(40), reason="main is dirty")).place
    assert blocked.land_retry_at == Instant(42)


def test_a_dropped_places_blocked_landing_is_not_tried_again() -> None:
    """Dropped while the base was blocked: the wait's end lands nothing."""
    place = step(S, submitting(), LandingBlocked(at=Instant(30), reason="main is dirty")).place
    place = step(S, place, DropAsked(at=Instant(31))).place
    later = step(S, place, Tick(at=Instant(40)))
    assert not [a for a in later.actions if isinstance(a, Land)]


# --- a stage's end, and the next -----------------------------------------------------------------


def test_each_report_of_a_stages_end_names_its_stage() -> None:
    """The deliverable found, the stage ended and counted done, the next waiting on the word."""
    found = step(
        S, working(), BranchHead(at=Instant(10), branch=BranchName("fix/typo"), sha=Sha("b2"))
    )
    text = "the deliverable of stage code exists; waiting until the agent is quiet"
    assert Report(event=Event.DELIVERABLE, text=text, stage=CODE) in reports(found)
    waits = Launched(at=Instant(0), launch=launch(waits=pset([SUBMIT])), kind=FIX)
    place = step(S, None, waits).place
    for seen in (
        made(),
        started(),
        AgentReady(at=Instant(3), session=SESSION),
        typed("[flume:fix--typo:code:1]"),
        BranchHead(at=Instant(10), branch=BranchName("fix/typo"), sha=Sha("b2")),
        AgentStateSeen(at=Instant(11), session=SESSION, activity=Activity.WAITING),
    ):
        place = step(S, place, seen).place
    ended = step(S, place, Tick(at=Instant(20)))
    assert ended.place.completed == pvector([CODE])
    assert reports(ended) == [
        Report(event=Event.STAGE_ENDED, text="stage code ended", stage=CODE),
        Report(
            event=Event.STAGE_WAITS,
            text="stage submit waits on the caller's word (flume proceed fix--typo)",
            stage=SUBMIT,
        ),
    ]


def test_the_last_stage_ending_after_the_landing_finishes_the_place_and_tidies_it() -> None:
    """The landed fix's submit stage ends once quiet: finished, named, and tidy follows."""
    place = step(
        S,
        landed(),
        AgentStateSeen(at=Instant(31), session=SUBMIT_SESSION, activity=Activity.WAITING),
    ).place
    finished = step(S, place, Tick(at=Instant(60)))
    assert finished.place.life is Life.FINISHED
    assert reports(finished)[:2] == [
        Report(event=Event.STAGE_ENDED, text="stage submit ended", stage=SUBMIT),
        Report(event=Event.FINISHED, text="fix--typo finished", stage=SUBMIT),
    ]
    assert finished.place.tidy == TidyWanted(force=False)
    gone = step(S, finished.place, AgentExited(at=Instant(61), session=SUBMIT_SESSION))
    assert any(isinstance(a, GatherTidyFacts) for a in gone.actions)


def test_a_stage_starts_its_clock_when_its_agent_starts() -> None:
    """Retried at 7, its old agent gone at 9: the fresh attempt started at 9, and says so.

    "Made since the stage started" (a report file's age, a landing's) counts from then, not
    from the retry, while the old agent could still write.
    """
    short = step(S, working(), NeedsSaid(at=Instant(6), words="which API?")).place
    queued = step(S, short, RetryAsked(at=Instant(7), words="use v2")).place
    decision = step(S, queued, AgentExited(at=Instant(9), session=SESSION))
    assert decision.place.stage.started_at == Instant(9)
    assert Report(event=Event.STAGE_STARTED, text="stage code starts (attempt 2)", stage=CODE) in (
        reports(decision)
    )


def test_no_agent_starts_in_dropped_work() -> None:
    """Dropped while its next stage waited for the old agent to go: none starts once it has."""
    place = step(S, _ended_fix_code(), DropAsked(at=Instant(21))).place
    gone = step(S, place, AgentExited(at=Instant(22), session=SESSION))
    assert not [a for a in gone.actions if isinstance(a, StartAgent)]


# --- the launch and its worktree -----------------------------------------------------------------


def test_a_launch_keeps_its_settings_and_cuts_its_branch_at_its_start() -> None:
    """The place lives by the settings it was launched with; its branch is cut at ``start``."""
    own = Settings(quiet_seconds=9, confirm_seconds=30, ready_seconds=60)
    seen = Launched(at=Instant(0), launch=launch(), kind=FIX, start=Sha("a0"), settings=own)
    decision = step(S, None, seen)
    assert decision.place.settings == own
    assert (
        MakeWorktree(
            repository="/src/app",
            path=PATH,
            branch=BranchName("fix/typo"),
            base=BranchName("main"),
            start=Sha("a0"),
        )
        in decision.actions
    )


def test_only_the_places_own_worktree_made_once_counts() -> None:
    """A worktree on another branch at its path is not the place's; a second sighting is nothing."""
    place = run().place
    other = attrs.evolve(made(), branch=BranchName("other"))
    assert not step(S, place, other).place.made
    once = step(S, place, made()).place
    again = step(S, once, made(at=2))
    assert not again.actions


# --- what observations leave in the place --------------------------------------------------------


def change(ticked: int, total: int, head: str | None = "b2") -> ChangeSeen:
    """The OpenSpec change as read from commit ``head``, or the working tree when None."""
    return ChangeSeen(
        at=Instant(8),
        written=True,
        head=None if head is None else Sha(head),
        ticked=ticked,
        total=total,
    )


def test_a_committed_change_is_kept_with_its_tasks() -> None:
    """The committed change is kept as the evidence; its count shows when no live one was seen."""
    committed = change(1, 3)
    place = step(S, working(), committed).place
    assert place.change == committed
    assert status(place).tasks == (1, 3)
    assert step(S, working(), change(0, 0)).place.tasks is None


def test_live_ticks_show_and_a_committed_count_does_not_override_them() -> None:
    """The working tree's count is the newest: it shows, and a later commit's does not replace it.

    A live read with no tasks leaves the count as it was, and the committed change as it was.
    """
    committed = change(1, 3)
    place = step(S, step(S, working(), committed).place, change(2, 3, head=None)).place
    assert (status(place).tasks, place.change) == ((2, 3), committed)
    place = step(S, place, change(0, 0, head=None)).place
    assert status(place).tasks == (2, 3)
    place = step(S, place, change(1, 3)).place
    assert status(place).tasks == (2, 3)


def output(at: float, last: float) -> PaneOutput:
    """The live agent's pane, looked at ``at``, last showed output at ``last``."""
    return PaneOutput(at=Instant(at), session=SESSION, last_output_at=Instant(last))


def test_pane_output_moves_the_quiet_clock_forward_only() -> None:
    """The agent's last output is the latest the pane showed; an older look does not undo it."""
    place = step(
        S, working(), PaneOutput(at=Instant(9), session=SESSION, last_output_at=Instant(8))
    )
    assert place.place.agent is not None
    assert place.place.agent.last_output_at == Instant(8)
    older = step(
        S, place.place, PaneOutput(at=Instant(10), session=SESSION, last_output_at=Instant(6))
    )
    assert older.place.agent is not None
    assert older.place.agent.last_output_at == Instant(8)


def line(at: float, **facts: object) -> TranscriptEntry:
    """A line of the live agent's transcript, written ``at``."""
    return TranscriptEntry(at=Instant(at), session=SESSION, author=Author.AGENT, **facts)  # type: ignore[arg-type]


def test_a_line_written_when_the_hook_spoke_counts() -> None:
    """Only a line older than the hook's report gives way to it; one of the same instant counts."""
    hook = AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.WAITING)
    place = step(S, working(), hook).place
    assert place.agent is not None
    assert (place.agent.activity, place.agent.activity_since) == (Activity.WAITING, Instant(5))
    place = step(S, place, line(5, text="Reading the greeting.")).place
    assert place.agent is not None
    assert place.agent.activity is Activity.WORKING


def test_a_hook_report_older_than_the_line_that_moved_the_agent_is_ignored() -> None:
    """A line that changes what the agent does is the latest word until something newer comes."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.WORKING)
    )
    place = step(S, place.place, line(7, ends_turn=True))
    late = step(
        S, place.place, AgentStateSeen(at=Instant(6), session=SESSION, activity=Activity.WORKING)
    )
    assert late.place.agent is not None
    assert (late.place.agent.activity, late.place.agent.activity_since) == (
        Activity.WAITING,
        Instant(7),
    )


def then_waits(deliverable: Commit | ReportFile | TasksTicked) -> Kind:
    """A fix whose code stage is followed by a stage that waits on the caller's word."""
    return Kind(
        name=KindName("fix"),
        prefix="fix",
        body=Sequence(
            blocks=pvector(
                [
                    Step(name=CODE, prompt="$brief", deliverable=Commit()),
                    Step(
                        name=StageName("check"),
                        prompt="$brief",
                        deliverable=deliverable,
                        waits_on_caller=True,
                    ),
                ]
            )
        ),
    )


@pytest.mark.parametrize(
    ("deliverable", "meanwhile"),
    [
        (Commit(), BranchHead(at=Instant(21), branch=BranchName("fix/typo"), sha=Sha("c3"))),
        (
            ReportFile(path="notes.md"),
            ReportSeen(at=Instant(21), path="notes.md", modified_at=Instant(21)),
        ),
        (
            TasksTicked(),
            ChangeSeen(at=Instant(21), written=True, head=Sha("b2"), ticked=3, total=3),
        ),
    ],
    ids=["commit", "report", "tasks"],
)
def test_a_stage_the_caller_releases_shows_nothing_made_before_the_word(
    deliverable: Commit | ReportFile | TasksTicked, meanwhile: BranchHead | ReportSeen | ChangeSeen
) -> None:
    """What was made while the stage waited on the word is not its deliverable.

    The old agent's last commit, a report written early, or an OpenSpec change committed with
    every task ticked at the head the caller releases the stage on: status shows none once the
    caller releases the stage, while it is queued behind the agent still being ended.
    """
    place = run(
        made(),
        started(),
        AgentReady(at=Instant(3), session=SESSION),
        typed("[flume:fix--typo:code:1]"),
        BranchHead(at=Instant(10), branch=BranchName("fix/typo"), sha=Sha("b2")),
        AgentStateSeen(at=Instant(11), session=SESSION, activity=Activity.WAITING),
        Tick(at=Instant(20)),
        kind=then_waits(deliverable),
    ).place
    assert status(place).phase is PhaseWord.WAITS_WORD
    place = step(S, place, meanwhile).place
    released = step(S, place, ProceedAsked(at=Instant(22))).place
    assert isinstance(released.stage.phase, Queued)
    assert not status(released).deliverable_exists
