"""Fleet: a world of many places (a run, its lanes and children) whose effects can be in flight.

The machine of ``test_no_silent_wait.py`` drives the real ``step`` of every place against this
world, which stands in for the shell and the world around it as the supervisor sees them:

- every place is a real :class:`~flume.core.place.Place`, folded by ``step`` from a journal of
  its own; a lane or a child is launched by journaling its ``Launched`` (``LaunchLane``);
- what the core decides is **not** carried out at once: each place's actions wait in its queue,
  in order, until the shell performs them (one place's batch at a time, as the supervisor's
  workers do), so a merge can be asked and not yet seen, a launch made and not yet observed,
  while agents, people and the clock go on;
- the supervisor's tick is a rule of its own: it reports branch heads that moved (a commit is
  seen only then, so a turn's end can come before it), branches and worktrees gone, tells a run
  what its lanes' journals say (``lanes_ended``, ``children_news``, as
  ``flume.shell.supervisor.loop`` does), and ticks each place;
- a shell restart loses every queued action: each place is replayed from its journal and what
  :func:`~flume.core.step.pending` names is queued again;
- git is modelled with trees: each commit adds files of its own, a merge's tree is the union
  of its parents' (or, as git leaves it under a stale ``index.lock``, its first parent's alone),
  so a run whose history holds a lane but whose tree lacks the lane's files can be seen.

It imports only the core; the merge performer follows ``flume/shell/perform/lanes.py``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import attrs
from pyrsistent import pvector

from flume.core.actions import (
    Action,
    ActionName,
    ArchiveVerdict,
    DeleteBranch,
    EndAgent,
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
from flume.core.errors import UsageError
from flume.core.ids import BranchName, Instant, PlaceName, SessionId, Sha, StageName
from flume.core.kinds import Artifact, Kind, PassingTests, Verdict
from flume.core.launch import AgentSettings, Launch
from flume.core.observations import (
    ActionFailed,
    Activity,
    AgentExited,
    AgentStarted,
    BranchDeleted,
    BranchFacts,
    BranchHead,
    BranchVanished,
    DropAsked,
    GateRead,
    LanesMerged,
    Launched,
    MergeConflicted,
    MergeRefused,
    Notified,
    Observation,
    PromptTyped,
    PROpened,
    Pushed,
    SetupFinished,
    Tick,
    TidyAsked,
    TidyFactsSeen,
    WorktreeFacts,
    WorktreeLost,
    WorktreeMade,
    WorktreeRemoved,
)
from flume.core.place import Life, Place, holds_work
from flume.core.settings import Settings
from flume.core.step import Decision, pending, replay, step
from flume.core.workflow.lanes import lanes_ended, takes_order
from flume.core.workflow.orchestrate import children_news

REPOSITORY = "/src/app"
BASE = BranchName("main")
#: What a tests gate runs (the launch freezes it).
TESTS = pvector([pvector(["make", "test"])])


@attrs.frozen
class Commit:
    """A commit: its parents, and the files its tree holds (each commit adds files of its own)."""

    parents: tuple[Sha, ...]
    files: frozenset[str]


@attrs.define
class Worktree:
    """A worktree on disk: its branch, a stale lock git left in it, a merge under way."""

    branch: BranchName
    lock: bool = False
    #: ``MERGE_HEAD``: the commit a merge under way merges; None: no merge under way.
    merging: Sha | None = None
    #: Files written and not committed (an artifact gate reads them).
    files: set[str] = attrs.field(factory=set)


@attrs.define
class Repo:
    """git, as far as the rules can tell: commits with trees, branches, worktrees."""

    commits: dict[Sha, Commit] = attrs.field(factory=dict)
    refs: dict[BranchName, Sha] = attrs.field(factory=dict)
    worktrees: dict[str, Worktree] = attrs.field(factory=dict)
    count: int = 0
    #: Every commit any place's branch ever pointed at (WF-NO-LOST-COMMIT's ground truth).
    seen: set[Sha] = attrs.field(factory=set)

    def new(self, parents: tuple[Sha, ...], files: frozenset[str], *, own: bool = False) -> Sha:
        """A new commit with these parents and this tree (``own``: and a file of its own)."""
        self.count += 1
        sha = Sha(f"c{self.count:04d}")
        tree = files | {f"{sha}.txt"} if own else files
        self.commits[sha] = Commit(parents=parents, files=tree)
        return sha

    def commit(self, branch: BranchName) -> Sha:
        """A commit on ``branch`` adding a file of its own (a branch deleted: made anew, as git)."""
        parent = self.refs.get(branch)
        files = self.commits[parent].files if parent is not None else frozenset()
        sha = self.new((parent,) if parent is not None else (), files, own=True)
        self.refs[branch] = sha
        self.seen.add(sha)
        return sha

    def merge(self, branch: BranchName, other: Sha, *, tree: frozenset[str] | None = None) -> Sha:
        """A merge commit of ``other`` into ``branch``; its tree the union, unless ``tree``."""
        head = self.refs[branch]
        union = self.commits[head].files | self.commits[other].files
        sha = self.new((head, other), union if tree is None else tree)
        self.refs[branch] = sha
        self.seen.add(sha)
        return sha

    def ancestors(self, sha: Sha) -> set[Sha]:
        """``sha`` and every commit it descends from."""
        found: set[Sha] = set()
        todo = [sha]
        while todo:
            each = todo.pop()
            if each in found:
                continue
            found.add(each)
            todo.extend(self.commits[each].parents)
        return found

    def holds(self, head: Sha, other: Sha) -> bool:
        """``other`` is ``head`` or one of its ancestors."""
        return other in self.ancestors(head)

    def reachable(self) -> set[Sha]:
        """Every commit some branch reaches."""
        found: set[Sha] = set()
        for sha in self.refs.values():
            found |= self.ancestors(sha)
        return found

    def lacks(self, branch: BranchName, base: BranchName) -> int:
        """How many of ``branch``'s commits ``base`` lacks (``git rev-list --count``)."""
        mine = self.ancestors(self.refs[branch])
        theirs = self.ancestors(self.refs[base]) if base in self.refs else set()
        return len(mine - theirs)


