"""A workflow's run in one lane: loops, gates judged at a turn's end, budgets that pause.

The machine launches a kind that plans (an artifact gate), loops a review (a verdict gate) and a
fix (a commit) at most ``max`` passes, then waits for a person's approval, within budgets drawn
for the run. Its agents do anything an agent may: write any verdict or none, make the artifact or
not, commit, end their turns with or without usage; people approve, resume and raise. The world
(``tests/model/world.py``) reads gates as the shell does. Example tests below walk the paths the
issue names, one by one.
"""

from __future__ import annotations

from collections import Counter

import attrs
import pytest
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from pyrsistent import pvector

from flume.core.actions import Event, JudgeGate, Report, SendPrompt, SendTell, StartAgent
from flume.core.errors import UsageError
from flume.core.ids import BlockName, Instant, KindName, StageName
from flume.core.kinds import (
    Approval,
    Artifact,
    Budgets,
    Commit,
    Kind,
    Loop,
    OnMax,
    Sequence,
    Step,
    Verdict,
)
from flume.core.observations import (
    Activity,
    AgentStateSeen,
    ApproveAsked,
    BudgetRaised,
    GateRead,
    Launched,
    PassAsked,
    ResumeAsked,
    RetryAsked,
    Tick,
    Told,
)
from flume.core.place import (
    Judging,
    Life,
    PauseCause,
    Paused,
    Short,
    Working,
)
from flume.core.settings import Settings
from flume.core.status import status
from flume.core.step import pending, step
from flume.core.workflow.tree import Pass, Position, advance, first, key
from flume.core.workflow.versions import compare
from tests.model.refusals import check_refusals
from tests.model.world import FakeWorld

S = Settings()


def reviewed(
    *,
    most: int = 3,
    on_max: OnMax = OnMax.CONTINUE,
    budgets: Budgets | None = None,
    fix_prompt: str = "Mend the findings in $board/review/verdict.json; commit.",
) -> Kind:
    """Plan (an artifact), a review loop (review's verdict, fix's commit), then an approval."""
    review = Step(
        name=StageName("review"),
        prompt="Review pass $pass of $max. Write $verdict.",
        deliverable=Verdict(),
    )
    fix = Step(
        name=StageName("fix"),
        prompt=fix_prompt,
        deliverable=Commit(),
    )
    return Kind(
        name=KindName("reviewed"),
        prefix="reviewed",
        body=Sequence(
            blocks=pvector(
                [
                    Step(
                        name=StageName("plan"),
                        prompt="Plan $brief in PLAN.md.",
                        deliverable=Artifact(path="PLAN.md"),
                    ),
                    Loop(
                        name=BlockName("review-loop"),
                        body=Sequence(blocks=pvector([review, fix])),
                        until=StageName("review"),
                        max=most,
                        on_max=on_max,
                    ),
                    Step(
                        name=StageName("sign-off"),
                        prompt="Say what was done.",
                        deliverable=Approval(),
                    ),
                ]
            )
        ),
        budgets=budgets or Budgets(),
    )


def world_of(kind: Kind) -> FakeWorld:
    """A world about to launch ``kind``."""
    world = FakeWorld(settings=S, kind=kind)
    assert world.launch() is None
    return world


def started_keys(world: FakeWorld) -> list[str]:
    """The key of every stage attempt started, in order."""
    return [
        report.text.removeprefix("stage ").split(" starts")[0]
        for report in world.reports_of(Event.STAGE_STARTED)
    ]


def commit_and_end(world: FakeWorld) -> None:
    """The agent commits and ends its turn; it waits, quiet, and the stage ends."""
    world.commit()
    world.end_turn()
    world.now += S.quiet_seconds + 1
    world.feed(Tick(at=world.instant()))


def through_plan(world: FakeWorld) -> None:
    """The plan step's agent writes PLAN.md and ends its turn: the review loop begins."""
    assert world.deliver()
    world.artifacts.add("PLAN.md")
    world.end_turn()


def review(world: FakeWorld, result: str | None) -> None:
    """The review's agent takes its prompt, writes ``result`` (None: nothing), ends its turn."""
    assert world.deliver()
    if result is not None:
        world.write_verdict(result, f"the review says {result}")
    world.end_turn()


# --- the machine ------------------------------------------------------------------------------


