"""The shell's hands: each action the core decides, performed, and what came of it observed.

Theory of operation. A performer never assumes an effect: it reports what it saw, or what git
said it did, as observations (``MakeWorktree`` is answered by ``WorktreeMade`` with the head
its branch was made at, or by ``ActionFailed`` with git's words). Every performer observes
before it acts, so performing an action twice (after a supervisor was killed between doing and
journaling) finds the effect already there and reports it, instead of doing it again (rule
RESTART-PENDING).

Agents and landers sit behind ports (:class:`AgentPort`, :class:`LanderPort`); this module holds
the git and setup work of places (R1, R2, R10). Nothing a caller wrote reaches a shell: every
process gets an argument list.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, assert_never

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
from flume.core.ids import BranchName, Instant, Sha
from flume.core.observations import (
    ActionFailed,
    BranchDeleted,
    BranchFacts,
    Observation,
    SetupFinished,
    TidyFactsSeen,
    WorktreeFacts,
    WorktreeMade,
    WorktreeRemoved,
)
from flume.core.place import Place, restore_branch
from flume.shell.declared import command
from flume.shell.perform import finalize, gates, lanes
from flume.shell.process import Ran
from flume.shell.store.places import journals_dir
from flume.shell.tools import git

#: What a setup's output keeps in the journal: its last 64 KiB.
MAX_OUTPUT = 64 * 1024


def _tail(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT else "[...]\n" + text[-MAX_OUTPUT:]


class AgentPort(Protocol):
    """Starts, ends and types into agents (the panes and agents of the next piece of work)."""

    def start(self, place: Place, action: StartAgent, at: Instant) -> list[Observation]:
        """Start the stage attempt's agent, or find the one already started for it."""
        ...

    def end(self, place: Place, action: EndAgent, at: Instant) -> list[Observation]:
        """End the agent and close its pane."""
        ...

    def send(self, place: Place, action: SendPrompt | SendTell, at: Instant) -> list[Observation]:
        """Paste text literally into the agent's input and submit it."""
        ...


class LanderPort(Protocol):
    """Hands a branch to the repository's lander."""

    def land(self, place: Place, action: Land, at: Instant) -> list[Observation]:
        """Land the branch on its base, or say why not."""
        ...


_NO_AGENTS = (
    "flume cannot start agents yet: agents in panes (tmux, Claude Code, Codex) are the next "
    "piece of work. The place is made and set up; drop it with flume drop, or retry later"
)


class NoAgents:
    """The agent port while no agent adapter is installed: every start fails, saying why."""

    def start(self, place: Place, action: StartAgent, at: Instant) -> list[Observation]:
        """Fail the start with the reason, so the stage stops short instead of waiting."""
        del place
        argv = (action.agent.agent.value,)
        return [
            ActionFailed(
                at=at, action=ActionName.START_AGENT, argv=pvector(argv), output=_NO_AGENTS
            )
        ]

    def end(self, place: Place, action: EndAgent, at: Instant) -> list[Observation]:
        """No agent was ever started, so there is none to end."""
        del place, action, at
        return []

    def send(self, place: Place, action: SendPrompt | SendTell, at: Instant) -> list[Observation]:
        """Nothing can be typed without an agent."""
        del place
        return [ActionFailed(at=at, action=ActionName.of(action), output=_NO_AGENTS)]


class NoLander:
    """The lander port while no lander is installed: a submission fails, saying why."""

    def land(self, place: Place, action: Land, at: Instant) -> list[Observation]:
        """Fail the landing with the reason; the core turns it into failed checks."""
        del place, action
        return [ActionFailed(at=at, action=ActionName.LAND, output="flume has no lander yet")]


