r"""The place's state, and the pure queries the rules ask of it.

Theory of operation: a :class:`Place` is everything flume keeps about one launch, rebuilt by
folding ``step`` over the place's journal. Its lifetime is a :class:`Life`; inside an ``ACTIVE``
place exactly one stage is current, and its :class:`StageRun` carries the phase the stage is in.
Phases without data would be enum members; these all carry data, so they are frozen records in
the ``StagePhase`` union and code dispatches on them with ``match`` and ``assert_never``.

A stage's phases, in the order a good run passes through them::

    AwaitingWord -> Queued -> Starting -> AwaitingInput -> Delivering -> Working -> Delivered
                                                              \\-> Short (never began, needs,
                                                                   stopped, exited, failed)

Which of the caller's commands a phase accepts, and the phase each moves the stage to, is the
table :data:`ACCEPTS` below the phases (as h11's ``EVENT_TRIGGERED_TRANSITIONS``): the commands'
rules consult it, the totality test enumerates it, and ``scripts/draw_transitions.py`` draws it
into ``docs/transitions.md``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypedDict, Unpack, assert_never

import attrs
from pyrsistent import pmap, pset, pvector
from pyrsistent.typing import PMap, PSet, PVector

from flume.core.actions import Action, Land, MergeLanes, OpenPR, Push
from flume.core.choices import AgentName
from flume.core.ids import BranchName, Instant, PlaceName, SessionId, Sha, StageName
from flume.core.kinds import (
    Approval,
    Artifact,
    Budgets,
    ChangeWritten,
    Commit,
    Kind,
    Landing,
    Orchestrate,
    PassingTests,
    ReportFile,
    Step,
    TasksTicked,
    Verdict,
    is_workflow,
    orchestrates,
    stage_named,
    steps,
)
from flume.core.launch import Launch
from flume.core.observations import (
    Activity,
    AnswerGiven,
    ApproveAsked,
    AskSaid,
    BudgetRaised,
    ChangeSeen,
    Command,
    ComposeSaid,
    DropAsked,
    NeedsSaid,
    NotifySaid,
    PassAsked,
    ProceedAsked,
    ProgressSaid,
    ResolveAsked,
    ResumeAsked,
    RetryAsked,
    SpawnSaid,
    StopAsked,
    SubmitAsked,
    TidyAsked,
    Told,
)
from flume.core.settings import Settings
from flume.core.workflow.budget import Spent
from flume.core.workflow.tree import Position, key


class Life(enum.Enum):
    """Where the place is in its life (R3: it lasts until the work lands or is dropped)."""

    MAKING = "making"  #: the worktree is being made and set up
    ACTIVE = "active"  #: its stages are running
    FINISHED = "finished"  #: the last stage's deliverable exists
    DROPPED = "dropped"  #: the caller abandoned the work
    TIDIED = "tidied"  #: the worktree is gone


class ShortCause(enum.Enum):
    """Why a stage stopped short; every cause waits for a retry or a drop (R8, R9)."""

    NEEDS = "needs"  #: the agent ran ``flume needs``
    NEVER_BEGAN = "never-began"  #: the prompt was missing from the transcript twice
    SETUP_FAILED = "setup-failed"  #: the repository's setup failed
    STOPPED = "stopped"  #: the caller stopped the agent
    AGENT_EXITED = "agent-exited"  #: the agent exited before its deliverable existed
    FAILED = "failed"  #: an action failed (the worktree, the agent's start)
    WORKTREE_GONE = "worktree-gone"  #: the place's worktree was deleted under it
    BRANCH_GONE = "branch-gone"  #: the place's branch was deleted under it


class PauseCause(enum.Enum):
    """Why a workflow's run waits on a person; each names the command that lets it go on."""

    APPROVAL = "approval"  #: an approval gate waits for ``flume approve``
    GATE_BLOCKED = "gate-blocked"  #: the gate did not pass, told once; or the verdict: blocked
    BUDGET = "budget"  #: a budget is spent; ``flume raise`` lets it go on
    LOOP_MAX = "loop-max"  #: a loop with ``on_max = "pause"`` ran its last pass
    STALLED = "stalled"  #: the agent said nothing mid-turn, nudged once, and still nothing
    MERGE_CONFLICT = "merge-conflict"  #: merging a lane conflicted; ``flume resolve`` goes on
    #: git refused a lane's merge for no conflict (a lock, a branch gone); mend it, then resume
    MERGE_FAILED = "merge-failed"
    #: a lane a join needs ended unfinished: launch it again, or go on without it
    LANE_DROPPED = "lane-dropped"
    FINALIZE_FAILED = "finalize-failed"  #: the push or the PR command failed; mend, then resume


@attrs.frozen(kw_only=True)
class AwaitingWord:
    """The stage waits on the caller's word (``flume proceed``) before it starts."""


@attrs.frozen(kw_only=True)
class Queued:
    """The stage starts as soon as the place is ready and no agent is live (R4)."""


@attrs.frozen(kw_only=True)
class Starting:
    """``StartAgent`` was asked for; waiting for the agent to be observed."""

    since: Instant


@attrs.frozen(kw_only=True)
class AwaitingInput:
    """The agent started; waiting until it takes input."""

    session: SessionId
    since: Instant


@attrs.frozen(kw_only=True)
class Delivering:
    """The prompt was sent (``StageRun.sends`` times); waiting to find it in the transcript.

    ``typed``: the pane showed the current send typed (its paste done), not merely decided.
    ``retyped``: the current send, decided but never shown typed, was typed once more.
    """

    session: SessionId
    sent_at: Instant
    typed: bool = False
    retyped: bool = False