class WorkflowMachine(RuleBasedStateMachine):
    """One workflow run against the FakeWorld, its agents and people doing anything they may."""

    world: FakeWorld

    @initialize(
        most=st.integers(min_value=1, max_value=3),
        on_max=st.sampled_from(list(OnMax)),
        turns=st.none() | st.integers(min_value=1, max_value=8),
        tokens=st.none() | st.integers(min_value=10, max_value=80),
    )
    def launch(self, most: int, on_max: OnMax, turns: int | None, tokens: int | None) -> None:
        """Launch the kind, with its loop's max and budgets drawn."""
        budgets = Budgets(turns=turns, tokens=tokens)
        self.world = world_of(reviewed(most=most, on_max=on_max, budgets=budgets))
        #: The same kind, its fix prompt reworded, as a person might edit its file mid-run.
        self.edited = reviewed(
            most=most, on_max=on_max, budgets=budgets, fix_prompt="Mend every finding; commit."
        )
        self.most = most
        self.writers: dict[StageName, tuple[str, int]] = {}
        self.done_passes: set[int] = set()
        self.raised_under: list[int] = []
        self.passed_under: list[tuple[int, str]] = []
        self.checked = 0

    @rule(result=st.sampled_from(["done", "revise", "revise"]))
    def agent_does_its_step(self, result: str) -> None:
        """The live agent takes its prompt, does what its step asks, and ends its turn.

        The plan is written, the review says ``result``, the fix commits, the sign-off ends; a
        committed stage then waits quiet until it ends.
        """
        place = self.world.place
        if place is None or not self.world.deliver():
            return
        name = place.stage.name
        if name == "plan":
            self.world.artifacts.add("PLAN.md")
        elif name == "review":
            self.world.write_verdict(result, "findings")
            self.writers[name] = (place.stage.key, place.stage.attempt)
        elif name == "fix":
            self.world.commit()
        self.world.end_turn()
        if name == "fix":
            self.world.now += S.quiet_seconds + 1
            self.world.feed(Tick(at=self.world.instant()))

    @rule()
    def agent_takes_its_prompt(self) -> None:
        """The live agent waits for input; its transcript holds the last thing sent to it."""
        self.world.deliver()

    @rule(result=st.sampled_from(["done", "revise", "blocked", "maybe"]))
    def agent_writes_a_verdict(self, result: str) -> None:
        """The live agent writes its step's verdict on the board, whatever its step."""
        place = self.world.place
        if place is None or self.world.live_agent() is None:
            return
        self.world.write_verdict(result, "findings")
        self.writers[place.stage.name] = (place.stage.key, place.stage.attempt)

    @rule()
    def agent_makes_the_plan(self) -> None:
        """The agent writes PLAN.md in the worktree."""
        self.world.artifacts.add("PLAN.md")

    @rule()
    def agent_commits(self) -> None:
        """The agent commits on the place's branch."""
        if self.world.live_agent() is not None:
            self.world.commit()

    @rule(tokens=st.none() | st.integers(min_value=0, max_value=30))
    def agent_ends_its_turn(self, tokens: int | None) -> None:
        """The live agent's turn ends, with usage or none."""
        self.world.end_turn(tokens)

    @rule()
    def agent_works_silently(self) -> None:
        """The live agent works mid-turn and shows nothing while the stall window passes."""
        agent = self.world.live_agent()
        if agent is None:
            return
        self.world.activity, self.world.activity_since = Activity.WORKING, self.world.now
        self.world.feed(
            AgentStateSeen(
                at=self.world.instant(), session=agent.session, activity=Activity.WORKING
            )
        )
        self.world.now += S.stall_seconds
        self.world.feed(Tick(at=self.world.instant()))

    @rule(seconds=st.sampled_from([1.0, 6.0, 61.0]))
    def time_passes(self, seconds: float) -> None:
        """The clock moves; the supervisor's tick looks."""
        self.world.now += seconds
        self.world.feed(Tick(at=self.world.instant()))

    @rule()
    def person_approves(self) -> None:
        """A person approves (refused unless an approval waits)."""
        self.world.feed(ApproveAsked(at=self.world.instant()))

    @rule(why=st.sampled_from(["the verdict is wrong: the tests pass", "  read it myself  "]))
    def person_passes(self, why: str) -> None:
        """A person passes the step's gate (refused unless a gate is blocked)."""
        index = len(self.world.steps)
        journaled = len(self.world.journal)
        refused = self.world.feed(PassAsked(at=self.world.instant(), why=why))
        if refused is None:
            self.passed_under.append((index, why))
        else:
            assert len(self.world.journal) == journaled

    @rule()
    def person_resumes(self) -> None:
        """A person resumes (refused unless a pause resume resolves waits)."""
        self.world.feed(ResumeAsked(at=self.world.instant()))

    @rule(
        named=st.sampled_from(
            [
                "plan",
                "review",
                "fix",
                "review-loop/review",
                "review-loop@1/fix",
                "review-loop@2/review",
                "sign-off",
                "nowhere",
            ]
        ),
        retry=st.booleans(),
    )
    def person_names_a_step(self, named: str, retry: bool) -> None:
        """STEP-NAMED: a tell or retry naming a step is taken only while the run is at it.

        At another step it is refused for the step, with nothing journaled; at that step (by
        key, by key without passes, or by name) it is judged as a tell or retry without one.
        """
        place = self.world.place
        if place is None:
            return
        run = place.stage
        at = named in {run.name, run.key, "/".join(p.split("@")[0] for p in run.key.split("/"))}
        journaled = len(self.world.journal)
        asked = (
            RetryAsked(at=self.world.instant(), step=named)
            if retry
            else Told(at=self.world.instant(), text="mind the README", step=named)
        )
        refused = self.world.feed(asked)
        if not at:
            # Refused, for the step or for what the place's state refuses first (a tell with
            # no live agent, a retry of a step that did not stop short).
            assert refused is not None, (named, run.key)
            assert len(self.world.journal) == journaled
        else:
            assert refused is None or [p.field for p in refused.problems] != ["step"]

    @rule(
        turns=st.integers(min_value=1, max_value=5), tokens=st.integers(min_value=1, max_value=50)
    )
    def person_raises(self, turns: int, tokens: int) -> None:
        """A person raises the budgets (refused unless a budget pause waits)."""
        index = len(self.world.steps)
        refused = self.world.feed(BudgetRaised(at=self.world.instant(), turns=turns, tokens=tokens))
        if refused is None:
            self.raised_under.append(index)

    @rule()
    def definition_edited(self) -> None:
        """VERSION-FIRST-DIFFERENCE: the journal under an edited fix prompt, compared.

        Under its own kind every decision is the same; under a kind whose fix prompt is edited,
        the first that differs is the first step that sent fix its prompt (the prompt's text
        alone differs), and none differs while fix was never prompted.
        """
        journal = self.world.journal
        launched = journal[0]
        assert isinstance(launched, Launched)
        assert compare(S, journal, launched.kind).first is None
        found = compare(S, journal, self.edited).first
        sent = [
            index
            for index, (_before, _seen, decision) in enumerate(self.world.steps)
            if any(isinstance(a, SendPrompt) and a.stage == "fix" for a in decision.actions)
        ]
        if not sent:
            assert found is None
            return
        assert found is not None
        assert found.index == sent[0]
        assert found.differences
        assert all(each.path.endswith(".text") for each in found.differences), found

    # --- invariants --------------------------------------------------------------------------

    @invariant()
    def kind_frozen_at_launch(self) -> None:
        """VERSION-FROZEN: the place runs the kind its launch carried, step after step."""
        launched = self.world.journal[0]
        assert isinstance(launched, Launched)
        assert self.world.place is not None
        assert self.world.place.kind == launched.kind

    @invariant()
    def no_pass_past_max(self) -> None:
        """WF-LOOP-CAP: no stage of the loop runs in a pass past its max."""
        for started in started_keys(self.world):
            if started.startswith("review-loop@"):
                number = int(started.split("@")[1].split("/")[0])
                assert 1 <= number <= self.most

    @invariant()
    def done_leaves_the_loop(self) -> None:
        """WF-LOOP-EXITS-ON-DONE: once a pass's review passed with done, its fix never starts."""
        done = {
            report.text.split(" ")[3].split("/")[0]
            for report in self.world.reports_of(Event.GATE_PASSED)
            if "(verdict: done)" in report.text
        }
        for started in started_keys(self.world):
            assert not any(started == f"{each}/fix" for each in done)

    @invariant()
    def told_once_then_paused(self) -> None:
        """A gate that did not pass is told once an attempt, never twice (this run's reviews)."""
        told = Counter(
            report.text.split(" did not pass")[0]
            for report in self.world.reports_of(Event.GATE_FAILED)
        )
        assert all(count == 1 for count in told.values()), told

    @invariant()
    def verdict_of_this_attempt(self) -> None:
        """WF-VERDICT-SINCE-DELIVERY: a verdict read for an attempt was written in that attempt.

        The one an earlier attempt (or pass) wrote was archived before the attempt's agent began.
        """
        # Checked as each reading is made: a later attempt may write the step's verdict anew.
        for reading in self.world.readings[self.checked :]:
            action = next(
                found
                for found in reversed(self.world.actions)
                if isinstance(found, JudgeGate) and found.key == reading.key
            )
            if isinstance(action.gate, Verdict) and reading.found:
                assert self.writers[action.stage] == (reading.key, reading.attempt)
        self.checked = len(self.world.readings)

    @invariant()
    def artifact_passes_only_when_made(self) -> None:
        """WF-ARTIFACT-BLOCKS: the plan's gate passes only on a reading that found PLAN.md.

        Or a person passed it (``flume pass``), as the report says: no reading is needed then.
        """
        passed = [
            r
            for r in self.world.reports_of(Event.GATE_PASSED)
            if "of plan " in r.text and "passed by a person" not in r.text
        ]
        found = [r for r in self.world.readings if r.key == "plan" and r.found]
        assert len(passed) <= len(found)

    @invariant()
    def over_budget_nothing_starts(self) -> None:
        """Over a budget no start or send is decided; never failed or dropped (this run).

        Checked over every step taken: where the place before it had spent a budget, the step
        decided no StartAgent, prompt or tell, unless a raise in that step lifted the budget.
        """
        for before, seen, decision in self.world.steps:
            if before is None or before.life is not Life.ACTIVE or isinstance(seen, BudgetRaised):
                continue
            limit = before.budgets
            over = (limit.turns is not None and before.spent.turns >= limit.turns) or (
                limit.tokens is not None and before.spent.tokens >= limit.tokens
            )
            if over:
                assert not any(
                    isinstance(action, StartAgent | SendPrompt | SendTell)
                    for action in decision.actions
                ), (seen, decision.actions)
        place = self.world.place
        assert place is not None
        assert place.life in {Life.MAKING, Life.ACTIVE, Life.FINISHED}

    @invariant()
    def raise_resumes(self) -> None:
        """WF-BUDGET-RAISE-RESUMES: a raise takes the run out of its budget pause, at once.

        If a budget is still spent, the run pauses again before any agent starts, naming it.
        """
        for index in self.raised_under:
            before, _seen, decision = self.world.steps[index]
            assert before is not None
            assert isinstance(before.stage.phase, Paused)
            assert before.stage.phase.cause is PauseCause.BUDGET
            after = decision.place.stage.phase
            resumed = any(
                isinstance(a, Report) and a.event is Event.RESUMED for a in decision.actions
            )
            assert resumed
            if isinstance(after, Paused):
                assert after.cause is PauseCause.BUDGET

    @invariant()
    def a_person_passes_only_a_blocked_gate(self) -> None:
        """WF-PERSON-PASSES: a pass is taken only where a gate stayed blocked, with its words.

        The run stood paused gate-blocked; the step passed (a gate-passed event naming a person
        and their words), it ended, and the place keeps the pass: key, attempt, words.
        """
        for index, why in self.passed_under:
            before, _seen, decision = self.world.steps[index]
            assert before is not None
            assert isinstance(before.stage.phase, Paused)
            assert before.stage.phase.cause is PauseCause.GATE_BLOCKED
            words = " ".join(why.split())
            passed = [
                action
                for action in decision.actions
                if isinstance(action, Report) and action.event is Event.GATE_PASSED
            ]
            assert len(passed) == 1
            assert "passed by a person" in passed[0].text
            assert passed[0].text.endswith(words)
            kept = decision.place.passes[-1]
            assert (kept.key, kept.attempt, kept.why) == (
                before.stage.key,
                before.stage.attempt,
                words,
            )
            assert before.stage.key in decision.place.completed

    @invariant()
    def every_refusal_names_what_applies(self) -> None:
        """REFUSAL-NAMES-WAY: a person's command refused names a way out the run accepts there.

        Approve, resume, pass, raise, retry, proceed, stop, tell and resolve, each given to the
        run as it stands: where refused, the command the refusal names is accepted in that state.
        """
        check_refusals(S, self.world.place)

    @invariant()
    def nudged_once_then_paused(self) -> None:
        """WF-STALL-NUDGES-ONCE: one nudge an attempt; a stalled pause only after its nudge."""
        nudges = Counter(
            report.text.split(" showed")[0] for report in self.world.reports_of(Event.NUDGED)
        )
        assert all(count == 1 for count in nudges.values()), nudges
        for before, _seen, decision in self.world.steps:
            phase = decision.place.stage.phase
            if before is None or not isinstance(phase, Paused):
                continue
            if phase.cause is PauseCause.STALLED and not isinstance(before.stage.phase, Paused):
                assert before.stage.nudged_at is not None

    @invariant()
    def nothing_waits_silently(self) -> None:
        """A pending action, an agent's move, a named pause, or the end (in this run alone).

        Every state the run reaches is finished, or waits on something named: a person (a
        pause, a stop short, the caller's word, each with its words), the live agent (its turn
        runs), or an action the shell owes (pending after a restart).
        """
        place = self.world.place
        assert place is not None
        if place.life is not Life.ACTIVE:
            return
        phase = place.stage.phase
        if isinstance(phase, Paused):
            view = status(place)
            assert view.paused == phase.cause.value
            assert view.resolve
            assert view.resolve.startswith("flume ")
            return
        if isinstance(phase, Short):
            assert phase.words
            return
        if isinstance(phase, Judging):
            # Judged now (a read asked of the shell), or once the evidence window the core
            # holds goes by (WF-DELIVERABLE-AT-TURN-END: a commit seen late still counts).
            later = step(S, place, Tick(at=Instant(place.now + S.quiet_seconds + 1)))
            judged = any(isinstance(action, JudgeGate) for action in pending(place))
            assert judged or later.actions or later.place != place, phase
            return
        live = place.agent is not None
        assert live or pending(place) or isinstance(phase, Working) is False, phase