@attrs.define
class Agent:
    """An agent's process in its pane: what was pasted to it, what its transcript took."""

    session: SessionId
    home: PlaceName
    stage: StageName
    attempt: int
    key: str
    live: bool = True
    activity: Activity = Activity.UNKNOWN
    #: Each text pasted into its pane, in order; ``read``: how many its transcript holds.
    pasted: list[str] = attrs.field(factory=list)
    read: int = 0
    #: Its pane will not close: every end asked fails until the process exits of itself.
    stubborn: bool = False


@attrs.define
class Home:
    """One place: its journal, its state, the actions it asked for not yet performed."""

    name: PlaceName
    journal: list[Observation] = attrs.field(factory=list)
    place: Place | None = None
    queue: deque[Action] = attrs.field(factory=deque)
    #: The head the supervisor last reported for the place's branch.
    reported: Sha | None = None


@attrs.frozen
class Stepped:
    """One accepted step of one place: the place before, what was seen, what was decided."""

    home: PlaceName
    before: Place | None
    seen: Observation
    decision: Decision


@attrs.frozen
class Merged:
    """A lane merged into its run, as the run was told (``LanesMerged``): what it must hold."""

    run: PlaceName
    lane: str
    head: Sha
    files: frozenset[str]


@attrs.define
class Fleet:
    """The world of one run and every place it launches, and the record of what was decided."""

    settings: Settings
    kind: Kind
    now: float = 0.0
    repo: Repo = attrs.field(factory=Repo)
    homes: dict[PlaceName, Home] = attrs.field(factory=dict)
    agents: dict[SessionId, Agent] = attrs.field(factory=dict)
    sessions: int = 0
    steps: list[Stepped] = attrs.field(factory=list)
    #: The blackboard's verdicts: (board, step) -> (result, summary, problem).
    verdicts: dict[tuple[str, StageName], tuple[str, str, str]] = attrs.field(factory=dict)
    #: The repository's tests pass (a tests gate's reading).
    tests_pass: bool = True
    #: Lanes whose merge conflicts until merged by hand or by an agent, by branch.
    conflicting: set[BranchName] = attrs.field(factory=set)
    #: Finalize's remote, whether it answers, the PR command's tries and the head each saw.
    remote: dict[BranchName, Sha] = attrs.field(factory=dict)
    remote_up: bool = True
    pr_ok: bool = True
    pr_runs: dict[int, bool] = attrs.field(factory=dict)
    pr_heads: list[tuple[Sha | None, Sha | None]] = attrs.field(factory=list)
    #: Every lane merge a run was told of.
    merged: list[Merged] = attrs.field(factory=list)
    #: Branches a person deleted by hand: (branch, its head then, the tick it happened before).
    deleted_by_hand: list[tuple[BranchName, Sha, int]] = attrs.field(factory=list)
    ticks: int = 0
    #: The root run's name.
    root: PlaceName = attrs.field(default=PlaceName(""))

    # --- driving the core ---------------------------------------------------------------------

    def instant(self) -> Instant:
        """The world's clock as an observation's ``at``."""
        return Instant(self.now)

    def launch(self, name: str = "x") -> None:
        """Launch the run; its actions wait to be performed."""
        self.repo.refs[BASE] = self.repo.new((), frozenset({"README"}))
        launch = Launch(
            repository=REPOSITORY,
            kind=self.kind.name,
            name=name,  # type: ignore[arg-type]
            brief="Mend the greeting.",
            base=BASE,
            agent=AgentSettings(),
        )
        board = f"{REPOSITORY}/places/.boards/{launch.place}"
        seen = Launched(
            at=self.instant(),
            launch=launch,
            kind=self.kind,
            board=board,
            tests=TESTS,
            start=self.repo.refs[BASE],
        )
        self.root = launch.place
        self.homes[launch.place] = Home(name=launch.place)
        assert self.feed(launch.place, seen) is None

    def feed(self, name: PlaceName, seen: Observation) -> UsageError | None:
        """Step place ``name`` with ``seen``; its decided actions join its queue, unperformed.

        Returns the refusal when the core refused ``seen`` (nothing journaled).
        """
        home = self.homes[name]
        try:
            decision = step(self.settings, home.place, seen)
        except UsageError as error:
            return error
        self.steps.append(Stepped(home=name, before=home.place, seen=seen, decision=decision))
        if isinstance(seen, LanesMerged) and home.place is not None:
            self._record_merge(home.place, decision.place)
        home.place = decision.place
        home.journal.append(seen)
        home.queue.extend(a for a in decision.actions if not isinstance(a, Report))
        return None

    def _record_merge(self, before: Place, after: Place) -> None:
        """WF-FINISHED-HOLDS-ITS-WORK's ground truth: the lanes the run was told are merged."""
        if after.head == before.head and after.stage == before.stage:
            return
        for lane in before.merging:
            run = before.lanes.get(lane)
            if run is None or run.head is None or run.head not in self.repo.commits:
                continue
            entry = before.entry if before.entry in self.repo.commits else None
            base = self.repo.commits[entry].files if entry is not None else frozenset()
            files = self.repo.commits[run.head].files - base
            self.merged.append(
                Merged(run=before.launch.place, lane=lane, head=run.head, files=files)
            )

    def perform_next(self, name: PlaceName) -> None:
        """The shell performs the place's next queued action and journals what it came to."""
        home = self.homes[name]
        if not home.queue:
            return
        action = home.queue.popleft()
        for seen in self.perform(name, action):
            self.feed(name, seen)

    def restart(self) -> None:
        """SIGKILL and start again: every queued action is lost; each place replayed, pending asked.

        RESTART-PENDING reads the journal alone: the replay must be the place the world followed.
        """
        for home in self.homes.values():
            home.queue.clear()
            home.reported = None
            if home.place is None:
                continue
            assert replay(self.settings, home.journal) == home.place
            home.queue.extend(pending(home.place))

    def tick(self) -> None:
        """The supervisor's tick: heads and places looked at, lanes' news relayed, time told."""
        self.ticks += 1
        at = self.instant()
        for home in list(self.homes.values()):
            self._observe(home, at)
        lanes = {
            name: home.place
            for name, home in self.homes.items()
            if home.place is not None and home.place.launch.parent
        }
        for home in list(self.homes.values()):
            run = home.place
            if run is None:
                continue
            for news in children_news(run, lanes, at):
                self.feed(home.name, news)
            for ended in lanes_ended(home.place or run, lanes, at):
                self.feed(home.name, ended)
        for home in list(self.homes.values()):
            if home.place is not None and home.place.life is not Life.TIDIED:
                self.feed(home.name, Tick(at=at))

    def _observe(self, home: Home, at: Instant) -> None:
        """What the branch and worktree observers report of one place."""
        place = home.place
        if place is None or place.life is Life.TIDIED or not place.made:
            return
        tree = self.repo.worktrees.get(place.path)
        in_flight = place.life in {Life.MAKING, Life.ACTIVE}
        if tree is None and in_flight and not place.worktree_gone and not place.rebuilding:
            self.feed(home.name, WorktreeLost(at=at, path=place.path, how="its folder is gone"))
            return
        head = self.repo.refs.get(place.branch)
        if head is None:
            # As flume/shell/observe/branches.py: under a place in flight, or a finished one
            # whose branch is its work's only home.
            holds = place.life in {Life.MAKING, Life.ACTIVE} or holds_work(place)
            if holds and not place.branch_gone:
                self.feed(home.name, BranchVanished(at=at, branch=place.branch))
            return
        if place.branch_gone and place.head is not None and not self.repo.holds(head, place.head):
            # Made anew by a commit with none of its history: not the place's branch.
            return
        if head != home.reported or place.branch_gone:
            home.reported = head
            self.feed(home.name, BranchHead(at=at, branch=place.branch, sha=head))

    # --- performing, as the shell does ---------------------------------------------------------

    def perform(self, name: PlaceName, action: Action) -> list[Observation]:  # noqa: C901, PLR0911, PLR0912, PLR0915 (one arm per action)
        """Carry out one action of place ``name`` and say what came of it."""
        at = self.instant()
        place = self.homes[name].place
        assert place is not None
        match action:
            case MakeWorktree(path=path, branch=branch, start=start, look_only=look_only):
                tree = self.repo.worktrees.get(path)
                if tree is not None and tree.branch == branch and branch in self.repo.refs:
                    return [
                        WorktreeMade(at=at, path=path, branch=branch, head=self.repo.refs[branch])
                    ]
                if look_only:
                    return []
                if action.again and tree is None and branch in self.repo.refs:
                    # Added again on its branch as it stands (PLACE-REBUILT).
                    self.repo.worktrees[path] = Worktree(branch=branch)
                    return [
                        WorktreeMade(at=at, path=path, branch=branch, head=self.repo.refs[branch])
                    ]
                if action.again and branch not in self.repo.refs:
                    # Never from a branch gone (which would cut it anew without its commits):
                    # refused, naming the command that restores it, as the performer does.
                    output = (
                        f"the branch {branch} does not exist: restore it with git -C "
                        f"{action.repository} update-ref refs/heads/{branch} {action.head}, "
                        "then retry"
                    )
                    return [ActionFailed(at=at, action=ActionName.MAKE_WORKTREE, output=output)]
                if tree is not None or branch in self.repo.refs:
                    return [ActionFailed(at=at, action=ActionName.MAKE_WORKTREE, output="exists")]
                cut = start or self.repo.refs[action.base]
                self.repo.refs[branch] = cut
                self.repo.worktrees[path] = Worktree(branch=branch)
                return [WorktreeMade(at=at, path=path, branch=branch, head=cut)]
            case RunSetup():
                return [SetupFinished(at=at, ok=True)]
            case StartAgent():
                return self._start(name, place, action, at)
            case SendPrompt() | SendTell():
                agent = self.agents.get(action.session)
                if agent is None or not agent.live:
                    return []
                agent.pasted.append(action.text)
                if isinstance(action, SendPrompt):
                    return [
                        PromptTyped(
                            at=at, session=action.session, marker=action.marker, send=action.send
                        )
                    ]
                return []
            case EndAgent(session=session):
                agent = self.agents.get(session)
                if agent is None:
                    return []
                if agent.live and agent.stubborn:
                    said = "the agent's pane is still open"
                    return [ActionFailed(at=at, action=ActionName.END_AGENT, output=said)]
                agent.live = False
                agent.activity = Activity.STOPPED
                return [AgentExited(at=at, session=session)]
            case ArchiveVerdict(board=board, stage=stage):
                self.verdicts.pop((board, stage), None)
                return []
            case JudgeGate():
                return [self.read_gate(action, at)]
            case LaunchLane(launch=launched):
                return self._launch_lane(action, launched, at)
            case OrderLane(place=lane, order=order):
                found = self.homes.get(lane)
                if found is None or found.place is None or not takes_order(order, found.place):
                    return []
                given = DropAsked(at=at) if order is LaneOrder.DROP else TidyAsked(at=at)
                self.feed(lane, given)
                return []
            case NotifyLane(place=lane, text=text, id=ident):
                found = self.homes.get(lane)
                if (
                    found is not None
                    and found.place is not None
                    and found.place.life in {Life.MAKING, Life.ACTIVE}
                    and ident not in found.place.notified
                ):
                    self.feed(lane, Notified(at=at, text=text, id=ident))
                return []
            case MergeLanes():
                return self.merge(action, at)
            case Push(remote=remote, branch=branch, head=head):
                if self.remote_up and head is not None and self.remote.get(branch) == head:
                    return [Pushed(at=at, remote=remote, branch=branch, head=head)]
                if not self.remote_up or head is None:
                    said = f"fatal: {remote} does not appear to be a git repository"
                    return [ActionFailed(at=at, action=ActionName.PUSH, output=said)]
                self.remote[branch] = head
                return [Pushed(at=at, remote=remote, branch=branch, head=head)]
            case OpenPR(attempt=attempt, branch=branch):
                if attempt not in self.pr_runs:
                    self.pr_runs[attempt] = self.pr_ok
                    self.pr_heads.append((self.remote.get(branch), self.repo.refs.get(branch)))
                if self.pr_runs[attempt]:
                    return [PROpened(at=at, url=f"https://example.test/pr/{attempt}")]
                return [ActionFailed(at=at, action=ActionName.OPEN_PR, output="gh: no auth")]
            case Land():
                return []
            case GatherTidyFacts(path=path, branch=branch, base=base):
                return [
                    TidyFactsSeen(
                        at=at,
                        worktree=self._worktree_facts(path),
                        branch=self._branch_facts(branch, base),
                    )
                ]
            case RemoveWorktree(path=path):
                if self.repo.worktrees.pop(path, None) is None:
                    return [
                        ActionFailed(at=at, action=ActionName.REMOVE_WORKTREE, output="no worktree")
                    ]
                return [WorktreeRemoved(at=at, path=path)]
            case DeleteBranch(branch=branch, head_was=head_was):
                if branch not in self.repo.refs:
                    return [
                        ActionFailed(at=at, action=ActionName.DELETE_BRANCH, output="no branch")
                    ]
                if head_was is not None and self.repo.refs[branch] != head_was:
                    return [ActionFailed(at=at, action=ActionName.DELETE_BRANCH, output="moved")]
                del self.repo.refs[branch]
                return [BranchDeleted(at=at, branch=branch)]
            case KeepBranch() | KeepPlace() | Report():
                return []

    def _start(
        self, name: PlaceName, place: Place, action: StartAgent, at: Instant
    ) -> list[Observation]:
        """Start an agent, or find the one started before a restart hid it."""
        stage, attempt, path = action.stage, action.attempt, action.path
        for agent in self.agents.values():
            if agent.live and (agent.home, agent.stage, agent.attempt) == (name, stage, attempt):
                pane = f"%{agent.session}"
                return [
                    AgentStarted(
                        at=at, stage=stage, attempt=attempt, session=agent.session, pane=pane
                    )
                ]
        tree = self.repo.worktrees.get(path)
        if tree is None or tree.branch != place.branch or place.branch not in self.repo.refs:
            said = f"{path} is not the place's worktree on {place.branch}"
            return [ActionFailed(at=at, action=ActionName.START_AGENT, output=said)]
        self.sessions += 1
        session = SessionId(f"s{self.sessions}")
        self.agents[session] = Agent(
            session=session, home=name, stage=stage, attempt=attempt, key=place.stage.key
        )
        return [
            AgentStarted(at=at, stage=stage, attempt=attempt, session=session, pane=f"%{session}")
        ]

    def _launch_lane(self, action: LaunchLane, launched: Launch, at: Instant) -> list[Observation]:
        """Journal the lane's launch as its journal's first line; nothing if it has one."""
        name = launched.place
        if name in self.homes:
            return []
        seen = Launched(
            at=at,
            launch=launched,
            kind=action.kind,
            setup=action.setup,
            copy=action.copy,
            start=action.start,
            settings=action.settings,
            board=action.board,
            tests=action.tests,
        )
        self.homes[name] = Home(name=name)
        refused = self.feed(name, seen)
        if refused is not None:
            del self.homes[name]
            said = f"lane {action.lane} cannot be launched: {refused}"
            return [ActionFailed(at=at, action=ActionName.LAUNCH_LANE, output=said)]
        return []

    def read_gate(self, action: JudgeGate, at: Instant) -> GateRead:
        """What the shell reads of a step's gate: the verdict file, the artifact, the tests."""
        key, attempt = action.key, action.attempt
        match action.gate:
            case Verdict():
                verdict = self.verdicts.get((action.board, action.stage))
                if verdict is None:
                    return GateRead(at=at, key=key, attempt=attempt, found=False)
                result, summary, problem = verdict
                return GateRead(
                    at=at,
                    key=key,
                    attempt=attempt,
                    found=True,
                    result=result,
                    summary=summary,
                    problem=problem,
                )
            case Artifact(path=path):
                tree = self.repo.worktrees.get(action.path)
                found = tree is not None and path in tree.files
                return GateRead(at=at, key=key, attempt=attempt, found=found)
            case PassingTests():
                code = 0 if self.tests_pass else 1
                return GateRead(at=at, key=key, attempt=attempt, found=True, code=code)
            case _:
                return GateRead(at=at, key=key, attempt=attempt, found=False)

    def merge(self, action: MergeLanes, at: Instant) -> list[Observation]:  # noqa: C901, PLR0911 (each way git stops)
        """WF-MERGE-ORDER as flume/shell/perform/lanes.py's ``merge`` does it, on this git.

        Under a stale ``index.lock`` git leaves ``MERGE_HEAD`` with nothing unmerged and writes
        nothing (git 2.39: "error: Unable to write index."); the shell cannot abort it, clears
        its state (``git merge --quit``), and names the lock.
        """
        tree = self.repo.worktrees.get(action.path)
        if tree is None or action.branch not in self.repo.refs:
            said = f"{action.path} is not a worktree"
            return [ActionFailed(at=at, action=ActionName.MERGE_LANES, output=said)]
        if tree.merging is not None and self.repo.holds(
            self.repo.refs[action.branch], tree.merging
        ):
            # A merge committed before a restart left its state: ``git merge --quit``.
            tree.merging = None
        lock = f"{action.path}/.git/index.lock"
        starts = list(action.starts) or [None] * len(action.lanes)
        for lane, branch, start in zip(action.lanes, action.branches, starts, strict=True):
            other = self.repo.refs.get(branch)
            if other is None:
                gone = f"lane {lane}'s branch {branch} does not exist"
                return [MergeRefused(at=at, lane=lane, reason=gone, missing=True)]
            head = self.repo.refs[action.branch]
            if self.repo.holds(head, other):
                if self.lacking(head, start, other):
                    said = f"lane {lane} is in the history, its changes are not in the tree"
                    return [MergeRefused(at=at, lane=lane, reason=said)]
                continue
            if tree.merging is not None:
                if tree.lock:
                    said = "a merge is under way, and git merge --abort failed: index.lock exists"
                    return [MergeRefused(at=at, lane=lane, reason=said, lock=lock, under_way=True)]
                tree.merging = None
            if tree.lock:
                said = f"git could not merge lane {lane} ({branch}): error: Unable to write index."
                return [MergeRefused(at=at, lane=lane, reason=said, lock=lock)]
            if branch in self.conflicting:
                return [MergeConflicted(at=at, lane=lane, files=pvector([f"{lane}.txt"]))]
            self.repo.merge(action.branch, other)
        return [LanesMerged(at=at, head=self.repo.refs[action.branch])]

    def lacking(self, head: Sha, start: Sha | None, other: Sha) -> frozenset[str]:
        """The files ``other`` added since ``start`` that ``head``'s tree lacks."""
        base = self.repo.commits[start].files if start in self.repo.commits else frozenset()
        return (self.repo.commits[other].files - base) - self.repo.commits[head].files

    def resolve_facts(self, place: Place) -> tuple[bool, dict[str, str]]:
        """What the shell finds of a run's merge when a person says they resolved it by hand.

        Whether a merge is under way in its worktree; each lane its head does not hold: its
        head not in the history, or a file it added missing from the tree.
        """
        tree = self.repo.worktrees.get(place.path)
        head = self.repo.refs.get(place.branch)
        missing: dict[str, str] = {}
        if head is None:
            return tree is not None and tree.merging is not None, missing
        for lane in place.merging:
            run = place.lanes.get(lane)
            other = self.repo.refs.get(run.branch) if run is not None else None
            if other is None:
                missing[lane] = "its branch does not exist"
            elif not self.repo.holds(head, other):
                missing[lane] = f"its head {other} is not in the run's history"
            else:
                lacking = sorted(self.lacking(head, place.entry, other))
                if lacking:
                    missing[lane] = f"{', '.join(lacking)} as at the block's entry"
        return tree is not None and tree.merging is not None, missing

    def _worktree_facts(self, path: str) -> WorktreeFacts:
        tree = self.repo.worktrees.get(path)
        if tree is None:
            return WorktreeFacts(path=path, exists=False, made_by_flume=True)
        return WorktreeFacts(path=path, exists=True, made_by_flume=True)

    def _branch_facts(self, branch: BranchName, base: BranchName) -> BranchFacts:
        if branch not in self.repo.refs:
            return BranchFacts(name=branch, exists=False, base=base)
        return BranchFacts(
            name=branch,
            exists=True,
            base=base,
            base_lacks=self.repo.lacks(branch, base),
            head=self.repo.refs[branch],
        )

    # --- what the record says ----------------------------------------------------------------

    def places(self) -> Iterable[Place]:
        """Every place launched so far."""
        return (home.place for home in self.homes.values() if home.place is not None)

    def live_agents(self, name: PlaceName) -> list[Agent]:
        """The live agents of place ``name``."""
        return [agent for agent in self.agents.values() if agent.live and agent.home == name]

    def reports(self) -> list[tuple[PlaceName, Report]]:
        """Every report any place decided, with its place."""
        return [
            (each.home, action)
            for each in self.steps
            for action in each.decision.actions
            if isinstance(action, Report)
        ]
