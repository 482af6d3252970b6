"""FakeWorld: a small, obviously right model of everything around the core.

The state machines drive the real ``step`` against this world: the world performs each action the
core decides the way the shell would (a worktree made, an agent started, a prompt pasted), feeds
the resulting observations back, and keeps its own ground truth (which commits exist and when
they were made, which agents live, what each was sent) for the invariants to compare against. It
imports only the core.
"""

from __future__ import annotations

from collections import Counter

import attrs
from pyrsistent import pset, pvector

from flume.core.actions import (
    Action,
    ActionName,
    ArchiveVerdict,
    DeleteBranch,
    EndAgent,
    Event,
    GatherTidyFacts,
    JudgeGate,
    KeepBranch,
    KeepPlace,
    Land,
    LaneOrder,
    LaunchLane,
    MakeWorktree,
    MergeLanes,
    NotifyLane,
    OpenPR,
    OrderLane,
    Push,
    RemoveWorktree,
    Report,
    RunSetup,
    SendPrompt,
    SendTell,
    StartAgent,
)
from flume.core.delivery import prompt_marker
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, KindName, SessionId, Sha, StageName, WorkName
from flume.core.kinds import (
    BUILTIN_KINDS,
    Artifact,
    Commit,
    Kind,
    Landing,
    ReportFile,
    Sequence,
    Step,
    Verdict,
)
from flume.core.launch import AgentSettings, Host, Launch
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentReady,
    AgentStarted,
    AgentStateSeen,
    Author,
    BranchDeleted,
    BranchFacts,
    BranchHead,
    BranchVanished,
    ChecksFailed,
    GateRead,
    Landed,
    LanesMerged,
    Launched,
    MergeConflicted,
    MergeRefused,
    Observation,
    PromptTyped,
    PromptUnwritten,
    PROpened,
    Pushed,
    ReportSeen,
    SetupFinished,
    SubmitAsked,
    Tick,
    TidyFactsSeen,
    TranscriptEntry,
    TurnEnded,
    Usage,
    WorktreeFacts,
    WorktreeLost,
    WorktreeMade,
    WorktreeRemoved,
)
from flume.core.place import Delivering, Life, Paused, Place, Short, current_step
from flume.core.settings import Settings
from flume.core.step import Decision, pending, replay, step

REPOSITORY = "/src/app"
BASE = BranchName("main")

#: A declared three-stage kind whose two first stages both end on a commit: a commit made in the
#: first must not end the second (STAGE-DELIVERABLE-SINCE-START).
CREW = Kind(
    name=KindName("crew"),
    prefix="crew",
    body=Sequence(
        blocks=pvector(
            [
                Step(name=StageName("plan"), prompt="Plan $brief.", deliverable=Commit()),
                Step(
                    name=StageName("build"),
                    prompt="Build $brief.",
                    deliverable=ReportFile(path="built.md"),
                ),
                Step(name=StageName("land"), prompt="Land $brief.", deliverable=Landing()),
                Step(name=StageName("again"), prompt="Go on: $brief.", deliverable=Commit()),
            ],
        ),
    ),
)


@attrs.define
class FakeGit:
    """Branches as lists of commit ids, oldest first; a commit is present on base by id."""

    branches: dict[BranchName, list[Sha]] = attrs.field(factory=dict)
    #: When each commit was made, by the world's clock.
    made_at: dict[Sha, float] = attrs.field(factory=dict)
    counter: int = 0

    def commit(self, branch: BranchName, now: float) -> Sha:
        """A new commit on ``branch``; on a deleted branch, a new one with no history, as git."""
        self.counter += 1
        sha = Sha(f"c{self.counter:04d}")
        self.branches.setdefault(branch, []).append(sha)
        self.made_at[sha] = now
        return sha

    def head(self, branch: BranchName) -> Sha:
        """The branch's newest commit."""
        return self.branches[branch][-1]

    def lacks(self, branch: BranchName, base: BranchName) -> int:
        """How many of ``branch``'s commits ``base`` lacks."""
        present = set(self.branches[base])
        return sum(1 for sha in self.branches[branch] if sha not in present)

    def land(self, branch: BranchName, base: BranchName) -> Sha:
        """Put the branch's commits on base (a fast-forward after a rebase)."""
        present = set(self.branches[base])
        self.branches[base].extend(sha for sha in self.branches[branch] if sha not in present)
        return self.head(base)


