"""A parallel block's lanes, the shell's part: launched, ordered, and merged into their run.

Theory of operation. A lane is a place of its own (:mod:`flume.core.workflow.lanes`): launching it
is journaling its ``Launched`` as a ``flume launch`` would, in the same journals folder, and the
supervisor finds the new journal and carries the lane as it carries any place. What its run
orders it (drop, tidy) is journaled in the lane's journal as the command a person would give,
checked against the lane's own rules first, so no line its rules refuse is ever written there
(a refused line reads as a journal edited by hand). The merge runs in the run's worktree, with
no agent in it, each lane's branch in the order asked, under the repository's landing lock
(the lanes' base is the run's branch, which the merge moves).

Each is safe to perform twice (RESTART-PENDING): a lane whose journal exists is not launched
again, an order a lane has had is not given again, and a branch already merged is passed over
(the state a merge cut short after its commit left is cleared first).
"""

from __future__ import annotations

import logging
from pathlib import Path

from pyrsistent import pvector

from flume.core.actions import (
    ActionName,
    LaneOrder,
    LaunchLane,
    MergeLanes,
    NotifyLane,
    OrderLane,
)
from flume.core.errors import UsageError
from flume.core.ids import Instant, Sha
from flume.core.observations import (
    ActionFailed,
    DropAsked,
    LaneEnded,
    LanesMerged,
    Launched,
    MergeConflicted,
    Notified,
    Observation,
    TidyAsked,
)
from flume.core.place import Life
from flume.core.settings import Settings
from flume.core.step import step
from flume.core.workflow.lanes import takes_order
from flume.shell.perform import launcher
from flume.shell.perform.lander import base_lock
from flume.shell.process import Ran
from flume.shell.store import journal, places
from flume.shell.tools import git

_log = logging.getLogger("flume.supervisor")


def launch(action: LaunchLane, at: Instant) -> list[Observation]:
    """Journal the lane's launch as the first line of its journal; nothing if it has one.

    Its launch carries its run's host already, so this host's supervisor carries it; its board
    is the run's. A launch the rules would refuse is not journaled: the failure is reported, and
    the lane ended unfinished, so its run does not wait on it for ever.
    """
    seen = Launched(
        at=at,
        launch=action.launch,
        kind=action.kind,
        setup=action.setup,
        copy=action.copy,
        start=action.start,
        settings=action.settings,
        board=action.board,
        tests=action.tests,
    )
    try:
        step(action.settings, None, seen)
    except UsageError as error:
        said = "; ".join(f"{problem.what} ({problem.mend})" for problem in error.problems)
        return [
            ActionFailed(
                at=at,
                action=ActionName.LAUNCH_LANE,
                output=f"lane {action.lane} cannot be launched: {said}",
            ),
            LaneEnded(at=at, lane=action.lane, finished=False),
        ]
    if launcher.launch_lane(seen):
        _log.info("lane %s of %s launched", action.launch.place, action.parent)
    return []


def order(action: OrderLane, at: Instant) -> list[Observation]:
    """Give the lane place the command its run orders (``flume drop`` or ``flume tidy``'s).

    Journaled under the lane journal's lock, judged on the lane as it stands then. A lane with
    no journal, or one that took it already, takes nothing; one whose journal cannot be read or
    written is logged, and its run goes on: what the run does next never waits on its lanes'.
    """
    path = places.journals_dir(Path(action.repository)) / action.place / places.JOURNAL
    if not path.is_file():
        return []
    seen = DropAsked(at=at) if action.order is LaneOrder.DROP else TidyAsked(at=at)
    try:
        given = places.command_if(
            path, seen, Settings(), lambda lane: takes_order(action.order, lane)
        )
    except (UsageError, journal.JournalError, OSError) as error:
        _log.warning("lane %s was not given %s: %s", action.place, action.order.value, error)
        return []
    if given is not None:
        _log.info("lane %s given %s", action.place, action.order.value)
    return []


def notify(action: NotifyLane, at: Instant) -> list[Observation]:
    """Journal a lead's words into its child's journal (``Notified``), under the journal's lock.

    The child's rules decide whether its live agent is told or its next prompt reads them. A
    child with no journal, or one that ended, takes nothing; a journal that cannot be read or
    written is logged, and the run goes on.
    """
    path = places.journals_dir(Path(action.repository)) / action.place / places.JOURNAL
    if not path.is_file():
        return []
    seen = Notified(at=at, text=action.text, id=action.id)
    try:
        places.command_if(
            path,
            seen,
            Settings(),
            lambda child: (
                child.life in {Life.MAKING, Life.ACTIVE} and action.id not in child.notified
            ),
        )
    except (UsageError, journal.JournalError, OSError) as error:
        _log.warning("child %s was not given its lead's words: %s", action.place, error)
    return []


