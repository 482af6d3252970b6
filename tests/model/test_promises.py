"""Promises a plausible bug in the core would break, each held by a deterministic example.

Each test here reaches a state the state machines reach rarely or never at a small profile: a
held tell flushed once the stage delivered, every phase's word, a retry of a stage whose agent
is still live, a tell held before its agent started asking a person, a branch one commit ahead
of its base, a worktree flume made that a person replaced, untracked files alone, a report file
older than its stage. Each was checked by breaking its promise in flume/core on purpose and
seeing the test fail (docs/mutation.md).
"""

from __future__ import annotations

import typing
from collections.abc import Callable

import attrs
import pytest

from flume.core.actions import (
    DeleteBranch,
    EndAgent,
    Event,
    KeepBranch,
    KeepPlace,
    RemoveWorktree,
    Report,
    SendPrompt,
    SendTell,
    StartAgent,
)
from flume.core.errors import Problem, UsageError
from flume.core.ids import BranchName, Instant, KindName, Marker, SessionId, Sha, StageName
from flume.core.kinds import BUILTIN_KINDS
from flume.core.launch import Panes
from flume.core.observations import (
    Activity,
    AgentExited,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    BranchFacts,
    BranchHead,
    Launched,
    NeedsSaid,
    ReportSeen,
    RetryAsked,
    Tick,
    TidyAsked,
    Told,
    WorktreeFacts,
    WorktreeMade,
)
from flume.core.place import (
    AwaitingInput,
    AwaitingWord,
    Delivered,
    Delivering,
    Fanned,
    Finalizing,
    Judging,
    Life,
    Merging,
    PauseCause,
    Paused,
    Place,
    Queued,
    Short,
    ShortCause,
    StagePhase,
    Starting,
    Working,
    evolve,
)
from flume.core.status import phase_word, status
from flume.core.step import step
from flume.core.tidy import plan
from tests.model.machine import PHASE_WORDS
from tests.model.test_rules import SESSION, S, launch, started, typed, working

NEW = SessionId("s2")

WORDS = PHASE_WORDS

PHASES: list[StagePhase] = [
    AwaitingWord(),
    Queued(),
    Starting(since=Instant(1)),
    AwaitingInput(session=SESSION, since=Instant(1)),
    Delivering(session=SESSION, sent_at=Instant(1)),
    Working(session=SESSION),
    Delivered(at=Instant(1)),
    Short(cause=ShortCause.NEEDS, words="which API?"),
    Judging(session=SESSION, since=Instant(1)),
    Paused(cause=PauseCause.APPROVAL, words="step review waits for approval"),
    Fanned(since=Instant(1)),
    Merging(since=Instant(1)),
    Finalizing(since=Instant(1)),
]


def says(activity: Activity, at: float, session: SessionId = SESSION) -> AgentStateSeen:
    """A hook says what the agent does."""
    return AgentStateSeen(at=Instant(at), session=session, activity=activity)


def sent_tells(actions: tuple[object, ...]) -> list[SendTell]:
    """The tells among ``actions``."""
    return [a for a in actions if isinstance(a, SendTell)]


# --- TELL-NEVER-MOVES-STAGE: a tell flushed once the stage delivered --------------------------


def test_a_tell_flushed_to_a_delivered_stage_leaves_it_delivered() -> None:
    """A tell held while the agent works is sent once it waits: its stage stays delivered.

    The agent commits (the stage delivers) while the tell is held; the step that sends the tell
    is not the step that told it, and the stage neither moves back to working nor on.
    """
    place = step(S, working(), says(Activity.WORKING, 5)).place
    place = step(S, place, Told(at=Instant(6), text="also the docs")).place
    assert len(place.held) == 1
    place = step(S, place, BranchHead(at=Instant(7), branch=BranchName("fix/typo"), sha=Sha("b2")))
    assert isinstance(place.place.stage.phase, Delivered)
    before = place.place
    flushed = step(S, before, says(Activity.WAITING, 8))
    assert [t.number for t in sent_tells(flushed.actions)] == [1]
    assert flushed.place.stage == before.stage
    assert flushed.place.completed == before.completed
    assert status(flushed.place).phase.value == "delivered"


def test_a_tell_flushed_to_a_short_stage_leaves_it_short() -> None:
    """A tell held while the agent works, sent once it waits after stopping short: still short."""
    place = step(S, working(), says(Activity.WORKING, 5)).place
    place = step(S, place, Told(at=Instant(6), text="use the other API")).place
    place = step(S, place, NeedsSaid(at=Instant(7), words="which API?")).place
    assert isinstance(place.stage.phase, Short)
    flushed = step(S, place, says(Activity.WAITING, 8))
    assert [t.number for t in sent_tells(flushed.actions)] == [1]
    assert flushed.place.stage == place.stage