TestWorkflowMachine = WorkflowMachine.TestCase
TestWorkflowMachine.settings = hypothesis_settings(max_examples=200, stateful_step_count=50)
TestWorkflowMachine = pytest.mark.hypothesis(TestWorkflowMachine)


# --- advance, by itself -----------------------------------------------------------------------


@pytest.mark.parametrize("most", [1, 2, 3])
def test_a_loop_never_done_runs_max_passes_then_goes_on(most: int) -> None:
    """Review revises every pass: the loop runs ``max`` passes, reports loop-max, goes on."""
    body = reviewed(most=most).body
    position = first(body)
    seen = [key(position)]
    maxed = []
    while position is not None:
        went = advance(body, position, done=False)
        maxed.extend(went.maxed)
        position = went.position
        if position is not None:
            seen.append(key(position))
    loop = [f"review-loop@{n}/{s}" for n in range(1, most + 1) for s in ("review", "fix")]
    assert seen == ["plan", *loop, "sign-off"]
    assert [(each.loop, each.passes, each.pause) for each in maxed] == [
        ("review-loop", most, False)
    ]


def test_done_leaves_the_loop_at_once_and_a_paused_max_keeps_where_it_goes_on() -> None:
    """Done at review of pass 2 goes to sign-off; on_max pause names the loop, keeps sign-off."""
    body = reviewed(most=2).body
    at_review = Position(
        step=StageName("review"), passes=(Pass(loop=BlockName("review-loop"), number=2),)
    )
    went = advance(body, at_review, done=True)
    assert went.position == Position(step=StageName("sign-off"))
    assert went.maxed == ()
    paused = reviewed(most=2, on_max=OnMax.PAUSE).body
    at_fix = attrs.evolve(at_review, step=StageName("fix"))
    went = advance(paused, at_fix, done=False)
    assert went.position == Position(step=StageName("sign-off"))
    assert went.pauses is not None
    assert went.pauses.loop == "review-loop"


