"""A person's words, one path at a time: a pass, the refusals naming what applies, what goes on.

The machines check these over generated runs (WF-PERSON-PASSES and REFUSAL-NAMES-WAY in
``test_workflow_run.py``); the examples here pin the words a person reads.
"""

from __future__ import annotations

import attrs
import pytest
from pyrsistent import pvector

from flume.core.actions import Event
from flume.core.applies import unlanded_words, way_on, went_on
from flume.core.errors import UsageError
from flume.core.ids import KindName, StageName
from flume.core.kinds import Budgets, Commit, Finalize, Kind, Sequence, Step
from flume.core.observations import (
    ApproveAsked,
    BudgetRaised,
    ChildNews,
    PassAsked,
    ProceedAsked,
    ResumeAsked,
    RetryAsked,
    Tick,
    Told,
)
from flume.core.place import (
    Finalizing,
    Life,
    PauseCause,
    Paused,
    Short,
    ShortCause,
    Submission,
    evolve,
)
from flume.core.status import status
from flume.core.step import step
from tests.model.test_finalize import body_done
from tests.model.test_finalize import world_of as finalizing
from tests.model.test_lanes import sliced
from tests.model.test_lanes import world_of as lanes_world
from tests.model.test_messages import ask, talking
from tests.model.test_orchestrate import crew, spawn
from tests.model.test_orchestrate import world_of as crew_world
from tests.model.test_workflow_run import S, commit_and_end, review, reviewed, through_plan
from tests.model.world import FakeWorld


def world_of(kind: Kind) -> FakeWorld:
    """A world that launched ``kind``."""
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    return world


def blocked() -> FakeWorld:
    """The review of pass 1 writes a verdict of blocked: the run pauses gate-blocked."""
    world = world_of(reviewed(most=2))
    through_plan(world)
    review(world, "blocked")
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.GATE_BLOCKED
    return world


def refusal(world: FakeWorld, seen: object) -> UsageError:
    """``seen`` refused, with nothing journaled."""
    journaled = len(world.journal)
    refused = world.feed(seen)  # type: ignore[arg-type]
    assert isinstance(refused, UsageError)
    assert refused.exit_status == 1
    assert len(world.journal) == journaled
    return refused


def test_a_person_passes_a_blocked_gate_and_the_loop_goes_on_to_fix() -> None:
    """The review said blocked; a person passes it with words: fix runs, as on revise."""
    world = blocked()
    before = world.place
    assert world.feed(PassAsked(at=world.instant(), why="  the review misread the diff ")) is None
    assert world.place is not None
    (passed,) = [r for r in world.reports_of(Event.GATE_PASSED) if "by a person" in r.text]
    assert passed.text == (
        "the gate of review-loop@1/review (attempt 1) passed by a person, blocked as it was "
        "(the review says blocked): the review misread the diff"
    )
    assert world.place.stage.key == "review-loop@1/fix"
    view = status(world.place)
    assert [(p.key, p.attempt, p.why) for p in world.place.passes] == [
        ("review-loop@1/review", 1, "the review misread the diff")
    ]
    assert view.paused is None
    assert went_on(before, world.place, "passed") == (
        "reviewed--x: passed; step review-loop@1/fix starts (attempt 1)"
    )


def test_a_pass_where_no_gate_is_blocked_is_refused_naming_what_applies() -> None:
    """Working, or paused for an approval: refused, naming the work or ``flume approve``."""
    world = world_of(reviewed(most=1))
    assert world.deliver()
    working = refusal(world, PassAsked(at=world.instant(), why="go"))
    assert str(working) == (
        "pass: reviewed--x works on plan; nothing there waits on a person's pass: no gate of it "
        "is blocked; nothing waits on you now: flume status reviewed--x shows where it stands"
    )
    world.artifacts.add("PLAN.md")
    world.end_turn()
    review(world, "done")
    assert world.deliver()
    world.end_turn()
    approval = refusal(world, PassAsked(at=world.instant(), why="go"))
    assert approval.problems[0].mend == "flume approve reviewed--x"
    assert "is paused at sign-off (approval: step sign-off waits for approval)" in str(approval)


def test_a_pass_for_another_step_is_refused_for_the_step() -> None:
    """STEP-NAMED holds for a pass: one named for the plan is refused at the review."""
    world = blocked()
    refused = refusal(world, PassAsked(at=world.instant(), why="go", step="plan"))
    assert [p.field for p in refused.problems] == ["step"]
    assert world.feed(PassAsked(at=world.instant(), why="go", step="review")) is None


