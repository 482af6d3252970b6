"""What delivery, tell and tidy say and keep, held word for word and field for field.

The state machines check what the core decides (a send made, a stage stopped short, a
worktree removed) but seldom the words a person reads, the stage a report names, or a flag the
place keeps for a later step or for the shell. Each example here holds one of those, found by
mutation testing (a mutant of flume/core no fast test failed on; docs/mutation.md lists them):
each test failed on its mutants and passes on the core as it is.
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pvector

from flume.core.actions import (
    EndAgent,
    Event,
    GatherTidyFacts,
    Report,
    SendPrompt,
    SendTell,
    StartAgent,
)
from flume.core.delivery import render_prompt
from flume.core.errors import Problem, UsageError
from flume.core.ids import (
    BranchName,
    Instant,
    KindName,
    Marker,
    PlaceName,
    SessionId,
    Sha,
    StageName,
    WorkName,
)
from flume.core.kinds import BUILTIN_KINDS, Commit, Kind, Step
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    Author,
    BranchDeleted,
    BranchFacts,
    BranchHead,
    ChangeSeen,
    ChecksFailed,
    DropAsked,
    Landed,
    LandingBlocked,
    Launched,
    NeedsSaid,
    PromptTyped,
    RetryAsked,
    Tick,
    TidyAsked,
    TidyFactsSeen,
    Told,
    TranscriptEntry,
    WorktreeFacts,
    WorktreeLost,
    WorktreeMade,
    WorktreeRemoved,
)
from flume.core.place import Life, Place, Short, ShortCause, Submission, TidyNotWanted
from flume.core.status import PhaseWord, PlaceStatus, status
from flume.core.step import step
from tests.model.test_rules import (
    FIX,
    SESSION,
    S,
    launch,
    made,
    run,
    started,
    submitting,
    typed,
    working,
)

CODE = StageName("code")
WORKTREE = "/src/app/places/fix--typo"
BRANCH = BranchName("fix/typo")
MAIN = BranchName("main")
PROMPT = Marker("flume:fix--typo:code:1")


def _shown_typed(at: float, send: int) -> PromptTyped:
    """The pane shows send ``send`` of the code stage's first prompt typed."""
    return PromptTyped(at=Instant(at), session=SESSION, marker=PROMPT, send=send)


def _awaiting_proof() -> Place:
    """A fix whose first prompt was sent at 3, not yet shown typed nor found in the transcript."""
    return run(made(), started(), AgentReady(at=Instant(3), session=SESSION)).place


# --- R5: the prompt, every field of a declared kind's template filled -------------------------

#: A declared kind whose one stage's prompt names every field a prompt may name, and ends blank.
SURVEY = Kind(
    name=KindName("survey"),
    prefix="survey",
    body=Step(
        name=StageName("look"),
        prompt="$kind $name ($place): $brief\n$stage in $path on $branch from $base of "
        "$repository; ends at $deliverable.\nMarked $marker.$words\n\n",
        deliverable=Commit(),
    ),
)

SURVEYED = (
    "survey typo (survey--typo): Mend the greeting.\nlook in /src/app/places/survey--typo on "
    "survey/typo from main of /src/app; ends at a new commit on the place's branch.\n"
)


def _survey(*seen: object) -> Place:
    """A survey (one stage, a commit its deliverable) launched, its worktree made, then ``seen``."""
    made_there = WorktreeMade(
        at=Instant(1),
        path="/src/app/places/survey--typo",
        branch=BranchName("survey/typo"),
        head=Sha("a1"),
    )
    return run(made_there, *seen, kind=SURVEY).place


def test_a_declared_prompt_is_sent_with_every_field_filled_and_its_marker_last() -> None:
    """R5: a prompt is its template filled in, its trailing blank dropped, its marker last.

    A retry adds the caller's words, stripped; only a retry does.
    """
    place = _survey(
        AgentStarted(at=Instant(2), stage=StageName("look"), attempt=1, session=SESSION, pane="%1")
    )
    first = step(S, place, AgentReady(at=Instant(3), session=SESSION))
    marker = "flume:survey--typo:look:1"
    assert [a.text for a in first.actions if isinstance(a, SendPrompt)] == [
        f"{SURVEYED}Marked {marker}.\n\n[{marker}]"
    ]
    delivered = step(S, first.place, typed(f"[{marker}]")).place
    short = step(S, delivered, NeedsSaid(at=Instant(5), words="which greeting?")).place
    retried = step(S, short, RetryAsked(at=Instant(6), words="  the one in hello.py \n")).place
    marker = "flume:survey--typo:look:2"
    assert render_prompt(retried) == (
        f"{SURVEYED}Marked {marker}.\nThis stage is being tried again. The caller's words for "
        f"this attempt:\n\nthe one in hello.py\n\n[{marker}]"
    )