# --- the paths the issue names, through step ----------------------------------------------------


def test_review_revises_then_is_done_and_fix_does_not_run_after() -> None:
    """Pass 1 revises, fix commits, pass 2 is done: sign-off next; the fix of pass 2 never runs."""
    world = world_of(reviewed())
    through_plan(world)
    review(world, "revise")
    assert world.deliver()
    commit_and_end(world)
    review(world, "done")
    assert started_keys(world) == [
        "plan",
        "review-loop@1/review",
        "review-loop@1/fix",
        "review-loop@2/review",
        "sign-off",
    ]
    assert [(stage, result) for stage, _as, result in world.archived] == [("review", "revise")]
    # The prompt of pass 2 says which pass it is, and its marker carries its key.
    sent = [a for a in world.actions if isinstance(a, SendPrompt) and a.stage == "review"]
    assert "Review pass 2 of 3." in sent[-1].text
    assert sent[-1].marker == "flume:reviewed--x:review-loop@2/review:1"


def test_a_missing_verdict_is_told_once_then_pauses_gate_blocked() -> None:
    """No verdict at the turn's end: told why once; still none: paused gate-blocked, named."""
    world = world_of(reviewed())
    through_plan(world)
    review(world, None)
    failed = world.reports_of(Event.GATE_FAILED)
    assert len(failed) == 1
    assert "no verdict was written at" in failed[0].text
    tells = [a for a in world.actions if isinstance(a, SendTell)]
    assert len(tells) == 1
    assert "did not pass: no verdict was written" in tells[0].text
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Working)
    # A turn that ends before the agent was told why is not its answer: nothing is judged.
    world.end_turn()
    assert isinstance(world.place.stage.phase, Working)
    assert len(world.readings) == 2  # the plan's, and the review's once
    assert world.deliver()
    world.end_turn()
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.GATE_BLOCKED
    assert world.live_agent() is None
    view = status(world.place)
    assert (view.phase, view.paused, view.resolve) == (
        "paused",
        "gate-blocked",
        "flume resume reviewed--x (or flume retry reviewed--x with words)",
    )
    # Resumed: a new attempt of the same pass, with a fresh agent.
    world.feed(ResumeAsked(at=world.instant()))
    assert started_keys(world)[-1] == "review-loop@1/review"
    assert world.place.stage.attempt == 2


