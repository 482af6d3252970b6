"""Actions: what the core asks the shell to do, as values.

Theory of operation: each action is an imperative the shell performs and reports back on as an
observation (``StartAgent`` is answered by ``AgentStarted`` or ``ActionFailed``); the core never
assumes an effect. ``Report`` actions are the place's events, the stream callers follow. Never
subclass these (h11).
"""

from __future__ import annotations

import enum

import attrs
from pyrsistent import pvector
from pyrsistent.typing import PVector

from flume.core.ids import BranchName, Marker, PlaceName, SessionId, Sha, StageName
from flume.core.kinds import Gate, Kind
from flume.core.launch import AgentSettings, Launch
from flume.core.settings import Settings


@attrs.frozen(kw_only=True)
class MakeWorktree:
    """R1: add the worktree at ``path`` on a new ``branch`` cut from ``base``'s current revision."""

    repository: str
    path: str
    branch: BranchName
    base: BranchName
    #: The base's revision at launch; None: the base's revision when the shell makes it.
    start: Sha | None = None
    #: Only look: report the worktree if it was made (before a restart), make none (the work
    #: was dropped before it was seen made).
    look_only: bool = False
    #: Add it again on ``branch`` as it stands, its commits kept: the place's worktree was
    #: removed under it and a person retried it (PLACE-REBUILT).
    again: bool = False
    #: With ``again``: the head flume last saw the branch at, which restores it if it is gone
    #: too (WF-NO-LOST-COMMIT: the refusal names the exact command).
    head: Sha | None = None


@attrs.frozen(kw_only=True)
class RunSetup:
    """R2: make the place ready, its output journaled.

    First the files named are copied from the main worktree ``source``; then exactly the
    commands the repository declares run in the place.
    """

    path: str
    commands: PVector[PVector[str]] = attrs.field()
    source: str = ""
    copy: PVector[str] = attrs.field(factory=pvector)


@attrs.frozen(kw_only=True)
class StartAgent:
    """R4: start a fresh agent for ``stage``'s ``attempt`` in the place, in a pane of its own."""

    path: str
    stage: StageName
    attempt: int
    agent: AgentSettings
    #: The step is sandboxed: its agent may write only its worktree, its board and what git
    #: needs to commit there, and is not started at all where that cannot be held.
    sandbox: bool = False


@attrs.frozen(kw_only=True)
class SendPrompt:
    """R5: paste ``text`` literally into the agent's input and submit it (send ``send`` of 2)."""

    session: SessionId
    stage: StageName
    attempt: int
    send: int
    marker: Marker
    text: str


@attrs.frozen(kw_only=True)
class SendTell:
    """R6: paste the caller's tell into the agent's input and submit it (send ``send`` of 2)."""

    session: SessionId
    number: int
    send: int
    marker: Marker
    text: str


@attrs.frozen(kw_only=True)
class EndAgent:
    """End the agent's process and close its pane."""

    session: SessionId
    reason: str


@attrs.frozen(kw_only=True)
class Land:
    """Hand the branch to the repository's lander, to land on ``base``.

    ``start`` is the base's revision at launch: the place's own commits are those after it, and
    only they are carried onto the base (a commit since dropped from the base stays dropped).
    A fenced run's landing that changes what runs outside lands only at ``reviewed``.
    """

    path: str
    branch: BranchName
    base: BranchName
    start: Sha | None = None
    #: The head a person approved landing (LAND-HELD-FOR-A-PERSON); None: none was asked.
    reviewed: Sha | None = None


@attrs.frozen(kw_only=True)
class GatherTidyFacts:
    """Look at the place's worktree and branch, and report them as ``TidyFactsSeen`` (R10)."""

    path: str
    branch: BranchName
    base: BranchName
    force: bool = False


@attrs.frozen(kw_only=True)
class RemoveWorktree:
    """R10: remove the place's worktree; ``force`` only when the caller said so."""

    path: str
    force: bool = False


@attrs.frozen(kw_only=True)
class DeleteBranch:
    """R10: delete the branch; asked for only when its base holds all its work."""

    branch: BranchName
    base: BranchName
    #: The head tidy judged; the shell deletes only if the branch still points here.
    head_was: Sha | None = None