@attrs.frozen(kw_only=True)
class Working:
    """The transcript holds the prompt; the agent works toward the deliverable."""

    session: SessionId


@attrs.frozen(kw_only=True)
class Delivered:
    """The deliverable exists; the stage ends once the agent is quiet (R7)."""

    at: Instant


@attrs.frozen(kw_only=True)
class Judging:
    """The agent's turn ended; the shell reads what the step's gate is judged on (``JudgeGate``)."""

    session: SessionId
    since: Instant


@attrs.frozen(kw_only=True)
class Paused:
    """The run waits on a person (WF-NO-SILENT-WAIT): the cause, in words, and what resumes it.

    No agent is live and none starts while a stage is paused. Resumed, the stage is queued:
    as a new attempt (``again``: its gate did not pass, or its agent was ended mid-step), or as
    it stands (a budget spent before it started, a loop's max before the step after it). An
    approval gate's stage, approved, passes; ``finish``: the body was finished when it paused.
    """

    cause: PauseCause
    words: str
    again: bool = False
    finish: bool = False
    #: The budgets spent, by name (``turns``, ``turns and tokens``), for a pause on a budget.
    spent: str = ""
    #: The lane a pause is about: whose merge conflicted or was refused, or which ended
    #: unfinished.
    lane: str = ""
    #: A landing held for a person (LAND-HELD-FOR-A-PERSON): the head approving lets land.
    landing: Sha | None = None


@attrs.frozen(kw_only=True)
class Fanned:
    """The stage is a parallel block: its lanes run, each a place of its own (:data:`Place.lanes`).

    The run's own worktree has no agent meanwhile; the block ends once its join is met and its
    lanes are merged.
    """

    since: Instant


@attrs.frozen(kw_only=True)
class Merging:
    """The join is met: the lanes' branches are being merged into the run's (``MergeLanes``)."""

    since: Instant


@attrs.frozen(kw_only=True)
class Finalizing:
    """The body is done: the run's branch is being pushed, or its pull request opened.

    No agent lives in the run meanwhile; it finishes once each finalize act is observed done.
    """

    since: Instant


@attrs.frozen(kw_only=True)
class Short:
    """The stage stopped short; it waits for a retry or a drop (R8)."""

    cause: ShortCause
    words: str


StagePhase = (
    AwaitingWord
    | Queued
    | Starting
    | AwaitingInput
    | Delivering
    | Working
    | Delivered
    | Short
    | Judging
    | Paused
    | Fanned
    | Merging
    | Finalizing
)

# Why each entry holds. Drop and tidy are the caller's in every phase; the place's life decides
# them (DROP-ENDS-WORK, R10), so their rules have no phase to consult. A tell needs a live agent,
# which exists only once the stage's agent has started (every place machine of the model tests
# checks that a live agent's phase accepts a tell); the agent's own state decides the rest (R6,
# TELL-REFUSED), and a tell never moves the stage (TELL-NEVER-MOVES-STAGE). Needs and submit are
# the agent's, in a running stage: needs stops it short (R8), submit hands the branch to the
# lander when the stage lands. Stop ends a stage whose agent was asked for; it waits for a retry
# (STOP-WAITS-RETRY). Only a stage that stopped short is retried, queued for a fresh agent
# (RETRY-FRESH-AGENT). Proceed releases a stage that waits on the caller's word
# (STAGE-WAITS-WORD). A second launch is accepted nowhere.

#: R9: the caller's commands each phase accepts, and the phase each moves the stage to.
#: A command absent from its phase's row is refused there, whatever else holds; one present is
#: accepted when the place's life and agent allow it too (each rule says which). WARNING: the
#: rules in stage.py and tell.py read this table, the totality test enumerates it against every
#: phase and command, and scripts/draw_transitions.py draws docs/transitions.md from it: change
#: the table, then run the script.
ACCEPTS: Mapping[type[StagePhase], Mapping[type[Command], type[StagePhase]]] = {
    AwaitingWord: {
        ProceedAsked: Queued,
        DropAsked: AwaitingWord,
        TidyAsked: AwaitingWord,
    },
    Queued: {
        DropAsked: Queued,
        TidyAsked: Queued,
    },
    Starting: {
        StopAsked: Short,
        DropAsked: Starting,
        TidyAsked: Starting,
    },
    AwaitingInput: {
        Told: AwaitingInput,
        NeedsSaid: Short,
        ProgressSaid: AwaitingInput,
        AskSaid: AwaitingInput,
        SpawnSaid: AwaitingInput,
        NotifySaid: AwaitingInput,
        ComposeSaid: AwaitingInput,
        AnswerGiven: AwaitingInput,
        SubmitAsked: AwaitingInput,
        StopAsked: Short,
        DropAsked: AwaitingInput,
        TidyAsked: AwaitingInput,
    },
    Delivering: {
        Told: Delivering,
        NeedsSaid: Short,
        ProgressSaid: Delivering,
        AskSaid: Delivering,
        SpawnSaid: Delivering,
        NotifySaid: Delivering,
        ComposeSaid: Delivering,
        AnswerGiven: Delivering,
        SubmitAsked: Delivering,
        StopAsked: Short,
        DropAsked: Delivering,
        TidyAsked: Delivering,
    },
    Working: {
        Told: Working,
        NeedsSaid: Short,
        ProgressSaid: Working,
        AskSaid: Working,
        SpawnSaid: Working,
        NotifySaid: Working,
        ComposeSaid: Working,
        AnswerGiven: Working,
        SubmitAsked: Working,
        StopAsked: Short,
        DropAsked: Working,
        TidyAsked: Working,
    },
    Delivered: {
        Told: Delivered,
        NeedsSaid: Short,
        ProgressSaid: Delivered,
        AskSaid: Delivered,
        SpawnSaid: Delivered,
        NotifySaid: Delivered,
        ComposeSaid: Delivered,
        AnswerGiven: Delivered,
        SubmitAsked: Delivered,
        StopAsked: Short,
        DropAsked: Delivered,
        TidyAsked: Delivered,
    },
    Short: {
        Told: Short,
        RetryAsked: Queued,
        DropAsked: Short,
        TidyAsked: Short,
    },
    Judging: {
        Told: Judging,
        NeedsSaid: Short,
        ProgressSaid: Judging,
        AskSaid: Judging,
        SpawnSaid: Judging,
        NotifySaid: Judging,
        ComposeSaid: Judging,
        AnswerGiven: Judging,
        SubmitAsked: Judging,
        StopAsked: Short,
        DropAsked: Judging,
        TidyAsked: Judging,
    },
    Paused: {
        ApproveAsked: Delivered,
        PassAsked: Delivered,
        ResumeAsked: Queued,
        BudgetRaised: Queued,
        RetryAsked: Queued,
        ResolveAsked: Merging,
        DropAsked: Paused,
        TidyAsked: Paused,
    },
    Fanned: {
        DropAsked: Fanned,
        TidyAsked: Fanned,
    },
    Merging: {
        DropAsked: Merging,
        TidyAsked: Merging,
    },
    Finalizing: {
        DropAsked: Finalizing,
        TidyAsked: Finalizing,
    },
}