# --- DELIVERY-RETYPE-UNTYPED and DELIVERY-NEVER-BEGAN: the reports, whole -----------------------


def test_a_send_never_shown_typed_is_reported_retyped_and_typed_as_the_same_send() -> None:
    """The retype is reported for its stage, in full words, and types the very same send."""
    place = _awaiting_proof()
    first = step(S, run(made(), started()).place, AgentReady(at=Instant(3), session=SESSION))
    (sent,) = first.actions
    assert isinstance(sent, SendPrompt)
    retyped = step(S, place, Tick(at=Instant(33)))
    assert retyped.actions == (
        Report(
            event=Event.PROMPT_RETYPED,
            text="send 1 of the prompt was decided but the pane never showed it typed; "
            "typing it now, as the same send",
            stage=CODE,
        ),
        sent,
    )


def test_an_agent_slow_to_take_input_is_sent_its_prompt_when_the_ready_wait_ends() -> None:
    """R5: an agent never seen ready is sent its prompt once the ready wait ends, not before."""
    place = run(made(), started(at=2)).place
    wait = S.ready_seconds
    assert step(S, place, Tick(at=Instant(2 + wait - 1))).actions == ()
    late = step(S, place, Tick(at=Instant(2 + wait)))
    assert [a.send for a in late.actions if isinstance(a, SendPrompt)] == [1]


def _never_began() -> tuple[Place, tuple[object, ...]]:
    """Both sends shown typed, neither in the transcript: the second's window passes at 63."""
    place = step(S, _awaiting_proof(), _shown_typed(3, 1)).place
    second = step(S, place, Tick(at=Instant(33)))
    assert second.actions[0] == Report(
        event=Event.PROMPT_MISSING,
        text="send 1 of the prompt is not in the transcript after 30s",
        stage=CODE,
    )
    place = step(S, second.place, _shown_typed(33, 2)).place
    last = step(S, place, Tick(at=Instant(63)))
    return last.place, last.actions


def test_a_stage_that_never_began_says_so_for_its_stage_and_ends_its_agent() -> None:
    """The second send missing: reported missing and never begun, the agent asked to end."""
    place, actions = _never_began()
    words = (
        "the prompt was sent 2 times and the transcript holds neither; "
        "retry the stage to start a fresh agent"
    )
    assert actions == (
        Report(
            event=Event.PROMPT_MISSING,
            text="send 2 of the prompt is not in the transcript after 30s",
            stage=CODE,
        ),
        Report(event=Event.NEVER_BEGAN, text=words, stage=CODE),
        EndAgent(session=SESSION, reason="the stage never began"),
    )
    assert place.stage.phase == Short(cause=ShortCause.NEVER_BEGAN, words=words)


def test_an_agent_ended_as_never_begun_takes_no_tell() -> None:
    """The agent asked to end is no longer live: a tell is refused, nothing typed into it."""
    place, _ = _never_began()
    with pytest.raises(UsageError) as caught:
        step(S, place, Told(at=Instant(64), text="are you there?"))
    assert caught.value.problems == (
        Problem(
            field="tell",
            what="no agent is live in fix--typo, so nothing was typed: fix--typo stopped short "
            "at code (never-began)",
            mend='flume retry fix--typo --words "..."',
        ),
    )


def test_a_retry_after_never_began_starts_no_agent_until_the_old_one_is_gone() -> None:
    """R4: the agent ended as never begun is waited for; only then does the fresh one start."""
    place, _ = _never_began()
    retried = step(S, place, RetryAsked(at=Instant(64), words=""))
    assert not any(isinstance(a, StartAgent) for a in retried.actions)
    gone = step(S, retried.place, AgentExited(at=Instant(65), session=SESSION))
    assert [a.attempt for a in gone.actions if isinstance(a, StartAgent)] == [2]


# --- TELL: only the live session's own typed line delivers a tell -------------------------------


def _tell_sent() -> tuple[Place, str]:
    """Tell 1 held while the agent works, then sent once it waits; the text it was sent as."""
    place = step(
        S, working(), AgentStateSeen(at=Instant(5), session=SESSION, activity=Activity.WORKING)
    ).place
    place = step(S, place, Told(at=Instant(6), text="also the docs")).place
    sent = step(S, place, AgentStateSeen(at=Instant(7), session=SESSION, activity=Activity.WAITING))
    (tell,) = [a for a in sent.actions if isinstance(a, SendTell)]
    return sent.place, tell.text