@attrs.frozen(kw_only=True)
class KeepBranch:
    """R10: tidy leaves the branch, and says why."""

    branch: BranchName
    reason: str


@attrs.frozen(kw_only=True)
class KeepPlace:
    """R10: tidy leaves the worktree, and says why."""

    path: str
    reason: str


class Event(enum.Enum):
    """What a place's report is about: the events callers follow."""

    LAUNCHED = "launched"
    PLACE_MADE = "place-made"
    SETUP_FAILED = "setup-failed"
    STAGE_STARTED = "stage-started"
    STAGE_WAITS = "stage-waits"  #: the stage waits on the caller's word
    PROCEEDED = "proceeded"  #: the caller's word released a waiting stage
    RETRIED = "retried"  #: the caller retried a stage that stopped short
    PROMPT_DELIVERED = "prompt-delivered"
    PROMPT_MISSING = "prompt-missing"  #: a send was not found in the transcript
    PROMPT_RETYPED = "prompt-retyped"  #: a send decided but never shown typed, typed again
    NEVER_BEGAN = "never-began"
    DELIVERABLE = "deliverable"  #: the stage's deliverable exists
    STAGE_ENDED = "stage-ended"
    STOPPED_SHORT = "stopped-short"
    TELL_HELD = "tell-held"
    TELL_DELIVERED = "tell-delivered"
    TELL_LOST = "tell-lost"
    TELL_DROPPED = "tell-dropped"
    SUBMITTED = "submitted"
    CHECKS_FAILED = "checks-failed"
    LANDING_BLOCKED = "landing-blocked"  #: the base repository's state keeps the base from moving
    LANDING_HELD = (
        "landing-held"  #: a sandboxed run's change to what runs outside waits on a person
    )
    LANDED = "landed"
    FINISHED = "finished"
    DROPPED = "dropped"
    TIDIED = "tidied"
    KEPT = "kept"
    FAILED = "failed"  #: an action failed; the place waits for the caller
    UNREADABLE = "unreadable"  #: transcript lines skipped
    TURN_ENDED = "turn-ended"  #: the agent's turn ended; the text says the tokens it used
    GATE_PASSED = "gate-passed"  #: a step's gate, judged at its turn's end, passed
    GATE_FAILED = "gate-failed"  #: a step's gate did not pass; the agent is told why, once
    LOOP_MAX = "loop-max"  #: a loop ran its last pass without its until step's done
    PAUSED = "paused"  #: the run waits on a person; the text names the cause and the command
    RESUMED = "resumed"  #: a person's word (approve, resume, raise) let the run go on
    NUDGED = "nudged"  #: a workflow step's agent said nothing mid-turn; flume nudged it once
    LANE_LAUNCHED = "lane-launched"  #: a parallel block's lane was launched as a place of its own
    LANE_ENDED = "lane-ended"  #: a lane finished its branch, or ended without (dropped)
    MERGED = "merged"  #: a parallel block's finished lanes were merged into the run's branch
    MERGE_CONFLICT = "merge-conflict"  #: merging a lane conflicted; the merge was undone
    PROGRESS = "progress"  #: a step's agent reported progress (``flume progress``)
    ANSWERED = "answered"  #: a question was answered; the answer goes to the asker as a tell
    PUSHED = "pushed"  #: finalize: the run's branch is on the remote at its head
    PR_OPENED = "pr-opened"  #: finalize: the pull request command ran, once; the text has its URL
    TRANSCRIPT = "transcript"  #: an attempt's agent wrote its transcript: the text names the file
    SPAWNED = "spawned"  #: a lead spawned a child (``flume spawn``): the text names its goal
    NOTIFIED = "notified"  #: a lead's words went to its children (``flume notify``)
    CHILD = "child"  #: news of a child (started, asked, paused, finished) went to its lead
    ASKED = "asked"  #: a child's question went to its lead, who answers it
    JOINED = "joined"  #: every child of an orchestrate block is terminal; the lead is told
    COMPOSED = "composed"  #: a lead composed a child run (``flume compose``), its slice reserved
    #: a finished place's branch was deleted by a person; the text names the command restoring it
    BRANCH_GONE = "branch-gone"