def merge(
    action: MergeLanes, repository: Path, at: Instant, pass_fds: tuple[int, ...] = ()
) -> list[Observation]:
    """WF-MERGE-ORDER: merge each lane's branch into the run's, in order; the first conflict undone.

    A branch the run's head holds already (merged before a restart, or by a person) is passed
    over. A merge that conflicts is aborted, leaving the worktree as it was, and reported with
    its files; one git refuses to start (a file in the way) is a failure, with git's words.
    The caller checked that ``action.path`` is the run's worktree on its branch.

    A merge a kill cut short after its commit left its state behind: the supervisor killed,
    its ``git merge`` goes on, moves the branch, then dies printing what it merged to the dead
    supervisor's pipe (SIGPIPE), before it clears ``MERGE_HEAD``. The head holds that merge, so
    its state is cleared first (:func:`_concluded`): else git would refuse the next lane's
    merge, read as a conflict naming no file, or make the next agent's commit a merge.
    """
    worktree = Path(action.path)
    with base_lock(repository) as held:
        fds = (*pass_fds, held)
        stopped = _concluded(worktree, at, fds) or _merge_each(action, worktree, at, fds)
        if stopped:
            return stopped
        head = git.run(worktree, "rev-parse", "HEAD")
    if not head.ok:
        return _failed(at, "git cannot say the merged branch's head", head)
    return [LanesMerged(at=at, head=Sha(head.out.strip()))]


def _concluded(worktree: Path, at: Instant, fds: tuple[int, ...]) -> list[Observation]:
    """Clear the state of a merge the head holds already (``git merge --quit``); [] once clear.

    ``MERGE_HEAD`` held by ``HEAD`` is a merge committed, its state left by a git killed before
    it cleared it: the index and the worktree are the commit's, so only the state goes. A merge
    under way (``MERGE_HEAD`` not in ``HEAD``: a person's, say) is left as it is.
    """
    if not git.merging(worktree):
        return []
    if not git.run(worktree, "merge-base", "--is-ancestor", "MERGE_HEAD", "HEAD").ok:
        return []
    cleared = git.run(worktree, "merge", "--quit", pass_fds=fds)
    if cleared.ok:
        return []
    return _failed(at, "the state a merge committed before a restart left was not cleared", cleared)


def _merge_each(
    action: MergeLanes, worktree: Path, at: Instant, fds: tuple[int, ...]
) -> list[Observation]:
    """Merge each lane not merged yet, in order: [] once all are; else why it stopped."""
    for lane, branch in zip(action.lanes, action.branches, strict=True):
        if git.resolve(worktree, branch) is None:
            gone = f"lane {lane}'s branch {branch} does not exist: it cannot be merged"
            return _failed(at, gone)
        if git.run(worktree, "merge-base", "--is-ancestor", branch, "HEAD").ok:
            continue
        message = f"Merge lane {lane} ({branch}) into {action.branch}"
        ran = git.merge(worktree, branch, message, pass_fds=fds)
        if ran.ok:
            continue
        if not git.merging(worktree):
            return _failed(at, f"git merge of lane {lane} ({branch}) refused", ran)
        files = git.unmerged(worktree)
        aborted = git.run(worktree, "merge", "--abort", pass_fds=fds)
        if not aborted.ok:
            what = f"merging lane {lane} ({branch}) conflicted, and git merge --abort failed"
            return _failed(at, what, aborted)
        return [MergeConflicted(at=at, lane=lane, files=pvector(files))]
    return []


def _failed(at: Instant, what: str, ran: Ran | None = None) -> list[Observation]:
    if ran is None:
        return [ActionFailed(at=at, action=ActionName.MERGE_LANES, output=what)]
    said = (ran.err.strip() or ran.out.strip()) or "no output"
    return [
        ActionFailed(
            at=at,
            action=ActionName.MERGE_LANES,
            argv=pvector(ran.argv),
            status=ran.status,
            output=f"{what}: {said}",
        ),
    ]