@pytest.mark.parametrize(
    ("author", "session"),
    [(Author.AGENT, SESSION), (Author.TOOL, SESSION), (Author.PERSON, SessionId("s9"))],
    ids=["the-agent-quotes-it", "a-tool-quotes-it", "typed-in-another-session"],
)
def test_a_tell_is_not_delivered_by_a_line_that_only_quotes_it(
    author: Author, session: SessionId
) -> None:
    """TELL: the marker quoted by the agent or a tool, or typed in another session, is no proof."""
    place, text = _tell_sent()
    line = TranscriptEntry(at=Instant(8), session=session, author=author, text=text)
    after = step(S, place, line)
    assert after.place.sending == place.sending
    assert not any(isinstance(a, Report) and a.event is Event.TELL_DELIVERED for a in after.actions)


def test_a_tell_typed_in_the_live_session_is_reported_delivered_for_its_stage() -> None:
    """The line typed by the user in the agent's session delivers the tell, for its stage."""
    place, text = _tell_sent()
    line = TranscriptEntry(at=Instant(8), session=SESSION, author=Author.PERSON, text=text)
    delivered = step(S, place, line)
    assert delivered.place.sending is None
    assert (
        Report(event=Event.TELL_DELIVERED, text="the transcript holds tell 1", stage=CODE)
        in delivered.actions
    )


def test_a_tell_missing_is_sent_again_when_its_window_ends_then_reported_lost() -> None:
    """TELL: a tell the transcript does not hold is sent again, then reported lost.

    The second send goes exactly when the confirmation window ends, not before; the tell is then
    reported lost for its stage, and is no longer in flight.
    """
    place, text = _tell_sent()
    assert place.sending is not None
    sent_at = place.sending.sent_at
    window = S.confirm_seconds
    early = step(S, place, Tick(at=Instant(sent_at + window - 1)))
    assert early.actions == ()
    again = step(S, early.place, Tick(at=Instant(sent_at + window)))
    assert [(a.number, a.send, a.text) for a in again.actions if isinstance(a, SendTell)] == [
        (1, 2, text)
    ]
    lost = step(S, again.place, Tick(at=Instant(sent_at + 2 * window)))
    assert lost.actions == (
        Report(
            event=Event.TELL_LOST,
            text="tell 1 was sent 2 times and the transcript holds neither; "
            "it did not reach the agent",
            stage=CODE,
        ),
    )
    assert lost.place.sending is None


def test_tells_not_known_delivered_are_dropped_in_order_and_never_reach_a_fresh_agent() -> None:
    """The agent gone, the tells not known delivered are dropped, and never sent again.

    The tell in flight and those held are reported dropped, in the order they were told, for
    their stage; none is sent to the agent a retry starts.
    """
    place, _ = _tell_sent()
    for at, text in ((8, "two"), (9, "three")):
        place = step(S, place, Told(at=Instant(at), text=text)).place
    exited = step(S, place, AgentExited(at=Instant(10), session=SESSION))
    assert exited.actions[:3] == tuple(
        Report(
            event=Event.TELL_DROPPED,
            text=f"tell {number} is not known to have reached the agent: the agent exited",
            stage=CODE,
        )
        for number in (1, 2, 3)
    )
    assert (exited.place.held, exited.place.sending) == (pvector(), None)
    fresh = SessionId("s2")
    place = step(S, exited.place, RetryAsked(at=Instant(11), words="")).place
    place = step(S, place, started(at=12, attempt=2, session=fresh)).place
    ready = step(S, place, AgentReady(at=Instant(13), session=fresh))
    marker = "flume:fix--typo:code:2"
    delivered = step(S, ready.place, typed(f"[{marker}]", at=14, session=fresh))
    waiting = step(
        S, delivered.place, AgentStateSeen(at=Instant(15), session=fresh, activity=Activity.WAITING)
    )
    later = step(S, waiting.place, Tick(at=Instant(100)))
    sent = (*ready.actions, *delivered.actions, *waiting.actions, *later.actions)
    assert not any(isinstance(a, SendTell) for a in sent)
    assert [a.attempt for a in sent if isinstance(a, SendPrompt)] == [2]


# --- R10 tidy: what is asked for, taken and kept ------------------------------------------------


def _dropped_and_gathering() -> Place:
    """A dropped fix whose agent is gone: tidy asked for its facts."""
    dropped = step(S, working(), DropAsked(at=Instant(5))).place
    return step(S, dropped, AgentExited(at=Instant(6), session=SESSION)).place