def test_approve_of_a_run_waiting_on_a_question_names_flume_answer() -> None:
    """Not 'is not paused': the run waits on a question, and flume answer is what applies."""
    world = world_of(talking())
    assert world.deliver()
    assert ask(world, "Which API?", "old", "new") is None
    refused = refusal(world, ApproveAsked(at=world.instant()))
    assert str(refused) == (
        "approve: talk--x waits on a question (q1: Which API? (options: old, new)); nothing "
        'there waits on an approval; flume answer talk--x q1 "..."'
    )
    resumed = refusal(world, ResumeAsked(at=world.instant()))
    assert resumed.problems[0].mend == 'flume answer talk--x q1 "..."'


def test_a_tell_to_a_finished_run_advises_no_retry() -> None:
    """A tell with no agent live names the way on where there is one, and no refused retry."""
    kind = Kind(
        name=KindName("one"),
        prefix="one",
        body=Sequence(
            blocks=pvector([Step(name=StageName("code"), prompt="Code.", deliverable=Commit())])
        ),
    )
    world = world_of(kind)
    assert world.deliver()
    commit_and_end(world)
    assert world.place is not None
    assert world.place.life is Life.FINISHED
    told = refusal(world, Told(at=world.instant(), text="and the docs"))
    assert "retry" not in str(told)
    assert str(told) == (
        "tell: no agent is live in one--x, so nothing was typed: one--x finished; nothing waits "
        "on you now: flume status one--x shows where it stands"
    )
    again = refusal(world, RetryAsked(at=world.instant()))
    assert "finished" in str(again)


def test_a_finished_run_with_nothing_of_its_own_has_nothing_to_land() -> None:
    """No commit since its base, a lane, or a finalize: no words about landing."""
    world = world_of(reviewed(most=1))
    assert world.place is not None
    finished = evolve(world.place, life=Life.FINISHED, start=world.place.head)
    assert unlanded_words(finished) is None  # no commit: its head is its base's
    assert way_on(finished).waits == "finished"
    assert way_on(evolve(finished, life=Life.TIDIED)).waits == "was tidied"
    committed = evolve(finished, head=world.git.commit(world.place.branch, 1.0))
    assert unlanded_words(committed) is not None
    assert unlanded_words(evolve(committed, start=None)) is None  # no base known: nothing said
    pushing = attrs.evolve(committed.kind, finalize=Finalize(push="origin"))
    assert unlanded_words(evolve(committed, kind=pushing)) is None


def test_a_raise_of_a_budget_the_kind_sets_none_of_is_refused_naming_the_spent_one() -> None:
    """Paused on turns, a kind with no token budget: --tokens is refused, nothing journaled."""
    world = world_of(reviewed(most=1, budgets=Budgets(turns=1, retries=3)))
    assert world.deliver()
    world.end_turn()
    tokens = refusal(world, BudgetRaised(at=world.instant(), tokens=1000))
    assert str(tokens) == (
        "raise: reviewed--x sets no tokens budget to raise; it is paused at plan: budget turns "
        "spent; PLAN.md does not exist in the worktree; flume raise reviewed--x --turns +N"
    )
    retries = refusal(world, BudgetRaised(at=world.instant(), retries=2))
    assert "the raise leaves its turns budget as it was" in str(retries)
    assert world.feed(BudgetRaised(at=world.instant(), turns=5, retries=1)) is None


def test_resume_and_raise_say_truly_what_starts_next() -> None:
    """Never "starts again" for a step that never started; again only for the one paused."""
    world = world_of(reviewed(most=1, budgets=Budgets(turns=3)))
    through_plan(world)
    review(world, "revise")
    assert world.deliver()
    commit_and_end(world)
    before = world.place
    assert before is not None
    assert before.stage.key == "sign-off"
    assert world.feed(BudgetRaised(at=world.instant(), turns=5)) is None
    assert world.place is not None
    assert went_on(before, world.place, "budgets raised") == (
        "reviewed--x: budgets raised; step sign-off starts (attempt 1)"
    )
    again = blocked()
    paused = again.place
    assert again.feed(ResumeAsked(at=again.instant())) is None
    assert again.place is not None
    assert went_on(paused, again.place, "resumed") == (
        "reviewed--x: resumed; step review-loop@1/review starts again (attempt 2)"
    )