def test_a_verdict_of_an_earlier_pass_never_passes_a_later_one() -> None:
    """Pass 1's revise is archived before pass 2's agent starts; pass 2 writing none fails."""
    world = world_of(reviewed())
    through_plan(world)
    review(world, "revise")
    assert world.deliver()
    commit_and_end(world)
    review(world, None)
    assert world.readings[-1].key == "review-loop@2/review"
    assert not world.readings[-1].found
    assert "no verdict was written" in world.reports_of(Event.GATE_FAILED)[-1].text
    # A late reading of pass 1's key does nothing to pass 2.
    assert world.place is not None
    before = world.place
    world.end_turn()
    late = GateRead(
        at=world.instant(), key="review-loop@1/review", attempt=1, found=True, result="done"
    )
    assert step(S, world.place, late).place.stage == world.place.stage
    assert before.stage.key == "review-loop@2/review"


def test_blocked_pauses_at_once_with_its_summary() -> None:
    """A verdict of blocked is not told again: the run pauses with the verdict's summary."""
    world = world_of(reviewed())
    through_plan(world)
    review(world, "blocked")
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert (phase.cause, phase.words) == (PauseCause.GATE_BLOCKED, "the review says blocked")
    assert world.reports_of(Event.GATE_FAILED) == []


def _paused_after_a_revise(world: FakeWorld) -> Paused:
    """The plan through, a review that says revise, its fix committed: the run's pause."""
    through_plan(world)
    review(world, "revise")
    assert world.deliver()
    commit_and_end(world)
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    return phase