#: WF-NO-SILENT-WAIT: of the commands a paused stage accepts (:data:`ACCEPTS`), which each cause
#: takes besides drop and tidy: the one that resolves it, and a retry with words where a new
#: attempt makes sense. Approve passes an approval gate (the stage is delivered and ends);
#: resume and raise queue the stage again (raise only for a budget, which it raises first); a
#: person's pass (``flume pass``) passes a gate that stayed blocked, as approve passes theirs.
PAUSE_ACCEPTS: Mapping[PauseCause, frozenset[type[Command]]] = {
    PauseCause.APPROVAL: frozenset({ApproveAsked, RetryAsked}),
    PauseCause.GATE_BLOCKED: frozenset({ResumeAsked, RetryAsked, PassAsked}),
    PauseCause.BUDGET: frozenset({BudgetRaised, RetryAsked}),
    PauseCause.LOOP_MAX: frozenset({ResumeAsked}),
    PauseCause.STALLED: frozenset({ResumeAsked, RetryAsked}),
    # Resolved by hand, the merge goes on; by an agent, a merge step is queued first.
    PauseCause.MERGE_CONFLICT: frozenset({ResolveAsked}),
    # Mended (the lock gone, the branch restored), resumed: flume merges again; or by hand.
    PauseCause.MERGE_FAILED: frozenset({ResumeAsked, ResolveAsked}),
    # The lane launched again (retry, naming it), or the run goes on without it (resolve).
    PauseCause.LANE_DROPPED: frozenset({RetryAsked, ResolveAsked}),
    # Resumed once the remote or the PR command is mended: only what is not done runs again.
    PauseCause.FINALIZE_FAILED: frozenset({ResumeAsked}),
}


def accepts(phase: StagePhase, command: type[Command]) -> bool:
    """R9: the stage's phase accepts ``command`` (:data:`ACCEPTS`); its rule checks the rest.

    A paused stage takes only what its cause does (:data:`PAUSE_ACCEPTS`), drop and tidy aside.
    """
    if command not in ACCEPTS[type(phase)]:
        return False
    if isinstance(phase, Paused) and command not in {DropAsked, TidyAsked}:
        return command in PAUSE_ACCEPTS[phase.cause]
    return True


@attrs.frozen(kw_only=True)
class StageRun:
    """The current stage: which one, which attempt, since when, and its phase."""

    name: StageName
    attempt: int
    #: Deliverables count only when made since this instant (R7).
    started_at: Instant
    #: The branch's head when the stage started: a new commit is a head other than this.
    start_head: Sha | None
    #: The caller's words given with a retry, put in the prompt.
    words: str
    phase: StagePhase
    #: How many times this attempt's prompt was sent; never more than two (R5).
    sends: int = 0
    #: Where in the kind's tree the stage runs; None: the step of its name, in no loop.
    position: Position | None = None
    #: The agent was told once why its gate did not pass (WF-GATE-REPROMPT-ONCE).
    reprompted: bool = False
    #: The turns this attempt's agent ended (the ``turns_per_attempt`` budget).
    turns: int = 0
    #: When flume nudged this attempt's agent, silent mid-turn (WF-STALL-NUDGES-ONCE).
    nudged_at: Instant | None = None
    #: The number of the tell that told the agent why its gate did not pass, once.
    retold: int | None = None
    #: When the stage's gate was last read (its turn's end, or the agent found waiting).
    judged_at: Instant | None = None
    #: A parallel block's stage whose merge conflicted runs an agent to merge it (``flume
    #: resolve --agent``): its step is the merge step (:func:`current_step`).
    resolving: bool = False
    #: How many times the step was tried again because its agent exited (WF-RETRY-EXITED).
    retried: int = 0

    @property
    def key(self) -> str:
        """The attempt's address in the tree: ``review-loop@2/review``; a step's name if no loop."""
        return self.name if self.position is None else key(self.position)