@attrs.define
class Performer:
    """Performs actions for places; ``pass_fds`` go to every process it starts (the lock)."""

    clock: Callable[[], float]
    agents: AgentPort = attrs.field(factory=NoAgents)
    lander: LanderPort = attrs.field(factory=NoLander)
    pass_fds: tuple[int, ...] = ()

    def now(self) -> Instant:
        """The clock, as an observation's instant."""
        return Instant(self.clock())

    def perform(self, place: Place, action: Action) -> list[Observation]:  # noqa: C901, PLR0911, PLR0912 (one arm per action)
        """Carry out ``action`` for ``place`` and report what came of it."""
        match action:
            case MakeWorktree():
                return self.make_worktree(action)
            case RunSetup():
                return self.run_setup(action)
            case GatherTidyFacts():
                return self.gather_tidy_facts(place, action)
            case RemoveWorktree():
                return self.remove_worktree(place, action)
            case DeleteBranch():
                return self.delete_branch(place, action)
            case StartAgent():
                problem = not_in_place(place, Path(action.path))
                if problem is not None:
                    return self._failed(ActionName.START_AGENT, problem)
                return self.agents.start(place, action, self.now())
            case EndAgent():
                return self.agents.end(place, action, self.now())
            case SendPrompt() | SendTell():
                return self.agents.send(place, action, self.now())
            case Land():
                return self.lander.land(place, action, self.now())
            case ArchiveVerdict():
                gates.archive_verdict(action)
                return []
            case JudgeGate():
                return [gates.read_gate(action, self.now, fenced=place.kind.fenced)]
            case LaunchLane():
                return lanes.launch(action, self.now())
            case OrderLane():
                return lanes.order(action, self.now())
            case NotifyLane():
                return lanes.notify(action, self.now())
            case MergeLanes():
                problem = not_in_place(place, Path(action.path), refusing="nothing is merged")
                if problem is not None:
                    return self._failed(ActionName.MERGE_LANES, problem)
                return lanes.merge(
                    action, Path(place.launch.repository), self.now(), pass_fds=self.pass_fds
                )
            case Push():
                return finalize.push(action, self.now())
            case OpenPR():
                folder = journals_dir(Path(place.launch.repository)) / place.launch.place
                return finalize.open_pr(action, folder, self.now())
            case KeepBranch() | KeepPlace() | Report():
                return []
            case _:
                assert_never(action)

    def _failed(self, action: ActionName, output: str, ran: Ran | None = None) -> list[Observation]:
        if ran is None:
            return [ActionFailed(at=self.now(), action=action, output=output)]
        said = (ran.err.strip() or ran.out.strip()) or "no output"
        return [
            ActionFailed(
                at=self.now(),
                action=action,
                argv=pvector(ran.argv),
                status=ran.status,
                output=f"{output}: {said}" if output else said,
            ),
        ]

    # --- R1 --------------------------------------------------------------------------------

    def make_worktree(self, action: MakeWorktree) -> list[Observation]:
        """R1: the worktree on a new branch cut from the launch's base revision.

        One worktree is added or removed at a time in a repository: two ``git worktree add``
        at once can fail, one reading the other's half-made administrative files.
        """
        with _worktrees_of(action.repository):
            return self._make_worktree(action)

    def _make_worktree(self, action: MakeWorktree) -> list[Observation]:
        repository, path = Path(action.repository), Path(action.path)
        git.exclude(repository, "/places/")
        if action.again:
            return self._add_again(action)
        if action.start is None or action.look_only or _stands(path):
            return self._look_then_make(action, None)
        # The first make, as a launch asks it: nothing stands at the path, so git is asked to
        # make the place at once. Only when it refuses is what stands looked at: a branch cut
        # before a crash, a worktree registered whose folder is gone.
        ran = self._add(action, action.start)
        if ran.ok:
            # git made the branch at the start it was given, a commit's full name: that is its
            # head, with no git asked again.
            return [self._worktree_made(action, action.start)]
        if _stands(path):
            # git made the place and then failed (a checkout hook said no): its failure.
            return self._failed(ActionName.MAKE_WORKTREE, "", ran)
        return self._look_then_make(action, ran)

    def _look_then_make(self, action: MakeWorktree, refused: Ran | None) -> list[Observation]:  # noqa: PLR0911 (each way out says why)
        """What a crash may have left at the place, looked at before anything is made.

        ``refused`` is git's answer to a first make that made nothing: it is not asked again.
        """
        repository, path = Path(action.repository), Path(action.path)
        trees = _resolved(git.worktree_paths(repository))
        there = trees.get(path.resolve(), "absent")
        if there == action.branch:
            return self._made(repository, action)
        if there != "absent":
            what = f"a worktree of {there or 'a detached head'} already stands at {path}"
            return self._failed(ActionName.MAKE_WORKTREE, what)
        if action.look_only:
            # Dropped before it was seen made, and not made: nothing to report. A look is not a
            # failure: a failure would end the batch before tidy's own look (GatherTidyFacts)
            # that follows, and the place would wait for ever for facts never gathered.
            return []
        if _stands(path):
            # Not a worktree: git would cut the branch and then refuse the folder, leaving it.
            what = f"{path} already exists and is no worktree; nothing is made over it"
            return self._failed(ActionName.MAKE_WORKTREE, what)
        head = git.resolve(repository, action.branch)
        start = action.start or git.resolve(repository, action.base)
        if start is None:
            return self._failed(ActionName.MAKE_WORKTREE, f"the base {action.base} does not exist")
        if head is None:
            ran = refused or self._add(action, start)
            if not ran.ok:
                return self._failed(ActionName.MAKE_WORKTREE, "", ran)
            return [self._worktree_made(action, start)]
        if head != start:
            what = f"the branch {action.branch} already exists at {head}, not at {start}"
            return self._failed(ActionName.MAKE_WORKTREE, what)
        # The branch was cut before a crash and its worktree not yet added: add it now.
        ran = self._add(action, None)
        if not ran.ok:
            return self._failed(ActionName.MAKE_WORKTREE, "", ran)
        return self._made(repository, action)

    def _add_again(self, action: MakeWorktree) -> list[Observation]:
        """PLACE-REBUILT: the worktree removed under the place, added again on its branch.

        git still lists the removed folder as a worktree of the branch (prunable): ``--force``
        adds over that entry. Nothing is made over something that stands at the path, nor while
        the branch is checked out in a folder that stands elsewhere, nor from a branch gone.
        """
        repository, path = Path(action.repository), Path(action.path)
        trees = _resolved(git.worktree_paths(repository))
        if _stands(path):
            top = git.toplevel(path) if path.is_dir() else None
            head = git.run(path, "symbolic-ref", "--quiet", "HEAD") if top is not None else None
            if (
                top is not None
                and top.resolve() == path.resolve()
                and head is not None
                and head.out.strip() == f"refs/heads/{action.branch}"
            ):
                # Added before a crash hid it.
                return self._made(repository, action)
            what = (
                f"{path} already exists and is not the place's worktree: nothing is made over "
                "it; move it away, then retry"
            )
            return self._failed(ActionName.MAKE_WORKTREE, what)
        elsewhere = [
            str(tree)
            for tree, branch in trees.items()
            if branch == action.branch and tree != path.resolve() and _stands(tree)
        ]
        if elsewhere:
            what = f"{action.branch} is checked out in {elsewhere[0]}; nothing is added beside it"
            return self._failed(ActionName.MAKE_WORKTREE, what)
        if git.resolve(repository, action.branch) is None:
            # WF-NO-LOST-COMMIT: deleted with the worktree; its head restores it, named exactly.
            restore = (
                f"restore it with {restore_branch(action.repository, action.branch, action.head)}"
                if action.head is not None
                else "restore it"
            )
            what = f"the branch {action.branch} does not exist: {restore}, then retry"
            return self._failed(ActionName.MAKE_WORKTREE, what)
        ran = git.add_worktree(
            repository, path, action.branch, None, force=True, pass_fds=self.pass_fds
        )
        if not ran.ok:
            return self._failed(ActionName.MAKE_WORKTREE, "", ran)
        return self._made(repository, action)

    def _add(self, action: MakeWorktree, start: Sha | None) -> Ran:
        """``git worktree add``: the branch cut at ``start``, or (None) the branch as it stands."""
        return git.add_worktree(
            Path(action.repository),
            Path(action.path),
            action.branch,
            start,
            pass_fds=self.pass_fds,
        )

    def _worktree_made(self, action: MakeWorktree, head: Sha) -> WorktreeMade:
        return WorktreeMade(at=self.now(), path=action.path, branch=action.branch, head=head)

    def _made(self, repository: Path, action: MakeWorktree) -> list[Observation]:
        head = git.resolve(repository, action.branch)
        if head is None:
            return self._failed(
                ActionName.MAKE_WORKTREE, f"{action.branch} vanished as it was made"
            )
        return [self._worktree_made(action, head)]

    # --- R2 --------------------------------------------------------------------------------

    def run_setup(self, action: RunSetup) -> list[Observation]:
        """R2: copy the files named, then run exactly the commands named, in the place."""
        place = Path(action.path)
        said: list[str] = []
        for relative in action.copy:
            source, target = Path(action.source) / relative, place / relative
            if not source.exists():
                said.append(f"copy {relative}: not in the main worktree {action.source}")
                return [SetupFinished(at=self.now(), ok=False, output=_tail("\n".join(said)))]
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
            else:
                shutil.copy2(source, target)
            said.append(f"copied {relative}")
        for argv in action.commands:
            said.append("$ " + " ".join(argv))
            status, output = self._run_command(place, tuple(argv))
            said.append(output.rstrip())
            if status != 0:
                said.append(f"(exit status {status})")
                return [SetupFinished(at=self.now(), ok=False, output=_tail("\n".join(said)))]
        return [SetupFinished(at=self.now(), ok=True, output=_tail("\n".join(said)))]

    def _run_command(self, cwd: Path, argv: tuple[str, ...]) -> tuple[int, str]:
        """Run one declared command exactly as written, in the place (:mod:`.command`)."""
        return command.run(cwd, argv, command.record_of("setups", cwd))

    # --- R10 -------------------------------------------------------------------------------

    def gather_tidy_facts(self, place: Place, action: GatherTidyFacts) -> list[Observation]:
        """R10: what tidy decides on: the worktree as git sees it, the branch against its base."""
        repository = Path(place.launch.repository)
        worktree = worktree_facts(repository, Path(action.path), action.branch)
        entry = lane_entry(place)
        branch = branch_facts(repository, action.branch, action.base, entry=entry)
        if branch is None:
            what = f"git cannot compare {action.branch} with {action.base}; nothing removed"
            return self._failed(ActionName.GATHER_TIDY_FACTS, what)
        return [TidyFactsSeen(at=self.now(), worktree=worktree, branch=branch)]

    def remove_worktree(self, place: Place, action: RemoveWorktree) -> list[Observation]:
        """R10: remove the place's worktree (``--force`` only on the caller's word)."""
        repository = Path(place.launch.repository)
        with _worktrees_of(place.launch.repository):
            removed = self._remove_worktree(repository, action)
        if removed and isinstance(removed[0], WorktreeRemoved):
            remove_board(place)
        return removed

    def _remove_worktree(self, repository: Path, action: RemoveWorktree) -> list[Observation]:
        path = Path(action.path)
        if path.resolve() in _resolved(git.worktree_paths(repository)):
            force = ("--force",) if action.force else ()
            ran = git.run(repository, "worktree", "remove", *force, str(path))
            if not ran.ok:
                return self._failed(ActionName.REMOVE_WORKTREE, "", ran)
        if path.resolve() in _resolved(git.worktree_paths(repository)):
            return self._failed(ActionName.REMOVE_WORKTREE, f"{path} is still a worktree")
        return [WorktreeRemoved(at=self.now(), path=action.path)]

    def delete_branch(self, place: Place, action: DeleteBranch) -> list[Observation]:
        """R10: delete the branch only at the head judged, and only if its base still holds it."""
        repository = Path(place.launch.repository)
        if git.checked_out(repository, action.branch):
            what = f"{action.branch} is checked out in a worktree: kept"
            return self._failed(ActionName.DELETE_BRANCH, what)
        if git.resolve(repository, action.branch) is not None:
            lacks = base_lacks(repository, action.branch, action.base, lane_entry(place))
            if lacks != 0:
                what = f"{action.branch} holds commits {action.base} lacks now: kept"
                return self._failed(ActionName.DELETE_BRANCH, what)
            ref = f"refs/heads/{action.branch}"
            old = (action.head_was,) if action.head_was else ()
            ran = git.run(repository, "update-ref", "-d", ref, *old)
            if not ran.ok:
                return self._failed(ActionName.DELETE_BRANCH, "", ran)
        if git.resolve(repository, action.branch) is not None:
            return self._failed(ActionName.DELETE_BRANCH, f"{action.branch} is still there")
        return [BranchDeleted(at=self.now(), branch=action.branch)]