def _facts(path: str = WORKTREE, **worktree: bool) -> TidyFactsSeen:
    """Tidy's facts: a clean worktree flume made at ``path``, a branch main holds all of."""
    return TidyFactsSeen(
        at=Instant(7),
        worktree=WorktreeFacts(path=path, **{"exists": True, "made_by_flume": True, **worktree}),
        branch=BranchFacts(name=BRANCH, exists=True, base=MAIN, head=Sha("a1")),
    )


def test_tidy_asked_again_of_a_kept_place_asks_for_its_facts_with_the_callers_force() -> None:
    """R10: a finished or dropped place kept once is looked at again when tidy is asked again."""
    kept = step(S, _dropped_and_gathering(), _facts(dirty=True)).place
    assert kept.tidy == TidyNotWanted()
    asked = step(S, kept, TidyAsked(at=Instant(8), force=True))
    assert asked.actions == (GatherTidyFacts(path=WORKTREE, branch=BRANCH, base=MAIN, force=True),)


def test_what_tidy_kept_shows_on_the_place_s_row_with_why() -> None:
    """R10, "flume names it": a dirty worktree kept shows on the place's status with why."""
    kept = step(S, _dropped_and_gathering(), _facts(dirty=True)).place
    view = status(kept)
    assert len(view.kept) == 2
    assert view.kept[0].startswith(f"{WORKTREE}: holds uncommitted changes")
    assert view.kept[1] == f"{BRANCH}: checked out in a kept place: kept"
    clean = step(S, step(S, kept, TidyAsked(at=Instant(8))).place, _facts()).place
    assert status(clean).kept == pvector()


def test_tidy_takes_no_facts_about_another_worktree_on_its_branch() -> None:
    """Facts about a clean worktree at another path, even on the place's branch, are ignored."""
    place = _dropped_and_gathering()
    elsewhere = step(S, place, _facts(path="/src/app/places/fix--someone-else"))
    assert elsewhere.actions == ()
    assert elsewhere.place == attrs.evolve(place, now=Instant(7))


def test_a_place_whose_worktree_is_gone_is_reported_tidied_by_name() -> None:
    """TIDY-DONE-ON-FACTS: facts showing the worktree gone make the place tidied, named.

    Its branch gone too, which tidy did not delete: its restore is named (WF-NO-LOST-COMMIT).
    """
    facts = _facts(exists=False)
    facts = attrs.evolve(facts, branch=attrs.evolve(facts.branch, exists=False))
    tidied = step(S, _dropped_and_gathering(), facts)
    assert tidied.place.life is Life.TIDIED
    assert tidied.actions == (
        Report(
            event=Event.BRANCH_GONE,
            text="fix/typo: gone when tidied, deleted by hand; if its commits are nowhere else, "
            "restore it with git -C /src/app update-ref refs/heads/fix/typo a1",
        ),
        Report(event=Event.TIDIED, text="fix--typo tidied: its worktree is gone"),
    )


def test_a_removal_reported_for_a_place_in_flight_changes_nothing() -> None:
    """A removal reported for a place in flight leaves it as it was.

    Tidy removes only a finished or dropped place's worktree: a place in flight keeps its state,
    and a later loss of its worktree still stops it short.
    """
    place = working()
    removed = step(S, place, WorktreeRemoved(at=Instant(5), path=WORKTREE))
    assert removed.place == attrs.evolve(place, now=Instant(5))
    lost = step(S, removed.place, WorktreeLost(at=Instant(6), path=WORKTREE))
    assert isinstance(lost.place.stage.phase, Short)
    assert lost.place.stage.phase.cause is ShortCause.WORKTREE_GONE


def test_a_branch_tidy_deleted_is_kept_as_gone_until_it_is_seen_again() -> None:
    """The place keeps its branch gone, until its head is seen again.

    The shell's branch observer reads it: a branch of the same name is then taken for the
    place's only if it holds the place's last head.
    """
    place = step(S, _dropped_and_gathering(), _facts()).place
    deleted = step(S, place, BranchDeleted(at=Instant(8), branch=BRANCH)).place
    assert deleted.branch_gone
    assert not step(S, place, BranchDeleted(at=Instant(8), branch=MAIN)).place.branch_gone
    back = step(S, deleted, BranchHead(at=Instant(9), branch=BRANCH, sha=Sha("a1"))).place
    assert not back.branch_gone


# --- R11 status: whether the stage's deliverable exists -----------------------------------------