def test_a_loop_at_max_pauses_when_asked_and_resume_goes_on() -> None:
    """on_max pause: after pass 1 of 1 without done, paused loop-max; resume starts sign-off."""
    world = world_of(reviewed(most=1, on_max=OnMax.PAUSE))
    phase = _paused_after_a_revise(world)
    assert phase.cause is PauseCause.LOOP_MAX
    assert world.place.stage.name == "sign-off"
    assert [r.text for r in world.reports_of(Event.LOOP_MAX)] == [
        "loop review-loop ran its 1 passes without done; the run pauses"
    ]
    assert status(world.place).maxed == pvector(["review-loop@1"])
    world.feed(ResumeAsked(at=world.instant()))
    assert started_keys(world)[-1] == "sign-off"


def test_an_approval_waits_named_for_approve() -> None:
    """The sign-off's turn ends: paused for approval; approve passes it and the run finishes."""
    world = world_of(reviewed(most=1))
    through_plan(world)
    review(world, "done")
    assert world.deliver()
    world.end_turn()
    assert world.place is not None
    assert status(world.place).resolve == "flume approve reviewed--x"
    refused = world.feed(ResumeAsked(at=world.instant()))
    assert isinstance(refused, UsageError)
    assert refused.exit_status == 1
    assert world.feed(ApproveAsked(at=world.instant())) is None
    assert world.place.life is Life.FINISHED
    again = world.feed(ApproveAsked(at=world.instant()))
    assert isinstance(again, UsageError)
    assert again.exit_status == 1


def _starts_and_sends(world: FakeWorld) -> int:
    return len([a for a in world.actions if isinstance(a, SendPrompt | SendTell | StartAgent)])


def test_three_turns_pause_on_the_turns_budget_and_a_raise_finishes() -> None:
    """Turns = 3: the fix's commit ends the third turn; sign-off does not start; +5 finishes.

    A turn that spends the budget without its gate passing pauses at once, its agent ended.
    """
    world = world_of(reviewed(most=1, budgets=Budgets(turns=3)))
    through_plan(world)
    review(world, "revise")
    assert world.deliver()
    commit_and_end(world)
    assert world.place is not None
    assert world.place.stage.name == "sign-off"
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert (phase.cause, phase.words) == (PauseCause.BUDGET, "budget turns spent")
    sent = _starts_and_sends(world)
    world.now += 60
    world.feed(Tick(at=world.instant()))
    assert _starts_and_sends(world) == sent
    assert world.feed(BudgetRaised(at=world.instant(), turns=5)) is None
    assert world.place.budgets.turns == 8
    assert started_keys(world)[-1] == "sign-off"
    assert world.deliver()
    world.end_turn()
    world.feed(ApproveAsked(at=world.instant()))
    assert world.place.life is Life.FINISHED
    assert world.place.spent.turns == 4