def lane_entry(place: Place) -> Sha | None:
    """A lane's entry commit, the one it was cut from; None for a place that is no lane."""
    return place.start if place.launch.parent is not None else None


def base_lacks(
    repository: Path, branch: BranchName, base: BranchName, entry: Sha | None
) -> int | None:
    """How many of ``branch``'s commits its base lacks; a lane's, past its entry once it is gone.

    A lane's base is its run's branch, which the run's own tidy may delete, before this look or
    during it (a run dropped with nothing of its own). Then the commit the lane was cut from
    stands for it: a lane's commits past it are held nowhere else, and are kept, named; a lane
    with none goes. None when git cannot say.
    """
    lacks = git.lacks(repository, branch, base)
    if lacks is None and entry is not None and git.resolve(repository, base) is None:
        return git.lacks(repository, branch, base, since=entry)
    return lacks


_WORKTREE_LOCKS: dict[str, threading.Lock] = {}
_WORKTREE_LOCKS_GUARD = threading.Lock()


def _worktrees_of(repository: str) -> threading.Lock:
    """The lock that lets one worktree at a time be added or removed in ``repository``."""
    with _WORKTREE_LOCKS_GUARD:
        return _WORKTREE_LOCKS.setdefault(repository, threading.Lock())


def _stands(path: Path) -> bool:
    """Something stands at ``path``: a folder, a file, a link (if dangling, still in the way)."""
    return path.exists() or path.is_symlink()