@attrs.frozen(kw_only=True)
class Agent:
    """The live agent of the place; there is never more than one (R4)."""

    session: SessionId
    stage: StageName
    attempt: int
    pane: str
    activity: Activity
    #: When the agent last changed what it does.
    activity_since: Instant
    #: When its pane last showed output (tmux's or herdr's word): the quiet clock (R7).
    last_output_at: Instant
    #: When the agent itself last said anything: a line of its transcript or a hook's report.
    #: Not its pane, which a spinner renews while the agent waits on a model that never
    #: answers: the stall clock (WF-STALL-NUDGES-ONCE).
    said_at: Instant
    #: ``EndAgent`` was asked for; no new agent starts until it is observed gone.
    ending: bool = False
    #: Its transcript held its prompt, typed: ``prompt-delivered`` was reported for it.
    proven: bool = False
    #: Its stage attempt's key in the tree (``review-loop@2/review``); empty: the stage's name.
    key: str = ""


@attrs.frozen(kw_only=True)
class Attempt:
    """One agent flume started for a stage attempt, and where its chat is kept (TRANSCRIPT-KEPT).

    Kept for the place's whole life, past the agent's end, a drop and a tidy: the seed wants
    "each step attempt's chat ... preserved and replayable forever". The chat itself stays in
    the agent's own file (``transcript``), which flume only reads.
    """

    #: The attempt's address in the tree (``review-loop@2/review``); a step's name if no loop.
    key: str
    stage: StageName
    attempt: int
    #: The program the agent ran (a step may name another than the launch's).
    agent: AgentName
    session: SessionId
    #: When the agent was started.
    started_at: Instant
    #: The agent's transcript, once the shell found it (``TranscriptFound``); None before.
    transcript: str | None = None
    #: A line of it was read (a ``TranscriptEntry`` of its session): the agent wrote it. A
    #: transcript named and never read was never written, not removed since.
    read: bool = False


class LaneState(enum.Enum):
    """Where one lane of the current parallel block stands, as its run knows it."""

    WAITING = "waiting"  #: not launched yet: the block's cap holds it
    RUNNING = "running"  #: launched; its place carries its branch's block
    FINISHED = "finished"  #: its place finished: its branch is ready to merge
    ENDED = "ended"  #: it ended unfinished: dropped, or never launched after a first join


@attrs.frozen(kw_only=True)
class LaneRun:
    """One lane of the current parallel block: its place, its branch, and where it stands."""

    lane: str
    place: PlaceName
    branch: BranchName
    #: Its branch's place in the block's declared order, from 0.
    index: int = 0
    state: LaneState = LaneState.WAITING
    #: Its branch's head when it finished.
    head: Sha | None = None
    #: A spawned child's goal (``$goal`` in its prompt), and the agent its lead named for it.
    goal: str = ""
    agent: AgentName | None = None
    #: The goal as its lead spawned it, before any words a notify added (WF-SPAWN-ONCE).
    spawned: str = ""
    #: An orchestrate child's news its lead was told of, by id (once each), and the last.
    news: PSet[str] = attrs.field(factory=pset)
    note: str = ""
    #: A child paused or stopped short, in words, for its run's status; empty: it is not.
    paused: str = ""
    #: A child's question its lead has not answered, in words, and since when (the news of
    #: it): for its run's status (WF-CHILD-ASKING-SURFACES); empty: none open.
    asking: str = ""
    asking_since: Instant | None = None
    #: The lead's words for it while it ran (``flume notify``), each sent as a ``NotifyLane``.
    notes: PVector[str] = attrs.field(factory=pvector)
    #: A child run a lead composed (``flume compose``): its kind, and the slice of the run's
    #: budgets reserved for it (counted in the run's spend until it ends: WF-BUDGET-RESERVE).
    kind: Kind | None = None
    reserved_turns: int = 0
    reserved_tokens: int = 0
    #: A composed run cut from the run's base, not its head.
    from_base: bool = False
    #: Which launch of the lane this is: a lane launched again (``flume retry --step``) is a
    #: place of its own, ``+<lane>.<tries>``.
    tries: int = 1
    #: A person let the run go on without it, once it ended unfinished (``--without``).
    let_go: bool = False
    #: Its block spreads its lanes over the fleet (WF-SPREAD): it is a fleet place, on
    #: whichever host took it, and the run hears of it only through the fleet.
    spread: bool = False


class JoinStage(enum.Enum):
    """Where an orchestrate block's join stands (:mod:`flume.core.workflow.orchestrate`)."""

    OPEN = "open"  #: children may still run; the lead's gate waits
    MERGING = "merging"  #: every child is terminal; the finished ones are being merged
    TOLD = "told"  #: merged; the lead was told to write its verdict (``join_tell``)


@attrs.frozen(kw_only=True)
class Question:
    """A question an agent asked (``flume ask``), and its answer once given (``flume answer``).

    ``id``: ``q1``, ``q2``... in the order asked. The answer goes to the asker as a tell
    (``tell``, its number): it counts as delivered only when the asker's transcript holds it
    (WF-MESSAGE-TRANSCRIPT). Open while unanswered, or answered and not yet delivered.
    """

    id: str
    text: str
    options: PVector[str] = attrs.field(factory=pvector)
    #: The step attempt that asked, and its agent's session.
    key: str
    attempt: int
    session: SessionId
    asked_at: Instant
    answer: str | None = None
    tell: int | None = None
    #: How many times its answer was sent and never reached the asker (it is open again).
    lost: int = 0
    #: A child's question its lead left unanswered a stall window: the caller may answer it.
    overdue: bool = False