# --- R11: every phase's word --------------------------------------------------------------------


def test_every_phase_is_named() -> None:
    """The table below names every phase the core has: a new phase needs its word here."""
    assert {type(p) for p in PHASES} == set(typing.get_args(StagePhase)) == set(WORDS)


@pytest.mark.parametrize("phase", PHASES, ids=lambda p: type(p).__name__)
def test_every_phase_has_its_word(phase: StagePhase) -> None:
    """Status names each phase of an active place by its own word, as PlaceStatus documents."""
    place = evolve(working(), stage=attrs.evolve(working().stage, phase=phase))
    assert phase_word(phase).value == WORDS[type(phase)]
    assert status(place).phase.value == WORDS[type(phase)]


@pytest.mark.parametrize("life", [Life.FINISHED, Life.DROPPED, Life.TIDIED])
def test_a_place_no_longer_active_shows_its_life(life: Life) -> None:
    """Once the place is finished, dropped or tidied, status shows its life, not its phase."""
    assert status(evolve(working(), life=life)).phase.value == life.value


# --- RETRY-FRESH-AGENT: a retry while the agent still lives --------------------------------------


def test_a_retry_ends_the_live_agent_and_sends_only_to_a_fresh_one() -> None:
    """The stage stopped short with its agent alive: retry ends it, and the prompt waits.

    No new agent starts, nor is anything sent, until the old one is seen gone; the retried
    prompt goes to the fresh session, never the old one.
    """
    short = step(S, working(), NeedsSaid(at=Instant(6), words="which API?")).place
    assert short.agent is not None
    assert not short.agent.ending
    retried = step(S, short, RetryAsked(at=Instant(7), words="use v2"))
    assert [a.session for a in retried.actions if isinstance(a, EndAgent)] == [SESSION]
    assert not any(isinstance(a, StartAgent | SendPrompt) for a in retried.actions)
    waiting = step(S, retried.place, says(Activity.WAITING, 8))
    assert not any(isinstance(a, StartAgent | SendPrompt) for a in waiting.actions)
    assert not any(
        isinstance(a, SendPrompt) for a in step(S, waiting.place, Tick(at=Instant(90))).actions
    )
    gone = step(S, waiting.place, AgentExited(at=Instant(9), session=SESSION))
    assert [a.attempt for a in gone.actions if isinstance(a, StartAgent)] == [2]
    fresh = step(S, gone.place, started(at=10, attempt=2, session=NEW)).place
    ready = step(S, fresh, AgentReady(at=Instant(11), session=NEW))
    (prompt,) = [a for a in ready.actions if isinstance(a, SendPrompt)]
    assert (prompt.session, prompt.attempt) == (NEW, 2)
    assert "use v2" in prompt.text


# --- TELL-HELD-WHILE-WORKING: held, then the agent asks a person ---------------------------------


def test_a_tell_held_before_the_agent_asks_waits_until_it_is_answered() -> None:
    """A tell held while the agent works is not typed once the agent asks a person.

    It waits through the question, whatever time passes, and goes once the agent waits.
    """
    place = step(S, working(), says(Activity.WORKING, 5)).place
    place = step(S, place, Told(at=Instant(6), text="also the docs")).place
    asking = step(S, place, says(Activity.ASKING, 7))
    assert not sent_tells(asking.actions)
    later = step(S, asking.place, Tick(at=Instant(500)))
    assert not sent_tells(later.actions)
    assert len(later.place.held) == 1
    answered = step(S, later.place, says(Activity.WAITING, 501))
    assert [t.number for t in sent_tells(answered.actions)] == [1]


# --- R10 tidy: the edges of its facts ------------------------------------------------------------

WORKTREE = "/src/app/places/fix--typo"
BRANCH = BranchName("fix/typo")


def tidy_plan(
    *,
    life: Life = Life.FINISHED,
    kind: str = "fix",
    force: bool = False,
    made: bool = True,
    **facts: object,
) -> tuple[object, ...]:
    """Tidy's plan for a place flume made, on a clean worktree of its own and ``facts``."""
    worktree = {
        "exists": True,
        "made_by_flume": True,
        "dirty": False,
        "untracked": False,
        "plain": False,
    }
    branch = {"exists": True, "base_lacks": 0}
    for key, value in facts.items():
        (worktree if key in worktree else branch)[key] = value
    return plan(
        kind=KindName(kind),
        life=life,
        made=made,
        worktree=WorktreeFacts(path=WORKTREE, **worktree),  # type: ignore[arg-type]
        branch=BranchFacts(
            name=BRANCH,
            base=BranchName("main"),
            head=Sha("b2"),
            **branch,  # type: ignore[arg-type]
        ),
        force=force,
    )