def _resolved(trees: dict[Path, BranchName | None]) -> dict[Path, BranchName | None]:
    return {path.resolve(): branch for path, branch in trees.items()}


def not_in_place(
    place: Place, path: Path, *, refusing: str = "no agent starts there"
) -> str | None:
    """Why ``path`` is not the place's worktree on its branch; None when it is.

    START-ONLY-IN-PLACE, checked just before every start: a folder whose worktree was deleted
    resolves to the main repository (places sit inside it), where an agent would work on the
    base. The start fails with the reason, and the core stops the stage short on it. A parallel
    block's merge is checked so too (``refusing`` says what is not done there).
    """
    name = place.launch.place
    way_out = f"{refusing}; flume drop {name}, then flume tidy"
    if not path.is_dir():
        return f"the worktree {path} is gone: {way_out}"
    top = git.toplevel(path)
    if top is None or top.resolve() != path.resolve():
        there = f"git there resolves to {top}" if top is not None else "git finds no repository"
        return f"{path} is not a worktree ({there}): {way_out}"
    repository = Path(place.launch.repository)
    ours = git.run(path, "rev-parse", "--path-format=absolute", "--git-common-dir")
    theirs = git.run(repository, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if not ours.ok or Path(ours.out.strip()).resolve() != Path(theirs.out.strip()).resolve():
        return f"{path} is not a worktree of {repository}: {way_out}"
    head = git.run(path, "symbolic-ref", "--quiet", "HEAD")
    on = head.out.strip() if head.ok else "a detached head"
    if on != f"refs/heads/{place.branch}":
        return f"{path} is on {on}, not on its branch {place.branch}: {refusing}"
    if git.resolve(repository, place.branch) is None:
        return f"the branch {place.branch} is gone (see flume status): {refusing}"
    return None


def worktree_facts(repository: Path, path: Path, branch: str) -> WorktreeFacts:
    """The worktree at ``path`` as git sees it: flume's own only if it is on the place's branch."""
    if path.is_symlink():
        # A link to some other worktree is never flume's, whatever it points at.
        return WorktreeFacts(path=str(path), exists=True, made_by_flume=False)
    if path.is_dir() and not (path / ".git").exists():
        # No worktree: what is left where one was deleted by hand (git may still list it), or a
        # stranger's folder. git there would answer for the main repository: it is not asked.
        return WorktreeFacts(path=str(path), exists=True, made_by_flume=False, plain=True)
    trees = _resolved(git.worktree_paths(repository))
    there = trees.get(path.resolve(), "absent")
    if there == "absent":
        # A folder git does not know as a worktree is a stranger's: it is never touched.
        return WorktreeFacts(path=str(path), exists=path.exists(), made_by_flume=not path.exists())
    changes = (
        git.changes(path) if path.is_dir() else git.WorktreeChanges(dirty=False, untracked=False)
    )
    return WorktreeFacts(
        path=str(path),
        exists=True,
        made_by_flume=there == branch,
        dirty=changes.dirty,
        untracked=changes.untracked,
    )


def branch_facts(
    repository: Path, branch: BranchName, base: BranchName, *, entry: Sha | None = None
) -> BranchFacts | None:
    """The branch against its base; None when git cannot count what the base lacks.

    ``entry``: a lane's entry commit, counted past once its base is gone (:func:`base_lacks`).
    """
    head = git.resolve(repository, branch)
    if head is None:
        return BranchFacts(name=branch, exists=False, base=base)
    lacks = base_lacks(repository, branch, base, entry)
    if lacks is None:
        return None
    return BranchFacts(name=branch, exists=True, base=base, head=head, base_lacks=lacks)


def remove_board(place: Place) -> None:
    """R10: the place's board goes with its worktree: flume's own notes, kept while the place is.

    Only a folder named as flume makes boards (``<repository>/places/.boards/<place>``) is
    removed (a lane's board is its run's, named for the run: it goes with the run; a spread
    lane's, on its fleet host, is its own), and ``.boards`` with it once it holds no other
    place's: an empty folder left in ``places/`` would read as a place.
    """
    if not place.board:
        return
    board = Path(place.board)
    if board == gates.board_of(place.path, place.launch.place):
        shutil.rmtree(board, ignore_errors=True)
        with contextlib.suppress(OSError):
            board.parent.rmdir()
