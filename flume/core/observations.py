"""Observations: the facts the shell saw, and the commands callers gave, as values.

Theory of operation: everything the core learns arrives here, clock included (each fact carries
``at``). Facts are nouns or past tense; the shell never decides what a fact means. Caller commands
(launch, tell, stop, retry, drop, proceed, submit, needs, tidy) are observations too, so the
journal of one place is the whole story of it and :func:`flume.core.step.replay` rebuilds the
place from it. Never subclass these (h11).
"""

from __future__ import annotations

import enum

import attrs
from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from flume.core.actions import ActionName
from flume.core.choices import AgentName
from flume.core.ids import BranchName, Instant, Marker, SessionId, Sha, StageName
from flume.core.kinds import Kind
from flume.core.launch import Launch
from flume.core.settings import Settings

# --- caller commands -------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Launched:
    """A launch, its kind resolved and the repository's setup declaration read (R1, R2)."""

    at: Instant
    launch: Launch
    kind: Kind
    #: The commands the repository's config names to make a worktree ready, each an argv.
    setup: PVector[PVector[str]] = attrs.field(factory=pvector)
    #: Files git ignores that the place needs, copied from the main worktree (relative paths).
    copy: PVector[str] = attrs.field(factory=pvector)
    #: The base's revision when the launch was made: the place's branch is cut from it (R1).
    start: Sha | None = None
    #: The thresholds the place lives by, frozen at launch so that its replay depends on its
    #: journal alone. None: the settings ``step`` was called with at launch.
    settings: Settings | None = None
    #: The place's blackboard, ``<repository>/places/.boards/<place>`` (a workflow's steps
    #: write their handoffs and verdicts there); empty in a launch journaled before boards.
    board: str = ""
    #: What a ``tests`` gate runs, each an argv, frozen at launch: ``[tests] command``, else
    #: ``[land] checks``.
    tests: PVector[PVector[str]] = attrs.field(factory=pvector)


@attrs.frozen(kw_only=True)
class Told:
    """The caller's words for the place's agent (a tell, R6).

    ``step``: the step the words are for (``flume tell --step``), its key or name; refused
    unless the place is at it (STEP-NAMED). Empty: whatever step the place is at.
    """

    at: Instant
    text: str
    step: str = ""


@attrs.frozen(kw_only=True)
class ProgressSaid:
    """The agent reported progress (``flume progress``): journaled, shown, never a stop."""

    at: Instant
    words: str
    session: SessionId | None = None


@attrs.frozen(kw_only=True)
class AskSaid:
    """The agent asked a question (``flume ask``), with the answers it offers, if any."""

    at: Instant
    question: str
    options: PVector[str] = attrs.field(factory=pvector)
    session: SessionId | None = None


@attrs.frozen(kw_only=True)
class AnswerGiven:
    """A person answered question ``question`` (``q1``) of the place (``flume answer``)."""

    at: Instant
    question: str
    text: str
    #: Given by the lead of the asker's run, from its own session (WF-ASK-ONE-ANSWERER): the
    #: shell sets it once it has seen the session is the live lead of the asker's parent.
    by_lead: bool = False
    #: Given by the caller while the asker's run had no live lead (paused, or past its block):
    #: with no lead above, the caller answers.
    no_lead: bool = False


@attrs.frozen(kw_only=True)
class SpawnSaid:
    """A lead spawned a child of its block's template (``flume spawn --goal``)."""

    at: Instant
    goal: str
    #: The agent the child runs; None: the template's.
    agent: AgentName | None = None
    session: SessionId | None = None


@attrs.frozen(kw_only=True)
class NotifySaid:
    """A lead's words for its child ``to`` (a child's name), or ``all`` (``flume notify``)."""

    at: Instant
    to: str
    text: str
    session: SessionId | None = None


@attrs.frozen(kw_only=True)
class ComposeSaid:
    """A lead composed a child run (``flume compose FILE``): ``kind`` read from the file.

    Its budget slice, ``turns`` and ``tokens``, is reserved from the run's ledger; ``base``:
    the child is cut from the run's base rather than its head.
    """

    at: Instant
    kind: Kind
    turns: int
    tokens: int
    base: bool = False
    session: SessionId | None = None