@pytest.mark.parametrize("life", [Life.FINISHED, Life.DROPPED])
def test_tidy_keeps_a_branch_one_commit_ahead(life: Life) -> None:
    """TIDY-KEEPS-AHEAD-BRANCH: one commit its base lacks (a squash landing leaves one) is kept."""
    actions = tidy_plan(life=life, base_lacks=1)
    assert actions == (
        RemoveWorktree(path=WORKTREE, force=False),
        KeepBranch(branch=BRANCH, reason="fix/typo holds 1 commit main lacks: kept"),
    )
    assert tidy_plan(life=life, base_lacks=0)[-1] == DeleteBranch(
        branch=BRANCH, base=BranchName("main"), head_was=Sha("b2")
    )


def test_tidy_never_touches_a_worktree_a_person_put_in_flumes_place() -> None:
    """TIDY-ONLY-OURS: flume made the place, a person replaced its worktree: both are kept."""
    actions = tidy_plan(made_by_flume=False)
    assert actions == (
        KeepPlace(path=WORKTREE, reason="made by hand: flume never touches it"),
        KeepBranch(branch=BRANCH, reason="its worktree was not made by flume: kept"),
    )


@pytest.mark.parametrize(
    ("dirty", "untracked", "what"),
    [
        (False, True, "untracked files"),
        (True, False, "uncommitted changes"),
        (True, True, "uncommitted changes and untracked files"),
    ],
)
def test_tidy_keeps_a_worktree_with_untracked_files_alone(
    dirty: bool, untracked: bool, what: str
) -> None:
    """TIDY-DIRTY-NEEDS-FORCE: untracked files alone keep the worktree; force removes it."""
    kept = tidy_plan(dirty=dirty, untracked=untracked)
    assert kept == (
        KeepPlace(
            path=WORKTREE,
            reason=f"holds {what}: kept; commit them, or tidy --force to discard them",
        ),
        KeepBranch(branch=BRANCH, reason="checked out in a kept place: kept"),
    )
    forced = tidy_plan(dirty=dirty, untracked=untracked, force=True)
    assert forced[0] == RemoveWorktree(path=WORKTREE, force=True)


# --- STAGE-DELIVERABLE-SINCE-START: a report file older than its stage ---------------------------


def question_working(at: float) -> Place:
    """A question whose session stage's prompt was delivered; the stage started at ``at``."""
    question = BUILTIN_KINDS[KindName("question")]
    kind = question.name
    place = step(S, None, Launched(at=Instant(0), launch=launch(kind=kind), kind=question)).place
    made = WorktreeMade(at=Instant(at), path=place.path, branch=place.branch, head=Sha("a1"))
    place = step(S, place, made).place
    session = StageName("session")
    place = step(
        S,
        place,
        AgentStarted(at=Instant(at + 1), stage=session, attempt=1, session=SESSION, pane="%1"),
    ).place
    place = step(S, place, AgentReady(at=Instant(at + 2), session=SESSION)).place
    place = step(S, place, typed("[flume:question--typo:session:1]", at=at + 3)).place
    assert isinstance(place.stage.phase, Working)
    return place


def test_a_report_written_before_the_stage_started_is_not_its_deliverable() -> None:
    """A report file last written before its stage started is not the stage's deliverable.

    The stage stays working, however quiet its agent; the same file written since delivers it.
    """
    place = question_working(at=100)
    started_at = place.stage.started_at
    old = ReportSeen(at=Instant(105), path="conclusion.md", modified_at=Instant(started_at - 1))
    place = step(S, place, old).place
    place = step(S, place, says(Activity.WAITING, 106)).place
    still = step(S, place, Tick(at=Instant(500)))
    assert isinstance(still.place.stage.phase, Working)
    assert still.place.life is Life.ACTIVE
    new = ReportSeen(at=Instant(501), path="conclusion.md", modified_at=Instant(started_at))
    assert isinstance(step(S, still.place, new).place.stage.phase, Delivered)


# --- Exact words and fields: what mutation testing found no test held ---------------------------


def _printed(place: Place) -> Place:
    printed = attrs.evolve(place.launch.agent, panes=Panes.PRINT)
    return evolve(place, launch=attrs.evolve(place.launch, agent=printed))


def _ending(place: Place) -> Place:
    assert place.agent is not None
    return evolve(place, agent=attrs.evolve(place.agent, ending=True))


#: REFUSAL-NAMES-WAY: no agent, and nothing that waits on the caller: where to see it.
NO_AGENT = Problem(
    field="tell",
    what="no agent is live in fix--typo, so nothing was typed: fix--typo has no agent live at "
    "code: one is ending, or none started yet",
    mend="nothing waits on you now: flume status fix--typo shows where it stands",
)
FINISHED = Problem(
    field="tell",
    what="no agent is live in fix--typo, so nothing was typed: fix--typo finished",
    mend="nothing waits on you now: flume status fix--typo shows where it stands",
)