@attrs.frozen(kw_only=True)
class PersonPass:
    """A gate a person passed (``flume pass``): the attempt it held, their words, and when.

    A person's decision, kept for the place's life so status shows it beside the gates the
    engine passed.
    """

    key: str
    attempt: int
    why: str
    at: Instant


@attrs.frozen(kw_only=True)
class Tell:
    """A tell the caller gave, held until the agent waits (R6)."""

    number: int
    text: str
    asked_at: Instant


@attrs.frozen(kw_only=True)
class TellSending:
    """A tell sent ``sends`` times, waiting to be found in the transcript."""

    tell: Tell
    sends: int
    sent_at: Instant


@attrs.frozen(kw_only=True)
class TidyNotWanted:
    """No tidy is wanted: the place is in flight, or the last tidy ended (done, kept, failed)."""


@attrs.frozen(kw_only=True)
class TidyWanted:
    """Tidy is wanted (the work landed or was dropped, or the caller asked), once no agent lives."""

    #: The caller said tidy may discard uncommitted changes (``tidy --force``).
    force: bool = False


@attrs.frozen(kw_only=True)
class TidyGathering:
    """Tidy asked the shell for the facts it decides on and has not decided yet (R10)."""

    #: The caller said tidy may discard uncommitted changes (``tidy --force``).
    force: bool = False


#: Where tidy stands for a place. Facts are gathered only for a tidy wanted, and the caller's
#: force lasts only as long as the tidy it was given for: neither can be held without a want.
Tidy = TidyNotWanted | TidyWanted | TidyGathering


class Submission(enum.StrEnum):
    """Where the work's submission to the lander stands (R11).

    A ``str``: it equals its word (``status.submission == "landed"``), as when it was one.
    """

    NONE = "none"  #: not submitted
    SUBMITTED = "submitted"  #: handed to the lander
    CHECKS_FAILED = "checks-failed"  #: the lander's checks failed; back with the agent
    BLOCKED = "blocked"  #: the base repository's state keeps it from landing; tried again
    HELD = "held"  #: a fenced run's change to what runs outside waits on a person's approval
    LANDED = "landed"  #: the base holds the work


@attrs.frozen(kw_only=True, slots=False)
class Place:
    """Everything flume keeps about one launch.

    Not slotted, so that :func:`evolve` can copy it as one dictionary: every step makes a new
    place, and re-running ``__init__`` over every field was most of a step's cost (P5).
    """

    launch: Launch
    kind: Kind
    path: str
    branch: BranchName
    setup: PVector[PVector[str]]
    life: Life
    stage: StageRun
    #: The instant of the last observation folded in.
    now: Instant
    #: The thresholds this place lives by, fixed at its launch.
    settings: Settings = attrs.field(factory=Settings)
    #: Ignored files the place needs, copied from the main worktree before setup runs (R2).
    copy: PVector[str] = attrs.field(factory=pvector)
    #: The base's revision at launch, which the branch is cut from (R1).
    start: Sha | None = None
    #: flume made this worktree (the journal records ``WorktreeMade``); tidy touches no other.
    made: bool = False
    #: The repository's setup ran and succeeded.
    ready: bool = False
    completed: PVector[StageName] = attrs.field(factory=pvector)
    agent: Agent | None = None
    #: Agents started for no stage the place runs now (a start carried out after the stop or
    #: drop that took it back): each ended, and asked again after a restart, until its exit is
    #: seen (R4: never two agents in one worktree).
    strays: PSet[SessionId] = attrs.field(factory=pset)
    #: An end asked of its agent or a stray failed, and was not asked again since
    #: (AGENT-END-FAILED-NAMED: asked again once a stage waits on it).
    end_failed: bool = False
    held: PVector[Tell] = attrs.field(factory=pvector)
    sending: TellSending | None = None
    tells_given: int = 0
    head: Sha | None = None
    #: The OpenSpec change as committed at some head, the latest seen.
    change: ChangeSeen | None = None
    #: Tasks ticked / total, live from the working tree, for status.
    tasks: tuple[int, int] | None = None
    #: Report files seen, by path, with the instant each was last modified.
    reports: PMap[str, Instant] = attrs.field(factory=pmap)
    landed_at: Instant | None = None
    change_archived: bool = False
    submission: Submission = Submission.NONE
    #: The lander's last word on the submission (why checks failed), for status.
    submission_note: str = ""
    #: A landing the base repository's state blocked is tried again at this instant.
    land_retry_at: Instant | None = None
    #: How many landings in a row the base repository's state blocked (the retry backs off).
    land_blocked: int = 0
    #: The head a person approved landing (LAND-HELD-FOR-A-PERSON); None: none yet.
    reviewed: Sha | None = None
    #: Transcript lines that could not be read, skipped and counted.
    unreadable: int = 0
    #: Where tidy stands: not wanted, wanted, or gathering the facts it decides on.
    tidy: Tidy = TidyNotWanted()
    #: The place's worktree was lost from under it while in flight (its stage stopped short).
    worktree_gone: bool = False
    #: A retry asked its lost worktree again, on its branch as it stands, and it is not yet
    #: seen made (PLACE-REBUILT).
    rebuilding: bool = False
    #: The place's branch is gone: deleted by tidy, or deleted by hand under a place in flight.
    branch_gone: bool = False
    #: The blackboard the steps share (empty: a launch journaled before boards).
    board: str = ""
    #: What a tests gate runs, each an argv.
    tests: PVector[PVector[str]] = attrs.field(factory=pvector)
    #: The budgets, as launched and since raised, and what the run has spent of them.
    budgets: Budgets = attrs.field(factory=Budgets)
    spent: Spent = attrs.field(factory=Spent)
    #: Each loop that ran out of passes, ``name@passes``, in the order they did.
    maxed: PVector[str] = attrs.field(factory=pvector)
    #: The key and attempt, ``key#attempt``, of the last verdict judged of each step: the name
    #: the verdict is archived under before the step's next attempt starts.
    verdicts: PMap[StageName, str] = attrs.field(factory=pmap)
    #: The current parallel block's lanes, by name, in its declared order; empty outside one.
    lanes: PMap[str, LaneRun] = attrs.field(factory=pmap)
    #: The run's head when the current parallel block was entered: its lanes are cut from it.
    entry: Sha | None = None
    #: The current parallel block's lanes that finished, in the order they did.
    finished_lanes: PVector[str] = attrs.field(factory=pvector)
    #: The lanes the block's merge merges, in order (WF-MERGE-ORDER).
    merging: PVector[str] = attrs.field(factory=pvector)
    #: The stage key whose orchestrate block the lanes above are children of; empty: none.
    lanes_key: str = ""
    #: Where the current orchestrate block's join stands, and the tell that told the lead.
    join: JoinStage = JoinStage.OPEN
    join_tell: int | None = None
    #: The held tell that carries a lead's news of its children, which more news joins.
    news_tell: int | None = None
    #: A child's lead's words that came before its agent could be told: its prompt reads them.
    notes: PVector[str] = attrs.field(factory=pvector)
    #: The ids of the lead's notes this child took (``Notified``), each once.
    notified: PSet[str] = attrs.field(factory=pset)
    #: The questions the run's agents asked, in order (``q1`` first), answered or not.
    questions: PVector[Question] = attrs.field(factory=pvector)
    #: The last progress an agent reported (``flume progress``), for status.
    progress: str = ""
    #: Finalize: the head the remote was seen to hold the run's branch at (WF-FINALIZE-ONCE).
    pushed: Sha | None = None
    #: Finalize: the pull request command ran to success, once; what it said of the URL.
    pr_opened: bool = False
    pr_url: str = ""
    #: Finalize: how many times it failed and paused; the next try is one more.
    finalize_failures: int = 0
    #: Every agent started, in order, with where its transcript is (TRANSCRIPT-KEPT).
    attempts: PVector[Attempt] = attrs.field(factory=pvector)
    #: The head a finished place's branch had when a person deleted it (WF-NO-LOST-COMMIT: the
    #: command that restores it is named); None: its branch stands, or tidy deleted it.
    vanished: Sha | None = None
    #: The gates a person passed (``flume pass``), in order.
    passes: PVector[PersonPass] = attrs.field(factory=pvector)
    #: What tidy kept of the place, and why (R10: "flume names it"), as its last look found it.
    kept: PVector[str] = attrs.field(factory=pvector)