@attrs.frozen(kw_only=True)
class StopAsked:
    """The caller asked to end the agent that went the wrong way (R9)."""

    at: Instant


@attrs.frozen(kw_only=True)
class RetryAsked:
    """The caller asked to run the short stage again with a fresh agent and these words (R9).

    ``step``: the step to retry (``flume retry --step``), as :class:`Told`'s.
    """

    at: Instant
    words: str = ""
    step: str = ""


@attrs.frozen(kw_only=True)
class DropAsked:
    """The caller abandoned the work (R9)."""

    at: Instant


@attrs.frozen(kw_only=True)
class ProceedAsked:
    """The caller's word for a stage that waits on it (R7)."""

    at: Instant


@attrs.frozen(kw_only=True)
class SubmitAsked:
    """The agent ran ``flume submit`` in the place."""

    at: Instant
    #: The session of the agent that ran it, when the shell knows it (``FLUME_SESSION``).
    session: SessionId | None = None


@attrs.frozen(kw_only=True)
class NeedsSaid:
    """The agent ran ``flume needs`` in the place: it stops short with these words (R8)."""

    at: Instant
    words: str
    #: The session of the agent that ran it, when the shell knows it (``FLUME_SESSION``).
    session: SessionId | None = None


@attrs.frozen(kw_only=True)
class TidyAsked:
    """The caller asked to tidy the place; ``force`` lets a dirty worktree go (R10)."""

    at: Instant
    force: bool = False


# --- facts about the world -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class WorktreeMade:
    """flume made the place's worktree on its branch at ``head`` (R1)."""

    at: Instant
    path: str
    branch: BranchName
    head: Sha


@attrs.frozen(kw_only=True)
class SetupFinished:
    """The repository's setup commands ran in the place (R2)."""

    at: Instant
    ok: bool
    output: str = ""


@attrs.frozen(kw_only=True)
class ActionFailed:
    """An action the core asked for could not be carried out: what it did comes back as seen."""

    at: Instant
    action: ActionName
    argv: PVector[str] = attrs.field(factory=pvector)
    status: int = 1
    output: str = ""


@attrs.frozen(kw_only=True)
class AgentStarted:
    """An agent was started for ``stage``'s ``attempt``, with the session id the shell chose."""

    at: Instant
    stage: StageName
    attempt: int
    session: SessionId
    pane: str


@attrs.frozen(kw_only=True)
class AgentReady:
    """The agent takes input (its registry entry or a hook said so; not a fixed sleep)."""

    at: Instant
    session: SessionId


@attrs.frozen(kw_only=True)
class PromptTyped:
    """Send ``send`` of the prompt marked ``marker`` was typed and submitted in the pane.

    The shell reports it after submitting, and the pane keeps it (a tmux pane option set in the
    same command as the Enter), so a shell killed between submitting and journaling reports it
    again when it comes back.
    """

    at: Instant
    session: SessionId
    marker: Marker
    send: int


@attrs.frozen(kw_only=True)
class PromptUnwritten:
    """The pane's own mark shows send ``send`` of the prompt marked ``marker`` never made.

    Reported only where the mark can say so: a printed agent's file, which holds the prompt once
    it is written and nothing before (a tmux pane's mark says only what was typed).
    """

    at: Instant
    session: SessionId
    marker: Marker
    send: int


class Activity(enum.Enum):
    """What an agent is doing, in the words of R11."""

    WORKING = "working"  #: a turn is running
    WAITING = "waiting"  #: the prompt box waits for input
    ASKING = "asking"  #: a person must answer: a permission dialog or a question tool
    STOPPED = "stopped"  #: no agent is live
    UNKNOWN = "unknown"  #: flume cannot read it


@attrs.frozen(kw_only=True)
class AgentStateSeen:
    """A hook or the live-session registry said what the agent is doing."""

    at: Instant
    session: SessionId
    activity: Activity