def test_a_turn_over_budget_without_its_gate_pauses_with_its_agent_ended() -> None:
    """Turns = 1, the plan's turn ends with no PLAN.md: not told again, paused, agent ended."""
    world = world_of(reviewed(budgets=Budgets(turns=1)))
    assert world.deliver()
    world.end_turn()
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.BUDGET
    assert phase.words.startswith("budget turns spent; PLAN.md does not exist")
    assert world.live_agent() is None
    assert [a for a in world.actions if isinstance(a, SendTell)] == []
    world.artifacts.add("PLAN.md")
    world.feed(BudgetRaised(at=world.instant(), turns=1))
    assert (world.place.stage.key, world.place.stage.attempt) == ("plan", 2)


def test_a_tokens_budget_pauses_on_the_counts_the_model_reported() -> None:
    """Tokens = 25, 10 a turn: after the third turn (30), pass 2 does not start; status says."""
    world = world_of(reviewed(budgets=Budgets(tokens=25)))
    through_plan(world)
    review(world, "revise")
    assert world.deliver()
    commit_and_end(world)
    assert world.place is not None
    assert world.place.spent.tokens == 30
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.words == "budget tokens spent"
    assert world.place.stage.key == "review-loop@2/review"
    view = status(world.place)
    assert view.budgets == "tokens 30 of 25"
    assert view.resolve == "flume raise reviewed--x --tokens +N"


def test_two_budgets_spent_at_once_are_both_named_and_both_raised_by_its_way_out() -> None:
    """WF-BUDGET-RAISE-RESUMES: the pause names each budget spent; one raise of both goes on.

    Found by the machine over generated workflows (a loop, turns 2 and tokens 6 spent in one
    turn): the pause named turns alone, and its way out paused the run again on tokens.
    """
    world = world_of(reviewed(budgets=Budgets(turns=3, tokens=25)))
    phase = _paused_after_a_revise(world)
    assert phase.words == "budget turns and tokens spent"
    assert status(world.place).resolve == "flume raise reviewed--x --turns +N --tokens +N"
    refused = world.feed(BudgetRaised(at=world.instant(), retries=1))
    assert refused is not None
    assert "sets no retries budget to raise" in str(refused)
    assert "flume raise reviewed--x --turns +N --tokens +N" in str(refused)
    assert world.feed(BudgetRaised(at=world.instant(), turns=5, tokens=50)) is None
    assert not isinstance(world.place.stage.phase, Paused)


def test_a_linear_kind_pays_nothing_for_workflows() -> None:
    """A fix's status carries none of the workflow fields; its markers are its stage names."""
    from tests.model.world import fix_world  # noqa: PLC0415 (the one test of a fix here)

    world = fix_world()
    world.launch()
    assert world.place is not None
    view = status(world.place)
    assert (view.key, view.paused, view.budgets, view.maxed) == (None, None, None, pvector())
    assert world.place.stage.key == "code"
    assert Instant(0) <= world.place.now


def test_an_agent_silent_mid_turn_is_nudged_once_then_paused_stalled() -> None:
    """Working, nothing shown for the stall window: one nudge typed; as long again: stalled."""
    world = world_of(reviewed())
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    world.now += S.stall_seconds - 1
    world.feed(Tick(at=world.instant()))
    assert world.reports_of(Event.NUDGED) == []
    world.now += 1
    world.feed(Tick(at=world.instant()))
    (nudged,) = world.reports_of(Event.NUDGED)
    assert "nudged once" in nudged.text
    (nudge,) = [a for a in world.actions if isinstance(a, SendTell)]
    assert "flume has seen nothing from you for 10 minutes" in nudge.text
    world.now += S.stall_seconds
    world.feed(Tick(at=world.instant()))
    assert world.place is not None
    phase = world.place.stage.phase
    assert isinstance(phase, Paused)
    assert phase.cause is PauseCause.STALLED
    assert world.live_agent() is None
    assert len(world.reports_of(Event.NUDGED)) == 1
    assert (
        status(world.place).resolve
        == "flume resume reviewed--x (or flume retry reviewed--x with words)"
    )