class PlaceChanges(TypedDict, total=False):
    """The fields of :class:`Place` that :func:`evolve` may replace, with their types."""

    launch: Launch
    kind: Kind
    path: str
    branch: BranchName
    setup: PVector[PVector[str]]
    life: Life
    stage: StageRun
    now: Instant
    settings: Settings
    copy: PVector[str]
    start: Sha | None
    made: bool
    ready: bool
    completed: PVector[StageName]
    agent: Agent | None
    strays: PSet[SessionId]
    end_failed: bool
    held: PVector[Tell]
    sending: TellSending | None
    tells_given: int
    head: Sha | None
    change: ChangeSeen | None
    tasks: tuple[int, int] | None
    reports: PMap[str, Instant]
    landed_at: Instant | None
    change_archived: bool
    submission: Submission
    submission_note: str
    land_retry_at: Instant | None
    land_blocked: int
    reviewed: Sha | None
    unreadable: int
    tidy: Tidy
    worktree_gone: bool
    rebuilding: bool
    branch_gone: bool
    board: str
    tests: PVector[PVector[str]]
    budgets: Budgets
    spent: Spent
    maxed: PVector[str]
    verdicts: PMap[StageName, str]
    lanes: PMap[str, LaneRun]
    entry: Sha | None
    finished_lanes: PVector[str]
    merging: PVector[str]
    lanes_key: str
    join: JoinStage
    join_tell: int | None
    news_tell: int | None
    notes: PVector[str]
    notified: PSet[str]
    questions: PVector[Question]
    progress: str
    pushed: Sha | None
    pr_opened: bool
    pr_url: str
    finalize_failures: int
    attempts: PVector[Attempt]
    vanished: Sha | None
    passes: PVector[PersonPass]
    kept: PVector[str]


def evolve(place: Place, **changes: Unpack[PlaceChanges]) -> Place:
    """A copy of ``place`` with ``changes``: ``attrs.evolve`` at the cost of a dict copy.

    The fields are all immutable values, so a shallow copy is a full one; mypy checks the
    changes against :class:`PlaceChanges`, and a test holds it to Place's fields.
    """
    copy = object.__new__(Place)
    fields = copy.__dict__
    fields.update(place.__dict__)
    fields.update(changes)
    return copy


def want_tidy(tidy: Tidy) -> Tidy:
    """Tidy wanted: a tidy already wanted or gathering goes on as it was, with its force."""
    if isinstance(tidy, TidyNotWanted):
        return TidyWanted()
    return tidy


def lanes_in_order(place: Place) -> list[LaneRun]:
    """The current parallel block's lanes, in declared order."""
    return sorted(place.lanes.values(), key=lambda run: run.index)