@pytest.mark.parametrize(
    ("make", "text", "problem"),
    [
        (
            working,
            " ",
            Problem(field="text", what="the tell is empty", mend="say what the agent should hear"),
        ),
        (lambda: _ending(working()), "x", NO_AGENT),
        (lambda: evolve(working(), life=Life.FINISHED), "x", FINISHED),
        (lambda: evolve(working(), agent=None), "x", NO_AGENT),
        (
            lambda: _printed(working()),
            "x",
            Problem(
                field="tell",
                what="the agent of fix--typo runs in a terminal of your own (--panes print), "
                "where flume cannot type, so nothing was typed",
                mend="type your words into that terminal yourself",
            ),
        ),
        (
            lambda: step(S, working(), says(Activity.ASKING, 5)).place,
            "x",
            Problem(
                field="tell",
                what="the agent of fix--typo is asking a person a question, so nothing was typed",
                mend="answer it in its pane (flume attach fix--typo), then tell it again",
            ),
        ),
    ],
    ids=["empty", "ending", "finished", "no-agent", "printed", "asking"],
)
def test_every_tell_refusal_names_its_field_and_way_out(
    make: Callable[[], Place], text: str, problem: Problem
) -> None:
    """TELL-REFUSED: each refusal names the field, what is wrong and the way out, word for word."""
    with pytest.raises(UsageError) as caught:
        step(S, make(), Told(at=Instant(9), text=text))
    assert caught.value.problems == (problem,)
    assert caught.value.exit_status == 1


def test_a_tell_is_sent_to_the_live_session_with_its_own_marker() -> None:
    """The tell goes to the agent's session, its marker naming the place and the tell's number."""
    place = step(S, working(), says(Activity.WORKING, 5)).place
    place = step(S, place, Told(at=Instant(6), text="one")).place
    place = step(S, place, Told(at=Instant(6), text="two")).place
    first = step(S, place, says(Activity.WAITING, 7))
    marker = Marker("flume:fix--typo:tell:1")
    assert sent_tells(first.actions) == [
        SendTell(session=SESSION, number=1, send=1, marker=marker, text=f"one\n\n[{marker}]")
    ]
    typed_one = step(S, first.place, typed(f"one\n\n[{marker}]", at=8))
    second = step(S, typed_one.place, says(Activity.WAITING, 9))
    marker = Marker("flume:fix--typo:tell:2")
    assert sent_tells(second.actions) == [
        SendTell(session=SESSION, number=2, send=1, marker=marker, text=f"two\n\n[{marker}]")
    ]


def test_tidy_asked_in_flight_keeps_the_place_naming_its_stage() -> None:
    """Tidy asked of a place in flight keeps it, naming its path and stage and the way out."""
    decided = step(S, working(), TidyAsked(at=Instant(9), force=False))
    assert decided.actions == (
        KeepPlace(path=WORKTREE, reason="in flight (stage code): drop it to tidy it"),
    )


@pytest.mark.parametrize(
    ("facts", "kept"),
    [
        (
            {"made": False, "exists": False, "made_by_flume": False},
            (KeepBranch(branch=BRANCH, reason="flume did not make its place: kept"),),
        ),
        (
            {"plain": True},
            (
                KeepPlace(
                    path=WORKTREE,
                    reason="flume's worktree here is gone and a plain folder stands in its "
                    "place: flume never removes it; look inside, remove it by hand, then run "
                    "flume tidy again",
                ),
                KeepBranch(branch=BRANCH, reason="its place's folder is kept: kept"),
            ),
        ),
        (
            {"life": Life.ACTIVE},
            (
                KeepPlace(path=WORKTREE, reason="in flight (active): drop it to tidy it"),
                KeepBranch(branch=BRANCH, reason="its place is in flight: kept"),
            ),
        ),
    ],
    ids=["never-made", "plain-folder", "in-flight"],
)
def test_tidy_names_every_thing_it_keeps_with_its_reason(
    facts: dict[str, object], kept: tuple[object, ...]
) -> None:
    """R10: each place and branch tidy keeps is named with its reason, word for word."""
    assert tidy_plan(**facts) == kept  # type: ignore[arg-type]


def test_a_held_tell_is_reported_held_for_its_stage() -> None:
    """A tell held is reported with its number, for the stage it was told in."""
    place = step(S, working(), says(Activity.WORKING, 5)).place
    held = step(S, place, Told(at=Instant(6), text="one"))
    assert held.actions == (
        Report(event=Event.TELL_HELD, text="tell 1 is held until the agent waits", stage="code"),
    )
    again = step(S, held.place, Told(at=Instant(7), text="two"))
    assert [t.number for t in again.place.held] == [1, 2]
    assert again.place.tells_given == 2