def test_a_linear_kind_is_never_nudged() -> None:
    """A fix's agent silent for an hour mid-turn: no nudge, no pause (its time is its own)."""
    from tests.model.world import fix_world  # noqa: PLC0415 (a fix, here, for the contrast)

    world = fix_world()
    world.launch()
    assert world.deliver()
    agent = world.live_agent()
    assert agent is not None
    world.feed(AgentStateSeen(at=world.instant(), session=agent.session, activity=Activity.WORKING))
    world.now += 3600
    world.feed(Tick(at=world.instant()))
    assert world.reports_of(Event.NUDGED) == []
    assert world.place is not None
    assert isinstance(world.place.stage.phase, Working)


def test_status_draws_the_tree_with_each_block_s_state() -> None:
    """Format 2: each named block in order, steps with runs and gate, the loop with its passes."""
    world = world_of(reviewed())
    through_plan(world)
    review(world, "revise")
    assert world.deliver()
    commit_and_end(world)
    review(world, "done")
    assert world.place is not None
    tree = [(b.path, b.block, b.state, b.runs, b.passes, b.max) for b in status(world.place).tree]
    assert tree == [
        ("plan", "step", "done", 1, None, None),
        ("review-loop", "loop", "done", None, 2, 3),
        ("review-loop/review", "step", "done", 2, None, None),
        ("review-loop/fix", "step", "done", 1, None, None),
        ("sign-off", "step", "delivering", 0, None, None),
    ]
    assert status(world.place).tree[0].gate == "the file PLAN.md"


def test_the_tree_shows_a_loop_running_a_loop_out_of_passes_and_lanes_not_run() -> None:
    """Mid-loop: the loop runs, its step shows the phase; at max: max; lanes: not run."""
    world = world_of(reviewed(most=1))
    through_plan(world)
    assert world.place is not None
    running = {b.path: b.state for b in status(world.place).tree}
    assert running["review-loop"] == "running"
    assert running["sign-off"] == "not run"
    review(world, "revise")
    assert world.deliver()
    commit_and_end(world)
    states = {b.path: b.state for b in status(world.place).tree}
    assert states["review-loop"] == "max"
    from flume.core.kinds import Parallel  # noqa: PLC0415 (a tree with lanes, drawn only)

    fan = Parallel(
        name=BlockName("fan"),
        branches=pvector([Step(name=StageName("a"), prompt="a", deliverable=Commit())]),
    )
    kind = attrs.evolve(
        world.place.kind, body=Sequence(blocks=pvector([world.place.kind.body, fan]))
    )
    drawn = {b.path: b.state for b in status(attrs.evolve(world.place, kind=kind)).tree}
    assert (drawn["fan"], drawn["fan/a"]) == ("not run", "not run")


def test_a_tell_for_another_step_is_refused_and_one_for_this_step_is_taken() -> None:
    """STEP-NAMED: at review-loop@1/review, a tell for another step or pass is refused.

    Refused for the step, exit status 1, with nothing journaled; by key, by key without passes,
    or by name, it is taken.
    """
    world = world_of(reviewed())
    through_plan(world)
    assert world.deliver()
    assert world.place is not None
    assert world.place.stage.key == "review-loop@1/review"
    journaled = len(world.journal)
    for other in ("fix", "review-loop@2/review", "plan", "review-loop/fix"):
        refused = world.feed(Told(at=world.instant(), text="mind it", step=other))
        assert refused is not None
        (problem,) = refused.problems
        assert problem.field == "step"
        assert refused.exit_status == 1
        assert problem.what == (
            f"reviewed--x is at step review-loop@1/review, not {other}: the tell was for "
            "another step"
        )
    assert len(world.journal) == journaled
    unknown = world.feed(Told(at=world.instant(), text="mind it", step="reveiw"))
    assert unknown is not None
    assert unknown.exit_status == 2
    assert "kind reviewed has no step 'reveiw'" in str(unknown)
    for same in ("review-loop@1/review", "review-loop/review", "review"):
        assert world.feed(Told(at=world.instant(), text=f"for {same}", step=same)) is None
    assert world.place.tells_given == 3


def test_a_retry_for_another_step_is_refused() -> None:
    """STEP-NAMED: a retry names the step that stopped short, or it is refused for the step."""
    from flume.core.observations import StopAsked  # noqa: PLC0415 (the one stop here)

    world = world_of(reviewed())
    through_plan(world)
    assert world.deliver()
    assert world.feed(StopAsked(at=world.instant())) is None
    refused = world.feed(RetryAsked(at=world.instant(), step="fix"))
    assert refused is not None
    assert [p.field for p in refused.problems] == ["step"]
    assert world.feed(RetryAsked(at=world.instant(), step="review")) is None
    assert world.place is not None
    assert world.place.stage.attempt == 2