def current_step(place: Place) -> Step:
    """The step the place's current stage runs.

    A parallel block's stage runs no step of the kind's: its lanes run its branches. Its step
    is the merge step, which an agent runs only when a person asks one to resolve a merge that
    conflicted (``flume resolve --agent``): merge the lanes in order, and commit.
    """
    return step_of(place, place.stage.name)


def step_of(place: Place, stage: StageName) -> Step:
    """The step the place's stage ``stage`` runs: the kind's, or else its parallel's merge step.

    Asked of a live agent's stage too (which program it runs): an agent started by ``flume
    resolve --agent`` runs the merge step, which names no stage of the kind.
    """
    try:
        return stage_named(place.kind, stage)
    except KeyError:
        return merge_step(place)


def merge_step(place: Place) -> Step:
    """The step that merges a parallel block's lanes into the run's branch, for an agent."""
    branches = [place.lanes[lane].branch for lane in place.merging if lane in place.lanes]
    listed = ", ".join(branches) or "the lanes' branches"
    why = place.stage.words or "the merge conflicted"
    text = (
        f"Merge these branches into this worktree's branch, {place.branch}, one at a time in "
        f"this order with git merge --no-ff: {listed}. A branch already merged needs nothing. "
        f"Where a merge conflicts ({why}), resolve each conflict so that what both sides meant "
        "is kept, run the project's checks if it has any, and commit the merge. Do not rebase, "
        "reset or push."
    )
    return Step(
        name=place.stage.name,
        prompt=text.replace("$", "$$"),
        deliverable=Commit(),
    )


def merge_action(place: Place) -> MergeLanes:
    """WF-MERGE-ORDER: merge the lanes chosen, in order, in the run's worktree."""
    runs = [place.lanes[lane] for lane in place.merging if lane in place.lanes]
    return MergeLanes(
        path=place.path,
        branch=place.branch,
        lanes=pvector(run.lane for run in runs),
        branches=pvector(run.branch for run in runs),
        starts=pvector(place.start if run.from_base else place.entry for run in runs),
        heads=pvector(run.head for run in runs),
        spread=any(run.spread for run in runs),
    )


def open_question(place: Place) -> Question | None:
    """WF-ASK-DEFERS-GATE: the live agent's question still open, if any.

    Open: not answered, or answered and the answer not yet in the asker's transcript (a tell
    held or in flight). A question of an agent gone is no longer open: its asker is not there.
    """
    agent = place.agent
    if agent is None or agent.ending:
        return None
    in_flight = {tell.number for tell in place.held}
    if place.sending is not None:
        in_flight.add(place.sending.tell.number)
    for question in place.questions:
        if question.session != agent.session:
            continue
        if question.answer is None or question.tell in in_flight:
            return question
    return None


def leading(place: Place) -> Orchestrate | None:
    """The orchestrate block whose lead is the run's current step, if it stands at one."""
    if place.stage.resolving:
        return None
    return orchestrates(place.kind.body).get(place.stage.name)


def waits_on_children(place: Place) -> bool:
    """WF-LEAD-WAITS-JOIN: a lead's gate waits until its children joined and it was told so.

    Told: the join's tell is neither held nor in flight (the lead's transcript holds it).
    """
    if leading(place) is None:
        return False
    if place.join is not JoinStage.TOLD:
        return True
    waiting = {tell.number for tell in place.held}
    if place.sending is not None:
        waiting.add(place.sending.tell.number)
    return place.join_tell in waiting


def deferred(place: Place) -> bool:
    """The live agent's gate is not judged now: a question of its open, or a lead's join."""
    return open_question(place) is not None or waits_on_children(place)


def finalize_action(place: Place) -> Push | OpenPR | Land | None:
    """WF-FINALIZE-ONCE: the kind's next finalize act not yet observed done; None: none left.

    The push first (once the remote holds the branch's head it is done), then the pull
    request (once it ran to success it is done). WF-PUSH-ONLY-RUN-BRANCH: the push names the
    run's own branch, nothing else.
    """
    plan = place.kind.finalize
    if plan is None:
        return None
    if plan.land:
        if place.landed_at is not None:
            return None
        return Land(
            path=place.path,
            branch=place.branch,
            base=place.launch.base,
            start=place.start,
            reviewed=place.reviewed,
        )
    if plan.push and (place.pushed is None or place.pushed != place.head):
        return Push(path=place.path, remote=plan.push, branch=place.branch, head=place.head)
    if plan.pr and not place.pr_opened:
        ran = list(steps(place.kind.body))
        verdicts = [found.name for found in ran if isinstance(found.deliverable, Verdict)]
        return OpenPR(
            path=place.path,
            argv=plan.pr,
            base=place.launch.base,
            branch=place.branch,
            title=_title(place.launch.brief),
            board=place.board,
            handoffs=pvector(found.name for found in ran),
            verdict=verdicts[-1] if verdicts else None,
            attempt=place.finalize_failures + 1,
        )
    return None


def _title(brief: str) -> str:
    """A pull request's title: the brief's first line that says something, cut to 72 characters.

    A launch's brief always has one (an empty brief is refused at launch).
    """
    first = next((line.strip() for line in brief.splitlines() if line.strip()), "")
    return first if len(first) <= 72 else first[:71].rstrip() + "…"


#: The option of ``flume raise`` that raises each budget.
_RAISE_OPTIONS = {
    "turns": "--turns",
    "tokens": "--tokens",
    "wall_minutes": "--wall",
    "retries": "--retries",
    "turns_per_attempt": "--turns-per-attempt",
}