@attrs.frozen(kw_only=True)
class Report:
    """Tell whoever follows the place what happened."""

    event: Event
    text: str
    stage: StageName | None = None


@attrs.frozen(kw_only=True)
class ArchiveVerdict:
    """Move ``<board>/<step>/verdict.json``, if there is one, to ``history/<archive_as>.json``.

    Asked before a step's agent starts: a verdict an earlier attempt wrote never passes this
    attempt's gate (WF-VERDICT-SINCE-DELIVERY).
    """

    board: str
    stage: StageName
    archive_as: str


@attrs.frozen(kw_only=True)
class JudgeGate:
    """Read the facts the step's gate is judged on, once the agent's turn ended.

    For a verdict: ``<board>/<step>/verdict.json``; an artifact: ``<path>/<artifact>``; tests:
    run each of ``tests`` in the place's worktree, within ``deadline`` seconds. The shell reports
    what it found (``GateRead``); the core judges.
    """

    path: str
    board: str
    stage: StageName
    key: str
    attempt: int
    gate: Gate
    tests: PVector[PVector[str]] = attrs.field(factory=pvector)
    deadline: float = 600.0


@attrs.frozen(kw_only=True)
class LaunchLane:
    """Journal the launch of one lane of a parallel block: a place of its own.

    The lane is the place ``<kind>--<name>+<lane>`` on the branch ``<prefix>/<name>+<lane>``, cut
    from ``start`` (the run's head when the block was entered), running the branch's block as
    its whole body; its base is the run's branch, and its board the run's. The shell journals
    this launch once: a lane whose journal exists already (a restart) is not launched again.
    A lane of a block that spreads (``launch.spread``, WF-SPREAD) is handed to the fleet
    instead, which launches it on whichever host takes it, with a board of its own there.
    """

    repository: str
    parent: PlaceName
    lane: str
    launch: Launch
    kind: Kind
    setup: PVector[PVector[str]] = attrs.field(factory=pvector)
    copy: PVector[str] = attrs.field(factory=pvector)
    start: Sha | None = None
    settings: Settings = attrs.field(factory=Settings)
    board: str = ""
    tests: PVector[PVector[str]] = attrs.field(factory=pvector)


@attrs.frozen(kw_only=True)
class NotifyLane:
    """Journal a lead's words (``flume notify``) into the child place ``place``'s journal.

    The child's own rules decide: a live agent is told, one not started yet reads them in its
    prompt. A child whose journal is gone takes nothing.
    """

    repository: str
    place: PlaceName
    text: str
    #: Which of its run's notes it is (``<run>#<n>``): a child takes each once, so the notes
    #: asked again after a restart (RESTART-PENDING) are not told twice.
    id: str = ""
    #: The child is a fleet place (WF-SPREAD): its journal is on its host, reached through
    #: the fleet.
    spread: bool = False


class LaneOrder(enum.Enum):
    """What the run asks of one of its lanes, as a person would with the same command."""

    DROP = "drop"  #: end its agent and abandon its work (a ``first`` join's other lanes)
    TIDY = "tidy"  #: its branch was merged: remove its worktree and branch


@attrs.frozen(kw_only=True)
class OrderLane:
    """Journal ``order`` into the lane place ``place``'s journal, as its command would.

    A lane whose journal is gone (tidied and set aside) takes nothing.
    """

    repository: str
    place: PlaceName
    order: LaneOrder
    #: The lane is a fleet place (WF-SPREAD): its journal is on its host, reached through the
    #: fleet.
    spread: bool = False