@attrs.define
class FakeWorktree:
    """A worktree on disk."""

    path: str
    branch: BranchName
    by_flume: bool
    dirty: bool = False
    untracked: bool = False


@attrs.define
class FakeAgent:
    """An agent process in a pane."""

    session: SessionId
    stage: StageName
    attempt: int
    live: bool = True
    sends: list[SendPrompt | SendTell] = attrs.field(factory=list)
    #: The pane's mark of the last prompt pasted into it: (marker, send), set with the paste.
    typed: tuple[str, int] | None = None


@attrs.define
class FakeLane:
    """A lane's place as its run's world sees it: launched once, its orders, its branch."""

    branch: BranchName
    #: How many times its launch was performed (a restart performs it again: journaled once).
    launches: int = 1
    #: Its place's life as the lane's own rules would leave it: running, finished, dropped.
    life: str = "running"
    orders: list[str] = attrs.field(factory=list)


@attrs.define
class FakeWorld:
    """The world around one place, and the record of all the core decided."""

    settings: Settings
    kind: Kind
    waits: frozenset[StageName] = frozenset()
    setup: tuple[tuple[str, ...], ...] = ()
    setup_ok: bool = True
    now: float = 0.0
    place: Place | None = None
    git: FakeGit = attrs.field(factory=FakeGit)
    worktrees: dict[str, FakeWorktree] = attrs.field(factory=dict)
    agents: dict[SessionId, FakeAgent] = attrs.field(factory=dict)
    journal: list[Observation] = attrs.field(factory=list)
    actions: list[Action] = attrs.field(factory=list)
    #: The world's truth each time a stage ended: (now, activity, since, last output, agent live).
    ends: list[tuple[float, Activity, float, float, bool]] = attrs.field(factory=list)
    #: Every accepted step: the place before, what was seen, what was decided.
    steps: list[tuple[Place | None, Observation, Decision]] = attrs.field(factory=list)
    #: Live agents counted at each StartAgent, before it started.
    live_at_start: list[int] = attrs.field(factory=list)
    #: (stage, attempt) -> time the world started its agent.
    started: dict[tuple[StageName, int], float] = attrs.field(factory=dict)
    #: Markers typed into the transcript by an agent after they were sent to it.
    typed_markers: set[str] = attrs.field(factory=set)
    #: Report files written in the place, with when.
    reports: dict[str, float] = attrs.field(factory=dict)
    landing: bool = False
    landed_at: float | None = None
    #: The lander lands by squash: one new commit on base, the branch's own left off it.
    squash: bool = False
    #: Paths of the worktrees flume's MakeWorktree made (the truth tidy is judged against).
    made_by_flume: set[str] = attrs.field(factory=set)
    #: What the agent said it did each time a tell was pasted to it.
    tell_pasted_while: list[Activity] = attrs.field(factory=list)
    #: Worktrees removed: (path, made by flume, was dirty, force).
    removed: list[tuple[str, bool, bool, bool]] = attrs.field(factory=list)
    #: Branches deleted: (branch, commits the base lacked at that moment).
    deleted: list[tuple[BranchName, int]] = attrs.field(factory=list)
    sessions: int = 0
    #: (n, k): die after journaling the n-th observation of the next feed and doing k actions.
    crash: tuple[int, int] | None = None
    crashes: int = 0
    #: Each agent the world started where no worktree of the place stood on its branch.
    started_outside: list[str] = attrs.field(factory=list)
    #: A branch deleted by hand, its commits kept aside to restore: (branch, commits).
    deleted_by_hand: tuple[BranchName, list[Sha]] | None = None
    #: What the agent last said it does, and since when (the world's truth for quiet).
    activity: Activity = Activity.UNKNOWN
    activity_since: float = 0.0
    last_output: float = 0.0
    #: The host that launches the place (HOST-OWNS-PLACE); None: a launch from before hosts.
    host: Host | None = None
    #: The blackboard's verdict files: step -> (result, summary), as the agents wrote them.
    verdicts: dict[StageName, tuple[str, str]] = attrs.field(factory=dict)
    #: Verdicts archived before their step's next attempt: (step, archived as, result).
    archived: list[tuple[StageName, str, str]] = attrs.field(factory=list)
    #: Files in the worktree an artifact gate looks for.
    artifacts: set[str] = attrs.field(factory=set)
    #: The repository's tests pass (a tests gate's reading).
    tests_pass: bool = True
    #: Each gate reading the world gave: (key, attempt, what it found).
    readings: list[GateRead] = attrs.field(factory=list)
    #: The lanes launched, by name (a parallel block's places of their own).
    lanes: dict[str, FakeLane] = attrs.field(factory=dict)
    #: Lanes whose merge conflicts until a person or an agent merges them.
    conflicting: set[str] = attrs.field(factory=set)
    #: Lanes git refuses to merge for a reason that is not a conflict (a lock in the way).
    refusing: set[str] = attrs.field(factory=set)
    #: Each lead's words a child's journal took: (the child's place, the words).
    notified: list[tuple[str, str]] = attrs.field(factory=list)
    #: Each merge asked: the lanes in the order asked.
    merges: list[tuple[str, ...]] = attrs.field(factory=list)
    #: Finalize's remote: its branches' heads; whether it answers; each push that moved it.
    remote: dict[BranchName, Sha] = attrs.field(factory=dict)
    remote_up: bool = True
    pushes: list[tuple[BranchName, Sha | None]] = attrs.field(factory=list)
    #: Finalize's PR command: whether it succeeds; each try it was run for, and its result.
    pr_ok: bool = True
    pr_runs: dict[int, bool] = attrs.field(factory=dict)

    # --- driving the core ------------------------------------------------------------------

    def launch(self, name: str = "x") -> UsageError | None:
        """Launch the place; the world then makes it and starts its first stage."""
        if BASE not in self.git.branches:
            self.git.branches[BASE] = [Sha("c0000")]
            self.git.made_at[Sha("c0000")] = 0.0
        launch = Launch(
            repository=REPOSITORY,
            kind=self.kind.name,
            name=WorkName(name),
            brief="Mend the greeting.",
            base=BASE,
            agent=AgentSettings(),
            waits=pset(self.waits),
            host=self.host,
        )
        setup = pvector(pvector(argv) for argv in self.setup)
        board = f"{REPOSITORY}/places/.boards/{launch.place}"
        seen = Launched(at=self.instant(), launch=launch, kind=self.kind, setup=setup, board=board)
        return self.feed(seen)

    def record(self, seen: Observation) -> UsageError | None:
        """Journal a caller's command while the shell is down: stepped, nothing performed.

        The CLI journals a command itself; the supervisor (paused, slow, or dead) performs what
        it calls for only when it next reads the journal.
        """
        try:
            decision = step(self.settings, self.place, seen)
        except UsageError as error:
            return error
        self.steps.append((self.place, seen, decision))
        self.place = decision.place
        self.journal.append(seen)
        return None

    def restart(self) -> None:
        """SIGKILL and start again: the place replayed from its journal, its pending performed.

        The replay must be the place the world followed (RESTART-PENDING reads the journal
        alone); what each pending action then observes is fed as the shell would.
        """
        place = replay(self.settings, self.journal)
        assert place == self.place
        for action in pending(place):
            self.actions.append(action)
            for seen in self.perform(action):
                self.feed(seen)

    def instant(self) -> Instant:
        """The world's clock as an observation's ``at``."""
        return Instant(self.now)

    def feed(self, seen: Observation) -> UsageError | None:
        """Step the core with ``seen`` and perform what it decides, until the world is still.

        Returns the refusal when the core refused ``seen``; a fact the world reports in answer
        to an action is never refused. With ``crash`` set to (n, k), the shell dies after
        journaling the n-th observation of this feed and performing k of its actions: what
        remains to do and to observe is lost, as in a SIGKILL.
        """
        queue: list[Observation] = [seen]
        count = 0
        while queue:
            current = queue.pop(0)
            try:
                decision = step(self.settings, self.place, current)
            except UsageError as error:
                if current is seen:
                    return error
                raise
            self.steps.append((self.place, current, decision))
            _names_its_stage(self.place, decision)
            _clock_stops_while_waiting(decision.place)
            if any(
                isinstance(action, Report) and action.event is Event.STAGE_ENDED
                for action in decision.actions
            ):
                live = self.live_agent() is not None
                self.ends.append(
                    (self.now, self.activity, self.activity_since, self.last_output, live),
                )
            self.place = decision.place
            self.journal.append(current)
            if self.crash is not None and count == self.crash[0]:
                for action in decision.actions[: self.crash[1]]:
                    self.actions.append(action)
                    self.perform(action)
                self.crash = None
                self.crashes += 1
                return None
            count += 1
            for action in decision.actions:
                self.actions.append(action)
                queue.extend(self.perform(action))
        return None

    # --- performing actions as the shell would ---------------------------------------------

    def perform(self, action: Action) -> list[Observation]:  # noqa: C901, PLR0911, PLR0912, PLR0915 (one arm per action)
        """Carry out one action and say what came of it."""
        at = self.instant()
        match action:
            case MakeWorktree(path=path, branch=branch, base=base, look_only=look_only):
                tree = self.worktrees.get(path)
                if tree is not None and tree.by_flume and tree.branch == branch:
                    # Made before a crash hid it: the shell observes before it acts.
                    head = self.git.head(branch)
                    return [WorktreeMade(at=at, path=path, branch=branch, head=head)]
                if action.again and tree is None and branch in self.git.branches:
                    # Added again on its branch as it stands: its commits are all there.
                    self.worktrees[path] = FakeWorktree(path=path, branch=branch, by_flume=True)
                    head = self.git.head(branch)
                    return [WorktreeMade(at=at, path=path, branch=branch, head=head)]
                if look_only:
                    # Dropped before it was seen made: the shell only looks, and found nothing.
                    return []
                if path in self.worktrees or branch in self.git.branches:
                    return [ActionFailed(at=at, action=ActionName.MAKE_WORKTREE, output="exists")]
                self.git.branches[branch] = list(self.git.branches[base])
                self.worktrees[path] = FakeWorktree(path=path, branch=branch, by_flume=True)
                self.made_by_flume.add(path)
                return [WorktreeMade(at=at, path=path, branch=branch, head=self.git.head(branch))]
            case RunSetup():
                return [SetupFinished(at=at, ok=self.setup_ok, output="setup ran")]
            case StartAgent(stage=stage, attempt=attempt):
                for agent in self.agents.values():
                    if agent.live and (agent.stage, agent.attempt) == (stage, attempt):
                        # Started before a crash hid it: found, not started again.
                        return [
                            AgentStarted(
                                at=at,
                                stage=stage,
                                attempt=attempt,
                                session=agent.session,
                                pane=f"%{agent.session}",
                            ),
                        ]
                self.live_at_start.append(sum(1 for agent in self.agents.values() if agent.live))
                assert self.place is not None
                tree = self.worktrees.get(action.path)
                if (
                    tree is None
                    or tree.branch != self.place.branch
                    or self.place.branch not in self.git.branches
                    or self.deleted_by_hand is not None
                ):
                    self.started_outside.append(action.path)
                self.started[stage, attempt] = self.now
                self.sessions += 1
                session = SessionId(f"s{self.sessions}")
                self.agents[session] = FakeAgent(session=session, stage=stage, attempt=attempt)
                self.activity, self.activity_since = Activity.UNKNOWN, self.now
                return [
                    AgentStarted(
                        at=at,
                        stage=stage,
                        attempt=attempt,
                        session=session,
                        pane=f"%{self.sessions}",
                    ),
                ]
            case SendPrompt() | SendTell():
                return self.paste(action, at)
            case EndAgent(session=session):
                agent = self.agents.get(session)
                if agent is None:
                    return []
                if not agent.live:
                    # Ended before a crash hid it: the shell sees the pane gone and says so.
                    return [AgentExited(at=at, session=session)]
                agent.live = False
                self.activity, self.activity_since = Activity.STOPPED, self.now
                return [AgentExited(at=at, session=session)]
            case Land():
                self.landing = True
                return []
            case GatherTidyFacts(path=path, branch=branch, base=base):
                facts = TidyFactsSeen(
                    at=at,
                    worktree=self.worktree_facts(path),
                    branch=self.branch_facts(branch, base),
                )
                return [facts]
            case RemoveWorktree(path=path, force=force):
                tree = self.worktrees.get(path)
                if tree is None:
                    return [
                        ActionFailed(
                            at=at, action=ActionName.REMOVE_WORKTREE, output="no such worktree"
                        )
                    ]
                changed = tree.dirty or tree.untracked
                if changed and not force:
                    return [ActionFailed(at=at, action=ActionName.REMOVE_WORKTREE, output="dirty")]
                self.removed.append((path, tree.by_flume, changed, force))
                del self.worktrees[path]
                return [WorktreeRemoved(at=at, path=path)]
            case DeleteBranch(branch=branch, base=base, head_was=head_was):
                if branch not in self.git.branches:
                    return [
                        ActionFailed(
                            at=at, action=ActionName.DELETE_BRANCH, output="no such branch"
                        )
                    ]
                if head_was is not None and self.git.head(branch) != head_was:
                    # git update-ref -d refs/heads/<branch> <head_was>: the branch moved; kept.
                    return [
                        ActionFailed(at=at, action=ActionName.DELETE_BRANCH, output="branch moved")
                    ]
                self.deleted.append((branch, self.git.lacks(branch, base)))
                del self.git.branches[branch]
                return [BranchDeleted(at=at, branch=branch)]
            case ArchiveVerdict(stage=stage, archive_as=archive_as):
                found = self.verdicts.pop(stage, None)
                if found is not None:
                    self.archived.append((stage, archive_as, found[0]))
                return []
            case JudgeGate():
                reading = self.read_gate(action, at)
                self.readings.append(reading)
                return [reading]
            case LaunchLane(lane=lane, launch=launched):
                # One FakeLane a lane of the block's current entry: a later pass's lane is a
                # place of its own (``+slice-a@2``), launched anew; the same place, once only.
                found = self.lanes.get(lane)
                branch = BranchName(f"{self.kind.prefix}/{launched.name}")
                if found is not None and found.branch == branch:
                    found.launches += 1
                    return []
                self.git.branches[branch] = list(self.git.branches[launched.base])
                self.lanes[lane] = FakeLane(branch=branch)
                return []
            case OrderLane(place=place, order=order):
                # ``<kind>--<name>+<lane>[@passes]``: the lane's FakeLane, if it is that place.
                own = place.rpartition("+")[2]
                found = self.lanes.get(own.partition("@")[0])
                if found is not None and found.branch.rpartition("+")[2] == own:
                    found.orders.append(order.value)
                    if order is LaneOrder.DROP and found.life == "running":
                        # The lane's place takes the drop: its agent ends, it works no more.
                        found.life = "dropped"
                return []
            case NotifyLane(place=place, text=text):
                self.notified.append((place, text))
                return []
            case MergeLanes(branch=branch, lanes=lanes, branches=merged):
                self.merges.append(tuple(lanes))
                for lane, lane_branch in zip(lanes, merged, strict=True):
                    if lane in self.conflicting:
                        return [MergeConflicted(at=at, lane=lane, files=pvector(["a.txt"]))]
                    if lane in self.refusing:
                        said = "Unable to write index."
                        return [MergeRefused(at=at, lane=lane, reason=said, lock="/l")]
                    self.git.land(lane_branch, branch)
                return [LanesMerged(at=at, head=self.git.head(branch))]
            case Push(remote=remote, branch=branch, head=head):
                # Looked at first: a remote holding the head is pushed already.
                if self.remote_up and head is not None and self.remote.get(branch) == head:
                    return [Pushed(at=at, remote=remote, branch=branch, head=head)]
                if not self.remote_up or head is None:
                    said = f"fatal: {remote} does not appear to be a git repository"
                    return [ActionFailed(at=at, action=ActionName.PUSH, output=said)]
                self.remote[branch] = head
                self.pushes.append((branch, head))
                return [Pushed(at=at, remote=remote, branch=branch, head=head)]
            case OpenPR(attempt=attempt):
                # A try started already (before a restart) is waited for, never run again.
                if attempt not in self.pr_runs:
                    self.pr_runs[attempt] = self.pr_ok
                if self.pr_runs[attempt]:
                    return [PROpened(at=at, url=f"https://example.test/pr/{attempt}")]
                return [ActionFailed(at=at, action=ActionName.OPEN_PR, output="gh: no auth")]
            case KeepBranch() | KeepPlace() | Report():
                return []

    def read_gate(self, action: JudgeGate, at: Instant) -> GateRead:
        """What the shell reads of a step's gate: the verdict file, the artifact, the tests."""
        key, attempt = action.key, action.attempt
        match action.gate:
            case Verdict():
                verdict = self.verdicts.get(action.stage)
                if verdict is None:
                    return GateRead(at=at, key=key, attempt=attempt, found=False)
                result, summary = verdict
                return GateRead(
                    at=at, key=key, attempt=attempt, found=True, result=result, summary=summary
                )
            case Artifact(path=path):
                return GateRead(at=at, key=key, attempt=attempt, found=path in self.artifacts)
            case _:
                code = 0 if self.tests_pass else 1
                return GateRead(at=at, key=key, attempt=attempt, found=True, code=code)

    def write_verdict(self, result: str, summary: str = "") -> None:
        """The live agent writes its step's verdict on the board."""
        assert self.place is not None
        self.verdicts[self.place.stage.name] = (result, summary)

    def end_turn(self, tokens: int | None = 10) -> UsageError | None:
        """The live agent's turn ends, its model reporting ``tokens`` (None: no usage)."""
        agent = self.live_agent()
        if agent is None:
            return None
        self.activity, self.activity_since = Activity.WAITING, self.now
        # Its Stop hook says it waits; its transcript closes the turn with the usage.
        self.feed(
            AgentStateSeen(at=self.instant(), session=agent.session, activity=Activity.WAITING)
        )
        usage = None if tokens is None else Usage(output=tokens)
        return self.feed(TurnEnded(at=self.instant(), session=agent.session, usage=usage))

    def deliver(self) -> bool:
        """The live agent takes input and its transcript holds the last thing sent to it.

        False when no agent lives or nothing was sent to it.
        """
        agent = self.live_agent()
        if agent is None:
            return False
        self.activity, self.activity_since = Activity.WAITING, self.now
        self.feed(AgentReady(at=self.instant(), session=agent.session))
        if not agent.sends:
            return False
        self.typed_markers.add(agent.sends[-1].marker)
        self.feed(
            TranscriptEntry(
                at=self.instant(),
                session=agent.session,
                author=Author.PERSON,
                text=agent.sends[-1].text,
            ),
        )
        self.activity, self.activity_since = Activity.WORKING, self.now
        return True

    def worktree_facts(self, path: str) -> WorktreeFacts:
        """What the shell would see of the worktree at ``path``."""
        tree = self.worktrees.get(path)
        if tree is None:
            return WorktreeFacts(path=path, exists=False, made_by_flume=path in self.made_by_flume)
        return WorktreeFacts(
            path=path,
            exists=True,
            made_by_flume=tree.by_flume and path in self.made_by_flume,
            dirty=tree.dirty,
            untracked=tree.untracked,
        )

    def branch_facts(self, branch: BranchName, base: BranchName) -> BranchFacts:
        """What the shell would see of ``branch`` against ``base``."""
        if branch not in self.git.branches:
            return BranchFacts(name=branch, exists=False, base=base)
        return BranchFacts(
            name=branch,
            exists=True,
            base=base,
            base_lacks=self.git.lacks(branch, base),
            head=self.git.head(branch),
        )

    # --- what the agent and the lander do ------------------------------------------------------

    def live_agent(self) -> FakeAgent | None:
        """The one live agent, if any."""
        live = [agent for agent in self.agents.values() if agent.live]
        return live[-1] if live else None

    def commit(self) -> UsageError | None:
        """The agent commits on the place's branch.

        On a branch deleted by hand the commit makes it anew with no history, and the shell,
        finding the place's last head not in it, reports no head.
        """
        assert self.place is not None
        sha = self.git.commit(self.place.branch, self.now)
        if self.deleted_by_hand is not None:
            return None
        return self.feed(BranchHead(at=self.instant(), branch=self.place.branch, sha=sha))

    def delete_worktree_by_hand(self) -> UsageError | None:
        """A person deletes the place's worktree folder; the shell's next look sees it lost."""
        assert self.place is not None
        if self.worktrees.pop(self.place.path, None) is None:
            return None
        return self.feed(WorktreeLost(at=self.instant(), path=self.place.path, how="gone"))

    def delete_branch_by_hand(self) -> UsageError | None:
        """A person deletes the place's branch (``git update-ref -d``); the shell sees it gone."""
        assert self.place is not None
        branch = self.place.branch
        if branch not in self.git.branches or self.deleted_by_hand is not None:
            return None
        self.deleted_by_hand = (branch, self.git.branches.pop(branch))
        return self.feed(BranchVanished(at=self.instant(), branch=branch))

    def restore_branch(self) -> UsageError | None:
        """The person restores the deleted branch at its old head, as status told them."""
        if self.deleted_by_hand is None:
            return None
        branch, commits = self.deleted_by_hand
        self.deleted_by_hand = None
        self.git.branches[branch] = commits
        return self.feed(BranchHead(at=self.instant(), branch=branch, sha=commits[-1]))

    def write_report(self, path: str, written_at: float | None = None) -> UsageError | None:
        """The agent writes a report file; or one last written at ``written_at`` appears."""
        modified = self.now if written_at is None else written_at
        self.reports[path] = modified
        return self.feed(ReportSeen(at=self.instant(), path=path, modified_at=Instant(modified)))

    def land(self) -> UsageError | None:
        """The lander lands the branch on base; a branch tidy deleted meanwhile, it cannot.

        As the real lander's first look says (flume/shell/perform/lander.py ``first_look``): a
        landing asked for before a drop, performed after tidy deleted the branch.
        """
        assert self.place is not None
        self.landing = False
        if self.place.branch not in self.git.branches:
            reason = f"the branch {self.place.branch} does not exist"
            return self.feed(ChecksFailed(at=self.instant(), reason=reason, output="nothing"))
        self.landed_at = self.now
        if self.squash:
            # By squash: the branch's work as one new commit on base; its own commits stay off it.
            sha = self.git.commit(BASE, self.now)
        else:
            sha = self.git.land(self.place.branch, BASE)
        return self.feed(Landed(at=self.instant(), base_sha=sha))

    def paste(self, action: SendPrompt | SendTell, at: Instant) -> list[Observation]:
        """Type a prompt or tell into its agent's pane; a prompt's paste marks the pane."""
        if isinstance(action, SendTell):
            self.tell_pasted_while.append(self.activity)
        agent = self.agents.get(action.session)
        if agent is None or not agent.live:
            return []
        agent.sends.append(action)
        if isinstance(action, SendTell):
            return []
        agent.typed = (action.marker, action.send)
        marker, send = action.marker, action.send
        return [PromptTyped(at=at, session=action.session, marker=marker, send=send)]

    def watch_panes(self) -> None:
        """The shell's look at the panes: a prompt the pane shows typed, reported again.

        A crash can lose the report the paste answered with; the pane still holds its mark.
        """
        agent = self.live_agent()
        if agent is not None and agent.typed is not None:
            marker, send = agent.typed
            self.feed(
                PromptTyped(at=self.instant(), session=agent.session, marker=marker, send=send)
            )

    def read_printed(self) -> None:
        """The shell's look at a printed agent's file: the current send written, or never made.

        The file is the pane's own mark: it holds the prompt (and which send wrote it) once
        written, and nothing before, so it can say a send was never made.
        """
        place = self.place
        agent = self.live_agent()
        if place is None or agent is None or not isinstance(place.stage.phase, Delivering):
            return
        marker, send = prompt_marker(place), place.stage.sends
        at = self.instant()
        if agent.typed == (marker, send):
            self.feed(PromptTyped(at=at, session=agent.session, marker=marker, send=send))
        else:
            self.feed(PromptUnwritten(at=at, session=agent.session, marker=marker, send=send))

    def drive_stage(self) -> bool:
        """Carry the current stage to its end as a well-behaved agent would; False if it can't."""
        place = self.place
        agent = self.live_agent()
        if place is None or place.life is not Life.ACTIVE or agent is None:
            return False
        # An agent ready for input waits (as the machine's own agent_ready says): a held tell
        # the core sends on it finds the agent waiting.
        if self.activity is not Activity.WAITING:
            self.activity, self.activity_since = Activity.WAITING, self.now
        self.feed(AgentReady(at=self.instant(), session=agent.session))
        if not agent.sends:
            return False
        self.typed_markers.add(agent.sends[-1].marker)
        text = agent.sends[-1].text
        self.feed(
            TranscriptEntry(
                at=self.instant(),
                session=agent.session,
                author=Author.PERSON,
                text=text,
            ),
        )
        deliverable = current_step(place).deliverable
        if isinstance(deliverable, Landing):
            self.feed(SubmitAsked(at=self.instant(), session=agent.session))
            if not self.landing:
                return False
            self.land()
        else:
            self.commit()
        self.activity, self.activity_since = Activity.WAITING, self.now
        self.feed(
            AgentStateSeen(at=self.instant(), session=agent.session, activity=Activity.WAITING)
        )
        self.now += self.settings.quiet_seconds + 1
        self.feed(Tick(at=self.instant()))
        return True

    # --- what the record says ------------------------------------------------------------------

    def reports_of(self, event: Event) -> list[Report]:
        """Every report of ``event`` the core made."""
        return [a for a in self.actions if isinstance(a, Report) and a.event is event]

    def sends_per_attempt(self) -> Counter[tuple[StageName, int]]:
        """How many times each stage attempt's prompt was sent."""
        return Counter((a.stage, a.attempt) for a in self.actions if isinstance(a, SendPrompt))