def test_a_finished_place_shows_its_deliverable_made_even_once_its_branch_moves_back() -> None:
    """R11: the deliverable that finished the place is shown made, whatever the branch does later.

    A person resets the finished survey's branch to where the stage started: its commit is no
    longer on the branch, but the place finished on it.
    """
    place = _survey(
        AgentStarted(at=Instant(2), stage=StageName("look"), attempt=1, session=SESSION, pane="%1"),
        AgentReady(at=Instant(3), session=SESSION),
        typed("[flume:survey--typo:look:1]"),
        BranchHead(at=Instant(10), branch=BranchName("survey/typo"), sha=Sha("b2")),
        AgentStateSeen(at=Instant(11), session=SESSION, activity=Activity.WAITING),
        Tick(at=Instant(20)),
    )
    assert place.life is Life.FINISHED
    reset = step(
        S, place, BranchHead(at=Instant(30), branch=BranchName("survey/typo"), sha=Sha("a1"))
    )
    assert reset.place.head == Sha("a1")
    assert status(reset.place).deliverable_exists


def test_a_place_dropped_before_its_deliverable_and_tidied_shows_none() -> None:
    """R11: a tidied place that never finished shows no deliverable: only finishing counts one."""
    facts = _facts(exists=False)
    facts = attrs.evolve(facts, branch=attrs.evolve(facts.branch, exists=False))
    tidied = step(S, _dropped_and_gathering(), facts).place
    assert tidied.life is Life.TIDIED
    assert not status(tidied).deliverable_exists


def test_status_shows_a_place_stopped_short_field_for_field() -> None:
    """R11: status of a marked fix whose agent said what it needs: every field, as shown."""
    launched = Launched(at=Instant(0), launch=launch(mark="ticket-7"), kind=FIX, setup=pvector())
    place = step(S, None, launched).place
    for seen in (
        made(),
        started(),
        AgentReady(at=Instant(3), session=SESSION),
        typed("[flume:fix--typo:code:1]"),
        NeedsSaid(at=Instant(5), words="which greeting?"),
    ):
        place = step(S, place, seen).place
    assert status(place) == PlaceStatus(
        place=PlaceName("fix--typo"),
        name=WorkName("typo"),
        repository="/src/app",
        path=WORKTREE,
        kind=KindName("fix"),
        branch=BRANCH,
        base=MAIN,
        mark="ticket-7",
        life=Life.ACTIVE,
        stage=CODE,
        attempt=1,
        sends=1,
        phase=PhaseWord.SHORT,
        agent=Activity.WORKING,
        deliverable="a new commit on the place's branch",
        deliverable_exists=False,
        submission=Submission.NONE,
        submission_note="",
        tasks=None,
        validation=None,
        short_cause="needs",
        needs="which greeting?",
        waits_on_caller=False,
        completed=pvector(),
        tells_held=0,
        updated_at=Instant(5),
        host=None,
    )


def test_status_shows_the_tasks_the_agent_ticks() -> None:
    """R11: a change's tasks, as its working tree shows them ticked, are in its status."""
    change = BUILTIN_KINDS[KindName("change")]
    launched = Launched(
        at=Instant(0), launch=launch(kind=change.name), kind=change, setup=pvector()
    )
    place = step(S, None, launched).place
    ticked = step(S, place, ChangeSeen(at=Instant(1), written=True, ticked=2, total=5)).place
    assert status(ticked).tasks == (2, 5)


def test_status_counts_the_tell_in_flight_with_those_held() -> None:
    """R11: the tells not yet known delivered are counted: the one in flight and those held."""
    place, _ = _tell_sent()
    assert status(place).tells_held == 1
    for at, text in ((8, "two"), (9, "three")):
        place = step(S, place, Told(at=Instant(at), text=text)).place
    assert status(place).tells_held == 3


def test_a_landing_blocked_then_answered_shows_the_answer_not_the_block() -> None:
    """LAND-BASE-BLOCKED-WAITS: a landing tried again after a block shows its answer once given.

    Until the lander answers it shows blocked; then checks failed or landed, whatever blocks came
    before.
    """
    place = submitting()
    place = step(S, place, LandingBlocked(at=Instant(26), reason="index.lock is held")).place
    assert place.land_retry_at is not None
    again = step(S, place, Tick(at=place.land_retry_at)).place
    assert status(again).submission is Submission.BLOCKED
    later = Instant(place.land_retry_at + 1)
    failed = step(S, again, ChecksFailed(at=later, reason="tests failed", output="1 failed"))
    assert status(failed.place).submission is Submission.CHECKS_FAILED
    landed = step(S, again, Landed(at=later, base_sha=Sha("m2")))
    assert status(landed.place).submission is Submission.LANDED