@attrs.frozen(kw_only=True)
class MergeLanes:
    """Merge each lane's branch, in this order, into the run's ``branch`` in its worktree ``path``.

    No agent lives in the worktree meanwhile. A lane already merged is passed over (after a
    restart, or merged by hand) once the run's tree holds its changes (those since ``starts``,
    the commit each lane was cut from); the first that conflicts is undone (``git merge
    --abort``) and reported with the files it conflicted in, and the rest wait.
    """

    path: str
    branch: BranchName
    lanes: PVector[str]
    branches: PVector[BranchName]
    starts: PVector[Sha | None] = attrs.field(factory=pvector)
    #: The head each lane ended at, as its run was told (``LaneEnded``).
    heads: PVector[Sha | None] = attrs.field(factory=pvector)
    #: The lanes are fleet places (WF-SPREAD): their branches are fetched from the fleet's
    #: remote first, each at the head it ended at, and the run's branch pushed there once merged.
    spread: bool = False


@attrs.frozen(kw_only=True)
class Push:
    """Push the run's ``branch`` to ``remote`` as it stands at ``head``: that branch alone.

    Never forced, never the base (WF-PUSH-ONLY-RUN-BRANCH). Run in the run's worktree
    ``path``. A remote that holds ``head`` already is reported pushed without pushing again.
    """

    path: str
    remote: str
    branch: BranchName
    head: Sha | None


@attrs.frozen(kw_only=True)
class OpenPR:
    """Run the kind's pull request command once (WF-FINALIZE-ONCE), in the worktree ``path``.

    ``argv`` with ``{base}``, ``{branch}``, ``{title}`` and ``{body}`` replaced; the body is a
    file the shell writes from the board: ``task.md``, each of ``handoffs``' ``handoff.md`` (in
    the order the steps ran) and the last verdict, ``verdict``'s. ``attempt`` counts the tries
    a person asked for: a try started before a restart is waited for, never run again.
    """

    path: str
    argv: PVector[str]
    base: BranchName
    branch: BranchName
    title: str
    board: str
    handoffs: PVector[StageName] = attrs.field(factory=pvector)
    verdict: StageName | None = None
    attempt: int = 1


Action = (
    MakeWorktree
    | RunSetup
    | StartAgent
    | SendPrompt
    | SendTell
    | EndAgent
    | Land
    | GatherTidyFacts
    | RemoveWorktree
    | DeleteBranch
    | KeepBranch
    | KeepPlace
    | Report
    | ArchiveVerdict
    | JudgeGate
    | LaunchLane
    | OrderLane
    | NotifyLane
    | MergeLanes
    | Push
    | OpenPR
)

ACTION_TYPES: tuple[type[Action], ...] = (
    MakeWorktree,
    RunSetup,
    StartAgent,
    SendPrompt,
    SendTell,
    EndAgent,
    Land,
    GatherTidyFacts,
    RemoveWorktree,
    DeleteBranch,
    KeepBranch,
    KeepPlace,
    Report,
    ArchiveVerdict,
    JudgeGate,
    LaunchLane,
    OrderLane,
    NotifyLane,
    MergeLanes,
    Push,
    OpenPR,
)


class ActionName(enum.Enum):
    """Which action it was, by its type: an ``ActionFailed`` names the action that failed.

    Each value is the action's class name, as journals have always written it.
    """

    MAKE_WORKTREE = "MakeWorktree"
    RUN_SETUP = "RunSetup"
    START_AGENT = "StartAgent"
    SEND_PROMPT = "SendPrompt"
    SEND_TELL = "SendTell"
    END_AGENT = "EndAgent"
    LAND = "Land"
    GATHER_TIDY_FACTS = "GatherTidyFacts"
    REMOVE_WORKTREE = "RemoveWorktree"
    DELETE_BRANCH = "DeleteBranch"
    KEEP_BRANCH = "KeepBranch"
    KEEP_PLACE = "KeepPlace"
    REPORT = "Report"
    ARCHIVE_VERDICT = "ArchiveVerdict"
    JUDGE_GATE = "JudgeGate"
    LAUNCH_LANE = "LaunchLane"
    ORDER_LANE = "OrderLane"
    NOTIFY_LANE = "NotifyLane"
    MERGE_LANES = "MergeLanes"
    PUSH = "Push"
    OPEN_PR = "OpenPR"

    @classmethod
    def of(cls, action: Action) -> ActionName:
        """The name of ``action``'s type."""
        return cls(type(action).__name__)