def fix_world(settings: Settings | None = None) -> FakeWorld:
    """A world about to launch a fix."""
    return FakeWorld(settings=settings or Settings(), kind=BUILTIN_KINDS[KindName("fix")])


#: Reports of the place itself, not of one of its stages: they name none.
_OF_THE_PLACE = frozenset(
    {Event.LAUNCHED, Event.PLACE_MADE, Event.KEPT, Event.BRANCH_GONE, Event.TIDIED}
)


def _names_its_stage(before: Place | None, decision: Decision) -> None:
    """Every report of a stage names it: one the place stood at before the step, after, or did."""
    places = [place for place in (before, decision.place) if place is not None]
    stages = {place.stage.name for place in places} | {
        done for place in places for done in place.completed
    }
    for action in decision.actions:
        if isinstance(action, Report) and action.event not in _OF_THE_PLACE:
            assert action.stage in stages, (action, stages)


def _clock_stops_while_waiting(place: Place | None) -> None:
    """WF-BUDGET-PAUSES: an active run's clock stops while, and only while, it waits on a person.

    A pause or a stage stopped short stops the clock of active time; every way on (resume,
    retry, raise, pass, a deliverable seen late) starts it again.
    """
    if place is None or place.life is not Life.ACTIVE:
        return
    waits = isinstance(place.stage.phase, Paused | Short)
    assert (place.spent.paused_at is not None) == waits, (place.stage.phase, place.spent)