class Author(enum.Enum):
    """Who wrote a line of an agent's transcript."""

    PERSON = "person"  #: a person typed (or pasted) it: the only lines a prompt is found in
    AGENT = "agent"  #: the agent: its text, its thinking, a tool it calls
    TOOL = "tool"  #: a tool's result, handed back to the agent: the turn goes on
    SYSTEM = "system"  #: the agent's program itself: notes, injected context, bookkeeping


@attrs.frozen(kw_only=True)
class TranscriptEntry:
    """One line of the agent's transcript, in facts any agent's transcript gives.

    Each agent's reader in the shell says who wrote the line, whether it asks a person and
    whether it ends a turn (``flume/shell/agents/claude_lines.py``, ``codex_lines.py``); the
    rules read only these facts.
    """

    at: Instant
    session: SessionId
    author: Author
    text: str = ""
    #: The agent asks a person (a question tool): it waits on their answer (R11).
    asks: bool = False
    #: The line ends the agent's turn: it waits for input.
    ends_turn: bool = False
    #: The shell's own record of the line as it read it, which its journal writes: opaque to
    #: the rules (no rule reads it), and no part of the entry's equality.
    spelling: object = attrs.field(default=None, eq=False)


@attrs.frozen(kw_only=True)
class Usage:
    """The tokens a model reported using, summed over a turn's messages.

    ``input`` counts the prompt's tokens read afresh, ``cache_read`` those read from the
    provider's cache, ``cache_creation`` those written to it, ``output`` what the model wrote
    (its reasoning included). A turn whose agent reported no usage has none at all
    (``TurnEnded.usage`` is None): unknown, never zero.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_creation: int = 0

    @property
    def total(self) -> int:
        """Every token the usage counts."""
        return self.input + self.output + self.cache_read + self.cache_creation

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_creation=self.cache_creation + other.cache_creation,
        )


@attrs.frozen(kw_only=True)
class GateRead:
    """What the shell found of a step's gate after its turn ended (the answer to ``JudgeGate``).

    ``found``: the verdict file or the artifact exists, or the tests ran to their end (not
    killed at their deadline). ``result`` and ``summary``: the verdict's, as written (a verdict
    not JSON, or with no ``result``, is found with ``problem`` saying so); for tests, ``code`` is
    the exit status of the first command that failed (0: all passed) and ``summary`` the end of
    its output.
    """

    at: Instant
    key: str
    attempt: int
    found: bool
    result: str = ""
    summary: str = ""
    code: int | None = None
    problem: str = ""


@attrs.frozen(kw_only=True)
class ApproveAsked:
    """A person approved the step that waits on an approval gate."""

    at: Instant


@attrs.frozen(kw_only=True)
class PassAsked:
    """A person passed the gate of a step the run holds blocked (``flume pass``), saying why.

    A person's decision, journaled with their words: the step ends as a gate passed would, and
    the run goes on. ``step``: the step named (``flume pass --step``), as :class:`Told`'s.
    """

    at: Instant
    why: str
    step: str = ""


@attrs.frozen(kw_only=True)
class ResumeAsked:
    """A person asked a paused run to go on."""

    at: Instant


@attrs.frozen(kw_only=True)
class ResolveAsked:
    """A person resolved a paused merge: ``agent``, an agent merges it; else they did, by hand.

    By hand, the shell says what it found in the run's worktree when asked, for the rules to
    judge: ``under_way``, a merge is under way there (``MERGE_HEAD``, no commit concluded it);
    ``missing``, each lane the run's head does not hold, with why (its head is not in the
    run's history, or a file it changed is as it was at the block's entry); for a lane whose
    changes are missing from the tree, ``restore`` names the files its branch holds and
    ``remove`` those it deleted, for the commands that take them back. ``without``: go on
    without that lane, which ended unfinished (a person's decision, ``--without``).
    """

    at: Instant
    agent: bool = False
    without: str = ""
    under_way: bool = False
    missing: PMap[str, str] = attrs.field(factory=pmap)
    restore: PMap[str, PVector[str]] = attrs.field(factory=pmap)
    remove: PMap[str, PVector[str]] = attrs.field(factory=pmap)


@attrs.frozen(kw_only=True)
class LaneEnded:
    """A lane of the current parallel block ended: ``finished`` its branch, or not (dropped).

    The supervisor journals it into the run's journal when it reads the lane's own.
    """

    at: Instant
    lane: str
    finished: bool
    #: The lane's branch's head when it ended.
    head: Sha | None = None
    #: What the lane spent of its budgets: counted into the run's (WF-BUDGET-PAUSES).
    turns: int = 0
    tokens: int = 0


@attrs.frozen(kw_only=True)
class ChildNews:
    """News of child ``lane`` of the run's orchestrate block, for its lead (once each ``id``).

    The supervisor journals it into the run's journal when it reads the child's own: started,
    asked (``q1``), progress, paused, stopped short.
    """

    at: Instant
    lane: str
    id: str
    text: str


@attrs.frozen(kw_only=True)
class Notified:
    """A lead's words came to this child (``flume notify``): told, or kept for its prompt."""

    at: Instant
    text: str
    #: The note's id in its run (``<run>#<n>``); one already taken is passed over.
    id: str = ""


@attrs.frozen(kw_only=True)
class Pushed:
    """Finalize: ``remote`` holds the run's ``branch`` at ``head`` (pushed, or found so)."""

    at: Instant
    remote: str
    branch: BranchName
    head: Sha | None = None


@attrs.frozen(kw_only=True)
class PROpened:
    """Finalize: the pull request command ran to success; ``url``: the address it printed."""

    at: Instant
    url: str = ""
    #: The end of what it printed.
    output: str = ""


@attrs.frozen(kw_only=True)
class LanesMerged:
    """Every lane asked for is merged into the run's branch, now at ``head``."""

    at: Instant
    head: Sha


@attrs.frozen(kw_only=True)
class MergeConflicted:
    """Merging ``lane`` conflicted in ``files``; the merge was undone, the worktree clean."""

    at: Instant
    lane: str
    files: PVector[str] = attrs.field(factory=pvector)


@attrs.frozen(kw_only=True)
class MergeRefused:
    """git refused to merge ``lane``, for a reason that is not a conflict: none of it merged.

    ``reason``: git's words (or the shell's); ``lock``: a lock file in the way (a git killed
    mid-command leaves one), when that was why; ``missing``: the lane's branch does not exist;
    ``under_way``: git left a merge under way in the worktree that the shell could not clear.
    """

    at: Instant
    lane: str
    reason: str
    lock: str = ""
    missing: bool = False
    under_way: bool = False


@attrs.frozen(kw_only=True)
class BudgetRaised:
    """A person raised the run's budgets by these amounts (None: that budget unchanged)."""

    at: Instant
    turns: int | None = None
    tokens: int | None = None
    wall_minutes: int | None = None
    retries: int | None = None
    turns_per_attempt: int | None = None


@attrs.frozen(kw_only=True)
class TurnEnded:
    """The agent's turn ended, and this is what its model reported using in it.

    Provider-neutral: the shell's transcript readers report it where a turn closes (Claude
    Code's ``stop_hook_summary`` or ``turn_duration`` line, or the note of an interrupt; Codex's
    ``task_complete`` or ``turn_aborted``), with the usage of every model message of the turn,
    each counted once (Claude Code repeats a message's usage on each of its lines; Codex's
    ``token_count`` events). ``usage`` is None when the agent reported none.
    """

    at: Instant
    session: SessionId | None = None
    usage: Usage | None = None


@attrs.frozen(kw_only=True)
class TranscriptFound:
    """The shell found the agent's transcript at ``path``: where the agent keeps its chat.

    Reported once the agent of ``session`` wrote it (Claude Code and Codex write theirs on the
    first prompt), so that which file holds each attempt's conversation is in the journal and a
    replay knows it (TRANSCRIPT-KEPT). The file is the agent's own: flume reads it, never
    writes or removes it.
    """

    at: Instant
    session: SessionId
    path: str


@attrs.frozen(kw_only=True)
class TranscriptUnreadable:
    """Lines of the agent's transcript that could not be read; skipped and counted."""

    at: Instant
    session: SessionId
    count: int = 1


@attrs.frozen(kw_only=True)
class PaneOutput:
    """The agent's pane last showed output at ``last_output_at``."""

    at: Instant
    session: SessionId
    last_output_at: Instant


@attrs.frozen(kw_only=True)
class AgentExited:
    """The agent's process is gone."""

    at: Instant
    session: SessionId
    #: Its exit status, when the pane kept it.
    status: int | None = None
    #: The last lines its pane showed, so whoever retries can read why it went.
    last_words: str = ""


@attrs.frozen(kw_only=True)
class BranchHead:
    """The place's branch points at ``sha``."""

    at: Instant
    branch: BranchName
    sha: Sha


@attrs.frozen(kw_only=True)
class WorktreeLost:
    """The place's worktree is no longer there: its folder is gone or holds no worktree."""

    at: Instant
    path: str
    #: What the shell saw, in a few words (``its folder is gone``).
    how: str = ""


@attrs.frozen(kw_only=True)
class BranchVanished:
    """The place's branch is gone from the repository, while its worktree stands."""

    at: Instant
    branch: BranchName


@attrs.frozen(kw_only=True)
class ChangeSeen:
    """The place's OpenSpec change as its files say.

    Read from the commit ``head``, or from the working tree when ``head`` is None (live ticks
    for status; only a committed change is a deliverable).
    """

    at: Instant
    written: bool
    head: Sha | None = None
    planning_complete: bool = False
    #: True when the OpenSpec CLI validated it, False when it refused it, None when not run.
    valid: bool | None = None
    ticked: int = 0
    total: int = 0


@attrs.frozen(kw_only=True)
class ReportSeen:
    """A report file in the place, last modified at ``modified_at``."""

    at: Instant
    path: str
    modified_at: Instant


@attrs.frozen(kw_only=True)
class ChecksFailed:
    """The lander ran the repository's checks on the submission and they failed."""

    at: Instant
    reason: str
    output: str = ""


@attrs.frozen(kw_only=True)
class LandingBlocked:
    """The base repository's state keeps the lander from moving the base: not the branch's fault.

    A lock file git left (``index.lock``, a ref's ``.lock``) or the base checked out with
    uncommitted changes. ``output`` is what git said (or what the lander found), ``way_out`` what
    a person does about it; neither is for the agent.
    """

    at: Instant
    reason: str
    output: str = ""
    way_out: str = ""


@attrs.frozen(kw_only=True)
class LandingHeld:
    """The lander held a fenced run's landing for a person: it changes what runs outside.

    A run with sandboxed steps whose own commits touch ``files`` that flume or a person's tools
    would run outside any sandbox (the repository's ``.flume.toml``, its kinds, its hooks, an
    agent's project settings) lands only once a person approved its head ``head``
    (LAND-HELD-FOR-A-PERSON).
    """

    at: Instant
    head: Sha
    files: PVector[str] = attrs.field(factory=pvector)


@attrs.frozen(kw_only=True)
class Landed:
    """The base holds the branch's work (every commit reachable, or patch-equivalent).

    The shell reports it on each look while it holds; the core takes the first that comes while
    a stage whose deliverable is the landing is working.
    """

    at: Instant
    base_sha: Sha
    #: True when the place's OpenSpec change sits under openspec/changes/archive/ on the base.
    change_archived: bool = False


@attrs.frozen(kw_only=True)
class WorktreeFacts:
    """What the shell saw of a worktree when asked to tidy it."""

    path: str
    exists: bool
    #: flume's journal records making this worktree (a hand-made one is never flume's).
    made_by_flume: bool
    #: Uncommitted changes to tracked files.
    dirty: bool = False
    #: Files git does not track and does not ignore.
    untracked: bool = False
    #: A folder stands at the path but is no worktree (no ``.git`` in it): what is left where a
    #: worktree was deleted by hand, or a stranger's folder. flume never removes it.
    plain: bool = False


@attrs.frozen(kw_only=True)
class BranchFacts:
    """What the shell saw of a branch when asked to tidy it."""

    name: BranchName
    exists: bool
    base: BranchName
    #: The commit the branch pointed at when ``base_lacks`` was counted; tidy deletes the
    #: branch only if it still points there.
    head: Sha | None = None
    #: Commits on the branch that its base lacks: ``git rev-list --count base..branch``. Strict
    #: reachability, not patch-equivalence: a commit landed by squash or cherry-pick is still a
    #: commit that deleting the branch would orphan, so its branch is kept and named.
    base_lacks: int = 0


@attrs.frozen(kw_only=True)
class TidyFactsSeen:
    """The facts tidy decides on, gathered at ``at`` (R10).

    Whether to force is the caller's word, kept by the core; it is not a fact the shell reports.
    """

    at: Instant
    worktree: WorktreeFacts
    branch: BranchFacts


@attrs.frozen(kw_only=True)
class WorktreeRemoved:
    """The place's worktree is gone."""

    at: Instant
    path: str


@attrs.frozen(kw_only=True)
class BranchDeleted:
    """The place's branch is gone."""

    at: Instant
    branch: BranchName


@attrs.frozen(kw_only=True)
class Tick:
    """Time passed; nothing else was seen."""

    at: Instant


Command = (
    Launched
    | Told
    | StopAsked
    | RetryAsked
    | DropAsked
    | ProceedAsked
    | SubmitAsked
    | NeedsSaid
    | TidyAsked
    | ApproveAsked
    | PassAsked
    | ResumeAsked
    | BudgetRaised
    | ResolveAsked
    | ProgressSaid
    | AskSaid
    | AnswerGiven
    | SpawnSaid
    | NotifySaid
    | ComposeSaid
)
Fact = (
    WorktreeMade
    | SetupFinished
    | ActionFailed
    | AgentStarted
    | AgentReady
    | PromptTyped
    | PromptUnwritten
    | AgentStateSeen
    | TranscriptEntry
    | TranscriptUnreadable
    | TranscriptFound
    | TurnEnded
    | PaneOutput
    | AgentExited
    | BranchHead
    | WorktreeLost
    | BranchVanished
    | ChangeSeen
    | ReportSeen
    | ChecksFailed
    | LandingBlocked
    | LandingHeld
    | Landed
    | TidyFactsSeen
    | WorktreeRemoved
    | BranchDeleted
    | Tick
    | GateRead
    | LaneEnded
    | LanesMerged
    | MergeConflicted
    | MergeRefused
    | Pushed
    | PROpened
    | ChildNews
    | Notified
)
Observation = Command | Fact

#: Every observation class, for tests that enumerate them and for the codec's tagged union.
OBSERVATION_TYPES: tuple[type[Observation], ...] = (
    Launched,
    Told,
    StopAsked,
    RetryAsked,
    DropAsked,
    ProceedAsked,
    SubmitAsked,
    NeedsSaid,
    TidyAsked,
    WorktreeMade,
    SetupFinished,
    ActionFailed,
    AgentStarted,
    AgentReady,
    PromptTyped,
    PromptUnwritten,
    AgentStateSeen,
    TranscriptEntry,
    TranscriptUnreadable,
    TurnEnded,
    PaneOutput,
    AgentExited,
    BranchHead,
    WorktreeLost,
    BranchVanished,
    ChangeSeen,
    ReportSeen,
    ChecksFailed,
    LandingBlocked,
    LandingHeld,
    Landed,
    TidyFactsSeen,
    WorktreeRemoved,
    BranchDeleted,
    Tick,
    ApproveAsked,
    ResumeAsked,
    BudgetRaised,
    GateRead,
    ResolveAsked,
    LaneEnded,
    LanesMerged,
    MergeConflicted,
    MergeRefused,
    Pushed,
    PROpened,
    ProgressSaid,
    AskSaid,
    AnswerGiven,
    TranscriptFound,
    SpawnSaid,
    NotifySaid,
    ComposeSaid,
    ChildNews,
    Notified,
    PassAsked,
)