def test_resume_of_a_failed_push_says_the_finalize_goes_on() -> None:
    """A push that failed pauses finalize; resumed, no step runs again: the push goes on."""
    world = finalizing(Finalize(push="origin"))
    world.remote_up = False
    body_done(world)
    before = world.place
    assert before is not None
    decision = step(S, before, ResumeAsked(at=world.instant()))
    assert isinstance(decision.place.stage.phase, Finalizing)
    assert went_on(before, decision.place, "resumed") == (
        "ship--x: resumed; its finalize goes on: its branch is pushed (no step runs again)"
    )
    world.remote_up = True
    assert world.feed(ResumeAsked(at=world.instant())) is None
    assert went_on(before, world.place, "resumed") == (
        "ship--x: resumed; nothing was left to run, so the run ends"
    )


@pytest.mark.parametrize(
    ("make", "waits", "command"),
    [
        (lambda p: evolve(p, life=Life.DROPPED), "was dropped; flume tidy removes its place", ""),
        (lambda p: evolve(p, life=Life.MAKING), "is having its place made", ""),
    ],
    ids=["dropped", "making"],
)
def test_a_place_not_running_says_so(make: object, waits: str, command: str) -> None:
    """Dropped, or still being made: what it waits on, and no command of a person's."""
    world = world_of(reviewed(most=1))
    assert world.place is not None
    way = way_on(make(world.place))  # type: ignore[operator]
    assert (way.waits, way.command) == (waits, command)


def test_proceed_refused_at_a_running_stage_and_taken_where_it_waits() -> None:
    """A stage that waits on the word names flume proceed; elsewhere proceed is refused."""
    waiting = Kind(
        name=KindName("crew"),
        prefix="crew",
        body=Sequence(
            blocks=pvector(
                [
                    Step(name=StageName("plan"), prompt="Plan.", deliverable=Commit()),
                    Step(
                        name=StageName("code"),
                        prompt="Code.",
                        deliverable=Commit(),
                        waits_on_caller=True,
                    ),
                ]
            )
        ),
    )
    world = world_of(waiting)
    assert world.deliver()
    commit_and_end(world)
    told = refusal(world, Told(at=world.instant(), text="hello"))
    assert told.problems[0].mend == "flume proceed crew--x"
    assert world.feed(ProceedAsked(at=world.instant())) is None
    world.feed(Tick(at=world.instant()))
    assert world.place is not None
    assert world.place.stage.name == "code"


def test_each_way_on_a_person_meets_names_its_command() -> None:
    """A child paused, a worktree gone, a lead's question, a landing, work not landed: each said."""
    world = crew_world(crew(most=2))
    assert spawn(world) is None
    assert world.place is not None
    assert way_on(world.place).waits.startswith("works on ")  # its child runs, not paused
    assert (
        world.feed(
            ChildNews(
                at=world.instant(), lane="coder-1", id="paused:coder#1:stalled", text="stalled"
            )
        )
        is None
    )
    assert world.place is not None
    child = way_on(world.place)
    assert (child.waits, child.command) == (
        "waits on its child coder-1 (crew--x+coder-1), which stalled",
        "flume status crew--x+coder-1",
    )

    talk = world_of(talking())
    assert talk.deliver()
    assert ask(talk, "Which API?") is None
    assert talk.place is not None
    led = evolve(talk.place, launch=attrs.evolve(talk.place.launch, led=True))
    assert way_on(led).waits == "asks its lead q1, which its lead answers"
    done = reviewed(most=1)
    working = world_of(done)
    assert working.deliver()
    assert working.place is not None
    landing = evolve(working.place, submission=Submission.SUBMITTED)
    assert way_on(landing).waits == "is landing plan"
    short = attrs.evolve(working.place.stage, phase=Short(cause=ShortCause.NEEDS, words="a key"))
    gone = evolve(working.place, stage=short, worktree_gone=True)
    assert (way_on(gone).waits, way_on(gone).command) == (
        "stopped short at plan: its worktree is gone",
        "flume drop reviewed--x",
    )
    finished = evolve(
        working.place,
        life=Life.FINISHED,
        start=working.place.head,
        head=working.git.commit(working.place.branch, 2.0),
    )
    assert way_on(finished).waits.startswith("finished: its work is on branch reviewed/x")
    assert status(finished).unlanded == (
        "its work is on branch reviewed/x, not landed on main: land it with git merge "
        "reviewed/x in the checkout of main, then flume tidy"
    )
    paused = attrs.evolve(short, phase=Paused(cause=PauseCause.BUDGET, words="budget turns spent"))
    again = evolve(working.place, stage=paused)
    assert went_on(working.place, again, "raised") == (
        "reviewed--x: raised, but it is paused again at plan: budget turns spent"
    )
    lanes = lanes_world(sliced())
    assert lanes.place is not None
    assert went_on(None, lanes.place, "resumed") == (
        f"{lanes.place.launch.place}: resumed; the lanes of parallel {lanes.place.stage.key} start"
    )