def resolve_command(place: Place, paused: Paused) -> str:  # noqa: PLR0911 (one arm per cause)
    """WF-PAUSE-HAS-A-WAY-OUT: the command that lets a run paused so go on.

    A budget's names the option that raises it; a lane's names the lane.
    """
    name = place.launch.place
    cause = paused.cause
    match cause:
        case PauseCause.APPROVAL:
            return f"flume approve {name}"
        case PauseCause.BUDGET:
            options = [_RAISE_OPTIONS.get(each, "--turns") for each in paused.spent.split(" and ")]
            return f"flume raise {name} {' '.join(f'{option} +N' for option in options)}"
        case PauseCause.GATE_BLOCKED | PauseCause.LOOP_MAX | PauseCause.STALLED:
            return f"flume resume {name} (or flume retry {name} with words)"
        case PauseCause.MERGE_CONFLICT:
            return (
                f"flume resolve {name} --by-hand (merge it yourself in {place.path} and commit) "
                f"or flume resolve {name} --agent"
            )
        case PauseCause.MERGE_FAILED:
            return (
                f"flume resume {name} (once it is mended: flume merges the lanes again) or "
                f"flume resolve {name} --by-hand (merge them yourself in {place.path} and commit)"
            )
        case PauseCause.LANE_DROPPED:
            lane = paused.lane or "LANE"
            return (
                f"flume retry {name} --step {lane} (a fresh lane from the block's entry) or "
                f"flume resolve {name} --without {lane} (go on without it)"
            )
        case PauseCause.FINALIZE_FAILED:
            return f"flume resume {name} (once the remote or the pull request command is mended)"
        case _:
            assert_never(cause)


def holds_work(place: Place) -> bool:
    """A place out of flight whose branch is its work's only home, tidy not at it.

    A finished place not landed (a lane its run has yet to merge), or a dropped one no tidy is
    looking at (tidy deletes only a branch its base holds, and names one a person deleted).
    """
    return place.made and (
        (place.life is Life.FINISHED and place.landed_at is None)
        or (place.life is Life.DROPPED and isinstance(place.tidy, TidyNotWanted))
    )


def restore_command(place: Place, head: str) -> str:
    """WF-NO-LOST-COMMIT: the exact command that puts the place's branch back at ``head``."""
    return restore_branch(place.launch.repository, place.branch, head)


def restore_branch(repository: str, branch: str, head: str) -> str:
    """The exact command that puts ``branch`` of ``repository`` back at ``head``."""
    return f"git -C {repository} update-ref refs/heads/{branch} {head}"


def in_workflow(place: Place) -> bool:
    """The place runs a workflow's rules: its kind is a workflow, or it is a workflow's lane.

    A lane (a parallel's branch, an orchestrate's child) may run one plain step, yet it is a
    block of its run's workflow: its gates are judged at its turn's end and its stalls named.
    """
    return place.launch.parent is not None or is_workflow(place.kind)


def is_live(place: Place) -> bool:
    """An agent runs in the place and is not being ended."""
    return place.agent is not None and not place.agent.ending


def has_deliverable(place: Place) -> bool:
    """The current stage's deliverable exists, made since the stage started (R7).

    "A deliverable ... counts only when made since its stage started."
    """
    stage = place.stage
    deliverable = current_step(place).deliverable
    match deliverable:
        case Commit():
            # A stage that never started (its setup failed) has no head to be new against.
            return (
                stage.start_head is not None
                and place.head is not None
                and place.head != stage.start_head
            )
        case ChangeWritten():
            change = place.change
            return (
                change is not None
                and _is_new_head(place, change.head)
                and change.written
                and change.planning_complete
                and change.valid is not False
            )
        case TasksTicked():
            change = place.change
            return (
                change is not None
                and _is_new_head(place, change.head)
                and change.total > 0
                and change.ticked == change.total
            )
        case ReportFile(path=path):
            modified = place.reports.get(path)
            return modified is not None and modified >= stage.started_at
        case Landing(archived_change=archived):
            return (
                place.landed_at is not None
                and place.landed_at >= stage.started_at
                and (place.change_archived or not archived)
            )
        case Verdict() | Artifact() | PassingTests() | Approval():
            # Judged when the agent's turn ends (workflow/gates.py), never as evidence appears.
            return False
        case _:
            assert_never(deliverable)


def _is_new_head(place: Place, head: Sha | None) -> bool:
    """``head`` is a commit the branch points at now, made since the stage started."""
    return head is not None and head == place.head and head != place.stage.start_head


def is_quiet(place: Place) -> bool:
    """The agent is quiet (R7).

    No agent is live; or it has waited for ``quiet_seconds`` and its pane has been still as
    long; and no tell is held or in flight for it, and no question of its open (an agent
    waiting on its answer is not done: WF-ASK-DEFERS-GATE).
    """
    if place.held or place.sending is not None or deferred(place):
        return False
    agent = place.agent
    if agent is None:
        return True
    return (
        agent.activity in {Activity.WAITING, Activity.STOPPED}
        and place.now - agent.activity_since >= place.settings.quiet_seconds
        and place.now - agent.last_output_at >= place.settings.quiet_seconds
    )


def with_activity(agent: Agent, activity: Activity, at: Instant) -> Agent:
    """The agent doing ``activity``; the instant it began is kept while it goes on."""
    said_at = Instant(max(agent.said_at, at))
    if activity is agent.activity:
        return agent if said_at == agent.said_at else attrs.evolve(agent, said_at=said_at)
    return attrs.evolve(agent, activity=activity, activity_since=at, said_at=said_at)


#: What a rule returns: the place after it, and the actions it decided, in order.
Outcome = tuple[Place, tuple[Action, ...]]
